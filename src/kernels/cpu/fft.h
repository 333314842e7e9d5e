#pragma once
// The discrete Fourier transform of one length, in double precision: radix 2 for powers of two,
// Bluestein's chirp-z (through a power-of-two transform) for any other length, so every length
// costs O(n log n); short lengths that are not powers of two directly, from the n roots of unity
// (exact sums where the roots are 1, as TF's and NumPy's: the real input's zero frequency has
// imaginary part 0). A plan holds the twiddles; running it allocates nothing.
#include <complex>
#include <cstdint>
#include <vector>

namespace ef::cpu {

class FftPlan {
 public:
  explicit FftPlan(std::int64_t n);
  std::int64_t size() const { return n_; }
  // Scratch `run` needs (complex numbers), per calling thread.
  std::int64_t scratch_size() const;
  // data[k] := sum_j data[j] e^{-2 pi i jk/n} (inverse: e^{+...}, without the 1/n).
  void run(std::complex<double>* data, bool inverse, std::complex<double>* scratch) const;

 private:
  void radix2(std::complex<double>* a, std::int64_t m, bool inverse) const;
  std::int64_t n_ = 0;
  std::int64_t m_ = 0;                            // the power of two the transforms run at
  std::vector<std::complex<double>> twiddle_;     // e^{-2 pi i k/m}, k < m/2
  std::vector<std::int64_t> reversed_;            // bit reversal of [0, m)
  std::vector<std::complex<double>> chirp_;       // Bluestein: e^{-pi i k^2/n}, k < n
  std::vector<std::complex<double>> chirp_fft_;   // the transform of the conjugate chirp, length m
  std::vector<std::complex<double>> roots_;       // direct: e^{-2 pi i k/n}, k < n
};

}  // namespace ef::cpu
