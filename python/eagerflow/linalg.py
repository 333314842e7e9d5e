"""ef.linalg, as tf.linalg: TF's names and arguments over ef::linalg (eagerflow/ops/linalg.h).

Decompositions (cholesky, solve, triangular_solve, slogdet, eigh, svd, qr) are ops computed by
LAPACK (OpenBLAS) with TF's gradients; the rest compose ops. Float32 and float64 matrices in the
last two axes, leading axes a batch.
"""
import numpy as _np

from . import _core
from . import math as _math

_l = _core._linalg

__all__ = ["adjoint", "band_part", "cholesky", "cholesky_solve", "cross", "det", "diag", "diag_part", "eig", "eigvals",
           "eigh", "eigvalsh",
           "einsum", "eye", "global_norm", "inv", "l2_normalize", "logdet", "lstsq", "matmul", "matrix_rank",
           "matrix_transpose", "matvec", "norm", "normalize", "pinv", "qr", "set_diag", "slogdet", "solve", "svd",
           "tensor_diag", "tensor_diag_part", "tensordot", "trace", "triangular_solve", "lu", "lu_solve",
           "lu_reconstruct", "lu_matrix_inverse", "expm", "sqrtm", "tridiagonal_solve", "tridiagonal_matmul",
           "banded_triangular_solve", "eigh_tridiagonal"]

eye = _math.eye
norm = _math.norm
l2_normalize = _math.l2_normalize
from ._einsum import einsum  # noqa: E402 - the op, plus diagonals (repeated labels)


def _only_main_diagonal(fn, k):
    if k != 0:
        raise NotImplementedError(f"linalg.{fn}: only the main diagonal (k=0) is supported")


def _swap_last(x):
    x = _core.convert_to_tensor(x)
    if x.ndim < 2:
        raise ValueError(f"adjoint needs a matrix (rank >= 2), got shape {tuple(x._shape_tuple)}")
    perm = list(range(x.ndim))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return _core.transpose(x, perm)


def adjoint(matrix, name=None):
    """tf.linalg.adjoint: the conjugate transpose over the last two axes."""
    x = _core.convert_to_tensor(matrix)
    if x.dtype.is_complex:
        return _core._complex.conj(_swap_last(x))
    return _l.adjoint(x)


def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    x = _swap_last(a)
    return _core._complex.conj(x) if conjugate else x


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


def eig(tensor, name=None):
    """tf.linalg.eig: (eigenvalues, right eigenvectors as columns of unit norm) of general square
    matrices, complex64 for float32/complex64 input and complex128 otherwise (LAPACK's geev)."""
    return _core._complex.eig(tensor)


def eigvals(tensor, name=None):
    """tf.linalg.eigvals: the eigenvalues of general square matrices (complex)."""
    return _core._complex.eigvals(tensor)


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
    """tf.linalg.matmul: adjoint_* transposes and conjugates (transposes, for real dtypes)."""
    if transpose_a and adjoint_a:
        raise ValueError("Only one of transpose_a and adjoint_a can be True.")
    if transpose_b and adjoint_b:
        raise ValueError("Only one of transpose_b and adjoint_b can be True.")
    if adjoint_a or adjoint_b:
        a = _core.convert_to_tensor(a)
        if a.dtype.is_complex or getattr(b, "dtype", None) in (_core.DType.complex64, _core.DType.complex128):
            return _core._complex.matmul(a, b, bool(transpose_a or adjoint_a), bool(transpose_b or adjoint_b),
                                         bool(adjoint_a), bool(adjoint_b))
    return _core.matmul(a, b, transpose_a=bool(transpose_a or adjoint_a), transpose_b=bool(transpose_b or adjoint_b))


def matvec(a, b, transpose_a=False, adjoint_a=False, a_is_sparse=False, b_is_sparse=False, name=None):
    if adjoint_a and _core.convert_to_tensor(a).dtype.is_complex:
        a = _core._complex.conj(a)
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


def lu(input, output_idx_type=_core.DType.int32, name=None):  # noqa: A002
    """(lu, p): input's rows p[i] are the rows of L U (L unit lower below lu's diagonal, U upper)."""
    if output_idx_type not in (_core.DType.int32, _core.DType.int64):
        raise TypeError(f"lu: output_idx_type must be int32 or int64, got {output_idx_type}")
    return tuple(_l.lu(input, output_idx_type == _core.DType.int64))


