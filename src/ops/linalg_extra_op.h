#pragma once
// More of tf.linalg's kernels as ops (src/ops/linalg_extra_op.cpp): the LU factorization and
// the tridiagonal solve. Their factories and rules join linalg's (add_linalg_factories and
// register_linalg_rules call the functions below).
#include "eagerflow/ops/primitive.h"
#include "ops/op_factories.h"

namespace ef {

// a [..., n, n] -> (lu [..., n, n], perm int32 [..., n]): the rows perm[i] of a are (L U)'s rows,
// L unit lower (strictly below lu's diagonal), U upper (on and above). A singular matrix is an
// INVALID_ARGUMENT error. Not differentiable, as TF's Lu.
class Lu : public MergeablePrimitive<Lu> {
 public:
  const char* name() const override { return "lu"; }
  bool is_differentiable() const override { return false; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
};

// (diagonals [..., 3, m] = (superdiagonal, diagonal, subdiagonal), rhs [..., m, k]) -> x with
// A x = rhs; the superdiagonal's last and the subdiagonal's first entries are not read. A matrix
// that cannot be solved (singular, or a zero pivot without pivoting) gives NaN, as TF's.
class TridiagonalSolve : public MergeablePrimitive<TridiagonalSolve> {
 public:
  explicit TridiagonalSolve(bool partial_pivoting) : pivoting_(partial_pivoting) {}
  const char* name() const override { return "tridiagonal_solve"; }
  OpParams parameters() const override;
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;

 private:
  bool pivoting_;
};

// a [..., n, n] -> its principal square root s (s s = a), real: the real Schur form a = z t z^T,
// the square root of the quasi-triangular t block by block (Higham 1987), s = z sqrt(t) z^T, as
// TF's. A negative real eigenvalue (no real square root) gives NaN.
class MatrixSquareRoot : public MergeablePrimitive<MatrixSquareRoot> {
 public:
  const char* name() const override { return "matrix_square_root"; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;
};

namespace detail {
void add_linalg_extra_factories(OpFactories& f);
void register_linalg_extra_rules();
}  // namespace detail

}  // namespace ef
