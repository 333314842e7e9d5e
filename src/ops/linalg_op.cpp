// The decompositions of ef::linalg: shape rules, LAPACK kernels per matrix of the batch, and
// gradients (TF's formulas, composed of ops so that they trace and differentiate again).
#include "ops/linalg_op.h"

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
#include "ops/linalg_extra_op.h"
#include "ops/op_factories.h"
#include "ops/rules/batching.h"
#include "ops/rules/builtin_rules.h"

namespace ef {
namespace {

namespace lp = kernels::lapack;

bool dims_differ(std::int64_t a, std::int64_t b) { return a != b && a != kDynamic && b != kDynamic; }

std::string tag(const Primitive& op) { return std::string("linalg.") + op.name(); }

// A float32/float64 tensor of rank >= 2 (square when asked): the matrices in its last two axes.
void expect_matrices(const Primitive& op, const Tensor& a, bool square) {
  if (!a.defined()) fail(tag(op), "got an undefined tensor");
  if (a.dtype() != DType::float32 && a.dtype() != DType::float64)
    fail(kWrongType, tag(op), "takes float32 or float64 matrices, got " + a.spec().str());
  if (a.rank() < 2) fail(tag(op), "takes matrices (rank >= 2), got " + a.spec().str());
  if (square && dims_differ(a.shape()[a.rank() - 1], a.shape()[a.rank() - 2]))
    fail(tag(op), "takes square matrices, got " + a.spec().str());
}

// The right-hand side of a solve: a's batch dims and rows, any number of columns.
void expect_rhs(const Primitive& op, const Tensor& a, const Tensor& b) {
  expect_matrices(op, b, false);
  if (b.dtype() != a.dtype()) fail(kWrongType, tag(op), "matrix " + a.spec().str() + " and rhs " + b.spec().str() + " differ in dtype");
  bool fits = b.rank() == a.rank() && !dims_differ(b.shape()[b.rank() - 2], a.shape()[a.rank() - 2]);
  for (int d = 0; fits && d < a.rank() - 2; ++d) fits = !dims_differ(a.shape()[d], b.shape()[d]);
  if (!fits) fail(tag(op), "rhs " + b.spec().str() + " must have the matrix's batch dims and rows: " + a.spec().str());
}

std::int64_t batch_of(const Shape& s) {
  std::int64_t n = 1;
  for (int d = 0; d < s.rank() - 2; ++d) n *= s[d];
  return n;
}

Shape with_last(const Shape& s, int drop, std::vector<std::int64_t> last) {
  std::vector<std::int64_t> dims(s.begin(), s.end() - drop);
  dims.insert(dims.end(), last.begin(), last.end());
  return Shape(dims);
}

template <class Fn>
void for_float(DType t, Fn&& fn) {
  if (t == DType::float64) fn(double{});
  else fn(float{});
}

Tensor copy_of(const Tensor& x) {
  Tensor y = Tensor::empty(x.dtype(), x.shape());
  if (x.num_elements()) std::memcpy(y.raw_mutable_data(), x.raw_data(), static_cast<std::size_t>(x.num_elements()) * size_of(x.dtype()));
  return y;
}

// Identity matrices shaped like the square matrices `a` (the ones of its diagonal, placed).
Tensor eye_like(const Tensor& a) { return linalg::diag(ones_like(linalg::diag_part(a))); }

template <class T>
bool all_finite(const T* p, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i)
    if (!std::isfinite(p[i])) return false;
  return true;
}

Tensor lower_with_half_diagonal(const Tensor& x) {  // tril(x) with its diagonal halved
  return linalg::set_diag(tril(x), linalg::diag_part(x) * 0.5);
}

}  // namespace

// ---------------------------------------------------------------- cholesky
std::vector<TensorSpec> Cholesky::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  expect_matrices(*this, in[0], true);
  return {{in[0].dtype(), in[0].shape(), {}}};
}

