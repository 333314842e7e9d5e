"""while_stmt and for_stmt: a tensor condition (or a loop over tf.range / a tensor) inside a trace
becomes one ef.while_loop whose loop variables are the names the body assigns; any other loop
runs as Python (unrolled into the trace, as TF's AutoGraph does with Python loops)."""
import threading

from .. import _core, _data_graph
from . import _log
from .._tensor_array import TensorArray
from .. import _tensor_array_dynamic as _ta_dynamic
from ._operators import (RETVAL, ArrayShapeFound, Undefined, _as_condition, _unshaped_array, _describe_structure, _flatten, _in_trace, _same_structure,
                         _shape_text, _tensor_of, _tf_if, _to_tensor, _undefined, _unflatten)


class _Range:
    """tf.range(...) as the iterable of a converted `for`: looped over by a counter (its limit may
    be a symbolic tensor, whose range has no static length)."""

    __slots__ = ("args", "dtype")

    def __init__(self, args, dtype):
        self.args, self.dtype = args, dtype

    def tensor(self):
        return _core.range(*self.args, **({} if self.dtype is None else {"dtype": self.dtype}))


def for_iterable(func, args, kwargs):
    """The iterable of `for x in <call>`: tf.range stays lazy; other calls run (converted)."""
    from . import _api
    ef_range = _range_function()
    if func is range and not kwargs and any(_tensor_of(a) is not None for a in args) and _in_trace():
        return _Range(tuple(args), None)  # range(n) of a tensor: tf.range (TF's builtin conversion)
    if func is enumerate and args and _in_trace() and _data_graph.is_dataset(args[0]):
        return _data_graph.Enumerated(*args, **kwargs)  # (index, element) pairs read when the graph runs
    if func is ef_range:
        try:
            values, dtype = _range_args(*args, **kwargs)
        except TypeError:
            pass  # tf.range's own error, from the call below
        else:
            return _Range(values, dtype)
    return _api.converted_call(func)(*args, **kwargs)


def _range_args(start, limit=None, delta=1, dtype=None, name=None):
    """tf.range's arguments: tf.range(n) counts from 0 to n."""
    if limit is None:
        start, limit = 0, start
    return (start, limit, delta), dtype


def _range_function():
    import eagerflow
    return eagerflow.range


_depth = threading.local()  # tensor loops being traced in this thread (n)


class _LoopError(Exception):
    """Names undefined before a tensor loop, defined by its body and used after it: the loop runs
    again with placeholders for them (TF's rule: a loop may run zero times)."""

    def __init__(self, values):
        super().__init__("retry")
        self.values = values


def while_stmt(test, body, get_state, set_state, names, live, where):
    first = test()
    pred = _as_condition(first)
    if pred is None:
        _log.statement(where, "ran as Python", _why_py(first, where))
        value, n = first, 0
        while True:
            if n and _in_trace() and _tensor_of(value) is not None and _tensor_of(first) is None:
                raise NotImplementedError(
                    f"{where.head}: the condition was a Python {type(first).__name__} and became a tensor after {n} "
                    "iteration(s): a loop cannot switch from Python to ef.while_loop. This happens when a variable "
                    "changes type or a break/return inside the loop depends on a tensor; make the condition a tensor "
                    "from the start (tf.constant) so that the whole loop runs as ef.while_loop")
            if not value:
                return
            body()
            n += 1
            value = test()
    _log.statement(where, "converted to ef.while_loop", f"{where.test} is a tensor {pred.dtype.name}{list(pred._shape_tuple)}")
    _tf_loop(test, None, body, get_state, set_state, names, live, where)


def _why_py(value, where):
    return f"{where.test} is a Python {type(value).__name__}"


