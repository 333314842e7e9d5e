#pragma once
// Keras-style layers. A layer builds itself on its first call (build(input_shape) creates
// its weights), then runs call(inputs). Layers called inside another layer's call become its
// sub-layers automatically, and weights are named by the path: "eager_layer/dense/kernel".
//
// ef::function(layer) is in eagerflow/nn/layer_function.h (included by eagerflow.h): this
// header does not pull in the tracing machinery.
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "eagerflow/nn/dtype_policy.h"
#include "eagerflow/nn/initializers.h"
#include "eagerflow/nn/layer_config.h"
#include "eagerflow/ops/random.h"
#include "eagerflow/variable.h"

namespace ef::detail {
struct LayerAccess;  // eagerflow/nn/layer_function.h
}

namespace ef::nn {

// Keras' clear_session: default layer names count from the start again ("dense" after "dense_3").
void reset_layer_names();

class Regularizer;  // eagerflow/nn/regularizers.h
class Constraint;   // eagerflow/nn/constraints.h

// Layers derive from enable_shared_from_this so that calling one on Keras tensors (the
// functional API, eagerflow/train/functional.h) can keep it alive in the model's graph.
class Layer : public std::enable_shared_from_this<Layer> {
 public:
  // An empty name becomes the class name in snake_case, numbered among the layer's siblings
  // inside a parent ("dense", "dense_1"), or among all unparented layers otherwise.
  explicit Layer(std::string name = "");
  virtual ~Layer();
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  // Builds on the first call, then runs call(). Inside a trace, logs the call with the
  // symbolic input spec (at LogLevel::verbose). `training` follows Keras' rule: the value
  // given, else the value of the layer call this one runs inside, else false (fit passes true).
  Tensor operator()(const Tensor& inputs, std::optional<bool> training = std::nullopt);
  // Layers with several inputs (Add, Concatenate, your own): layer({a, b}).
  Tensor operator()(const std::vector<Tensor>& inputs, std::optional<bool> training = std::nullopt);
  // Every output of a layer with several (a functional model with several outputs); one for
  // other layers. operator() of a layer with several outputs is an error naming this method.
  std::vector<Tensor> call_outputs(const std::vector<Tensor>& inputs, std::optional<bool> training = std::nullopt);

  const std::string& name() const;
  bool built() const { return built_; }
  // Keras' layer.build(input_shape) called from outside the layer: creates the weights for
  // inputs of that shape (kDynamic: any size) as the first call would, once; nothing once built
  // (so a later call does not build again). The vector form: a layer of several inputs.
  void build_for(const Shape& input_shape);
  void build_for(const std::vector<Shape>& input_shapes);
  // Sub-layers first seen during this layer's calls (or added with track()).
  const std::vector<Layer*>& layers() const { return children_; }
  // All weights of this layer and its sub-layers, in creation order.
  std::vector<Variable> weights() const;
  // Weights of frozen layers (trainable false) and non-trainable variables (moving
  // statistics) are non-trainable.
  std::vector<Variable> trainable_weights() const;
  std::vector<Variable> non_trainable_weights() const;
  bool trainable() const { return trainable_; }
  // The class name ("Dense"), as Keras' summary prints it.
  std::string type_name() const;
  // The spec of the last output (the batch dim as the call saw it); empty before a call.
  std::optional<TensorSpec> output_spec() const;
  // Keras' dtype policy (eagerflow/nn/dtype_policy.h): the global policy when the layer was
  // made, unless set here (Keras' dtype= argument; before the first call, so that weights get
  // the policy's variable dtype). Under a policy whose compute dtype is bfloat16 the layer
  // casts floating inputs to it and reads its trainable float32 variables as bfloat16 inside
  // call(); a float32 layer casts bfloat16 inputs back to float32.
  // Once built, another policy is an ef::Error FAILED_PRECONDITION (Keras' ValueError in Python).
  const DTypePolicy& dtype_policy() const { return dtype_policy_; }
  void set_dtype_policy(const DTypePolicy& policy);
  DType compute_dtype() const { return dtype_policy_.compute_dtype(); }
  DType variable_dtype() const { return dtype_policy_.variable_dtype(); }
  // Sets this layer and every sub-layer it has so far, as Keras' `layer.trainable = ...`.
  void set_trainable(bool trainable);
  // The input spec of the first (single-input) call with the batch dim dynamic: what ef::save
  // traces when no signature is given. Empty before a call.
  std::optional<TensorSpec> save_spec() const;
  // Keras 2's input_shape= / batch_size= (eagerflow/nn/layer_args.h): the shape, batch first, a
  // Sequential starting with this layer is built for at once, as after an Input.
  const std::optional<Shape>& declared_input_shape() const { return declared_input_shape_; }
  void set_declared_input_shape(std::optional<Shape> shape) { declared_input_shape_ = std::move(shape); }

  // Losses and constraints, as Keras' (src/nn/layer_losses.cpp). add_loss: a scalar to add to
  // the training loss (a penalty computed in call(), say). losses(): the add_loss values of the
  // latest outermost layer call (one with no enclosing layer call on this thread; a new one
  // clears them) from this layer and its sub-layers, then the penalty of each regularized
  // trainable weight from its current value. Inside a trace they are tensors of that trace.
  void add_loss(const Tensor& loss);
  std::vector<Tensor> losses() const;
  // Assigns each constrained trainable weight (kernel_constraint, ...) of this layer and its
  // sub-layers its projection: Keras does this right after each optimizer update.
  void apply_constraints();
  // Keras' activity_regularizer, settable on any layer: after each call, add_loss(r(output) /
  // batch size) (Keras 3 divides by the batch size). An empty Regularizer removes it.
  void set_activity_regularizer(const Regularizer& r);
  const Regularizer* activity_regularizer() const;  // null when none

