// A user-defined op (docs/custom_ops.md keeps this example; change both together): a
// Primitive subclass with a shape rule, a kernel and a gradient rule, registered so that saved
// models that use it load. It runs eagerly, traced, under tapes, saved and loaded. Also: the
// registry's errors, and what a saved model keeps of an ef::custom_gradient.
#include <charconv>
#include <cmath>

#include "autodiff/tape_impl.h"
#include "test_util.h"

namespace {

// --- the example of docs/custom_ops.md ---------------------------------------------------
// clip_by_norm: x rescaled so that its L2 norm is at most clip_norm.
class ClipByNorm : public ef::PrimitiveBase<ClipByNorm> {
 public:
  explicit ClipByNorm(double clip_norm) : clip_norm_(clip_norm) {
    if (!(clip_norm > 0)) ef::fail("clip_by_norm", "clip_norm must be positive, got " + std::to_string(clip_norm));
  }
  const char* name() const override { return "clip_by_norm"; }
  // Typed parameters: printed in graphs ("clip_norm=1.5") and stored by a saved model; the
  // factory below reads them back.
  ef::OpParams parameters() const override { return ef::OpParams().add("clip_norm", clip_norm_); }
  std::vector<ef::TensorSpec> infer(std::span<const ef::Tensor> in) const override {
    ef::expect_inputs(*this, in, 1);
    if (in[0].dtype() != ef::DType::float32) ef::fail(name(), "expects float32, got " + in[0].spec().str());
    return {in[0].spec()};  // dynamic dims stay dynamic while tracing
  }
  void eval(std::span<const ef::Tensor> in, std::span<const ef::TensorSpec> specs, std::span<ef::Tensor> out) const override {
    std::span<const float> x = in[0].data<float>();
    double squares = 0;
    for (float v : x) squares += double(v) * v;
    double norm = std::sqrt(squares);
    float scale = norm > clip_norm_ ? static_cast<float>(clip_norm_ / norm) : 1.0f;
    ef::Tensor y = ef::Tensor::empty(specs[0].dtype, specs[0].shape);
    std::span<float> o = y.mutable_data<float>();
    for (std::size_t i = 0; i < x.size(); ++i) o[i] = x[i] * scale;
    out[0] = y;
  }
  // Written with ef ops, so it runs eagerly and traced, and can itself be differentiated.
  // With n = |x| > c: y = c x / n and dx = (c / n) (dy - x <x, dy> / n^2); else dx = dy.
  std::vector<ef::Tensor> vjp(std::span<const ef::Tensor> in, std::span<const ef::Tensor>,
                              std::span<const ef::Tensor> cot, const std::vector<bool>&) const override {
    const ef::Tensor& x = in[0];
    const ef::Tensor& dy = cot[0];
    ef::Tensor n = ef::sqrt(ef::sum(ef::square(x)));
    ef::Tensor c = ef::scalar_like(n, clip_norm_);
    ef::Tensor clipped = (c / n) * (dy - x * (ef::sum(x * dy) / ef::square(n)));
    return {ef::where(ef::greater(n, c), clipped, dy)};
  }
  double clip_norm() const { return clip_norm_; }

 private:
  double clip_norm_;
};

// The public function, like ef's own ops.
ef::Tensor clip_by_norm(const ef::Tensor& x, double clip_norm) { return ef::dispatch1(ClipByNorm(clip_norm), {x}); }

// Rebuilds the op from its parameters when a saved model is loaded.
const bool registered = ef::register_op<ClipByNorm>(
    "clip_by_norm", [](const ef::OpParams& p) { return std::make_shared<ClipByNorm>(p.real("clip_norm")); });
// --- end of the example -------------------------------------------------------------------

// An op that nobody registers.
class Unregistered : public ef::PrimitiveBase<Unregistered> {
 public:
  const char* name() const override { return "my_unregistered_op"; }
  std::vector<ef::TensorSpec> infer(std::span<const ef::Tensor> in) const override { return {in[0].spec()}; }
  void eval(std::span<const ef::Tensor> in, std::span<const ef::TensorSpec>, std::span<ef::Tensor> out) const override {
    out[0] = in[0].clone();
  }
};

}  // namespace

using namespace ef;
using ef::testing::expect_close;
using ef::testing::expect_error;

