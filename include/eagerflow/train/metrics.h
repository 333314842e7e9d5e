#pragma once
// Keras' stateful metrics: update_state accumulates (in variables, so a traced train step
// updates them too), result() reads the running value, reset_state() starts over.
//
// sample_weight (Keras' semantics): update_state(y_true, y_pred, sample_weight) weights each
// example (a scalar, [batch] or [batch, 1]; an undefined tensor means unweighted). Mean-style
// metrics report sum(value * weight) / sum(weight); confusion metrics (AUC, Precision, Recall,
// F1Score) add weights instead of counts.
//
// Logging: fit/evaluate log one float per metric name (logged_result()). Every metric here has
// a scalar result except Precision/Recall given several thresholds and F1Score(average=None),
// whose result() is a vector as in Keras; their logged value is the mean of that vector (for
// F1Score the unweighted mean over classes, i.e. the 'macro' average).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "eagerflow/core/tensor.h"
#include "eagerflow/variable.h"

namespace ef::train {

class Metric {
 public:
  explicit Metric(std::string name);
  virtual ~Metric() = default;
  const std::string& name() const { return name_; }
  // The unweighted update: what a metric written by a user overrides.
  virtual void update_state(const Tensor& y_true, const Tensor& y_pred) = 0;
  // The weighted update. The metrics here implement it; the default calls the unweighted
  // update when sample_weight is undefined and is an ef::Error otherwise (a user metric that
  // never saw weights must not silently drop them).
  virtual void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight);
  // Default: total / count so far (NaN before any update).
  virtual Tensor result() const;
  virtual void reset_state();
  // The one float fit logs under name(): result(), or the mean of a vector result.
  virtual float logged_result() const;

 protected:
  // Adds per-example values (weighted equally) to the running mean.
  void accumulate(const Tensor& values);
  // Adds per-example values weighted as Keras' Mean does (sample_weight may be undefined):
  // values are averaged over the axes the weight does not have, then sum(v * w) / sum(w).
  void accumulate(const Tensor& values, const Tensor& sample_weight);
  // Adds a total that stands for `weight` examples.
  void accumulate_weighted(const Tensor& weighted_total, const Tensor& weight);

 private:
  std::string name_;
  Variable total_, count_;
};

// The metrics below: both updates go to one weighted update (an undefined weight: unweighted).
class WeightedMetric : public Metric {
 public:
  using Metric::Metric;
  void update_state(const Tensor& y_true, const Tensor& y_pred) final { update(y_true, y_pred, Tensor()); }
  void update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) final {
    update(y_true, y_pred, sample_weight);
  }

 protected:
  virtual void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) = 0;
};

// The mean of the values given (y_pred; y_true is ignored): the running loss.
class Mean : public WeightedMetric {
 public:
  explicit Mean(std::string name = "mean") : WeightedMetric(std::move(name)) {}
  using WeightedMetric::update_state;
  void update_state(const Tensor& values) { update_state(Tensor(), values, Tensor()); }
  // A value that stands for `weight` examples (a batch's mean loss and its batch size).
  void update_state_weighted(const Tensor& value, const Tensor& weight);

 protected:
  void update(const Tensor& y_true, const Tensor& values, const Tensor& sample_weight) override;
};

// y_pred == y_true, elementwise.
class Accuracy : public WeightedMetric {
 public:
  explicit Accuracy(std::string name = "accuracy") : WeightedMetric(std::move(name)) {}

 protected:
  void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;
};

// argmax(y_pred) == y_true (class indices; out of range is an ef::Error naming the label).
class SparseCategoricalAccuracy : public WeightedMetric {
 public:
  explicit SparseCategoricalAccuracy(std::string name = "sparse_categorical_accuracy") : WeightedMetric(std::move(name)) {}

 protected:
  void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;
};

// argmax(y_pred) == argmax(y_true) (one-hot labels).
class CategoricalAccuracy : public WeightedMetric {
 public:
  explicit CategoricalAccuracy(std::string name = "categorical_accuracy") : WeightedMetric(std::move(name)) {}

 protected:
  void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;
};

// (y_pred > threshold) == y_true.
class BinaryAccuracy : public WeightedMetric {
 public:
  explicit BinaryAccuracy(std::string name = "binary_accuracy", double threshold = 0.5)
      : WeightedMetric(std::move(name)), threshold_(threshold) {}

 protected:
  void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;

 private:
  double threshold_;
};

// ---------------------------------------------------------------- regression (metrics_regression.cpp)
// The losses of these names live in ef::train (losses.h), so the metrics are in
// ef::train::metrics, where every metric is also found (Keras' keras.metrics.*).
namespace metrics {
// mean(|y_pred - y_true|) over the last axis, averaged over examples.
class MeanAbsoluteError : public WeightedMetric {
 public:
  explicit MeanAbsoluteError(std::string name = "mean_absolute_error") : WeightedMetric(std::move(name)) {}

 protected:
  void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;
};

// mean((y_pred - y_true)^2) over the last axis, averaged over examples.
class MeanSquaredError : public WeightedMetric {
 public:
  explicit MeanSquaredError(std::string name = "mean_squared_error") : WeightedMetric(std::move(name)) {}

 protected:
  void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;
};
}  // namespace metrics

// sqrt of the running mean squared error (the root of the mean, not a mean of roots).
class RootMeanSquaredError : public WeightedMetric {
 public:
  explicit RootMeanSquaredError(std::string name = "root_mean_squared_error") : WeightedMetric(std::move(name)) {}
  Tensor result() const override;

 protected:
  void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;
};

