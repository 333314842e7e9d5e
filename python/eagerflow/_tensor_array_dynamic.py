"""A TensorArray's buffer whose length is known only when the graph runs (tf.TensorArray with a
symbolic size, or dynamic_size=True written in a traced loop).

eagerflow's traced ops need static shapes except where a host call (ef::host_call) declares a
dim unknown: so the two ops that make or cut such a buffer are host calls, as tf.py_function
inside a trace:
  zeros_rows(n, element_shape): zeros [n, *element_shape], n an int32 scalar of this run;
  first_rows(buffer, n): buffer[:n], differentiable (its gradient pads the cotangent with zeros).
A loop writes into the buffer with tensor_scatter_nd_update (its shape stays what it was when the
loop started, as ef.while_loop requires at run time); the array carries its length separately.
"""

from . import _core

_I32 = _core.DType.int32


def _count(t):
    return _core.cast(t, _I32) if isinstance(t, _core.Tensor) else _core.constant(int(t), dtype=_I32)


def zeros_rows(n, element_shape, dtype):
    """zeros [n, *element_shape] with n a (symbolic) int scalar: the leading dim unknown to the trace."""
    shape = [int(d) for d in element_shape]

    def make(xs):
        rows = max(int(xs[0].numpy()), 0)
        return [_core.zeros([rows] + shape, dtype=dtype)]
    out = _core._host_call(make, [_count(n)], [_core.TensorSpec([None] + shape, dtype)], "TensorArray_zeros", None)[0]
    return _core.stop_gradient(out)


def first_rows(buffer, n):
    """buffer[:n] with n a (symbolic) int scalar."""
    spec = _core.TensorSpec([None] + list(buffer._shape_tuple[1:]), buffer.dtype)

    def cut(xs):
        return [xs[0][:int(xs[1].numpy())]]

    def vjp(xs, cots):
        buf, m = xs
        rows = buf.shape[0]
        cot = cots[0]
        if cot is None:
            return [None, None]
        pad = _core.zeros([rows - int(cot.shape[0])] + list(buf.shape[1:]), dtype=cot.dtype)
        return [_core.concat([cot, pad], 0), None]
    return _core._host_call(cut, [buffer, _count(n)], [spec], "TensorArray_stack", vjp)[0]


def trip_count(start, limit, delta):
    """The number of values of range(start, limit, delta) (scalar tensors of one dtype), int32:
    max(0, ceil((limit - start) / delta))."""
    span = limit - start
    if start.dtype.is_floating:
        q = _core.ceil(span / delta)
    else:
        sign = _core.cast(delta > _core.zeros_like(delta), delta.dtype) * 2 - 1
        q = (span + delta - sign) // delta
    return _core.cast(_core.maximum(q, _core.zeros_like(q)), _I32)
