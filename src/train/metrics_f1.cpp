// FBetaScore and F1Score (beta = 1) as Keras' (keras/src/metrics/f_score_metrics.py): weighted
// true positive, false positive and false negative counts per class (pooled for "micro"),
// F = (1 + b^2) P R / (b^2 P + R) with Keras' epsilon in each division.
#include <cmath>

#include "eagerflow/ops/ops.h"
#include "eagerflow/train/metrics.h"
#include "train/metrics_util.h"

namespace ef::train {
namespace {
constexpr double kEpsilon = 1e-7;  // Keras' backend.epsilon()
}  // namespace

FBetaScore::FBetaScore(std::string average, double beta, std::optional<double> threshold, std::string name)
    : WeightedMetric(std::move(name)), average_(std::move(average)), beta_(beta), threshold_(threshold) {
  if (!(beta_ > 0) || !std::isfinite(beta_))
    fail(this->name(), "Invalid beta argument value. It should be a float > 0. Received: beta=" + std::to_string(beta_));
  if (average_ == "none" || average_ == "None") average_.clear();
  if (!average_.empty() && average_ != "micro" && average_ != "macro" && average_ != "weighted")
    fail(this->name(), "average must be None (''), 'micro', 'macro' or 'weighted', got '" + average_ + "'");
  if (threshold_ && !(*threshold_ > 0 && *threshold_ <= 1))
    fail(this->name(), "threshold must satisfy 0 < threshold <= 1, got " + std::to_string(*threshold_));
}

void FBetaScore::update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  if (!y_true.defined() || !y_pred.defined() || y_true.rank() != 2 || y_pred.rank() != 2 ||
      y_pred.shape()[1] == kDynamic)
    fail(name(), "expects predictions and labels of shape [batch, classes] with a known class count, got labels " +
                     (y_true.defined() ? y_true.spec().str() : "undefined") + " and predictions " +
                     (y_pred.defined() ? y_pred.spec().str() : "undefined"));
  auto [t, p] = matched(name(), y_true, as_float(y_pred));
  std::int64_t classes = y_pred.shape()[1];
  Shape counts = average_ == "micro" ? Shape{} : Shape{classes};
  if (!tp_.defined()) {  // made here, when the class count is known (a first trace may make variables)
    auto make = [&](const char* what) { return Variable(zeros(counts, DType::float64), name() + "/" + what, false); };
    tp_ = make("true_positives");
    fp_ = make("false_positives");
    fn_ = make("false_negatives");
    support_ = make("intermediate_weights");
  } else if (average_ != "micro" && tp_.shape()[0] != classes) {
    fail(name(), "was built for " + std::to_string(tp_.shape()[0]) + " classes, got predictions " + y_pred.spec().str());
  }
  Tensor decided = threshold_ ? p > *threshold_
                              // the row's largest score, but never a row of zeros (Keras: |p| > 1e-9)
                              : logical_and(p >= max(p, {-1}, true), abs(p) > 1e-9);
  Tensor pred = cast(decided, DType::float64), truth = cast(t, DType::float64);
  Tensor w;
  if (sample_weight.defined()) {
    w = cast(sample_weight, DType::float64);
    while (w.rank() < 2) w = expand_dims(w, -1);  // [batch] weighs each row
  }
  std::vector<int> axes = average_ == "micro" ? std::vector<int>{} : std::vector<int>{0};
  auto weighted_sum = [&](const Tensor& v) { return sum(w.defined() ? v * w : v, axes); };
  tp_.assign_add(weighted_sum(pred * truth));
  fp_.assign_add(weighted_sum(pred * (1.0 - truth)));
  fn_.assign_add(weighted_sum((1.0 - pred) * truth));
  support_.assign_add(weighted_sum(truth));
}

Tensor FBetaScore::result() const {
  if (!tp_.defined()) return zeros({}, DType::float32);  // nothing seen yet
  Tensor tp = tp_, fp = fp_, fn = fn_;
  Tensor precision = tp / (tp + fp + kEpsilon);
  Tensor recall = tp / (tp + fn + kEpsilon);
  double b2 = beta_ * beta_;
  Tensor f1 = (precision * recall) / (b2 * precision + recall + kEpsilon) * (1.0 + b2);
  if (average_ == "weighted") {
    Tensor support = support_;
    f1 = sum(f1 * (support / (sum(support) + kEpsilon)));
  } else if (!average_.empty()) {
    f1 = mean(f1);
  }
  return cast(f1, DType::float32);
}

void FBetaScore::reset_state() {
  if (!tp_.defined()) return;
  for (const Variable* v : {&tp_, &fp_, &fn_, &support_}) v->assign(zeros_like(Tensor(*v)));
}

float FBetaScore::logged_result() const {
  // average=None: the unweighted mean of the per-class scores (the macro average).
  return Metric::logged_result();
}

}  // namespace ef::train
