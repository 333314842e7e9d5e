"""tf.while_loop with TF's signature over nested loop variables (tuples, lists, dicts,
namedtuples) and tf.TensorArray, on the C++ ef.while_loop that takes a flat list of tensors.

Eagerly a loop whose variables hold a TensorArray or are nested runs as Python (TF's eager
while_loop is a Python loop too): the arrays keep their list form, grow, and a tape records every
op. A flat tuple/list of tensors goes to the C++ loop as before. Inside ef.function each
TensorArray travels as its buffer tensor [size, *element_shape] (python/eagerflow/_tensor_array.py)
and is rebuilt around the loop variable in cond and body; the C++ loop needs fixed shapes, so
such an array needs a size known when the loop starts. Its element shape, when not known (no
element_shape=, nothing written yet), is found by tracing the body once with the array in a probe
form that records the shape of what is written: that trace stops at the body's end, inside the
loop's own sub-graph, so none of its ops runs (Python code in the body runs twice at trace time).
"""
from . import _core
from ._scan import _flatten, _unflatten
from ._tensor_array import TensorArray

__all__ = ["while_loop"]


def _leaves_to_tensors(leaves, templates, what):
    out = []
    for k, leaf in enumerate(leaves):
        if isinstance(leaf, TensorArray) and leaf._size is not None:  # grown: its buffer and its length
            ta = leaf._to_buffer()
            out += [ta._buffer, ta._size]
            if templates is not None and templates[k] is None:
                templates[k] = leaf
        elif isinstance(leaf, TensorArray):
            if leaf._dynamic_size and leaf._length() == 0:
                raise NotImplementedError(
                    "while_loop: a TensorArray of size 0 with dynamic_size=True cannot grow inside a loop in "
                    "ef.function without maximum_iterations (eagerflow's traced loop variables keep their shapes, so "
                    "the array is given room for maximum_iterations writes when the loop starts); pass "
                    "maximum_iterations=, or give it size= the number of elements the loop writes")
            try:
                out.append(leaf._ef_loop_tensor())
            except ValueError as e:
                raise ValueError(f"while_loop: a TensorArray {what} inside ef.function needs its element shape "
                                 f"(element_shape=..., or an element written before the loop): {e}") from None
            if templates is not None and templates[k] is None:
                templates[k] = leaf
        elif isinstance(leaf, _core.Variable):
            out.append(leaf.value())
        else:
            out.append(leaf if isinstance(leaf, _core.Tensor) else _core.convert_to_tensor(leaf))
    return out


class _Probed(Exception):
    pass


class _ProbeArray(TensorArray):
    """A TensorArray of unknown element shape inside the probe trace: records written shapes."""

    def write(self, index, value, name=None):
        value = self._convert(value)
        self._ef_shapes.append(tuple(value._shape_tuple))
        return self

    def read(self, index, name=None):
        if self._ef_shapes:
            return _core.zeros(list(self._ef_shapes[0]), dtype=self._dtype)
        raise ValueError("while_loop: a TensorArray whose element shape is not known is read in the loop before "
                         "anything is written to it; give it element_shape=")

    def _unsupported(self, *args, **kwargs):
        raise ValueError("while_loop: a TensorArray whose element shape is not known can only be written and read in "
                         "a traced loop; give it element_shape=")

    stack = gather = concat = unstack = scatter = split = _unsupported


def _needs_probe(leaf):
    """An array that cannot become a buffer yet: unwritten elements and no known element shape."""
    if not isinstance(leaf, TensorArray) or leaf._buffer is not None or leaf._list is None:
        return False
    known = leaf._element_shape is not None and all(d is not None for d in leaf._element_shape)
    return not known and (not leaf._list or any(e is None for e in leaf._list))


def _with_element_shapes(cond, body, call, structure, leaves, maximum_iterations):
    """The loop's leaves with every TensorArray's element shape known (see the module docstring)."""
    probes = [k for k, leaf in enumerate(leaves) if _needs_probe(leaf)]
    if not probes:
        return leaves
    arrays = {}
    for k in probes:
        ta = leaves[k]
        if ta._buffer is not None or any(e is not None for e in ta._list):
            continue
        p = _ProbeArray.__new__(_ProbeArray)
        p.__dict__.update(ta.__dict__)
        p._ef_shapes = []
        arrays[k] = p
    if len(arrays) != len(probes):
        return leaves  # partly written arrays of unknown shape: _leaves_to_tensors says what is missing
    dummy = [_core.zeros([ta._length()], dtype=ta._dtype) if k in arrays else None for k, ta in enumerate(leaves)]

    def args_of(tensors):
        return _unflatten(structure, iter([arrays[k] if k in arrays else t for k, t in enumerate(tensors)]))

    def probe_body(*tensors):
        call(body, args_of(list(tensors)))
        raise _Probed()

    plain = [dummy[k] if k in arrays else x for k, x in enumerate(leaves)]
    flat = _leaves_to_tensors(plain, None, "loop variable")
    try:
        _core.while_loop(lambda *t: call(cond, args_of(list(t))), probe_body, flat, maximum_iterations)
    except _Probed:
        pass
    out = list(leaves)
    for k, p in arrays.items():
        if not p._ef_shapes:
            continue  # never written: _leaves_to_tensors says the shape is missing
        ta = leaves[k]._copy()
        ta._element_shape = p._ef_shapes[0]
        out[k] = ta
    return out


def _rebuild(tensors, templates):
    it, out = iter(tensors), []
    for tmpl in templates:
        if tmpl is None:
            out.append(next(it))
        elif tmpl._size is not None:
            out.append(TensorArray._from_buffer(tmpl, next(it), next(it)))
        else:
            out.append(tmpl._ef_from_loop_tensor(next(it)))
    return out


