#include "eagerflow/function/concrete_function.h"

#include <ostream>

#include "eagerflow/variable.h"
#include "exec/interpret.h"
#include "function/call_op.h"
#include "ops/interpreters.h"
#include "trace/graph_edit.h"

namespace ef {

ConcreteFunction::ConcreteFunction(std::string name, Signature signature, std::vector<std::string> arg_names,
                                   std::shared_ptr<ir::Graph> traced, std::shared_ptr<ir::Graph> optimized,
                                   detail::OutputStructure outputs, const passes::PassOptions& pass_options)
    : name_(std::move(name)),
      signature_(std::move(signature)),
      arg_names_(std::move(arg_names)),
      traced_(std::move(traced)),
      optimized_(optimized),
      plan_(optimized),
      outputs_(std::move(outputs)),
      passes_(pass_options) {}

std::string ConcreteFunction::signature_str() const { return ef::signature_str(signature_, arg_names_); }

std::vector<Tensor> ConcreteFunction::call_flat(std::span<const Tensor> inputs) const {
  const ir::Graph& g = *optimized_;
  if (inputs.size() != g.inputs.size())
    fail("function " + name_, "expects " + std::to_string(g.inputs.size()) + " input tensors, got " + std::to_string(inputs.size()));
  bool symbolic = false;
  for (const Tensor& t : inputs) symbolic |= t.defined() && t.is_symbolic();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const TensorSpec& spec = g.values[static_cast<std::size_t>(g.inputs[i])].spec;
    bool fits = inputs[i].defined() && inputs[i].dtype() == spec.dtype &&
                (inputs[i].is_symbolic() ? detail::specs_compatible(inputs[i].spec(), spec) : spec.shape.accepts(inputs[i].shape()));
    if (!fits)
      fail("function " + name_, "input " + std::to_string(i) + ": " + (inputs[i].defined() ? inputs[i].spec().str() : "undefined") +
                                    " does not match " + spec.str());
  }
  if (symbolic || detail::tapes_recording()) return call(inputs);
  std::vector<Tensor> outs(plan_.num_outputs());
  plan_.run(inputs, outs);
  return outs;
}

const ConcreteFunction::Callable& ConcreteFunction::callable() const {
  std::call_once(callable_once_, [this] {
    ir::HoistedReads hoisted = ir::hoist_variable_reads(*traced_);
    auto c = std::make_shared<Callable>();
    c->function = std::make_shared<const GraphFunction>(hoisted.graph, passes_);
    c->variables = std::move(hoisted.variables);
    callable_ = std::move(c);
  });
  return *callable_;
}

std::vector<Tensor> ConcreteFunction::call(std::span<const Tensor> inputs) const {
  const Callable& c = callable();
  std::vector<Tensor> args(inputs.begin(), inputs.end());
  for (const auto& v : c.variables) args.push_back(Variable::from_state(v).value());
  return detail::call_graph(c.function, args);
}

std::vector<Tensor> ConcreteFunction::interpret(std::span<const Tensor> inputs) const {
  return exec::interpret(*traced_, inputs);
}

std::ostream& operator<<(std::ostream& os, const ConcreteFunction& f) { return os << f.str(); }

}  // namespace ef
