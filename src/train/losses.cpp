#include "eagerflow/train/losses.h"

#include <cmath>

#include "eagerflow/nn/cross_entropy.h"
#include "eagerflow/ops/checks.h"
#include "eagerflow/ops/ops.h"
#include "train/same_rank.h"

namespace ef::train {
namespace {

// Keras clips probabilities to [eps, 1 - eps] before taking logs.
constexpr double kEpsilon = 1e-7;

Tensor clip_probabilities(const Tensor& p) { return minimum(maximum(p, scalar_like(p, kEpsilon)), scalar_like(p, 1.0 - kEpsilon)); }

void expect_float_predictions(const std::string& loss, const Tensor& y_pred) {
  if (!y_pred.defined() || !is_floating(y_pred.dtype()))
    fail(kWrongType, loss,
         "predictions must be a floating tensor, got " +
             (y_pred.defined() ? y_pred.spec().str() : std::string("undefined")));
}

void expect_same_shape(const std::string& loss, const Tensor& y_true, const Tensor& y_pred) {
  const Shape &a = y_true.shape(), &b = y_pred.shape();
  bool ok = a.rank() == b.rank();
  for (int i = 0; ok && i < a.rank(); ++i) ok = a[i] == b[i] || a[i] == kDynamic || b[i] == kDynamic;
  if (!ok) fail(loss, "labels " + y_true.spec().str() + " and predictions " + y_pred.spec().str() + " differ in shape");
}

// Cross-entropy of one-hot (or soft) labels with log-probabilities, per example.
Tensor cross_entropy_rows(const Tensor& y_true, const Tensor& log_probs) { return -sum(y_true * log_probs, {-1}); }

// Per example: the cross-entropy of each row.
Tensor categorical(const Tensor& y_true, const Tensor& y_pred, bool from_logits) {
  Tensor log_probs = from_logits ? log_softmax(y_pred, -1) : log(clip_probabilities(y_pred / sum(y_pred, {-1}, true)));
  return cross_entropy_rows(cast(y_true, y_pred.dtype()), log_probs);
}

std::vector<int> axes_after_first(int rank) {
  std::vector<int> axes;
  for (int a = 1; a < rank; ++a) axes.push_back(a);
  return axes;
}

}  // namespace

Tensor Loss::values(const Tensor& y_true, const Tensor& y_pred_in) const {
  if (!y_true.defined()) fail(name_, "labels are undefined");
  expect_float_predictions(name_, y_pred_in);
  // Losses compute in float32 under mixed precision (Keras casts y_pred to the loss' dtype).
  Tensor y_pred = is_storage_float(y_pred_in.dtype()) ? cast(y_pred_in, DType::float32) : y_pred_in;
  Tensor v = fn_(is_storage_float(y_true.dtype()) ? cast(y_true, DType::float32) : y_true, y_pred);
  if (!v.defined()) fail(name_, "the loss function returned an undefined tensor");
  return v;
}

Tensor Loss::operator()(const Tensor& y_true, const Tensor& y_pred) const {
  // The mean of all values is the mean of the per-example means: each example has as many.
  Tensor v = values(y_true, y_pred);
  return v.rank() == 0 ? v : mean(v);
}

Tensor Loss::per_example(const Tensor& y_true, const Tensor& y_pred) const {
  Tensor v = values(y_true, y_pred);
  if (v.rank() == 0 && y_pred.rank() > 0)
    fail(name_, "the loss function returned a scalar for predictions " + y_pred.spec().str() +
                    ", so there are no per-example values (return one value per example to weight them)");
  return v.rank() > 1 ? mean(v, axes_after_first(v.rank())) : v;
}

Tensor Loss::operator()(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) const {
  if (!sample_weight.defined()) return (*this)(y_true, y_pred);
  Tensor v = per_example(y_true, y_pred);
  Tensor w = cast(sample_weight, v.dtype());
  if (w.rank() == 2 && w.shape()[1] == 1) w = squeeze(w, {-1});  // [batch, 1] as Keras' column of weights
  bool fits = w.rank() == 0 || (w.rank() == 1 && v.rank() == 1 &&
                                (w.shape()[0] == v.shape()[0] || w.shape()[0] == kDynamic || v.shape()[0] == kDynamic));
  if (!fits)
    fail(name_, "sample_weight " + sample_weight.spec().str() + " does not match the per-example losses " +
                    v.spec().str() + " of predictions " + y_pred.spec().str() + " (expected a scalar, [batch] or [batch, 1])");
  // Keras' "sum_over_batch_size": divided by the number of examples, not by the weights' sum;
  // an empty batch is 0 (Keras' divide_no_nan).
  Tensor n = cast(size(v), v.dtype());
  return sum(v * w) / maximum(n, scalar_like(n, 1.0));
}

MeanSquaredError::MeanSquaredError()
    : Loss("mean_squared_error", [](const Tensor& y_true, const Tensor& y_pred) {
        auto [y, p] = same_rank(y_true, y_pred);
        expect_same_shape("mean_squared_error", y, p);
        return square(p - cast(y, p.dtype()));
      }) {}

BinaryCrossentropy::BinaryCrossentropy(bool from_logits)
    : Loss("binary_crossentropy", [from_logits](const Tensor& y_true, const Tensor& y_pred) {
        auto [y, p] = same_rank(y_true, y_pred);
        expect_same_shape("binary_crossentropy", y, p);
        Tensor z = cast(y, p.dtype());
        if (from_logits)  // max(x, 0) - x z + log(1 + exp(-|x|)): no overflow for any x
          return relu(p) - p * z + log(exp(-abs(p)) + 1.0);
        Tensor q = clip_probabilities(p);
        return -(z * log(q) + (1.0 - z) * log(1.0 - q));
      }) {}

CategoricalCrossentropy::CategoricalCrossentropy(bool from_logits)
    : Loss("categorical_crossentropy", [from_logits](const Tensor& y, const Tensor& p) {
        expect_same_shape("categorical_crossentropy", y, p);
        return categorical(y, p, from_logits);
      }) {}

SparseCategoricalCrossentropy::SparseCategoricalCrossentropy(bool from_logits)
    : Loss("sparse_categorical_crossentropy", [from_logits](const Tensor& y, const Tensor& p) {
        const std::string name = "sparse_categorical_crossentropy";
        if (p.rank() < 1 || p.shape()[p.rank() - 1] == kDynamic)
          fail(name, "predictions need a known class axis, got " + p.spec().str());
        Tensor labels = y;
        if (labels.rank() == p.rank() && labels.shape()[labels.rank() - 1] == 1) labels = squeeze(labels, {-1});
        if (labels.rank() != p.rank() - 1)
          fail(name, "labels " + y.spec().str() + " do not match predictions " + p.spec().str() +
                         " (expected class indices of shape [batch])");
        std::int64_t classes = p.shape()[p.rank() - 1];
        Tensor indices = class_indices(labels, classes, name);
        // From logits: one fused op (logsumexp minus the label's logit; its gradient one pass).
        if (from_logits && (p.dtype() == DType::float32 || p.dtype() == DType::float64))
          return nn::sparse_softmax_cross_entropy_with_logits(indices, p);
        return categorical(one_hot(indices, classes, p.dtype()), p, from_logits);
      }) {}

namespace {

// Labels and predictions of one shape (Keras' rank alignment, then checked), labels as floats.
std::pair<Tensor, Tensor> aligned(const std::string& loss, const Tensor& y_true, const Tensor& y_pred) {
  auto [y, p] = same_rank(y_true, y_pred);
  expect_same_shape(loss, y, p);
  return {cast(y, p.dtype()), p};
}

}  // namespace

MeanAbsoluteError::MeanAbsoluteError()
    : Loss("mean_absolute_error", [](const Tensor& y_true, const Tensor& y_pred) {
        auto [y, p] = aligned("mean_absolute_error", y_true, y_pred);
        return abs(p - y);  // per element
      }) {}

Huber::Huber(double delta)
    : Loss("huber", [delta](const Tensor& y_true, const Tensor& y_pred) {
        auto [y, p] = aligned("huber", y_true, y_pred);
        Tensor e = abs(p - y);
        Tensor d = scalar_like(e, delta);
        // quadratic up to delta, linear beyond: 0.5 min(e, d)^2 + d (e - min(e, d))
        Tensor q = minimum(e, d);
        return 0.5 * square(q) + d * (e - q);  // per element
      }) {
  if (!(delta > 0) || !std::isfinite(delta)) fail("huber", "delta must be a positive finite number, got " + std::to_string(delta));
}

LogCosh::LogCosh()
    : Loss("log_cosh", [](const Tensor& y_true, const Tensor& y_pred) {
        auto [y, p] = aligned("log_cosh", y_true, y_pred);
        Tensor x = p - y;
        // log(cosh x) = |x| + log(1 + exp(-2|x|)) - log 2: no overflow for large |x|
        Tensor a = abs(x);
        return a + log(exp(-2.0 * a) + 1.0) - std::log(2.0);  // per element
      }) {}

KLDivergence::KLDivergence()
    : Loss("kl_divergence", [](const Tensor& y_true, const Tensor& y_pred) {
        auto [y, p] = aligned("kl_divergence", y_true, y_pred);
        auto clip = [](const Tensor& t) { return minimum(maximum(t, scalar_like(t, kEpsilon)), scalar_like(t, 1.0)); };
        Tensor yc = clip(y), pc = clip(p);
        return sum(yc * log(yc / pc), {-1});
      }) {}

CosineSimilarity::CosineSimilarity(int axis)
    : Loss("cosine_similarity", [axis](const Tensor& y_true, const Tensor& y_pred) {
        auto [y, p] = aligned("cosine_similarity", y_true, y_pred);
        // Keras: l2-normalize each side with norms floored at sqrt(1e-12)
        auto unit = [axis](const Tensor& t) {
          Tensor sq = sum(square(t), {axis}, true);
          return t * rsqrt(maximum(sq, scalar_like(sq, 1e-12)));
        };
        return -sum(unit(y) * unit(p), {axis});
      }) {}

Hinge::Hinge()
    : Loss("hinge", [](const Tensor& y_true, const Tensor& y_pred) {
        auto [y, p] = aligned("hinge", y_true, y_pred);
        // {0, 1} labels become {-1, 1}; {-1, 1} labels stay (Keras' rule: all labels in {0, 1})
        Tensor binary = min(cast(logical_or(equal(y, scalar_like(y, 0.0)), equal(y, scalar_like(y, 1.0))), y.dtype()));
        Tensor s = y + binary * (y - 1.0);  // 2y - 1 when binary, else y
        return relu(1.0 - s * p);  // per element
      }) {}

Poisson::Poisson()
    : Loss("poisson", [](const Tensor& y_true, const Tensor& y_pred) {
        auto [y, p] = aligned("poisson", y_true, y_pred);
        return p - y * log(p + kEpsilon);  // per element
      }) {}

Loss loss_by_name(const std::string& name) {
  if (name == "mse" || name == "mean_squared_error") return MeanSquaredError();
  if (name == "mae" || name == "mean_absolute_error") return MeanAbsoluteError();
  if (name == "huber" || name == "huber_loss") return Huber();
  if (name == "log_cosh" || name == "logcosh") return LogCosh();
  if (name == "kl_divergence" || name == "kld" || name == "kullback_leibler_divergence") return KLDivergence();
  if (name == "cosine_similarity") return CosineSimilarity();
  if (name == "hinge") return Hinge();
  if (name == "poisson") return Poisson();
  if (name == "binary_crossentropy") return BinaryCrossentropy();
  if (name == "categorical_crossentropy") return CategoricalCrossentropy();
  if (name == "sparse_categorical_crossentropy") return SparseCategoricalCrossentropy();
  fail("loss", "unknown loss '" + name + "' (known: mse, mae, huber, log_cosh, kl_divergence, cosine_similarity, hinge, "
                                         "poisson, binary_crossentropy, categorical_crossentropy, "
                                         "sparse_categorical_crossentropy)");
}

}  // namespace ef::train
