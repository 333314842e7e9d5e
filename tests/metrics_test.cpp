// Keras' metrics against their formulas computed here in double, AUC against Keras' bucketed
// algorithm written again here (plain loops), sample weights with Keras' rules, and traced
// updates equal to eager ones.
#include <algorithm>
#include <cmath>
#include <random>

#include "test_util.h"

using namespace ef;
using ef::testing::expect_close;
using ef::testing::expect_error;

namespace {

Tensor f32(const std::vector<double>& v, Shape s) { return tensor(std::vector<float>(v.begin(), v.end()), std::move(s)); }
Tensor f32(const std::vector<double>& v) { return f32(v, Shape{static_cast<std::int64_t>(v.size())}); }
Tensor i64(const std::vector<std::int64_t>& v) { return tensor(v); }
double value(const train::Metric& m) { return m.result().item<float>(); }

// float32 values as the tensors hold them, in double.
std::vector<double> as_f32(std::vector<double> v) {
  for (double& x : v) x = static_cast<float>(x);
  return v;
}

struct Rng {
  std::mt19937_64 gen;
  explicit Rng(std::uint64_t seed) : gen(seed) {}
  double uniform() { return std::uniform_real_distribution<double>(0.0, 1.0)(gen); }
};

// ---- AUC as Keras computes it (metrics_utils._update_confusion_matrix_variables_optimized and
// AUC.result), from its description: each prediction falls in bucket ceil(p (T - 1)) - 1
// (float32 arithmetic, clipped to [0, T-1] for the end thresholds), and the count at
// threshold i is the weight of all buckets >= i.
struct Confusion {
  std::vector<double> tp, fp, tn, fn;
};

Confusion keras_bucketed(const std::vector<double>& y, const std::vector<double>& p, const std::vector<double>& w, int T) {
  std::vector<double> tb(T, 0), fb(T, 0);
  double pos = 0, neg = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    float q = std::clamp(static_cast<float>(p[i]), 0.0f, 1.0f);
    int b = static_cast<int>(std::ceil(q * static_cast<float>(T - 1))) - 1;
    b = std::max(b, 0);
    (y[i] != 0 ? tb : fb)[b] += w[i];
    (y[i] != 0 ? pos : neg) += w[i];
  }
  Confusion c{std::vector<double>(T), std::vector<double>(T), std::vector<double>(T), std::vector<double>(T)};
  double st = 0, sf = 0;
  for (int i = T - 1; i >= 0; --i) {
    st += tb[i];
    sf += fb[i];
    c.tp[i] = st;
    c.fp[i] = sf;
    c.fn[i] = pos - st;
    c.tn[i] = neg - sf;
  }
  return c;
}

// The threshold-by-threshold rule (Keras' general path): positive when p > threshold.
Confusion keras_general(const std::vector<double>& y, const std::vector<double>& p, const std::vector<double>& w,
                        const std::vector<double>& thresholds) {
  std::size_t T = thresholds.size();
  Confusion c{std::vector<double>(T), std::vector<double>(T), std::vector<double>(T), std::vector<double>(T)};
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t i = 0; i < p.size(); ++i) {
      bool above = static_cast<float>(p[i]) > static_cast<float>(thresholds[t]);
      if (y[i] != 0) (above ? c.tp : c.fn)[t] += w[i];
      else (above ? c.fp : c.tn)[t] += w[i];
    }
  return c;
}

double no_nan(double a, double b) { return b == 0 ? 0 : a / b; }

double roc_auc(const Confusion& c) {
  double auc = 0;
  for (std::size_t i = 0; i + 1 < c.tp.size(); ++i) {
    double r0 = no_nan(c.tp[i], c.tp[i] + c.fn[i]), r1 = no_nan(c.tp[i + 1], c.tp[i + 1] + c.fn[i + 1]);
    double f0 = no_nan(c.fp[i], c.fp[i] + c.tn[i]), f1 = no_nan(c.fp[i + 1], c.fp[i + 1] + c.tn[i + 1]);
    auc += (f0 - f1) * (r0 + r1) / 2;
  }
  return auc;
}

