// Gradient rules, driven by the op table: each rule against central differences in float64
// (JAX's check_vjp: a random direction per input, a random cotangent), traced gradients
// against eager ones, and every op class covered.
#include <eagerflow/ops/op_rules.h>

#include <map>
#include <set>

#include "op_table.h"

using namespace ef;
using ef::testing::OpInfo;

namespace {

std::vector<std::size_t> float_args(const std::vector<Tensor>& xs) {
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < xs.size(); ++i)
    if (is_floating(xs[i].dtype())) idx.push_back(i);
  return idx;
}

double dot(const Tensor& a, const Tensor& b) { return sum(cast(a, DType::float64) * cast(b, DType::float64)).item<double>(); }

// The scalar loss sum(op(xs) * w): its gradient is the op's VJP with cotangent w.
Tensor loss(const OpInfo& op, const std::vector<Tensor>& xs, const Tensor& w) { return sum(op.fn(xs) * w); }

std::vector<Tensor> tape_gradients(const OpInfo& op, const std::vector<Tensor>& xs, const Tensor& w) {
  GradientTape tape;
  std::vector<Tensor> sources;
  for (std::size_t i : float_args(xs)) sources.push_back(xs[i]);
  tape.watch(sources);
  Tensor l = loss(op, xs, w);
  return tape.gradient(l, sources, GradientOptions{UnconnectedGradients::zero, {}});
}

}  // namespace

std::vector<OpInfo> ops_where(bool differentiable) {
  std::vector<OpInfo> out;
  for (auto& op : ef::testing::op_table())
    if (op.differentiable == differentiable) out.push_back(op);
  return out;
}

class OpGradient : public ::testing::TestWithParam<OpInfo> {};
class OpWithoutGradient : public ::testing::TestWithParam<OpInfo> {};

TEST_P(OpGradient, MatchesCentralDifferencesInFloat64) {
  const OpInfo& op = GetParam();
  DType dtype = op.float32_only ? DType::float32 : DType::float64;
  for (std::uint64_t seed : {1u, 2u}) {
    std::vector<Tensor> xs = ef::testing::make_inputs(op, dtype, seed);
    Tensor y = op.fn(xs);
    ASSERT_EQ(y.dtype(), dtype) << op.name;
    Tensor w = cast(random::normal(y.shape(), 0.0, 1.0, DType::float64, seed + 100), dtype);
    std::vector<Tensor> grads = tape_gradients(op, xs, w);
    std::vector<std::size_t> args = float_args(xs);
    ASSERT_EQ(grads.size(), args.size());
    for (std::size_t k = 0; k < args.size(); ++k) {
      std::size_t i = args[k];
      ASSERT_TRUE(grads[k].defined());
      ASSERT_EQ(grads[k].spec(), xs[i].spec()) << op.name << " input " << i;
      Tensor v = cast(random::normal(xs[i].shape(), 0.0, 1.0, DType::float64, seed + 200 + i), dtype);
      const double eps = op.eps;
      auto shifted = [&](double s) {
        std::vector<Tensor> ys = xs;
        ys[i] = xs[i] + v * s;
        return cast(loss(op, ys, w), DType::float64).item<double>();
      };
      double numeric = (shifted(eps) - shifted(-eps)) / (2 * eps);
      double analytic = dot(grads[k], v);
      EXPECT_NEAR(analytic, numeric, op.tolerance * (1 + std::fabs(numeric)) + 1e-7)
          << op.name << " input " << i << " seed " << seed;
    }
  }
}

