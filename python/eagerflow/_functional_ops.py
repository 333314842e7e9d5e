"""TF's higher-order functions: tf.map_fn, tf.foldl, tf.foldr, tf.scan, tf.vectorized_map, and
tf.py_function / tf.numpy_function.

map_fn, foldl, foldr and scan run on ef.scan (python/eagerflow/_scan.py: the C++ ef::scan):
eagerly a loop, inside ef.function one traced scan node, differentiable either way.

ef.scan stays JAX's lax.scan(f, init, xs) (its documented eagerflow API, docs/scan.md); a call
that can only be TF's - `scan(fn, elems)` with two positional arguments, or TF's keywords
(initializer=, elems=, parallel_iterations=, back_prop=, swap_memory=, infer_shape=, name=) -
runs TF's tf.scan. `scan(f, a, b)` with three positional arguments is read as JAX's (init, xs):
TF code that passes its initializer positionally must name it (initializer=...).
"""
import functools
import numpy as np

from . import _core
from ._scan import _flatten, _unflatten, scan as _jax_scan

__all__ = ["map_fn", "foldl", "foldr", "scan", "vectorized_map", "py_function", "numpy_function"]


def _leaves(tree):
    out = []
    structure = _flatten(tree, out)
    return structure, out


def _as_tensors(tree):
    structure, leaves = _leaves(tree)
    return _unflatten(structure, iter([x if isinstance(x, _core.Tensor) else
                                       (x.value() if isinstance(x, _core.Variable) else _core.convert_to_tensor(x))
                                       for x in leaves]))


def _rows(elems, fn_name):
    structure, leaves = _leaves(elems)
    if not leaves:
        raise ValueError(f"{fn_name}: elems must be a tensor or a (possibly nested) sequence of tensors, got {elems!r}")
    lengths = {tuple(x._shape_tuple)[:1] for x in leaves}
    if any(len(x._shape_tuple) == 0 for x in leaves):
        raise ValueError(f"{fn_name}: elements in elems must be 1+ dimensional (a scalar has no rows)")
    if len(lengths) != 1:
        raise ValueError(f"{fn_name}: all elems must have the same size in their first dimension, got "
                         f"{[x._shape_tuple[0] for x in leaves]}")
    return structure, leaves, leaves[0]._shape_tuple[0]


def _slice_rows(tree, start, stop):
    structure, leaves = _leaves(tree)
    return _unflatten(structure, iter([x[start:stop] for x in leaves]))


def _row(tree, i):
    structure, leaves = _leaves(tree)
    return _unflatten(structure, iter([x[i] for x in leaves]))


def _concat_rows(a, b):
    structure, la = _leaves(a)
    _, lb = _leaves(b)
    return _unflatten(structure, iter([_core.concat([x, y], 0) for x, y in zip(la, lb)]))


def _expand(tree):
    structure, leaves = _leaves(tree)
    return _unflatten(structure, iter([_core.expand_dims(x, 0) for x in leaves]))


def _cast_to_signature(value, signature):
    """fn's result checked against fn_output_signature (dtypes, or TensorSpecs) and converted."""
    if signature is None:
        return _as_tensors(value)
    s_structure, s_leaves = _leaves(signature)
    v_structure, v_leaves = _leaves(value)
    if len(s_leaves) != len(v_leaves):
        raise ValueError(f"The two structures don't have the same nested structure: fn returned {len(v_leaves)} "
                         f"value(s), fn_output_signature has {len(s_leaves)}")
    out = []
    for v, s in zip(v_leaves, s_leaves):
        dtype = s.dtype if hasattr(s, "dtype") and not isinstance(s, _core.DType) else s
        if type(s).__name__ in ("RaggedTensorSpec", "SparseTensorSpec"):
            raise NotImplementedError("map_fn: ragged and sparse fn_output_signature are not supported")
        t = v if isinstance(v, _core.Tensor) else _core.convert_to_tensor(v, dtype=dtype)
        if t.dtype != dtype:
            raise TypeError(f"map_fn: fn returned a {t.dtype.name} value where fn_output_signature says "
                            f"{getattr(dtype, 'name', dtype)}")
        out.append(t)
    return _unflatten(v_structure, iter(out))


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True, swap_memory=False, infer_shape=True,
           name=None, fn_output_signature=None):
    """fn applied to each row of elems (each leaf's rows, for nested elems); the results stacked."""
    if dtype is not None and fn_output_signature is not None:
        raise ValueError("The `dtype` and `fn_output_signature` arguments are mutually exclusive; use "
                         "`fn_output_signature`.")
    signature = fn_output_signature if fn_output_signature is not None else dtype
    elems = _as_tensors(elems)
    _rows(elems, "map_fn")

    def step(carry, x):
        return carry, _cast_to_signature(fn(x), signature)
    _, ys = _jax_scan(step, _core.constant(0, dtype=_core.DType.int32), elems)
    return ys