// Davis & Goadrich interpolation between consecutive thresholds A (i) and B (i + 1).
double pr_auc(const Confusion& c) {
  double auc = 0;
  for (std::size_t i = 0; i + 1 < c.tp.size(); ++i) {
    double dtp = c.tp[i] - c.tp[i + 1];
    double pa = c.tp[i] + c.fp[i], pb = c.tp[i + 1] + c.fp[i + 1];
    double slope = no_nan(dtp, std::max(pa - pb, 0.0));
    double intercept = c.tp[i + 1] - slope * pb;
    double ratio = pa > 0 && pb > 0 ? no_nan(pa, pb) : 1.0;
    auc += no_nan(slope * (dtp + intercept * std::log(ratio)), std::max(c.tp[i + 1] + c.fn[i + 1], 0.0));
  }
  return auc;
}

// Binary data with predictions on and next to bucket edges, 0 and 1 included.
struct Binary {
  std::vector<double> y, p, w;
};
Binary binary_data(std::size_t n, int T, std::uint64_t seed) {
  Rng r(seed);
  Binary d;
  for (std::size_t i = 0; i < n; ++i) {
    double y = r.uniform() < 0.4 ? 1 : 0;
    double p = std::clamp(0.35 * y + 0.65 * r.uniform(), 0.0, 1.0);
    if (i % 7 == 0) p = std::floor(p * (T - 1)) / (T - 1);  // exactly on a threshold
    if (i % 31 == 0) p = i % 2 ? 1.0 : 0.0;
    d.y.push_back(y);
    d.p.push_back(static_cast<float>(p));
    d.w.push_back(static_cast<float>(0.25 + r.uniform()));
  }
  return d;
}

}  // namespace

// ---------------------------------------------------------------- sample weights, Mean
TEST(Metrics, MeanWeighsAsKeras) {
  train::Mean m;
  m.update_state(Tensor(), f32({1, 3, 5, 7}), f32({1, 1, 0, 0}));
  EXPECT_NEAR(value(m), 2.0, 1e-7);  // Keras' docstring
  m.reset_state();
  m.update_state(Tensor(), f32({1, 3, 5, 7}), f32({1, 1, 0, 0}, Shape{4, 1}));
  EXPECT_NEAR(value(m), 2.0, 1e-7) << "[batch, 1] weights";
  // Weighted and unweighted updates both count examples: (2*1 + 4*1 + 6*3) / (1 + 1 + 3).
  m.reset_state();
  m.update_state(f32({2, 4}));
  m.update_state(Tensor(), f32({6}), f32({3}));
  EXPECT_NEAR(value(m), (2.0 + 4 + 18) / 5, 1e-6);
  // Per-example values of rank 2: averaged over each row first.
  m.reset_state();
  m.update_state(Tensor(), f32({1, 3, 10, 20}, Shape{2, 2}), f32({3, 1}));
  EXPECT_NEAR(value(m), (2.0 * 3 + 15 * 1) / 4, 1e-6);
  expect_error([&] { m.update_state(Tensor(), f32({1, 2, 3}), f32({1, 2})); }, {"[mean]", "sample_weight", "float32[2]"});
}

TEST(Metrics, AccuraciesTakeSampleWeights) {
  train::SparseCategoricalAccuracy acc;
  Tensor p = f32({0.9, 0.1, 0.2, 0.8, 0.6, 0.4}, Shape{3, 2});
  acc.update_state(i64({0, 0, 0}), p, f32({2, 5, 1}));  // right, wrong, right
  EXPECT_NEAR(value(acc), 3.0 / 8, 1e-6);
  train::BinaryAccuracy bin;
  bin.update_state(f32({1, 0, 1}), f32({0.7, 0.6, 0.2}, Shape{3, 1}), f32({1, 1, 2}, Shape{3, 1}));
  EXPECT_NEAR(value(bin), 1.0 / 4, 1e-6);  // only the first is right
}