TEST_P(OpGradient, TracedGradientsEqualEagerOnes) {
  const OpInfo& op = GetParam();
  for (DType dtype : {DType::float32, DType::float64}) {
    if (op.float32_only && dtype != DType::float32) continue;
    std::vector<Tensor> xs = ef::testing::make_inputs(op, dtype, 3);
    Tensor w = cast(random::normal(op.fn(xs).shape(), 0.0, 1.0, DType::float64, 7), dtype);
    std::vector<Tensor> eager = tape_gradients(op, xs, w);
    auto traced = function([&](const std::vector<Tensor>& ys, const Tensor& wt) { return tape_gradients(op, ys, wt); });
    std::vector<Tensor> replayed;
    for (int call = 0; call < 2; ++call) replayed = traced(xs, w);
    EXPECT_EQ(traced.tracing_count(), 1);
    ASSERT_EQ(replayed.size(), eager.size());
    for (std::size_t k = 0; k < eager.size(); ++k) {
      ASSERT_EQ(replayed[k].spec(), eager[k].spec()) << op.name;
      Tensor diff = abs(cast(replayed[k], DType::float64) - cast(eager[k], DType::float64));
      double scale = 1 + max(abs(cast(eager[k], DType::float64))).item<double>();
      EXPECT_LE(max(diff).item<double>(), (dtype == DType::float32 ? 1e-6 : 1e-14) * scale)
          << op.name << " " << name_of(dtype) << " grad " << k;
    }
  }
}

TEST_P(OpWithoutGradient, SaysSoAndStopsGradients) {
  const OpInfo& op = GetParam();
  std::vector<Tensor> xs = ef::testing::make_inputs(op, DType::float32, 4);
  std::vector<std::size_t> args = float_args(xs);
  // The op's class says so...
  auto f = function([&](const std::vector<Tensor>& ys) { return op.fn(ys); });
  auto cf = f.get_concrete_function(xs);
  bool found = false;
  for (const auto& node : cf->traced_graph().nodes) found |= !node.op->is_differentiable();
  EXPECT_TRUE(found) << op.name << ": no node of its graph is marked not differentiable";
  // ...a gradient of its (non-float) result is none, as TF's None...
  Tensor y = op.fn(xs);
  if (!is_floating(y.dtype())) {
    GradientTape tape;
    for (std::size_t i : args) tape.watch(xs[i]);
    Tensor again = op.fn(xs);
    if (!args.empty()) {
      EXPECT_FALSE(tape.gradient(again, xs[args[0]]).defined()) << op.name;
    }
  }
  // ...and no gradient flows through it to a float input.
  if (!args.empty()) {
    GradientTape tape;
    tape.watch(xs[args[0]]);
    Tensor z = sum(cast(op.fn(xs), DType::float32));
    EXPECT_FALSE(tape.gradient(z, xs[args[0]]).defined()) << op.name;
  }
}

auto op_name = [](const ::testing::TestParamInfo<OpInfo>& info) { return info.param.name; };
INSTANTIATE_TEST_SUITE_P(Table, OpGradient, ::testing::ValuesIn(ops_where(true)), op_name);
INSTANTIATE_TEST_SUITE_P(Table, OpWithoutGradient, ::testing::ValuesIn(ops_where(false)), op_name);