TEST(CustomOp, RunsEagerlyWithItsShapeRuleAndGradient) {
  ASSERT_TRUE(registered);
  expect_close(clip_by_norm(tensor({3.0f, 4.0f}), 1.0).to_vector<float>(), {0.6f, 0.8f});
  expect_close(clip_by_norm(tensor({0.3f, 0.4f}), 1.0).to_vector<float>(), {0.3f, 0.4f});  // within the norm
  expect_error([] { clip_by_norm(tensor(std::vector<int>{1, 2}), 1.0); }, {"[clip_by_norm]", "expects float32", "int32[2]"});
  expect_error([] { clip_by_norm(tensor({1.0f}), -1.0); }, {"clip_norm must be positive"});

  Tensor x = tensor({3.0f, 4.0f});
  GradientTape tape;
  tape.watch(x);
  Tensor y = sum(clip_by_norm(x, 1.0) * tensor({1.0f, 0.0f}));
  // (1/5) ([1, 0] - [3, 4] * 3 / 25)
  expect_close(tape.gradient(y, x).to_vector<float>(), {0.128f, -0.096f});
  // Against central differences in double precision, in a random direction.
  Tensor xd = tensor({0.7f, -1.3f, 2.1f});
  Tensor v = tensor({0.2f, 0.9f, -0.4f});
  Tensor g = grad([](const Tensor& z) { return sum(clip_by_norm(z, 1.5) * tensor({1.0f, 2.0f, 3.0f})); })(xd);
  auto f = [&](float h) { return sum(clip_by_norm(xd + h * v, 1.5) * tensor({1.0f, 2.0f, 3.0f})).item<float>(); };
  double numeric = (double(f(1e-3f)) - f(-1e-3f)) / 2e-3;
  EXPECT_NEAR(sum(g * v).item<float>(), numeric, 1e-3);
}

TEST(CustomOp, TracedReplaysLikeEagerAndDifferentiates) {
  int traces = 0;
  auto step = function([&](const Tensor& x) {
    ++traces;
    GradientTape tape;
    tape.watch(x);
    Tensor y = sum(square(clip_by_norm(x, 2.0)));
    return std::vector<Tensor>{clip_by_norm(x, 2.0), tape.gradient(y, x)};
  });
  Tensor x = tensor({3.0f, 4.0f});
  std::vector<Tensor> a = step(x), b = step(x);
  EXPECT_EQ(traces, 1);
  EXPECT_EQ(a[0].to_vector<float>(), clip_by_norm(x, 2.0).to_vector<float>());
  EXPECT_EQ(a[1].to_vector<float>(), b[1].to_vector<float>());
  // y = |clip(x)|^2 = 4 wherever |x| > 2: its gradient there is 0.
  expect_close(a[1].to_vector<float>(), {0.0f, 0.0f});
  auto f = function([](const Tensor& x) { return clip_by_norm(x, 0.5); });
  EXPECT_NE(f.get_concrete_function(x)->str().find("clip_by_norm[clip_norm=0.5]"), std::string::npos)
      << f.get_concrete_function(x)->str();
}

TEST(CustomOp, SavedAndLoaded) {
  auto f = function([](const Tensor& x) { return clip_by_norm(x, 2.5) * 2.0f; });
  Tensor x = tensor({3.0f, 4.0f, 12.0f});
  Tensor want = f(x);
  auto dir = ef::testing::fresh_temp_dir("custom_op_saved");
  save(f, dir.string());
  SavedModel m = load(dir.string());
  EXPECT_EQ(m("serving_default", {x})[0].to_vector<float>(), want.to_vector<float>());
  expect_close(want.to_vector<float>(), {3.0f * 5 / 13, 4.0f * 5 / 13, 12.0f * 5 / 13});

  // Unregistered, it does not load; the error says what to register.
  ASSERT_TRUE(unregister_op("clip_by_norm"));
  expect_error([&] { load(dir.string()); }, {"unknown op 'clip_by_norm'", "ef::register_op", "\"clip_by_norm\""});
  // Registered again, here with a factory of the printed text (the other form).
  register_op<ClipByNorm>("clip_by_norm", [](const std::string& attrs) {
    const std::string key = "clip_norm=";
    double c = 0;
    if (attrs.rfind(key, 0) != 0 ||
        std::from_chars(attrs.data() + key.size(), attrs.data() + attrs.size(), c).ptr != attrs.data() + attrs.size())
      ef::fail("clip_by_norm", "cannot read attributes '" + attrs + "'");
    return std::make_shared<ClipByNorm>(c);
  });
  EXPECT_EQ(load(dir.string())("serving_default", {x})[0].to_vector<float>(), want.to_vector<float>());
}