void Cholesky::eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const {
  out[0] = copy_of(in[0]);
  std::int64_t n = in[0].shape()[in[0].rank() - 1], batch = batch_of(in[0].shape());
  if (n == 0) return;  // empty matrices, however many: no loop over the batch
  for_float(in[0].dtype(), [&](auto tag_value) {
    using T = decltype(tag_value);
    T* a = out[0].mutable_data<T>().data();
    for (std::int64_t b = 0; b < batch; ++b) {
      T* m = a + b * n * n;
      if (n && lp::potrf_lower<T>(n, m) != 0)
        fail(tag(*this), "Cholesky decomposition was not successful: matrix " + std::to_string(b) + " of " +
                             in[0].spec().str() + " is not symmetric positive definite");
      for (std::int64_t i = 0; i < n; ++i) std::fill(m + i * n + i + 1, m + (i + 1) * n, T(0));
    }
  });
}

std::vector<Tensor> Cholesky::vjp(std::span<const Tensor>, std::span<const Tensor> out, std::span<const Tensor> cot,
                                  const std::vector<bool>&) const {
  // TF's: with phi = the lower triangle, diagonal halved,
  // grad_a = sym(L^-T phi(L^T g) L^-1), the symmetric part split between both triangles.
  const Tensor& l = out[0];
  Tensor l_inv = linalg::triangular_solve(l, eye_like(l), /*lower=*/true);
  Tensor middle = lower_with_half_diagonal(matmul(l, cot[0], /*transpose_a=*/true));
  Tensor g = matmul(matmul(l_inv, middle, /*transpose_a=*/true), l_inv);
  return {(g + linalg::adjoint(g)) * 0.5};
}

// ---------------------------------------------------------------- solve
OpParams MatrixSolve::parameters() const { return OpParams().add_flag("adjoint", adjoint_); }

std::vector<TensorSpec> MatrixSolve::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 2);
  expect_matrices(*this, in[0], true);
  expect_rhs(*this, in[0], in[1]);
  return {{in[1].dtype(), in[1].shape(), {}}};
}

void MatrixSolve::eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const {
  Tensor lu = copy_of(in[0]);
  out[0] = copy_of(in[1]);
  std::int64_t n = in[0].shape()[in[0].rank() - 1], k = in[1].shape()[in[1].rank() - 1], batch = batch_of(in[0].shape());
  std::vector<int> pivots(static_cast<std::size_t>(std::max<std::int64_t>(n, 1)));
  for_float(in[0].dtype(), [&](auto tag_value) {
    using T = decltype(tag_value);
    T* a = lu.mutable_data<T>().data();
    T* x = out[0].mutable_data<T>().data();
    for (std::int64_t b = 0; b < batch && n; ++b) {
      if (lp::getrf<T>(n, a + b * n * n, pivots.data()) != 0)
        fail(tag(*this), "matrix " + std::to_string(b) + " of " + in[0].spec().str() + " is not invertible");
      if (k) lp::getrs<T>(adjoint_, n, k, a + b * n * n, pivots.data(), x + b * n * k);
    }
  });
}

std::vector<Tensor> MatrixSolve::vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                                     const std::vector<bool>&) const {
  Tensor grad_rhs = linalg::solve(in[0], cot[0], !adjoint_);
  Tensor grad_a = adjoint_ ? -matmul(out[0], grad_rhs, false, true) : -matmul(grad_rhs, out[0], false, true);
  return {grad_a, grad_rhs};
}

// ---------------------------------------------------------------- triangular solve
OpParams TriangularSolve::parameters() const { return OpParams().add_flag("upper", !lower_).add_flag("adjoint", adjoint_); }

std::vector<TensorSpec> TriangularSolve::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 2);
  expect_matrices(*this, in[0], true);
  expect_rhs(*this, in[0], in[1]);
  return {{in[1].dtype(), in[1].shape(), {}}};
}

void TriangularSolve::eval(std::span<const Tensor> in, std::span<const TensorSpec>, std::span<Tensor> out) const {
  out[0] = copy_of(in[1]);
  std::int64_t n = in[0].shape()[in[0].rank() - 1], k = in[1].shape()[in[1].rank() - 1], batch = batch_of(in[0].shape());
  if (!n || !k) return;
  for_float(in[0].dtype(), [&](auto tag_value) {
    using T = decltype(tag_value);
    const T* a = in[0].data<T>().data();
    T* x = out[0].mutable_data<T>().data();
    for (std::int64_t b = 0; b < batch; ++b) lp::trsm_left<T>(lower_, adjoint_, n, k, a + b * n * n, x + b * n * k);
  });
}

