// ef::linalg::expm: scaling and squaring with Pade approximants, composed of ops (so it traces and
// differentiates); the squarings are a while_loop, which is why it lives above src/ops.
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "eagerflow/function/control_flow.h"
#include "ops/linalg_checks.h"

namespace ef::linalg {
using detail::expect_float;
using detail::eye_like;
using detail::known_dim;

namespace {

// The Pade approximant's odd part u = a * (sum b[2i+1] a^2i) and even part v = sum b[2i] a^2i
// for the coefficients b (b[0] first), from the powers a^2, a^4, ... in `even`.
std::pair<Tensor, Tensor> pade(const Tensor& a, const Tensor& eye, const std::vector<Tensor>& even,
                               const std::vector<double>& b) {
  Tensor odd = eye * b[1], ev = eye * b[0];
  for (std::size_t i = 1; 2 * i < b.size(); ++i) {
    odd = odd + even[i - 1] * b[2 * i + 1];
    ev = ev + even[i - 1] * b[2 * i];
  }
  return {matmul(a, odd), ev};
}

// Order 13 groups its terms (Higham 2005, eq. 10.33) to need a^2, a^4, a^6 only.
std::pair<Tensor, Tensor> pade13(const Tensor& a, const Tensor& eye) {
  // clang-format off
  constexpr std::array<double, 14> b{64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
                                     129060195264000.0,   10559470521600.0,    670442572800.0,     33522128640.0,
                                     1323241920.0,        40840800.0,          960960.0,           16380.0,
                                     182.0,               1.0};
  // clang-format on
  Tensor a2 = matmul(a, a), a4 = matmul(a2, a2), a6 = matmul(a4, a2);
  Tensor u_inner = matmul(a6, a6 * b[13] + a4 * b[11] + a2 * b[9]) + a6 * b[7] + a4 * b[5] + a2 * b[3] + eye * b[1];
  Tensor v = matmul(a6, a6 * b[12] + a4 * b[10] + a2 * b[8]) + a6 * b[6] + a4 * b[4] + a2 * b[2] + eye * b[0];
  return {matmul(a, u_inner), v};
}

const std::vector<std::vector<double>>& pade_coefficients() {  // orders 3, 5, 7, 9
  static const std::vector<std::vector<double>> c{
      {120.0, 60.0, 12.0, 1.0},
      {30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0},
      {17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0},
      {17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0, 2162160.0, 110880.0, 3960.0, 90.0, 1.0}};
  return c;
}

}  // namespace

Tensor expm(const Tensor& input) {
  constexpr const char* op = "linalg.expm";
  expect_float(input, op, "matrices", 2);
  if (known_dim(input, -1, op) != known_dim(input, -2, op))
    fail(op, "takes square matrices, got " + input.spec().str());
  const bool f64 = input.dtype() == DType::float64;
  Tensor eye = eye_like(input);
  Tensor l1 = expand_dims(max(sum(abs(input), {-2}), {-1}, /*keepdims=*/true), -1);  // [..., 1, 1]
  // Each matrix takes the lowest order whose bound its 1-norm meets; past the last bound the
  // matrix is scaled by 2^-s and the result squared s times (Higham 2005's thetas, TF's choice of s).
  std::vector<double> bounds = f64 ? std::vector<double>{1.495585217958292e-2, 2.539398330063230e-1,
                                                         9.504178996162932e-1, 2.097847961257068}
                                   : std::vector<double>{4.258730016922831e-1, 1.880152677804762};
  double max_norm = f64 ? 5.371920351148152 : 3.925724783138660;
  // Inf or NaN anywhere makes the whole result NaN (as TF's); the computation runs on zeros
  // instead, so that neither the squaring count nor the solve sees them.
  Tensor finite = all(equal(l1 * 0.0, zeros_like(l1)));
  Tensor a = where(finite, input, zeros_like(input));
  Tensor safe_l1 = where(finite, l1, zeros_like(l1));
  Tensor squarings = stop_gradient(maximum(floor(log(safe_l1 / max_norm) / std::log(2.0)), zeros_like(l1)));
  Tensor scaled = a / pow(full_like(squarings, 2.0), squarings);
  std::vector<Tensor> even{matmul(a, a)};
  std::size_t low_orders = bounds.size();  // the orders below the scaled one
  for (std::size_t i = 1; i < (f64 ? 4u : 2u); ++i) even.push_back(matmul(even.back(), even[0]));
  std::vector<std::pair<Tensor, Tensor>> uv;
  for (std::size_t i = 0; i < low_orders; ++i) uv.push_back(pade(a, eye, even, pade_coefficients()[i]));
  if (f64) {
    uv.push_back(pade13(scaled, eye));
  } else {
    Tensor s2 = matmul(scaled, scaled), s4 = matmul(s2, s2), s6 = matmul(s4, s2);
    uv.push_back(pade(scaled, eye, {s2, s4, s6}, pade_coefficients()[2]));
  }
  Tensor u = uv.back().first, v = uv.back().second;
  for (std::size_t i = low_orders; i-- > 0;) {
    Tensor take = l1 < bounds[i];
    u = where(take, uv[i].first, u);
    v = where(take, uv[i].second, v);
  }
  Tensor r = solve(v - u, v + u);
  Tensor most = max(squarings);
  std::vector<Tensor> done = while_loop(
      [most](const std::vector<Tensor>& vars) { return vars[0] < most; },
      [squarings](const std::vector<Tensor>& vars) {
        return std::vector<Tensor>{vars[0] + 1.0, where(vars[0] < squarings, matmul(vars[1], vars[1]), vars[1])};
      },
      {zeros_like(most), r});
  return where(finite, done[1], full_like(done[1], std::numeric_limits<double>::quiet_NaN()));
}

}  // namespace ef::linalg
