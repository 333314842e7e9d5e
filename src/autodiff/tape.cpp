#include <algorithm>

#include "autodiff/tape_impl.h"
#include "eagerflow/ops/ops.h"
#include "ops/output_checks.h"
#include "ops/primitives.h"

namespace ef {
namespace detail {
namespace {

void expect_defined(const Tensor& t, const std::string& what) {
  if (!t.defined()) fail("gradient", what + " is undefined");
}

// ef::grad differentiates with respect to real arguments only (as JAX's grad without
// holomorphic=True).
void expect_floating(const Tensor& t, const std::string& what) {
  expect_defined(t, what);
  if (!is_floating(t.dtype()))
    fail(kWrongType, "gradient",
         what + " is " + t.spec().str() + "; ef::grad differentiates floating arguments only (float32, float64)");
}

}  // namespace

TapeImpl::TapeImpl(bool persistent, bool watch_accessed_variables)
    : persistent_(persistent), watch_variables_(watch_accessed_variables) {
  link_tape(this);
}

TapeImpl::~TapeImpl() {
  // Unlink, also when tapes are not destroyed in reverse order of creation. A tape that was
  // abandoned (or whose thread ended) is no longer in any list this thread may touch.
  if (state.load(std::memory_order_acquire) == linked && owner == std::this_thread::get_id()) unlink_tape(this);
}

void TapeImpl::record(const Primitive& op, std::span<const Tensor> inputs, std::span<const Tensor> outputs) {
  if (std::none_of(inputs.begin(), inputs.end(), [&](const Tensor& t) { return tracks(t); })) return;
  // An op that handed back its input (a no-op cast, a sum_to with nothing to sum) is the
  // identity: the value keeps its identity and its gradient, and needs no entry.
  for (const auto& o : outputs)
    for (const auto& i : inputs)
      if (o.same_as(i)) return;
  for (const auto& o : outputs) tracked_.insert(o.impl_ptr().get());
  entries_.push_back({op.clone(), {inputs.begin(), inputs.end()}, {outputs.begin(), outputs.end()}});
}

void TapeImpl::variable_read(const std::shared_ptr<VariableState>& var, const Tensor& value) {
  bool watched = std::any_of(variable_reads_.begin(), variable_reads_.end(), [&](const auto& r) { return r.first.state_ptr() == var; });
  if (!watched && (!watch_variables_ || !var->trainable)) return;
  watch(value);
  for (const auto& [v, t] : variable_reads_)
    if (v.state_ptr() == var && t.same_as(value)) return;
  variable_reads_.emplace_back(Variable::from_state(var), value);
}

void TapeImpl::watch(const Tensor& t) {
  if (!t.defined()) fail("GradientTape", "cannot watch an undefined tensor");
  if (tracked_.insert(t.impl_ptr().get()).second) watched_.push_back(t);
}

void TapeImpl::watch_variable(const Variable& v) {
  if (!v.defined()) fail("GradientTape", "cannot watch an undefined variable");
  // Watching means: its reads are tracked. Record the current value as one read.
  Tensor value = v.state_ptr()->read();
  watch(value);
  variable_reads_.emplace_back(v, value);
}

std::vector<Variable> TapeImpl::watched_variables() const {
  std::vector<Variable> out;
  for (const auto& [v, t] : variable_reads_)
    if (std::none_of(out.begin(), out.end(), [&](const Variable& o) { return o.same_as(v); })) out.push_back(v);
  return out;
}

void TapeImpl::reset() {
  entries_.clear();
  tracked_.clear();
  watched_.clear();
  variable_reads_.clear();
  used_ = false;
}

std::vector<Tensor> TapeImpl::gradient(std::span<const Tensor> targets, std::span<const Tensor> output_gradients,
                                       std::span<const GradientSource> sources, UnconnectedGradients unconnected) {
  if (used_ && !persistent_)
    fail(ErrorCode::failed_precondition, "GradientTape",
         "a non-persistent tape computes gradients once; create it with persistent = true to call "
         "gradient() several times");
  if (!output_gradients.empty() && output_gradients.size() != targets.size())
    fail("GradientTape", "got " + std::to_string(output_gradients.size()) + " output gradients for " +
                             std::to_string(targets.size()) + " targets");
  // Gradients flow through floating and complex values only: an integer, bool or string target
  // contributes nothing and such a source gets none (unconnected), as in TF.
  for (std::size_t i = 0; i < targets.size(); ++i) expect_defined(targets[i], "the target");
  // The identities standing for each source: a tensor's handle, or every read of a variable.
  std::vector<std::vector<const TensorImpl*>> source_ids(sources.size());
  for (std::size_t s = 0; s < sources.size(); ++s) {
    const GradientSource& src = sources[s];
    std::string what = "source " + std::to_string(s);
    if (src.is_variable()) {
      const Variable& v = src.variable();
      if (!is_inexact(v.dtype())) continue;
      for (const auto& [var, t] : variable_reads_)
        if (var.same_as(v)) source_ids[s].push_back(t.impl_ptr().get());
    } else {
      expect_defined(src.tensor(), what);
      if (is_inexact(src.tensor().dtype())) source_ids[s].push_back(src.tensor().impl_ptr().get());
    }
  }
  used_ = true;
  // The backward pass is not recorded on this tape (outer tapes do record it).
  bool was_paused = paused;
  paused = true;
  struct Restore {
    bool& flag;
    bool value;
    ~Restore() { flag = value; }
  } restore{paused, was_paused};

  // Values that depend on a source: only they need cotangents.
  std::unordered_set<const TensorImpl*> reach;
  for (const auto& ids : source_ids) reach.insert(ids.begin(), ids.end());
  for (const Entry& e : entries_) {
    if (!e.op->is_differentiable()) continue;
    if (std::any_of(e.inputs.begin(), e.inputs.end(), [&](const Tensor& t) { return reach.count(t.impl_ptr().get()); }))
      for (const auto& o : e.outputs) reach.insert(o.impl_ptr().get());
  }

  std::unordered_map<const TensorImpl*, Tensor> grads;
  auto accumulate = [&](const Tensor& at, const Tensor& g) {
    Tensor& slot = grads[at.impl_ptr().get()];
    slot = slot.defined() ? add(slot, g) : g;
  };
  for (std::size_t i = 0; i < targets.size(); ++i)
    if (reach.count(targets[i].impl_ptr().get()) && is_inexact(targets[i].dtype()))
      accumulate(targets[i], output_gradients.empty() || !output_gradients[i].defined() ? ones_like(targets[i])
                                                                                           : output_gradients[i]);

  for (auto it = entries_.rbegin(); it != entries_.rend() && !grads.empty(); ++it) {
    const Entry& e = *it;
    if (!e.op->is_differentiable()) continue;
    std::vector<Tensor> cot(e.outputs.size());
    bool any = false;
    for (std::size_t o = 0; o < e.outputs.size(); ++o) {
      auto g = grads.find(e.outputs[o].impl_ptr().get());
      if (g != grads.end()) {
        cot[o] = g->second;
        any = true;
      }
    }
    if (!any) continue;
    std::vector<bool> needed(e.inputs.size());
    bool need_any = false;
    for (std::size_t i = 0; i < e.inputs.size(); ++i) {
      needed[i] = reach.count(e.inputs[i].impl_ptr().get()) && is_inexact(e.inputs[i].dtype());
      need_any |= needed[i];
    }
    if (!need_any) continue;
    if (!e.op->accepts_missing_cotangents())
      for (std::size_t o = 0; o < e.outputs.size(); ++o)
        if (!cot[o].defined()) cot[o] = zeros_like(e.outputs[o]);
    std::vector<Tensor> in_grads = e.op->vjp(e.inputs, e.outputs, cot, needed);
    check_vjp_outputs(*e.op, e.inputs, needed, in_grads);
    for (std::size_t i = 0; i < e.inputs.size() && i < in_grads.size(); ++i)
      if (needed[i] && in_grads[i].defined()) accumulate(e.inputs[i], in_grads[i]);
  }

  std::vector<Tensor> result(sources.size());
  for (std::size_t s = 0; s < sources.size(); ++s) {
    std::unordered_set<const TensorImpl*> seen;  // a variable read twice through one handle counts once
    for (const TensorImpl* id : source_ids[s]) {
      auto g = grads.find(id);
      if (g == grads.end() || !seen.insert(id).second) continue;
      result[s] = result[s].defined() ? add(result[s], g->second) : g->second;
    }
    if (!result[s].defined() && unconnected == UnconnectedGradients::zero)
      result[s] = sources[s].is_variable() ? zeros(sources[s].variable().shape(), sources[s].variable().dtype())
                                           : zeros_like(sources[s].tensor());
  }
  if (!persistent_) {
    entries_.clear();
    entries_.shrink_to_fit();
  }
  return result;
}

}  // namespace detail

// ---------------------------------------------------------------- GradientTape
GradientTape::GradientTape(bool persistent, bool watch_accessed_variables)
    : impl_(std::make_unique<detail::TapeImpl>(persistent, watch_accessed_variables)) {}
GradientTape::~GradientTape() {
  // Destroyed on another thread than the one it records on (or while that thread's tapes are
  // hidden by a trace): the thread it was made on deletes it when it next looks at its tapes.
  if (impl_ && !detail::retire_tape(impl_.get())) (void)impl_.release();
}

void GradientTape::watch(const Tensor& t) { impl_->watch(t); }
void GradientTape::watch(const Variable& v) { impl_->watch_variable(v); }
void GradientTape::watch(const std::vector<Tensor>& ts) {
  for (const auto& t : ts) impl_->watch(t);
}
void GradientTape::watch(const std::vector<Variable>& vs) {
  for (const auto& v : vs) impl_->watch_variable(v);
}

Tensor GradientTape::gradient(const Tensor& target, const Tensor& source, const GradientOptions& options) {
  return gradient(target, std::vector<GradientSource>{source}, options).at(0);
}
Tensor GradientTape::gradient(const Tensor& target, const Variable& source, const GradientOptions& options) {
  return gradient(target, std::vector<GradientSource>{source}, options).at(0);
}
std::vector<Tensor> GradientTape::gradient(const Tensor& target, const std::vector<Tensor>& sources,
                                           const GradientOptions& options) {
  return gradient(target, std::vector<GradientSource>(sources.begin(), sources.end()), options);
}
std::vector<Tensor> GradientTape::gradient(const Tensor& target, const std::vector<Variable>& sources,
                                           const GradientOptions& options) {
  return gradient(target, std::vector<GradientSource>(sources.begin(), sources.end()), options);
}
std::vector<Tensor> GradientTape::gradient(const Tensor& target, const std::vector<GradientSource>& sources,
                                           const GradientOptions& options) {
  Tensor og = options.output_gradient;
  return impl_->gradient(std::span<const Tensor>(&target, 1), og.defined() ? std::span<const Tensor>(&og, 1) : std::span<const Tensor>(),
                         sources, options.unconnected);
}
std::vector<Tensor> GradientTape::gradient(const std::vector<Tensor>& targets, const std::vector<GradientSource>& sources,
                                           const std::vector<Tensor>& output_gradients, UnconnectedGradients unconnected) {
  return impl_->gradient(targets, output_gradients, sources, unconnected);
}

std::vector<Variable> GradientTape::watched_variables() const { return impl_->watched_variables(); }
void GradientTape::reset() { impl_->reset(); }

GradientTape::Pause::Pause(GradientTape& tape) : tape_(tape), was_paused_(tape.impl_->paused) { tape.impl_->paused = true; }
GradientTape::Pause::~Pause() { tape_.impl_->paused = was_paused_; }

// ---------------------------------------------------------------- ef::grad helpers
namespace detail {

void prepare_grad_args(GradientTape& tape, std::span<Tensor> args, const std::vector<int>& argnums) {
  if (argnums.empty()) fail("grad", "argnums is empty");
  for (std::size_t i = 0; i < argnums.size(); ++i) {
    int a = argnums[i];
    if (a < 0 || a >= static_cast<int>(args.size()))
      fail("grad", "argnum " + std::to_string(a) + " is out of range for a function of " + std::to_string(args.size()) +
                       " arguments");
    for (std::size_t j = 0; j < i; ++j)
      if (argnums[j] == a) fail("grad", "argnum " + std::to_string(a) + " is listed twice");
    Tensor& x = args[static_cast<std::size_t>(a)];
    expect_floating(x, "argument " + std::to_string(a));
  }
  // Each argument gets its own handle: the same tensor passed twice gets two gradients.
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!args[i].defined()) fail("grad", "argument " + std::to_string(i) + " is undefined");
    for (std::size_t j = 0; j < i; ++j)
      if (args[i].same_as(args[j])) args[i] = identity(args[i]);
  }
  for (int a : argnums) tape.watch(args[static_cast<std::size_t>(a)]);
}

std::vector<Tensor> finish_grad(GradientTape& tape, const Tensor& value, std::span<const Tensor> args,
                                const std::vector<int>& argnums) {
  if (!value.defined()) fail("grad", "the function returned an undefined tensor");
  if (!(value.rank() == 0 || (value.shape().is_static() && value.num_elements() == 1)))
    fail("grad", "the function must return a scalar, got " + value.spec().str() +
                     " (reduce it, e.g. with ef::sum, or use GradientTape for non-scalar targets)");
  std::vector<GradientSource> sources;
  for (int a : argnums) sources.emplace_back(args[static_cast<std::size_t>(a)]);
  return tape.gradient(value, sources, GradientOptions{UnconnectedGradients::zero, {}});
}

}  // namespace detail
}  // namespace ef
