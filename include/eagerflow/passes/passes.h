#pragma once
// Graph rewrites run after tracing. Each can be switched off through PassOptions.
#include "eagerflow/trace/graph.h"

namespace ef::passes {

struct PassOptions {
  // Calls of traced graphs (a loaded model, a function called under a tape) become the nodes
  // of the graph they call, when the argument specs match the graph's exactly.
  bool inline_calls = true;
  bool dead_code = true;       // drop nodes whose results are unused (effects are kept)
  bool common_subexpr = true;  // merge identical pure nodes on identical inputs
  // matmul -> add(bias) -> relu/sigmoid/tanh/gelu becomes one oneDNN matmul with a fused
  // bias and eltwise post-op. Bit-equal to the unfused ops with no activation or relu; within
  // float32 rounding (a few ulp) for sigmoid, tanh and gelu, whose oneDNN kernels differ.
  bool fuse_dense = true;
  // conv2d -> add(bias) -> relu/sigmoid/tanh becomes one fused_conv2d (bias inside oneDNN's
  // convolution, the activation over its output), and a filter gradient with its bias
  // gradient (sum_to over the same dy) one oneDNN backward-weights primitive. Within float32
  // rounding of the unfused ops (oneDNN sums the bias gradient in its own order).
  bool fuse_conv = true;
  // Runs of consecutive float elementwise ops on one static shape become one blocked loop
  // (fewer passes over memory). Runs the same scalar math: bit-equal to the unfused ops.
  bool fuse_elementwise = true;
};

// Returns a new graph; the input graph is left as traced.
std::shared_ptr<ir::Graph> optimize(const ir::Graph& g, const PassOptions& options = {});

// The IR verifier between passes: optimize checks the graph it is given and each pass's result
// (every value defined before use, node types agreeing with their ops' shape rules, sub-graphs
// too; src/trace/verify.h) and throws an ef::Error naming the pass and the broken node. Graphs
// are optimized when they are made (a trace, a loaded model, a gradient), never on replay.
// On by default in builds without NDEBUG (the asan and tsan presets) and off in release;
// EF_VERIFY_IR=1 (or 0) in the environment overrides that; set_verify_passes overrides both
// (the test programs turn it on).
void set_verify_passes(bool on);
bool verify_passes();
std::shared_ptr<ir::Graph> eliminate_dead_code(const ir::Graph& g);
std::shared_ptr<ir::Graph> inline_calls(const ir::Graph& g);
std::shared_ptr<ir::Graph> eliminate_common_subexpressions(const ir::Graph& g);
std::shared_ptr<ir::Graph> fuse_dense(const ir::Graph& g);
std::shared_ptr<ir::Graph> fuse_conv(const ir::Graph& g);  // src/passes/conv_fusion.cpp
std::shared_ptr<ir::Graph> fuse_elementwise(const ir::Graph& g);

}  // namespace ef::passes
