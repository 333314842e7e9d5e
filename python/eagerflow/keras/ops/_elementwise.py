"""keras.ops' elementwise functions (NumPy's names and Keras' dtype rules) on eagerflow's ops."""
import math as _pymath

from ... import math as _m
from ... import cast as _cast, where as _where
from ...dtypes import as_dtype
from ._dtypes import broadcast_shape, shape_of, filled, dtype_of, float_dtype, promote, tensor, floatx

import eagerflow as _ef


def _float_unary(fn):
    def op(x):
        return fn(tensor(x, float_dtype(x)))
    return op


def _same_unary(fn):
    def op(x):
        return fn(tensor(x))
    return op


def _binary(fn, out_float=False):
    def op(x1, x2):
        (a, b), dt = promote(x1, x2)
        if out_float and dt not in ("bfloat16", "float16", "float32", "float64"):
            a, b = tensor(a, floatx()), tensor(b, floatx())
        return fn(a, b)
    return op


def _compare(fn):
    def op(x1, x2):
        (a, b), _ = promote(x1, x2)
        return fn(a, b)
    return op


sqrt = _float_unary(_m.sqrt)
rsqrt = _float_unary(_m.rsqrt)
exp = _float_unary(_m.exp)
expm1 = _float_unary(_m.expm1)
log = _float_unary(_m.log)
log1p = _float_unary(_m.log1p)
sin, cos, tan = _float_unary(_m.sin), _float_unary(_m.cos), _float_unary(_m.tan)
sinh, cosh, tanh = _float_unary(_m.sinh), _float_unary(_m.cosh), _float_unary(_m.tanh)
arcsin, arccos, arctan = _float_unary(_m.asin), _float_unary(_m.acos), _float_unary(_m.atan)
arcsinh, arccosh, arctanh = _float_unary(_m.asinh), _float_unary(_m.acosh), _float_unary(_m.atanh)
erf, erfinv = _float_unary(_m.erf), _float_unary(_m.erfinv)
erfc = _float_unary(_m.erfc)
log2 = _float_unary(lambda x: _m.log(x) / _cast(_pymath.log(2.0), x.dtype))
log10 = _float_unary(lambda x: _m.log(x) / _cast(_pymath.log(10.0), x.dtype))
exp2 = _float_unary(lambda x: _m.pow(_cast(2.0, x.dtype), x))
cbrt = _float_unary(lambda x: _m.sign(x) * _m.pow(_m.abs(x), _cast(1.0 / 3.0, x.dtype)))
reciprocal = _float_unary(lambda x: _cast(1.0, x.dtype) / x)
deg2rad = _float_unary(lambda x: x * _cast(_pymath.pi / 180.0, x.dtype))
rad2deg = _float_unary(lambda x: x * _cast(180.0 / _pymath.pi, x.dtype))
sinc = _float_unary(lambda x: _where(_m.equal(x, _cast(0, x.dtype)), _ef.ones_like(x),
                                     _m.sin(_cast(_pymath.pi, x.dtype) * _where(_m.equal(x, _cast(0, x.dtype)),
                                                                               _ef.ones_like(x), x))
                                     / (_cast(_pymath.pi, x.dtype) * _where(_m.equal(x, _cast(0, x.dtype)),
                                                                           _ef.ones_like(x), x))))
i0 = _float_unary(lambda x: _i0_series(x))


def _i0_series(x):
    # sum_k ((x/2)^(2k)) / (k!)^2, enough terms for float64 accuracy up to |x| ~ 30
    q = _m.square(x / _cast(2.0, x.dtype))
    term, total = _ef.ones_like(x), _ef.ones_like(x)
    for k in range(1, 80):
        term = term * q / _cast(float(k * k), x.dtype)
        total = total + term
    return total


def abs(x):  # noqa: A001 - NumPy's name
    t = tensor(x)
    return t if dtype_of(t) == "bool" or dtype_of(t).startswith("uint") else _m.abs(t)


absolute = abs


def fabs(x):
    return _m.abs(tensor(x, float_dtype(x)))