TEST(OpTable, CoversEveryOpClass) {
  // Each op class linked into the library is exercised by a table entry, or by the tests
  // named here. A new op class fails this test until it joins the table.
  std::set<std::string> covered = {
      "ef::ReadVariable", "ef::AssignVariable",  // variable_layer_test, autodiff_test (variables)
      "ef::CondOp", "ef::WhileOp",               // control_flow_test, autodiff_test (cond, while)
      "ef::CallOp",                              // call_op_test
      "ef::(anonymous namespace)::WhileGrad",    // while_gradient_test
      "ef::ScanOp",                              // scan_test
      "ef::CustomGradientOp",                    // custom_gradient_test, custom_op_test
      "ef::RandomOp",                            // random_op_test
      "ef::(anonymous namespace)::FusedDense",   // made by passes only: passes_test
      "ef::FusedConv2D", "ef::Conv2DBackpropFilterBias", "ef::MaxPool2DReluGrad",  // made by passes: conv_fusion_test
      "ef::(anonymous namespace)::FusedElementwise",
      "ef::(anonymous namespace)::Print",        // function_test (ef::print)
      "ef::Assert", "ef::(anonymous namespace)::HostCall",  // host_call_test (effects)
      "ef::summary::(anonymous namespace)::WriteSummary",  // summary_test (ef::summary, an effect like print)
      "ef::RnnBackward",                         // recurrent_test (fused vs unrolled gradients)
      // String ops take string tensors, which the table's generated inputs are not: strings_test.
      "ef::StringMap", "ef::StringElementwise", "ef::Substr", "ef::ReduceJoin", "ef::UnsortedSegmentJoin",
      "ef::StringSplit", "ef::UnicodeEncode", "ef::(anonymous namespace)::ReadFile",
      "ef::(anonymous namespace)::WriteFile", "ef::(anonymous namespace)::DecodeImage",
      "ef::(anonymous namespace)::EncodeImage", "ef::(anonymous namespace)::JpegHeader",  // image_codec_test
      "ef::(anonymous namespace)::ResizeDynamic",  // image_codec_test (images of unknown size)
      "ef::(anonymous namespace)::ParseExample", "ef::(anonymous namespace)::DecodeRaw",  // io_records_test
      // The collectives have their own table, run under mpirun -np 2 (tests/distributed/dist_table.h).
      "ef::dist::AllReduce", "ef::dist::Broadcast", "ef::dist::ReduceToRoot", "ef::dist::AllGather",
      "ef::dist::ReduceScatter", "ef::dist::BucketAllReduce", "ef::dist::Barrier",
  };
  for (const OpInfo& op : ef::testing::op_table()) {
    std::vector<Tensor> xs = ef::testing::make_inputs(op, DType::float32, 1);
    auto f = function([&](const std::vector<Tensor>& ys) { return op.fn(ys); });
    for (const auto& node : f.get_concrete_function(xs)->traced_graph().nodes) covered.insert(primitive_type(*node.op));
  }
  // ...and has its record (eagerflow/ops/op_rules.h): a vmap rule or "runs per example", an
  // ONNX lowering or the reason it has none. Its CPU kernel is its class's eval (pure virtual,
  // so the compiler asks for it); other devices' kernels are optional.
  std::map<std::string, const OpRules*> records;
  for (const auto& [name, rules] : registered_op_rules()) records[name] = rules;
  int checked = 0;
  for (const std::string& type : registered_primitive_types()) {
    if (type.rfind("ef::", 0) != 0) continue;  // ops that tests define
    ++checked;
    EXPECT_TRUE(covered.count(type)) << type << " is not in the op table (tests/op_table.h)";
    auto it = records.find(type);
    if (it == records.end()) {
      ADD_FAILURE() << type << " has no record: register_op_rules<" << type << "> beside the class";
      continue;
    }
    const OpRules& r = *it->second;
    EXPECT_TRUE(r.batching || r.runs_per_example) << type << ": give a batching rule, or runs_per_example = true";
    EXPECT_TRUE(r.onnx || !r.onnx_unsupported.empty()) << type << ": give an ONNX lowering, or onnx_unsupported (the reason)";
  }
  EXPECT_GT(checked, 60);  // every op class of the library is linked into this test
}

TEST(OpTable, EveryOpReplaysLikeEager) {
  for (const OpInfo& op : ef::testing::op_table()) {
    if (op.name.rfind("random", 0) == 0) continue;  // fresh draws by design
    SCOPED_TRACE(op.name);
    std::vector<Tensor> xs = ef::testing::make_inputs(op, DType::float32, 5);
    Tensor eager = op.fn(xs);
    auto f = function([&](const std::vector<Tensor>& ys) { return op.fn(ys); });
    Tensor traced = f(xs);
    ASSERT_EQ(traced.spec(), eager.spec());
    Tensor a = cast(eager, DType::float64), b = cast(traced, DType::float64);
    EXPECT_EQ(max(abs(a - b)).item<double>(), 0.0);
  }
}

TEST(OpTable, UndefinedInputsAreErrorsForEveryOp) {
  // The bad-input sweep over the whole table (wrong dtypes and shapes: tests/op_fuzz_test.cpp).
  for (const OpInfo& op : ef::testing::op_table()) {
    std::vector<Tensor> xs = ef::testing::make_inputs(op, DType::float32, 6);
    for (std::size_t i = 0; i < xs.size(); ++i) {
      SCOPED_TRACE(op.name + " input " + std::to_string(i));
      std::vector<Tensor> bad = xs;
      bad[i] = Tensor();
      EXPECT_THROW(op.fn(bad), Error);
      auto f = function([&](const std::vector<Tensor>& ys) { return op.fn(ys); });
      EXPECT_THROW(f(bad), Error);
    }
  }
}
