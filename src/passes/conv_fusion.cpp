// Convolution fusion: conv2d -> add(bias) -> activation becomes one fused_conv2d; a filter
// gradient with the bias gradient taken from the same dy becomes one
// conv2d_backprop_filter_bias; relu's gradient after max pooling's becomes one
// max_pool2d_relu_grad (src/ops/fused_conv.h). In a CNN train step this drops two passes over
// every convolution's output forward (the add and the activation) and two backward (the
// bias gradient's reduction and relu's gradient).
#include <map>

#include "eagerflow/passes/passes.h"
#include "kernels/cpu/gemm.h"
#include "ops/activation_grad_op.h"
#include "ops/fused_conv.h"
#include "ops/primitives.h"
#include "passes/rebuild.h"

namespace ef::passes {

bool detail::has_conv_fusion_candidates(const ir::Graph& g) {
  for (const ir::Node& node : g.nodes) {
    const Primitive* op = node.op.get();
    if (dynamic_cast<const Conv2D*>(op) || dynamic_cast<const Conv2DBackpropFilter*>(op)) return true;
    auto* grad = dynamic_cast<const ActivationGrad*>(op);
    if (grad && grad->kind() == UnaryKind::relu) return true;
  }
  return false;
}

namespace {

// The dtypes the fused ops compute: float32, and bfloat16 where the convolutions run on the
// CPU's bfloat16 instructions (then the fused convolution rounds once where the chain rounded
// after the convolution and again after the bias add: within bfloat16's rounding of the chain).
bool fusible_dtype(DType d) { return d == DType::float32 || (d == DType::bfloat16 && cpu::native_bfloat16()); }

}  // namespace

std::shared_ptr<ir::Graph> fuse_conv(const ir::Graph& g) {
  std::vector<int> uses(g.values.size(), 0), reader(g.values.size(), -1), producer(g.values.size(), -1);
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    for (int v : g.nodes[n].inputs) {
      ++uses[static_cast<std::size_t>(v)];
      reader[static_cast<std::size_t>(v)] = static_cast<int>(n);
    }
    for (int v : g.nodes[n].outputs) producer[static_cast<std::size_t>(v)] = static_cast<int>(n);
  }
  for (int v : g.outputs) uses[static_cast<std::size_t>(v)] += 2;
  auto sole_reader = [&](int v) { return uses[static_cast<std::size_t>(v)] == 1 ? reader[static_cast<std::size_t>(v)] : -1; };
  auto spec = [&](int v) -> const TensorSpec& { return g.values[static_cast<std::size_t>(v)].spec; };
  auto node_op = [&](int n) { return g.nodes[static_cast<std::size_t>(n)].op.get(); };

