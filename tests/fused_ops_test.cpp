// Fused ops against the op chains they replace: layer normalization (one op forward, one for
// its gradient) gives the composed formula's numbers within float rounding, in value and in
// every gradient, for float32 and float64, eagerly and traced, with any thread count.
#include <eagerflow/function/function.h>
#include <eagerflow/nn/cross_entropy.h>

#include "test_util.h"

using namespace ef;
using ef::testing::expect_error;
using ef::testing::expect_tensor_near;
using ef::testing::randn;

namespace {

// LayerNormalization's formula before the fused op (Keras': biased variance over the last axis).
Tensor composed_layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double eps) {
  Tensor m = mean(x, {-1}, true);
  Tensor v = mean(square(x - m), {-1}, true);
  return (x - m) * rsqrt(v + eps) * gamma + beta;
}

// Value and gradients (x, gamma, beta) of sum(f(x, gamma, beta) * w).
std::vector<Tensor> value_and_grads(const std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>& f,
                                    const Tensor& x0, const Tensor& g0, const Tensor& b0, const Tensor& w) {
  Tensor x = identity(x0), g = identity(g0), b = identity(b0);
  GradientTape tape;
  tape.watch(std::vector<Tensor>{x, g, b});
  Tensor y = f(x, g, b);
  std::vector<Tensor> d = tape.gradient(sum(y * w), std::vector<Tensor>{x, g, b});
  return {y, d[0], d[1], d[2]};
}

}  // namespace

TEST(FusedLayerNorm, MatchesTheComposedFormulaInValueAndGradients) {
  for (DType dt : {DType::float64, DType::float32}) {
    SCOPED_TRACE(std::string(name_of(dt)));
    double tol = dt == DType::float64 ? 1e-11 : 2e-5;
    for (Shape s : {Shape{7}, Shape{3, 5}, Shape{2, 70, 128}, Shape{4, 3, 33}}) {
      SCOPED_TRACE(s.str());
      std::int64_t c = s[s.rank() - 1];
      // Rows with an offset and a scale far from 0 and 1, as LayerNorm's inputs often are.
      Tensor x = cast(randn(s, 1) * 3.0 + 5.0, dt), g = cast(randn({c}, 2), dt), b = cast(randn({c}, 3), dt);
      Tensor w = cast(randn(s, 4), dt);
      auto fused = value_and_grads([](const Tensor& x, const Tensor& g, const Tensor& b) { return nn::layer_norm(x, g, b, 1e-3); }, x, g, b, w);
      auto plain = value_and_grads([](const Tensor& x, const Tensor& g, const Tensor& b) { return composed_layer_norm(x, g, b, 1e-3); }, x, g, b, w);
      for (int i = 0; i < 4; ++i) {
        SCOPED_TRACE(i);
        // Gradients with respect to gamma and beta sum over rows: relative to their scale.
        expect_tensor_near(fused[static_cast<std::size_t>(i)], plain[static_cast<std::size_t>(i)], i >= 2 ? tol * 10 : tol);
      }
    }
  }
}

TEST(FusedLayerNorm, TracedEqualsEagerAndTheLayerRunsOnIt) {
  nn::LayerNormalization layer(1e-5);
  Tensor x = cast(randn({4, 6, 16}, 5), DType::float32);
  Tensor eager = layer(x);
  auto f = function([&](const Tensor& t) { return layer(t); });
  EXPECT_EQ(f(x).to_vector<float>(), eager.to_vector<float>());
  std::string graph = f.get_concrete_function(x)->str();
  EXPECT_NE(graph.find("layer_norm[epsilon="), std::string::npos) << graph;
  EXPECT_EQ(graph.find("rsqrt"), std::string::npos) << graph;  // no composed chain left
  // Same numbers as the composed formula on the layer's weights (gamma 1, beta 0 by default).
  expect_tensor_near(eager, composed_layer_norm(x, Tensor(layer.weights()[0]), Tensor(layer.weights()[1]), 1e-5), 2e-5);
}

