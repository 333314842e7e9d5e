// The LU factorization and the tridiagonal solve as ops: LAPACK's getrf and gtsv per matrix of
// the batch (the Thomas algorithm when pivoting is off); the solve's gradient composed of ops.
#include "ops/linalg_extra_op.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "eagerflow/core/error.h"
#include "eagerflow/ops/linalg.h"
#include "eagerflow/ops/op_rules.h"
#include "eagerflow/ops/ops.h"
#include "kernels/cpu/lapack.h"
#include "ops/rules/batching.h"

namespace ef {
namespace {

namespace lp = kernels::lapack;

bool dims_differ(std::int64_t a, std::int64_t b) { return a != b && a != kDynamic && b != kDynamic; }

std::string tag(const Primitive& op) { return std::string("linalg.") + op.name(); }

void expect_float(const Primitive& op, const Tensor& a, int min_rank, const char* what) {
  if (!a.defined()) fail(tag(op), std::string("got an undefined ") + what);
  if (a.dtype() != DType::float32 && a.dtype() != DType::float64)
    fail(kWrongType, tag(op), std::string("takes float32 or float64 ") + what + ", got " + a.spec().str());
  if (a.rank() < min_rank)
    fail(tag(op), std::string(what) + " must have rank >= " + std::to_string(min_rank) + ", got " + a.spec().str());
}

std::int64_t batch_of(const Shape& s) {
  std::int64_t n = 1;
  for (int d = 0; d < s.rank() - 2; ++d) n *= s[d];
  return n;
}

template <class Fn> void for_float(DType t, Fn&& fn) {
  if (t == DType::float64) fn(double{});
  else fn(float{});
}

// x's entries along `axis` moved by `by` (result[i] = x[i + by]), zeros shifted in.
Tensor shifted(const Tensor& x, int axis, std::int64_t by) {
  int a = axis < 0 ? x.rank() + axis : axis;
  constexpr std::int64_t kAll = std::numeric_limits<std::int64_t>::max();
  std::vector<std::int64_t> begin(static_cast<std::size_t>(a + 1), 0), end(static_cast<std::size_t>(a + 1), kAll);
  std::vector<std::pair<std::int64_t, std::int64_t>> pads(static_cast<std::size_t>(x.rank()), {0, 0});
  if (by >= 0) {
    begin.back() = by;
    pads[static_cast<std::size_t>(a)] = {0, by};
  } else {
    end.back() = x.shape()[a] + by;
    pads[static_cast<std::size_t>(a)] = {-by, 0};
  }
  return pad(slice(x, begin, end), pads);
}

// Row `i` of the compact diagonals [..., 3, m] as [..., m].
Tensor band(const Tensor& diagonals, std::int64_t i) {
  constexpr std::int64_t kAll = std::numeric_limits<std::int64_t>::max();
  std::vector<std::int64_t> begin(static_cast<std::size_t>(diagonals.rank() - 1), 0), end(begin.size(), kAll);
  begin.back() = i;
  end.back() = i + 1;
  return squeeze(slice(diagonals, begin, end), {-2});
}

// Solves one system without pivoting (the Thomas algorithm); false at a zero pivot.
template <class T> bool thomas(std::int64_t m, std::int64_t k, const T* super, const T* diag, const T* sub, T* x) {
  std::vector<T> c(static_cast<std::size_t>(m));  // the eliminated superdiagonal
  for (std::int64_t i = 0; i < m; ++i) {
    T pivot = diag[i] - (i ? sub[i] * c[static_cast<std::size_t>(i - 1)] : T(0));
    if (pivot == T(0)) return false;
    c[static_cast<std::size_t>(i)] = i + 1 < m ? super[i] / pivot : T(0);
    for (std::int64_t j = 0; j < k; ++j)
      x[i * k + j] = (x[i * k + j] - (i ? sub[i] * x[(i - 1) * k + j] : T(0))) / pivot;
  }
  for (std::int64_t i = m - 2; i >= 0; --i)
    for (std::int64_t j = 0; j < k; ++j) x[i * k + j] -= c[static_cast<std::size_t>(i)] * x[(i + 1) * k + j];
  return true;
}

// Solves the (1|2) x (1|2) Sylvester equation a x + x b = c (row-major blocks) through its
// Kronecker form (a (x) I + I (x) b^T) vec(x) = vec(c), by elimination with partial pivoting.
void small_sylvester(int p, int q, const double* a, const double* b, double* c) {
  int m = p * q;
  double k[4][5] = {};
  for (int i = 0; i < p; ++i)
    for (int j = 0; j < q; ++j) {
      int row = i * q + j;
      for (int l = 0; l < p; ++l) k[row][l * q + j] += a[i * p + l];
      for (int l = 0; l < q; ++l) k[row][i * q + l] += b[l * q + j];
      k[row][m] = c[row];
    }
  for (int col = 0; col < m; ++col) {
    int piv = col;
    for (int r = col + 1; r < m; ++r)
      if (std::abs(k[r][col]) > std::abs(k[piv][col])) piv = r;
    std::swap(k[col], k[piv]);
    for (int r = col + 1; r < m; ++r) {
      double f = k[r][col] / k[col][col];
      for (int cc = col; cc <= m; ++cc) k[r][cc] -= f * k[col][cc];
    }
  }
  for (int r = m - 1; r >= 0; --r) {
    double v = k[r][m];
    for (int cc = r + 1; cc < m; ++cc) v -= k[r][cc] * c[cc];
    c[r] = v / k[r][r];
  }
}

// The principal square root of one n x n matrix, in double.
void sqrtm_one(std::int64_t n, std::vector<double>& t, std::vector<double>& out) {
  auto at = [n](std::vector<double>& m, std::int64_t i, std::int64_t j) -> double& {
    return m[static_cast<std::size_t>(i * n + j)];
  };
  std::vector<double> z(t.size()), wr(static_cast<std::size_t>(n)), wi(static_cast<std::size_t>(n)), r(t.size(), 0.0);
  if (!std::all_of(t.begin(), t.end(), [](double v) { return std::isfinite(v); }) ||
      lp::gees<double>(n, t.data(), wr.data(), wi.data(), z.data()) != 0) {
    std::fill(out.begin(), out.end(), std::numeric_limits<double>::quiet_NaN());
    return;
  }
  std::vector<std::int64_t> start, size;  // the diagonal blocks of the quasi-triangular t
  for (std::int64_t i = 0; i < n;) {
    std::int64_t s = (i + 1 < n && at(t, i + 1, i) != 0.0) ? 2 : 1;
    start.push_back(i);
    size.push_back(s);
    i += s;
  }
  for (std::size_t b = 0; b < start.size(); ++b) {
    std::int64_t i = start[b];
    if (size[b] == 1) {
      double v = at(t, i, i);
      at(r, i, i) = v >= 0 ? std::sqrt(v) : std::numeric_limits<double>::quiet_NaN();
      continue;
    }
    // Eigenvalues theta +- i mu; the root's are alpha +- i beta with alpha > 0 and
    // r = alpha I + (t - theta I) / (2 alpha).
    double t11 = at(t, i, i), t12 = at(t, i, i + 1), t21 = at(t, i + 1, i), t22 = at(t, i + 1, i + 1);
    double theta = (t11 + t22) / 2, mu = std::sqrt(std::max(0.0, -((t11 - t22) * (t11 - t22) / 4 + t12 * t21)));
    double alpha = std::sqrt((theta + std::hypot(theta, mu)) / 2);
    at(r, i, i) = alpha + (t11 - theta) / (2 * alpha);
    at(r, i, i + 1) = t12 / (2 * alpha);
    at(r, i + 1, i) = t21 / (2 * alpha);
    at(r, i + 1, i + 1) = alpha + (t22 - theta) / (2 * alpha);
  }
  // Above the diagonal, block column by column, bottom up: r_ii x + x r_jj = t_ij - sum_k r_ik r_kj.
  for (std::size_t bj = 0; bj < start.size(); ++bj)
    for (std::size_t bi = bj; bi-- > 0;) {
      std::int64_t i0 = start[bi], j0 = start[bj];
      int p = static_cast<int>(size[bi]), q = static_cast<int>(size[bj]);
      double a[4], bb[4], c[4];
      for (int u = 0; u < p; ++u)
        for (int v = 0; v < p; ++v) a[u * p + v] = at(r, i0 + u, i0 + v);
      for (int u = 0; u < q; ++u)
        for (int v = 0; v < q; ++v) bb[u * q + v] = at(r, j0 + u, j0 + v);
      for (int u = 0; u < p; ++u)
        for (int v = 0; v < q; ++v) {
          double sum = at(t, i0 + u, j0 + v);
          for (std::int64_t k = i0 + p; k < j0; ++k) sum -= at(r, i0 + u, k) * at(r, k, j0 + v);
          c[u * q + v] = sum;
        }
      small_sylvester(p, q, a, bb, c);
      for (int u = 0; u < p; ++u)
        for (int v = 0; v < q; ++v) at(r, i0 + u, j0 + v) = c[u * q + v];
    }
  std::vector<double> zr(t.size(), 0.0);  // out = z r z^T (r is zero below its subdiagonal)
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t k = 0; k < n; ++k)
      for (std::int64_t j = std::max<std::int64_t>(k - 1, 0); j < n; ++j) at(zr, i, j) += at(z, i, k) * at(r, k, j);
  std::fill(out.begin(), out.end(), 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t k = 0; k < n; ++k)
      for (std::int64_t j = 0; j < n; ++j) at(out, i, j) += at(zr, i, k) * at(z, j, k);
}

}  // namespace

