#pragma once
// One traced specialization of a function: its signature, the graph as traced, the optimized
// graph and the compiled plan that replays it.
#include <memory>
#include <mutex>
#include <string>

#include "eagerflow/exec/plan.h"
#include "eagerflow/function/args.h"
#include "eagerflow/passes/passes.h"

namespace ef {

class GraphFunction;
struct VariableState;

class ConcreteFunction {
 public:
  // `pass_options`: the options that made `optimized`, for the graphs derived from it (a call's).
  ConcreteFunction(std::string name, Signature signature, std::vector<std::string> arg_names,
                   std::shared_ptr<ir::Graph> traced, std::shared_ptr<ir::Graph> optimized,
                   detail::OutputStructure outputs, const passes::PassOptions& pass_options = {});

  const std::string& name() const { return name_; }
  const Signature& signature() const { return signature_; }
  const std::vector<std::string>& arg_names() const { return arg_names_; }
  std::string signature_str() const;
  const ir::Graph& graph() const { return *optimized_; }        // what runs
  const ir::Graph& traced_graph() const { return *traced_; }    // before the passes
  std::string str() const { return ir::to_text(*optimized_); }  // jaxpr-like text
  std::string to_dot() const { return ir::to_dot(*optimized_); }
  std::size_t num_inputs() const { return plan_.num_inputs(); }
  std::size_t num_outputs() const { return plan_.num_outputs(); }
  const detail::OutputStructure& output_structure() const { return outputs_; }

  // Runs on flat inputs (one tensor per graph input), checking dtypes and shapes. Inside a
  // trace or under a GradientTape it goes through call().
  std::vector<Tensor> call_flat(std::span<const Tensor> inputs) const;
  // Calls the graph as one `call` op: one node in the active trace, one entry on recording
  // tapes, whose gradient is derived from the graph and computed from the forward values the
  // call kept. The variables the graph reads and never assigns are read by the caller, so
  // tapes watch them (a loaded model's weights get gradients).
  std::vector<Tensor> call(std::span<const Tensor> inputs) const;
  // Runs the graph as traced op by op through dispatch, so that gradient tapes see every op
  // and variable read (how a function called under a GradientTape is differentiated).
  std::vector<Tensor> interpret(std::span<const Tensor> inputs) const;
  // Runs without checks: the caller has matched the signature already.
  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) const { plan_.run(inputs, outputs); }

 private:
  std::string name_;
  Signature signature_;
  std::vector<std::string> arg_names_;
  std::shared_ptr<ir::Graph> traced_, optimized_;
  exec::Plan plan_;
  detail::OutputStructure outputs_;
  passes::PassOptions passes_;
  // The graph with its variable reads as trailing inputs, made on the first call().
  struct Callable {
    std::shared_ptr<const GraphFunction> function;
    std::vector<std::shared_ptr<VariableState>> variables;
  };
  const Callable& callable() const;
  mutable std::once_flag callable_once_;
  mutable std::shared_ptr<const Callable> callable_;
};

std::ostream& operator<<(std::ostream& os, const ConcreteFunction& f);

}  // namespace ef
