"""ef.debugging, as tf.debugging: assertions and numeric checks with TF's errors and messages.

Value assertions (assert_equal, assert_less, ..., Assert) check eagerly, raising TF's
InvalidArgumentError with TF's message (the first differing indices and values). Inside an
ef.function trace a value known at trace time (a constant) is checked then, as TF does; a value
known only when the graph runs is checked on every call by an assert op of the graph (an effect,
as prints are), whose InvalidArgumentError carries the assertion's text and the first values of
the tensors it names. Such a graph does not export to ONNX (an assertion is an effect). Shape, rank and dtype
assertions read static shapes and work in traces as eagerly (ValueError / TypeError, as TF's).
check_numerics is an op and checks every call, traced too.

enable_check_numerics and set_log_device_placement switch on program-wide checks of every op
that runs, eagerly or in a traced graph (include/eagerflow/ops/op_observer.h). Not here: TF's
traceback filtering switches (eagerflow does not filter tracebacks).
"""
import numpy as _np

from . import _core
from . import errors as _errors

__all__ = ["Assert", "assert_all_finite", "assert_equal", "assert_greater", "assert_greater_equal", "assert_integer",
           "assert_less", "assert_less_equal", "assert_near", "assert_negative", "assert_non_negative",
           "assert_non_positive", "assert_none_equal", "assert_positive", "assert_proper_iterable", "assert_rank",
           "assert_rank_at_least", "assert_rank_in", "assert_same_float_dtype", "assert_scalar", "assert_shapes",
           "assert_type", "check_numerics", "is_numeric_tensor", "enable_check_numerics", "disable_check_numerics",
           "set_log_device_placement", "get_log_device_placement"]

_OPERATORS = {"==": "__eq__", "!=": "__ne__", "<": "__lt__", "<=": "__le__", ">": "__gt__", ">=": "__ge__"}
_NUMERIC = {"float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
            "uint32", "uint64"}
_FLOATS = {"float16", "bfloat16", "float32", "float64"}
_INTS = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}


def _tensor(x, dtype=None):
    if isinstance(x, _core.Variable):
        return x.value()
    if isinstance(x, _core.Tensor):
        return x
    return _core.convert_to_tensor(x) if dtype is None else _core.convert_to_tensor(x, dtype=dtype)


def _value(t):
    """The NumPy value of t when known now (eagerly, or a trace's constant), else None."""
    if not _core._in_trace():
        return t.numpy()
    try:
        return t.numpy()
    except Exception:
        return None


def _graph_check(ok, text, message=None, data=(), summarize=3):
    """Inside a trace: an assert op that raises InvalidArgumentError(text, the first values of
    `data`) when the graph runs and `ok` (a bool tensor) is false anywhere. Keras placeholders are
    skipped (nothing runs on them)."""
    if getattr(ok, "is_keras_tensor", False):
        return None
    what = f"{message}: {text}" if message else text
    tensors = [_tensor(d) for d in data if isinstance(d, (_core.Tensor, _core.Variable))]
    _core._assert(ok, tensors, what, -1 if summarize is None else int(summarize))
    return None


def _fail(message, text):
    raise _errors.InvalidArgumentError(f"{message}\n{text}" if message else text)