std::vector<Tensor> TriangularSolve::vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                                         const std::vector<bool>&) const {
  Tensor grad_rhs = linalg::triangular_solve(in[0], cot[0], lower_, !adjoint_);
  Tensor grad_a = adjoint_ ? -matmul(out[0], grad_rhs, false, true) : -matmul(grad_rhs, out[0], false, true);
  return {lower_ ? tril(grad_a) : triu(grad_a), grad_rhs};
}

// ---------------------------------------------------------------- slogdet
std::vector<TensorSpec> LogAbsDet::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  expect_matrices(*this, in[0], true);
  Shape s = with_last(in[0].shape(), 2, {});
  return {{in[0].dtype(), s, {}}, {in[0].dtype(), s, {}}};
}

void LogAbsDet::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  Tensor lu = copy_of(in[0]);
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  out[1] = Tensor::empty(specs[1].dtype, specs[1].shape);
  std::int64_t n = in[0].shape()[in[0].rank() - 1], batch = batch_of(in[0].shape());
  std::vector<int> pivots(static_cast<std::size_t>(std::max<std::int64_t>(n, 1)));
  for_float(in[0].dtype(), [&](auto tag_value) {
    using T = decltype(tag_value);
    T* a = lu.mutable_data<T>().data();
    T* sign = out[0].mutable_data<T>().data();
    T* logabs = out[1].mutable_data<T>().data();
    for (std::int64_t b = 0; b < batch; ++b) {
      T* m = a + b * n * n;
      if (n && lp::getrf<T>(n, m, pivots.data()) != 0) {  // an exact zero pivot: singular
        sign[b] = T(0);
        logabs[b] = -std::numeric_limits<T>::infinity();
        continue;
      }
      T s = 1, l = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        T u = m[i * n + i];
        if (u < 0) s = -s;
        if (pivots[static_cast<std::size_t>(i)] != i + 1) s = -s;
        l += std::log(std::abs(u));
      }
      sign[b] = s;
      logabs[b] = l;
    }
  });
}

std::vector<Tensor> LogAbsDet::vjp(std::span<const Tensor> in, std::span<const Tensor>, std::span<const Tensor> cot,
                                   const std::vector<bool>&) const {
  if (!cot[1].defined()) return {zeros_like(in[0])};  // the sign is piecewise constant
  // d log|det a| / da = a^-T.
  Tensor g = expand_dims(expand_dims(cot[1], -1), -1);
  return {g * linalg::inv(in[0], /*adjoint=*/true)};
}

// ---------------------------------------------------------------- eigh
std::vector<TensorSpec> SelfAdjointEig::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  expect_matrices(*this, in[0], true);
  const Shape& s = in[0].shape();
  return {{in[0].dtype(), with_last(s, 1, {}), {}}, {in[0].dtype(), s, {}}};
}

void SelfAdjointEig::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[1] = copy_of(in[0]);
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  std::int64_t n = in[0].shape()[in[0].rank() - 1], batch = batch_of(in[0].shape());
  for_float(in[0].dtype(), [&](auto tag_value) {
    using T = decltype(tag_value);
    T* v = out[1].mutable_data<T>().data();
    T* w = out[0].mutable_data<T>().data();
    for (std::int64_t b = 0; b < batch && n; ++b) {
      if (!all_finite(v + b * n * n, n * n)) {  // NaN or inf in, NaN out (as TF's), not LAPACK's failure
        std::fill(v + b * n * n, v + (b + 1) * n * n, std::numeric_limits<T>::quiet_NaN());
        std::fill(w + b * n, w + (b + 1) * n, std::numeric_limits<T>::quiet_NaN());
        continue;
      }
      if (lp::syevd_lower<T>(n, v + b * n * n, w + b * n) != 0)
        fail(ErrorCode::internal, tag(*this), "the eigenvalue iteration did not converge for matrix " + std::to_string(b) + " of " + in[0].spec().str());
    }
  });
}

