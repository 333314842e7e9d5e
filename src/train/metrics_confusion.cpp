// Confusion-count metrics (Precision, Recall, AUC) as Keras computes them
// (keras/src/metrics/metrics_utils.py: update_confusion_matrix_variables): every element of
// y_pred is one decision "y_pred > threshold" against "y_true != 0", counted with its weight at
// every threshold. With evenly spaced thresholds Keras buckets predictions by
// ceil(p (T - 1)) - 1 in float32; "p (T - 1) > i" is the same test, so the counts match its
// bucketed ones exactly, predictions on a threshold included.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "eagerflow/ops/ops.h"
#include "eagerflow/train/metrics.h"
#include "train/metrics_util.h"

namespace ef::train {
namespace {

constexpr double kEpsilon = 1e-7;  // Keras' backend.epsilon(): AUC's end thresholds

// Keras' is_evenly_distributed_thresholds: np.allclose(t, arange(n) / (n - 1), atol=eps).
bool evenly_spaced(const std::vector<double>& t) {
  std::size_t n = t.size();
  if (n < 3) return false;
  for (std::size_t i = 0; i < n; ++i) {
    double even = static_cast<double>(static_cast<float>(i) / static_cast<float>(n - 1));
    if (std::abs(t[i] - even) > kEpsilon + 1e-5 * std::abs(even)) return false;
  }
  return true;
}

void expect_unit_thresholds(const std::string& metric, const std::vector<double>& t) {
  for (double v : t)
    if (!(v >= 0 && v <= 1)) fail(metric, "thresholds must be in [0, 1], got " + std::to_string(v));
}

// Which elements are among the k largest of their row, ties broken by the lower index (as
// top_k orders them): fewer than k elements are larger, or equal and earlier. [..., C, C]
// comparisons: fine for the class counts top_k is used with.
Tensor top_k_mask(const std::string& metric, const Tensor& p, int k) {
  if (p.rank() < 1 || p.shape()[p.rank() - 1] == kDynamic) fail(metric, "top_k needs a known last axis, got " + p.spec().str());
  std::int64_t c = p.shape()[p.rank() - 1];
  std::vector<float> earlier(static_cast<std::size_t>(c * c), 0.0f);  // [j, i] = i < j
  for (std::int64_t j = 0; j < c; ++j)
    for (std::int64_t i = 0; i < j; ++i) earlier[static_cast<std::size_t>(j * c + i)] = 1.0f;
  Tensor pj = expand_dims(p, -1), pi = expand_dims(p, -2);
  Tensor before = logical_or(pi > pj, logical_and(equal(pi, pj), tensor(earlier, Shape{c, c}) > 0.5f));
  Tensor rank = sum(cast(before, DType::int64), {-1});
  return rank < scalar_like(rank, static_cast<double>(k));
}

// The last axis' column `id`, kept as an axis of 1.
Tensor column(const Tensor& x, std::int64_t id) {
  std::vector<std::int64_t> begin(static_cast<std::size_t>(x.rank()), 0), end(static_cast<std::size_t>(x.rank()), std::numeric_limits<std::int64_t>::max());
  begin.back() = id;
  end.back() = id + 1;
  return slice(x, begin, end);
}

struct Counts {
  Tensor tp, fp, tn, fn;  // float64 [thresholds]
};

struct Thresholds {
  std::vector<double> values;
  bool even = false;       // evenly spaced in [0, 1]: Keras' bucketed counting
  bool with_ends = false;  // the ends moved to -eps and 1 + eps (AUC)
};

Counts confusion(const std::string& metric, const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight,
                 const Thresholds& th, std::optional<int> top_k = std::nullopt, std::optional<int> class_id = std::nullopt) {
  auto [t, p] = matched(metric, y_true, as_float(y_pred));
  Tensor w = element_weights(metric, sample_weight, t, p);
  Tensor keep;  // the top-k elements: the only ones that can be positive
  if (top_k) keep = top_k_mask(metric, p, *top_k);
  if (class_id) {
    std::int64_t classes = p.rank() >= 2 ? p.shape()[p.rank() - 1] : 0;
    if (p.rank() < 2) fail(metric, "class_id needs predictions [batch, classes], got " + p.spec().str());
    if (classes != kDynamic && (*class_id < 0 || *class_id >= classes))
      fail(metric, "class_id " + std::to_string(*class_id) + " is outside [0, " + std::to_string(classes) + ")");
    t = column(t, *class_id);
    p = column(p, *class_id);
    w = column(w, *class_id);
    if (keep.defined()) keep = column(keep, *class_id);
  }
  const Shape flat{-1};
  Tensor p32 = reshape(cast(p, DType::float32), flat);  // Keras counts in float32
  Tensor positive = reshape(not_equal(cast(t, DType::float64), zeros_like(cast(t, DType::float64))), flat);
  w = reshape(w, flat);
  Tensor zero = zeros_like(w);
  Tensor true_w = where(positive, w, zero), false_w = where(positive, zero, w);

  auto n = static_cast<std::int64_t>(th.values.size());
  Tensor above;  // [thresholds, elements]
  if (th.even) {
    std::vector<float> index(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) index[static_cast<std::size_t>(i)] = static_cast<float>(i);
    if (th.with_ends) index[0] = -1.0f;  // Keras puts bucket -1 (p == 0) into the first one
    Tensor scaled = minimum(maximum(p32, scalar_like(p32, 0.0)), scalar_like(p32, 1.0)) * static_cast<float>(n - 1);
    above = expand_dims(scaled, 0) > tensor(index, Shape{n, 1});
  } else {
    std::vector<float> values(th.values.begin(), th.values.end());
    above = expand_dims(p32, 0) > tensor(values, Shape{n, 1});
  }
  if (keep.defined()) above = logical_and(above, expand_dims(reshape(keep, flat), 0));
  Tensor a = cast(above, DType::float64);
  Counts c;
  c.tp = sum(a * expand_dims(true_w, 0), {1});
  c.fp = sum(a * expand_dims(false_w, 0), {1});
  c.fn = sum(true_w) - c.tp;
  c.tn = sum(false_w) - c.fp;
  return c;
}

Variable counter(const std::string& metric, const std::string& what, std::size_t n) {
  return Variable(zeros({static_cast<std::int64_t>(n)}, DType::float64), metric + "/" + what, /*trainable=*/false);
}

void clear(const Variable& v) { v.assign(zeros_like(Tensor(v))); }

Thresholds precision_recall_thresholds(const std::string& metric, const ConfusionOptions& o) {
  if (o.top_k && *o.top_k < 1) fail(metric, "top_k must be at least 1, got " + std::to_string(*o.top_k));
  if (o.class_id && *o.class_id < 0) fail(metric, "class_id must be at least 0, got " + std::to_string(*o.class_id));
  Thresholds th;
  expect_unit_thresholds(metric, o.thresholds);
  th.values = o.thresholds;
  if (th.values.empty()) th.values = {o.top_k ? -std::numeric_limits<double>::infinity() : 0.5};
  th.even = evenly_spaced(th.values);
  return th;
}

// One threshold: a scalar, as Keras' result()[0].
Tensor one_or_all(const Tensor& r) { return cast(r.shape()[0] == 1 ? reshape(r, Shape{}) : r, DType::float32); }

Tensor head(const Tensor& x, std::int64_t n) { return slice(x, {0}, {n - 1}); }  // x[:n-1]
Tensor tail(const Tensor& x, std::int64_t n) { return slice(x, {1}, {n}); }      // x[1:]

}  // namespace

// ---------------------------------------------------------------- Precision, Recall
Precision::Precision(ConfusionOptions options, std::string name) : WeightedMetric(std::move(name)), options_(std::move(options)) {
  options_.thresholds = precision_recall_thresholds(this->name(), options_).values;
  tp_ = counter(this->name(), "true_positives", options_.thresholds.size());
  fp_ = counter(this->name(), "false_positives", options_.thresholds.size());
}

void Precision::update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  Thresholds th{options_.thresholds, evenly_spaced(options_.thresholds), false};
  Counts c = confusion(name(), y_true, y_pred, sample_weight, th, options_.top_k, options_.class_id);
  tp_.assign_add(c.tp);
  fp_.assign_add(c.fp);
}

