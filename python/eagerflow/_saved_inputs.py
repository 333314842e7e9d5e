"""The structure of a tf.function's arguments and results, as tf.saved_model keeps them.

Every trace remembers its arguments with the tensors replaced by TensorSpecs (a "template"):
tf.saved_model.save calls each trace again from its template, and a loaded function matches a
call's arguments against the templates it saved (TF's "Could not find matching concrete
function" when none fits). Templates and result structures are written as JSON.

Template entries: ("T", spec) a tensor, ("L", is_tuple, [spec]) a list or tuple of tensors,
("M", [(key, spec)]) a dict of tensors, ("S", value) a static Python value (what ef.function
accepts as arguments).
"""
import collections as _collections

import numpy as _np

from . import _core

_TENSORLIKE = (_core.Tensor, _core.Variable, _np.ndarray)


def _spec(t, name=""):
    return _core.TensorSpec(tuple(t.shape), t.dtype, name)


def _entry(value, name):
    if isinstance(value, _TENSORLIKE):
        return ("T", _spec(value, name))
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, _TENSORLIKE) for v in value):
        return ("L", isinstance(value, tuple), [_spec(v, f"{name}_{i}") for i, v in enumerate(value)])
    if isinstance(value, dict) and value and all(isinstance(k, str) and isinstance(v, _TENSORLIKE)
                                                 for k, v in value.items()):
        return ("M", [(k, _spec(v, f"{name}_{k}")) for k, v in value.items()])
    try:
        _json_static(value, "")
    except ValueError:  # kept as its description only: a template must not keep objects alive
        return ("X", f"{value!r} ({type(value).__name__})")
    return ("S", value)


def _spec_key(s):
    return (s.dtype.name, tuple(s.shape))


def _entry_key(e):
    kind = e[0]
    if kind == "T":
        return ("T", _spec_key(e[1]))
    if kind == "L":
        return ("L", e[1], tuple(_spec_key(s) for s in e[2]))
    if kind == "M":
        return ("M", tuple((k, _spec_key(s)) for k, s in e[1]))
    return (kind, repr(e[1]))


def template_key(template):
    args, kwargs = template
    return (tuple(_entry_key(e) for e in args), tuple((k, _entry_key(e)) for k, e in sorted(kwargs.items())))


def _arg_names(function):
    return list(getattr(function, "_arg_names", None) or [])


def make_template(function, args, kwargs):
    names = _arg_names(function)
    return (tuple(_entry(a, names[i] if i < len(names) else f"arg_{i}") for i, a in enumerate(args)),
            {k: _entry(v, k) for k, v in kwargs.items()})


def record(function, args, kwargs):
    """Remembers a trace's argument structure on its Function (each structure once)."""
    try:
        template = make_template(function, args, kwargs)
        key = template_key(template)
    except Exception:  # an argument whose repr fails: such a trace is simply not saved
        return
    function.__dict__.setdefault("_ef_traced_inputs", {}).setdefault(key, template)


def traced_templates(function):
    return list(function.__dict__.get("_ef_traced_inputs", {}).values())


