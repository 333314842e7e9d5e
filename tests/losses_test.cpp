// Keras' regression and margin losses against their formulas (per example over the last axis,
// averaged over the batch), computed here in double.
#include <cmath>

#include "test_util.h"

using namespace ef;
using ef::testing::expect_close;
using ef::testing::expect_error;

namespace {

const std::vector<double> kTrue = {0.0, 1.0, 2.0, -1.0, 0.5, 3.0};
const std::vector<double> kPred = {0.5, 1.0, -1.0, -1.5, 2.5, 0.1};

Tensor as2x3(const std::vector<double>& v) { return tensor(std::vector<float>(v.begin(), v.end()), Shape{2, 3}); }

double mean_of(const std::function<double(double, double)>& f) {
  double s = 0;
  for (std::size_t i = 0; i < kTrue.size(); ++i) s += f(kTrue[i], kPred[i]);
  return s / static_cast<double>(kTrue.size());
}

double value(const train::Loss& loss, const Tensor& y, const Tensor& p) { return loss(y, p).item<float>(); }

}  // namespace

TEST(Losses, ElementwiseLossesMatchTheirFormulas) {
  Tensor y = as2x3(kTrue), p = as2x3(kPred);
  EXPECT_NEAR(value(train::MeanAbsoluteError(), y, p), mean_of([](double t, double q) { return std::abs(q - t); }), 1e-6);
  for (double delta : {1.0, 0.5, 2.0}) {
    double want = mean_of([delta](double t, double q) {
      double e = std::abs(q - t);
      return e <= delta ? 0.5 * e * e : delta * (e - 0.5 * delta);
    });
    EXPECT_NEAR(value(train::Huber(delta), y, p), want, 1e-6) << "delta " << delta;
  }
  EXPECT_NEAR(value(train::LogCosh(), y, p), mean_of([](double t, double q) { return std::log(std::cosh(q - t)); }), 1e-6);
  // Large errors do not overflow: log(cosh(200)) = 200 - log 2.
  EXPECT_NEAR(value(train::LogCosh(), tensor(std::vector<float>{0.0f}, Shape{1, 1}), tensor(std::vector<float>{200.0f}, Shape{1, 1})),
              200.0 - std::log(2.0), 1e-3);
  Tensor counts = as2x3({0, 1, 2, 3, 0, 5}), rates = as2x3({0.5, 1.0, 2.5, 1.5, 0.2, 4.0});
  double poisson = 0;
  for (int i = 0; i < 6; ++i) {
    double t = counts.to_vector<float>()[i], q = rates.to_vector<float>()[i];
    poisson += (q - t * std::log(q + 1e-7)) / 6;
  }
  EXPECT_NEAR(value(train::Poisson(), counts, rates), poisson, 1e-6);
}

TEST(Losses, HingeMapsZeroOneLabels) {
  Tensor p = as2x3({0.3, -0.8, 1.5, 0.2, -2.0, 0.9});
  Tensor signs = as2x3({1, -1, 1, -1, -1, 1}), bits = as2x3({1, 0, 1, 0, 0, 1});
  double want = 0;
  std::vector<float> pv = p.to_vector<float>(), sv = signs.to_vector<float>();
  for (int i = 0; i < 6; ++i) want += std::max(0.0, 1.0 - sv[i] * pv[i]) / 6;
  EXPECT_NEAR(value(train::Hinge(), signs, p), want, 1e-6);
  EXPECT_NEAR(value(train::Hinge(), bits, p), want, 1e-6) << "{0,1} labels are {-1,1}";
}

TEST(Losses, DistributionLosses) {
  Tensor y = as2x3({0.2, 0.3, 0.5, 0.0, 1.0, 0.0}), p = as2x3({0.1, 0.6, 0.3, 0.25, 0.5, 0.25});
  std::vector<float> yv = y.to_vector<float>(), pv = p.to_vector<float>();
  double kl = 0, cos = 0;
  for (int r = 0; r < 2; ++r) {
    double dot = 0, ny = 0, np = 0;
    for (int c = 0; c < 3; ++c) {
      double t = std::clamp<double>(yv[r * 3 + c], 1e-7, 1.0), q = std::clamp<double>(pv[r * 3 + c], 1e-7, 1.0);
      kl += t * std::log(t / q) / 2;
      dot += yv[r * 3 + c] * pv[r * 3 + c];
      ny += yv[r * 3 + c] * yv[r * 3 + c];
      np += pv[r * 3 + c] * pv[r * 3 + c];
    }
    cos += -dot / std::sqrt(ny * np) / 2;
  }
  EXPECT_NEAR(value(train::KLDivergence(), y, p), kl, 1e-5);
  EXPECT_NEAR(value(train::CosineSimilarity(), y, p), cos, 1e-6);
  EXPECT_NEAR(value(train::CosineSimilarity(), p, p), -1.0, 1e-6);
}

