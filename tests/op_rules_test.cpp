// Op records (eagerflow/ops/op_rules.h): a user's op brings its vmap and ONNX rules the way
// built-in ops do, and the table refuses bad records. That every op class of the library has
// one: OpTable.CoversEveryOpClass (gradient_test.cpp).
#include <eagerflow/ops/onnx_lowering.h>
#include <eagerflow/ops/op_rules.h>
#include <eagerflow/saving/onnx.h>

#include <fstream>
#include <iterator>

#include "autodiff/vmap_internal.h"
#include "test_util.h"

namespace {

using namespace ef;

// y = x * factor: rows are independent, so the batched tensor runs in one call.
template <int Tag>
class Scale : public PrimitiveBase<Scale<Tag>> {
 public:
  explicit Scale(double factor) : factor_(factor) {}
  const char* name() const override { return "test_scale"; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override {
    expect_inputs(*this, in, 1);
    return {in[0].spec()};
  }
  void eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const override {
    out[0] = in[0] * scalar_like(in[0], factor_);
  }
  double factor() const { return factor_; }

 private:
  double factor_;
};
using ScaleWithRules = Scale<0>;
using ScaleWithoutRules = Scale<1>;
using ScaleNotExportable = Scale<2>;

int batching_calls = 0;
const bool scale_rules = register_op_rules<ScaleWithRules>({
    .batching = [](const ScaleWithRules& op, BatchingCall call) -> BatchingResult {
      ++batching_calls;
      return batched_results(dispatch(op, call.batched_inputs()));
    },
    .onnx = [](const ScaleWithRules& op, onnx::Lowering& to) {
      to.node("Mul", {to.input(0), to.scalar_constant(op.factor(), to.input_spec(0).dtype)}, {to.output()});
    },
});
const bool not_exportable_rules =
    register_op_rules<ScaleNotExportable>({.runs_per_example = true, .onnx_unsupported = "the test says so"});

template <class Op>
Tensor scale(const Tensor& x, double f) {
  return dispatch1(Op(f), {x});
}

std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(OpRules, AUsersBatchingRuleRunsInsteadOfTheLoop) {
  ASSERT_TRUE(scale_rules);
  detail::take_vmap_fallback_log();
  batching_calls = 0;
  Tensor x = reshape(arange(12, DType::float32), {4, 3});
  Tensor y = vmap([](const Tensor& row) { return scale<ScaleWithRules>(row, 2.0); })(x);
  EXPECT_EQ(batching_calls, 1);
  EXPECT_TRUE(detail::take_vmap_fallback_log().empty());
  EXPECT_EQ(max(abs(y - x * 2.0f)).item<float>(), 0.0f);
  // Without a rule the op runs once per example, with the same result.
  Tensor z = vmap([](const Tensor& row) { return scale<ScaleWithoutRules>(row, 2.0); })(x);
  EXPECT_EQ(max(abs(z - x * 2.0f)).item<float>(), 0.0f);
  EXPECT_EQ(detail::take_vmap_fallback_log(), std::vector<std::string>{"test_scale"});
}

TEST(OpRules, AUsersOnnxLoweringExports) {
  auto dir = ef::testing::fresh_temp_dir("op_rules_onnx");
  auto f = function([](const Tensor& x) { return scale<ScaleWithRules>(x, 3.0) + 1.0f; });
  onnx::export_model(*f.get_concrete_function(TensorSpec{DType::float32, {2, 3}}), (dir / "scale.onnx").string());
  std::string bytes = read_bytes(dir / "scale.onnx");
  EXPECT_NE(bytes.find("Mul"), std::string::npos);  // the op's own lowering wrote it
  auto g = function([](const Tensor& x) { return scale<ScaleWithoutRules>(x, 3.0); });
  ef::testing::expect_error(
      [&] { onnx::export_model(*g.get_concrete_function(TensorSpec{DType::float32, {2}}), (dir / "no.onnx").string()); },
      {"op 'test_scale' has no ONNX form"});
  auto h = function([](const Tensor& x) { return scale<ScaleNotExportable>(x, 3.0); });
  ef::testing::expect_error(
      [&] { onnx::export_model(*h.get_concrete_function(TensorSpec{DType::float32, {2}}), (dir / "no.onnx").string()); },
      {"op 'test_scale' has no ONNX form (the test says so)"});
  EXPECT_FALSE(std::filesystem::exists(dir / "no.onnx"));
}

TEST(OpRules, BuiltInOpsShowWhyTheyDoNotExport) {
  auto dir = ef::testing::fresh_temp_dir("op_rules_reason");
  auto f = function([](const Tensor& x) { return check_numerics(x, "x"); });
  ef::testing::expect_error(
      [&] { onnx::export_model(*f.get_concrete_function(TensorSpec{DType::float32, {2}}), (dir / "a.onnx").string()); },
      {"check_numerics", "has no ONNX form (", "ONNX has no such op"});
}

TEST(OpRules, TheTableRefusesBadRecords) {
  ef::testing::expect_error([] { register_op_rules<ScaleWithRules>({.runs_per_example = true}); },
                            {"register_op_rules", "registered already"});
  try {
    register_op_rules<ScaleWithRules>({.runs_per_example = true});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::already_exists);
  }
  ef::testing::expect_error([] { register_op_rules<Scale<3>>({}); }, {"the record is empty"});
  ef::testing::expect_error(
      [] {
        register_op_rules<Scale<4>>({.batching = [](const Scale<4>&, BatchingCall) -> BatchingResult { return std::nullopt; },
                                     .runs_per_example = true});
      },
      {"a batching rule and runs_per_example both given"});
  ef::testing::expect_error(
      [] {
        register_op_rules<Scale<5>>({.onnx = [](const Scale<5>&, onnx::Lowering&) {}, .onnx_unsupported = "no"});
      },
      {"an ONNX lowering and onnx_unsupported both given"});
  // A refused record leaves no record behind.
  EXPECT_EQ(op_rules(Scale<3>(1.0)), nullptr);
  EXPECT_EQ(op_rules(Scale<4>(1.0)), nullptr);
}

}  // namespace