// A metric written against the two-argument update keeps working; weights reach it as an error.
TEST(Metrics, UserMetricWithoutWeightsRefusesThem) {
  struct Count : train::Metric {
    Count() : Metric("count") {}
    using Metric::update_state;
    void update_state(const Tensor&, const Tensor& y_pred) override { accumulate(ones_like(y_pred)); }
  } c;
  train::Metric& m = c;
  m.update_state(f32({1}), f32({2, 3}));
  m.update_state(f32({1}), f32({2, 3}), Tensor());
  EXPECT_NEAR(value(c), 1.0, 1e-7);
  expect_error([&] { m.update_state(f32({1}), f32({2, 3}), f32({1, 1})); }, {"[count]", "sample_weight", "update_state"});
}

// ---------------------------------------------------------------- regression
TEST(Metrics, RegressionMatchTheirFormulas) {
  std::vector<double> y1 = {0, 1, 2, -1, 0.5, 3}, p1 = {0.5, 1, -1, -1.5, 2.5, 0.1}, w1 = {1, 2, 0.5};
  std::vector<double> y2 = {1, 1, 0, 2}, p2 = {0, 1.5, 0.5, 2}, w2 = {3, 1};
  auto expected = [&](auto f, bool weighted) {
    double num = 0, den = 0;
    auto add = [&](const std::vector<double>& y, const std::vector<double>& p, const std::vector<double>& w) {
      std::vector<double> yy = as_f32(y), pp = as_f32(p);
      for (std::size_t r = 0; r < w.size(); ++r) {
        double row = (f(yy[2 * r], pp[2 * r]) + f(yy[2 * r + 1], pp[2 * r + 1])) / 2;
        num += row * (weighted ? w[r] : 1);
        den += weighted ? w[r] : 1;
      }
    };
    add(y1, p1, w1);
    add(y2, p2, w2);
    return num / den;
  };
  auto abs_err = [](double t, double q) { return std::abs(q - t); };
  auto sq_err = [](double t, double q) { return (q - t) * (q - t); };
  for (bool weighted : {false, true}) {
    train::metrics::MeanAbsoluteError mae;
    train::metrics::MeanSquaredError mse;
    train::RootMeanSquaredError rmse;
    for (train::Metric* m : std::vector<train::Metric*>{&mae, &mse, &rmse}) {
      m->update_state(f32(y1, {3, 2}), f32(p1, {3, 2}), weighted ? f32(w1) : Tensor());
      m->update_state(f32(y2, {2, 2}), f32(p2, {2, 2}), weighted ? f32(w2, {2, 1}) : Tensor());
    }
    EXPECT_NEAR(value(mae), expected(abs_err, weighted), 1e-6) << weighted;
    EXPECT_NEAR(value(mse), expected(sq_err, weighted), 1e-6) << weighted;
    EXPECT_NEAR(value(rmse), std::sqrt(expected(sq_err, weighted)), 1e-6) << "the root of the mean";
  }
  EXPECT_EQ(train::RootMeanSquaredError().name(), "root_mean_squared_error");
}

// Labels [B] against predictions [B, 1] (and the reverse) pair up element by element, as Keras
// 3: never a [B, B] broadcast.
TEST(Metrics, LabelsOfRankOneLessAlign) {
  Tensor y = f32({1, 2, 3}), p = f32({1.5, 1, 3}, Shape{3, 1});
  for (bool reversed : {false, true}) {
    train::metrics::MeanAbsoluteError mae;
    train::metrics::MeanSquaredError mse;
    train::AUC auc;
    train::Precision prec;
    Tensor a = reversed ? reshape(y, Shape{3, 1}) : y, b = reversed ? reshape(p, Shape{3}) : p;
    mae.update_state(a, b);
    mse.update_state(a, b);
    EXPECT_NEAR(value(mae), 0.5, 1e-6);
    EXPECT_NEAR(value(mse), (0.25 + 1) / 3, 1e-6);
    Tensor labels = reversed ? f32({1, 0, 1}, Shape{3, 1}) : f32({1, 0, 1});
    Tensor scores = reversed ? f32({0.9, 0.2, 0.4}) : f32({0.9, 0.2, 0.4}, Shape{3, 1});
    prec.update_state(labels, scores);
    auc.update_state(labels, scores);
    EXPECT_NEAR(value(prec), 1.0, 1e-7);  // one positive prediction, right
    EXPECT_NEAR(value(auc), 1.0, 1e-6);
  }
}