def lu_solve(lower_upper, perm, rhs, validate_args=False, name=None):
    return _l.lu_solve(lower_upper, perm, rhs)


def lu_reconstruct(lower_upper, perm, validate_args=False, name=None):
    return _l.lu_reconstruct(lower_upper, perm)


def lu_matrix_inverse(lower_upper, perm, validate_args=False, name=None):
    return _l.lu_matrix_inverse(lower_upper, perm)


def expm(input, name=None):  # noqa: A002
    """exp of square matrices (scaling and squaring with a Pade approximant)."""
    return _l.expm(input)


def sqrtm(input, name=None):  # noqa: A002
    """The principal square root of real square matrices (real Schur method); NaN where a real one does not
    exist (a negative real eigenvalue)."""
    return _l.sqrtm(input)


def _compact_from_matrix(m):
    """TF's compact [..., 3, M] (superdiagonal, diagonal, subdiagonal) of tridiagonal matrices."""
    m = _core.convert_to_tensor(m)
    shape = m._shape_tuple
    if len(shape) < 2:
        raise ValueError(f"Expected diagonals to have rank at least 2, got {len(shape)}")
    if shape[-1] != shape[-2]:
        raise ValueError(f"Expected last two dimensions of diagonals to be same, got {shape[-1]} and {shape[-2]}")
    pad_end = [[0, 0]] * (len(shape) - 2)
    sup = _core.pad(_l.diag_part(m[..., :-1, 1:]), pad_end + [[0, 1]])
    sub = _core.pad(_l.diag_part(m[..., 1:, :-1]), pad_end + [[1, 0]])
    return _core.stack([sup, _l.diag_part(m), sub], axis=-2)


def _compact_from_sequence(diagonals, pad_short):
    if not isinstance(diagonals, (tuple, list)) or len(diagonals) != 3:
        raise ValueError("Expected diagonals to be a sequence of length 3.")
    sup, main, sub = (_core.convert_to_tensor(d) for d in diagonals)
    if not (sup._shape_tuple[:-1] == main._shape_tuple[:-1] == sub._shape_tuple[:-1]):
        raise ValueError("Tensors representing the three diagonals must have the same shape, except for the last "
                         f"dimension, got {sub._shape_tuple}, {main._shape_tuple}, {sup._shape_tuple}")
    m = main._shape_tuple[-1]

    def padded(t, what, where):
        n = t._shape_tuple[-1]
        if n == m:
            return t
        if pad_short and n == m - 1:
            return _core.pad(t, [[0, 0]] * (len(t._shape_tuple) - 1) + [where])
        lengths = f"{m} or {m - 1}" if pad_short else f"{m}"
        raise ValueError(f"Expected {what} to be have length {lengths}, got {n}.")

    return _core.stack([padded(sup, "superdiagonal", [0, 1]), main, padded(sub, "subdiagonal", [1, 0])], axis=-2)


def tridiagonal_solve(diagonals, rhs, diagonals_format="compact", transpose_rhs=False, conjugate_rhs=False, name=None,
                      partial_pivoting=True, perturb_singular=False):
    """x with A x = rhs for tridiagonal A; NaN (as TF) where A cannot be solved."""
    if perturb_singular:
        raise NotImplementedError("tridiagonal_solve: perturb_singular=True is not supported")
    if diagonals_format == "sequence":
        diagonals = _compact_from_sequence(diagonals, pad_short=True)
    elif diagonals_format == "matrix":
        diagonals = _compact_from_matrix(diagonals)
    elif diagonals_format != "compact":
        raise ValueError(f"Unrecognized diagonals_format: {diagonals_format}")
    d = _core.convert_to_tensor(diagonals)
    r = _core.convert_to_tensor(rhs, dtype=d.dtype) if not isinstance(rhs, _core.Tensor) else rhs
    dr, rr = len(d._shape_tuple), len(r._shape_tuple)
    if dr < 2:
        raise ValueError(f"Expected diagonals to have rank at least 2, got {dr}")
    if rr not in (dr, dr - 1):
        raise ValueError(f"Expected the rank of rhs to be {dr - 1} or {dr}, got {rr}")
    if d._shape_tuple[:-2] != r._shape_tuple[:dr - 2]:
        raise ValueError(f"Batch shapes {d._shape_tuple[:-2]} and {r._shape_tuple[:dr - 2]} are incompatible")
    if d._shape_tuple[-2] != 3:
        raise ValueError(f"Expected 3 diagonals got {d._shape_tuple[-2]}")
    vector = rr == dr - 1
    if vector:
        r = _core.expand_dims(r, -1)
    elif transpose_rhs:
        r = _l.adjoint(r)
    if d._shape_tuple[-1] != r._shape_tuple[-2]:
        raise ValueError("Expected number of left-hand sided and right-hand sides to be equal, got "
                         f"{d._shape_tuple[-1]} and {r._shape_tuple[-2]}")
    x = _l.tridiagonal_solve(d, r, bool(partial_pivoting))
    return _core.squeeze(x, -1) if vector else x


