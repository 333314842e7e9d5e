"""The functions converted code calls (TF's ag__.if_stmt, while_stmt, for_stmt, and_, or_, not_).

Each decides at run (trace) time: a tensor condition or iterable inside a trace becomes
ef.cond / ef.while_loop; anything else runs as the Python statement it was. The statement's
state (the names it assigns) travels through get_state()/set_state(), closures the
transformer writes with `nonlocal`, so the branches and bodies stay ordinary Python.
"""
import numbers
import threading

import numpy as _np

from .. import _core
from . import _log

_Tensor = _core.Tensor


class Undefined:
    """A name that has no value on some path: defined in one branch of a tensor `if` only, or
    only inside a tensor loop. Any use raises the error TF raises where the name is live."""

    __slots__ = ("name", "message")

    def __init__(self, name, message=None):
        self.name = name
        self.message = message

    def _fail(self, *args, **kwargs):
        if self.message is None:
            raise UnboundLocalError(f"local variable '{self.name}' referenced before assignment")
        raise ValueError(self.message)

    def __repr__(self):
        return f"<undefined '{self.name}'" + (f": {self.message}>" if self.message else ">")

    __bool__ = __len__ = __iter__ = __getitem__ = __call__ = __index__ = __float__ = __int__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _fail
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = __matmul__ = __rmatmul__ = _fail
    __neg__ = __pos__ = __abs__ = __lt__ = __le__ = __gt__ = __ge__ = __invert__ = _fail
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = _fail

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        self._fail()


class UndefinedReturnValue:
    """The return value before any `return` ran (None when the function ends)."""

    def __repr__(self):
        return "<no return value>"


RETVAL = "retval__"  # the transformer's name for the return value (kept through one-sided conds)


def _undefined(x):
    return isinstance(x, (Undefined, UndefinedReturnValue))


_local = threading.local()


def _partial():
    """id -> tensor: return values a tensor `if` gave in one branch only, in this thread's trace
    (emptied when the outermost trace ends: autograph._api.status)."""
    table = getattr(_local, "partial", None)
    if table is None:
        table = _local.partial = {}
    return table


def retval(value, converted=False):
    """The converted function's result: None if no return ran; an error if a path lost it."""
    if isinstance(value, UndefinedReturnValue):
        return None
    leaves = []
    _flatten(value, leaves)
    for v in [value] + _statics(value):
        if isinstance(v, Undefined):
            raise ValueError(v.message or "the function's return value is undefined on some path")
    partial = _partial()
    if converted and leaves and partial.get(id(leaves[0])) is leaves[0]:
        del partial[id(leaves[0])]
        raise ValueError("the else branch must also have a return statement (an if on a tensor runs as ef.cond, "
                         "and the function must return a value on every path)")
    return value


def _statics(x):
    out = []

    def walk(s):
        if s[0] == "static":
            out.append(s[1])
        elif s[0] == "namedtuple":
            for e in s[2]:
                walk(e)
        elif s[0] == "composite":
            pass
        elif s[0] is dict:
            for e in s[2]:
                walk(e)
        elif s[0] != "leaf":
            for e in s[1]:
                walk(e)

    walk(_flatten(x, []))
    return out


def _in_trace():
    return _core._in_trace()


def _tensor_of(x):
    """x as a tensor when it is one for control flow (an ef.Tensor or ef.Variable inside a trace)."""
    if isinstance(x, _Tensor):
        return x
    if isinstance(x, _core.Variable):
        return x.value()
    return None


def _as_condition(x):
    """The tensor a converted statement branches on, or None to run it as Python."""
    if not _in_trace():
        return None
    return _tensor_of(x)  # any tensor, as TF's rule (a concrete one: ef.cond runs only its branch)


def _why(x, test_src):
    if isinstance(x, (_Tensor, _core.Variable)):
        t = _tensor_of(x)
        return f"{test_src} is a tensor {t.dtype.name}{list(t._shape_tuple)}"
    return f"{test_src} is a Python {type(x).__name__}"


# --- structures: a state value's leaves (tensors, numbers) and its static parts -------------------
# A class joins loop variables and cond outputs as its tensors (TF's CompositeTensor) with two
# methods: obj._ag_flatten() -> (key, [tensors]) where key (compared with ==) is what must stay
# equal across branches/iterations, and cls._ag_unflatten(key, tensors) -> a new object.

def _flatten(x, leaves):
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return ("namedtuple", type(x), [_flatten(e, leaves) for e in x])
    if isinstance(x, (list, tuple)):
        return (type(x), [_flatten(e, leaves) for e in x])
    if isinstance(x, dict):
        keys = list(x)
        return (dict, keys, [_flatten(x[k], leaves) for k in keys])
    if hasattr(type(x), "_ag_unflatten"):  # a composite value (a TensorArray): its tensors are loop variables
        key, tensors = x._ag_flatten()
        start = len(leaves)
        leaves.extend(tensors)
        return ("composite", type(x), key, len(leaves) - start)
    if isinstance(x, (_Tensor, _np.ndarray, numbers.Number, _np.generic)):
        leaves.append(x)
        return ("leaf",)
    return ("static", x)


