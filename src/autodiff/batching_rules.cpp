// How vmap runs an op on a batch: the rule the op's record brings (eagerflow/ops/op_rules.h), or,
// without one, once per example (slice, apply, stack): correct, but slow. The rules themselves
// live beside their ops.
#include "autodiff/vmap_internal.h"
#include "eagerflow/ops/ops.h"
#include "ops/rules/batching.h"

namespace ef::detail {
namespace {

// Bounded: a long-running program that never reads the log must not grow it.
constexpr std::size_t kMaxLoggedFallbacks = 256;
thread_local std::vector<std::string> fallback_log;

// The op once per example: slice every batched input, apply, stack the results.
std::vector<Batched> per_example(const Primitive& op, std::span<const Batched> in, std::int64_t batch) {
  if (batch == kDynamic) batching::need_static_batch(op, "it has no batching rule and runs once per example");
  if (batch == 0)
    fail("vmap", std::string("op '") + op.name() + "' has no batching rule and runs once per example; a batch of size 0 has none");
  if (fallback_log.size() >= kMaxLoggedFallbacks) fallback_log.erase(fallback_log.begin());
  fallback_log.emplace_back(op.name());
  std::vector<std::vector<Tensor>> results;
  for (std::int64_t i = 0; i < batch; ++i) {
    std::vector<Tensor> xs;
    for (const auto& b : in) xs.push_back(b.batched ? batching::example(b.t, i) : b.t);
    std::vector<Tensor> outs = dispatch(op, xs);
    results.resize(outs.size());
    for (std::size_t k = 0; k < outs.size(); ++k) results[k].push_back(std::move(outs[k]));
  }
  std::vector<Batched> out;
  for (auto& r : results) out.push_back({stack(r, 0), true});
  return out;
}

}  // namespace

std::vector<Batched> apply_batching_rule(const Primitive& op, std::span<const Batched> in,
                                         std::span<const TensorSpec> specs, std::int64_t batch) {
  const OpRules* rules = op_rules(op);
  if (rules && rules->batching)
    if (BatchingResult r = rules->batching(op, BatchingCall{in, specs, batch})) return std::move(*r);
  return per_example(op, in, batch);
}

std::vector<std::string> take_vmap_fallback_log() {
  std::vector<std::string> log;
  log.swap(fallback_log);
  return log;
}

}  // namespace ef::detail
