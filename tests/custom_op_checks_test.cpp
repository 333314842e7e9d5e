// A user-defined op's kernel and gradient rule are held to what the op declares: outputs of
// another shape, rank or dtype than its infer() gave, too few or too many outputs, and a vjp
// with the wrong number of gradients or a gradient of another shape or dtype than its input
// are errors naming the op, eagerly, in replayed traces and under tapes.
#include "test_util.h"

namespace {

using namespace ef;
using ef::testing::expect_error;

// Declares its input's spec; the kernel returns what `make` gives; the gradient rule returns
// what `grads` gives.
enum class Lie { none, shape, dtype, rank, missing, too_many };

class Liar : public PrimitiveBase<Liar> {
 public:
  Liar(Lie out, Lie grad) : out_(out), grad_(grad) {}
  const char* name() const override { return "liar_op"; }
  OpParams parameters() const override {
    return OpParams().add("out", static_cast<std::int64_t>(out_)).add("grad", static_cast<std::int64_t>(grad_));
  }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override {
    expect_inputs(*this, in, 2);
    return {in[0].spec()};
  }
  void eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const override {
    const Tensor& x = in[0];
    switch (out_) {
      case Lie::shape: out[0] = zeros({1}, x.dtype()); break;
      case Lie::dtype: out[0] = cast(x, DType::float64); break;
      case Lie::rank: out[0] = reshape(x, {1, x.num_elements()}); break;
      case Lie::missing: break;  // leaves the output undefined
      default: out[0] = x.clone(); break;
    }
  }
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                          const std::vector<bool>&) const override {
    switch (grad_) {
      case Lie::shape: return {zeros({1}), cot[0]};
      case Lie::dtype: return {cast(cot[0], DType::float64), cot[0]};
      case Lie::rank: return {reshape(cot[0], {1, in[0].num_elements()}), cot[0]};
      case Lie::missing: return {cot[0]};  // one gradient for two inputs
      case Lie::too_many: return {cot[0], cot[0], cot[0]};
      default: return {cot[0], cot[0]};
    }
  }

 private:
  Lie out_, grad_;
};

Tensor liar(const Tensor& x, Lie out, Lie grad = Lie::none) { return dispatch1(Liar(out, grad), std::vector<Tensor>{x, x}); }
std::vector<Tensor> liar_all(const Tensor& x, Lie out) { return dispatch(Liar(out, Lie::none), std::vector<Tensor>{x, x}); }

TEST(CustomOpChecks, KernelOutputsMustMatchTheShapeRule) {
  Tensor x = ones({64});
  EXPECT_EQ(liar(x, Lie::none).shape(), Shape({64}));
  expect_error([&] { liar(x, Lie::shape); }, {"[liar_op]", "float32[1]", "declared float32[64]"});
  expect_error([&] { liar(x, Lie::dtype); }, {"[liar_op]", "float64[64]", "declared float32[64]"});
  expect_error([&] { liar(x, Lie::rank); }, {"[liar_op]", "float32[1,64]"});
  expect_error([&] { liar(x, Lie::missing); }, {"[liar_op]", "undefined"});
  // The vector path (dispatch) and under a tape (which records the outputs).
  expect_error([&] { liar_all(x, Lie::shape); }, {"[liar_op]", "float32[1]"});
  GradientTape tape;
  tape.watch(x);
  expect_error([&] { liar(x, Lie::shape); }, {"[liar_op]", "float32[1]"});
}

TEST(CustomOpChecks, ReplayedTracesCheckTheKernelToo) {
  auto f = function([](const Tensor& x) { return liar(x, Lie::shape) + 1.0f; });
  expect_error([&] { f(ones({64})); }, {"liar_op", "float32[1]", "declared float32[64]"});
  auto g = function([](const Tensor& x) { return liar(x, Lie::none) * 2.0f; });
  EXPECT_EQ(g(ones({8})).shape(), Shape({8}));
}

TEST(CustomOpChecks, GradientRulesMustReturnOneGradientPerInputOfItsShapeAndDtype) {
  auto gradient_of = [](Lie lie) {
    Tensor x = ones({64});
    GradientTape tape;
    tape.watch(x);
    Tensor y = sum(liar(x, Lie::none, lie));
    return tape.gradient(y, x);
  };
  EXPECT_EQ(gradient_of(Lie::none).shape(), Shape({64}));
  expect_error([&] { gradient_of(Lie::shape); }, {"liar_op", "float32[1]", "input 0", "float32[64]"});
  expect_error([&] { gradient_of(Lie::dtype); }, {"liar_op", "float64[64]", "input 0"});
  expect_error([&] { gradient_of(Lie::rank); }, {"liar_op", "float32[1,64]"});
  expect_error([&] { gradient_of(Lie::missing); }, {"liar_op", "returned 1 gradients for its 2 inputs"});
  expect_error([&] { gradient_of(Lie::too_many); }, {"liar_op", "returned 3 gradients for its 2 inputs"});
  // Through ef::grad of a traced function as well.
  auto g = grad([](const Tensor& x) { return sum(liar(x, Lie::none, Lie::shape)); });
  expect_error([&] { g(ones({4})); }, {"liar_op", "float32[1]"});
}

}  // namespace