def _unflatten(s, it):
    kind = s[0]
    if kind == "leaf":
        return next(it)
    if kind == "static":
        return s[1]
    if kind == "namedtuple":
        return s[1](*[_unflatten(e, it) for e in s[2]])
    if kind == "composite":
        return s[1]._ag_unflatten(s[2], [next(it) for _ in range(s[3])])
    if kind is dict:
        return {k: _unflatten(e, it) for k, e in zip(s[1], s[2])}
    return kind(_unflatten(e, it) for e in s[1])


def _fresh(state):
    """The state with new containers around the same leaves: a branch that mutates a list in place
    must not change what the other branch starts from."""
    out = []
    for value in state:
        leaves = []
        out.append(_unflatten(_flatten(value, leaves), iter(leaves)))
    return tuple(out)


def _same_structure(a, b):
    if a[0] != b[0]:
        return False
    if a[0] == "leaf":
        return True
    if a[0] == "static":
        return a[1] is b[1] or (type(a[1]) is type(b[1]) and _safe_eq(a[1], b[1]))
    if a[0] == "namedtuple":
        return a[1] is b[1] and len(a[2]) == len(b[2]) and all(map(_same_structure, a[2], b[2]))
    if a[0] == "composite":
        return a[1] is b[1] and a[3] == b[3] and _safe_eq(a[2], b[2])
    if a[0] is dict:
        return a[1] == b[1] and all(map(_same_structure, a[2], b[2]))
    return len(a[1]) == len(b[1]) and all(map(_same_structure, a[1], b[1]))


def _safe_eq(a, b):
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - objects whose == is not a bool are compared by identity
        return False


def _describe_structure(s):
    kind = s[0]
    if kind == "leaf":
        return "tensor"
    if kind == "static":
        return repr(s[1]) if s[1] is None else type(s[1]).__name__
    if kind == "namedtuple":
        return f"{s[1].__name__} of {len(s[2])}"
    if kind == "composite":
        return f"{s[1].__name__} ({s[2]!r})"
    if kind is dict:
        return f"dict with keys {s[1]}"
    return f"{kind.__name__} of length {len(s[1])}"


def _to_tensor(v, like=None):
    if isinstance(v, _Tensor):
        return v
    if like is not None and isinstance(v, (numbers.Number, _np.generic)):
        return _core.cast(_core.convert_to_tensor(v), like.dtype)
    return _core.convert_to_tensor(v)


def _spec(t):
    return f"{t.dtype.name}{list(t._shape_tuple)}"


def _shape_text(t):
    return "(" + ", ".join(str(d) for d in t._shape_tuple) + ("," if len(t._shape_tuple) == 1 else "") + ")"


# --- if -------------------------------------------------------------------------------------------

def if_stmt(cond, body, orelse, get_state, set_state, names, where, live=None):
    pred = _as_condition(cond)
    if pred is None:
        _log.statement(where, "ran as Python", _why(cond, where.test))
        if cond:
            body()
        else:
            orelse()
        return
    _log.statement(where, "converted to ef.cond", _why(cond, where.test))
    _tf_if(pred, body, orelse, get_state, set_state, names, where, live)


def _dropped(name, live):
    """A variable nothing reads after the if (an attribute, obj.x, is state: never dropped)."""
    return live is not None and name not in live and name != RETVAL and "." not in name