def _with_room(leaves, maximum_iterations):
    """Dynamic arrays with room for maximum_iterations more writes (the loop cannot grow them)."""
    if maximum_iterations is None:
        return leaves
    from . import _tensor_array_dynamic
    count = _tensor_array_dynamic._count(maximum_iterations)
    return [leaf._reserve(count) if isinstance(leaf, TensorArray) and leaf._dynamic_size and not (
        leaf._list is not None and not any(e is not None for e in leaf._list) and leaf._element_shape is None)
        else leaf for leaf in leaves]


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10, back_prop=True,
               swap_memory=False, maximum_iterations=None, name=None):
    """Repeats body while cond holds: both take the loop variables as arguments; body returns them
    in the same structure. Returns the loop variables in loop_vars' structure."""
    single = not isinstance(loop_vars, (tuple, list, dict))
    packed = (loop_vars,) if single else loop_vars
    leaves = []
    structure = _flatten(packed, leaves)
    has_array = any(isinstance(x, TensorArray) for x in leaves)
    nested = not isinstance(packed, (tuple, list)) or hasattr(packed, "_fields") or len(leaves) != len(packed)
    steps = None if maximum_iterations is None else maximum_iterations

    def call(fn, args):
        return fn(*args) if not isinstance(args, dict) else fn(args)

    def same(result):
        """The body's result as a flat list of leaves in loop_vars' structure."""
        if single:
            result = (result,)
        elif isinstance(packed, (tuple, list)) and len(packed) == 1 and not isinstance(result, (tuple, list)):
            result = (result,)  # a body of one loop variable may return it bare
        out = []
        s = _flatten(tuple(result) if isinstance(packed, tuple) and isinstance(result, list) else result, out)
        if len(out) != len(leaves) or (s[0] != structure[0] and not {s[0], structure[0]} <= {"tuple", "list"}):
            raise ValueError(f"while_loop: the body must return the loop variables' structure; got {len(out)} values "
                             f"for {len(leaves)} loop variables")
        return out

    if not _core._in_trace() and (has_array or nested):
        # eager: a Python loop, as TF's
        current, i = list(leaves), 0
        while steps is None or i < int(steps):
            args = _unflatten(structure, iter(current))
            if not bool(call(cond, args)):
                break
            current = same(call(body, args))
            i += 1
        out = _unflatten(structure, iter(_no_gradient(current) if not back_prop else current))
        return out[0] if single else out

    leaves = _with_room(_with_element_shapes(cond, body, call, structure, leaves, maximum_iterations),
                        maximum_iterations)
    templates = [None] * len(leaves)
    flat = _leaves_to_tensors(leaves, templates, "loop variable")

    def c(*tensors):
        return call(cond, _unflatten(structure, iter(_rebuild(list(tensors), templates))))

    def b(*tensors):
        result = same(call(body, _unflatten(structure, iter(_rebuild(list(tensors), templates)))))
        return _leaves_to_tensors(result, None, "loop variable")

    invariants = None
    if shape_invariants is not None:
        per_leaf = _invariant_leaves(packed, (shape_invariants,) if single else shape_invariants)
        invariants = []
        for leaf, inv in zip(leaves, per_leaf):
            # A TensorArray's tensors carry their own shapes (TF ignores invariants for them too).
            count = len(_leaves_to_tensors([leaf], None, "loop variable")) if isinstance(leaf, TensorArray) else 1
            invariants += [None] * count if isinstance(leaf, TensorArray) else [inv]
    result = _core.while_loop(c, b, flat, maximum_iterations, invariants)
    result = list(result) if back_prop else _no_gradient(list(result))
    out = _unflatten(structure, iter(_rebuild(result, templates)))
    return out[0] if single else out


def _shape_list(shape):
    """TF's shape invariant (a TensorShape, a list/tuple with None dims) as a list, or None for
    an unknown rank (TensorShape(None))."""
    if shape is None:
        return None
    dims = getattr(shape, "dims", shape)
    if dims is None:
        return None
    out = []
    for d in (shape.as_list() if hasattr(shape, "as_list") else dims):
        d = getattr(d, "value", d)
        out.append(None if d is None else int(d))
    return out


def _invariant_leaves(loop_vars, invariants):
    """shape_invariants in loop_vars' structure: one shape list (or None) per loop-variable leaf."""
    def is_leaf(x):
        return isinstance(x, (_core.Tensor, _core.Variable, TensorArray)) or not isinstance(x, (tuple, list, dict))

    out = []

    def walk(lv, inv):
        if is_leaf(lv):
            shape = _shape_list(inv)
            if inv is not None and shape is None:
                raise NotImplementedError("while_loop: a shape invariant of unknown rank is not supported; give its "
                                          "rank, with None for the dims that change")
            out.append(shape)
        elif isinstance(lv, dict):
            for k in lv:
                walk(lv[k], inv[k] if inv is not None else None)
        else:
            if inv is not None and len(inv) != len(lv):
                raise ValueError(f"while_loop: shape_invariants has {len(inv)} entries where loop_vars has {len(lv)}")
            for i, v in enumerate(lv):
                walk(v, inv[i] if inv is not None else None)

    walk(loop_vars, invariants)
    return out


def _no_gradient(values):
    """back_prop=False: the results as constants to a tape (TensorArrays: their elements)."""
    out = []
    for v in values:
        if isinstance(v, TensorArray):
            v = v._ef_from_loop_tensor(_core.stop_gradient(v._ef_loop_tensor())) if v._length() else v
        elif isinstance(v, (_core.Tensor, _core.Variable)):
            v = _core.stop_gradient(v)
        out.append(v)
    return out