Tensor Precision::result() const { return one_or_all(divide_no_nan(Tensor(tp_), Tensor(tp_) + Tensor(fp_))); }

void Precision::reset_state() {
  clear(tp_);
  clear(fp_);
}

Recall::Recall(ConfusionOptions options, std::string name) : WeightedMetric(std::move(name)), options_(std::move(options)) {
  options_.thresholds = precision_recall_thresholds(this->name(), options_).values;
  tp_ = counter(this->name(), "true_positives", options_.thresholds.size());
  fn_ = counter(this->name(), "false_negatives", options_.thresholds.size());
}

void Recall::update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  Thresholds th{options_.thresholds, evenly_spaced(options_.thresholds), false};
  Counts c = confusion(name(), y_true, y_pred, sample_weight, th, options_.top_k, options_.class_id);
  tp_.assign_add(c.tp);
  fn_.assign_add(c.fn);
}

Tensor Recall::result() const { return one_or_all(divide_no_nan(Tensor(tp_), Tensor(tp_) + Tensor(fn_))); }

void Recall::reset_state() {
  clear(tp_);
  clear(fn_);
}

// ---------------------------------------------------------------- AUC
AUC::AUC(AUCOptions options, std::string name) : WeightedMetric(std::move(name)), options_(std::move(options)) {
  std::string curve = options_.curve;
  std::transform(curve.begin(), curve.end(), curve.begin(), [](unsigned char ch) { return std::toupper(ch); });
  if (curve != "ROC" && curve != "PR") fail(this->name(), "curve must be 'ROC' or 'PR', got '" + options_.curve + "'");
  options_.curve = curve;
  std::vector<double> inner;
  if (!options_.thresholds.empty()) {
    expect_unit_thresholds(this->name(), options_.thresholds);
    inner = options_.thresholds;
    std::sort(inner.begin(), inner.end());
    std::vector<double> with_ends = inner;
    with_ends.insert(with_ends.begin(), 0.0);
    with_ends.push_back(1.0);
    evenly_spaced_ = evenly_spaced(with_ends);
    options_.num_thresholds = static_cast<int>(inner.size()) + 2;
  } else {
    if (options_.num_thresholds <= 1)
      fail(this->name(), "num_thresholds must be an integer > 1, got " + std::to_string(options_.num_thresholds));
    for (int i = 0; i < options_.num_thresholds - 2; ++i) inner.push_back((i + 1) * 1.0 / (options_.num_thresholds - 1));
    evenly_spaced_ = true;
  }
  // Ends below 0 and above 1, so that predictions of exactly 0 or 1 are counted.
  thresholds_.push_back(0.0 - kEpsilon);
  thresholds_.insert(thresholds_.end(), inner.begin(), inner.end());
  thresholds_.push_back(1.0 + kEpsilon);
  tp_ = counter(this->name(), "true_positives", thresholds_.size());
  fp_ = counter(this->name(), "false_positives", thresholds_.size());
  tn_ = counter(this->name(), "true_negatives", thresholds_.size());
  fn_ = counter(this->name(), "false_negatives", thresholds_.size());
}