def _fold(fn, elems, initializer, reverse, what):
    elems = _as_tensors(elems)
    _, _, n = _rows(elems, what)
    if initializer is None:
        if n == 0:
            raise ValueError(f"{what}: elems is empty and no initializer is given")
        first = n - 1 if reverse else 0
        initializer = _row(elems, first)
        elems = _slice_rows(elems, 0, n - 1) if reverse else _slice_rows(elems, 1, n)
    return _as_tensors(initializer), elems


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, name=None):
    """fn(acc, row) over elems' rows from the first: the last acc (initializer: elems[0] when None)."""
    init, elems = _fold(fn, elems, initializer, False, "foldl")
    carry, _ = _jax_scan(lambda a, x: (_same(fn(a, x), a), None), init, elems)
    return carry


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False, name=None):
    """fn(acc, row) over elems' rows from the last: the last acc (initializer: elems[-1] when None)."""
    init, elems = _fold(fn, elems, initializer, True, "foldr")
    carry, _ = _jax_scan(lambda a, x: (_same(fn(a, x), a), None), init, elems, reverse=True)
    return carry


def _same(new, old):
    """fn's accumulator as tensors of the accumulator's dtypes (TF converts Python numbers)."""
    s_new, l_new = _leaves(new)
    _, l_old = _leaves(old)
    if len(l_new) != len(l_old):
        raise ValueError("The two structures don't have the same nested structure: fn must return the "
                         "accumulator's structure")
    return _unflatten(s_new, iter([x if isinstance(x, _core.Tensor) else _core.convert_to_tensor(x, dtype=o.dtype)
                                   for x, o in zip(l_new, l_old)]))


def tf_scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True, swap_memory=False,
            infer_shape=True, reverse=False, name=None):
    """TF's tf.scan: fn(acc, row) over elems' rows; every acc stacked (initializer: the first row,
    which the result starts with, when None)."""
    given = initializer is not None
    init, rest = _fold(fn, elems, initializer, reverse, "scan")

    def step(a, x):
        a = _same(fn(a, x), a)
        return a, a
    _, ys = _jax_scan(step, init, rest, reverse=reverse)
    if given:
        return ys
    return _concat_rows(ys, _expand(init)) if reverse else _concat_rows(_expand(init), ys)


_TF_ONLY = {"elems", "initializer", "parallel_iterations", "back_prop", "swap_memory", "infer_shape", "name"}


def scan(*args, **kwargs):
    """ef.scan: JAX's scan(f, init, xs=None, length=None, reverse=False) -> (carry, ys), or TF's
    tf.scan(fn, elems, initializer=None, ..., reverse=False) -> stacked accs when the call can
    only be TF's (two positional arguments, or TF's keywords). See the module's docstring."""
    if _TF_ONLY & set(kwargs) or (len(args) == 2 and not {"xs", "length", "init"} & set(kwargs)):
        return tf_scan(*args, **kwargs)
    if len(args) < 3:
        return _jax_scan(*args, **kwargs)
    try:
        return _jax_scan(*args, **kwargs)
    except _core.Error as e:  # maybe TF's scan(fn, elems, initializer), read as JAX's (init, xs)
        raise type(e)(f"{e}\n(ef.scan(f, a, b) is JAX's scan(f, init, xs); for TF's tf.scan(fn, elems, initializer) "
                      "pass initializer= by name)") from None


