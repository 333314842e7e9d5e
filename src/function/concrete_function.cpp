#include "eagerflow/function/concrete_function.h"

#include <ostream>

#include "exec/interpret.h"

namespace ef {

ConcreteFunction::ConcreteFunction(std::string name, Signature signature, std::vector<std::string> arg_names,
                                   std::shared_ptr<ir::Graph> traced, std::shared_ptr<ir::Graph> optimized,
                                   detail::OutputStructure outputs)
    : name_(std::move(name)),
      signature_(std::move(signature)),
      arg_names_(std::move(arg_names)),
      traced_(std::move(traced)),
      optimized_(optimized),
      plan_(optimized),
      outputs_(std::move(outputs)) {}

std::string ConcreteFunction::signature_str() const { return ef::signature_str(signature_, arg_names_); }

std::vector<Tensor> ConcreteFunction::call_flat(std::span<const Tensor> inputs) const {
  const ir::Graph& g = *optimized_;
  if (inputs.size() != g.inputs.size())
    fail("function " + name_, "expects " + std::to_string(g.inputs.size()) + " input tensors, got " + std::to_string(inputs.size()));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const TensorSpec& spec = g.values[static_cast<std::size_t>(g.inputs[i])].spec;
    if (inputs[i].defined() && inputs[i].is_symbolic())
      fail("function " + name_, "input " + std::to_string(i) + " is a symbolic tensor " + inputs[i].spec().str() +
                                    "; call_flat runs the graph on concrete tensors");
    if (!inputs[i].defined() || inputs[i].dtype() != spec.dtype || !spec.shape.accepts(inputs[i].shape()))
      fail("function " + name_, "input " + std::to_string(i) + ": " + (inputs[i].defined() ? inputs[i].spec().str() : "undefined") +
                                    " does not match " + spec.str());
  }
  std::vector<Tensor> outs(plan_.num_outputs());
  plan_.run(inputs, outs);
  return outs;
}

std::vector<Tensor> ConcreteFunction::interpret(std::span<const Tensor> inputs) const {
  return exec::interpret(*traced_, inputs);
}

std::ostream& operator<<(std::ostream& os, const ConcreteFunction& f) { return os << f.str(); }

}  // namespace ef