def tridiagonal_matmul(diagonals, rhs, diagonals_format="compact", name=None):
    """A rhs for tridiagonal A given by its diagonals."""
    if diagonals_format == "sequence":
        diagonals = _compact_from_sequence(diagonals, pad_short=False)
    elif diagonals_format == "matrix":
        diagonals = _compact_from_matrix(diagonals)
    elif diagonals_format != "compact":
        raise ValueError(f"Unrecognized diagonals_format: {diagonals_format}")
    return _l.tridiagonal_matmul(diagonals, rhs)


def banded_triangular_solve(bands, rhs, lower=True, adjoint=False, name=None):
    """x with A x = rhs, A triangular with the bands [..., K, M] (LEFT_RIGHT alignment, as TF)."""
    return _l.banded_triangular_solve(bands, rhs, bool(lower), bool(adjoint))


def eigh_tridiagonal(alpha, beta, eigvals_only=True, select="a", select_range=None, tol=None, name=None):
    """Eigenvalues (ascending; and eigenvectors as columns) of the symmetric tridiagonal matrix with diagonal
    alpha [n] and off-diagonal beta [n - 1]. select: 'a' all, 'i' the indices select_range[0]..[1] (inclusive),
    'v' the eigenvalues in (select_range[0], select_range[1]]. tol is accepted for TF's signature; the
    eigenvalues come from LAPACK to working precision."""
    a = _core.convert_to_tensor(alpha)
    b = _core.convert_to_tensor(beta, dtype=a.dtype) if not isinstance(beta, _core.Tensor) else beta
    if a.dtype not in (_core.DType.float32, _core.DType.float64):
        raise TypeError(f"eigh_tridiagonal: alpha must be float32 or float64, got {a.dtype}")
    if b.dtype != a.dtype:
        raise TypeError(f"eigh_tridiagonal: alpha ({a.dtype}) and beta ({b.dtype}) must have the same dtype")
    if len(a._shape_tuple) != 1 or len(b._shape_tuple) != 1:
        raise ValueError("eigh_tridiagonal: alpha and beta must be vectors, got shapes "
                         f"{a._shape_tuple} and {b._shape_tuple}")
    n = a._shape_tuple[0]
    if b._shape_tuple[0] != max(n - 1, 0):
        raise ValueError(f"eigh_tridiagonal: beta must have n - 1 = {n - 1} elements, got {b._shape_tuple[0]}")
    if select not in ("a", "i", "v"):
        raise ValueError(f"eigh_tridiagonal: select must be 'a', 'i' or 'v', got {select!r}")
    if select != "a" and (select_range is None or len(select_range) != 2):
        raise ValueError("eigh_tridiagonal: select_range must be a pair when select is 'i' or 'v'")
    off = _l.diag(b)
    dense = _l.diag(a) + _core.pad(off, [[0, 1], [1, 0]]) + _core.pad(off, [[1, 0], [0, 1]])
    w, v = _l.eigh(dense)
    if select == "i":
        lo, hi = int(select_range[0]), int(select_range[1])
        if not 0 <= lo <= hi < n:
            raise ValueError(f"eigh_tridiagonal: select_range {select_range} must satisfy 0 <= lo <= hi < {n}")
        w, v = w[lo:hi + 1], v[:, lo:hi + 1]
    elif select == "v":
        from . import boolean_mask  # the package's, defined after this module loads
        keep = _core.logical_and(w > float(select_range[0]), w <= float(select_range[1]))
        w, v = boolean_mask(w, keep), boolean_mask(v, keep, axis=1)
    return w if eigvals_only else (w, v)


# TF's linear operators (pure Python, as TF's), imported last: they use the functions above.
from ._linear_operator import LinearOperator  # noqa: E402
from ._linear_operators import *  # noqa: E402,F401,F403
from ._linear_operators import __all__ as _operator_names  # noqa: E402

__all__ += ["LinearOperator"] + _operator_names
