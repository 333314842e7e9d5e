"""tf.while_loop with TF's signature over nested loop variables (tuples, lists, dicts,
namedtuples) and tf.TensorArray, on the C++ ef.while_loop that takes a flat list of tensors.

Eagerly a loop whose variables hold a TensorArray or are nested runs as Python (TF's eager
while_loop is a Python loop too): the arrays keep their list form, grow, and a tape records every
op. A flat tuple/list of tensors goes to the C++ loop as before. Inside ef.function each
TensorArray travels as its buffer tensor [size, *element_shape] (python/eagerflow/_tensor_array.py)
and is rebuilt around the loop variable in cond and body; the C++ loop needs fixed shapes, so
such an array needs a size and an element shape known when the loop starts.
"""
from . import _core
from ._scan import _flatten, _unflatten
from ._tensor_array import TensorArray

__all__ = ["while_loop"]


def _leaves_to_tensors(leaves, templates, what):
    out = []
    for k, leaf in enumerate(leaves):
        if isinstance(leaf, TensorArray):
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


def _rebuild(tensors, templates):
    return [t if tmpl is None else tmpl._ef_from_loop_tensor(t) for t, tmpl in zip(tensors, templates)]


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10, back_prop=True,
               swap_memory=False, maximum_iterations=None, name=None):
    """Repeats body while cond holds: both take the loop variables as arguments; body returns them
    in the same structure. Returns the loop variables in loop_vars' structure."""
    if shape_invariants is not None:
        raise NotImplementedError("while_loop: shape_invariants are not supported (eagerflow's loop variables keep "
                                  "their shapes)")
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
        out = _unflatten(structure, iter(current))
        return out[0] if single else out

    templates = [None] * len(leaves)
    flat = _leaves_to_tensors(leaves, templates, "loop variable")

    def c(*tensors):
        return call(cond, _unflatten(structure, iter(_rebuild(list(tensors), templates))))

    def b(*tensors):
        result = same(call(body, _unflatten(structure, iter(_rebuild(list(tensors), templates)))))
        return _leaves_to_tensors(result, None, "loop variable")

    result = _core.while_loop(c, b, flat, maximum_iterations)
    out = _unflatten(structure, iter(_rebuild(list(result), templates)))
    return out[0] if single else out