// ---------------------------------------------------------------- top k
TEST(Metrics, TopKAccuracies) {
  train::TopKCategoricalAccuracy top1(1);
  top1.update_state(f32({0, 0, 1, 0, 1, 0}, {2, 3}), f32({0.1, 0.9, 0.8, 0.05, 0.95, 0}, {2, 3}));
  EXPECT_NEAR(value(top1), 0.5, 1e-7);  // Keras' docstring
  train::SparseTopKCategoricalAccuracy sparse1(1);
  sparse1.update_state(i64({2, 1}), f32({0.1, 0.9, 0.8, 0.05, 0.95, 0}, {2, 3}));
  EXPECT_NEAR(value(sparse1), 0.5, 1e-7);
  // k = 2 with weights; a tie at the k-th score counts (TF's in_top_k); [B, 1] labels.
  train::SparseTopKCategoricalAccuracy top2(2);
  Tensor scores = f32({0.1, 0.5, 0.4, 0.0, 0.3, 0.3, 0.3, 0.1, 0.6, 0.2, 0.1, 0.1}, {3, 4});
  top2.update_state(tensor(std::vector<std::int64_t>{0, 2, 3}, Shape{3, 1}), scores, f32({1, 2, 4}));
  // row 0: label score 0.1, two above: out; row 1: 0.3 tied with two others, none above: in;
  // row 2: 0.1, two above (0.6, 0.2): out.
  EXPECT_NEAR(value(top2), 2.0 / 7, 1e-6);
  EXPECT_EQ(train::SparseTopKCategoricalAccuracy().name(), "sparse_top_k_categorical_accuracy");
  // A NaN score for the label is never in the top k.
  train::SparseTopKCategoricalAccuracy nan_row(5);
  nan_row.update_state(i64({0}), f32({NAN, 0.5}, {1, 2}));
  EXPECT_EQ(value(nan_row), 0.0);
  expect_error([] { train::TopKCategoricalAccuracy(0); }, {"top_k_categorical_accuracy", "k must be at least 1"});
}

TEST(Metrics, SparseLabelsOutOfRangeAreErrorsEagerlyAndTraced) {
  train::SparseTopKCategoricalAccuracy top(2);
  Tensor scores = zeros({2, 3});
  expect_error([&] { top.update_state(i64({0, 3}), scores); },
               {"[sparse_top_k_categorical_accuracy]", "label value of 3", "[0, 3)"});
  expect_error([&] { top.update_state(i64({-1, 0}), scores); }, {"label value of -1", "[0, 3)"});
  train::SparseCategoricalAccuracy acc;
  auto step = function([&](const Tensor& y, const Tensor& p) {
    top.update_state(y, p);
    acc.update_state(y, p);
    return sum(p);
  });
  step(i64({0, 2}), scores);
  expect_error([&] { step(i64({0, 7}), scores); }, {"label value of 7", "outside the valid range of [0, 3)"});
  expect_error([&] { step(i64({-2, 0}), scores); }, {"label value of -2", "[0, 3)"});
  EXPECT_EQ(step.tracing_count(), 1);
}

