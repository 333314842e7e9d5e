#pragma once
// Scalar samplers for the parameterized random ops (src/ops/random_dists_op.cpp): each element
// draws from a counter-based stream of its own (its key and a draw counter), so a tensor's
// values do not depend on the thread count or on how many draws the other elements rejected.
#include <cstdint>

namespace ef::kernels {

inline std::uint64_t splitmix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

class Stream {
 public:
  Stream(std::uint64_t key, std::uint64_t element) : key_(splitmix(key ^ splitmix(element))) {}
  // Uniform in the open interval (0, 1): both logs of a draw stay finite.
  double uniform() { return (static_cast<double>(splitmix(key_ ^ splitmix(n_++)) >> 11) + 0.5) * 0x1.0p-53; }
  double normal();  // Box-Muller

 private:
  std::uint64_t key_;
  std::uint64_t n_ = 0;
};

// Gamma(alpha, 1): Marsaglia and Tsang's squeeze method; alpha < 1 draws Gamma(alpha + 1)
// scaled by U^(1/alpha) (in logs, so that tiny draws keep their precision). alpha = 0 gives 0,
// alpha < 0 or NaN gives NaN (as TF's).
double sample_gamma(double alpha, Stream& s);
// d sample / d alpha of a Gamma(alpha, 1) draw at `sample` with the uniform quantile held fixed
// (the implicit reparameterization gradient): -(dP(alpha, x)/d alpha) / p(x), P the regularized
// lower incomplete gamma function and p the density. dP/d alpha comes from the series of P (x
// below alpha or 1) or the continued fraction of 1 - P, each differentiated in forward mode.
double gamma_sample_grad(double alpha, double sample);
// Poisson(lam): inversion below lam = 10, Hörmann's PTRS (transformed rejection with squeeze)
// above. lam <= 0 gives 0 (as TF's); NaN gives NaN.
double sample_poisson(double lam, Stream& s);
// Binomial(floor(n), p), p clipped to [0, 1]: inversion while the smaller of n p and n (1 - p)
// is below 10, Hörmann's BTRS above. NaN gives NaN.
double sample_binomial(double n, double p, Stream& s);
// Normal(mean, stddev) conditioned on [lo, hi]: normal rejection when the interval holds much
// of the mass, uniform rejection for a short interval, Robert's exponential rejection in a
// tail. The caller checks stddev > 0 and lo < hi.
double sample_truncated_normal(double mean, double stddev, double lo, double hi, Stream& s);

}  // namespace ef::kernels