TEST(FusedLayerNorm, TrainStepGradientsInATraceEqualEager) {
  Tensor x = cast(randn({3, 8, 32}, 7), DType::float32), g = cast(randn({32}, 8), DType::float32),
         b = cast(randn({32}, 9), DType::float32), w = cast(randn({3, 8, 32}, 10), DType::float32);
  auto step = [&](const std::vector<Tensor>& in) {
    auto r = value_and_grads([](const Tensor& x, const Tensor& g, const Tensor& b) { return nn::layer_norm(x, g, b, 1e-5); },
                             in[0], in[1], in[2], in[3]);
    return r;
  };
  std::vector<Tensor> eager = step({x, g, b, w});
  auto f = function([&](const std::vector<Tensor>& in) { return step(in); });
  std::vector<Tensor> traced = f(std::vector<Tensor>{x, g, b, w});
  ASSERT_EQ(traced.size(), eager.size());
  for (std::size_t i = 0; i < eager.size(); ++i) EXPECT_EQ(traced[i].to_vector<float>(), eager[i].to_vector<float>()) << i;
  std::string graph = f.get_concrete_function(std::vector<Tensor>{x, g, b, w})->str();
  EXPECT_NE(graph.find("layer_norm_grad"), std::string::npos) << graph;
}

TEST(FusedLayerNorm, TheThreadCountChangesNoBit) {
  Tensor x = cast(randn({64, 40, 48}, 11), DType::float32), g = cast(randn({48}, 12), DType::float32),
         b = cast(randn({48}, 13), DType::float32), w = cast(randn({64, 40, 48}, 14), DType::float32);
  auto run = [&] {
    return value_and_grads([](const Tensor& x, const Tensor& g, const Tensor& b) { return nn::layer_norm(x, g, b, 1e-3); }, x, g, b, w);
  };
  int before = num_threads();
  set_num_threads(1);
  auto one = run();
  set_num_threads(std::max(2, before));
  auto many = run();
  set_num_threads(before);
  for (std::size_t i = 0; i < one.size(); ++i) EXPECT_EQ(one[i].to_vector<float>(), many[i].to_vector<float>()) << i;
}

TEST(FusedLayerNorm, EdgeSizes) {
  // No rows: an empty output, zero gradients for gamma and beta.
  Tensor x = zeros({0, 4}), g = ones({4}), b = zeros({4});
  auto r = value_and_grads([](const Tensor& x, const Tensor& g, const Tensor& b) { return nn::layer_norm(x, g, b); }, x, g, b, zeros({0, 4}));
  EXPECT_EQ(r[0].shape(), (Shape{0, 4}));
  EXPECT_EQ(r[2].to_vector<float>(), std::vector<float>(4, 0.0f));
  EXPECT_EQ(r[3].to_vector<float>(), std::vector<float>(4, 0.0f));
  // One feature: every row normalizes to 0, so y = beta; a constant row likewise.
  Tensor y1 = nn::layer_norm(tensor(std::vector<float>{3, -2}, Shape{2, 1}), tensor(std::vector<float>{2}, Shape{1}),
                             tensor(std::vector<float>{0.5f}, Shape{1}));
  EXPECT_EQ(y1.to_vector<float>(), (std::vector<float>{0.5f, 0.5f}));
  Tensor yc = nn::layer_norm(full({1, 5}, 7.0), ones({5}), zeros({5}));
  EXPECT_EQ(yc.to_vector<float>(), std::vector<float>(5, 0.0f));
  // Rank 1 and a width that is not a multiple of the vector length.
  Tensor x1 = cast(randn({37}, 15), DType::float32);
  expect_tensor_near(nn::layer_norm(x1, ones({37}), zeros({37})), composed_layer_norm(x1, ones({37}), zeros({37}), 1e-3), 2e-5);
  // NaN stays in its row.
  Tensor xn = tensor(std::vector<float>{1, NAN, 2, 1, 2, 3}, Shape{2, 3});
  auto yn = nn::layer_norm(xn, ones({3}), zeros({3})).to_vector<float>();
  EXPECT_TRUE(std::isnan(yn[0]) && std::isnan(yn[2]));
  EXPECT_FALSE(std::isnan(yn[3]) || std::isnan(yn[4]) || std::isnan(yn[5]));
}

TEST(FusedLayerNorm, BadInputsAreNamedErrors) {
  Tensor x = zeros({2, 4}), g = ones({4}), b = zeros({4});
  expect_error([&] { nn::layer_norm(x, ones({3}), b); }, {"layer_norm", "gamma", "float32[2,4]", "float32[3]"});
  expect_error([&] { nn::layer_norm(x, g, zeros({4, 1})); }, {"layer_norm", "beta"});
  expect_error([&] { nn::layer_norm(x, cast(g, DType::float64), b); }, {"layer_norm", "gamma must be float32[4]"});
  expect_error([&] { nn::layer_norm(cast(x, DType::int32), g, b); }, {"layer_norm", "float32 or float64", "int32[2,4]"});
  expect_error([&] { nn::layer_norm(scalar(1.0f), g, b); }, {"layer_norm", "rank >= 1"});
  expect_error([&] { nn::layer_norm(x, g, b, 0.0); }, {"layer_norm", "epsilon must be positive"});
  expect_error([&] { nn::layer_norm(x, g, b, -1.0); }, {"layer_norm", "epsilon"});
  expect_error([&] { nn::layer_norm(x, g, Tensor()); }, {"layer_norm"});
  // A trace with an unknown feature axis checks it when it runs.
  auto f = function([&](const Tensor& t) { return nn::layer_norm(t, g, b); });
  expect_error([&] { f.get_concrete_function(TensorSpec{DType::float32, {2, kDynamic}}); (void)f(zeros({2, 5})); },
               {"layer_norm"});
  EXPECT_EQ(f(ones({3, 4})).shape(), (Shape{3, 4}));  // the function still works
}