def negative(x):
    return _m.negative(tensor(x))


def square(x):
    t = tensor(x)
    if dtype_of(t) == "bool":
        t = tensor(t, "int32")
    return _m.square(t)


def sign(x):
    t = tensor(x)
    return t if dtype_of(t) == "bool" else _m.sign(t)


def _rounding(fn):
    def op(x):
        t = tensor(x, float_dtype(x))
        return fn(t)
    return op


floor = _rounding(_m.floor)
ceil = _rounding(_m.ceil)


def trunc(x):
    t = tensor(x)
    if dtype_of(t) not in ("bfloat16", "float16", "float32", "float64"):
        return t
    return _m.sign(t) * _m.floor(_m.abs(t))


def round(x, decimals=0):  # noqa: A001 - NumPy's name
    t = tensor(x)
    if dtype_of(t) not in ("bfloat16", "float16", "float32", "float64"):
        if decimals >= 0:
            return t
        f = 10 ** (-decimals)
        return _cast(_m.round(_cast(t, _ef.float64) / f) * f, t.dtype)
    if decimals == 0:
        return _m.round(t)
    f = _cast(10.0 ** decimals, t.dtype)
    return _m.round(t * f) / f


def isnan(x):
    t = tensor(x)
    return _m.is_nan(t) if dtype_of(t) in ("bfloat16", "float16", "float32", "float64") else filled(t, False, "bool")


def isinf(x):
    t = tensor(x)
    return _m.is_inf(t) if dtype_of(t) in ("bfloat16", "float16", "float32", "float64") else filled(t, False, "bool")


def isfinite(x):
    t = tensor(x)
    return _m.is_finite(t) if dtype_of(t) in ("bfloat16", "float16", "float32", "float64") else filled(t, True, "bool")


def isposinf(x):
    t = tensor(x)
    return _m.logical_and(isinf(t), _m.greater(t, _cast(0, t.dtype)))


def isneginf(x):
    t = tensor(x)
    return _m.logical_and(isinf(t), _m.less(t, _cast(0, t.dtype)))


def isreal(x):
    t = tensor(x)
    if dtype_of(t).startswith("complex"):
        return _m.equal(_m.imag(t), _cast(0, _m.imag(t).dtype))
    return filled(t, True, "bool")


def signbit(x):
    t = tensor(x)
    d = dtype_of(t)
    if d == "bool" or d.startswith("uint"):
        return filled(t, False, "bool")
    if d in ("bfloat16", "float16", "float32", "float64"):
        # -0.0 and -nan have the sign bit: 1/x tells -0.0 apart, the raw bits would say it for nan too
        neg_zero = _m.logical_and(_m.equal(t, _cast(0, t.dtype)), _m.less(_cast(1.0, t.dtype) / t, _cast(0, t.dtype)))
        return _m.logical_or(_m.less(t, _cast(0, t.dtype)), neg_zero)
    return _m.less(t, _cast(0, t.dtype))


def nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    t = tensor(x)
    d = dtype_of(t)
    if d not in ("bfloat16", "float16", "float32", "float64"):
        return t
    info = _np_finfo(d)
    t = _where(_m.is_nan(t), filled(t, _cast(nan, t.dtype)), t)
    t = _where(isposinf(t), filled(t, _cast(info.max if posinf is None else posinf, t.dtype)), t)
    t = _where(isneginf(t), filled(t, _cast(info.min if neginf is None else neginf, t.dtype)), t)
    return t


def _np_finfo(d):
    import numpy as np
    if d == "bfloat16":  # NumPy has no bfloat16: its largest finite value
        return type("BFloat16Info", (), {"max": 3.3895313892515355e38, "min": -3.3895313892515355e38})
    return np.finfo(d)


def logical_not(x):
    return _m.logical_not(tensor(x, "bool"))


def _logical(fn):
    def op(x1, x2):
        return fn(tensor(x1, "bool"), tensor(x2, "bool"))
    return op


logical_and = _logical(_m.logical_and)
logical_or = _logical(_m.logical_or)
logical_xor = _logical(_m.logical_xor)