void AUC::update(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) {
  Tensor p = y_pred;
  if (options_.from_logits) p = sigmoid(as_float(p));
  Counts c = confusion(name(), y_true, p, sample_weight, Thresholds{thresholds_, evenly_spaced_, true});
  tp_.assign_add(c.tp);
  fp_.assign_add(c.fp);
  tn_.assign_add(c.tn);
  fn_.assign_add(c.fn);
}

Tensor AUC::result() const {
  auto n = static_cast<std::int64_t>(thresholds_.size());
  Tensor tp = tp_, fp = fp_, tn = tn_, fn = fn_;
  if (options_.curve == "PR") {
    // Davis & Goadrich: precision interpolated between thresholds A and B through the true
    // positives, integrated over recall: slope (dTP + intercept log(P_A / P_B)) / positives.
    Tensor dtp = head(tp, n) - tail(tp, n);
    Tensor pos = tp + fp;
    Tensor dp = head(pos, n) - tail(pos, n);
    Tensor slope = divide_no_nan(dtp, maximum(dp, zeros_like(dp)));
    Tensor intercept = tail(tp, n) - slope * tail(pos, n);
    Tensor both = logical_and(head(pos, n) > 0.0, tail(pos, n) > 0.0);
    Tensor ratio = where(both, divide_no_nan(head(pos, n), maximum(tail(pos, n), zeros_like(dp))), ones_like(dp));
    Tensor denom = tail(tp, n) + tail(fn, n);
    Tensor increments = divide_no_nan(slope * (dtp + intercept * log(ratio)), maximum(denom, zeros_like(denom)));
    return cast(sum(increments), DType::float32);
  }
  // ROC: trapezoids of recall over the false positive rate.
  Tensor recall = divide_no_nan(tp, tp + fn);
  Tensor fpr = divide_no_nan(fp, fp + tn);
  Tensor heights = (head(recall, n) + tail(recall, n)) / 2.0;
  return cast(sum((head(fpr, n) - tail(fpr, n)) * heights), DType::float32);
}

void AUC::reset_state() {
  for (const Variable* v : {&tp_, &fp_, &tn_, &fn_}) clear(*v);
}

}  // namespace ef::train
