"""What TF's tf.function shows of its traces: Function.pretty_printed_concrete_signatures, and on
each ConcreteFunction structured_input_signature, structured_outputs, function_type,
pretty_printed_signature, a call with TF's arguments and results (keywords, the traced
structure), and graph.as_graph_def().

The C++ cache keeps each trace's graph; the Python values of a trace (the arguments as the body
saw them, its result structure) are recorded here when it traces (Function._trace), by trace
number, and found again for a ConcreteFunction through its signature.
"""
import inspect as _inspect
import sys as _sys
import weakref as _weakref

from . import _core

_Tensor = _core.Tensor
_traced_functions = _weakref.WeakSet()  # Functions with recorded traces (to find a ConcreteFunction's)


class _TraceInfo:
    __slots__ = ("args", "kwargs", "out")

    def __init__(self, args, kwargs, out):
        self.args, self.kwargs, self.out = args, kwargs, out


def record(function, args, kwargs, out):
    """Called by Function._trace with the body's arguments (symbolic tensors in place) and result."""
    infos = function.__dict__.setdefault("_trace_infos", {})
    infos[function._core.tracing_count() + 1] = _TraceInfo(args, kwargs, out)
    _traced_functions.add(function)


# ConcreteFunctions a program asked for (get_concrete_function) keep their Python side when their
# Function is gone (tf.function(f).get_concrete_function(...) drops the Function at once). They
# cannot hold it themselves (the C++ class takes no attributes or weak references), so it is held
# here with the ConcreteFunction, and let go once nothing else holds that ConcreteFunction.
_pinned = {}  # id(cf) -> (cf, arg names, inspect.Signature, _TraceInfo)
_HELD_BY_PINNED_ONLY = 3  # getrefcount: the entry's tuple, the loop's name, getrefcount's argument


def _sweep():
    for key, entry in list(_pinned.items()):
        cf = entry[0]
        if _sys.getrefcount(cf) <= _HELD_BY_PINNED_ONLY:
            del _pinned[key]
        del cf, entry


def pin(function, cf):
    _sweep()
    _, info = _info_of(cf)
    if info is not None:
        try:
            signature = _inspect.signature(function._fn)
        except (TypeError, ValueError):
            signature = None
        _pinned[id(cf)] = (cf, list(function._arg_names), signature, info)
    return cf


def _info_of(cf):
    """(Function, _TraceInfo) of a ConcreteFunction made by a Python ef.function; (None, None) else."""
    pinned = _pinned.get(id(cf))
    if pinned is not None and pinned[0] is cf:
        return _PinnedFunction(pinned[1], pinned[2]), pinned[3]
    for function in list(_traced_functions):
        cfs = function._core.concrete_functions()
        if not any(c is cf for c in cfs):
            continue
        infos = function.__dict__.get("_trace_infos", {})
        for rec in reversed(function._core.traces()):
            if rec.signature == cf.signature and rec.number in infos:
                return function, infos[rec.number]
    return None, None


class _PinnedFunction:
    """What the signatures need of a Function that is gone: its parameter names and signature."""

    def __init__(self, arg_names, signature):
        self._arg_names, self._signature = arg_names, signature


# ---------------------------------------------------------------- TF's printed forms
def _shape_text(shape):
    if shape is None:
        return "<unknown>"
    dims = tuple(None if d is None or d == -1 else int(d) for d in shape)
    return repr(dims)


def spec_text(shape, dtype, name=None):
    return f"TensorSpec(shape={_shape_text(shape)}, dtype=tf.{dtype.name}, name={name!r})"


