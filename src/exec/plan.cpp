#include "eagerflow/exec/plan.h"

#include <array>
#include <cstddef>
#include <cstring>
#include <memory>
#include <new>

#include "eagerflow/core/string_tensor.h"
#include "eagerflow/ops/device_kernels.h"
#include "ops/interpreters.h"
#include "ops/op_observer.h"
#include "ops/output_checks.h"

namespace ef::exec {
namespace {
constexpr std::size_t kStackSlots = 64;
constexpr std::size_t kStackArgs = 8;

// The op's kernel on the device of its arguments (eagerflow/ops/device_kernels.h), as eager
// dispatch chooses it; a CPU-only program pays one load.
void run_op(const Primitive& op, std::span<const Tensor> args, std::span<const TensorSpec> specs, std::span<Tensor> outs) {
  if (detail::devices_in_use()) [[unlikely]]
    detail::run_kernel(op, detail::device_of_inputs(op, args), args, specs, outs);
  else
    op.eval(args, specs, outs);
}
}  // namespace

Plan::Plan(std::shared_ptr<const ir::Graph> graph) : graph_(std::move(graph)) {
  const ir::Graph& g = *graph_;
  // Last instruction that reads each value; graph outputs are never released.
  std::vector<int> last_use(g.values.size(), -1);
  for (std::size_t n = 0; n < g.nodes.size(); ++n)
    for (int v : g.nodes[n].inputs) last_use[static_cast<std::size_t>(v)] = static_cast<int>(n);
  for (int v : g.outputs) last_use[static_cast<std::size_t>(v)] = static_cast<int>(g.nodes.size());
  std::vector<std::vector<int>> release_after(g.nodes.size());
  for (std::size_t v = 0; v < g.values.size(); ++v) {
    int lu = last_use[v];
    if (g.values[v].kind != ir::ValueKind::node_output) continue;
    if (lu < 0) lu = g.values[v].index;  // never read: release right after it is made
    if (lu < static_cast<int>(g.nodes.size())) release_after[static_cast<std::size_t>(lu)].push_back(static_cast<int>(v));
  }
  for (std::size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].kind == ir::ValueKind::constant) constants_.emplace_back(static_cast<int>(v), g.values[v].index);
  for (const Tensor& c : g.constants)
    if (c.impl().storage) constant_storage_.push_back(c.impl().storage.get());
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    const ir::Node& node = g.nodes[n];
    Instruction ins{};
    ins.op = node.op.get();
    ins.first_arg = static_cast<int>(args_.size());
    ins.num_args = static_cast<int>(node.inputs.size());
    args_.insert(args_.end(), node.inputs.begin(), node.inputs.end());
    ins.first_output = node.outputs.empty() ? 0 : node.outputs.front();
    ins.num_outputs = static_cast<int>(node.outputs.size());
    ins.strings = node.op->takes_strings();
    bool is_static = true;
    for (int o : node.outputs) is_static &= g.values[static_cast<std::size_t>(o)].spec.shape.is_static();
    for (int i : node.inputs) is_static &= g.values[static_cast<std::size_t>(i)].spec.shape.is_static();
    ins.first_spec = is_static ? static_cast<int>(specs_.size()) : -1;
    if (is_static)
      for (int o : node.outputs) specs_.push_back(g.values[static_cast<std::size_t>(o)].spec);
    ins.first_release = static_cast<int>(releases_.size());
    ins.num_release = static_cast<int>(release_after[n].size());
    releases_.insert(releases_.end(), release_after[n].begin(), release_after[n].end());
    instructions_.push_back(ins);
  }
}

void Plan::run(std::span<const Tensor> inputs, std::span<Tensor> outputs) const {
  if (inputs.size() != graph_->inputs.size() || outputs.size() != graph_->outputs.size())
    fail("exec", "graph '" + graph_->name + "' expects " + std::to_string(graph_->inputs.size()) + " inputs and " +
                     std::to_string(graph_->outputs.size()) + " outputs");
  // Kernels that call ef ops do so as their implementation: not recorded by a trace or tape.
  detail::KernelScope kernel;
  std::size_t n = graph_->values.size();
  if (n <= kStackSlots) {
    // Room for 64 slots on the stack, but only the graph's n are constructed and destroyed
    // (a whole std::array of 64 tensors cost a third of a small function's call).
    alignas(Tensor) std::byte raw[kStackSlots * sizeof(Tensor)];
    Tensor* slots = std::uninitialized_value_construct_n(reinterpret_cast<Tensor*>(raw), n) - n;
    struct Destroy {
      Tensor* p;
      std::size_t n;
      ~Destroy() { std::destroy_n(p, n); }
    } destroy{slots, n};
    execute(std::span<Tensor>(slots, n), inputs, outputs);
  } else {
    std::vector<Tensor> slots(n);
    execute(slots, inputs, outputs);
  }
}

