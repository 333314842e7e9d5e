#pragma once
// Saved models (TF's SavedModel): ef::save writes traced functions (their graphs, signatures
// and constants) and the variables they use to a folder; ef::load, in another process and
// without the C++ that defined them, returns functions that give the same results.
//
//   ef::save(model, "build/mlp");              // "serving_default", traced at the model's
//                                              // remembered input spec (dynamic batch)
//   ef::SavedModel m = ef::load("build/mlp");
//   ef::Tensor y = m("serving_default", {x})[0];
//
// The folder holds saved_model.json (format and version, signatures, graphs: docs/saved_model.md)
// and variables.safetensors (variable values and graph constants, bit-exact). Loading refuses
// what it does not know (an unknown op, a newer version) with an ef::Error, and checks every
// graph by tracing it again: a damaged file cannot describe shapes its ops would not compute.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "eagerflow/function/concrete_function.h"
#include "eagerflow/function/function.h"
#include "eagerflow/nn/layer.h"
#include "eagerflow/variable.h"

namespace ef {

inline constexpr int kSavedModelVersion = 1;

// `layer` called in inference mode (training false), traced at `input_spec` (default: its
// remembered Layer::save_spec, batch dynamic): what ef::save and ONNX export write.
std::shared_ptr<const ConcreteFunction> inference_function(nn::Layer& layer,
                                                           std::optional<TensorSpec> input_spec = std::nullopt);

// Saves `layer` called in inference mode at `input_spec` (default: the spec of its first call
// with the batch dim dynamic, Layer::save_spec) as the signature "serving_default".
void save(nn::Layer& layer, const std::string& dir, std::optional<TensorSpec> input_spec = std::nullopt);
// Saves concrete functions under the given signature names. Arguments must be tensors (static
// values are baked into the trace); results are saved as a flat list of tensors.
void save(const std::vector<std::pair<std::string, std::shared_ptr<const ConcreteFunction>>>& functions,
          const std::string& dir);

// Saves every cached trace of an ef::function: the first as "serving_default", the others as
// "signature_1", "signature_2", ... (trace it first: call it, or get_concrete_function(specs)).
template <class F>
void save(const Function<F>& function, const std::string& dir) {
  auto traced = function.concrete_functions();
  if (traced.empty())
    fail(ErrorCode::failed_precondition, "save",
         "function '" + function.name() + "' has no traces yet: call it once, or get_concrete_function(specs)");
  std::vector<std::pair<std::string, std::shared_ptr<const ConcreteFunction>>> named;
  for (std::size_t i = 0; i < traced.size(); ++i)
    named.emplace_back(i == 0 ? std::string("serving_default") : "signature_" + std::to_string(i), traced[i]);
  save(named, dir);
}

class SavedModel {
 public:
  struct Signature {
    std::vector<std::string> input_names;
    std::vector<TensorSpec> inputs;
    std::vector<TensorSpec> outputs;
  };
  std::vector<std::string> signature_names() const;
  const Signature& signature(const std::string& name) const;
  // Runs a signature; inputs must fit its specs (dynamic dims take any size).
  std::vector<Tensor> operator()(const std::string& name, const std::vector<Tensor>& inputs) const;
  // The restored variables, by their saved keys. Calls read them at every call: a gradient
  // through a signature reaches them, and assigning them changes what the model computes.
  const std::map<std::string, Variable>& variables() const { return variables_; }
  // Those saved as trainable, in key order.
  std::vector<Variable> trainable_variables() const;
  // The traced (verified) function behind a signature, for printing or inspection.
  std::shared_ptr<const ConcreteFunction> concrete_function(const std::string& name) const;

 private:
  friend SavedModel load(const std::string& dir);
  struct Entry {
    Signature signature;
    std::shared_ptr<const ConcreteFunction> function;
  };
  std::map<std::string, Entry> functions_;
  std::map<std::string, Variable> variables_;
};

SavedModel load(const std::string& dir);

namespace nn {
// Keras' TFSMLayer: one signature of a loaded saved model as a layer (one input, one output).
// The model's variables are the layer's weights, trainable as saved unless `trainable` is
// false, so a loaded model fine-tunes: put it in a Sequential, compile and fit. It runs as one
// call op, whose gradient comes from the saved graph.
class SavedModelLayer : public Layer {
 public:
  SavedModelLayer(SavedModel model, std::string endpoint = "serving_default", bool trainable = true,
                  std::string name = "");
  explicit SavedModelLayer(const std::string& dir, std::string endpoint = "serving_default", bool trainable = true,
                           std::string name = "");
  const SavedModel& saved_model() const { return model_; }

 protected:
  Tensor call(const Tensor& inputs) override;

 private:
  SavedModel model_;
  std::string endpoint_;
  std::shared_ptr<const ConcreteFunction> function_;
};
}  // namespace nn

}  // namespace ef
