// Keras' regression and margin losses against their formulas (per example over the last axis,
// averaged over the batch), computed here in double.
#include <cmath>

#include "test_util.h"

using namespace ef;
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