class _Counter:
    """The hidden loop variable of a tensor `for`: an index or the range's value. A dataset's
    counter is its has-value flag instead: `pull(flag)` -> (has_value, element) fetches the next
    element when the graph runs, the body runs under ef.cond(has_value), and `finish(flag)` runs
    after the loop."""

    def __init__(self, start, keep_going, step, item, pull=None, finish=None, room=None):
        self.start, self.keep_going, self.step, self.item = start, keep_going, step, item
        self.pull, self.finish = pull, finish
        # rows a dynamic TensorArray may need for the loop's writes (an int32 tensor), when the
        # trip count is known as the loop starts
        self.room = room


def _range_counter(r, where):
    values = list(r.args)
    if len(values) == 1:
        values = [0, values[0], 1]
    elif len(values) == 2:
        values.append(1)
    tensors = [_tensor_of(v) for v in values]
    dtype = r.dtype
    if dtype is None:
        dtypes = [t.dtype for t in tensors if t is not None]
        if dtypes:
            dtype = next((d for d in dtypes if d.is_floating), dtypes[0])
        else:
            dtype = _core.DType.float32 if any(isinstance(v, float) for v in values) else _core.DType.int32
    start, limit, delta = (_core.cast(_to_tensor(v), dtype) for v in values)
    zero = _core.zeros([], dtype=dtype)

    def keep_going(i):
        up = _core.logical_and(delta > zero, i < limit)
        down = _core.logical_and(delta < zero, i > limit)
        return _core.logical_or(up, down)

    room = _ta_dynamic.trip_count(start, limit, delta)
    if not dtype.is_floating:  # writes indexed by the range's values reach max(start, limit) - 1
        room = room + _core.cast(_core.maximum(_core.maximum(start, limit), zero), _core.DType.int32)
    return _Counter(start, keep_going, lambda i: i + delta, lambda i: i, room=room)


def _tensor_counter(t):
    if not t._shape_tuple:
        raise TypeError("cannot iterate over a scalar tensor (a `for` over a tensor loops over its first axis)")
    n = t._shape_tuple[0]
    limit = _core.constant(n, dtype=_core.DType.int32) if n is not None else _core.cast(_core.shape(t)[0], _core.DType.int32)
    return _Counter(_core.constant(0, dtype=_core.DType.int32), lambda i: i < limit, lambda i: i + 1,
                    lambda i: _core.gather(t, i), room=limit)


class _DatasetCounter(_Counter):
    def __init__(self, iterator):
        super().__init__(_core.constant(True), lambda more: more, None, None,
                         pull=lambda more: iterator.pull(after=more), finish=iterator.close)
        self.iterator = iterator

    @property
    def room(self):  # asked only by a dynamic TensorArray written in the loop: the dataset's cardinality
        return self.iterator.cardinality()

    @room.setter
    def room(self, value):
        pass


def _dataset_counter(iterator):
    return _DatasetCounter(iterator)


def for_stmt(iterable, extra_test, body, get_state, set_state, names, live, where):
    if isinstance(iterable, _Range):
        if _in_trace():
            _log.statement(where, "converted to ef.while_loop", f"{_iter_src(where)} is a tf.range")
            _tf_loop(extra_test, _range_counter(iterable, where), body, get_state, set_state, names, live, where)
            return
        iterable = iterable.tensor()
    t = _tensor_of(iterable) if _in_trace() else None
    if t is not None:
        _log.statement(where, "converted to ef.while_loop", f"{_iter_src(where)} is a tensor {t.dtype.name}{list(t._shape_tuple)}")
        _tf_loop(extra_test, _tensor_counter(t), body, get_state, set_state, names, live, where)
        return
    if _in_trace() and (_data_graph.is_dataset(iterable) or _data_graph.is_iterator(iterable)
                        or isinstance(iterable, _data_graph.Enumerated)):
        kind = "an iterator" if _data_graph.is_iterator(iterable) else "a dataset"
        _log.statement(where, "converted to ef.while_loop", f"{_iter_src(where)} is {kind}, read when the graph runs")
        counter = _dataset_counter(_data_graph.iterator_in_trace(iterable))
        _tf_loop(extra_test, counter, body, get_state, set_state, names, live, where)
        return
    _log.statement(where, "ran as Python", f"{_iter_src(where)} is a Python {type(iterable).__name__}")
    for value in iterable:
        if extra_test is not None:
            ok = extra_test()
            pred = _as_condition(ok)
            if pred is not None:  # a break/return on a tensor: the remaining iterations run under ef.cond
                _tf_if(pred, lambda v=value: body(v), lambda: None, get_state, set_state, names, where)
                continue
            if not ok:
                break
        body(value)


