#pragma once
// Checkpoints for custom training loops (TF's tf.train.Checkpoint): the weights of tracked
// layers, the slots, step counter and learning rate of tracked optimizers, tracked variables,
// and the global random generator's state, in one safetensors file. A run restored from a
// checkpoint continues exactly as if it had not stopped.
//
//   ef::train::Checkpoint ckpt;
//   ckpt.track("model", model).track("optimizer", *optimizer);
//   ckpt.save("run/ckpt.safetensors");
//   ...
//   ckpt.restore("run/ckpt.safetensors");  // into freshly built objects of the same structure
//
// Keys: "model/dense/kernel" (a weight's path below its layer), "optimizer/iterations",
// "optimizer/learning_rate", "optimizer/slots/model/dense/kernel/m" (a slot by the key of
// the variable it belongs to), "rng/seed", "rng/counter". An optimizer whose rate follows a
// schedule has no "learning_rate" tensor: its rate is a function of "iterations", and the
// schedule's configuration is recorded in the metadata ("optimizer/learning_rate_schedule",
// e.g. "CosineDecay(initial=0.1, decay_steps=100, alpha=0)"), which restore compares with
// the optimizer's own.
#include <string>
#include <vector>

#include "eagerflow/nn/layer.h"
#include "eagerflow/optim/optimizer.h"
#include "eagerflow/variable.h"

namespace ef::train {

class Checkpoint {
 public:
  // Objects are tracked by reference: they must outlive the checkpoint's save/restore calls.
  Checkpoint& track(const std::string& name, nn::Layer& layer);
  Checkpoint& track(const std::string& name, optim::Optimizer& optimizer);
  Checkpoint& track(const std::string& name, const Variable& variable);
  // The random generator's state is saved and restored unless this is called with false.
  Checkpoint& track_random_state(bool on);

  void save(const std::string& path) const;
  // Checks every key, shape and dtype first; mismatches (missing, unexpected, different
  // shape or dtype) are reported together in one ef::Error and nothing is assigned.
  // skip_mismatch assigns what fits and leaves the rest.
  void restore(const std::string& path, bool skip_mismatch = false);

 private:
  struct Entry {
    std::string name;
    nn::Layer* layer = nullptr;
    optim::Optimizer* optimizer = nullptr;
    Variable variable;
  };
  void check_name(const std::string& name) const;
  std::vector<std::pair<std::string, const random::SeedGenerator*>> seed_generators() const;
  std::vector<Entry> entries_;
  bool random_state_ = true;
};

// Weights of `layer` keyed by their paths below it ("dense/kernel" for "my_model/dense/kernel").
std::vector<std::pair<std::string, Variable>> weights_by_key(const nn::Layer& layer);

// The seed generators of `layer` and its sub-layers (Dropout(seed=), ...) by their paths below
// it ("dropout", "block/dropout"; "" for the layer's own); a path met twice gets "#2", "#3" in
// walk order.
// Checkpoints and saved models keep their draw counts, so a restored model continues its masks.
std::vector<std::pair<std::string, const random::SeedGenerator*>> seed_generators_by_key(const nn::Layer& layer);

// Keras' Layer.get_weights / set_weights: the values of layer.weights(), in that order.
// set_layer_weights checks the count, every shape and every dtype first and reports every
// mismatch in one ef::Error; it assigns only when all fit (a bad entry changes nothing).
std::vector<Tensor> layer_weights(const nn::Layer& layer);
void set_layer_weights(nn::Layer& layer, const std::vector<Tensor>& values);

}  // namespace ef::train
