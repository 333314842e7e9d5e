#pragma once
// Where fit, evaluate and predict take their batches from: the one place the training loop's
// data path goes through. ArrayBatches slices in-memory tensors (shuffled each epoch);
// DatasetBatches pulls an ef::data::Dataset's elements. (A data-parallel strategy shards here.)
#include <cstdint>
#include <optional>
#include <vector>

#include "eagerflow/data/dataset.h"
#include "eagerflow/train/model.h"

namespace ef::train::detail {

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // Batches per epoch; -1 when unknown until the data ends.
  virtual std::int64_t steps() const = 0;
  virtual void begin_epoch() {}
  // The next batch of this epoch; false at the epoch's end.
  virtual bool next(StepData& batch) = 0;
  // True when the data ran out before steps_per_epoch batches (fit then stops, as Keras).
  virtual bool exhausted() const { return false; }
};

class ArrayBatches final : public BatchSource {
 public:
  ArrayBatches(StepData data, std::int64_t batch_size, bool shuffle);
  std::int64_t steps() const override { return (n_ + batch_size_ - 1) / batch_size_; }
  void begin_epoch() override;
  bool next(StepData& batch) override;

 private:
  StepData data_;
  std::int64_t n_, batch_size_, step_ = 0;
  bool shuffle_;
  std::vector<std::int64_t> order_;
};

class DatasetBatches final : public BatchSource {
 public:
  // what: "fit", "evaluate", "validation_data", "predict"; need_y: elements must hold targets.
  DatasetBatches(Model& model, const data::Dataset& dataset, std::int64_t steps, const char* what, bool need_y,
                 const std::map<std::int64_t, double>* class_weight = nullptr);
  std::int64_t steps() const override;
  void begin_epoch() override;
  bool next(StepData& batch) override;
  bool exhausted() const override { return exhausted_; }

 private:
  Model& model_;
  const data::Dataset& dataset_;
  std::int64_t steps_, taken_ = 0;
  const char* what_;
  bool need_y_, exhausted_ = false;
  const std::map<std::int64_t, double>* class_weight_;
  std::optional<data::Iterator> it_;
};

}  // namespace ef::train::detail
