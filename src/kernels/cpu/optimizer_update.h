#pragma once
// The fused optimizer updates (src/ops/optimizer_update_op.cpp): one pass over a variable, its
// gradient and its slots per step. Each rule is Keras' formula written per element in the same
// order of operations as the composed ops it replaces (m * beta_1 + g * (1 - beta_1), ...),
// compiled per instruction set without FMA contraction: an element's result depends only on
// its inputs, so every instruction set, thread count and split of the tensor gives the same bits.
#include <cstdint>

namespace ef::cpu {

enum class UpdateRule : int {
  sgd,               // var - g * lr
  momentum,          // m = m * momentum - g * lr; var + m
  nesterov,          // m as momentum; var + (m * momentum - g * lr)
  adam,              // Adam with bias correction folded into alpha; optional decoupled decay (AdamW)
  rmsprop,           // v = v * rho + g^2 * (1 - rho); var - (lr * g) / sqrt(v + epsilon)
  rmsprop_momentum,  // the same increment into m = m * momentum + inc; var - m
};

// The per-step scalars, in the variable's dtype (what the composed ops multiplied by).
template <class T>
struct UpdateScalars {
  T lr{}, momentum{};
  T beta_1{}, one_minus_beta_1{}, beta_2{}, one_minus_beta_2{}, alpha{};  // adam; rmsprop: beta_2 = rho
  T epsilon{};
  T weight_decay{};  // adam: var - (var * lr) * weight_decay first, when `decay`
  bool decay = false;
};

// Where a rule reads and writes: the variable and up to two slots (Adam: m, v; RMSprop: v, m;
// momentum: m). An output may be its input (the update in place).
template <class T>
struct UpdateBuffers {
  const T* var = nullptr;
  const T* slot0 = nullptr;
  const T* slot1 = nullptr;
  const T* grad = nullptr;
  T* var_out = nullptr;
  T* slot0_out = nullptr;
  T* slot1_out = nullptr;
};

// Elements [begin, end) on the widest vector code this CPU runs (EF_ISA caps it, as for the
// elementwise kernels).
void apply_update(UpdateRule rule, const UpdateScalars<float>& s, const UpdateBuffers<float>& b, std::int64_t begin,
                  std::int64_t end);
void apply_update(UpdateRule rule, const UpdateScalars<double>& s, const UpdateBuffers<double>& b, std::int64_t begin,
                  std::int64_t end);

namespace update_isa {
// One instruction set's loops (optimizer_update.inc), for the dispatcher and for tests.
#define EF_UPDATE_DECLARE(NS)                                                                                          \
  namespace NS {                                                                                                       \
  void apply(UpdateRule, const UpdateScalars<float>&, const UpdateBuffers<float>&, std::int64_t, std::int64_t);      \
  void apply(UpdateRule, const UpdateScalars<double>&, const UpdateBuffers<double>&, std::int64_t, std::int64_t);    \
  }
EF_UPDATE_DECLARE(baseline)
EF_UPDATE_DECLARE(avx2)
#undef EF_UPDATE_DECLARE
}  // namespace update_isa

}  // namespace ef::cpu