TEST(FusedLayerNorm, SavesAndLoadsInAModel) {
  auto dir = ef::testing::fresh_temp_dir("fused_ln");
  train::Sequential model;
  model.add<nn::Dense>(8);
  model.add<nn::LayerNormalization>(1e-4);
  model.add<nn::Dense>(3);
  Tensor x = cast(randn({5, 6}, 16), DType::float32);
  Tensor want = model(x);
  save(model, (dir / "m").string());
  SavedModel loaded = load((dir / "m").string());
  std::string graph = loaded.concrete_function("serving_default")->str();
  EXPECT_NE(graph.find("layer_norm[epsilon="), std::string::npos) << graph;
  EXPECT_EQ(loaded("serving_default", {x})[0].to_vector<float>(), want.to_vector<float>());
  std::filesystem::remove_all(dir);
}

// The demo's pre-norm transformer block (examples/char_transformer.cpp: fused LayerNormalization,
// causal MultiHeadAttention, Dense MLP) learns to copy the previous token, which needs
// attention to position t - 1: with seed 3 the loss falls below 0.3 nats within 240 steps
// (chance: ln 7 = 1.95), in one trace.
TEST(FusedLayerNorm, APreNormTransformerLearnsToCopyThePreviousToken) {
  random::set_seed(3);
  constexpr std::int64_t n = 256, seq = 12, vocab = 8, width = 32;
  Tensor ids = random::randint({n, seq}, 1, vocab, DType::int32);
  Tensor target = concat({zeros({n, 1}, DType::int32), slice(ids, {0, 0}, {n, seq - 1})}, 1);
  Tensor in = train::Input({seq}, DType::int32, "ids");
  Tensor x = (*std::make_shared<nn::PositionalEmbedding>(vocab, seq, width))(in);
  for (int b = 0; b < 2; ++b) {
    Tensor h = (*std::make_shared<nn::LayerNormalization>(1e-5))(x);
    x = x + (*std::make_shared<nn::MultiHeadAttention>(4, width / 4))(h, h, {.use_causal_mask = true});
    Tensor u = (*std::make_shared<nn::Dense>(4 * width, "relu"))((*std::make_shared<nn::LayerNormalization>(1e-5))(x));
    x = x + (*std::make_shared<nn::Dense>(width))(u);
  }
  Tensor logits = (*std::make_shared<nn::Dense>(vocab))((*std::make_shared<nn::LayerNormalization>(1e-5))(x));
  auto model = std::make_shared<train::Functional>(in, logits, "copy_transformer");
  model->compile(std::make_shared<optim::Adam>(5e-3), train::SparseCategoricalCrossentropy(true));
  train::History h = model->fit(ids, target, {.batch_size = 32, .epochs = 30, .verbose = 0});
  const std::vector<double>& loss = h.history.at("loss");
  EXPECT_GT(loss.front(), 1.0);
  EXPECT_LT(loss.back(), 0.3) << "first " << loss.front() << ", last " << loss.back();
  EXPECT_EQ(model->tracing_count(), 1);
}

