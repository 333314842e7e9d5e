#pragma once
// The decompositions of ef::linalg as ops (src/ops/linalg_op.cpp): kernels over LAPACK
// (src/kernels/cpu/lapack.h) for each matrix of the batch, gradients composed of ops.
#include "eagerflow/ops/primitive.h"

namespace ef {

// a -> L, lower triangular, L L^T = a.
class Cholesky : public MergeablePrimitive<Cholesky> {
 public:
  const char* name() const override { return "cholesky"; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;
};

// (a, rhs) -> x with a x = rhs (a^T x = rhs when adjoint), by LU with partial pivoting.
class MatrixSolve : public MergeablePrimitive<MatrixSolve> {
 public:
  explicit MatrixSolve(bool adjoint) : adjoint_(adjoint) {}
  const char* name() const override { return "matrix_solve"; }
  OpParams parameters() const override;
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;

 private:
  bool adjoint_;
};

// (a, rhs) -> x with tri(a) x = rhs, tri the lower or upper triangle of a (transposed when adjoint).
class TriangularSolve : public MergeablePrimitive<TriangularSolve> {
 public:
  TriangularSolve(bool lower, bool adjoint) : lower_(lower), adjoint_(adjoint) {}
  const char* name() const override { return "triangular_solve"; }
  OpParams parameters() const override;
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;

 private:
  bool lower_, adjoint_;
};

// a -> (sign(det a), log|det a|) by LU.
class LogAbsDet : public MergeablePrimitive<LogAbsDet> {
 public:
  const char* name() const override { return "log_abs_det"; }
  bool accepts_missing_cotangents() const override { return true; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;
};

// Symmetric a (its lower triangle) -> (eigenvalues ascending, eigenvectors as columns).
class SelfAdjointEig : public MergeablePrimitive<SelfAdjointEig> {
 public:
  const char* name() const override { return "self_adjoint_eig"; }
  bool accepts_missing_cotangents() const override { return true; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;
};

// a [m, n] -> (s [k] descending, u, v) with a = u diag(s) v^T; k = min(m, n).
class SingularValueDecomposition : public MergeablePrimitive<SingularValueDecomposition> {
 public:
  explicit SingularValueDecomposition(bool full_matrices) : full_(full_matrices) {}
  const char* name() const override { return "svd"; }
  OpParams parameters() const override;
  bool accepts_missing_cotangents() const override { return true; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;

 private:
  bool full_;
};

// a [m, n] -> (q, r) with a = q r.
class Qr : public MergeablePrimitive<Qr> {
 public:
  explicit Qr(bool full_matrices) : full_(full_matrices) {}
  const char* name() const override { return "qr"; }
  OpParams parameters() const override;
  bool accepts_missing_cotangents() const override { return true; }
  std::vector<TensorSpec> infer(std::span<const Tensor> in) const override;
  void eval(std::span<const Tensor> in, std::span<const TensorSpec> specs, std::span<Tensor> out) const override;
  std::vector<Tensor> vjp(std::span<const Tensor> in, std::span<const Tensor> out, std::span<const Tensor> cot,
                          const std::vector<bool>& needed) const override;

 private:
  bool full_;
};

}  // namespace ef
