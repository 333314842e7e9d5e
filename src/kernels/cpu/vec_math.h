#pragma once
// Vectorized float32/float64 elementwise math, compiled once per instruction set (baseline
// SSE2, AVX2+FMA, AVX-512) and chosen once at run time from what the CPU offers. The
// transcendental functions come from SLEEF; each element's result depends only on its value,
// never on its position or on how a loop is split, so eager kernels, fused kernels and every
// thread count give bit-identical numbers on one machine.
//
// Accuracy kept (SLEEF's bounds, checked by tests/vec_math_test.cpp against libm in double):
// exp, log, erf, pow: 1 ulp; tanh, sin, cos: 3.5 ulp; sqrt exact; sigmoid and rsqrt are composed
// from these and from IEEE division; float32 gelu is its own fit (about 1 ulp), float64 gelu
// comes from erfc.
#include <cstdint>
#include <type_traits>

#include "kernels/cpu/elementwise_kinds.h"

namespace ef::cpu::vec {

enum class Isa { baseline, avx2, avx512 };

struct Kernels {
  Isa isa;
  const char* name;
  // out[i] = f(x[i]) for every float kind except logical_not.
  void (*unary_f32)(UnaryKind, const float* x, float* out, std::int64_t n);
  void (*unary_f64)(UnaryKind, const double* x, double* out, std::int64_t n);
  // out[r * cols + i] = f(a[r * a_row + i * a_step], b[r * b_row + i * b_step]) for r < rows,
  // i < cols; steps are 0 (a scalar along the row) or 1. One call covers every row of a
  // broadcast (a bias add, a column scale). Arithmetic kinds only (add .. minimum).
  void (*binary_f32)(BinaryKind, const float* a, std::int64_t a_row, std::int64_t a_step, const float* b,
                     std::int64_t b_row, std::int64_t b_step, float* out, std::int64_t rows, std::int64_t cols);
  void (*binary_f64)(BinaryKind, const double* a, std::int64_t a_row, std::int64_t a_step, const double* b,
                     std::int64_t b_row, std::int64_t b_step, double* out, std::int64_t rows, std::int64_t cols);
  // out[i] = x[i] compared with y (steps as above); comparisons only.
  void (*compare_f32)(BinaryKind, const float* a, std::int64_t a_step, const float* b, std::int64_t b_step,
                      bool* out, std::int64_t n);
  // out[i] = c[i * cs] ? a[i * as] : b[i * bs]; steps 0 or 1. Exact (a select, not math).
  void (*where_f32)(const bool* c, std::int64_t cs, const float* a, std::int64_t as, const float* b, std::int64_t bs,
                    float* out, std::int64_t n);
  void (*where_f64)(const bool* c, std::int64_t cs, const double* a, std::int64_t as, const double* b, std::int64_t bs,
                    double* out, std::int64_t n);
  // out[i] = x[i] converted from dtype `from` to dtype `to` (DType's values: float32 0,
  // float64 1, int32 2, int64 3, bool 4, bfloat16 5) with ef's saturating rule (NaN -> 0, out-of-range
  // floats clamp to the integer range, bool is x != 0). Returns false for pairs it lacks.
  bool (*cast)(int from, int to, const void* x, void* out, std::int64_t n);
  // Reductions of one contiguous row. sum_f32 adds blocks of floats in registers and the
  // block sums in double, in a fixed order: the result depends on the values and n only.
  double (*sum_f32)(const float* x, std::int64_t n);
  float (*max_f32)(const float* x, std::int64_t n);  // NaN wins; -inf for n == 0
  // Column reductions (over a leading axis), one row at a time: acc[i] += x[i] in double;
  // acc[i] = max(acc[i], x[i]) with NaN winning.
  void (*accumulate_f32)(double* acc, const float* x, std::int64_t n);
  void (*max_into_f32)(float* acc, const float* x, std::int64_t n);
  // out[i] = g[i] * gelu'(x[i]), from the same Phi and exp as float32 gelu (within a few ulp
  // of the exact derivative's terms; src/kernels/cpu/vec/vec_kernels.inc).
  void (*gelu_grad_f32)(const float* x, const float* g, float* out, std::int64_t n);
};

// Outputs of at least this many bytes are written with non-temporal stores: those that would
// take more than half the last-level cache, and so would not stay there for the next op (a
// 16 MiB activation written past a 480 MiB L3 made a transformer step 7% slower: the next op
// read it back from memory).
std::int64_t stream_store_bytes();

// The kernels for this CPU (cached after the first call). EF_ISA=baseline|avx2|avx512 caps
// the choice, e.g. to reproduce another machine's numbers.
const Kernels& kernels();
// The kernels for one instruction set, or nullptr when this CPU lacks it (for tests).
const Kernels* kernels_for(Isa isa);

template <class T>
inline constexpr bool vectorized = std::is_same_v<T, float> || std::is_same_v<T, double>;

}  // namespace ef::cpu::vec