// ---------------------------------------------------------------- lu
std::vector<TensorSpec> Lu::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  expect_float(*this, in[0], 2, "matrices");
  const Shape& s = in[0].shape();
  if (dims_differ(s[s.rank() - 1], s[s.rank() - 2]))
    fail(tag(*this), "takes square matrices, got " + in[0].spec().str());
  std::vector<std::int64_t> perm(s.begin(), s.end() - 1);
  return {{in[0].dtype(), s, {}}, {DType::int32, Shape(perm), {}}};
}

void Lu::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  out[1] = Tensor::empty(DType::int32, specs[1].shape);
  if (in[0].num_elements())
    std::memcpy(out[0].raw_mutable_data(), in[0].raw_data(),
                static_cast<std::size_t>(in[0].num_elements()) * size_of(in[0].dtype()));
  std::int64_t n = in[0].shape()[in[0].rank() - 1], batch = batch_of(in[0].shape());
  std::vector<int> pivots(static_cast<std::size_t>(std::max<std::int64_t>(n, 1)));
  std::int32_t* perm = out[1].mutable_data<std::int32_t>().data();
  for_float(in[0].dtype(), [&](auto tag_value) {
    using T = decltype(tag_value);
    T* a = out[0].mutable_data<T>().data();
    for (std::int64_t b = 0; b < batch && n; ++b) {
      if (lp::getrf<T>(n, a + b * n * n, pivots.data()) != 0)
        fail(tag(*this),
             "Input is not invertible: matrix " + std::to_string(b) + " of " + in[0].spec().str() + " is singular");
      // LAPACK's pivots are swaps made in turn; TF's perm is the permutation they compose to.
      std::int32_t* p = perm + b * n;
      for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<std::int32_t>(i);
      for (std::int64_t i = 0; i < n; ++i) std::swap(p[i], p[pivots[static_cast<std::size_t>(i)] - 1]);
    }
  });
}

