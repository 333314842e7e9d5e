"""ef.linalg, as tf.linalg: TF's names and arguments over ef::linalg (eagerflow/ops/linalg.h).

Decompositions (cholesky, solve, triangular_solve, slogdet, eigh, svd, qr) are ops computed by
LAPACK (OpenBLAS) with TF's gradients; the rest compose ops. Float32 and float64 matrices in the
last two axes, leading axes a batch.
"""
import numpy as _np

from . import _core
from . import math as _math

_l = _core._linalg

__all__ = ["adjoint", "band_part", "cholesky", "cholesky_solve", "cross", "det", "diag", "diag_part", "eigh", "eigvalsh",
           "einsum", "eye", "global_norm", "inv", "l2_normalize", "logdet", "lstsq", "matmul", "matrix_rank",
           "matrix_transpose", "matvec", "norm", "normalize", "pinv", "qr", "set_diag", "slogdet", "solve", "svd",
           "tensor_diag", "tensor_diag_part", "tensordot", "trace", "triangular_solve"]

eye = _math.eye
norm = _math.norm
l2_normalize = _math.l2_normalize
einsum = _core.einsum


def _only_main_diagonal(fn, k):
    if k != 0:
        raise NotImplementedError(f"linalg.{fn}: only the main diagonal (k=0) is supported")


def adjoint(matrix, name=None):
    """The last two axes swapped (real dtypes: the conjugate is the matrix itself)."""
    return _l.adjoint(matrix)


def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    return _l.adjoint(a)


def band_part(input, num_lower, num_upper, name=None):  # noqa: A002 - TF's names
    return _l.band_part(input, int(num_lower), int(num_upper))


def cholesky(input, name=None):  # noqa: A002
    return _l.cholesky(input)


def cholesky_solve(chol, rhs, name=None):
    return _l.cholesky_solve(chol, rhs)


def cross(a, b, name=None):
    return _l.cross(a, b)


def det(input, name=None):  # noqa: A002
    return _l.det(input)


def logdet(matrix, name=None):
    return _l.logdet(matrix)


def slogdet(input, name=None):  # noqa: A002
    """(sign, log_abs_determinant)."""
    return tuple(_l.slogdet(input))


def diag(diagonal, name="diag", k=0, num_rows=-1, num_cols=-1, padding_value=0, align="RIGHT_LEFT"):
    _only_main_diagonal("diag", k)
    return _l.diag(diagonal)


def diag_part(input, name="diag_part", k=0, padding_value=0, align="RIGHT_LEFT"):  # noqa: A002
    _only_main_diagonal("diag_part", k)
    return _l.diag_part(input)


def set_diag(input, diagonal, name="set_diag", k=0, align="RIGHT_LEFT"):  # noqa: A002
    _only_main_diagonal("set_diag", k)
    return _l.set_diag(input, diagonal)


def tensor_diag(diagonal, name=None):
    """tf.linalg.tensor_diag: [d0, ..., dk] -> [d0, ..., dk, d0, ..., dk] with the values on the diagonal."""
    d = _core.convert_to_tensor(diagonal)
    shape = list(d._shape_tuple)
    n = int(_np.prod(shape)) if shape else 1
    return _core.reshape(_l.diag(_core.reshape(d, [n])), shape + shape)


def tensor_diag_part(input, name=None):  # noqa: A002
    x = _core.convert_to_tensor(input)
    shape = list(x._shape_tuple)
    half = len(shape) // 2
    if len(shape) % 2 or shape[:half] != shape[half:]:
        raise ValueError(f"tensor_diag_part: input must have shape [d..., d...], got {shape}")
    n = int(_np.prod(shape[:half])) if half else 1
    return _core.reshape(_l.diag_part(_core.reshape(x, [n, n])), shape[:half])


def eigh(tensor, name=None):
    """(eigenvalues ascending, eigenvectors as columns) of symmetric matrices (lower triangles read)."""
    return tuple(_l.eigh(tensor))