std::vector<Tensor> SelfAdjointEig::vjp(std::span<const Tensor>, std::span<const Tensor> out, std::span<const Tensor> cot,
                                        const std::vector<bool>&) const {
  // TF's: with F_ij = 1 / (e_j - e_i) off the diagonal, 0 on it,
  // grad_a = V (diag(ge) + F * (V^T gV)) V^T, folded into the lower triangle that eigh reads.
  const Tensor &e = out[0], &v = out[1];
  Tensor inner = cot[0].defined() ? linalg::diag(cot[0]) : zeros_like(v);
  if (cot[1].defined()) {
    Tensor gaps = expand_dims(e, -2) - expand_dims(e, -1);
    Tensor off = 1.0 - eye_like(v);
    Tensor f = where(off > 0.0, 1.0 / where(off > 0.0, gaps, ones_like(gaps)), zeros_like(gaps));
    inner = inner + f * matmul(v, cot[1], /*transpose_a=*/true);
  }
  Tensor g = matmul(v, matmul(inner, v, false, /*transpose_b=*/true));
  return {lower_with_half_diagonal(g + linalg::adjoint(g))};
}

// ---------------------------------------------------------------- svd
OpParams SingularValueDecomposition::parameters() const { return OpParams().add_flag("full_matrices", full_); }

std::vector<TensorSpec> SingularValueDecomposition::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  expect_matrices(*this, in[0], false);
  const Shape& s = in[0].shape();
  std::int64_t m = s[s.rank() - 2], n = s[s.rank() - 1];
  if (m == kDynamic || n == kDynamic) fail(ErrorCode::unimplemented, tag(*this), "needs known matrix dims, got " + in[0].spec().str());
  std::int64_t k = std::min(m, n);
  DType t = in[0].dtype();
  return {{t, with_last(s, 2, {k}), {}}, {t, with_last(s, 2, {m, full_ ? m : k}), {}}, {t, with_last(s, 2, {n, full_ ? n : k}), {}}};
}

void SingularValueDecomposition::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  for (int i = 0; i < 3; ++i) out[i] = Tensor::empty(specs[i].dtype, specs[i].shape);
  // Nothing to write (a batch of empty matrices, however many): no loop over the batch.
  if (out[0].num_elements() == 0 && out[1].num_elements() == 0 && out[2].num_elements() == 0) return;
  const Shape& s = in[0].shape();
  std::int64_t m = s[s.rank() - 2], n = s[s.rank() - 1], k = std::min(m, n), batch = batch_of(s);
  std::int64_t ucols = full_ ? m : k, vrows = full_ ? n : k;
  for_float(in[0].dtype(), [&](auto tag_value) {
    using T = decltype(tag_value);
    std::vector<T> a(static_cast<std::size_t>(m * n)), vt(static_cast<std::size_t>(std::max<std::int64_t>(vrows * n, 1)));
    const T* src = in[0].data<T>().data();
    T* sv = out[0].mutable_data<T>().data();
    T* u = out[1].mutable_data<T>().data();
    T* v = out[2].mutable_data<T>().data();
    for (std::int64_t b = 0; b < batch; ++b) {
      if (k == 0) {  // an empty matrix: u and v are identities (full) or empty
        for (std::int64_t i = 0; i < m * ucols; ++i) u[b * m * ucols + i] = T(i / ucols == i % ucols);
        for (std::int64_t i = 0; i < n * vrows; ++i) v[b * n * vrows + i] = T(i / vrows == i % vrows);
        continue;
      }
      std::copy(src + b * m * n, src + (b + 1) * m * n, a.begin());
      if (!all_finite(a.data(), m * n)) {  // NaN or inf in, NaN out (as TF's)
        std::fill(sv + b * k, sv + (b + 1) * k, std::numeric_limits<T>::quiet_NaN());
        std::fill(u + b * m * ucols, u + (b + 1) * m * ucols, std::numeric_limits<T>::quiet_NaN());
        std::fill(v + b * n * vrows, v + (b + 1) * n * vrows, std::numeric_limits<T>::quiet_NaN());
        continue;
      }
      if (lp::gesdd<T>(full_ ? 'A' : 'S', m, n, a.data(), sv + b * k, u + b * m * ucols, ucols, vt.data(), n) != 0)
        fail(ErrorCode::internal, tag(*this), "the SVD did not converge for matrix " + std::to_string(b) + " of " + in[0].spec().str());
      T* vb = v + b * n * vrows;  // v = vt^T
      for (std::int64_t i = 0; i < vrows; ++i)
        for (std::int64_t j = 0; j < n; ++j) vb[j * vrows + i] = vt[static_cast<std::size_t>(i * n + j)];
    }
  });
}