// ---------------------------------------------------------------- tridiagonal solve
OpParams TridiagonalSolve::parameters() const { return OpParams().add_flag("no_pivoting", !pivoting_); }

std::vector<TensorSpec> TridiagonalSolve::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 2);
  const Tensor &d = in[0], &r = in[1];
  expect_float(*this, d, 2, "diagonals");
  expect_float(*this, r, 2, "rhs");
  if (r.dtype() != d.dtype())
    fail(kWrongType, tag(*this), "diagonals " + d.spec().str() + " and rhs " + r.spec().str() + " differ in dtype");
  const Shape &ds = d.shape(), &rs = r.shape();
  if (dims_differ(ds[ds.rank() - 2], 3))
    fail(tag(*this), "Expected 3 diagonals got " + std::to_string(ds[ds.rank() - 2]) + ": " + d.spec().str());
  if (dims_differ(ds[ds.rank() - 1], rs[rs.rank() - 2]))
    fail(tag(*this), "Expected number of left-hand sided and right-hand sides to be equal, got " +
                         std::to_string(ds[ds.rank() - 1]) + " and " + std::to_string(rs[rs.rank() - 2]));
  bool fits = ds.rank() == rs.rank();
  for (int i = 0; fits && i < ds.rank() - 2; ++i) fits = !dims_differ(ds[i], rs[i]);
  if (!fits) fail(tag(*this), "rhs " + r.spec().str() + " must have the batch dims of the diagonals " + d.spec().str());
  return {{r.dtype(), rs, {}}};
}