// ---------------------------------------------------------------- Precision, Recall
TEST(Metrics, PrecisionAndRecall) {
  train::Precision p;
  p.update_state(f32({0, 1, 1, 1}), f32({1, 0, 1, 1}));
  EXPECT_NEAR(value(p), 2.0 / 3, 1e-6);  // Keras' docstring
  p.reset_state();
  p.update_state(f32({0, 1, 1, 1}), f32({1, 0, 1, 1}), f32({0, 0, 1, 0}));
  EXPECT_NEAR(value(p), 1.0, 1e-7);
  train::Precision top2({.top_k = 2}), top4({.top_k = 4});
  top2.update_state(f32({0, 0, 1, 1}), f32({1, 1, 1, 1}));
  top4.update_state(f32({0, 0, 1, 1}), f32({1, 1, 1, 1}));
  EXPECT_EQ(value(top2), 0.0);  // ties: the first two
  EXPECT_NEAR(value(top4), 0.5, 1e-7);
  train::Recall r;
  r.update_state(f32({0, 1, 1, 1}), f32({1, 0, 1, 1}));
  EXPECT_NEAR(value(r), 2.0 / 3, 1e-6);

  // Random multi-class data, flattened, against the formula at several thresholds, weighted.
  Rng rng(7);
  std::vector<double> y, q, w;
  for (int i = 0; i < 40; ++i) {
    y.push_back(rng.uniform() < 0.3 ? 1 : 0);
    q.push_back(static_cast<float>(rng.uniform()));
  }
  for (int i = 0; i < 10; ++i) w.push_back(static_cast<float>(rng.uniform()));
  std::vector<double> thresholds = {0.2, 0.5, 0.7};
  train::Precision pm({.thresholds = thresholds});
  train::Recall rm({.thresholds = thresholds});
  pm.update_state(f32(y, {10, 4}), f32(q, {10, 4}), f32(w));
  rm.update_state(f32(y, {10, 4}), f32(q, {10, 4}), f32(w));
  std::vector<float> pv = pm.result().to_vector<float>(), rv = rm.result().to_vector<float>();
  ASSERT_EQ(pv.size(), 3u);
  for (std::size_t t = 0; t < 3; ++t) {
    double tp = 0, fp = 0, fn = 0;
    for (int i = 0; i < 40; ++i) {
      bool pos = static_cast<float>(q[i]) > static_cast<float>(thresholds[t]);
      double wi = w[i / 4];
      tp += pos && y[i] ? wi : 0;
      fp += pos && !y[i] ? wi : 0;
      fn += !pos && y[i] ? wi : 0;
    }
    EXPECT_NEAR(pv[t], tp / (tp + fp), 1e-6) << thresholds[t];
    EXPECT_NEAR(rv[t], tp / (tp + fn), 1e-6) << thresholds[t];
  }
  // class_id: column 1 only.
  train::Recall col({.class_id = 1});
  col.update_state(f32({1, 1, 0, 1, 0, 0}, {3, 2}), f32({0.9, 0.8, 0.1, 0.3, 0.2, 0.9}, {3, 2}));
  EXPECT_NEAR(value(col), 0.5, 1e-7);  // column 1 labels 1,1,0: found 0.8, missed 0.3
  expect_error([] { train::Precision({.thresholds = {1.5}}); }, {"[precision]", "thresholds must be in [0, 1]"});
  expect_error([] { train::Recall r({.class_id = 5}); r.update_state(zeros({1, 2}), zeros({1, 2})); }, {"class_id 5", "[0, 2)"});
}

// ---------------------------------------------------------------- AUC
TEST(Metrics, AucDocstringExamples) {
  train::AUC m({.num_thresholds = 3});
  m.update_state(f32({0, 0, 1, 1}), f32({0, 0.5, 0.3, 0.9}));
  EXPECT_NEAR(value(m), 0.75, 1e-7);
  m.reset_state();
  m.update_state(f32({0, 0, 1, 1}), f32({0, 0.5, 0.3, 0.9}), f32({1, 0, 0, 1}));
  EXPECT_NEAR(value(m), 1.0, 1e-7);
  ASSERT_EQ(train::AUC().thresholds().size(), 200u);
  EXPECT_DOUBLE_EQ(train::AUC().thresholds().front(), -1e-7);
  EXPECT_DOUBLE_EQ(train::AUC().thresholds()[1], 1.0 / 199);
}

