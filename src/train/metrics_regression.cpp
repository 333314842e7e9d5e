// Regression metrics (MAE, MSE, RMSE) and top-k accuracies: Keras' MeanMetricWrapper family,
// a value per example averaged with the sample weights.
#include <cmath>

#include "eagerflow/ops/ops.h"
#include "eagerflow/train/metrics.h"
#include "train/metrics_util.h"

namespace ef::train {
namespace {

// The prediction error with labels aligned to predictions (floats).
Tensor error(const std::string& metric, const Tensor& y_true, const Tensor& y_pred) {
  auto [t, p] = matched(metric, y_true, as_float(y_pred));
  return p - cast(t, p.dtype());
}

// 1 where the class `labels` names is among the k highest scores of its row: fewer than k
// scores exceed it (ties at the k-th score are in, as TF's in_top_k), and it is finite.
Tensor in_top_k(const Tensor& labels, const Tensor& scores, int k) {
  std::int64_t classes = scores.shape()[scores.rank() - 1];
  Tensor is_label = one_hot(labels, classes, DType::float32) > 0.5f;
  // where, not a product: a NaN score elsewhere in the row must not spoil the label's score
  Tensor label_score = sum(where(is_label, scores, zeros_like(scores)), {-1}, true);
  Tensor above = sum(cast(scores > label_score, DType::int64), {-1});
  Tensor finite = equal(squeeze(label_score - label_score, {-1}), zeros_like(squeeze(label_score, {-1})));
  return cast(logical_and(above < scalar_like(above, static_cast<double>(k)), finite), DType::float32);
}

void expect_k(const std::string& metric, int k) {
  if (k < 1) fail(metric, "k must be at least 1, got " + std::to_string(k));
}

void expect_class_scores(const std::string& metric, const Tensor& y_pred) {
  if (!y_pred.defined() || y_pred.rank() < 1 || y_pred.shape()[y_pred.rank() - 1] == kDynamic)
    fail(metric, "predictions must be scores [batch, classes] with a known class count, got " +
                     (y_pred.defined() ? y_pred.spec().str() : std::string("undefined")));
}

}  // namespace

void metrics::MeanAbsoluteError::update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  accumulate(abs(error(name(), y_true, y_pred)), sample_weight);
}

void metrics::MeanSquaredError::update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  accumulate(square(error(name(), y_true, y_pred)), sample_weight);
}

void RootMeanSquaredError::update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  accumulate(square(error(name(), y_true, y_pred)), sample_weight);
}

Tensor RootMeanSquaredError::result() const { return sqrt(Metric::result()); }

TopKCategoricalAccuracy::TopKCategoricalAccuracy(int k, std::string name) : WeightedMetric(std::move(name)), k_(k) {
  expect_k(this->name(), k);
}

void TopKCategoricalAccuracy::update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  expect_class_scores(name(), y_pred);
  auto [t, p] = matched(name(), y_true, y_pred);
  if (t.rank() != y_pred.rank()) fail(name(), "labels " + y_true.spec().str() + " must be one-hot like predictions " + y_pred.spec().str());
  accumulate(in_top_k(argmax(t, -1), as_float(y_pred), k_), sample_weight);
}

SparseTopKCategoricalAccuracy::SparseTopKCategoricalAccuracy(int k, std::string name)
    : WeightedMetric(std::move(name)), k_(k) {
  expect_k(this->name(), k);
}

void SparseTopKCategoricalAccuracy::update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  expect_class_scores(name(), y_pred);
  accumulate(in_top_k(labels_as_indices(name(), y_true, y_pred), as_float(y_pred), k_), sample_weight);
}

}  // namespace ef::train
