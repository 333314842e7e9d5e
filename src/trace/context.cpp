#include "eagerflow/trace/context.h"

#include <cstring>

#include "eagerflow/core/log.h"
#include "eagerflow/variable.h"
#include "ops/primitives.h"

namespace ef::trace {
namespace {


thread_local TraceContext* active = nullptr;

}  // namespace

Recorder* active_recorder() { return active; }
TraceContext* current() { return active; }

TraceScope::TraceScope(TraceContext& ctx) : previous_(active) { active = &ctx; }
TraceScope::~TraceScope() { active = previous_; }
EagerScope::EagerScope() : previous_(active) { active = nullptr; }
EagerScope::~EagerScope() { active = previous_; }

TraceContext::TraceContext(std::string function_name, bool allow_variable_creation, TraceContext* parent)
    : graph_(std::make_shared<ir::Graph>()),
      parent_(parent),
      function_name_(std::move(function_name)),
      allow_variable_creation_(allow_variable_creation) {
  graph_->name = function_name_;
}

TraceContext& TraceContext::root() { return parent_ ? parent_->root() : *this; }

Tensor TraceContext::add_input(const TensorSpec& spec) {
  int id = graph_->add_input(spec);
  return Tensor::symbolic(spec.dtype, spec.shape, graph_, id);
}

int TraceContext::value_of(const Tensor& t) {
  const TensorImpl& impl = t.impl();
  if (impl.graph == graph_) return impl.value;
  if (impl.graph) {
    // A value of an enclosing trace used inside a sub-graph: it becomes a sub-graph input.
    bool ancestor = false;
    for (TraceContext* p = parent_; p && !ancestor; p = p->parent_) ancestor = p->graph_ == impl.graph;
    if (!ancestor)
      fail("trace", "a symbolic tensor " + t.spec().str() + " from another trace was used in '" + function_name_ +
                        "'; symbolic tensors cannot leave the trace that made them");
    auto it = lifted_ids_.find(&impl);
    if (it != lifted_ids_.end()) return it->second;
    int id = graph_->add_input(t.spec());
    lifted_ids_[&impl] = id;
    lifted_.push_back(t);
    return id;
  }
  auto it = constants_.find(&impl);
  if (it != constants_.end()) return it->second;
  // A captured tensor is frozen (like TF): the graph keeps a copy, so writing into the
  // original later does not change what the graph computes.
  int id = graph_->add_constant(t.clone());
  captured_.push_back(t);  // keeps the original alive: constants_ is keyed by its address
  constants_[&impl] = id;
  return id;
}

std::vector<std::pair<Tensor, int>> TraceContext::captured_constants() const {
  std::vector<std::pair<Tensor, int>> out;
  for (const Tensor& t : captured_) out.emplace_back(t, constants_.at(&t.impl()));
  return out;
}

std::vector<Tensor> TraceContext::record(const Primitive& op, std::span<const Tensor> inputs,
                                         std::vector<TensorSpec> specs) {
  std::vector<int> ids;
  ids.reserve(inputs.size());
  for (const auto& t : inputs) ids.push_back(value_of(t));
  std::vector<int> outs = graph_->add_node(op.clone(), std::move(ids), specs, NameScope::current_path());
  std::vector<Tensor> result;
  result.reserve(outs.size());
  for (std::size_t i = 0; i < outs.size(); ++i)
    result.push_back(Tensor::symbolic(specs[i].dtype, specs[i].shape, graph_, outs[i]));
  if (log_enabled(LogLevel::debug)) {
    std::string line = "[ef.trace]   " + std::string(op.name()) + "(" + describe(inputs) + ")";
    if (!specs.empty()) {
      line += " -> ";
      for (std::size_t i = 0; i < specs.size(); ++i) line += (i ? ", " : "") + specs[i].str();
    }
    log(LogLevel::debug, line);
  }
  return result;
}

void TraceContext::set_outputs(const std::vector<Tensor>& outputs) {
  graph_->outputs.clear();
  for (const auto& t : outputs) graph_->outputs.push_back(value_of(t));
}

Tensor TraceContext::read_variable(const std::shared_ptr<VariableState>& var) {
  auto it = reads_.find(var.get());
  if (it != reads_.end()) return it->second;
  // A cond branch reads a variable it has not assigned through the enclosing trace: the read
  // becomes a captured input of the cond, so gradients reach the variable.
  if (parent_ && lift_variable_reads_ && !assigned_here_.count(var.get())) {
    Tensor outer = parent_->read_variable(var);
    reads_[var.get()] = outer;
    outer_variable_reads_.emplace_back(var, outer);
    return outer;
  }
  ReadVariable op(var);
  std::vector<int> outs = graph_->add_node(op.clone(), {}, {var->spec});
  Tensor t = Tensor::symbolic(var->spec.dtype, var->spec.shape, graph_, outs[0]);
  reads_[var.get()] = t;
  return t;
}

void TraceContext::variable_assigned(const VariableState* var) {
  // Assignments inside a sub-graph also invalidate the enclosing traces' cached reads.
  assigned_here_.insert(var);
  for (TraceContext* c = this; c; c = c->parent_) c->reads_.erase(var);
}

void TraceContext::note_variable_created(const std::string& description) {
  created_variables_.push_back(description);
  log(LogLevel::verbose, "[ef.trace] " + function_name_ + ": created variable " + description);
}

}  // namespace ef::trace
