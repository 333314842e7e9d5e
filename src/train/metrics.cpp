#include "eagerflow/train/metrics.h"

#include <cmath>

#include "eagerflow/ops/checks.h"
#include "eagerflow/ops/ops.h"
#include "train/metrics_util.h"
#include "train/same_rank.h"

namespace ef::train {

Metric::Metric(std::string name)
    : name_(std::move(name)),
      total_(zeros({}, DType::float64), name_ + "/total", /*trainable=*/false),
      count_(zeros({}, DType::float64), name_ + "/count", /*trainable=*/false) {}

void Metric::update_state(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  if (sample_weight.defined())
    fail(name_, "this metric implements update_state(y_true, y_pred) only, so it cannot take a sample_weight " +
                    sample_weight.spec().str() + " (override the three-argument update_state to weight examples)");
  update_state(y_true, y_pred);
}

// 0 before any update, as Keras' Mean (divide_no_nan), not NaN.
Tensor Metric::result() const { return cast(divide_no_nan(Tensor(total_), Tensor(count_)), DType::float32); }

void Metric::reset_state() {
  total_.assign(zeros({}, DType::float64));
  count_.assign(zeros({}, DType::float64));
}

float Metric::logged_result() const {
  Tensor r = result();
  return (r.rank() == 0 ? r : cast(mean(cast(r, DType::float64)), DType::float32)).item<float>();
}

void Metric::accumulate(const Tensor& values) { accumulate(values, Tensor()); }

void Metric::accumulate(const Tensor& values, const Tensor& sample_weight) {
  // Accumulated in float64: a long epoch's running mean does not drift.
  auto [total, count] = samplewise_totals(name_, cast(values, DType::float64), sample_weight);
  total_.assign_add(total);
  count_.assign_add(count);
}

void Metric::accumulate_weighted(const Tensor& weighted_total, const Tensor& weight) {
  total_.assign_add(weighted_total);
  count_.assign_add(weight);
}

void Mean::update(const Tensor&, const Tensor& values, const Tensor& sample_weight) {
  if (!values.defined()) fail(name(), "values are undefined");
  accumulate(values, sample_weight);
}

void Mean::update_state_weighted(const Tensor& value, const Tensor& weight) {
  Tensor w = cast(weight, DType::float64);
  accumulate_weighted(sum(cast(value, DType::float64)) * w, w);
}

void Accuracy::update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  auto [t, p] = matched(name(), y_true, y_pred);
  accumulate(cast(equal(cast(t, p.dtype()), p), DType::float32), sample_weight);
}

void SparseCategoricalAccuracy::update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  accumulate(cast(equal(argmax(y_pred, -1), labels_as_indices(name(), y_true, y_pred)), DType::float32), sample_weight);
}

void CategoricalAccuracy::update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  matched(name(), y_true, y_pred);
  accumulate(cast(equal(argmax(y_pred, -1), argmax(y_true, -1)), DType::float32), sample_weight);
}

void BinaryAccuracy::update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  auto [t, p] = matched(name(), y_true, y_pred);
  Tensor predicted = cast(p > threshold_, p.dtype());
  accumulate(cast(equal(predicted, cast(t, p.dtype())), DType::float32), sample_weight);
}

std::shared_ptr<Metric> metric_by_name(const std::string& name, const std::string& loss_name) {
  if (name == "accuracy" || name == "acc") {
    if (loss_name == "sparse_categorical_crossentropy") return std::make_shared<SparseCategoricalAccuracy>(name);
    if (loss_name == "categorical_crossentropy") return std::make_shared<CategoricalAccuracy>(name);
    if (loss_name == "binary_crossentropy") return std::make_shared<BinaryAccuracy>(name);
    return std::make_shared<Accuracy>(name);
  }
  if (name == "sparse_categorical_accuracy") return std::make_shared<SparseCategoricalAccuracy>(name);
  if (name == "categorical_accuracy") return std::make_shared<CategoricalAccuracy>(name);
  if (name == "binary_accuracy") return std::make_shared<BinaryAccuracy>(name);
  if (name == "mae" || name == "mean_absolute_error") return std::make_shared<metrics::MeanAbsoluteError>(name);
  if (name == "mse" || name == "mean_squared_error") return std::make_shared<metrics::MeanSquaredError>(name);
  if (name == "rmse" || name == "root_mean_squared_error") return std::make_shared<RootMeanSquaredError>(name);
  if (name == "auc") return std::make_shared<AUC>(AUCOptions{}, name);
  if (name == "precision") return std::make_shared<Precision>(ConfusionOptions{}, name);
  if (name == "recall") return std::make_shared<Recall>(ConfusionOptions{}, name);
  if (name == "top_k_categorical_accuracy") return std::make_shared<TopKCategoricalAccuracy>(5, name);
  if (name == "sparse_top_k_categorical_accuracy") return std::make_shared<SparseTopKCategoricalAccuracy>(5, name);
  if (name == "f1_score") return std::make_shared<F1Score>("macro", std::nullopt, name);
  fail("metric", "unknown metric '" + name +
                     "' (known: accuracy, sparse_categorical_accuracy, categorical_accuracy, binary_accuracy, mae, mse, "
                     "rmse, auc, precision, recall, top_k_categorical_accuracy, sparse_top_k_categorical_accuracy, "
                     "f1_score)");
}

}  // namespace ef::train
