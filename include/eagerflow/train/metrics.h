#pragma once
// Keras' stateful metrics: update_state accumulates (in variables, so a traced train step
// updates them too), result() reads the running value, reset_state() starts over.
#include <memory>
#include <string>

#include "eagerflow/core/tensor.h"
#include "eagerflow/variable.h"

namespace ef::train {

class Metric {
 public:
  explicit Metric(std::string name);
  virtual ~Metric() = default;
  const std::string& name() const { return name_; }
  virtual void update_state(const Tensor& y_true, const Tensor& y_pred) = 0;
  // total / count so far (NaN before any update).
  Tensor result() const;
  void reset_state();

 protected:
  // Adds per-example values (weighted equally) to the running mean.
  void accumulate(const Tensor& values);
  // Adds a total that stands for `weight` examples.
  void accumulate_weighted(const Tensor& weighted_total, const Tensor& weight);

 private:
  std::string name_;
  Variable total_, count_;
};

// The mean of the values given (y_pred; y_true is ignored): the running loss.
class Mean : public Metric {
 public:
  explicit Mean(std::string name = "mean") : Metric(std::move(name)) {}
  void update_state(const Tensor& y_true, const Tensor& values) override;
  void update_state(const Tensor& values) { update_state(Tensor(), values); }
  // A value that stands for `weight` examples (a batch's mean loss and its batch size).
  void update_state_weighted(const Tensor& value, const Tensor& weight);
};

// y_pred == y_true, elementwise.
class Accuracy : public Metric {
 public:
  explicit Accuracy(std::string name = "accuracy") : Metric(std::move(name)) {}
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
};

// argmax(y_pred) == y_true (class indices).
class SparseCategoricalAccuracy : public Metric {
 public:
  explicit SparseCategoricalAccuracy(std::string name = "sparse_categorical_accuracy") : Metric(std::move(name)) {}
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
};

// argmax(y_pred) == argmax(y_true) (one-hot labels).
class CategoricalAccuracy : public Metric {
 public:
  explicit CategoricalAccuracy(std::string name = "categorical_accuracy") : Metric(std::move(name)) {}
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;
};

// (y_pred > threshold) == y_true.
class BinaryAccuracy : public Metric {
 public:
  explicit BinaryAccuracy(std::string name = "binary_accuracy", double threshold = 0.5)
      : Metric(std::move(name)), threshold_(threshold) {}
  void update_state(const Tensor& y_true, const Tensor& y_pred) override;

 private:
  double threshold_;
};

// By Keras name. "accuracy" / "acc" pick the accuracy that fits the loss, as Keras does:
// sparse categorical for sparse_categorical_crossentropy, categorical for
// categorical_crossentropy, binary for binary_crossentropy, elementwise otherwise. The
// metric reports under the name asked for.
std::shared_ptr<Metric> metric_by_name(const std::string& name, const std::string& loss_name);

}  // namespace ef::train