// The fused sparse softmax cross-entropy against the composed one (one_hot, log_softmax,
// product, sum) in value and gradient, float32 and float64, with extreme logits.
TEST(FusedSoftmaxCrossEntropy, MatchesTheComposedFormulaInValueAndGradient) {
  for (DType dt : {DType::float64, DType::float32}) {
    SCOPED_TRACE(std::string(name_of(dt)));
    double tol = dt == DType::float64 ? 1e-12 : 3e-6;
    for (Shape s : {Shape{1}, Shape{5, 3}, Shape{4, 9, 256}, Shape{2, 37}}) {
      SCOPED_TRACE(s.str());
      std::int64_t c = s[s.rank() - 1];
      std::vector<std::int64_t> dims = s.dims(), lead(dims.begin(), dims.end() - 1);
      Tensor labels = random::stateless_uniform(Shape(lead), 7, 0.0, static_cast<double>(c) - 1e-9, DType::float64);
      labels = cast(floor(labels), DType::int32);
      Tensor logits = cast(randn(s, 8) * 4.0, dt), w = cast(randn(Shape(lead), 9), dt);
      auto run = [&](bool fused) {
        Tensor z = identity(logits);
        GradientTape tape;
        tape.watch(z);
        Tensor loss = fused ? nn::sparse_softmax_cross_entropy_with_logits(labels, z)
                            : -sum(one_hot(labels, c, dt) * log_softmax(z, -1), {-1});
        return std::vector<Tensor>{loss, tape.gradient(sum(loss * w), z)};
      };
      auto f = run(true), p = run(false);
      expect_tensor_near(f[0], p[0], tol);
      expect_tensor_near(f[1], p[1], tol);
    }
  }
  // Huge and -inf logits: finite where the composed form is.
  Tensor big = tensor(std::vector<float>{1e30f, 0.0f, -INFINITY, 3.0f}, Shape{1, 4});
  Tensor one = tensor(std::vector<std::int32_t>{1}, Shape{1});
  EXPECT_EQ(nn::sparse_softmax_cross_entropy_with_logits(one, big).to_vector<float>(), (std::vector<float>{1e30f}));
}

TEST(FusedSoftmaxCrossEntropy, TheKerasLossRunsOnItTracedAndEager) {
  train::SparseCategoricalCrossentropy loss(true);
  Tensor y = tensor(std::vector<std::int64_t>{2, 0, 1, 1, 0, 2}, Shape{2, 3});
  Tensor p = cast(randn({2, 3, 3}, 10), DType::float32);
  Tensor eager = loss(y, p);
  auto f = function([&](const Tensor& a, const Tensor& b) { return loss(a, b); });
  EXPECT_EQ(f(y, p).item<float>(), eager.item<float>());
  std::string graph = f.get_concrete_function(y, p)->str();
  EXPECT_NE(graph.find("sparse_softmax_cross_entropy"), std::string::npos) << graph;
  Tensor want = mean(-sum(one_hot(y, 3, DType::float32) * log_softmax(p, -1), {-1}));
  EXPECT_NEAR(eager.item<float>(), want.item<float>(), 1e-6);
  // Labels out of range are still the loss's own error (checked before the fused op).
  expect_error([&] { loss(tensor(std::vector<std::int64_t>{3, 0, 1, 1, 0, 2}, Shape{2, 3}), p); },
               {"sparse_categorical_crossentropy", "3", "outside the valid range"});
}

TEST(FusedSoftmaxCrossEntropy, BadInputsAreNamedErrors) {
  Tensor logits = zeros({2, 4});
  Tensor labels = tensor(std::vector<std::int32_t>{0, 3}, Shape{2});
  expect_error([&] { nn::sparse_softmax_cross_entropy_with_logits(tensor(std::vector<std::int32_t>{0, 4}, Shape{2}), logits); },
               {"sparse_softmax_cross_entropy", "label 4", "[0, 4)"});
  expect_error([&] { nn::sparse_softmax_cross_entropy_with_logits(tensor(std::vector<std::int32_t>{-1, 0}, Shape{2}), logits); },
               {"sparse_softmax_cross_entropy", "label -1"});
  expect_error([&] { nn::sparse_softmax_cross_entropy_with_logits(cast(labels, DType::float32), logits); },
               {"sparse_softmax_cross_entropy", "int32 or int64 labels"});
  expect_error([&] { nn::sparse_softmax_cross_entropy_with_logits(labels, cast(logits, DType::int32)); },
               {"sparse_softmax_cross_entropy", "float32 or float64 logits"});
  expect_error([&] { nn::sparse_softmax_cross_entropy_with_logits(tensor(std::vector<std::int32_t>{0, 1, 2}, Shape{3}), logits); },
               {"sparse_softmax_cross_entropy", "without its last (class) axis", "int32[3]", "float32[2,4]"});
  expect_error([&] { nn::sparse_softmax_cross_entropy_with_logits(labels, zeros({2, 0})); }, {"sparse_softmax_cross_entropy", "[0, 0)"});
  // No rows: an empty loss and a zero gradient.
  Tensor none = nn::sparse_softmax_cross_entropy_with_logits(tensor(std::vector<std::int32_t>{}, Shape{0}), zeros({0, 4}));
  EXPECT_EQ(none.shape(), (Shape{0}));
}