scan.__doc__ = scan.__doc__ + "\n\n" + (_jax_scan.__doc__ or "")


def vectorized_map(fn, elems, fallback_to_while_loop=True, warn=True):
    """fn over elems' rows as one batched computation (ef.vmap); map_fn when fn has an op vmap
    cannot batch and fallback_to_while_loop."""
    elems = _as_tensors(elems)
    structure, leaves = _leaves(elems)

    def flat_fn(*xs):
        out = fn(_unflatten(structure, iter(xs)))
        s, ls = _leaves(out)
        flat_fn.out_structure = s
        return tuple(ls)
    try:
        out = _core.vmap(flat_fn)(*leaves)
    except (_core.Error, NotImplementedError) as e:
        if not fallback_to_while_loop:
            raise
        if warn:
            from ._function import _log_warning
            _log_warning(f"Using a while_loop for converting {getattr(fn, '__name__', 'fn')}: {e}")
        return map_fn(fn, elems)
    out = list(out) if isinstance(out, (tuple, list)) else [out]
    return _unflatten(flat_fn.out_structure, iter(out))


def _tout_list(Tout):
    if Tout is None:
        return None, True
    if isinstance(Tout, (list, tuple)):
        return list(Tout), False
    return [Tout], True


def _host_call(what, func, args, touts, single, name, call):
    """func as an op of the trace being recorded (ef::host_call): it runs on every call of the
    graph, with that call's values. Tout entries may be ef.TensorSpec (the outputs' shapes); for a
    plain dtype the rank is learned by calling func once now, on zeros shaped as the inputs (their
    unknown dims as 1), and every dim is left unknown, as TF leaves py_function's shapes."""
    if touts is None:
        touts = []
    specs, probe = [], None
    for i, t in enumerate(touts):
        if isinstance(t, _core.TensorSpec):
            specs.append(t)
            continue
        if probe is None:
            zeros = [_probe_zeros([d if d is not None else 1 for d in a._shape_tuple], a.dtype) for a in args]
            try:
                probe = call(zeros)
            except Exception as e:
                raise TypeError(f"{what} inside ef.function needs each output's rank: pass Tout as ef.TensorSpec(shape, "
                                f"dtype) values (calling func on zeros to learn them raised {type(e).__name__}: {e})") from e
        specs.append(_core.TensorSpec([None] * len(probe[i]._shape_tuple), t))
    fn_name = f"{what}:{name or getattr(func, '__name__', 'func')}"
    vjp = None
    if what == "py_function":
        def vjp(inputs, cotangents):
            from ._autodiff import GradientTape
            with GradientTape() as tape:
                for x in inputs:
                    tape.watch(x)
                outs = call(inputs)
            return tape.gradient(outs, inputs, output_gradients=cotangents)
    out = _core._host_call(lambda xs: call(xs), args, specs, fn_name, vjp)
    if not touts:
        return None
    return out[0] if single else out


def _probe_zeros(shape, dtype):
    """A stand-in argument of this shape and dtype (empty strings for a string tensor)."""
    if dtype.name == "string":
        return _core.convert_to_tensor(np.zeros(shape, dtype="S1"))
    return _core.zeros(shape, dtype=dtype)