# ------------------------------------------------------------------ JSON
def _json_static(value, where):
    """A static Python value as JSON with its container types kept; TypeError if it has none."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):  # as text: the C++ JSON reader takes integers only
        return {"float": repr(value)}
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return {"tuple": [_json_static(v, where) for v in value]}
    if isinstance(value, list):
        return {"list": [_json_static(v, where) for v in value]}
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": [[k, _json_static(v, where)] for k, v in value.items()]}
    raise ValueError(f"{where}: the Python value {value!r} ({type(value).__name__}) cannot be saved (a SavedModel "
                     "holds None, bool, int, float, str and lists, tuples and dicts of them)")


def _from_json_static(j):
    if isinstance(j, dict):
        if "float" in j:
            return float(j["float"])
        if "tuple" in j:
            return tuple(_from_json_static(v) for v in j["tuple"])
        if "list" in j:
            return [_from_json_static(v) for v in j["list"]]
        return {k: _from_json_static(v) for k, v in j["dict"]}
    return j


def spec_json(s):
    return {"dtype": s.dtype.name, "shape": [-1 if d is None else d for d in s.shape], "name": s.name}


def spec_from_json(j):
    from .dtypes import as_dtype
    return _core.TensorSpec([None if d == -1 else d for d in j["shape"]], as_dtype(j["dtype"]), j.get("name", ""))


def template_json(template, where):
    def one(e):
        kind = e[0]
        if kind == "T":
            return {"tensor": spec_json(e[1])}
        if kind == "L":
            return {"tensors": [spec_json(s) for s in e[2]], "tuple": e[1]}
        if kind == "M":
            return {"tensor_dict": [[k, spec_json(s)] for k, s in e[1]]}
        if kind == "X":
            raise ValueError(f"{where}: it was traced with the Python value {e[1]}, which a SavedModel cannot hold "
                             "(None, bool, int, float, str and lists, tuples and dicts of them)")
        return {"static": _json_static(e[1], where)}
    args, kwargs = template
    return {"args": [one(e) for e in args], "kwargs": [[k, one(e)] for k, e in kwargs.items()]}


def template_from_json(j):
    def one(e):
        if "tensor" in e:
            return ("T", spec_from_json(e["tensor"]))
        if "tensors" in e:
            return ("L", e["tuple"], [spec_from_json(s) for s in e["tensors"]])
        if "tensor_dict" in e:
            return ("M", [(k, spec_from_json(s)) for k, s in e["tensor_dict"]])
        return ("S", _from_json_static(e["static"]))
    return (tuple(one(e) for e in j["args"]), {k: one(e) for k, e in j["kwargs"]})


def template_specs(template):
    """The template's TensorSpecs in the order of the flat inputs."""
    out = []
    args, kwargs = template
    for e in list(args) + [kwargs[k] for k in sorted(kwargs)]:
        if e[0] == "T":
            out.append(e[1])
        elif e[0] == "L":
            out.extend(e[2])
        elif e[0] == "M":
            out.extend(s for _, s in sorted(e[1]))
    return out


def fill(template, flat):
    """The template's arguments with the tensors of `flat` (in template_specs order): (args, kwargs)."""
    args, kwargs = template
    it = iter(flat)
    filled = {}
    for slot, e in [(("a", i), e) for i, e in enumerate(args)] + [(("k", k), kwargs[k]) for k in sorted(kwargs)]:
        if e[0] == "T":
            filled[slot] = next(it)
        elif e[0] == "L":
            items = [next(it) for _ in e[2]]
            filled[slot] = tuple(items) if e[1] else items
        elif e[0] == "M":
            by_key = {k: next(it) for k, _ in sorted(e[1])}
            filled[slot] = {k: by_key[k] for k, _ in e[1]}
        else:
            filled[slot] = e[1]
    return tuple(filled[("a", i)] for i in range(len(args))), {k: filled[("k", k)] for k in kwargs}


# ------------------------------------------------------------------ matching a call
def _as_tensor_for(value, spec):
    if isinstance(value, _core.Variable):
        value = value.read_value() if hasattr(value, "read_value") else _core.convert_to_tensor(value)
    if not isinstance(value, _core.Tensor):
        if isinstance(value, (str, bytes)) or value is None:
            return None
        try:
            value = _core.convert_to_tensor(value, dtype=spec.dtype)
        except Exception:
            return None
    if value.dtype != spec.dtype:
        return None
    shape = tuple(value.shape)
    if len(shape) != len(spec.shape):
        return None
    if any(w is not None and d is not None and w != d for w, d in zip(spec.shape, shape)):
        return None
    return value