std::vector<Tensor> SingularValueDecomposition::vjp(std::span<const Tensor>, std::span<const Tensor> out, std::span<const Tensor> cot,
                             const std::vector<bool>&) const {
  if (cot[1].defined() || cot[2].defined())
    fail(ErrorCode::unimplemented, "linalg.svd",
         "the gradient through the singular vectors u and v is not supported yet (through the singular values it is)");
  if (full_) fail(ErrorCode::unimplemented, "linalg.svd", "the gradient with full_matrices=True is not supported yet");
  // d s_i = u_i^T da v_i: grad_a = u diag(gs) v^T.
  return {matmul(out[1] * expand_dims(cot[0], -2), out[2], false, /*transpose_b=*/true)};
}

// ---------------------------------------------------------------- qr
OpParams Qr::parameters() const { return OpParams().add_flag("full_matrices", full_); }

std::vector<TensorSpec> Qr::infer(std::span<const Tensor> in) const {
  expect_inputs(*this, in, 1);
  expect_matrices(*this, in[0], false);
  const Shape& s = in[0].shape();
  std::int64_t m = s[s.rank() - 2], n = s[s.rank() - 1];
  if (m == kDynamic || n == kDynamic) fail(ErrorCode::unimplemented, tag(*this), "needs known matrix dims, got " + in[0].spec().str());
  std::int64_t cols = full_ ? m : std::min(m, n);
  return {{in[0].dtype(), with_last(s, 2, {m, cols}), {}}, {in[0].dtype(), with_last(s, 2, {cols, n}), {}}};
}

void Qr::eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const {
  out[0] = Tensor::empty(specs[0].dtype, specs[0].shape);
  out[1] = Tensor::empty(specs[1].dtype, specs[1].shape);
  const Shape& s = in[0].shape();
  std::int64_t m = s[s.rank() - 2], n = s[s.rank() - 1], k = std::min(m, n), batch = batch_of(s);
  std::int64_t cols = full_ ? m : k;
  if (out[0].num_elements() == 0 && out[1].num_elements() == 0) return;  // nothing to write, however large the batch
  for_float(in[0].dtype(), [&](auto tag_value) {
    using T = decltype(tag_value);
    std::vector<T> a(static_cast<std::size_t>(m * n)), tau(static_cast<std::size_t>(std::max<std::int64_t>(k, 1)));
    const T* src = in[0].data<T>().data();
    T* q = out[0].mutable_data<T>().data();
    T* r = out[1].mutable_data<T>().data();
    for (std::int64_t b = 0; b < batch; ++b) {
      std::copy(src + b * m * n, src + (b + 1) * m * n, a.begin());
      if (k) lp::geqrf<T>(m, n, a.data(), tau.data());
      T* rb = r + b * cols * n;  // r: the upper triangle of a's first rows
      for (std::int64_t i = 0; i < cols; ++i)
        for (std::int64_t j = 0; j < n; ++j) rb[i * n + j] = (i < k && j >= i) ? a[static_cast<std::size_t>(i * n + j)] : T(0);
      T* qb = q + b * m * cols;  // q: the reflectors in the first k columns, then orgqr
      for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < cols; ++j) qb[i * cols + j] = j < n ? a[static_cast<std::size_t>(i * n + j)] : T(0);
      if (m && cols) lp::orgqr<T>(m, cols, k, qb, tau.data());
    }
  });
}

