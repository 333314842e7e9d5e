"""ef.scan: JAX's lax.scan over pytrees (tuples, lists, dicts of tensors) on the C++ ef::scan.

    def step(carry, x):
        h = ef.tanh(x @ w + carry @ u)
        return h, h
    h_last, hs = ef.scan(step, h0, xs)          # hs stacks each step's h

Eagerly the body runs once per step; inside ef.function it is traced once into one `scan` node,
and its gradient is a reverse scan over the values each step kept (see ef::scan in C++).
"""
from . import _core

__all__ = ["scan"]


def _flatten(tree, leaves):
    """Appends the leaves of `tree` to `leaves`; returns its structure."""
    if isinstance(tree, tuple) and not hasattr(tree, "_fields"):
        return ("tuple", [_flatten(t, leaves) for t in tree])
    if isinstance(tree, tuple):  # a namedtuple
        return ("namedtuple", type(tree), [_flatten(t, leaves) for t in tree])
    if isinstance(tree, list):
        return ("list", [_flatten(t, leaves) for t in tree])
    if isinstance(tree, dict):
        keys = sorted(tree)
        return ("dict", keys, [_flatten(tree[k], leaves) for k in keys])
    if tree is None:
        return ("none",)
    leaves.append(tree)
    return ("leaf",)


def _unflatten(structure, leaves):
    """Rebuilds a tree of `structure` from an iterator of leaves."""
    kind = structure[0]
    if kind == "leaf":
        return next(leaves)
    if kind == "none":
        return None
    if kind == "tuple":
        return tuple(_unflatten(s, leaves) for s in structure[1])
    if kind == "namedtuple":
        return structure[1](*[_unflatten(s, leaves) for s in structure[2]])
    if kind == "list":
        return [_unflatten(s, leaves) for s in structure[1]]
    return {k: _unflatten(s, leaves) for k, s in zip(structure[1], structure[2])}


def _describe(structure):
    kind = structure[0]
    if kind == "leaf":
        return "*"
    if kind == "none":
        return "None"
    if kind == "tuple":
        return "(" + ", ".join(_describe(s) for s in structure[1]) + ("," if len(structure[1]) == 1 else "") + ")"
    if kind == "namedtuple":
        return structure[1].__name__ + "(" + ", ".join(_describe(s) for s in structure[2]) + ")"
    if kind == "list":
        return "[" + ", ".join(_describe(s) for s in structure[1]) + "]"
    return "{" + ", ".join(repr(k) + ": " + _describe(s) for k, s in zip(structure[1], structure[2])) + "}"


def scan(f, init, xs=None, length=None, reverse=False):
    """Loops f(carry, x) -> (carry, y) over the leading axis of xs; returns (carry, stacked ys).

    init, xs and the ys may be tensors (or arrays, numbers) or pytrees of them: tuples, lists,
    dicts (by sorted key), namedtuples, None. xs=None scans `length` steps with x = None. The
    carry must keep its structure, dtypes and shapes. reverse=True runs from the last row to
    the first; the ys stay in xs' order.
    """
    init_leaves, xs_leaves = [], []
    carry_structure = _flatten(init, init_leaves)
    xs_structure = _flatten(xs, xs_leaves)
    ys_structure = []

    def body(carry, x):
        result = f(_unflatten(carry_structure, iter(carry)), _unflatten(xs_structure, iter(x)))
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise _core.Error("[scan] the body must return a pair (carry, y), got " + type(result).__name__)
        new_carry, y = result
        carry_leaves, y_leaves = [], []
        structure = _flatten(new_carry, carry_leaves)
        if structure != carry_structure:
            raise _core.Error("[scan] the body must keep the carry's structure: init is " + _describe(carry_structure) +
                              ", the body returned " + _describe(structure))
        y_structure = _flatten(y, y_leaves)
        if not ys_structure:
            ys_structure.append(y_structure)
        elif ys_structure[0] != y_structure:
            raise _core.Error("[scan] the body's y changed structure: " + _describe(y_structure) + ", earlier " +
                              _describe(ys_structure[0]))
        return list(carry_leaves), list(y_leaves)

    carry, ys = _core._scan(body, init_leaves, xs_leaves, length, reverse)
    # Without steps ys_structure comes from ef::scan tracing the body once.
    return (_unflatten(carry_structure, iter(carry)),
            _unflatten(ys_structure[0] if ys_structure else ("none",), iter(ys)))