TEST(Losses, ByNameAlignedLabelsGradientsAndErrors) {
  for (const char* name : {"mae", "mean_absolute_error", "huber", "log_cosh", "logcosh", "kld", "kl_divergence",
                           "cosine_similarity", "hinge", "poisson"})
    EXPECT_NO_THROW(train::loss_by_name(name)) << name;
  // Labels [B] against predictions [B, 1] (Keras 3 aligns them), eagerly and traced, with a gradient.
  Tensor y = tensor({1.0f, 2.0f, 3.0f}), p = tensor(std::vector<float>{1.5f, 1.0f, 3.0f}, Shape{3, 1});
  train::Loss mae = train::loss_by_name("mae");
  EXPECT_NEAR(value(mae, y, p), (0.5 + 1.0 + 0.0) / 3, 1e-6);
  auto traced = function([&](const Tensor& yy, const Tensor& pp) { return mae(yy, pp); });
  EXPECT_NEAR(traced(y, p).item<float>(), (0.5 + 1.0 + 0.0) / 3, 1e-6);
  Tensor g = grad([&](const Tensor& pp) { return train::Huber()(y, pp); })(p);
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{0.5f / 3, -1.0f / 3, 0.0f}));
  expect_error([] { train::loss_by_name("nope"); }, {"unknown loss 'nope'", "huber", "poisson"});
  expect_error([] { train::Huber(-1.0); }, {"huber", "delta"});
  expect_error([&] { mae(tensor({1.0f, 2.0f}), p); }, {"mean_absolute_error", "differ in shape"});
}

// ---------------------------------------------------------------- label alignment
// [B] labels against [B, 1] predictions (and the reverse) give one value per example, as
// Keras 3's squeeze_or_expand_to_same_rank: never a [B, B] broadcast.
TEST(Losses, RankOneLabelsAlignWithColumnPredictions) {
  Tensor y = tensor({1.0f, 0.0f, 1.0f}), p = tensor(std::vector<float>{0.8f, 0.3f, 0.4f}, Shape{3, 1});
  Tensor y_col = reshape(y, Shape{3, 1}), p_flat = reshape(p, Shape{3});
  std::vector<std::pair<std::string, train::Loss>> losses = {
      {"mse", train::MeanSquaredError()}, {"mae", train::MeanAbsoluteError()}, {"bce", train::BinaryCrossentropy()},
      {"huber", train::Huber(0.25)},      {"log_cosh", train::LogCosh()},       {"hinge", train::Hinge()},
      {"poisson", train::Poisson()},      {"kld", train::KLDivergence()},       {"cosine", train::CosineSimilarity()}};
  for (auto& [name, loss] : losses) {
    Tensor same = loss.per_example(y_col, p);
    ASSERT_EQ(same.shape(), Shape({3})) << name;
    for (auto [a, b] : {std::pair{y, p}, std::pair{y_col, p_flat}}) {
      Tensor got = loss.per_example(a, b);
      ASSERT_EQ(got.shape(), Shape({3})) << name;
      EXPECT_EQ(got.to_vector<float>(), same.to_vector<float>()) << name;
      EXPECT_NEAR(loss(a, b).item<float>(), mean(same).item<float>(), 1e-7) << name;
    }
  }
  // The formula, per example: (p - y)^2 of each pair, 3 values (a [3, 3] broadcast would give 9).
  std::vector<float> se = train::MeanSquaredError().per_example(y, p).to_vector<float>();
  EXPECT_NEAR(se[0], 0.04, 1e-6);
  EXPECT_NEAR(se[1], 0.09, 1e-6);
  EXPECT_NEAR(se[2], 0.36, 1e-6);
  // Cosine of [B, 1] rows is the sign agreement of each pair, as Keras (not one cosine of the batch).
  EXPECT_EQ(train::CosineSimilarity().per_example(tensor({1.0f, -2.0f}), tensor(std::vector<float>{3.0f, 4.0f}, Shape{2, 1}))
                .to_vector<float>(),
            (std::vector<float>{-1.0f, 1.0f}));
}

