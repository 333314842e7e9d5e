// LAPACKE's row-major entry points transpose in and out; the matrices here are small next to
// the O(n^3) work, and one code path keeps every routine's layout the same as the tensors'.
#include "kernels/cpu/lapack.h"

#include <cblas.h>
#include <lapacke.h>

namespace ef::kernels::lapack {
namespace {
lapack_int li(std::int64_t v) { return static_cast<lapack_int>(v); }
}  // namespace

template <> int potrf_lower<float>(std::int64_t n, float* a) { return LAPACKE_spotrf(LAPACK_ROW_MAJOR, 'L', li(n), a, li(n)); }
template <> int potrf_lower<double>(std::int64_t n, double* a) { return LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', li(n), a, li(n)); }

template <> int getrf<float>(std::int64_t n, float* a, int* p) { return LAPACKE_sgetrf(LAPACK_ROW_MAJOR, li(n), li(n), a, li(n), p); }
template <> int getrf<double>(std::int64_t n, double* a, int* p) { return LAPACKE_dgetrf(LAPACK_ROW_MAJOR, li(n), li(n), a, li(n), p); }

template <> int gtsv<float>(std::int64_t n, std::int64_t k, float* dl, float* d, float* du, float* b) {
  return LAPACKE_sgtsv(LAPACK_ROW_MAJOR, li(n), li(k), dl, d, du, b, li(k));
}
template <> int gtsv<double>(std::int64_t n, std::int64_t k, double* dl, double* d, double* du, double* b) {
  return LAPACKE_dgtsv(LAPACK_ROW_MAJOR, li(n), li(k), dl, d, du, b, li(k));
}

template <> int getrs<float>(bool t, std::int64_t n, std::int64_t k, const float* lu, const int* p, float* b) {
  return LAPACKE_sgetrs(LAPACK_ROW_MAJOR, t ? 'T' : 'N', li(n), li(k), lu, li(n), p, b, li(k));
}
template <> int getrs<double>(bool t, std::int64_t n, std::int64_t k, const double* lu, const int* p, double* b) {
  return LAPACKE_dgetrs(LAPACK_ROW_MAJOR, t ? 'T' : 'N', li(n), li(k), lu, li(n), p, b, li(k));
}

template <> void trsm_left<float>(bool lower, bool t, std::int64_t n, std::int64_t k, const float* a, float* b) {
  cblas_strsm(CblasRowMajor, CblasLeft, lower ? CblasLower : CblasUpper, t ? CblasTrans : CblasNoTrans, CblasNonUnit,
              li(n), li(k), 1.0f, a, li(n), b, li(k));
}
template <> void trsm_left<double>(bool lower, bool t, std::int64_t n, std::int64_t k, const double* a, double* b) {
  cblas_dtrsm(CblasRowMajor, CblasLeft, lower ? CblasLower : CblasUpper, t ? CblasTrans : CblasNoTrans, CblasNonUnit,
              li(n), li(k), 1.0, a, li(n), b, li(k));
}

template <> int syevd_lower<float>(std::int64_t n, float* a, float* w) { return LAPACKE_ssyevd(LAPACK_ROW_MAJOR, 'V', 'L', li(n), a, li(n), w); }
template <> int syevd_lower<double>(std::int64_t n, double* a, double* w) { return LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'L', li(n), a, li(n), w); }

template <> int gesdd<float>(char jobz, std::int64_t m, std::int64_t n, float* a, float* s, float* u, std::int64_t ldu, float* vt, std::int64_t ldvt) {
  return LAPACKE_sgesdd(LAPACK_ROW_MAJOR, jobz, li(m), li(n), a, li(n), s, u, li(ldu), vt, li(ldvt));
}
template <> int gesdd<double>(char jobz, std::int64_t m, std::int64_t n, double* a, double* s, double* u, std::int64_t ldu, double* vt, std::int64_t ldvt) {
  return LAPACKE_dgesdd(LAPACK_ROW_MAJOR, jobz, li(m), li(n), a, li(n), s, u, li(ldu), vt, li(ldvt));
}

template <> int gees<float>(std::int64_t n, float* a, float* wr, float* wi, float* vs) {
  lapack_int sdim = 0;
  return LAPACKE_sgees(LAPACK_ROW_MAJOR, 'V', 'N', nullptr, li(n), a, li(n), &sdim, wr, wi, vs, li(n));
}
template <> int gees<double>(std::int64_t n, double* a, double* wr, double* wi, double* vs) {
  lapack_int sdim = 0;
  return LAPACKE_dgees(LAPACK_ROW_MAJOR, 'V', 'N', nullptr, li(n), a, li(n), &sdim, wr, wi, vs, li(n));
}

template <> int geqrf<float>(std::int64_t m, std::int64_t n, float* a, float* tau) { return LAPACKE_sgeqrf(LAPACK_ROW_MAJOR, li(m), li(n), a, li(n), tau); }
template <> int geqrf<double>(std::int64_t m, std::int64_t n, double* a, double* tau) { return LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, li(m), li(n), a, li(n), tau); }

template <> int orgqr<float>(std::int64_t m, std::int64_t cols, std::int64_t k, float* q, const float* tau) {
  return LAPACKE_sorgqr(LAPACK_ROW_MAJOR, li(m), li(cols), li(k), q, li(cols), tau);
}
template <> int orgqr<double>(std::int64_t m, std::int64_t cols, std::int64_t k, double* q, const double* tau) {
  return LAPACKE_dorgqr(LAPACK_ROW_MAJOR, li(m), li(cols), li(k), q, li(cols), tau);
}

}  // namespace ef::kernels::lapack