void TridiagonalSolve::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs,
                            std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  const Shape& rs = in[1].shape();
  std::int64_t m = rs[rs.rank() - 2], k = rs[rs.rank() - 1], batch = batch_of(rs);
  if (in[1].num_elements())
    std::memcpy(out[0].raw_mutable_data(), in[1].raw_data(),
                static_cast<std::size_t>(in[1].num_elements()) * size_of(in[1].dtype()));
  if (!m || !k) return;
  for_float(in[0].dtype(), [&](auto tag_value) {
    using T = decltype(tag_value);
    const T* diags = in[0].data<T>().data();
    T* x = out[0].mutable_data<T>().data();
    std::vector<T> dl(static_cast<std::size_t>(m)), d(static_cast<std::size_t>(m)), du(static_cast<std::size_t>(m));
    for (std::int64_t b = 0; b < batch; ++b) {
      const T *super = diags + b * 3 * m, *main = super + m, *sub = main + m;
      T* xb = x + b * m * k;
      bool solved;
      if (pivoting_) {
        std::copy(super, super + m, du.begin());
        std::copy(main, main + m, d.begin());
        std::copy(sub + 1, sub + m, dl.begin());
        solved = lp::gtsv<T>(m, k, dl.data(), d.data(), du.data(), xb) == 0;
      } else {
        solved = thomas<T>(m, k, super, main, sub, xb);
      }
      if (!solved) std::fill(xb, xb + m * k, std::numeric_limits<T>::quiet_NaN());
    }
  });
}

std::vector<Tensor> TridiagonalSolve::vjp(std::span<const Tensor> in, std::span<const Tensor> out,
                                          std::span<const Tensor> cot, const std::vector<bool>&) const {
  // A^T's compact diagonals: its superdiagonal is A's subdiagonal moved up one, its subdiagonal
  // A's superdiagonal moved down one. grad_rhs = A^-T g; grad_A = -grad_rhs x^T on the three bands.
  const Tensor &d = in[0], &x = out[0];
  Tensor dt = stack({shifted(band(d, 2), -1, 1), band(d, 1), shifted(band(d, 0), -1, -1)}, -2);
  Tensor grad_rhs = linalg::tridiagonal_solve(dt, cot[0], pivoting_);
  auto row_dot = [&](const Tensor& xs) { return -sum(grad_rhs * xs, {-1}); };
  Tensor grad_d = stack({row_dot(shifted(x, -2, 1)), row_dot(x), row_dot(shifted(x, -2, -1))}, -2);
  return {grad_d, grad_rhs};
}

