#pragma once
// Keras' losses, numerically stable, averaged over the batch ("sum over batch size"). Each is
// a callable loss(y_true, y_pred) written with ef ops: it differentiates and traces.
#include <functional>
#include <string>

#include "eagerflow/core/tensor.h"

namespace ef::train {

class Loss {
 public:
  Loss(std::string name, std::function<Tensor(const Tensor&, const Tensor&)> fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  Tensor operator()(const Tensor& y_true, const Tensor& y_pred) const;
  const std::string& name() const { return name_; }

 private:
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
// y_true class indices ([batch] or [batch, 1], integer or float), y_pred [batch, classes].
struct SparseCategoricalCrossentropy : Loss {
  explicit SparseCategoricalCrossentropy(bool from_logits = false);
};

// By Keras name: "mse" / "mean_squared_error", "binary_crossentropy",
// "categorical_crossentropy", "sparse_categorical_crossentropy" (probabilities).
Loss loss_by_name(const std::string& name);

}  // namespace ef::train