def _static_equal(a, b):
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_static_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_static_equal(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except Exception:
        return False


def match(template, args, kwargs):
    """The flat input tensors when (args, kwargs) fit the template (tensors converted to its
    dtypes where they are Python values), else None."""
    targs, tkwargs = template
    if len(args) != len(targs) or set(kwargs) != set(tkwargs):
        return None
    got = {}

    def one(e, value, slot):
        kind = e[0]
        if kind == "S":
            return _static_equal(e[1], value)
        if kind == "T":
            t = _as_tensor_for(value, e[1])
            got[slot] = [t]
            return t is not None
        if kind == "L":
            if not isinstance(value, (list, tuple)) or len(value) != len(e[2]):
                return False
            ts = [_as_tensor_for(v, s) for v, s in zip(value, e[2])]
            got[slot] = ts
            return all(t is not None for t in ts)
        if not isinstance(value, dict) or set(value) != {k for k, _ in e[1]}:
            return False
        ts = [_as_tensor_for(value[k], s) for k, s in sorted(e[1])]
        got[slot] = ts
        return all(t is not None for t in ts)

    for i, (e, v) in enumerate(zip(targs, args)):
        if not one(e, v, ("a", i)):
            return None
    for k in tkwargs:
        if not one(tkwargs[k], kwargs[k], ("k", k)):
            return None
    flat = []
    for i in range(len(targs)):
        flat.extend(got.get(("a", i), []))
    for k in sorted(tkwargs):
        flat.extend(got.get(("k", k), []))
    return flat


def _tf_spec_repr(s):
    shape = tuple(s.shape)
    return f"TensorSpec(shape={shape!r}, dtype=tf.{s.dtype.name}, name={s.name or None!r})"


def describe_template(template):
    def one(e):
        if e[0] == "T":
            return _tf_spec_repr(e[1])
        if e[0] == "L":
            inner = ", ".join(_tf_spec_repr(s) for s in e[2])
            return f"({inner})" if e[1] else f"[{inner}]"
        if e[0] == "M":
            return "{" + ", ".join(f"{k!r}: {_tf_spec_repr(s)}" for k, s in e[1]) + "}"
        return repr(e[1])
    args, kwargs = template
    lines = [f"  Positional arguments ({len(args)} total):"]
    lines += [f"    * {one(e)}" for e in args]
    lines.append("  Keyword arguments: {" + ", ".join(f"{k!r}: {one(e)}" for k, e in kwargs.items()) + "}")
    return "\n".join(lines)


def describe_call(args, kwargs):
    def one(v):
        if isinstance(v, _core.Tensor):
            return f"<tf.Tensor shape={tuple(v.shape)!r} dtype={v.dtype.name}>"
        return repr(v)
    lines = [f"  Positional arguments ({len(args)} total):"]
    lines += [f"    * {one(v)}" for v in args]
    lines.append("  Keyword arguments: {" + ", ".join(f"{k!r}: {one(v)}" for k, v in kwargs.items()) + "}")
    return "\n".join(lines)


# ------------------------------------------------------------------ results
def output_tree(out, flat, where):
    """The structure of a function's results as JSON; appends the tensors to `flat`."""
    if isinstance(out, (_core.Tensor, _core.Variable)):
        flat.append(out)
        return {"tensor": len(flat) - 1}
    if isinstance(out, tuple) and hasattr(out, "_fields"):
        return {"namedtuple": type(out).__name__, "fields": list(out._fields),
                "values": [output_tree(v, flat, where) for v in out]}
    if isinstance(out, (list, tuple)):
        return {"tuple" if isinstance(out, tuple) else "list": [output_tree(v, flat, where) for v in out]}
    if isinstance(out, dict):
        if not all(k is None or isinstance(k, (str, int, float, bool)) for k in out):
            raise ValueError(f"{where}: a result dict has keys that cannot be saved ({list(out)!r})")
        return {"dict": [[k, output_tree(v, flat, where)] for k, v in out.items()]}
    return {"static": _json_static(out, where)}


def rebuild_output(tree, flat):
    if "tensor" in tree:
        return flat[tree["tensor"]]
    if "namedtuple" in tree:
        cls = _collections.namedtuple(tree["namedtuple"], tree["fields"])
        return cls(*[rebuild_output(v, flat) for v in tree["values"]])
    if "tuple" in tree:
        return tuple(rebuild_output(v, flat) for v in tree["tuple"])
    if "list" in tree:
        return [rebuild_output(v, flat) for v in tree["list"]]
    if "dict" in tree:
        return {k: rebuild_output(v, flat) for k, v in tree["dict"]}
    return _from_json_static(tree["static"])


def signature_outputs(tree):
    """TF's signature outputs: {name: flat index}; a dict keeps its keys, a namedtuple its
    fields, a sequence or a tensor is output_0, output_1, ... Values must be tensors."""
    if "dict" in tree:
        items = [(k, v) for k, v in tree["dict"]]
    elif "namedtuple" in tree:
        items = list(zip(tree["fields"], tree["values"]))
    elif "list" in tree or "tuple" in tree:
        items = [(f"output_{i}", v) for i, v in enumerate(tree.get("list", tree.get("tuple")))]
    else:
        items = [("output_0", tree)]
    out = {}
    for k, v in items:
        if not isinstance(k, str):
            return None, f"a dictionary with a non-string key {k!r}"
        if "tensor" not in v:
            return None, f"a non-Tensor value for key {k!r}"
        out[k] = v["tensor"]
    return out, None