  // Keras' get_config: the class name and constructor arguments that rebuild this layer
  // (eagerflow/nn/layer_config.h; ef::save_model writes it, ef::load_model rebuilds the layer
  // through the factory registered for the class). nullopt (the default): the layer has no
  // config, and saving a model that holds it is an error that names it. A layer whose config
  // would hold a C++ function (a custom activation, Lambda) throws ef::Error saying so.
  virtual std::optional<LayerConfig> get_config() const;
  // Keras' supports_masking for layers that keep the steps of their input: a Keras mask on the
  // (single) input (ef::nn::mask_of, eagerflow/nn/recurrent.h) is set on the output too, so
  // Embedding(mask_zero) -> Dropout -> LSTM still masks. Layers that use masks read them
  // themselves (recurrent layers, GlobalAveragePooling1D); others drop them (false).
  virtual bool supports_masking() const { return false; }
  // Keras' ops promote an integer or bool input with a float weight to the float (Dense on uint8
  // pixels): layers whose first op multiplies their input by a weight say so, and get such
  // inputs cast to their compute dtype (Embedding and lookups keep integer ids).
  virtual bool casts_integer_inputs() const { return false; }
  // The generator of a layer that draws random numbers with a seed of its own (Dropout(seed=),
  // MultiHeadAttention(seed=)): checkpoints save and restore its draw count. nullptr: none.
  virtual const random::SeedGenerator* seed_generator() const { return nullptr; }

 protected:
  virtual void build(const Shape& input_shape) {}
  // Override one: call(inputs), or call(inputs, training) for layers that behave differently
  // while training (Dropout, BatchNormalization).
  virtual Tensor call(const Tensor& inputs);
  virtual Tensor call(const Tensor& inputs, bool training) { return call(inputs); }
  // Several inputs: override these two (the default call accepts exactly one input; the
  // default build builds for the first).
  virtual void build(const std::vector<Shape>& input_shapes);
  virtual Tensor call(const std::vector<Tensor>& inputs, bool training);
  // Several outputs: override this (the default returns call(inputs, training)).
  virtual std::vector<Tensor> call_multi(const std::vector<Tensor>& inputs, bool training);
  // Creates a weight named "<layer path>/<name>"; call from build().
  Variable add_weight(const std::string& name, const Shape& shape, const Initializer& initializer,
                      bool trainable = true, DType dtype = DType::float32);
  void track(Layer& child);
  // Makes an existing variable one of this layer's weights (a loaded model's, say).
  void track_weight(const Variable& v);
  // Keras' add_weight(regularizer=..., constraint=...) for a weight of this layer: losses()
  // includes r(weight); apply_constraints() assigns c(weight). An empty one removes it.
  void set_weight_regularizer(const Variable& weight, const Regularizer& r);
  void set_weight_constraint(const Variable& weight, const Constraint& c);
  // Inside call(): whether this layer and every layer whose call it runs inside are trainable
  // (Keras runs a frozen BatchNormalization in inference mode, also under a frozen parent).
  bool trainable_in_call() const;
  // True while build() runs because of a first call (not because a user called build):
  // Model::build then has nothing to do, the call itself builds the sub-layers.
  bool building_for_call() const { return building_for_call_; }

 private:
  void collect(std::vector<Variable>& out, bool frozen_parent, std::vector<bool>* trainable) const;
  // build() once, under the lock; for_call: the first call builds (building_for_call()).
  void build_once(const std::vector<Shape>& shapes, bool single, bool for_call);
  std::vector<Tensor> invoke(std::span<const Tensor> inputs, bool single, bool multi, std::optional<bool> training);
  // Guards the lazy name, building, weights and sub-layer links: two functions over one
  // layer may first call it from two threads. Recursive: build() may call sub-layers that
  // link back to this layer.
  mutable std::recursive_mutex mutex_;
  mutable std::string name_;
  bool explicit_name_ = false;
  bool built_ = false;
  bool building_for_call_ = false;
  bool trainable_ = true;
  DTypePolicy dtype_policy_ = global_policy();
  std::optional<TensorSpec> output_spec_;
  std::optional<TensorSpec> save_spec_;
  std::optional<Shape> declared_input_shape_;
  std::vector<Variable> own_weights_;
  std::vector<Layer*> children_;
  std::vector<Layer*> parents_;  // so that a layer destroyed first unlinks itself
  // Sub-layers by name and the next free number per default base name, so that tracking a
  // sub-layer (also on every call) costs O(1), not a scan of its siblings (src/nn/layer.cpp).
  struct ChildIndex;
  std::unique_ptr<ChildIndex> child_index_;
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);  // functions over the layer watch it
  // add_loss values, regularizers and constraints (src/nn/layer_losses.cpp), made on first use.
  struct LossState;
  mutable std::shared_ptr<LossState> loss_state_;
  LossState& loss_state() const;
  void clear_losses();
  void add_activity_loss(const std::vector<Tensor>& outputs);
  void collect_losses(std::vector<Tensor>& out, std::vector<const Layer*>& seen) const;

  friend struct ef::detail::LayerAccess;
};

}  // namespace ef::nn