void Plan::execute(std::span<Tensor> slots, std::span<const Tensor> inputs, std::span<Tensor> outputs) const {
  const ir::Graph& g = *graph_;
  for (std::size_t i = 0; i < g.inputs.size(); ++i) slots[static_cast<std::size_t>(g.inputs[i])] = inputs[i];
  for (auto [slot, index] : constants_)
    slots[static_cast<std::size_t>(slot)] = g.constants[static_cast<std::size_t>(index)];
  std::array<Tensor, kStackArgs> stack_args;
  std::vector<Tensor> heap_args;
  for (const Instruction& ins : instructions_) {
    std::span<Tensor> args;
    if (static_cast<std::size_t>(ins.num_args) <= kStackArgs) {
      args = std::span<Tensor>(stack_args.data(), static_cast<std::size_t>(ins.num_args));
    } else {
      heap_args.resize(static_cast<std::size_t>(ins.num_args));
      args = heap_args;
    }
    for (int a = 0; a < ins.num_args; ++a)
      args[static_cast<std::size_t>(a)] = slots[static_cast<std::size_t>(args_[static_cast<std::size_t>(ins.first_arg + a)])];
    std::span<Tensor> outs = slots.subspan(static_cast<std::size_t>(ins.first_output), static_cast<std::size_t>(ins.num_outputs));
    try {
      if (ins.first_spec >= 0) {
        std::span<const TensorSpec> specs(specs_.data() + ins.first_spec, static_cast<std::size_t>(ins.num_outputs));
        run_op(*ins.op, args, specs, outs);
        ef::detail::check_kernel_outputs(*ins.op, specs, outs);
      } else {
        std::vector<TensorSpec> specs = ins.op->infer(args);
        run_op(*ins.op, args, specs, outs);
        ef::detail::check_kernel_outputs(*ins.op, specs, outs);
      }
      if (ins.strings) ef::detail::keep_string_bytes(args, outs);
      ef::detail::after_op(*ins.op, outs);
    } catch (const Error& e) {
      // Name where the op came from, as errors at trace time do.
      const std::string& scope = g.nodes[static_cast<std::size_t>(&ins - instructions_.data())].scope;
      throw Error(e.kind(), std::string(e.what()) + " (while running function '" + g.name + "'" +
                                (scope.empty() ? "" : ", traced in layer " + scope) + ")");
    } catch (const std::exception& e) {
      // A kernel library's exception (or std::bad_alloc) leaves as an ef::Error naming the op
      // and its input shapes, as dispatch does for eager calls.
      const std::string& scope = g.nodes[static_cast<std::size_t>(&ins - instructions_.data())].scope;
      std::string shapes;
      for (const Tensor& a : args) shapes += (shapes.empty() ? "" : ", ") + (a.defined() ? a.spec().str() : std::string("undefined"));
      throw Error(kind_of(e),
                  "[" + std::string(ins.op->name()) + "] " +
                      (dynamic_cast<const std::bad_alloc*>(&e) ? "out of memory (" : "the kernel failed (") + e.what() +
                      "); inputs " + shapes + " (while running function '" + g.name + "'" +
                      (scope.empty() ? "" : ", traced in layer " + scope) + ")");
    }
    for (auto& a : args) a = Tensor();
    for (int r = 0; r < ins.num_release; ++r)
      slots[static_cast<std::size_t>(releases_[static_cast<std::size_t>(ins.first_release + r)])] = Tensor();
  }
  for (std::size_t i = 0; i < g.outputs.size(); ++i) outputs[i] = own_result(slots[static_cast<std::size_t>(g.outputs[i])]);
}

Tensor Plan::own_result(Tensor t) const {
  // A result that shares a constant's buffer (the constant itself, or a view an op handed
  // back) is copied: every caller gets a tensor of its own, not the graph's state.
  if (t.defined() && t.impl().storage)
    for (const Storage* s : constant_storage_)
      if (t.impl().storage.get() == s) return t.clone();
  return t;
}

}  // namespace ef::exec