def _compare(x, y, op, symbol, message, summarize):
    a = _tensor(x)
    b = _tensor(y, dtype=a.dtype)
    if a.dtype != b.dtype:
        raise _errors.InvalidArgumentError(f"assert: x is {a.dtype.name} but y is {b.dtype.name}")
    try:
        _np.broadcast_shapes(tuple(d or 1 for d in a._shape_tuple), tuple(d or 1 for d in b._shape_tuple))
    except ValueError:
        raise _errors.InvalidArgumentError(f"Incompatible shapes: {list(a._shape_tuple)} vs. {list(b._shape_tuple)}") from None
    va, vb = _value(a), _value(b)
    if va is None or vb is None:
        return _graph_check(getattr(a, _OPERATORS[symbol])(b), f"Condition x {symbol} y did not hold. x and y:", message,
                            data=(a, b), summarize=summarize)
    ok = op(va, vb)
    if bool(_np.all(ok)):
        return None
    n = 3 if summarize is None else int(summarize)
    lines = [f"Condition x {symbol} y did not hold."]
    if va.shape == vb.shape:
        bad = _np.argwhere(~ok)[:n]
        lines += [f"Indices of first {len(bad)} different values:", str(bad),
                  "Corresponding x values:", str(va[tuple(bad.T)]), "Corresponding y values:", str(vb[tuple(bad.T)])]
    lines += [f"First {min(n, va.size)} elements of x:", str(va.reshape(-1)[:n]),
              f"First {min(n, vb.size)} elements of y:", str(vb.reshape(-1)[:n])]
    _fail(message, "\n".join(lines))


def assert_equal(x, y, message=None, summarize=None, name=None):
    """InvalidArgumentError unless x == y everywhere (broadcasting)."""
    return _compare(x, y, _np.equal, "==", message, summarize)


def assert_none_equal(x, y, summarize=None, message=None, name=None):
    return _compare(x, y, _np.not_equal, "!=", message, summarize)


def assert_less(x, y, message=None, summarize=None, name=None):
    return _compare(x, y, _np.less, "<", message, summarize)


def assert_less_equal(x, y, message=None, summarize=None, name=None):
    return _compare(x, y, _np.less_equal, "<=", message, summarize)


def assert_greater(x, y, message=None, summarize=None, name=None):
    return _compare(x, y, _np.greater, ">", message, summarize)


def assert_greater_equal(x, y, message=None, summarize=None, name=None):
    return _compare(x, y, _np.greater_equal, ">=", message, summarize)


def _sign_check(x, op, symbol, message, summarize):
    t = _tensor(x)
    v = _value(t)
    if v is None:
        zero = _core.zeros_like(t)
        return _graph_check(getattr(t, _OPERATORS[symbol])(zero), f"Condition x {symbol} 0 did not hold element-wise. x:",
                            message, data=(t,), summarize=summarize)
    if bool(_np.all(op(v, 0))):
        return None
    shown = [str(e) for e in v.reshape(-1)[:3 if summarize is None else int(summarize)]]
    _fail(message, f"\nCondition x {symbol} 0 did not hold element-wise:\nx (shape={tuple(v.shape)} "
                   f"dtype={t.dtype.name}) = \n{shown}")


def assert_positive(x, message=None, summarize=None, name=None):
    return _sign_check(x, _np.greater, ">", message, summarize)


def assert_negative(x, message=None, summarize=None, name=None):
    return _sign_check(x, _np.less, "<", message, summarize)


def assert_non_negative(x, message=None, summarize=None, name=None):
    return _sign_check(x, _np.greater_equal, ">=", message, summarize)


def assert_non_positive(x, message=None, summarize=None, name=None):
    return _sign_check(x, _np.less_equal, "<=", message, summarize)


def assert_near(x, y, rtol=None, atol=None, message=None, summarize=None, name=None):
    """|x - y| <= atol + rtol * |y| everywhere; the tolerances default to 10 * eps of the dtype."""
    a = _tensor(x)
    b = _tensor(y, dtype=a.dtype)
    va, vb = _value(a), _value(b)
    eps = float(_np.finfo(a.dtype.name).eps) if a.dtype.name in _FLOATS - {"bfloat16"} else 0.0
    rt = 10 * eps if rtol is None else float(rtol)
    at = 10 * eps if atol is None else float(atol)
    if va is None or vb is None:
        close = _core.abs(a - b) <= _core.cast(_core.constant(at), a.dtype) + _core.cast(_core.constant(rt), a.dtype) * _core.abs(b)
        return _graph_check(close, f"x and y not equal to tolerance rtol = {rt}, atol = {at}", message)
    if bool(_np.all(_np.abs(va - vb) <= at + rt * _np.abs(vb))):
        return None
    _fail(message, f"x and y not equal to tolerance rtol = {rt}, atol = {at}\nx (shape={va.shape} dtype={a.dtype.name}) = "
                   f"{va.reshape(-1)[:3]}\ny (shape={vb.shape} dtype={b.dtype.name}) = {vb.reshape(-1)[:3]}")