def _convert_outputs(result, touts, single, what):
    if touts is None:
        return None
    values = [result] if single else list(result) if isinstance(result, (list, tuple)) else [result]
    if result is None and not touts:  # Tout=[]: a func run for its effect returns None, as TF allows
        values = []
    if len(values) != len(touts):
        raise ValueError(f"{what}: func returned {len(values)} value(s), Tout names {len(touts)}")
    out = []
    for v, dt in zip(values, touts):
        if isinstance(v, _core.Variable):
            v = v.value()
        if isinstance(v, (np.ndarray, np.generic)) and dt.name != "string" and np.dtype(_np_name(dt)) != v.dtype:
            # As TF's: a result of another dtype is an error, never a silent conversion.
            raise _errors().InvalidArgumentError(None, None, f"{what}: result {len(out)} is a {v.dtype} array where "
                                                 f"Tout says {dt.name}")
        if isinstance(v, _core.Tensor):
            if v.dtype != dt:
                raise _errors().InvalidArgumentError(None, None, f"{what}: func returned a {v.dtype.name} tensor where "
                                                     f"Tout says {dt.name}")
            out.append(v)
        else:
            out.append(_core.convert_to_tensor(np.asarray(v).astype(np.dtype(_np_name(dt))) if dt.name != "string"
                                               else v, dtype=dt))
    return out[0] if single else out


def _np_name(dt):
    return {"bfloat16": "float32"}.get(dt.name, dt.name)


def _errors():
    from . import errors
    return errors


def _decorator(wrap, func, kwargs):
    """TF's decorator form (@tf.py_function(Tout=...)): the call's positional arguments are inp."""
    @functools.wraps(func)
    def call(*args):
        return wrap(func, list(args), **kwargs)
    return call


def py_function(func=None, inp=None, Tout=None, name=None):
    """func called on eager tensors (inp), its results converted to Tout; gradients flow through
    the ef ops func runs. Inside ef.function it is an op that calls func on every run of the graph
    (see _host_call for the outputs' shapes). Without func, a decorator."""
    if func is None:
        return lambda f: _decorator(py_function, f, {"Tout": Tout, "name": name})
    touts, single = _tout_list(Tout)
    args = [x.value() if isinstance(x, _core.Variable) else x if isinstance(x, _core.Tensor)
            else _core.convert_to_tensor(x) for x in (inp if isinstance(inp, (list, tuple)) else [inp])]
    dtypes = None if touts is None else [t.dtype if isinstance(t, _core.TensorSpec) else t for t in touts]
    if _core._in_trace():
        def call(xs):
            out = _convert_outputs(func(*xs), dtypes, single, "py_function")
            return [] if out is None else [out] if single else list(out)
        return _host_call("py_function", func, args, touts, single, name, call)
    return _convert_outputs(func(*args), dtypes, single, "py_function")


def numpy_function(func=None, inp=None, Tout=None, stateful=True, name=None):
    """func called on NumPy arrays (inp's values), its results converted to Tout (no gradient).
    Inside ef.function it is an op that calls func on every run of the graph (see _host_call).
    Without func, a decorator."""
    if func is None:
        return lambda f: _decorator(numpy_function, f, {"Tout": Tout, "stateful": stateful, "name": name})
    touts, single = _tout_list(Tout)
    dtypes = None if touts is None else [t.dtype if isinstance(t, _core.TensorSpec) else t for t in touts]
    if _core._in_trace():
        tensors = [x.value() if isinstance(x, _core.Variable) else x if isinstance(x, _core.Tensor)
                   else _core.convert_to_tensor(x) for x in (inp if isinstance(inp, (list, tuple)) else [inp])]

        def call(xs):
            out = _convert_outputs(func(*[x.numpy() for x in xs]), dtypes, single, "numpy_function")
            return [] if out is None else [out] if single else list(out)
        return _host_call("numpy_function", func, tensors, touts, single, name, call)
    args = [x.numpy() if hasattr(x, "numpy") else np.asarray(x) for x in (inp if isinstance(inp, (list, tuple))
                                                                          else [inp])]
    result = func(*args)
    out = _convert_outputs(result, dtypes, single, "numpy_function")
    if out is None:
        return None
    return _core.stop_gradient(out) if single else [_core.stop_gradient(t) for t in out]