def eigvalsh(tensor, name=None):
    return _l.eigvalsh(tensor)


def svd(tensor, full_matrices=False, compute_uv=True, name=None):
    """(s, u, v) with tensor = u diag(s) v^T, s descending; s alone when compute_uv is False."""
    if not compute_uv:
        return _l.singular_values(tensor)
    return tuple(_l.svd(tensor, bool(full_matrices)))


def qr(input, full_matrices=False, name=None):  # noqa: A002
    """(q, r) with input = q r."""
    return tuple(_l.qr(input, bool(full_matrices)))


def inv(input, adjoint=False, name=None):  # noqa: A002
    return _l.inv(input, bool(adjoint))


def solve(matrix, rhs, adjoint=False, name=None):
    return _l.solve(matrix, rhs, bool(adjoint))


def triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    return _l.triangular_solve(matrix, rhs, bool(lower), bool(adjoint))


def lstsq(matrix, rhs, l2_regularizer=0.0, fast=True, name=None):
    """Least squares by the normal equations (TF's fast path; fast=False is the same here)."""
    return _l.lstsq(matrix, rhs, float(l2_regularizer))


def pinv(a, rcond=None, validate_args=False, name=None):
    return _l.pinv(a, -1.0 if rcond is None else float(rcond))


def matrix_rank(a, tol=None, validate_args=False, name=None):
    """The number of singular values above tol (default: max(m, n) * eps * the largest)."""
    x = _core.convert_to_tensor(a)
    s = _l.singular_values(x)
    if tol is None:
        m, n = x._shape_tuple[-2:]
        eps = _np.finfo(_np.float32 if x.dtype == _core.DType.float32 else _np.float64).eps
        tol = _core.reduce_max(s, axis=-1, keepdims=True) * float(max(m, n) * eps)
    return _core.reduce_sum(_core.cast(s > tol, _core.DType.int32), axis=-1)


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False, a_is_sparse=False,
           b_is_sparse=False, output_type=None, grad_a=False, grad_b=False, name=None):
    """tf.linalg.matmul (adjoint_* is transpose_* for real dtypes)."""
    return _core.matmul(a, b, transpose_a=bool(transpose_a or adjoint_a), transpose_b=bool(transpose_b or adjoint_b))


def matvec(a, b, transpose_a=False, adjoint_a=False, a_is_sparse=False, b_is_sparse=False, name=None):
    return _l.matvec(a, b, bool(transpose_a or adjoint_a))


def tensordot(a, b, axes, name=None):
    """tf.tensordot: an int (a's last axes against b's first) or a pair of axis lists."""
    if isinstance(axes, int) or (hasattr(axes, "ndim") and getattr(axes, "ndim", 1) == 0):
        return _l.tensordot(a, b, int(axes))
    a_axes, b_axes = axes
    a_axes = [int(a_axes)] if _np.ndim(a_axes) == 0 else [int(v) for v in a_axes]
    b_axes = [int(b_axes)] if _np.ndim(b_axes) == 0 else [int(v) for v in b_axes]
    return _l.tensordot_axes(a, b, a_axes, b_axes)


def trace(x, name=None):
    return _l.trace(x)


def global_norm(t_list, name=None):
    """sqrt(sum of every element squared) over a list of tensors (None entries skipped)."""
    if isinstance(t_list, _core.Tensor) or not hasattr(t_list, "__iter__"):
        raise TypeError("global_norm: t_list must be a sequence of tensors")
    return _math.clip_by_global_norm(t_list, 1.0)[1]


def normalize(tensor, ord="euclidean", axis=None, name=None):  # noqa: A002
    """(tensor / norm, norm) with the norm kept over `axis`."""
    n = _math.norm(tensor, ord=ord, axis=axis, keepdims=True)
    return _core.convert_to_tensor(tensor) / n, n
