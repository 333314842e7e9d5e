"""keras.ops' core functions: conversions, control flow (cond, while_loop, fori_loop, scan, map,
switch), gradients (stop_gradient, custom_gradient, jvp, vectorized_map) and the scatter / slice /
segment ops, with Keras' signatures, on eagerflow's ops (they trace under ef.function)."""
import numpy as _np

import eagerflow as _ef
from ... import _core
from ... import cast as _cast
from ...dtypes import as_dtype
from ._dtypes import shape_of, dtype_of, standardize_dtype, tensor


def convert_to_tensor(x, dtype=None, sparse=None, ragged=None):
    return tensor(x, dtype)


def convert_to_numpy(x):
    if isinstance(x, _np.ndarray):
        return x
    t = tensor(x)
    if t.is_symbolic or t.is_keras_tensor:
        raise ValueError("A symbolic tensor (a Keras tensor or one inside ef.function) has no value to convert to "
                         "NumPy; call convert_to_numpy eagerly.")
    return _np.asarray(t.numpy())


def is_tensor(x):
    return isinstance(x, _core.Tensor)


def cast(x, dtype):
    return tensor(x, standardize_dtype(dtype))


def saturate_cast(x, dtype):
    return _ef.saturate_cast(tensor(x), as_dtype(standardize_dtype(dtype)))


def dtype(x):
    return dtype_of(x)


def shape(x):
    """A tuple: ints where known, a scalar tensor for a dimension only known when it runs."""
    t = tensor(x)
    static = list(t.shape)
    if None not in static:
        return tuple(static)
    dyn = shape_of(t)
    return tuple(d if d is not None else dyn[i] for i, d in enumerate(static))


def stop_gradient(variable):
    return _ef.stop_gradient(tensor(variable))


def cond(pred, true_fn, false_fn):
    return _ef.cond(tensor(pred, "bool"), true_fn, false_fn)


def switch(index, branches, *operands):
    i = tensor(index, "int32")
    i = _ef.clip_by_value(i, 0, len(branches) - 1)

    def pick(k):
        if k == len(branches) - 1:
            return branches[k](*operands)
        return _ef.cond(_ef.equal(i, k), lambda: branches[k](*operands), lambda: pick(k + 1))
    return pick(0)


def while_loop(cond, body, loop_vars, maximum_iterations=None):  # noqa: A002 - Keras' names
    is_tuple = isinstance(loop_vars, (tuple, list))
    lv = tuple(loop_vars) if is_tuple else (loop_vars,)

    def body_(*args):
        out = body(*args)
        return tuple(out) if is_tuple else (out,)
    out = _ef.while_loop(lambda *a: cond(*a), body_, lv, maximum_iterations=maximum_iterations)
    return tuple(out) if is_tuple else out[0]


def fori_loop(lower, upper, body_fun, init_val):
    _, out = _ef.while_loop(lambda i, v: _ef.less(i, upper), lambda i, v: (i + 1, body_fun(i, v)),
                            (tensor(lower, "int32"), init_val))
    return out


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """JAX's scan: f(carry, x) -> (carry, y); returns (final carry, ys stacked on axis 0)."""
    if xs is None and length is None:
        raise ValueError("Got no `xs` to scan over and `length` not provided.")
    flat_xs = _ef.nest.flatten(xs) if xs is not None else []
    n = length if length is not None else (flat_xs[0].shape[0] if flat_xs else None)
    if flat_xs:
        flat_xs = [tensor(v) for v in flat_xs]
        n = flat_xs[0].shape[0] if length is None else length
    carry = init
    ys = []
    steps = range(n - 1, -1, -1) if reverse else range(n)
    for i in steps:
        x = _ef.nest.pack_sequence_as(xs, [v[i] for v in flat_xs]) if xs is not None else None
        carry, y = f(carry, x)
        ys.append(y)
    if reverse:
        ys.reverse()
    if not ys or ys[0] is None:
        return carry, None
    stacked = [_ef.stack([tensor(v) for v in parts]) for parts in zip(*[_ef.nest.flatten(y) for y in ys])]
    return carry, _ef.nest.pack_sequence_as(ys[0], stacked)


def associative_scan(f, elems, reverse=False, axis=0):
    flat = [tensor(e) for e in _ef.nest.flatten(elems)]
    n = flat[0].shape[axis]
    if reverse:
        flat = [_ef.reverse(e, [axis]) for e in flat]

    def take(e, i):
        return _ef.gather(e, i, axis=axis)
    acc = [take(e, 0) for e in flat]
    outs = [[a] for a in acc]
    for i in range(1, n):
        cur = [take(e, i) for e in flat]
        res = _ef.nest.flatten(f(_ef.nest.pack_sequence_as(elems, acc), _ef.nest.pack_sequence_as(elems, cur)))
        acc = [tensor(r) for r in res]
        for o, a in zip(outs, acc):
            o.append(a)
    out = [_ef.stack(o, axis=axis) for o in outs]
    if reverse:
        out = [_ef.reverse(o, [axis]) for o in out]
    return _ef.nest.pack_sequence_as(elems, out)


def map(f, xs):  # noqa: A001 - Keras' name
    flat = [tensor(v) for v in _ef.nest.flatten(xs)]
    ys = [f(_ef.nest.pack_sequence_as(xs, [v[i] for v in flat])) for i in range(flat[0].shape[0])]
    stacked = [_ef.stack([tensor(v) for v in parts]) for parts in zip(*[_ef.nest.flatten(y) for y in ys])]
    return _ef.nest.pack_sequence_as(ys[0], stacked)