TEST(Metrics, AucMatchesKerasAlgorithm) {
  for (int T : {200, 7}) {
    Binary d = binary_data(600, T, 11 + T);
    Confusion c = keras_bucketed(d.y, d.p, std::vector<double>(d.p.size(), 1.0), T);
    Confusion cw = keras_bucketed(d.y, d.p, d.w, T);
    train::AUC roc({.num_thresholds = T}), pr({.num_thresholds = T, .curve = "PR"});
    train::AUC roc_w({.num_thresholds = T}), pr_w({.num_thresholds = T, .curve = "pr"});
    // In three batches of [B, 1] predictions, to check accumulation too.
    for (std::size_t b = 0; b < 3; ++b) {
      auto part = [&](const std::vector<double>& v) { return std::vector<double>(v.begin() + b * 200, v.begin() + (b + 1) * 200); };
      Tensor y = f32(part(d.y), {200, 1}), p = f32(part(d.p), {200, 1}), w = f32(part(d.w));
      roc.update_state(y, p);
      pr.update_state(y, p);
      roc_w.update_state(y, p, w);
      pr_w.update_state(y, p, w);
    }
    EXPECT_NEAR(value(roc), roc_auc(c), 2e-6) << T;
    EXPECT_NEAR(value(pr), pr_auc(c), 2e-6) << T;
    EXPECT_NEAR(value(roc_w), roc_auc(cw), 2e-6) << T;
    EXPECT_NEAR(value(pr_w), pr_auc(cw), 2e-6) << T;
    EXPECT_GT(value(roc), 0.6) << "the data is informative";
  }
  // Explicit, unevenly spaced thresholds: the threshold-by-threshold rule.
  Binary d = binary_data(300, 10, 5);
  std::vector<double> inner = {0.1, 0.25, 0.3, 0.8};
  std::vector<double> all = {-1e-7, 0.1, 0.25, 0.3, 0.8, 1 + 1e-7};
  train::AUC roc({.thresholds = {0.8, 0.1, 0.3, 0.25}}), pr({.curve = "PR", .thresholds = inner});
  roc.update_state(f32(d.y), f32(d.p), f32(d.w));
  pr.update_state(f32(d.y), f32(d.p), f32(d.w));
  EXPECT_NEAR(value(roc), roc_auc(keras_general(d.y, d.p, d.w, all)), 2e-6);
  EXPECT_NEAR(value(pr), pr_auc(keras_general(d.y, d.p, d.w, all)), 2e-6);
  // from_logits: a sigmoid first.
  train::AUC logits({.from_logits = true}), probs;
  logits.update_state(f32({0, 1, 1, 0}), f32({-2, 1, 0.5, 0.1}));
  probs.update_state(f32({0, 1, 1, 0}), sigmoid(f32({-2, 1, 0.5, 0.1})));
  EXPECT_EQ(value(logits), value(probs));
  expect_error([] { train::AUC({.curve = "XY"}); }, {"[auc]", "curve must be 'ROC' or 'PR'"});
  expect_error([] { train::AUC({.num_thresholds = 1}); }, {"[auc]", "num_thresholds"});
}

