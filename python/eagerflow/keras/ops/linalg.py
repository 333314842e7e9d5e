"""keras.ops.linalg: Keras 3's linear algebra (NumPy's semantics for norm, qr modes, svd) on ef.linalg."""
import eagerflow as _ef
from ... import cast as _cast
from ._dtypes import float_dtype, promote, tensor, floatx
from .core import jvp  # noqa: F401 - keras.ops.linalg.jvp is the same function


def _f(x):
    return tensor(x, float_dtype(x))


def _square(t):
    if t.shape.rank < 2 or (t.shape[-1] is not None and t.shape[-1] != t.shape[-2]):
        raise ValueError(f"Input must be a square matrix (or a batch of them). Received shape: {t.shape}")


def cholesky(x, upper=False):
    t = _f(x)
    _square(t)
    out = _ef.linalg.cholesky(t)
    return _ef.linalg.adjoint(out) if upper else out


def cholesky_inverse(x, upper=False):
    t = _f(x)
    lower = _ef.linalg.adjoint(t) if upper else t
    eye = _ef.eye(t.shape[-1], dtype=t.dtype)
    if t.shape.rank > 2:
        eye = _ef.broadcast_to(eye, list(t.shape) if None not in t.shape else _ef.shape(t))
    return _ef.linalg.cholesky_solve(lower, eye)


def det(x):
    t = _f(x)
    _square(t)
    return _ef.linalg.det(t)


def slogdet(x):
    t = _f(x)
    out = _ef.linalg.slogdet(t)
    return out[0], out[1]


def logdet(x):
    # log|det| of a positive-definite matrix (Keras' TF backend: tf.linalg.logdet)
    t = _f(x)
    return _ef.linalg.logdet(t)


def eig(x):
    """Eigenvalues and right eigenvectors of general square matrices, complex (as Keras' TF
    backend: tf.linalg.eig)."""
    t = _f(x)
    _square(t)
    return _ef.linalg.eig(t)


def eigh(x):
    t = _f(x)
    _square(t)
    w, v = _ef.linalg.eigh(t)
    return w, v


def inv(x):
    t = _f(x)
    _square(t)
    return _ef.linalg.inv(t)


def solve(a, b):
    (a, b), dt = promote(a, b)
    if dt not in ("float16", "bfloat16", "float32", "float64"):
        a, b = tensor(a, floatx()), tensor(b, floatx())
    if b.shape.rank == a.shape.rank - 1:
        return _ef.squeeze(_ef.linalg.solve(a, _ef.expand_dims(b, -1)), [-1])
    return _ef.linalg.solve(a, b)


def solve_triangular(a, b, lower=False):
    (a, b), dt = promote(a, b)
    if dt not in ("float16", "bfloat16", "float32", "float64"):
        a, b = tensor(a, floatx()), tensor(b, floatx())
    if b.shape.rank == a.shape.rank - 1:
        return _ef.squeeze(_ef.linalg.triangular_solve(a, _ef.expand_dims(b, -1), lower=lower), [-1])
    return _ef.linalg.triangular_solve(a, b, lower=lower)


def lstsq(a, b, rcond=None):
    (a, b), dt = promote(a, b)
    if dt not in ("float16", "bfloat16", "float32", "float64"):
        a, b = tensor(a, floatx()), tensor(b, floatx())
    vec = b.shape.rank == 1
    bb = _ef.expand_dims(b, -1) if vec else b
    out = _ef.matmul(pinv(a, rcond=rcond), bb)
    return _ef.squeeze(out, [-1]) if vec else out


def lu_factor(x):
    t = _f(x)
    lu, p = _ef.linalg.lu(t)
    return lu, _cast(p, _ef.int32)


def pinv(x, rcond=None):
    t = _f(x)
    if rcond is None:
        return _ef.linalg.pinv(t)
    return _ef.linalg.pinv(t, rcond=rcond)


def matrix_rank(x, tol=None):
    t = _f(x)
    return _cast(_ef.linalg.matrix_rank(t, tol=tol), _ef.int32)