def _rank(x):
    return len(_tensor(x)._shape_tuple)


def _shape_text(x):
    return str(tuple(_tensor(x)._shape_tuple))


def assert_rank(x, rank, message=None, name=None):
    """ValueError unless x has this rank (a static check, traced too)."""
    have = _rank(x)
    if have != int(rank):
        raise ValueError(f"{message + '.  ' if message else ''}Tensor  must have rank {int(rank)}.  Received rank {have}, "
                         f"shape {_shape_text(x)}")


def assert_rank_at_least(x, rank, message=None, name=None):
    have = _rank(x)
    if have < int(rank):
        raise ValueError(f"{message + '.  ' if message else ''}Tensor  must have rank at least {int(rank)}.  Received "
                         f"rank {have}, shape {_shape_text(x)}")


def assert_rank_in(x, ranks, message=None, name=None):
    have = _rank(x)
    ranks = tuple(int(r) for r in ranks)
    if have not in ranks:
        raise ValueError(f"{message + '.  ' if message else ''}Tensor  must have rank in {ranks}.  Received rank {have}, "
                         f"shape {_shape_text(x)}")


def assert_scalar(tensor, message=None, name=None):
    shape = tuple(_tensor(tensor)._shape_tuple)
    if shape:
        raise ValueError(f"{message + '  ' if message else ''}Expected scalar shape, saw shape: {shape}.")
    return tensor


def _describe(t):
    return f"shape={tuple(t._shape_tuple)} dtype={t.dtype.name}"


def assert_shapes(shapes, data=None, summarize=None, message=None, name=None):
    """Each tensor's shape against its spec: ints are sizes, strings are symbols that must be the
    same size wherever they appear, '...' (or Ellipsis) at the front stands for any leading axes;
    a size-1 spec entry also fits a scalar axis as TF's. ValueError names the first mismatch."""
    if isinstance(shapes, dict):
        shapes = list(shapes.items())
    sizes = {}  # symbol -> (size, the tensor that fixed it, its axis)
    for x, spec in shapes:
        t = _tensor(x)
        have = list(t._shape_tuple)
        spec = list(spec)
        if spec and (spec[0] is Ellipsis or spec[0] == "..."):
            spec = spec[1:]
            have_tail = have[len(have) - len(spec):] if len(spec) <= len(have) else None
            if have_tail is None:
                raise ValueError(f"Tensor  must have rank at least {len(spec)}.  Received rank {len(have)}, shape {tuple(have)}")
            offset, have = len(have) - len(spec), have_tail
        else:
            offset = 0
            if not spec and have:  # a scalar spec: every axis must be 1 (TF's rule)
                spec = [1] * len(have)
            if len(spec) != len(have):
                raise ValueError(f"Tensor  must have rank {len(spec)}.  Received rank {len(have)}, shape {tuple(t._shape_tuple)}")
        for i, (s, h) in enumerate(zip(spec, have)):
            if h is None:
                continue
            axis = offset + i
            if isinstance(s, str):
                if s not in sizes:
                    sizes[s] = (h, t, axis)
                    continue
                want, by, by_axis = sizes[s]
                source = f"Specified by tensor {_describe(by)} dimension {by_axis}"
            else:
                want, source = int(s), "Specified explicitly"
            if h != want:
                raise ValueError(f"{source}.  Tensor {_describe(t)} dimension {axis} must have size {want}.  "
                                 f"Received size {h}, shape {tuple(t._shape_tuple)}")


def assert_type(tensor, tf_type, message=None, name=None):
    t = _tensor(tensor)
    if t.dtype != tf_type:
        raise TypeError(f"{message + ', ' if message else ''}tensor must be of type tf.{tf_type.name}; got "
                        f"tf.{t.dtype.name}")


