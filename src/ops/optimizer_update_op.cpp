#include "ops/optimizer_update_op.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "eagerflow/variable.h"
#include "kernels/cpu/flush_denormals.h"
#include "kernels/cpu/parallel.h"
#include "ops/primitives.h"
#include "ops/rules/builtin_rules.h"
#include "eagerflow/ops/op_rules.h"

namespace ef {
namespace {

using cpu::UpdateRule;

// The kernel reads four tensors and writes three per element: worth a second thread from
// about 32K elements (a 512 x 64 kernel), not for biases.
constexpr std::int64_t kCostPerElement = 2;

std::size_t slots_of(UpdateRule r) {
  switch (r) {
    case UpdateRule::sgd: return 0;
    case UpdateRule::momentum:
    case UpdateRule::nesterov:
    case UpdateRule::rmsprop: return 1;
    case UpdateRule::adam:
    case UpdateRule::rmsprop_momentum: return 2;
  }
  return 0;
}

// Buffers allocated by this op carry this deleter: how the op knows a buffer is its own
// (allocator memory it may write over), unlike a NumPy array a tensor wraps or any other.
struct OwnedByUpdate {
  void operator()(Storage* s) const { delete s; }
};

Tensor owned_empty(const TensorSpec& spec) {
  auto impl = new_tensor_impl();
  impl->dtype = spec.dtype;
  impl->shape = spec.shape;
  impl->storage = std::shared_ptr<Storage>(new Storage(static_cast<std::size_t>(spec.shape.num_elements()) * size_of(spec.dtype)),
                                           OwnedByUpdate{});
  return Tensor(std::move(impl));
}

// True when `t` (a variable's value, its mutex held) may be written over: the variable holds
// the only handle, no view shares the buffer, and the buffer is this op's own.
bool writable_in_place(const Tensor& t) {
  const std::shared_ptr<TensorImpl>& impl = t.impl_ptr();
  return impl.use_count() == 1 && impl->storage && impl->storage.use_count() == 1 && impl->offset == 0 &&
         std::get_deleter<OwnedByUpdate>(impl->storage) != nullptr;
}

double scalar_of(const Tensor& t) {
  switch (t.dtype()) {
    case DType::float32: return t.data<float>()[0];
    case DType::float64: return t.data<double>()[0];
    case DType::int32: return t.data<std::int32_t>()[0];
    case DType::int64: return static_cast<double>(t.data<std::int64_t>()[0]);
    default: return NAN;  // rejected by infer
  }
}

// Runs `body` with every variable's mutex held, each through VariableState::update (so the new
// value is checked and swapped in as an assignment's), nested in `order`.
template <class Body>
void update_together(std::span<VariableState* const> order, std::span<const std::size_t> index, std::size_t i,
                     std::array<const Tensor*, 3>& current, std::array<Tensor, 3>& next, Body& body) {
  if (i == order.size()) return body();
  order[i]->update([&](const Tensor& value) {
    current[index[i]] = &value;
    update_together(order, index, i + 1, current, next, body);
    return next[index[i]];
  });
}

template <class T>
cpu::UpdateScalars<T> scalars_for(const UpdateHyperparameters& h, double lr, double step) {
  cpu::UpdateScalars<T> s;
  s.lr = static_cast<T>(lr);
  s.momentum = static_cast<T>(h.momentum);
  s.epsilon = static_cast<T>(h.epsilon);
  if (h.rule == UpdateRule::adam) {
    s.beta_1 = static_cast<T>(h.beta_1);
    s.one_minus_beta_1 = static_cast<T>(1.0 - h.beta_1);
    s.beta_2 = static_cast<T>(h.beta_2);
    s.one_minus_beta_2 = static_cast<T>(1.0 - h.beta_2);
    // Keras' alpha = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t), once per step (in double).
    s.alpha = static_cast<T>(lr * std::sqrt(1.0 - std::pow(h.beta_2, step)) / (1.0 - std::pow(h.beta_1, step)));
    s.weight_decay = static_cast<T>(h.weight_decay);
    s.decay = h.weight_decay != 0.0;
  } else if (h.rule == UpdateRule::rmsprop || h.rule == UpdateRule::rmsprop_momentum) {
    s.beta_2 = static_cast<T>(h.rho);
    s.one_minus_beta_2 = static_cast<T>(1.0 - h.rho);
  }
  return s;
}

template <class T>
void run(const UpdateHyperparameters& h, const cpu::UpdateScalars<T>& s, const std::array<const Tensor*, 3>& current,
         std::array<Tensor, 3>& next, const Tensor& grad, std::size_t count) {
  cpu::UpdateBuffers<T> b;
  b.grad = grad.data<T>().data();
  b.var = current[0]->data<T>().data();
  b.var_out = next[0].mutable_data<T>().data();
  if (count > 1) {
    b.slot0 = current[1]->data<T>().data();
    b.slot0_out = next[1].mutable_data<T>().data();
  }
  if (count > 2) {
    b.slot1 = current[2]->data<T>().data();
    b.slot1_out = next[2].mutable_data<T>().data();
  }
  cpu::parallel_for(grad.num_elements(), kCostPerElement,
                    [&](std::int64_t begin, std::int64_t end) {
                      cpu::FlushDenormals flush;  // as TF's kernels: a converging model's state turns subnormal
                      cpu::apply_update(h.rule, s, b, begin, end);
                    });
}

}  // namespace

ApplyUpdate::ApplyUpdate(UpdateHyperparameters h, std::shared_ptr<VariableState> var,
                         std::vector<std::shared_ptr<VariableState>> slots)
    : h_(h) {
  auto in = [&](const char* what, double v, double low, double high, bool closed) {
    if (!(v >= low && (closed ? v <= high : v < high)))
      fail(name(), std::string(what) + " must be in [" + std::to_string(low) + ", " + std::to_string(high) + (closed ? "]" : ")") +
                       ", got " + std::to_string(v));
  };
  auto non_negative = [&](const char* what, double v) {
    if (!(std::isfinite(v) && v >= 0)) fail(name(), std::string(what) + " must be a finite number >= 0, got " + std::to_string(v));
  };
  switch (h.rule) {
    case UpdateRule::sgd: break;
    case UpdateRule::momentum:
    case UpdateRule::nesterov: in("momentum", h.momentum, 0.0, 1.0, true); break;
    case UpdateRule::adam:
      in("beta_1", h.beta_1, 0.0, 1.0, false);
      in("beta_2", h.beta_2, 0.0, 1.0, false);
      non_negative("epsilon", h.epsilon);
      non_negative("weight_decay", h.weight_decay);
      break;
    case UpdateRule::rmsprop_momentum: in("momentum", h.momentum, 0.0, 1.0, true); [[fallthrough]];
    case UpdateRule::rmsprop:
      in("rho", h.rho, 0.0, 1.0, false);
      non_negative("epsilon", h.epsilon);
      break;
  }
  if (!var) fail(name(), "the variable is undefined");
  if (slots.size() != slots_of(h.rule))
    fail(name(), "takes " + std::to_string(slots_of(h.rule)) + " slot variables, got " + std::to_string(slots.size()));
  if (var->spec.dtype != DType::float32 && var->spec.dtype != DType::float64)
    fail(kWrongType, name(),
         "variable '" + var->name + "' is " + var->spec.str() + ": optimizers update float32 or float64 variables");
  vars_.push_back(std::move(var));
  for (auto& s : slots) {
    if (!s) fail(name(), "a slot variable of '" + vars_[0]->name + "' is undefined");
    if (s->spec.dtype != vars_[0]->spec.dtype || s->spec.shape != vars_[0]->spec.shape)
      fail(name(), "slot '" + s->name + "' " + s->spec.str() + " does not fit variable '" + vars_[0]->name + "' " +
                       vars_[0]->spec.str());
    for (const auto& v : vars_)
      if (v == s) fail(name(), "variable '" + s->name + "' is passed twice (the variable and its slots must be distinct)");
    vars_.push_back(std::move(s));
  }
}

const char* ApplyUpdate::name() const {
  switch (h_.rule) {
    case UpdateRule::sgd: return "apply_sgd";
    case UpdateRule::momentum:
    case UpdateRule::nesterov: return "apply_momentum";
    case UpdateRule::adam: return h_.weight_decay != 0.0 ? "apply_adamw" : "apply_adam";
    case UpdateRule::rmsprop:
    case UpdateRule::rmsprop_momentum: return "apply_rmsprop";
  }
  return "apply_update";
}

OpParams ApplyUpdate::parameters() const {
  OpParams p;
  p.add("var", Word{vars_[0]->name});
  static const char* const adam_slots[] = {"m", "v"};
  static const char* const rms_slots[] = {"velocity", "momentum"};
  for (std::size_t i = 1; i < vars_.size(); ++i) {
    const char* slot = h_.rule == UpdateRule::adam ? adam_slots[i - 1]
                       : (h_.rule == UpdateRule::rmsprop || h_.rule == UpdateRule::rmsprop_momentum) ? rms_slots[i - 1]
                                                                                                      : "momentum_slot";
    p.add(slot, Word{vars_[i]->name});
  }
  switch (h_.rule) {
    case UpdateRule::sgd: break;
    case UpdateRule::momentum:
    case UpdateRule::nesterov: p.add("momentum", h_.momentum).add_flag("nesterov", h_.rule == UpdateRule::nesterov); break;
    case UpdateRule::adam:
      p.add("beta_1", h_.beta_1).add("beta_2", h_.beta_2).add("epsilon", h_.epsilon);
      if (h_.weight_decay != 0.0) p.add("weight_decay", h_.weight_decay);
      break;
    case UpdateRule::rmsprop:
    case UpdateRule::rmsprop_momentum:
      p.add("rho", h_.rho).add("epsilon", h_.epsilon);
      if (h_.rule == UpdateRule::rmsprop_momentum) p.add("momentum", h_.momentum);
      break;
  }
  return p;
}

std::vector<TensorSpec> ApplyUpdate::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, num_inputs());
  const TensorSpec& spec = vars_[0]->spec;
  const Tensor& g = in[0];
  if (g.dtype() != spec.dtype || !g.shape().accepts(spec.shape) || (g.shape().is_static() && g.shape() != spec.shape))
    fail(name(), "gradient " + g.spec().str() + " does not fit variable '" + vars_[0]->name + "' " + spec.str());
  const Tensor& lr = in[1];
  if (lr.rank() != 0 || (lr.dtype() != DType::float32 && lr.dtype() != DType::float64))
    fail(name(), "the learning rate must be a float32 or float64 scalar, got " + lr.spec().str());
  if (num_inputs() == 3) {
    const Tensor& step = in[2];
    if (step.rank() != 0 || !(step.dtype() == DType::float32 || step.dtype() == DType::float64 ||
                              step.dtype() == DType::int32 || step.dtype() == DType::int64))
      fail(name(), "the step must be a float or integer scalar, got " + step.spec().str());
  }
  return {};
}