add = _binary(_m.add)
subtract = _binary(_m.subtract)
multiply = _binary(_m.multiply)
maximum = _binary(_m.maximum)
minimum = _binary(_m.minimum)
true_divide = divide = _binary(_m.truediv, out_float=True)
arctan2 = _binary(_m.atan2, out_float=True)
hypot = _binary(lambda a, b: _m.sqrt(_m.square(a) + _m.square(b)), out_float=True)
logaddexp = _binary(lambda a, b: _m.maximum(a, b) + _m.log1p(_m.exp(-_m.abs(a - b))), out_float=True)
logaddexp2 = _binary(lambda a, b: _m.maximum(a, b) + _m.log1p(_m.pow(_cast(2.0, a.dtype), -_m.abs(a - b)))
                     / _cast(_pymath.log(2.0), a.dtype), out_float=True)
equal = _compare(_m.equal)
not_equal = _compare(_m.not_equal)
greater = _compare(_m.greater)
greater_equal = _compare(_m.greater_equal)
less = _compare(_m.less)
less_equal = _compare(_m.less_equal)


def _divide_no_nan(a, b):
    zero = _m.equal(b, _cast(0, b.dtype))
    return _where(zero, _ef.zeros_like(a * b), a / _where(zero, _ef.ones_like(b), b))


divide_no_nan = _binary(_divide_no_nan, out_float=True)


def _sub_bool(fn):
    def op(x1, x2):
        (a, b), dt = promote(x1, x2)
        if dt == "bool":
            a, b = _cast(a, _ef.int32), _cast(b, _ef.int32)
        return fn(a, b)
    return op


def _floordiv(a, b):
    if a.dtype.is_floating:
        return _m.floor(a / b)
    return _m.floordiv(a, b)


floor_divide = _sub_bool(_floordiv)
mod = _sub_bool(_m.floormod)


def _fmod(a, b):
    if a.dtype.is_floating:
        return a - b * trunc(a / b)
    return _ef.truncatemod(a, b)


fmod = _sub_bool(_fmod)
fmax = _binary(lambda a, b: _where(_m.is_nan(a), b, _where(_m.is_nan(b), a, _m.maximum(a, b))) if a.dtype.is_floating
               else _m.maximum(a, b))
fmin = _binary(lambda a, b: _where(_m.is_nan(a), b, _where(_m.is_nan(b), a, _m.minimum(a, b))) if a.dtype.is_floating
               else _m.minimum(a, b))
def heaviside(x1, x2):
    (a, b), dt = promote(x1, x2)
    if dt in ("int64", "uint64"):
        dt = "float64"
    elif dt not in ("bfloat16", "float16", "float32", "float64"):
        dt = floatx()
    a, b = tensor(a, dt), tensor(b, dt)
    return _where(_m.equal(a, _cast(0, a.dtype)), b, _cast(_m.greater(a, _cast(0, a.dtype)), a.dtype))


def power(x1, x2):
    (a, b), dt = promote(x1, x2)
    if dt == "bool":
        a, b = _cast(a, _ef.int32), _cast(b, _ef.int32)
    return _m.pow(a, b)


def copysign(x1, x2):
    (a, b), _ = promote(x1, x2)
    return _m.abs(a) * _where(signbit(b), -_ef.ones_like(a), _ef.ones_like(a))


def ldexp(x1, x2):
    a = tensor(x1)
    b = tensor(x2)
    if b.dtype.is_floating:
        raise TypeError("ldexp exponent must be an integer type. Received: x2 dtype=" + dtype_of(b))
    a = tensor(a, float_dtype(a))
    return a * _m.pow(_cast(2.0, a.dtype), _cast(b, a.dtype))


def nextafter(x1, x2):
    import numpy as np
    (a, b), dt = promote(x1, x2)
    a64, b64 = _cast(a, _ef.float64), _cast(b, _ef.float64)
    out = _ef.numpy_function(lambda u, v: np.nextafter(u, v), [a64, b64], _ef.float64)
    out = _ef.reshape(out, shape_of(a64 + b64))
    return _cast(out, as_dtype(dt if dt in ("float16", "float32", "float64", "bfloat16") else floatx()))


