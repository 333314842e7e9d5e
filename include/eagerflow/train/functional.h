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

#include "eagerflow/core/keras_tensor.h"
#include "eagerflow/train/model.h"

namespace ef::train {

// A Keras tensor for one example of `shape` (without the batch axis, which is added: dynamic,
// or batch_size). An empty name becomes "input_layer", "input_layer_1", ... as in Keras 3.
Tensor Input(const Shape& shape, DType dtype = DType::float32, std::string name = "",
             std::optional<std::int64_t> batch_size = std::nullopt);

class Functional : public Model {
 public:
  // inputs: Keras tensors made by Input; outputs: Keras tensors computed from them. The graph
  // is checked here: every output must be computable from the inputs, every input used, and
  // names unique; errors name the layer.
  Functional(std::vector<Tensor> inputs, std::vector<Tensor> outputs, std::string name = "");
  Functional(const Tensor& input, const Tensor& output, std::string name = "");
  // Outputs by name (Keras' dict outputs): y, losses and metrics are keyed by these names.
  Functional(std::vector<Tensor> inputs, const std::map<std::string, Tensor>& outputs, std::string name = "");

  std::vector<std::string> input_names() const override { return input_names_; }
  std::vector<std::string> output_names() const override { return output_names_; }
  const std::vector<TensorSpec>& input_specs() const { return input_specs_; }
  std::size_t num_outputs() const { return output_slots_.size(); }
  // Keras' summary of a functional model: a row per layer (and per Input) with the layers its
  // inputs come from ("Connected to").
  void summary(std::ostream& os) const override;
  using Model::summary;

 protected:
  Tensor call(const Tensor& inputs, bool training) override;
  Tensor call(const std::vector<Tensor>& inputs, bool training) override;
  std::vector<Tensor> call_multi(const std::vector<Tensor>& inputs, bool training) override;

 private:
  struct Step {
    std::shared_ptr<const KerasNode> node;
    std::vector<int> args;  // the slot of each node input, -1 for a constant the node holds
    int first_output = 0;   // slots first_output ... first_output + outputs - 1
  };
  void init(std::vector<Tensor> inputs, std::vector<Tensor> outputs, std::vector<std::string> output_names);
  Tensor conform_input(std::size_t i, const Tensor& x) const;
  std::vector<Step> steps_;
  std::vector<std::shared_ptr<const KerasNode>> input_nodes_;
  std::vector<std::string> input_names_, output_names_;
  std::vector<TensorSpec> input_specs_;
  std::vector<int> output_slots_;
  int num_slots_ = 0;
};

}  // namespace ef::train