std::vector<Tensor> Qr::vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                            const std::vector<bool>&) const {
  const Shape& s = in[0].shape();
  std::int64_t m = s[s.rank() - 2], n = s[s.rank() - 1];
  if (full_ && m != n) fail(ErrorCode::unimplemented, "linalg.qr", "the gradient with full_matrices=True needs square matrices");
  if (m < n) fail(ErrorCode::unimplemented, "linalg.qr", "the gradient needs rows >= columns, got " + in[0].spec().str());
  // TF's (rows >= columns): with M = tril(Q^T dQ - dQ^T Q + R dR^T - dR R^T),
  // grad_a = Q (dR + M R^-T) + (dQ - Q Q^T dQ) R^-T.
  const Tensor &q = out[0], &r = out[1];
  Tensor dq = cot[0].defined() ? cot[0] : zeros_like(q);
  Tensor dr = cot[1].defined() ? cot[1] : zeros_like(r);
  auto times_r_inv_t = [&](const Tensor& x) {  // x R^-T = (R^-1 x^T)^T
    return linalg::adjoint(linalg::triangular_solve(r, linalg::adjoint(x), /*lower=*/false));
  };
  Tensor qdq = matmul(q, dq, /*transpose_a=*/true), rdr = matmul(r, dr, false, /*transpose_b=*/true);
  Tensor m_low = tril(qdq - linalg::adjoint(qdq) + rdr - linalg::adjoint(rdr));
  Tensor grad = matmul(q, dr + times_r_inv_t(m_low)) + times_r_inv_t(dq - matmul(q, qdq));
  return {grad};
}

// ---------------------------------------------------------------- records, factories
void detail::add_linalg_factories(detail::OpFactories& f) {
  f["cholesky"] = [](const OpParams&) { return std::make_shared<Cholesky>(); };
  f["matrix_solve"] = [](const OpParams& p) { return std::make_shared<MatrixSolve>(p.flag("adjoint")); };
  f["triangular_solve"] = [](const OpParams& p) { return std::make_shared<TriangularSolve>(!p.flag("upper"), p.flag("adjoint")); };
  f["log_abs_det"] = [](const OpParams&) { return std::make_shared<LogAbsDet>(); };
  f["self_adjoint_eig"] = [](const OpParams&) { return std::make_shared<SelfAdjointEig>(); };
  f["svd"] = [](const OpParams& p) { return std::make_shared<SingularValueDecomposition>(p.flag("full_matrices")); };
  f["qr"] = [](const OpParams& p) { return std::make_shared<Qr>(p.flag("full_matrices")); };
  add_linalg_extra_factories(f);
}

namespace {

template <class Op>
BatchingResult batch_matrices(const Op& op, BatchingCall call) { return batching::leading_batch(op, call); }

constexpr const char* kNoOnnx = "no ONNX operator computes it (opset 17)";

}  // namespace

void detail::register_linalg_rules() {
  register_op_rules<Cholesky>({.batching = batch_matrices<Cholesky>, .onnx_unsupported = kNoOnnx});
  register_op_rules<MatrixSolve>({.batching = batch_matrices<MatrixSolve>, .onnx_unsupported = kNoOnnx});
  register_op_rules<TriangularSolve>({.batching = batch_matrices<TriangularSolve>, .onnx_unsupported = kNoOnnx});
  register_op_rules<LogAbsDet>({.batching = batch_matrices<LogAbsDet>, .onnx_unsupported = kNoOnnx});
  register_op_rules<SelfAdjointEig>({.batching = batch_matrices<SelfAdjointEig>, .onnx_unsupported = kNoOnnx});
  register_op_rules<SingularValueDecomposition>({.batching = batch_matrices<SingularValueDecomposition>, .onnx_unsupported = kNoOnnx});
  register_op_rules<Qr>({.batching = batch_matrices<Qr>, .onnx_unsupported = kNoOnnx});
  register_linalg_extra_rules();
}

}  // namespace ef
