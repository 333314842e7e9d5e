#pragma once
// Keras' functional API. Input gives a Keras tensor (a placeholder: shape and dtype, no value);
// calling layers on Keras tensors, or applying ops to them, records the model's graph; a
// Functional model runs that graph on data, as any Model (fit, evaluate, predict, summary):
//
//   auto in = ef::train::Input({784}, ef::DType::float32, "pixels");
//   auto hidden = std::make_shared<ef::nn::Dense>(64, "relu");
//   auto logits = std::make_shared<ef::nn::Dense>(10);
//   auto model = std::make_shared<ef::train::Functional>(in, (*logits)((*hidden)(in)));
//
// Layers of the graph are held by the model (shared_ptr); a layer called twice is shared (one
// set of weights). Models are layers: a model called on Keras tensors is one node of another.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "eagerflow/trace/keras_tensor.h"
#include "eagerflow/train/model.h"

namespace ef::train {

// A Keras tensor for one example of `shape` (without the batch axis, which is added: dynamic,
// or batch_size). An empty name becomes "input_layer", "input_layer_1", ... as in Keras 3.
Tensor Input(const Shape& shape, DType dtype = DType::float32, std::string name = "",
             std::optional<std::int64_t> batch_size = std::nullopt);

// The layer graph of a functional model, checked when made: every output computable from the
// inputs, every input used, names unique; errors name the layer. Immutable once made.
class FunctionalGraph {
 public:
  struct Step {
    std::shared_ptr<const KerasNode> node;
    std::vector<int> args;  // the slot of each node input, -1 for a constant the node holds
    int first_output = 0;   // slots first_output ... first_output + outputs - 1
  };
  // output_names empty: each output is named after the layer (or op, or Input) making it.
  FunctionalGraph(const std::string& model, std::vector<Tensor> inputs, std::vector<Tensor> outputs,
                  std::vector<std::string> output_names = {});

  // The outputs for these inputs (in input order): each node runs on real (or traced) tensors.
  std::vector<Tensor> run(const std::string& model, const std::vector<Tensor>& inputs) const;
  void summary(std::ostream& os, const Model& model) const;

  // The nodes in the order they run; inputs occupy slots 0..n-1.
  const std::vector<Step>& steps() const { return steps_; }
  const std::vector<std::shared_ptr<const KerasNode>>& input_nodes() const { return input_nodes_; }
  const std::vector<std::string>& input_names() const { return input_names_; }
  const std::vector<std::string>& output_names() const { return output_names_; }
  const std::vector<TensorSpec>& input_specs() const { return input_specs_; }
  const std::vector<int>& output_slots() const { return output_slots_; }
  // The layers, in the order they first run, once each (a shared layer has one set of weights).
  const std::vector<std::shared_ptr<nn::Layer>>& layers() const { return layers_; }

 private:
  Tensor conform_input(const std::string& model, std::size_t i, const Tensor& x) const;
  std::vector<Step> steps_;
  std::vector<std::shared_ptr<const KerasNode>> input_nodes_;
  std::vector<std::string> input_names_, output_names_;
  std::vector<TensorSpec> input_specs_;
  std::vector<int> output_slots_;
  std::vector<std::shared_ptr<nn::Layer>> layers_;
  int num_slots_ = 0;
};

// Keras' Model(inputs, outputs): a Model whose call runs a FunctionalGraph (Model::init_functional).
class Functional : public Model {
 public:
  Functional(std::vector<Tensor> inputs, std::vector<Tensor> outputs, std::string name = "");
  Functional(const Tensor& input, const Tensor& output, std::string name = "");
  // Outputs by name (Keras' dict outputs): y, losses and metrics are keyed by these names.
  Functional(std::vector<Tensor> inputs, const std::map<std::string, Tensor>& outputs, std::string name = "");
};

}  // namespace ef::train