def qr(x, mode="reduced"):
    if mode not in ("reduced", "complete"):
        raise ValueError(f"`mode` argument value not supported. Expected one of {{'reduced', 'complete'}}. "
                         f"Received: mode={mode}")
    t = _f(x)
    q, r = _ef.linalg.qr(t, full_matrices=mode == "complete")
    return q, r


def svd(x, full_matrices=True, compute_uv=True):
    t = _f(x)
    if not compute_uv:
        return _ef.linalg.svd(t, full_matrices=full_matrices, compute_uv=False)
    s, u, v = _ef.linalg.svd(t, full_matrices=full_matrices, compute_uv=True)
    return u, s, _ef.linalg.adjoint(v)  # NumPy's (u, s, vh)


def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002 - NumPy's name
    t = _f(x)
    rank = t.shape.rank
    if axis is None:
        axes = list(range(rank))
    elif isinstance(axis, int):
        axes = [axis % rank]
    else:
        axes = [int(a) % rank for a in axis]
    if axis is None and ord is None:
        out = _ef.sqrt(_ef.reduce_sum(_ef.square(_ef.abs(t)), axis=axes, keepdims=keepdims))
        return out
    if axis is None and rank > 2 and ord is not None:
        raise ValueError(f"Improper number of dimensions to norm. Received: x.ndim={rank}")
    if len(axes) == 1:
        a = t if not t.dtype.is_complex else _ef.abs(t)
        a = _ef.abs(a)
        o = 2 if ord is None else ord
        if isinstance(o, str):
            raise ValueError(f"Invalid `ord` argument for vector norm. Received: ord={ord}")
        if o == float("inf"):
            return _ef.reduce_max(a, axis=axes, keepdims=keepdims)
        if o == float("-inf"):
            return _ef.reduce_min(a, axis=axes, keepdims=keepdims)
        if o == 0:
            return _cast(_ef.reduce_sum(_cast(_ef.not_equal(a, _cast(0, a.dtype)), a.dtype), axis=axes,
                                        keepdims=keepdims), a.dtype)
        if o == 1:
            return _ef.reduce_sum(a, axis=axes, keepdims=keepdims)
        if o == 2:
            return _ef.sqrt(_ef.reduce_sum(_ef.square(a), axis=axes, keepdims=keepdims))
        p = _cast(o, a.dtype)
        return _ef.pow(_ef.reduce_sum(_ef.pow(a, p), axis=axes, keepdims=keepdims), _cast(1.0, a.dtype) / p)
    if len(axes) != 2:
        raise ValueError(f"Invalid axis for norm: {axis}")
    r, c = axes
    a = _ef.abs(t)
    if ord is None or ord == "fro":
        return _ef.sqrt(_ef.reduce_sum(_ef.square(a), axis=axes, keepdims=keepdims))
    if ord in (1, -1):
        s = _ef.reduce_sum(a, axis=r, keepdims=True)
        out = (_ef.reduce_max if ord == 1 else _ef.reduce_min)(s, axis=c, keepdims=True)
    elif ord in (float("inf"), float("-inf")):
        s = _ef.reduce_sum(a, axis=c, keepdims=True)
        out = (_ef.reduce_max if ord > 0 else _ef.reduce_min)(s, axis=r, keepdims=True)
    elif ord in (2, -2, "nuc"):
        others = [i for i in range(rank) if i not in axes]
        m = _ef.transpose(t, others + [r, c])
        sv = _ef.linalg.svd(m, compute_uv=False)
        out = _ef.reduce_sum(sv, -1) if ord == "nuc" else (_ef.reduce_max(sv, -1) if ord == 2 else _ef.reduce_min(sv, -1))
        if keepdims:
            for ax in sorted(axes):
                out = _ef.expand_dims(out, ax)
        return out
    else:
        raise ValueError(f"Invalid `ord` argument for matrix norm. Received: ord={ord}")
    return out if keepdims else _ef.squeeze(out, axes)