def gcd(x1, x2):
    (a, b), _ = promote(x1, x2)
    a, b = _m.abs(a), _m.abs(b)
    shape = broadcast_shape(shape_of(a), shape_of(b))
    a, b = _ef.broadcast_to(a, shape), _ef.broadcast_to(b, shape)
    zero = _cast(0, a.dtype)

    # Euclid on every element at once until all remainders are 0 (a while_loop, so it traces)
    def body(u, v):
        nz = _m.not_equal(v, zero)
        safe = _where(nz, v, _ef.ones_like(v))
        return _where(nz, v, u), _where(nz, _m.floormod(u, safe), v)
    g, _ = _ef.while_loop(lambda u, v: _ef.reduce_any(_m.not_equal(v, zero)), body, (a, b))
    return g


def lcm(x1, x2):
    (a, b), _ = promote(x1, x2)
    g = gcd(a, b)
    zero = _cast(0, g.dtype)
    safe = _where(_m.equal(g, zero), _ef.ones_like(g), g)
    return _where(_m.equal(g, zero), _ef.zeros_like(g), _m.abs(_m.floordiv(a, safe) * b))


def _bitwise(name):
    import numpy as np

    def op(x, y):
        (a, b), dt = promote(x, y)
        fn = getattr(_ef.bitwise, name, None) if hasattr(_ef, "bitwise") else None
        if fn is not None:
            return fn(a, b)
        npfn = {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
                "left_shift": np.left_shift, "right_shift": np.right_shift}[name]
        out = _ef.numpy_function(lambda u, v: npfn(u, v).astype(u.dtype), [a, b], a.dtype)
        return _ef.reshape(out, shape_of(a if dt == "bool" else a + b) if dt != "bool" else shape_of(_m.logical_or(a, b)))
    return op


bitwise_and = _bitwise("bitwise_and")
bitwise_or = _bitwise("bitwise_or")
bitwise_xor = _bitwise("bitwise_xor")
bitwise_left_shift = left_shift = _bitwise("left_shift")
bitwise_right_shift = right_shift = _bitwise("right_shift")


def bitwise_invert(x):
    import numpy as np
    t = tensor(x)
    if dtype_of(t) == "bool":
        return _m.logical_not(t)
    out = _ef.numpy_function(lambda u: np.invert(u), [t], t.dtype)
    return _ef.reshape(out, shape_of(t))


bitwise_not = bitwise_invert


def conjugate(x):
    t = tensor(x)
    return _m.conj(t) if dtype_of(t).startswith("complex") else t


conj = conjugate


def real(x):
    t = tensor(x)
    return _m.real(t) if dtype_of(t).startswith("complex") else t


def imag(x):
    t = tensor(x)
    return _m.imag(t) if dtype_of(t).startswith("complex") else _ef.zeros_like(t)


def angle(x):
    t = tensor(x)
    if dtype_of(t).startswith("complex"):
        return _m.angle(t)
    t = tensor(t, float_dtype(t))
    return _where(_m.less(t, _cast(0, t.dtype)), filled(t, _cast(_pymath.pi, t.dtype)), _ef.zeros_like(t))


def isclose(x1, x2, rtol=1e-5, atol=1e-8, equal_nan=False):
    (a, b), dt = promote(x1, x2)
    if dt not in ("bfloat16", "float16", "float32", "float64"):
        return _m.equal(a, b)
    close = _m.less_equal(_m.abs(a - b), _cast(atol, a.dtype) + _cast(rtol, a.dtype) * _m.abs(b))
    close = _m.logical_or(close, _m.equal(a, b))  # equal infinities
    if equal_nan:
        close = _m.logical_or(close, _m.logical_and(_m.is_nan(a), _m.is_nan(b)))
    return close


def allclose(x1, x2, rtol=1e-5, atol=1e-8, equal_nan=False):
    return _ef.reduce_all(isclose(x1, x2, rtol, atol, equal_nan))
