#include "kernels/cpu/fft.h"

#include <cmath>
#include <numbers>

namespace ef::cpu {

namespace {
constexpr std::int64_t kDirectBelow = 64;  // n^2 multiply-adds beat Bluestein's three transforms of 2n+
}

FftPlan::FftPlan(std::int64_t n) : n_(n) {
  if (n <= 1) return;
  bool power_of_two = (n & (n - 1)) == 0;
  if (!power_of_two && n < kDirectBelow) {
    roots_.resize(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k) {
      double a = -2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(n);
      roots_[static_cast<std::size_t>(k)] = {std::cos(a), std::sin(a)};
    }
    roots_[0] = {1.0, 0.0};
    return;
  }
  m_ = 1;
  while (m_ < (power_of_two ? n : 2 * n - 1)) m_ *= 2;
  twiddle_.resize(static_cast<std::size_t>(m_ / 2));
  for (std::int64_t k = 0; k < m_ / 2; ++k) {
    double a = -2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(m_);
    twiddle_[static_cast<std::size_t>(k)] = {std::cos(a), std::sin(a)};
  }
  reversed_.resize(static_cast<std::size_t>(m_));
  int bits = 0;
  while ((std::int64_t{1} << bits) < m_) ++bits;
  for (std::int64_t i = 0; i < m_; ++i) {
    std::int64_t r = 0;
    for (int b = 0; b < bits; ++b) r |= ((i >> b) & 1) << (bits - 1 - b);
    reversed_[static_cast<std::size_t>(i)] = r;
  }
  if (power_of_two) return;
  // k^2 mod 2n keeps the chirp's angle small (exact in integers) for large k.
  chirp_.resize(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k) {
    std::int64_t k2 = static_cast<std::int64_t>((static_cast<unsigned __int128>(k) * static_cast<unsigned __int128>(k)) %
                                                static_cast<unsigned __int128>(2 * n));
    double a = -std::numbers::pi * static_cast<double>(k2) / static_cast<double>(n);
    chirp_[static_cast<std::size_t>(k)] = {std::cos(a), std::sin(a)};
  }
  chirp_fft_.assign(static_cast<std::size_t>(m_), {0.0, 0.0});
  chirp_fft_[0] = std::conj(chirp_[0]);
  for (std::int64_t k = 1; k < n; ++k)
    chirp_fft_[static_cast<std::size_t>(k)] = chirp_fft_[static_cast<std::size_t>(m_ - k)] =
        std::conj(chirp_[static_cast<std::size_t>(k)]);
  radix2(chirp_fft_.data(), m_, false);
}

std::int64_t FftPlan::scratch_size() const { return !roots_.empty() ? n_ : chirp_.empty() ? 0 : m_; }

void FftPlan::radix2(std::complex<double>* a, std::int64_t m, bool inverse) const {
  for (std::int64_t i = 0; i < m; ++i) {
    std::int64_t r = reversed_[static_cast<std::size_t>(i)];
    if (i < r) std::swap(a[i], a[r]);
  }
  for (std::int64_t len = 2; len <= m; len *= 2) {
    std::int64_t half = len / 2, step = m / len;
    for (std::int64_t s = 0; s < m; s += len)
      for (std::int64_t j = 0; j < half; ++j) {
        std::complex<double> w = twiddle_[static_cast<std::size_t>(j * step)];
        if (inverse) w = std::conj(w);
        std::complex<double> u = a[s + j], v = a[s + j + half];
        v = {v.real() * w.real() - v.imag() * w.imag(), v.real() * w.imag() + v.imag() * w.real()};
        a[s + j] = u + v;
        a[s + j + half] = u - v;
      }
  }
}

void FftPlan::run(std::complex<double>* data, bool inverse, std::complex<double>* scratch) const {
  if (n_ <= 1) return;
  if (!roots_.empty()) {
    for (std::int64_t k = 0; k < n_; ++k) {
      std::complex<double> s = 0.0;
      for (std::int64_t j = 0, at = 0; j < n_; ++j, at = at + k >= n_ ? at + k - n_ : at + k) {
        std::complex<double> w = roots_[static_cast<std::size_t>(at)];
        s += data[j] * (inverse ? std::conj(w) : w);
      }
      scratch[k] = s;
    }
    for (std::int64_t k = 0; k < n_; ++k) data[k] = scratch[k];
    return;
  }
  if (chirp_.empty()) return radix2(data, n_, inverse);
  // The inverse is the conjugate of the forward transform of the conjugate.
  for (std::int64_t k = 0; k < n_; ++k) {
    std::complex<double> x = inverse ? std::conj(data[k]) : data[k];
    scratch[k] = x * chirp_[static_cast<std::size_t>(k)];
  }
  for (std::int64_t k = n_; k < m_; ++k) scratch[k] = 0.0;
  radix2(scratch, m_, false);
  for (std::int64_t k = 0; k < m_; ++k) scratch[k] *= chirp_fft_[static_cast<std::size_t>(k)];
  radix2(scratch, m_, true);
  double scale = 1.0 / static_cast<double>(m_);
  for (std::int64_t k = 0; k < n_; ++k) {
    std::complex<double> y = scratch[k] * chirp_[static_cast<std::size_t>(k)] * scale;
    data[k] = inverse ? std::conj(y) : y;
  }
}

}  // namespace ef::cpu