def assert_integer(x, message=None, name=None):
    t = _tensor(x)
    if t.dtype.name not in _INTS:
        raise TypeError(f"{message + ' ' if message else ''}Expected \"x\" to be integer type.  Found: tensor of "
                        f"dtype <dtype: '{t.dtype.name}'>")


def assert_proper_iterable(values):
    """TypeError for a string, bytes, tensor or array (iterable, but meant as one value)."""
    import collections.abc as abc
    if isinstance(values, (str, bytes, _np.ndarray, _core.Tensor, _core.Variable)) or not isinstance(values, abc.Iterable):
        raise TypeError(f"Expected argument \"values\" to be a \"proper\" iterable.  Found: {type(values)}")


def assert_same_float_dtype(tensors=None, dtype=None):
    """The floating dtype all the tensors share (float32 when there are none)."""
    first = None
    for t in tensors or []:
        t = _tensor(t)
        if first is None:
            first = t
        elif t.dtype != first.dtype:
            raise ValueError(f"{t}, type=<dtype: '{t.dtype.name}'>, must be of the same type (<dtype: "
                             f"'{first.dtype.name}'>) as {first}.")
    found = dtype if dtype is not None else first.dtype if first is not None else _core.DType.float32
    if found.name not in _FLOATS:
        raise ValueError(f"Expected floating point type, got <dtype: '{found.name}'>.")
    return found


def is_numeric_tensor(tensor):
    """True for a tensor of a number dtype (not bool, not string)."""
    return isinstance(tensor, (_core.Tensor, _core.Variable)) and tensor.dtype.name in _NUMERIC


def check_numerics(tensor, message, name=None):
    """tensor, after checking every call (traced too) that it holds no NaN or Inf. In a trace the
    check runs even when its result is unused (a statement), as TF's: an assert, which the passes
    keep as an effect, stands beside the check_numerics node (which dead-code elimination drops
    when nothing reads it)."""
    t = _tensor(tensor)
    if _core._in_trace() and t.dtype.name in _FLOATS and _value(t) is None:
        from .math import is_finite
        _graph_check(_core.reduce_all(is_finite(t)), "Tensor had Inf or NaN values", message)
    return _core.check_numerics(tensor, message)


def assert_all_finite(x, message, name=None):
    return _core.check_numerics(x, message)


def Assert(condition, data, summarize=None, name=None):  # noqa: N802 - TF's name
    """InvalidArgumentError showing `data` unless `condition` (a bool scalar) is true."""
    cond = _tensor(condition)
    c = _value(cond)
    if c is None:
        return _graph_check(_core.cast(cond, _core.DType.bool), "Expected the condition to be true. Summarized data:",
                            data=data, summarize=3 if summarize is None else summarize)
    if bool(_np.all(c)):
        return None
    n = 3 if summarize is None else int(summarize)
    shown = []
    for d in data:
        if isinstance(d, (_core.Tensor, _core.Variable)):
            v = _np.asarray(d.numpy()).reshape(-1)[:n]
            shown.append(", ".join(str(e) for e in v))
        else:
            shown.append(repr(d.encode() if isinstance(d, str) else d))
    raise _errors.InvalidArgumentError(f"Expected '{c}' to be true. Summarized data: " + "\n".join(shown))


def enable_check_numerics(stack_height_limit=30, path_length_limit=50):
    """Checks every op's floating and complex outputs for NaN and Inf from now on, eagerly and in
    traced graphs (InvalidArgumentError naming the op: "!!! Detected Infinity or NaN in output 0 of
    op ..."), until disable_check_numerics()."""
    _core._set_check_numerics(True)


def disable_check_numerics():
    _core._set_check_numerics(False)


def set_log_device_placement(enabled):
    """Logs "Executing op <name> in device ..." for every op that runs (eagerflow runs on the CPU)."""
    _core._set_log_device_placement(bool(enabled))


def get_log_device_placement():
    return _core._log_device_placement()