def _tf_loop(test, counter, body, get_state, set_state, names, live, where):
    init = get_state()
    placeholders = {}
    for _ in range(2 + 2 * len(names)):  # each retry settles one name
        try:
            return _run_loop(test, counter, body, get_state, set_state, names, live, where, init, placeholders)
        except _LoopError as retry:
            placeholders.update(retry.values)
        except ArrayShapeFound as found:
            if found.name not in names or not isinstance(init[names.index(found.name)], TensorArray) \
                    or found.name in placeholders:
                raise
            placeholders[found.name] = init[names.index(found.name)]._with_element_shape(found.element_shape)
    raise AssertionError("unreachable: a loop variable kept appearing")


def _run_loop(test, counter, body, get_state, set_state, names, live, where, init, placeholders):
    plans, flat0 = [], []
    init = list(init)
    for k, (name, value) in enumerate(zip(names, init)):
        if _undefined(value) or name in placeholders:
            value = placeholders.get(name, value)
        if isinstance(value, TensorArray) and value._dynamic_size and not _unshaped(value):
            value = _room_for(value, counter, name, where)
        init[k] = value
        if _undefined(value):
            plans.append(None)
            continue
        leaves = []
        s = _flatten(value, leaves)
        tensors = [_to_tensor(v) for v in leaves]
        plans.append((s, len(flat0), len(tensors)))
        flat0.extend(tensors)
    start = counter.start if counter is not None else _core.constant(0, dtype=_core.DType.int32)

    def state_of(flat):
        state = []
        for value, plan in zip(init, plans):
            if plan is None:
                state.append(value)
            else:
                s, begin, n = plan
                state.append(_unflatten(s, iter(flat[begin:begin + n])))
        return tuple(state)

    def cond_fn(i, *flat):
        set_state(state_of(flat))
        keep = counter.keep_going(i) if counter is not None else None
        if test is not None:
            more = test()
            if _tensor_of(more) is None:
                if not more:
                    return _core.constant(False)
            else:
                more = _tensor_of(more)
                keep = more if keep is None else _core.logical_and(keep, more)
        return keep if keep is not None else _core.constant(True)

    def body_fn(i, *flat):
        set_state(state_of(flat))
        if counter is not None and counter.pull is not None:
            has, item = counter.pull(i)
            _tf_if(has, lambda: body(item), lambda: None, get_state, set_state, names, where)
            out = [has]
        elif counter is not None:
            body(counter.item(i))
            out = [counter.step(i)]
        else:
            body()
            out = [i + 1]
        new = get_state()
        appeared = {}
        for name, value, plan in zip(names, new, plans):
            if plan is None:
                if not _undefined(value) and (name in live or name == RETVAL):
                    appeared[name] = _placeholder_like(name, value, where)
                continue
            s, begin, n = plan
            if isinstance(value, Undefined):
                raise ValueError(value.message or f"{where.head}: '{name}' is undefined after one iteration")
            leaves = []
            s2 = _flatten(value, leaves)
            if _unshaped_array(s) and isinstance(value, TensorArray) and not _unshaped(value):
                # its element shape is known now: the loop is traced again with the array shaped
                appeared[name] = init[names.index(name)]._with_element_shape(value._element_shape)
                continue
            if not _same_structure(s, s2):
                raise _structure_error(name, s, s2, where)
            for before, v in zip(flat[begin:begin + n], leaves):
                after = _to_tensor(v, before)
                if after.dtype != before.dtype:
                    raise TypeError(f"'{name}' has dtype {before.dtype.name} before the loop, but dtype "
                                    f"{after.dtype.name} after one iteration ({where.head}: the loop runs as "
                                    "ef.while_loop, whose loop variables keep their dtypes)")
                if not _shapes_agree(before._shape_tuple, after._shape_tuple):
                    raise ValueError(f"'{name}' has shape {_shape_text(before)} before the loop, but shape "
                                     f"{_shape_text(after)} after one iteration ({where.head}: the loop runs as "
                                     "ef.while_loop, whose loop variables keep their shapes)")
                out.append(after)
        if appeared:
            raise _LoopError(appeared)
        return out

    _depth.n = getattr(_depth, "n", 0) + 1
    try:
        result = list(_core.while_loop(cond_fn, body_fn, [start] + flat0))
    finally:
        _depth.n -= 1
    if counter is not None and counter.finish is not None:
        counter.finish(result[0])
    result = result[1:]
    final = list(state_of(result))
    for k, (name, plan) in enumerate(zip(names, plans)):
        if plan is None:
            final[k] = Undefined(name, f"'{name}' is defined inside the loop ({where.head}) but not before it: the "
                                       "loop runs as ef.while_loop and may run zero times; define it before the loop")
    set_state(tuple(final))


