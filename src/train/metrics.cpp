#include "eagerflow/train/metrics.h"

#include <cmath>

#include "eagerflow/ops/checks.h"
#include "eagerflow/ops/ops.h"
#include "train/same_rank.h"

namespace ef::train {

Metric::Metric(std::string name)
    : name_(std::move(name)),
      total_(zeros({}, DType::float64), name_ + "/total", /*trainable=*/false),
      count_(zeros({}, DType::float64), name_ + "/count", /*trainable=*/false) {}

Tensor Metric::result() const { return cast(Tensor(total_) / Tensor(count_), DType::float32); }

void Metric::reset_state() {
  total_.assign(zeros({}, DType::float64));
  count_.assign(zeros({}, DType::float64));
}

void Metric::accumulate(const Tensor& values) {
  // Accumulated in float64: a long epoch's running mean does not drift.
  total_.assign_add(sum(cast(values, DType::float64)));
  count_.assign_add(cast(size(values), DType::float64));
}

void Metric::accumulate_weighted(const Tensor& weighted_total, const Tensor& weight) {
  total_.assign_add(weighted_total);
  count_.assign_add(weight);
}

void Mean::update_state(const Tensor&, const Tensor& values) { accumulate(values); }

void Mean::update_state_weighted(const Tensor& value, const Tensor& weight) {
  Tensor w = cast(weight, DType::float64);
  accumulate_weighted(sum(cast(value, DType::float64)) * w, w);
}

namespace {
Tensor labels_as_indices(const std::string& metric, const Tensor& y_true, const Tensor& y_pred) {
  Tensor labels = y_true;
  if (labels.rank() == y_pred.rank() && labels.rank() > 0 && labels.shape()[labels.rank() - 1] == 1) labels = squeeze(labels, {-1});
  if (labels.rank() != y_pred.rank() - 1)
    fail(metric, "labels " + y_true.spec().str() + " do not match predictions " + y_pred.spec().str() +
                     " (expected class indices of shape [batch])");
  std::int64_t classes = y_pred.rank() > 0 ? y_pred.shape()[y_pred.rank() - 1] : kDynamic;
  if (classes == kDynamic) fail(metric, "predictions need a known class axis, got " + y_pred.spec().str());
  return class_indices(labels, classes, metric);
}
}  // namespace

namespace {
// Labels and predictions of one shape after Keras' rank matching; anything else would
// broadcast into a wrong number.
std::pair<Tensor, Tensor> matched(const std::string& metric, const Tensor& y_true, const Tensor& y_pred) {
  auto [t, p] = same_rank(y_true, y_pred);
  bool ok = t.rank() == p.rank();
  for (int i = 0; ok && i < t.rank(); ++i) ok = t.shape()[i] == p.shape()[i] || t.shape()[i] == kDynamic || p.shape()[i] == kDynamic;
  if (!ok) fail(metric, "labels " + y_true.spec().str() + " and predictions " + y_pred.spec().str() + " differ in shape");
  return {t, p};
}
}  // namespace

void Accuracy::update_state(const Tensor& y_true, const Tensor& y_pred) {
  auto [t, p] = matched(name(), y_true, y_pred);
  accumulate(cast(equal(cast(t, p.dtype()), p), DType::float32));
}

void SparseCategoricalAccuracy::update_state(const Tensor& y_true, const Tensor& y_pred) {
  accumulate(cast(equal(argmax(y_pred, -1), labels_as_indices(name(), y_true, y_pred)), DType::float32));
}

void CategoricalAccuracy::update_state(const Tensor& y_true, const Tensor& y_pred) {
  matched(name(), y_true, y_pred);
  accumulate(cast(equal(argmax(y_pred, -1), argmax(y_true, -1)), DType::float32));
}

void BinaryAccuracy::update_state(const Tensor& y_true, const Tensor& y_pred) {
  auto [t, p] = matched(name(), y_true, y_pred);
  Tensor predicted = cast(p > threshold_, p.dtype());
  accumulate(cast(equal(predicted, cast(t, p.dtype())), DType::float32));
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
  fail("metric", "unknown metric '" + name + "' (known: accuracy, sparse_categorical_accuracy, categorical_accuracy, "
                                             "binary_accuracy)");
}

}  // namespace ef::train