def _tf_if(pred, body, orelse, get_state, set_state, names, where, live=None):
    if not pred.is_symbolic:  # its value is known at trace time: ef.cond would run that branch alone
        if bool(pred):
            body()
        else:
            orelse()
        return
    init = _fresh(get_state())
    first = {}  # the if-branch's state, known when the else-branch runs (ef.cond traces then, else)

    def then_fn():
        set_state(_fresh(init))
        body()
        state = get_state()
        plans, flat = [], []
        for name, value in zip(names, state):
            if _undefined(value) or _dropped(name, live):
                plans.append(None)  # undefined, or read by nothing after the if: not an output
                continue
            leaves = []
            s = _flatten(value, leaves)
            tensors = [_to_tensor(v) for v in leaves]
            plans.append((s, len(flat), len(tensors)))
            flat.extend(tensors)
        first["plans"], first["flat"] = plans, flat
        return flat

    def else_fn():
        set_state(_fresh(init))
        orelse()
        state = get_state()
        plans, flat = first["plans"], first["flat"]
        out = []
        for name, value, plan in zip(names, state, plans):
            if plan is None:
                continue  # undefined after the if-branch: not an output
            s, start, n = plan
            then_tensors = flat[start:start + n]
            if _undefined(value):
                if name != RETVAL:
                    out.extend(_placeholders(name, then_tensors, where))
                    continue
                if any(d is None for t in then_tensors for d in t._shape_tuple):
                    raise ValueError(f"{where.head}: the else branch must also have a return statement.")
                out.extend(_placeholders(name, then_tensors, where))
                continue
            leaves = []
            s2 = _flatten(value, leaves)
            if _unshaped_array(s2) and s[0] == "composite" and s[1] is s2[1] and not _unshaped_array(s):
                raise ArrayShapeFound(name, s[2][2], where)
            if not _same_structure(s, s2):
                if value is None or s == ("static", None):
                    branch = "else" if value is None else "main"
                    raise ValueError(f"{where.head}: '{name}' is None at the end of the {branch} branch.")
                raise ValueError(
                    f"{where.head}: '{name}' must have the same nested structure in the main and else branches: "
                    f"{_describe_structure(s)} in the if-branch, {_describe_structure(s2)} in the else-branch "
                    "(the condition is a tensor, so the if runs as ef.cond, whose branches return the same values)")
            for t, v in zip(then_tensors, leaves):
                e = _to_tensor(v, t)
                if e.dtype != t.dtype or e._shape_tuple != t._shape_tuple:
                    kind = "dtype" if e.dtype != t.dtype else "shape"
                    err = TypeError if kind == "dtype" else ValueError
                    raise err(f"{where.head}: '{name}' has {kind} {_spec(t)} in the if-branch and {_spec(e)} in the "
                              "else-branch; an if on a tensor runs as ef.cond, whose branches must agree")
                out.append(e)
        first["else_state"] = state
        return out

    result = _core.cond(pred, then_fn, else_fn)
    result = list(result) if isinstance(result, (list, tuple)) else [result]
    it = iter(result)
    final = []
    else_state = first.get("else_state")
    for i, (name, plan) in enumerate(zip(names, first["plans"])):
        if plan is None and _dropped(name, live):
            final.append(Undefined(name, f"'{name}' is not defined after the if ({where.head}: the condition is a tensor, "
                                         f"so the if runs as ef.cond, and nothing after it reads '{name}', so it is "
                                         "not one of its outputs)"))
            continue
        if plan is None:  # undefined after the if-branch
            other = else_state[i]
            final.append(other if _undefined(other) else Undefined(
                name, f"'{name}' must also be initialized in the if branch ({where.head}: the condition is a tensor, "
                      f"so both branches run as ef.cond; define '{name}' before the if or in both branches)"))
            continue
        s, _, n = plan
        values = [next(it) for _ in range(n)]
        if else_state is not None and _undefined(else_state[i]) and name == RETVAL and values:
            _partial()[id(values[0])] = values[0]
        if else_state is not None and _undefined(else_state[i]) and name != RETVAL:
            final.append(Undefined(name, f"'{name}' must also be initialized in the else branch "
                                         f"({where.head}: the condition is a tensor, so both branches run as ef.cond; "
                                         f"define '{name}' before the if or in both branches)"))
            continue
        final.append(_unflatten(s, iter(values)))
    set_state(tuple(final))


class ArrayShapeFound(ValueError):
    """A TensorArray with no element shape written in one branch of a tensor `if` only: an
    enclosing tensor loop traces again with the array given that shape (its buffer then exists
    in both branches); anywhere else TF's advice is the fix."""

    def __init__(self, name, element_shape, where):
        super().__init__(f"{where.head}: '{name}' is a TensorArray written in the if-branch only, and its element "
                         "shape is not known before the if (the condition is a tensor, so both branches run as "
                         "ef.cond and must return the same tensors): give it element_shape=")
        self.name, self.element_shape = name, tuple(element_shape)


def _unshaped_array(s):
    """A TensorArray with nothing written and no element shape (it carries no tensor yet)."""
    return s[0] == "composite" and isinstance(s[2], tuple) and s[2][:1] == ("unshaped",)


def _placeholders(name, like, where):
    out = []
    for t in like:
        if any(d is None for d in t._shape_tuple):
            raise ValueError(f"'{name}' must also be initialized in the else branch ({where.head}: its shape "
                             f"{_spec(t)} is not static, so no placeholder can stand for it)")
        out.append(_core.zeros(list(t._shape_tuple), dtype=t.dtype))
    return out


def if_exp(cond, if_true, if_false, where):
    pred = _as_condition(cond)
    if pred is None or not pred.is_symbolic:
        return if_true() if cond else if_false()
    _log.statement(where, "converted to ef.cond", _why(cond, where.test))
    box = {}

    def branch(fn, key):
        def run():
            leaves = []
            box[key] = _flatten(fn(), leaves)
            return [_to_tensor(v) for v in leaves]
        return run

    out = _core.cond(pred, branch(if_true, "t"), branch(if_false, "f"))
    if not _same_structure(box["t"], box["f"]):
        raise ValueError(f"{where.head}: both values of the conditional expression must have the same structure")
    out = list(out) if isinstance(out, (list, tuple)) else [out]
    return _unflatten(box["t"], iter(out))


# --- and / or / not -------------------------------------------------------------------------------

def and_(a, b):
    x = a()
    t = _as_condition(x)
    if t is None:
        return x and b()
    return _core.logical_and(t, _to_tensor(b()))


def or_(a, b):
    x = a()
    t = _as_condition(x)
    if t is None:
        return x or b()
    return _core.logical_or(t, _to_tensor(b()))


def not_(x):
    t = _as_condition(x)
    if t is None:
        return not x
    return _core.logical_not(t)