// ---------------------------------------------------------------- top k (metrics_regression.cpp)
// One-hot labels: the label's class is among the k highest scores (ties at the k-th score
// count as in the top k, as TF's in_top_k).
class TopKCategoricalAccuracy : public WeightedMetric {
 public:
  explicit TopKCategoricalAccuracy(int k = 5, std::string name = "top_k_categorical_accuracy");

 protected:
  void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;

 private:
  int k_;
};

// The same with class indices ([batch] or [batch, 1]); out of range is an ef::Error.
class SparseTopKCategoricalAccuracy : public WeightedMetric {
 public:
  explicit SparseTopKCategoricalAccuracy(int k = 5, std::string name = "sparse_top_k_categorical_accuracy");

 protected:
  void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;

 private:
  int k_;
};

// ---------------------------------------------------------------- confusion (metrics_confusion.cpp)
// Precision tp / (tp + fp) and Recall tp / (tp + fn) of y_pred > threshold against
// y_true != 0, every element one decision (multi-class data is flattened, as Keras). One
// threshold (default 0.5) gives a scalar result, several a vector. top_k: only the k largest
// scores of each row can be positive (the default threshold is then -inf). class_id: only
// that column of [batch, classes] data.
struct ConfusionOptions {
  std::vector<double> thresholds;  // empty: 0.5 (or -inf with top_k)
  std::optional<int> top_k;
  std::optional<int> class_id;
};

class Precision : public WeightedMetric {
 public:
  explicit Precision(ConfusionOptions options = {}, std::string name = "precision");
  Tensor result() const override;
  void reset_state() override;

 protected:
  void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;

 private:
  ConfusionOptions options_;
  Variable tp_, fp_;
};

class Recall : public WeightedMetric {
 public:
  explicit Recall(ConfusionOptions options = {}, std::string name = "recall");
  Tensor result() const override;
  void reset_state() override;

 protected:
  void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;

 private:
  ConfusionOptions options_;
  Variable tp_, fn_;
};

// Area under the ROC or the precision-recall curve, as Keras' AUC with its default
// "interpolation" summation: confusion counts at num_thresholds thresholds (evenly spaced in
// [0, 1], the ends moved to -1e-7 and 1 + 1e-7), then trapezoids for ROC and Davis &
// Goadrich's interpolation for PR. Explicit thresholds (in [0, 1]) replace the even ones.
// Predictions are probabilities (from_logits: sigmoid first); labels are 0/1; multi-class
// data is flattened (Keras' multi_label=false).
struct AUCOptions {
  int num_thresholds = 200;
  std::string curve = "ROC";  // "ROC" or "PR"
  std::vector<double> thresholds;
  bool from_logits = false;
};

class AUC : public WeightedMetric {
 public:
  explicit AUC(AUCOptions options = {}, std::string name = "auc");
  Tensor result() const override;
  void reset_state() override;
  // The thresholds used, ends included.
  const std::vector<double>& thresholds() const { return thresholds_; }

 protected:
  void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;

 private:
  AUCOptions options_;
  std::vector<double> thresholds_;
  bool evenly_spaced_;
  Variable tp_, fp_, tn_, fn_;
};

// ---------------------------------------------------------------- F1 (metrics_f1.cpp)
// F1 per class of [batch, classes] multi-label (or one-hot) data: y_pred > threshold is a
// positive; without a threshold the largest score of each row is (Keras' default). average:
// "" (Keras' None: result() is the per-class vector), "micro" (counts pooled over classes),
// "macro" (the mean over classes), "weighted" (weighted by each class's label count). The
// counts are variables made at the first update, when the class count is known (inside a
// trace too: the first trace may make variables).
// FBetaScore weighs recall beta times as much as precision: (1 + b^2) P R / (b^2 P + R).
class FBetaScore : public WeightedMetric {
 public:
  explicit FBetaScore(std::string average = "", double beta = 1.0, std::optional<double> threshold = std::nullopt,
                      std::string name = "fbeta_score");
  Tensor result() const override;
  void reset_state() override;
  float logged_result() const override;
  double beta() const { return beta_; }

 protected:
  void update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) override;

 private:
  std::string average_;
  double beta_;
  std::optional<double> threshold_;
  Variable tp_, fp_, fn_, support_;
};

class F1Score : public FBetaScore {
 public:
  explicit F1Score(std::string average = "", std::optional<double> threshold = std::nullopt,
                   std::string name = "f1_score")
      : FBetaScore(std::move(average), 1.0, threshold, std::move(name)) {}
};

// By Keras name. "accuracy" / "acc" pick the accuracy that fits the loss, as Keras does:
// sparse categorical for sparse_categorical_crossentropy, categorical for
// categorical_crossentropy, binary for binary_crossentropy, elementwise otherwise. Also
// "mae" / "mean_absolute_error", "mse" / "mean_squared_error", "rmse" /
// "root_mean_squared_error", "auc", "precision", "recall", "top_k_categorical_accuracy",
// "sparse_top_k_categorical_accuracy", "f1_score" (average "macro" here, so that fit can log
// it as one number; construct F1Score() for Keras' per-class vector). The metric reports under
// the name asked for.
namespace metrics {
using train::Accuracy, train::AUC, train::BinaryAccuracy, train::CategoricalAccuracy, train::F1Score, train::FBetaScore, train::Mean,
    train::Metric, train::Precision, train::Recall, train::RootMeanSquaredError, train::SparseCategoricalAccuracy,
    train::SparseTopKCategoricalAccuracy, train::TopKCategoricalAccuracy;
}  // namespace metrics

std::shared_ptr<Metric> metric_by_name(const std::string& name, const std::string& loss_name);

}  // namespace ef::train
