#include "train/metrics_util.h"

#include "eagerflow/ops/checks.h"
#include "eagerflow/ops/ops.h"
#include "train/same_rank.h"

namespace ef::train {
namespace {

bool dims_fit(std::int64_t a, std::int64_t b) { return a == b || a == kDynamic || b == kDynamic; }

Tensor mean_from(const Tensor& x, int first) { return x.rank() > first ? mean(x, axes_from(first, x.rank())) : x; }

}  // namespace

std::vector<int> axes_from(int first, int rank) {
  std::vector<int> axes;
  for (int a = first; a < rank; ++a) axes.push_back(a);
  return axes;
}

std::pair<Tensor, Tensor> matched(const std::string& metric, const Tensor& y_true, const Tensor& y_pred) {
  if (!y_true.defined() || !y_pred.defined()) fail(metric, "labels and predictions must be defined");
  auto [t, p] = same_rank(y_true, y_pred);
  bool ok = t.rank() == p.rank();
  for (int i = 0; ok && i < t.rank(); ++i) ok = dims_fit(t.shape()[i], p.shape()[i]);
  if (!ok) fail(metric, "labels " + y_true.spec().str() + " and predictions " + y_pred.spec().str() + " differ in shape");
  return {t, p};
}

Tensor labels_as_indices(const std::string& metric, const Tensor& y_true, const Tensor& y_pred) {
  if (!y_true.defined() || !y_pred.defined()) fail(metric, "labels and predictions must be defined");
  Tensor labels = y_true;
  if (labels.rank() == y_pred.rank() && labels.rank() > 0 && labels.shape()[labels.rank() - 1] == 1) labels = squeeze(labels, {-1});
  if (labels.rank() != y_pred.rank() - 1)
    fail(metric, "labels " + y_true.spec().str() + " do not match predictions " + y_pred.spec().str() +
                     " (expected class indices of shape [batch])");
  std::int64_t classes = y_pred.rank() > 0 ? y_pred.shape()[y_pred.rank() - 1] : kDynamic;
  if (classes == kDynamic) fail(metric, "predictions need a known class axis, got " + y_pred.spec().str());
  return class_indices(labels, classes, metric);
}

std::pair<Tensor, Tensor> samplewise_totals(const std::string& metric, const Tensor& values, const Tensor& sample_weight) {
  if (!sample_weight.defined()) {
    // One value per example (the mean of its elements), each weighing 1: mixing weighted and
    // unweighted updates counts examples in both.
    Tensor v = mean_from(values, 1);
    return {sum(v), cast(size(v), DType::float64)};
  }
  auto [v, w] = same_rank(values, cast(sample_weight, DType::float64));
  bool ok = w.rank() <= v.rank();
  for (int i = 0; ok && i < w.rank(); ++i) ok = w.shape()[i] == 1 || dims_fit(w.shape()[i], v.shape()[i]);
  if (!ok)
    fail(metric, "sample_weight " + sample_weight.spec().str() + " does not fit the values " + values.spec().str() +
                     " (expected a scalar, [batch] or [batch, 1])");
  int weight_rank = w.rank();
  v = mean_from(v, weight_rank);  // as Keras: values reduced to the weight's rank first
  w = broadcast_like(w, v);
  v = v * w;
  if (weight_rank > 1) w = mean_from(w, 1);
  v = mean_from(v, 1);
  return {sum(v), sum(w)};
}

Tensor element_weights(const std::string& metric, const Tensor& sample_weight, const Tensor& y_true, const Tensor& like) {
  if (!sample_weight.defined()) return ones_like(cast(like, DType::float64));
  // Keras: the weight gets a last axis, then matches the labels' rank without expanding.
  Tensor w = expand_dims(cast(sample_weight, DType::float64), -1);
  w = same_rank(y_true, w, /*expand_rank_1=*/false).second;
  bool ok = w.rank() <= like.rank();
  for (int i = 1; ok && i <= w.rank(); ++i) {
    std::int64_t a = w.shape()[w.rank() - i], b = like.shape()[like.rank() - i];
    ok = a == 1 || dims_fit(a, b);
  }
  if (!ok)
    fail(metric, "sample_weight " + sample_weight.spec().str() + " does not fit predictions " + like.spec().str() +
                     " (expected a scalar, [batch] or [batch, 1])");
  return broadcast_like(w, like);
}

Tensor as_float(const Tensor& x) { return !x.defined() || is_floating(x.dtype()) ? x : cast(x, DType::float32); }

Tensor divide_no_nan(const Tensor& a, const Tensor& b) {
  Tensor zero = equal(b, zeros_like(b));
  return where(zero, zeros_like(a), a / where(zero, ones_like(b), b));
}

}  // namespace ef::train
