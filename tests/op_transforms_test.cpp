// Forward mode and batching for every op of the op table: jvp against central differences in
// float64, and vmap over a batch of 3 against a loop of single calls, with every input batched
// and with only the first one batched. The ops that run through vmap's per-example loop (no
// batching rule) are listed here and in docs/transforms.md; a new op shows up in this test.
#include <map>
#include <set>

#include "autodiff/vmap_internal.h"
#include "op_table.h"

using namespace ef;
using ef::testing::OpInfo;

namespace {

DType dtype_of(const OpInfo& op) { return op.float32_only ? DType::float32 : DType::float64; }

std::vector<double> values(const Tensor& t) { return cast(t, DType::float64).to_vector<double>(); }

std::vector<OpInfo> all_ops() { return ef::testing::op_table(); }

class OpTransforms : public ::testing::TestWithParam<OpInfo> {};

TEST_P(OpTransforms, JvpMatchesCentralDifferences) {
  const OpInfo& op = GetParam();
  DType dtype = dtype_of(op);
  std::vector<Tensor> xs = ef::testing::make_inputs(op, dtype, 7);
  std::vector<Tensor> vs;
  for (std::size_t i = 0; i < xs.size(); ++i)
    vs.push_back(is_floating(xs[i].dtype()) ? cast(random::stateless_normal(xs[i].shape(), 300 + i), dtype) : Tensor());
  auto f = [&](const std::vector<Tensor>& x) { return std::vector<Tensor>{op.fn(x)}; };
  // Forward mode differentiates the gradient rule; these ops' gradients have no gradient yet.
  static const std::set<std::string> without_jvp{"max_pool2d"};
  if (without_jvp.count(op.name)) {
    ef::testing::expect_error([&] { jvp(f, xs, vs); }, {"jvp", op.name});
    return;
  }
  auto [ys, ts] = jvp(f, xs, vs);
  ASSERT_EQ(ts.size(), 1u);
  ASSERT_EQ(ts[0].spec(), ys[0].spec()) << op.name;
  if (!op.differentiable) {
    // Comparisons, integer results, stop_gradient, random draws: no tangent flows.
    for (double t : values(ts[0])) EXPECT_EQ(t, 0.0) << op.name;
    return;
  }
  auto shifted = [&](double s) {
    std::vector<Tensor> moved = xs;
    for (std::size_t i = 0; i < xs.size(); ++i)
      if (vs[i].defined()) moved[i] = xs[i] + vs[i] * s;
    return values(op.fn(moved));
  };
  std::vector<double> plus = shifted(op.eps), minus = shifted(-op.eps), tangent = values(ts[0]);
  ASSERT_EQ(plus.size(), tangent.size());
  for (std::size_t k = 0; k < tangent.size(); ++k) {
    double numeric = (plus[k] - minus[k]) / (2 * op.eps);
    EXPECT_NEAR(tangent[k], numeric, op.tolerance * (1 + std::fabs(numeric)) + 1e-7) << op.name << " element " << k;
  }
}

// Runs op over a batch of 3 examples (input i batched when batched[i]) and compares with the
// loop; returns the ops that ran per example.
std::vector<std::string> check_vmap(const OpInfo& op, const std::vector<bool>& batched) {
  DType dtype = dtype_of(op);
  std::vector<std::vector<Tensor>> examples;
  for (std::uint64_t s = 0; s < 3; ++s) examples.push_back(ef::testing::make_inputs(op, dtype, 11 + s));
  std::vector<Tensor> args;
  InAxes axes(std::vector<std::optional<int>>{});
  for (std::size_t i = 0; i < op.inputs.size(); ++i) {
    if (batched[i]) {
      args.push_back(stack({examples[0][i], examples[1][i], examples[2][i]}, 0));
      axes.axes.push_back(0);
    } else {
      args.push_back(examples[0][i]);
      axes.axes.push_back(not_batched);
      for (auto& e : examples) e[i] = examples[0][i];
    }
  }
  detail::take_vmap_fallback_log();
  Tensor r = detail::vmap_call([&](const std::vector<Tensor>& x) { return std::vector<Tensor>{op.fn(x)}; }, args, axes, 0).at(0);
  std::vector<std::string> fallback = detail::take_vmap_fallback_log();
  std::vector<Tensor> loop;
  for (auto& e : examples) loop.push_back(op.fn(e));
  Tensor want = stack(loop, 0);
  EXPECT_EQ(r.spec(), want.spec()) << op.name;
  if (r.spec() != want.spec() || op.name.rfind("random", 0) == 0) return fallback;  // draws differ per call
  std::vector<double> got = values(r), exp = values(want);
  double tol = dtype == DType::float32 ? 1e-5 : 1e-12;
  for (std::size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], exp[k], tol * (1 + std::fabs(exp[k]))) << op.name << " at " << k;
  return fallback;
}

// The ops of the table without a batching rule for the batched inputs shown (they run once per
// example). Keep docs/transforms.md in step.
const std::map<std::string, std::set<std::string>>& expected_fallback() {
  static const std::map<std::string, std::set<std::string>> m{
      {"gather", {"gather"}},
      {"gather_axis1", {"gather"}},
      {"slice_grad", {"slice_grad"}},
      {"gather_grad", {"gather_grad"}},
      {"pad_grad", {"pad_grad"}},
      {"take_along_axis", {"take_along_axis"}},
      {"scatter_add_along_axis", {"scatter_add_along_axis"}},
      {"conv2d", {"conv2d"}},
      {"conv2d_same_strided", {"conv2d"}},
      {"conv2d_dilated", {"conv2d"}},
      {"conv2d_backprop_input", {"conv2d_backprop_input"}},
      {"conv2d_backprop_filter", {"conv2d_backprop_filter"}},
      {"avg_pool2d_grad", {"avg_pool2d_grad"}},
      {"scaled_dot_product_attention_grad", {"scaled_dot_product_attention_grad"}},
      {"lstm", {"lstm"}},
      {"gru", {"gru"}},
      {"random_poisson", {"random_poisson"}},
      {"random_candidate_sampler", {"log_uniform_candidate_sampler"}},
  };
  return m;
}

TEST_P(OpTransforms, VmapMatchesALoopOfSingleCalls) {
  const OpInfo& op = GetParam();
  if (op.writes_variables) {  // each example would write the variable again: a clear error instead
    std::vector<bool> all(op.inputs.size(), true);
    EXPECT_THROW(check_vmap(op, all), Error) << op.name;
    return;
  }
  std::set<std::string> fallback;
  std::vector<bool> all(op.inputs.size(), true);
  for (auto& name : check_vmap(op, all)) fallback.insert(name);
  if (op.inputs.size() > 1) {
    std::vector<bool> first(op.inputs.size(), false);
    first[0] = true;
    for (auto& name : check_vmap(op, first)) fallback.insert(name);
  }
  auto it = expected_fallback().find(op.name);
  EXPECT_EQ(fallback, it == expected_fallback().end() ? std::set<std::string>{} : it->second) << op.name;
}

INSTANTIATE_TEST_SUITE_P(Table, OpTransforms, ::testing::ValuesIn(all_ops()),
                         [](const ::testing::TestParamInfo<OpInfo>& i) { return i.param.name; });

}  // namespace