def vectorized_map(function, elements):
    return _ef.vectorized_map(function, elements)


def custom_gradient(f):
    return _ef.custom_gradient(f)


def jvp(fun, primals, tangents, has_aux=False):
    if has_aux:
        aux = []

        def g(*p):
            out, a = fun(*p)
            aux.append(a)
            return out
        p_out, t_out = _ef.jvp(g, list(primals), list(tangents))
        return p_out, t_out, aux[0]
    return tuple(_ef.jvp(fun, list(primals), list(tangents)))


def slice(inputs, start_indices, shape):  # noqa: A001 - Keras' name
    return _ef.slice(tensor(inputs), start_indices, shape)


def slice_update(inputs, start_indices, updates):
    t = tensor(inputs)
    u = tensor(updates, dtype_of(t))
    starts = [int(s) for s in start_indices]
    grids = _np.meshgrid(*[_np.arange(d) + s for d, s in zip(u.shape, starts)], indexing="ij")
    idx = _np.stack(grids, -1).astype(_np.int32)
    return _ef.tensor_scatter_nd_update(t, idx, u)


def scatter(indices, values, shape):
    return _ef.scatter_nd(tensor(indices, "int32"), tensor(values), list(shape))


def scatter_update(inputs, indices, updates):
    t = tensor(inputs)
    return _ef.tensor_scatter_nd_update(t, tensor(indices, "int32"), tensor(updates, dtype_of(t)))


def _segment(name):
    def op(data, segment_ids, num_segments=None, sorted=False):  # noqa: A002 - Keras' name
        d = tensor(data)
        ids = tensor(segment_ids, "int32")
        if num_segments is None:
            if ids.is_symbolic:
                raise ValueError("Argument `num_segments` must be set when using symbolic segment ids.")
            num_segments = int(_np.max(ids.numpy())) + 1 if ids.numpy().size else 0
        return getattr(_ef.math, "unsorted_segment_" + name)(d, ids, num_segments)
    op.__name__ = "segment_" + name
    return op


segment_sum = _segment("sum")
segment_max = _segment("max")
segment_min = _segment("min")
segment_prod = _segment("prod")


def top_k(x, k, sorted=True):  # noqa: A002 - Keras' name
    out = _ef.math.top_k(tensor(x), k=k, sorted=sorted)
    return out.values, _cast(out.indices, _ef.int32)


def in_top_k(targets, predictions, k):
    return _ef.math.in_top_k(tensor(targets, "int32"), tensor(predictions, "float32"), k)


def unstack(x, num=None, axis=0):
    return _ef.unstack(tensor(x), num=num, axis=axis)


def extract_sequences(x, sequence_length, sequence_stride):
    t = tensor(x)
    n = t.shape[-1]
    count = 1 + (n - sequence_length) // sequence_stride
    idx = (_np.arange(count)[:, None] * sequence_stride + _np.arange(sequence_length)[None, :]).astype(_np.int32)
    return _ef.gather(t, idx, axis=t.shape.rank - 1)


def _complex_pair(x):
    if not isinstance(x, (tuple, list)) or len(x) != 2:
        raise ValueError(f"Input `x` should be a tuple of two tensors - real and imaginary. Received: x={x}")
    re, im = tensor(x[0]), tensor(x[1])
    if not re.dtype.is_floating or not im.dtype.is_floating:
        raise ValueError("At least one tensor in input `x` is not of type float.")
    if list(re.shape) != list(im.shape):
        raise ValueError(f"Input `x` should be a tuple of two tensors of the same shape. Received: {re.shape}, {im.shape}")
    cdt = _ef.complex128 if dtype_of(re) == "float64" else _ef.complex64
    fdt = re.dtype
    return _ef.complex(_cast(re, _ef.float64 if cdt == _ef.complex128 else _ef.float32),
                       _cast(im, _ef.float64 if cdt == _ef.complex128 else _ef.float32)), fdt


def _split_complex(c, fdt):
    return _cast(_ef.math.real(c), fdt), _cast(_ef.math.imag(c), fdt)


def fft(x):
    c, fdt = _complex_pair(x)
    return _split_complex(_ef.signal.fft(c), fdt)


def fft2(x):
    c, fdt = _complex_pair(x)
    return _split_complex(_ef.signal.fft2d(c), fdt)


def ifft2(x):
    c, fdt = _complex_pair(x)
    return _split_complex(_ef.signal.ifft2d(c), fdt)


def rfft(x, fft_length=None):
    t = tensor(x)
    fdt = t.dtype
    out = _ef.signal.rfft(_cast(t, _ef.float32) if fdt != _ef.float64 else t,
                          None if fft_length is None else [int(fft_length)])
    return _split_complex(out, fdt)


def irfft(x, fft_length=None):
    c, fdt = _complex_pair(x)
    return _cast(_ef.signal.irfft(c, None if fft_length is None else [int(fft_length)]), fdt)


def polar(abs_, angle):
    a = tensor(abs_)
    th = tensor(angle, dtype_of(a))
    return _ef.complex(a * _ef.cos(th), a * _ef.sin(th))


def view_as_complex(x):
    t = tensor(x)
    if t.shape[-1] != 2:
        raise ValueError(f"Last dimension of input must be size 2 (real and imaginary). Received shape: {t.shape}")
    return _ef.complex(t[..., 0], t[..., 1])


def view_as_real(x):
    t = tensor(x)
    return _ef.stack([_ef.math.real(t), _ef.math.imag(t)], axis=-1)