// ---------------------------------------------------------------- F1
TEST(Metrics, F1ScoreAverages) {
  Tensor y = f32({1, 1, 1, 1, 0, 0, 1, 1, 0}, {3, 3}), p = f32({0.2, 0.6, 0.7, 0.2, 0.6, 0.6, 0.6, 0.8, 0.0}, {3, 3});
  train::F1Score none("", 0.5);
  none.update_state(y, p);
  expect_close(none.result().to_vector<float>(), {0.5f, 0.8f, 0.6666667f}, 1e-5f);  // Keras' docstring
  EXPECT_NEAR(none.logged_result(), (0.5 + 0.8 + 2.0 / 3) / 3, 1e-5) << "logged as the mean over classes";

  // Weighted data against the definition, for each average and with threshold None (the row's max).
  Rng rng(3);
  std::vector<double> yv, pv, wv;
  for (int i = 0; i < 24; ++i) {
    yv.push_back(rng.uniform() < 0.4 ? 1 : 0);
    pv.push_back(static_cast<float>(rng.uniform()));
  }
  for (int i = 0; i < 8; ++i) wv.push_back(static_cast<float>(rng.uniform()));
  for (std::optional<double> threshold : {std::optional<double>(0.5), std::optional<double>()}) {
    std::vector<double> tp(3), fp(3), fn(3), support(3);
    for (int r = 0; r < 8; ++r) {
      double row_max = std::max({pv[r * 3], pv[r * 3 + 1], pv[r * 3 + 2]});
      for (int c = 0; c < 3; ++c) {
        double q = pv[r * 3 + c], t = yv[r * 3 + c];
        double pred = threshold ? (q > *threshold) : (q >= row_max && std::abs(q) > 1e-9);
        tp[c] += wv[r] * pred * t;
        fp[c] += wv[r] * pred * (1 - t);
        fn[c] += wv[r] * (1 - pred) * t;
        support[c] += wv[r] * t;
      }
    }
    auto f1 = [](double tp, double fp, double fn) {
      double pr = tp / (tp + fp + 1e-7), re = tp / (tp + fn + 1e-7);
      return 2 * pr * re / (pr + re + 1e-7);
    };
    double macro = 0, weighted = 0, total_support = support[0] + support[1] + support[2];
    for (int c = 0; c < 3; ++c) {
      macro += f1(tp[c], fp[c], fn[c]) / 3;
      weighted += f1(tp[c], fp[c], fn[c]) * support[c] / (total_support + 1e-7);
    }
    double micro = f1(tp[0] + tp[1] + tp[2], fp[0] + fp[1] + fp[2], fn[0] + fn[1] + fn[2]);
    for (auto [average, want] : std::vector<std::pair<std::string, double>>{{"micro", micro}, {"macro", macro}, {"weighted", weighted}}) {
      train::F1Score m(average, threshold);
      // two batches
      m.update_state(f32(std::vector<double>(yv.begin(), yv.begin() + 12), {4, 3}),
                     f32(std::vector<double>(pv.begin(), pv.begin() + 12), {4, 3}), f32({wv[0], wv[1], wv[2], wv[3]}));
      m.update_state(f32(std::vector<double>(yv.begin() + 12, yv.end()), {4, 3}),
                     f32(std::vector<double>(pv.begin() + 12, pv.end()), {4, 3}), f32({wv[4], wv[5], wv[6], wv[7]}, {4, 1}));
      EXPECT_NEAR(value(m), want, 1e-5) << average << " threshold " << threshold.has_value();
      EXPECT_EQ(m.result().rank(), 0);
    }
  }
  expect_error([] { train::F1Score("average"); }, {"[f1_score]", "average must be"});
  expect_error([] { train::F1Score("", 1.5); }, {"[f1_score]", "threshold"});
  expect_error([] { train::F1Score().update_state(zeros({3}), zeros({3})); }, {"[f1_score]", "[batch, classes]"});
}

// FBetaScore: Keras' docstring example (beta 2, threshold 0.5) on the data above; beta 1 is F1.
TEST(Metrics, FBetaScoreWeighsRecall) {
  Tensor y = f32({1, 1, 1, 1, 0, 0, 1, 1, 0}, {3, 3}), p = f32({0.2, 0.6, 0.7, 0.2, 0.6, 0.6, 0.6, 0.8, 0.0}, {3, 3});
  train::FBetaScore f2("", 2.0, 0.5);
  f2.update_state(y, p);
  expect_close(f2.result().to_vector<float>(), {0.3846154f, 0.90909094f, 0.8333334f}, 1e-5f);
  train::FBetaScore f1("macro", 1.0, 0.5);
  train::F1Score ref("macro", 0.5);
  f1.update_state(y, p);
  ref.update_state(y, p);
  EXPECT_EQ(value(f1), value(ref));
  expect_error([] { train::FBetaScore("", 0.0); }, {"[fbeta_score]", "It should be a float > 0"});
  expect_error([] { train::FBetaScore("", -1.0); }, {"beta"});
}

