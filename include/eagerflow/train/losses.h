#pragma once
// Keras' losses, numerically stable. Each is a callable loss(y_true, y_pred) written with ef
// ops: it differentiates and traces. A loss computes one value per example (its last axis
// reduced), then Keras' "sum_over_batch_size": the sum of the (weighted) per-example values
// divided by their number, also when a sample_weight is given (not by the sum of the weights).
#include <functional>
#include <string>

#include "eagerflow/core/tensor.h"

namespace ef::train {

class Loss {
 public:
  // fn(y_true, y_pred) gives the loss per example ([batch]), per element (values of a rank
  // above 1 are averaged over all but the first axis, so each example has one value), or a
  // scalar already reduced (it cannot be weighted per example).
  Loss(std::string name, std::function<Tensor(const Tensor&, const Tensor&)> fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  // The mean over the batch of the per-example values.
  Tensor operator()(const Tensor& y_true, const Tensor& y_pred) const;
  // sum(per_example * sample_weight) / batch size. sample_weight: a scalar, [batch] or
  // [batch, 1]; undefined means unweighted.
  Tensor operator()(const Tensor& y_true, const Tensor& y_pred, const Tensor& sample_weight) const;
  // One value per example ([batch]; a scalar when the inputs have no batch axis).
  Tensor per_example(const Tensor& y_true, const Tensor& y_pred) const;
  const std::string& name() const { return name_; }

 private:
  Tensor values(const Tensor& y_true, const Tensor& y_pred) const;
  std::string name_;
  std::function<Tensor(const Tensor&, const Tensor&)> fn_;
};

// mean((y_pred - y_true)^2)
struct MeanSquaredError : Loss {
  MeanSquaredError();
};
// y_true in {0, 1} (or soft labels); y_pred probabilities, or logits with from_logits.
struct BinaryCrossentropy : Loss {
  explicit BinaryCrossentropy(bool from_logits = false);
};
// y_true one-hot over the last axis.
struct CategoricalCrossentropy : Loss {
  explicit CategoricalCrossentropy(bool from_logits = false);
};
// y_true class indices ([batch] or [batch, 1], integer or float), y_pred [batch, classes]. A
// label outside [0, classes) (negative too) is an ef::Error naming it and the class count,
// eagerly and at every replay of a traced step (the check is an op: ef::class_indices).
struct SparseCategoricalCrossentropy : Loss {
  explicit SparseCategoricalCrossentropy(bool from_logits = false);
};

// Regression and margin losses, as Keras 3 computes them: a value per example from its last
// axis, averaged over the batch. Labels and predictions whose ranks differ by one with a last
// axis of 1 are aligned as Keras' squeeze_or_expand_to_same_rank: [B] against [B, 1] is one
// value per example, never a [B, B] broadcast.
// mean(|y_pred - y_true|)
struct MeanAbsoluteError : Loss {
  MeanAbsoluteError();
};
// 0.5 e^2 where |e| <= delta, delta (|e| - delta / 2) beyond; e = y_pred - y_true.
struct Huber : Loss {
  explicit Huber(double delta = 1.0);
};
// log(cosh(y_pred - y_true)), computed without overflow for large errors.
struct LogCosh : Loss {
  LogCosh();
};
// sum(y_true log(y_true / y_pred)) over the last axis, both clipped to [1e-7, 1].
struct KLDivergence : Loss {
  KLDivergence();
};
// -cos(y_true, y_pred) along `axis` (from -1 for opposite to 1 for the same direction, negated
// so that minimizing it aligns them); zero vectors count as orthogonal.
struct CosineSimilarity : Loss {
  explicit CosineSimilarity(int axis = -1);
};
// mean(max(1 - y_true y_pred, 0)); labels in {-1, 1}, or in {0, 1} (mapped to {-1, 1}, as Keras).
struct Hinge : Loss {
  Hinge();
};
// mean(y_pred - y_true log(y_pred + 1e-7)), for counts.
struct Poisson : Loss {
  Poisson();
};

// By Keras name: "mse" / "mean_squared_error", "mae" / "mean_absolute_error", "huber",
// "log_cosh" / "logcosh", "kl_divergence" / "kld", "cosine_similarity", "hinge", "poisson",
// "binary_crossentropy", "categorical_crossentropy", "sparse_categorical_crossentropy"
// (probabilities).
Loss loss_by_name(const std::string& name);

}  // namespace ef::train
