#pragma once
// LAPACK (through LAPACKE, row-major) and BLAS's trsm for float and double: one name per routine
// for both dtypes, so the linalg kernels are written once as templates. Each returns LAPACK's
// info (0: done; > 0: the matrix is singular / not positive definite / did not converge).
#include <cstdint>

namespace ef::kernels::lapack {

template <class T> int potrf_lower(std::int64_t n, T* a);                    // a := L (lower part)
template <class T> int getrf(std::int64_t n, T* a, int* pivots);              // a := L\U, row pivots (1-based)
// Tridiagonal a x = b with partial pivoting; dl, d, du (n-1, n, n-1) are overwritten; b [n, k].
template <class T> int gtsv(std::int64_t n, std::int64_t k, T* dl, T* d, T* du, T* b);
template <class T> int getrs(bool transpose, std::int64_t n, std::int64_t k, const T* lu, const int* pivots, T* b);
template <class T> void trsm_left(bool lower, bool transpose, std::int64_t n, std::int64_t k, const T* a, T* b);
template <class T> int syevd_lower(std::int64_t n, T* a, T* w);              // a := eigenvectors (columns)
// jobz 'A' (full), 'S' (thin) or 'N' (values only); a is destroyed.
template <class T> int gesdd(char jobz, std::int64_t m, std::int64_t n, T* a, T* s, T* u, std::int64_t ldu, T* vt, std::int64_t ldvt);
// The real Schur form a := T (quasi upper triangular: 2x2 blocks for complex pairs), a = vs T vs^T.
template <class T> int gees(std::int64_t n, T* a, T* wr, T* wi, T* vs);
template <class T> int geqrf(std::int64_t m, std::int64_t n, T* a, T* tau);
// q [m, cols] (row-major, lda = cols) := the first cols columns of Q from k reflectors.
template <class T> int orgqr(std::int64_t m, std::int64_t cols, std::int64_t k, T* q, const T* tau);

}  // namespace ef::kernels::lapack