void ApplyUpdate::eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor>) const {
  const TensorSpec& spec = vars_[0]->spec;
  const Tensor& grad = in[0];
  if (grad.shape() != spec.shape)
    fail(name(), "gradient " + grad.spec().str() + " does not fit variable '" + vars_[0]->name + "' " + spec.str());
  double lr = scalar_of(in[1]);
  double step = num_inputs() == 3 ? scalar_of(in[2]) : 1.0;
  // Step 0 would divide by 1 - beta_1^0 = 0: every weight NaN.
  if (!(step >= 1.0)) fail(name(), "the step counts from 1, got " + std::to_string(step));
  if (spec.shape.num_elements() == 0) return;
  // Nested locks in address order: two updates sharing a variable never wait on each other in a
  // cycle. Under the locks, a value read by anyone else has a second handle: never written over.
  const std::size_t count = vars_.size();
  std::array<VariableState*, 3> order{};
  std::array<std::size_t, 3> index{0, 1, 2};
  // At most three: an insertion sort (std::sort's unrolled insertion pass reads past a 3-array
  // in GCC 12's eyes, -Warray-bounds, though it never does).
  for (std::size_t i = 1; i < count; ++i)
    for (std::size_t j = i; j > 0 && vars_[index[j]].get() < vars_[index[j - 1]].get(); --j)
      std::swap(index[j], index[j - 1]);
  for (std::size_t i = 0; i < count; ++i) order[i] = vars_[index[i]].get();
  std::array<const Tensor*, 3> current{};
  std::array<Tensor, 3> next;
  auto body = [&] {
    std::array<bool, 3> in_place{};
    for (std::size_t k = 0; k < count; ++k) in_place[k] = writable_in_place(*current[k]);  // before any handle is copied
    for (std::size_t k = 0; k < count; ++k) next[k] = in_place[k] ? *current[k] : owned_empty(spec);
    if (spec.dtype == DType::float32) run<float>(h_, scalars_for<float>(h_, lr, step), current, next, grad, count);
    else run<double>(h_, scalars_for<double>(h_, lr, step), current, next, grad, count);
  };
  update_together(std::span<VariableState* const>(order.data(), count), std::span<const std::size_t>(index.data(), count), 0,
                  current, next, body);
}

std::vector<const VariableState*> variables_written(const Primitive& op) {
  if (auto* a = dynamic_cast<const AssignVariable*>(&op)) return {a->variable().get()};
  std::vector<const VariableState*> out;
  if (auto* u = dynamic_cast<const ApplyUpdate*>(&op))
    for (const auto& v : u->variables()) out.push_back(v.get());
  return out;
}

void detail::register_optimizer_update_rules() {
  register_op_rules<ApplyUpdate>({
      .batching = [](const ApplyUpdate& u, BatchingCall) -> BatchingResult {
        fail(ErrorCode::unimplemented, "vmap",
             std::string("cannot apply an optimizer update (") + u.name() + ") to variable '" + u.variables()[0]->name +
                 "' with a batched gradient (each example would update it again); update outside ef::vmap");
      },
      .onnx_unsupported = "an optimizer update: exported graphs run inference only",
  });
}

}  // namespace ef