def _unshaped(ta):
    return _unshaped_array(_flatten(ta, []))


def _room_for(ta, counter, name, where):
    """A dynamic TensorArray as a loop variable: a buffer with room for the loop's writes."""
    if getattr(_depth, "n", 0) and ta._size is not None:
        # grown by the enclosing loop, whose buffer must keep its rows through every iteration
        return ta
    room = getattr(counter, "room", None)
    if room is None:
        raise NotImplementedError(
            f"'{name}' is a TensorArray with dynamic_size=True written in a loop whose number of iterations is not "
            f"known when it starts ({where.head}): inside ef.function eagerflow grows such an array by the loop's "
            "trip count, known for `for ... in tf.range(...)` and `for ... in <tensor>`; loop over tf.range(n), or "
            "give the array a size")
    return ta._reserve(room)


def _shapes_agree(a, b):
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def _placeholder_like(name, value, where):
    leaves = []
    s = _flatten(value, leaves)
    zeros = []
    for v in leaves:
        t = _to_tensor(v)
        if any(d is None for d in t._shape_tuple):
            raise ValueError(f"'{name}' must be defined before the loop ({where.head}): it is used after the loop, "
                             f"and its shape {list(t._shape_tuple)} is not static, so no placeholder can stand for it")
        zeros.append(_core.zeros(list(t._shape_tuple), dtype=t.dtype))
    return _unflatten(s, iter(zeros))


def _structure_error(name, s, s2, where):
    if isinstance(s[0], type) and issubclass(s[0], list) and s2[0] is s[0] and len(s[1]) != len(s2[1]):
        return ValueError(
            f"'{name}' is a Python list of length {len(s[1])} before the loop and of length {len(s2[1])} after one "
            f"iteration ({where.head}): the loop runs as ef.while_loop, traced once, so a Python list cannot grow "
            "in it. Collect the values in a tf.TensorArray (ta = tf.TensorArray(dtype, size=0, dynamic_size=True) "
            "before the loop, ta = ta.write(ta.size(), value) in it, ta.stack() after it), "
            "or compute them as one tensor (ef.scan, tf.map_fn)")
    if s[0] == "static" or s2[0] == "static":
        return ValueError(f"'{name}' changes from {_describe_structure(s)} to {_describe_structure(s2)} in the loop "
                          f"({where.head}): a loop over a tensor runs as ef.while_loop, whose loop variables are "
                          "tensors (or fixed structures of them); Python values other than numbers cannot change in it")
    return ValueError(f"'{name}' does not have the same nested structure after one iteration: "
                      f"{_describe_structure(s)} before the loop, {_describe_structure(s2)} after ({where.head})")


def _iter_src(where):
    return where.test.split(" in ", 1)[-1]