// ---------------------------------------------------------------- matrix square root
std::vector<TensorSpec> MatrixSquareRoot::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  expect_float(*this, in[0], 2, "matrices");
  const Shape& s = in[0].shape();
  if (dims_differ(s[s.rank() - 1], s[s.rank() - 2]))
    fail(tag(*this), "Input matrix must be square, got " + in[0].spec().str());
  return {{in[0].dtype(), s, {}}};
}

void MatrixSquareRoot::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs,
                            std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  std::int64_t n = in[0].shape()[in[0].rank() - 1], batch = batch_of(in[0].shape());
  if (!n) return;
  std::vector<double> t(static_cast<std::size_t>(n * n)), root(t.size());
  for_float(in[0].dtype(), [&](auto tag_value) {
    using T = decltype(tag_value);
    const T* a = in[0].data<T>().data();
    T* s = out[0].mutable_data<T>().data();
    for (std::int64_t b = 0; b < batch; ++b) {  // in double for either dtype: the blocks' formulas cancel
      std::copy(a + b * n * n, a + (b + 1) * n * n, t.begin());
      sqrtm_one(n, t, root);
      std::transform(root.begin(), root.end(), s + b * n * n, [](double v) { return static_cast<T>(v); });
    }
  });
}

std::vector<Tensor> MatrixSquareRoot::vjp(std::span<const Tensor>, std::span<const Tensor> out,
                                          std::span<const Tensor> cot, const std::vector<bool>&) const {
  // s s = a gives ds s + s ds = da; the adjoint: grad_a solves s^T y + y s^T = g. Row-major
  // vec(p y q) = (p (x) q^T) vec(y): the n^2 system (s^T (x) I + I (x) s) vec(y) = vec(g).
  const Tensor& s = out[0];
  std::int64_t n = s.shape()[s.rank() - 1];
  Tensor eye = linalg::diag(ones_like(linalg::diag_part(s)));
  auto batch_with = [&](std::vector<std::int64_t> last) {  // s's batch dims, then `last`
    std::vector<std::int64_t> dims;
    for (int d = 0; d < s.rank() - 2; ++d) dims.push_back(s.shape()[d] == kDynamic ? -1 : s.shape()[d]);
    dims.insert(dims.end(), last.begin(), last.end());
    return Shape(dims);
  };
  auto kron = [&](const Tensor& p, const Tensor& q) {  // [..., n, n] x [..., n, n] -> [..., n^2, n^2]
    Tensor k = expand_dims(expand_dims(p, -1), -3) * expand_dims(expand_dims(q, -3), -2);  // [..., i, k, j, l]
    return reshape(k, batch_with({n * n, n * n}));
  };
  Tensor system = kron(linalg::adjoint(s), eye) + kron(eye, s);
  Tensor y = linalg::solve(system, reshape(cot[0], batch_with({n * n, 1})));
  return {reshape(y, batch_with({n, n}))};
}

// ---------------------------------------------------------------- records, factories
void detail::add_linalg_extra_factories(OpFactories& f) {
  f["lu"] = [](const OpParams&) { return std::make_shared<Lu>(); };
  f["matrix_square_root"] = [](const OpParams&) { return std::make_shared<MatrixSquareRoot>(); };
  f["tridiagonal_solve"] = [](const OpParams& p) { return std::make_shared<TridiagonalSolve>(!p.flag("no_pivoting")); };
}

namespace {

template <class Op>
BatchingResult batch_matrices(const Op& op, BatchingCall call) { return batching::leading_batch(op, call); }

constexpr const char* kNoOnnx = "no ONNX operator computes it (opset 17)";

}  // namespace

void detail::register_linalg_extra_rules() {
  register_op_rules<Lu>({.batching = batch_matrices<Lu>, .onnx_unsupported = kNoOnnx});
  register_op_rules<MatrixSquareRoot>({.batching = batch_matrices<MatrixSquareRoot>, .onnx_unsupported = kNoOnnx});
  register_op_rules<TridiagonalSolve>({.batching = batch_matrices<TridiagonalSolve>, .onnx_unsupported = kNoOnnx});
}

}  // namespace ef