  std::vector<bool> keep(g.nodes.size(), true);
  std::map<std::size_t, ir::Node> overrides;
  // Forward: conv2d [-> add(bias [F])] [-> relu/sigmoid/tanh].
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    const ir::Node& conv = g.nodes[n];
    auto* conv_op = dynamic_cast<const Conv2D*>(conv.op.get());
    if (!conv_op || !fusible_dtype(spec(conv.inputs[0]).dtype)) continue;
    const DType dtype = spec(conv.inputs[0]).dtype;
    std::int64_t filters = spec(conv.inputs[1]).shape[3];
    std::vector<int> inputs = conv.inputs;
    std::vector<std::size_t> chain{n};
    int value = conv.outputs[0];
    bool has_bias = false;
    int r = sole_reader(value);
    auto* add_op = r >= 0 ? dynamic_cast<const Binary*>(node_op(r)) : nullptr;
    if (add_op && add_op->kind() == BinaryKind::add) {
      const ir::Node& add = g.nodes[static_cast<std::size_t>(r)];
      int bias = add.inputs[0] == value ? add.inputs[1] : add.inputs[0];
      const TensorSpec& b = spec(bias);
      if (add.inputs[0] != add.inputs[1] && b.dtype == dtype && b.shape == Shape{filters} && filters != kDynamic &&
          spec(add.outputs[0]).shape == spec(value).shape) {
        inputs.push_back(bias);
        has_bias = true;
        chain.push_back(static_cast<std::size_t>(r));
        value = add.outputs[0];
      }
    }
    std::optional<UnaryKind> activation;
    r = sole_reader(value);
    auto* act = r >= 0 ? dynamic_cast<const Unary*>(node_op(r)) : nullptr;
    if (act && conv_fusible_activation(act->kind()) && spec(g.nodes[static_cast<std::size_t>(r)].outputs[0]).dtype == dtype) {
      activation = act->kind();
      chain.push_back(static_cast<std::size_t>(r));
    }
    if (chain.size() == 1) continue;
    std::size_t last = chain.back();  // (the chain's inputs all come before its last node)
    for (std::size_t k : chain)
      if (k != last) keep[k] = false;
    overrides[last] = ir::Node{std::make_shared<FusedConv2D>(conv_op->params(), has_bias, activation), inputs,
                               g.nodes[last].outputs, g.nodes[last].scope};
  }
  // Backward: conv2d_backprop_filter(x, dy, w) and sum_to(dy, bias [F]) -> one node with both
  // outputs, at the earlier of the two places when every input is made before it.
  std::map<int, std::vector<std::size_t>> bias_sums;  // dy -> sum_to nodes over it
  for (std::size_t n = 0; n < g.nodes.size(); ++n)
    if (dynamic_cast<const SumTo*>(g.nodes[n].op.get())) bias_sums[g.nodes[n].inputs[0]].push_back(n);
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    const ir::Node& f = g.nodes[n];
    auto* f_op = dynamic_cast<const Conv2DBackpropFilter*>(f.op.get());
    if (!f_op || !keep[n] || overrides.count(n)) continue;
    int dy = f.inputs[1];
    auto it = bias_sums.find(dy);
    if (it == bias_sums.end() || !fusible_dtype(spec(dy).dtype) || spec(dy).shape.rank() != 4) continue;
    std::int64_t filters = spec(f.inputs[2]).shape[3];
    for (std::size_t s : it->second) {
      const ir::Node& sum = g.nodes[s];
      if (!keep[s] || overrides.count(s) || spec(sum.outputs[0]).shape != Shape{filters} || filters == kDynamic ||
          spec(dy).shape[3] != filters)
        continue;
      std::size_t at = std::min(n, s);
      bool ready = true;
      for (int v : f.inputs) ready &= producer[static_cast<std::size_t>(v)] < static_cast<int>(at);
      if (!ready) continue;
      keep[std::max(n, s)] = false;
      overrides[at] = ir::Node{std::make_shared<Conv2DBackpropFilterBias>(f_op->params()), f.inputs,
                               {f.outputs[0], sum.outputs[0]}, f.scope};
      break;
    }
  }
  // Backward through relu -> max pooling: relu_grad(y, max_pool2d_grad(y, dy)) -> one pass.
  for (std::size_t n = 0; n < g.nodes.size(); ++n) {
    const ir::Node& rg = g.nodes[n];
    auto* rg_op = dynamic_cast<const ActivationGrad*>(rg.op.get());
    if (!rg_op || rg_op->kind() != UnaryKind::relu || !keep[n] || overrides.count(n)) continue;
    int p = producer[static_cast<std::size_t>(rg.inputs[1])];
    if (p < 0 || sole_reader(rg.inputs[1]) != static_cast<int>(n)) continue;
    const ir::Node& pg = g.nodes[static_cast<std::size_t>(p)];
    auto* pg_op = dynamic_cast<const Pool2DGrad*>(pg.op.get());
    if (!pg_op || !pg_op->params().max || !keep[static_cast<std::size_t>(p)] || overrides.count(static_cast<std::size_t>(p)) ||
        pg.inputs[0] != rg.inputs[0] || !fusible_dtype(spec(rg.inputs[0]).dtype) ||
        spec(rg.outputs[0]).shape != spec(rg.inputs[0]).shape)
      continue;
    keep[static_cast<std::size_t>(p)] = false;
    overrides[n] = ir::Node{std::make_shared<MaxPool2DReluGrad>(pg_op->params()), pg.inputs, rg.outputs, rg.scope};
  }
  return detail::rebuild(g, keep, detail::identity_map(g.values.size()), overrides);
}

}  // namespace ef::passes
