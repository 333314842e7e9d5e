#include "eagerflow/train/losses.h"

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
    fail(loss, "predictions must be a floating tensor, got " + (y_pred.defined() ? y_pred.spec().str() : std::string("undefined")));
}

void expect_same_shape(const std::string& loss, const Tensor& y_true, const Tensor& y_pred) {
  const Shape &a = y_true.shape(), &b = y_pred.shape();
  bool ok = a.rank() == b.rank();
  for (int i = 0; ok && i < a.rank(); ++i) ok = a[i] == b[i] || a[i] == kDynamic || b[i] == kDynamic;
  if (!ok) fail(loss, "labels " + y_true.spec().str() + " and predictions " + y_pred.spec().str() + " differ in shape");
}

// Cross-entropy of one-hot (or soft) labels with log-probabilities, per example.
Tensor cross_entropy_rows(const Tensor& y_true, const Tensor& log_probs) { return -sum(y_true * log_probs, {-1}); }

Tensor categorical(const std::string& name, const Tensor& y_true, const Tensor& y_pred, bool from_logits) {
  Tensor log_probs = from_logits ? log_softmax(y_pred, -1) : log(clip_probabilities(y_pred / sum(y_pred, {-1}, true)));
  return mean(cross_entropy_rows(cast(y_true, y_pred.dtype()), log_probs));
}

}  // namespace

Tensor Loss::operator()(const Tensor& y_true, const Tensor& y_pred) const {
  if (!y_true.defined()) fail(name_, "labels are undefined");
  expect_float_predictions(name_, y_pred);
  return fn_(y_true, y_pred);
}

MeanSquaredError::MeanSquaredError()
    : Loss("mean_squared_error", [](const Tensor& y_true, const Tensor& y_pred) {
        auto [y, p] = same_rank(y_true, y_pred);
        expect_same_shape("mean_squared_error", y, p);
        return mean(square(p - cast(y, p.dtype())));
      }) {}

BinaryCrossentropy::BinaryCrossentropy(bool from_logits)
    : Loss("binary_crossentropy", [from_logits](const Tensor& y_true, const Tensor& y_pred) {
        auto [y, p] = same_rank(y_true, y_pred);
        expect_same_shape("binary_crossentropy", y, p);
        Tensor z = cast(y, p.dtype());
        if (from_logits)  // max(x, 0) - x z + log(1 + exp(-|x|)): no overflow for any x
          return mean(relu(p) - p * z + log(exp(-abs(p)) + 1.0));
        Tensor q = clip_probabilities(p);
        return mean(-(z * log(q) + (1.0 - z) * log(1.0 - q)));
      }) {}

CategoricalCrossentropy::CategoricalCrossentropy(bool from_logits)
    : Loss("categorical_crossentropy", [from_logits](const Tensor& y, const Tensor& p) {
        expect_same_shape("categorical_crossentropy", y, p);
        return categorical("categorical_crossentropy", y, p, from_logits);
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
        Tensor onehot = one_hot(class_indices(labels, classes, name), classes, p.dtype());
        return categorical(name, onehot, p, from_logits);
      }) {}

Loss loss_by_name(const std::string& name) {
  if (name == "mse" || name == "mean_squared_error") return MeanSquaredError();
  if (name == "binary_crossentropy") return BinaryCrossentropy();
  if (name == "categorical_crossentropy") return CategoricalCrossentropy();
  if (name == "sparse_categorical_crossentropy") return SparseCategoricalCrossentropy();
  fail("loss", "unknown loss '" + name + "' (known: mse, binary_crossentropy, categorical_crossentropy, "
                                         "sparse_categorical_crossentropy)");
}

}  // namespace ef::train
