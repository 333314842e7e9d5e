#pragma once
// The C++ types of complex64 and complex128 (std::complex<float>, std::complex<double>) for
// Tensor::data, ef::tensor and ef::scalar. Apart from dtype.h so that <complex> stays out of
// eagerflow.h (every includer would pay for it).
#include <complex>

#include "eagerflow/core/dtype.h"

namespace ef {
template <> struct dtype_of<std::complex<float>> { static constexpr DType value = DType::complex64; };
template <> struct dtype_of<std::complex<double>> { static constexpr DType value = DType::complex128; };
}  // namespace ef
