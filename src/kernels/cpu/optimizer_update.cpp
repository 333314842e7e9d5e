// The fused optimizer updates for baseline x86-64 (SSE2), and the choice of instruction set.
#include <immintrin.h>
#define EF_UPDATE_NS baseline
#define EF_UPDATE_BYTES 16
#define EF_MF __m128
#define EF_MD __m128d
#define EF_SQRT_F(v) _mm_sqrt_ps(v)
#define EF_SQRT_D(v) _mm_sqrt_pd(v)
#include "kernels/cpu/optimizer_update.inc"

#include "kernels/cpu/vec_math.h"

namespace ef::cpu {
namespace {
// The elementwise kernels' choice (EF_ISA caps both alike); AVX-512 CPUs run the AVX2 loops:
// the update is bound by memory, not by the register width.
bool use_avx2() {
  static const bool avx2 = vec::kernels().isa != vec::Isa::baseline;
  return avx2;
}
}  // namespace

void apply_update(UpdateRule rule, const UpdateScalars<float>& s, const UpdateBuffers<float>& b, std::int64_t begin,
                  std::int64_t end) {
  if (use_avx2()) update_isa::avx2::apply(rule, s, b, begin, end);
  else update_isa::baseline::apply(rule, s, b, begin, end);
}

void apply_update(UpdateRule rule, const UpdateScalars<double>& s, const UpdateBuffers<double>& b, std::int64_t begin,
                  std::int64_t end) {
  if (use_avx2()) update_isa::avx2::apply(rule, s, b, begin, end);
  else update_isa::baseline::apply(rule, s, b, begin, end);
}

}  // namespace ef::cpu