// ---------------------------------------------------------------- sample_weight
TEST(Losses, SampleWeightSumsOverBatchSize) {
  Tensor y = as2x3(kTrue), p = as2x3(kPred);
  std::vector<double> w = {0.5, 3.0};
  std::vector<float> yv = y.to_vector<float>(), pv = p.to_vector<float>();
  auto per_row = [&](int r, auto f) {
    double s = 0;
    for (int c = 0; c < 3; ++c) s += f(yv[r * 3 + c], pv[r * 3 + c]);
    return s / 3;
  };
  auto sq = [](double t, double q) { return (q - t) * (q - t); };
  double want = (w[0] * per_row(0, sq) + w[1] * per_row(1, sq)) / 2;  // divided by 2 examples, not by 3.5
  train::MeanSquaredError mse;
  Tensor w1 = tensor({0.5f, 3.0f}), w2 = tensor(std::vector<float>{0.5f, 3.0f}, Shape{2, 1});
  EXPECT_NEAR(mse(y, p, w1).item<float>(), want, 1e-6);
  EXPECT_NEAR(mse(y, p, w2).item<float>(), want, 1e-6) << "[batch, 1] weights";
  EXPECT_NEAR(mse(y, p, tensor(std::vector<std::int64_t>{1, 1})).item<float>(), mse(y, p).item<float>(), 1e-6);
  EXPECT_NEAR(mse(y, p, scalar_like(p, 2.0)).item<float>(), 2 * mse(y, p).item<float>(), 1e-6);
  EXPECT_EQ(mse(y, p, Tensor()).item<float>(), mse(y, p).item<float>()) << "undefined: unweighted";
  expect_close(mse.per_example(y, p).to_vector<float>(), {float(per_row(0, sq)), float(per_row(1, sq))});

  // Cross-entropy: per row; weights of zero drop examples from the sum but not from the count.
  train::SparseCategoricalCrossentropy sce(true);
  Tensor logits = tensor({{2.0f, 0.5f, -1.0f}, {0.1f, 0.2f, 0.3f}});
  Tensor labels = tensor(std::vector<std::int64_t>{0, 2});
  std::vector<float> rows = sce.per_example(labels, logits).to_vector<float>();
  EXPECT_NEAR(sce(labels, logits, tensor({0.0f, 1.0f})).item<float>(), rows[1] / 2.0, 1e-6);

  // Traced equals eager, and the gradient is the weighted one.
  auto traced = function([&](const Tensor& a, const Tensor& b, const Tensor& c) { return mse(a, b, c); });
  EXPECT_EQ(traced(y, p, w1).item<float>(), mse(y, p, w1).item<float>());
  Tensor g = grad([&](const Tensor& q) { return mse(y, q, w1); })(p);
  std::vector<float> gv = g.to_vector<float>();
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(gv[i], w[i / 3] * 2 * (pv[i] - yv[i]) / 3 / 2, 1e-6) << i;

  expect_error([&] { mse(y, p, tensor({1.0f, 2.0f, 3.0f})); }, {"[mean_squared_error]", "sample_weight float32[3]", "float32[2]"});
  expect_error([&] { mse(y, p, ones({2, 3})); }, {"[mean_squared_error]", "sample_weight float32[2,3]"});
}

// User losses: per-example values are averaged (and can be weighted); a scalar is returned as
// it is and refuses weights, which it cannot apply per example.
TEST(Losses, UserLossPerExampleOrScalar) {
  train::Loss rows("rows", [](const Tensor& y, const Tensor& p) { return sum(abs(p - y), {-1}); });
  train::Loss scalar("scalar", [](const Tensor& y, const Tensor& p) { return mean(abs(p - y)); });
  Tensor y = as2x3(kTrue), p = as2x3(kPred);
  std::vector<float> r = rows.per_example(y, p).to_vector<float>();
  ASSERT_EQ(r.size(), 2u);
  EXPECT_NEAR(rows(y, p).item<float>(), (r[0] + r[1]) / 2, 1e-6);
  EXPECT_NEAR(rows(y, p, tensor({1.0f, 0.0f})).item<float>(), r[0] / 2, 1e-6);
  EXPECT_NEAR(scalar(y, p).item<float>(), (r[0] + r[1]) / 6, 1e-6);
  expect_error([&] { scalar(y, p, tensor({1.0f, 0.0f})); }, {"[scalar]", "returned a scalar", "per-example"});
  expect_error([&] { scalar.per_example(y, p); }, {"[scalar]", "returned a scalar"});
}

// ---------------------------------------------------------------- sparse labels
TEST(Losses, SparseLabelsOutOfRangeNameTheLabelEagerlyAndTraced) {
  train::SparseCategoricalCrossentropy sce(true);
  Tensor logits = zeros({2, 4});
  for (std::int64_t bad : {4, 9, -1}) {
    std::string label = "Received a label value of " + std::to_string(bad);
    expect_error([&] { sce(tensor(std::vector<std::int64_t>{0, bad}), logits); },
                 {"[sparse_categorical_crossentropy]", label, "outside the valid range of [0, 4)"});
    expect_error([&] { sce(tensor(std::vector<std::int64_t>{bad, 0}), logits, tensor({1.0f, 1.0f})); }, {label, "[0, 4)"});
    expect_error([&] { sce.per_example(tensor(std::vector<std::int64_t>{bad, 0}, Shape{2, 1}), logits); }, {label});
  }
  auto step = function([&](const Tensor& y, const Tensor& p, const Tensor& w) { return sce(y, p, w); });
  Tensor w = tensor({1.0f, 2.0f});
  EXPECT_NEAR(step(tensor(std::vector<std::int64_t>{0, 3}), logits, w).item<float>(), 3 * std::log(4.0) / 2, 1e-5);
  for (std::int64_t bad : {4, -3})
    expect_error([&] { step(tensor(std::vector<std::int64_t>{0, bad}), logits, w); },
                 {"label value of " + std::to_string(bad), "[0, 4)", "position (1,)"});
  EXPECT_EQ(step.tracing_count(), 1);
}