// ---------------------------------------------------------------- traced == eager
TEST(Metrics, UpdatesInsideATracedStepEqualEagerOnes) {
  using Make = std::function<std::shared_ptr<train::Metric>()>;
  std::vector<std::pair<std::string, Make>> makers = {
      {"mae", [] { return std::make_shared<train::metrics::MeanAbsoluteError>(); }},
      {"rmse", [] { return std::make_shared<train::RootMeanSquaredError>(); }},
      {"auc", [] { return std::make_shared<train::AUC>(); }},
      {"auc_pr", [] { return std::make_shared<train::AUC>(train::AUCOptions{.curve = "PR"}); }},
      {"precision", [] { return std::make_shared<train::Precision>(train::ConfusionOptions{.thresholds = {0.3, 0.6}}); }},
      {"recall_top2", [] { return std::make_shared<train::Recall>(train::ConfusionOptions{.top_k = 2}); }},
      {"top_k", [] { return std::make_shared<train::TopKCategoricalAccuracy>(2); }},
      {"f1_macro", [] { return std::make_shared<train::F1Score>("macro"); }},
      {"f1_none", [] { return std::make_shared<train::F1Score>("", 0.4); }},
  };
  Rng rng(1);
  std::vector<Tensor> ys, ps, ws;
  for (int b = 0; b < 3; ++b) {
    std::vector<double> y, p, w;
    for (int i = 0; i < 8; ++i) {
      int label = static_cast<int>(rng.uniform() * 4);
      for (int c = 0; c < 4; ++c) {
        y.push_back(c == label);
        p.push_back(rng.uniform());
      }
      w.push_back(rng.uniform());
    }
    ys.push_back(f32(y, {8, 4}));
    ps.push_back(f32(p, {8, 4}));
    ws.push_back(f32(w));
  }
  for (auto& [name, make] : makers) {
    auto eager = make(), traced = make();
    auto step = function([&](const Tensor& y, const Tensor& p, const Tensor& w) {
      traced->update_state(y, p, w);
      return sum(p);
    });
    for (int b = 0; b < 3; ++b) {
      eager->update_state(ys[b], ps[b], ws[b]);
      step(ys[b], ps[b], ws[b]);
    }
    EXPECT_EQ(step.tracing_count(), 1) << name;
    expect_close(traced->result().to_vector<float>(), eager->result().to_vector<float>(), 1e-6f);
    traced->reset_state();
    step(ys[0], ps[0], ws[0]);
    eager->reset_state();
    eager->update_state(ys[0], ps[0], ws[0]);
    expect_close(traced->result().to_vector<float>(), eager->result().to_vector<float>(), 1e-6f);
  }
}

// ---------------------------------------------------------------- by name
TEST(Metrics, ByKerasName) {
  for (const char* name : {"mae", "mean_absolute_error", "mse", "mean_squared_error", "rmse", "root_mean_squared_error", "auc",
                           "precision", "recall", "top_k_categorical_accuracy", "sparse_top_k_categorical_accuracy",
                           "f1_score"}) {
    auto m = train::metric_by_name(name, "");
    ASSERT_NE(m, nullptr) << name;
    EXPECT_EQ(m->name(), name);
  }
  auto rmse = train::metric_by_name("rmse", "mse");
  rmse->update_state(f32({0, 0}), f32({3, 4}));
  EXPECT_NEAR(rmse->logged_result(), std::sqrt(12.5), 1e-5);
  auto f1 = train::metric_by_name("f1_score", "");
  f1->update_state(f32({1, 0, 0, 1}, {2, 2}), f32({0.9, 0.1, 0.2, 0.7}, {2, 2}));
  EXPECT_EQ(f1->result().rank(), 0) << "by name: one number fit can log";
  expect_error([] { train::metric_by_name("nope", ""); }, {"unknown metric 'nope'", "auc", "f1_score"});
}