def _type_text(value):
    """TF's FunctionType text of a value: TensorSpec for tensors, List/Tuple/Dict of them, and
    Literal[...] for Python values."""
    if isinstance(value, (_Tensor, _core.Variable)):
        return spec_text(value.shape, value.dtype)
    if isinstance(value, _core.TensorSpec):
        return spec_text(value.shape, value.dtype)
    if isinstance(value, list):
        return "List[" + ", ".join(_type_text(v) for v in value) + "]"
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value).__name__ + "[" + ", ".join(f"['{k}', {_type_text(v)}]" for k, v in zip(value._fields, value)) + "]"
    if isinstance(value, tuple):
        return "Tuple[" + ", ".join(_type_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "Dict[" + ", ".join(f"[{k!r}, {_type_text(v)}]" for k, v in value.items()) + "]"
    return f"Literal[{value!r}]"


def _parameters(function, info):
    """(name, kind, value) of each parameter as the trace saw it."""
    out = []
    try:
        signature = function._signature if isinstance(function, _PinnedFunction) else _inspect.signature(function._fn)
        params = list(signature.parameters.values()) if signature is not None else []
    except (TypeError, ValueError):
        params = []
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for i, a in enumerate(info.args):
        if i < len(positional):
            out.append((positional[i].name, positional[i].kind.name, a))
        else:
            out.append((f"args_{i}", "VAR_POSITIONAL", a))
    kinds = {p.name: p.kind.name for p in params}
    for k, v in info.kwargs.items():
        out.append((k, kinds.get(k, "VAR_KEYWORD"), v))
    return out


def _captures(cf):
    """The variables the graph reads (eagerflow's graphs name them rather than take them as inputs)."""
    from . import _summary_graph
    try:
        constvars, inputs, nodes, _ = _summary_graph.parse(cf.traced_graph)
    except ValueError:
        return []
    known = {d[0] for d in constvars + inputs if d}
    for _, _, outs, _ in nodes:
        known.update(d[0] for d in outs if d)
    names = []
    for _, _, _, ins in nodes:
        for t in ins:
            if t not in known and _summary_graph._decl(t) is None and t not in names:
                names.append(t)
    return names


class FunctionType:
    """TF's FunctionType of a trace: its parameters (name, kind, type) and output type."""

    def __init__(self, parameters, output, captures=()):
        self.parameters = parameters  # [(name, kind, value)]
        self.output = output
        self.captures = list(captures)

    def _input_lines(self):
        return [f"  {n} ({k}): {_type_text(v)}" for n, k, v in self.parameters]

    def __str__(self):
        lines = ["Input Parameters:"] + self._input_lines() + ["Output Type:", f"  {_type_text(self.output)}"]
        lines += ["Captures:"] + (["  " + c for c in self.captures] if self.captures else ["  None"])
        return "\n".join(lines)

    def short(self):
        parts, star = [], False
        for n, k, v in self.parameters:
            if k == "KEYWORD_ONLY" and not star:
                parts.append("*")
                star = True
            parts.append(f"{n}: {_type_text(v)}")
        return "(" + ", ".join(parts) + ") -> " + _type_text(self.output)

    __repr__ = __str__


def _function_type(cf):
    function, info = _info_of(cf)
    if info is None:
        raise AttributeError("this ConcreteFunction was not traced from a Python function (no Python signature)")
    return FunctionType(_parameters(function, info), info.out, _captures(cf))


def _pretty(cf, verbose=True):
    ft = _function_type(cf)
    return str(ft) if verbose else ft.short()


def _structured_input_signature(cf):
    function, info = _info_of(cf)
    if info is None:
        raise AttributeError("this ConcreteFunction was not traced from a Python function")
    names = {id(v): n for n, _, v in _parameters(function, info)}

    def spec(v, name=None):
        if isinstance(v, (_Tensor, _core.Variable)):
            return _core.TensorSpec(v.shape, v.dtype, name or "")
        if isinstance(v, list):
            return [spec(e) for e in v]
        if isinstance(v, tuple):
            return tuple(spec(e) for e in v)
        if isinstance(v, dict):
            return {k: spec(e) for k, e in v.items()}
        return v
    return (tuple(spec(a, names.get(id(a))) for a in info.args), {k: spec(v, k) for k, v in info.kwargs.items()})


def _flat_tensors(value, out):
    if isinstance(value, (_Tensor, _core.Variable)):
        out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _flat_tensors(v, out)
    elif isinstance(value, dict):
        for k in sorted(value) if all(isinstance(k, str) for k in value) else value:
            _flat_tensors(value[k], out)
    return out


def _restructure(template, it):
    if isinstance(template, (_Tensor, _core.Variable)):
        return next(it)
    if isinstance(template, (list, tuple)):
        items = [_restructure(t, it) for t in template]
        return type(template)(*items) if hasattr(template, "_fields") else type(template)(items)
    if isinstance(template, dict):
        return {k: _restructure(v, it) for k, v in template.items()}
    return template


_flat_call = _core.ConcreteFunction.__call__
_graph_text = _core.ConcreteFunction.__str__


def _call(cf, *args, **kwargs):
    """TF's ConcreteFunction call: the traced function's parameters (positional or by name; a
    Python argument must equal the traced value), its result in the traced structure."""
    function, info = _info_of(cf)
    if info is None:
        if kwargs:
            raise TypeError("this ConcreteFunction takes its tensors positionally")
        return _flat_call(cf, *args)
    params = _parameters(function, info)
    try:
        flat = _bind(cf, params, args, kwargs)
    except TypeError:
        # TF's other calling convention: the trace's tensors alone, flat, in order.
        n = sum(len(_flat_tensors(v, [])) for _, _, v in params)
        if kwargs or len(args) != n or not all(isinstance(a, (_Tensor, _core.Variable)) for a in args):
            raise
        flat = list(args)
    outs = _flat_call(cf, *flat)
    if isinstance(info.out, (_Tensor, _core.Variable)):
        return outs[0]
    # Function._trace flattened dicts in insertion order, as _restructure rebuilds them.
    return _restructure(info.out, iter(outs))


def _bind(cf, params, args, kwargs):
    """The flat tensors of a call bound to the trace's parameters."""
    if len(args) > len(params):
        raise TypeError(f"{cf.name}: takes {len(params)} arguments, got {len(args)}")
    given = {}
    for (n, _, _), a in zip(params, args):
        given[n] = a
    for k, v in kwargs.items():
        if k not in {n for n, _, _ in params}:
            raise TypeError(f"{cf.name}: got an unexpected keyword argument '{k}'")
        if k in given:
            raise TypeError(f"{cf.name}: got multiple values for argument '{k}'")
        given[k] = v
    flat = []
    for n, _, traced in params:
        tensors = _flat_tensors(traced, [])
        if n not in given:
            if tensors:
                raise TypeError(f"{cf.name}: missing required argument '{n}'")
            continue
        value = given[n]
        if tensors:
            supplied = _flat_tensors(value, []) if isinstance(value, (list, tuple, dict)) else [value]
            if len(supplied) != len(tensors):
                raise TypeError(f"{cf.name}: argument '{n}' has {len(supplied)} tensors; the trace took {len(tensors)}")
            flat.extend(supplied)
        elif value is not traced and not _same_static(value, traced):
            raise TypeError(f"{cf.name}: argument '{n}' was traced as {traced!r} and cannot be {value!r}: "
                            "a Python value is part of the trace (call the ef.function to trace for it)")
    return flat


def _same_static(a, b):
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001 - values that do not compare are not the traced value
        return False


class FuncGraph(str):
    """ConcreteFunction.graph: the graph eagerflow runs, as its text (what the property always
    was), with TF's FuncGraph name and as_graph_def() (the graph as traced, before eagerflow's
    passes, as TF's FuncGraph is the graph before Grappler). TF's Operation objects
    (get_operations) are not offered: eagerflow's graphs are not built or edited op by op."""

    def __new__(cls, cf):
        g = super().__new__(cls, _graph_text(cf))
        g._cf = cf
        return g

    @property
    def name(self):
        return self._cf.name

    def as_graph_def(self, from_version=None, add_shapes=False, use_pybind11_proto=False):
        from . import _graph_def
        function, _ = _info_of(self._cf)
        names = function._arg_names if function is not None else ()
        return _graph_def.from_graph_text(self._cf.traced_graph, names, add_shapes)


class AtomicFunction:
    """ConcreteFunction.inference_fn: the trace's graph as one callable (TF's AtomicFunction):
    called with the flat tensors of the trace's parameters (no Python arguments), it returns the
    traced structure; call_flat returns the flat list of results."""

    def __init__(self, cf):
        self._cf = cf

    name = property(lambda self: self._cf.name)
    graph = property(lambda self: self._cf.graph)
    function_type = property(lambda self: self._cf.function_type)

    def call_flat(self, *args):
        return _flat_call(self._cf, *args)

    def __call__(self, *args):
        outs = _flat_call(self._cf, *args)
        _, info = _info_of(self._cf)
        if info is None:
            return outs
        if isinstance(info.out, (_Tensor, _core.Variable)):
            return outs[0]
        return _restructure(info.out, iter(outs))


_core.ConcreteFunction.inference_fn = property(AtomicFunction)
_core.ConcreteFunction.graph = property(FuncGraph, doc=FuncGraph.__doc__)
_core.ConcreteFunction.function_type = property(_function_type)
_core.ConcreteFunction.structured_input_signature = property(_structured_input_signature)
_core.ConcreteFunction.structured_outputs = property(lambda cf: _info_of(cf)[1].out if _info_of(cf)[1] else None)
_core.ConcreteFunction.pretty_printed_signature = _pretty
_core.ConcreteFunction.__call__ = _call
_core.ConcreteFunction.__str__ = lambda cf: ("ConcreteFunction " + _pretty(cf)) if _info_of(cf)[1] else cf.graph


class FunctionIntrospection:
    """Function's methods that list its traces as TF's do."""

    def pretty_printed_concrete_signatures(self, verbose=True):
        """Each trace's signature in TF's printed form, oldest first, separated by blank lines."""
        return "\n\n".join(_pretty(cf, verbose) for cf in self._core.concrete_functions())


def check_input_signature(name, signature, tensors, args, kwargs, arg_names=()):
    """TF's TypeError for tensors that do not fit a function's input_signature (a flat list of
    TensorSpecs; other signatures are checked by the C++ cache)."""
    if not all(isinstance(s, _core.TensorSpec) for s in signature) or len(signature) != len(tensors):
        return
    for spec, t in zip(signature, tensors):
        shape = tuple(t.shape)
        fits = t.dtype == spec.dtype and len(shape) == len(spec.shape) and all(
            d is None or d == s for d, s in zip(spec.shape, shape))
        if not fits:
            names = list(arg_names) + [s.name or f"arg_{i}" for i, s in enumerate(signature)][len(arg_names):]
            params = ", ".join(f"{n}: {spec_text(s.shape, s.dtype)}" for n, s in zip(names, signature))
            raise TypeError(f"Binding inputs to tf.function failed due to `Can not cast {spec_text(shape, t.dtype)} to "
                            f"{spec_text(spec.shape, spec.dtype)}`. Received args: {tuple(args)} and kwargs: {kwargs} "
                            f"for signature: ({params}). ({name}: the arguments do not match the input signature)")