TEST(CustomOp, AnUnregisteredOpIsNotSaved) {
  auto f = function([](const Tensor& x) { return dispatch1(Unregistered(), {x}); });
  Tensor x = tensor({1.0f});
  expect_close(f(x).to_vector<float>(), {1.0f});  // it runs: only saving needs the registry
  expect_error([&] { save(f, ef::testing::fresh_temp_dir("custom_op_unregistered").string()); },
               {"[save]", "op 'my_unregistered_op'", "ef::register_op"});
}

TEST(CustomOp, RegistryErrors) {
  auto make = [](const std::string&) { return std::make_shared<ClipByNorm>(1.0); };
  expect_error([&] { register_op<ClipByNorm>("clip_by_norm", make); }, {"register_op", "'clip_by_norm'", "registered already"});
  expect_error([&] { register_op<ClipByNorm>("matmul", make); }, {"'matmul'", "built-in"});
  expect_error([&] { register_op<ClipByNorm>("", make); }, {"register_op", "empty"});
  expect_error([&] { register_op("no_factory", OpFactory()); }, {"'no_factory'", "factory is empty"});
  EXPECT_FALSE(unregister_op("never_registered"));
  auto names = registered_ops();
  EXPECT_NE(std::find(names.begin(), names.end(), "clip_by_norm"), names.end());

  // A factory that rejects the saved attributes: loading names the op and the text.
  register_op<ClipByNorm>("picky_op", [](const std::string& attrs) -> std::shared_ptr<ClipByNorm> {
    ef::fail("picky_op", "no thanks");
  });
  class Picky : public ef::PrimitiveBase<Picky> {
   public:
    const char* name() const override { return "picky_op"; }
    std::string attrs() const override { return "k=1"; }
    std::vector<ef::TensorSpec> infer(std::span<const ef::Tensor> in) const override { return {in[0].spec()}; }
    void eval(std::span<const ef::Tensor> in, std::span<const ef::TensorSpec>, std::span<ef::Tensor> out) const override {
      out[0] = in[0].clone();
    }
  };
  auto f = function([](const Tensor& x) { return dispatch1(Picky(), {x}); });
  f(tensor({1.0f}));
  auto dir = ef::testing::fresh_temp_dir("custom_op_picky");
  save(f, dir.string());
  expect_error([&] { load(dir.string()); }, {"picky_op", "failed on attributes 'k=1'", "no thanks"});
  EXPECT_TRUE(unregister_op("picky_op"));
}

TEST(CustomOp, ASavedCustomGradientKeepsItsForwardButNotItsRule) {
  // The rule (10 * dy, where x^2 gives 2x) is a C++ function: the saved model keeps the
  // forward ops and the node; the loaded node passes gradients to the forward ops.
  auto fake_square = custom_gradient("fake_square", [](const Tensor& x) {
    return OutputAndGrad{x * x, [](const Tensor& dy) { return dy * 10.0f; }};
  });
  auto f = function([&](const Tensor& x) { return fake_square(x) + 1.0f; });
  Tensor x = tensor({1.0f, 3.0f});
  Tensor want = f(x);
  auto dir = ef::testing::fresh_temp_dir("custom_gradient_saved");
  save(f, dir.string());
  SavedModel m = load(dir.string());
  EXPECT_EQ(m("serving_default", {x})[0].to_vector<float>(), want.to_vector<float>());
  const ir::Graph& g = m.concrete_function("serving_default")->traced_graph();
  std::string text = ir::to_text(g);
  EXPECT_NE(text.find("custom_gradient[fn=\"fake_square\" inputs=1 outputs=1 residuals=0]"), std::string::npos) << text;
  std::vector<Tensor> cot{tensor({1.0f, 1.0f})};
  expect_close(detail::graph_vjp(g, std::vector<Tensor>{x}, cot, {true})[0].to_vector<float>(), {2, 6});
  // The original graph still has the rule.
  expect_close(detail::graph_vjp(f.get_concrete_function(x)->traced_graph(), std::vector<Tensor>{x}, cot, {true})[0]
                   .to_vector<float>(),
               {10, 10});
}
