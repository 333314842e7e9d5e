"""ef.function over Python callables.

Python code in the body runs when tracing only; the C++ cache (FunctionCore) keys each call on
the tensors' dtypes and shapes plus the static Python values (numbers, strings, None, and
containers of them), replays the cached graph otherwise, and records a reason for every trace.
"""
import functools
import inspect
import itertools
import os
import sys
import threading
import time
import warnings
import weakref

import numpy as _np

from . import _core, _data_graph
from . import _function_signatures
from . import _saved_inputs
from . import _nested_arguments

_Tensor = _core.Tensor


class RetracingWarning(UserWarning):
    """An ef.function traced again and again (5 of its last 10 calls), or evicted a trace.
    TF logs this as "triggered tf.function retracing"; here it is a Python warning, so
    `warnings` filters it: warnings.simplefilter("error", ef.RetracingWarning) makes it an
    exception (raised by the call that traced; that trace stays cached)."""


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_CPP_HINT = "  To trace less: pass FunctionOptions::input_signature"
_PY_HINT = ("  To trace less: pass input_signature=[ef.TensorSpec(shape=[None, ...])] (None: a dim that may "
            "change), reduce_retracing=True, or pass changing numbers as tensors rather than Python numbers.")


def _log_warning(line):
    """The C++ library's warning lines (python/src/log.cpp) as Python warnings, attributed to
    the first frame outside the package (the user's call). Device placement lines
    (tf.debugging.set_log_device_placement) go to stderr as they are, as TF logs them."""
    if line.startswith("Executing op "):
        sys.stderr.write(line)
        return
    lines = line.split("\n")
    lines = [_PY_HINT if l.startswith(_CPP_HINT) else l for l in lines]
    text = "\n".join(lines).replace("[ef.function] WARNING: ", "ef.function: ")
    text = text.replace("[ef.function] ", "ef.function: ")
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn(text, RetracingWarning, stacklevel=level)


def _is_tensorlike(x):
    return isinstance(x, (_Tensor, _np.ndarray, _core.Variable))


def _as_tensor(x):
    return x if isinstance(x, _Tensor) else _core.convert_to_tensor(x)


_PRIMITIVES = (type(None), bool, int, float, str)

# Keys of static Python objects that are neither numbers, strings nor containers: a token per
# object, never reused. id() alone is not a key: Python reuses an id once its object is freed,
# so a fresh config object would match a freed one's trace and run with its captured values.
_tokens = itertools.count(1)
_by_value = {}  # (type, object) -> token: objects whose class defines __eq__ and __hash__ (TF's rule)
_by_identity = {}  # id(object) -> (weak reference, token): the others, while they live
_strong = {}  # id(object) -> (object, token): identity-keyed objects that take no weak reference


def _forget(ref, key):
    entry = _by_identity.get(key)
    if entry is not None and entry[0] is ref:
        del _by_identity[key]


def _value_hashable(t):
    return t.__hash__ is not None and t.__hash__ is not object.__hash__ and t.__eq__ is not object.__eq__


def _object_token(x):
    t = type(x)
    if _value_hashable(t):
        try:
            k = (t, x)
            token = _by_value.get(k)
            if token is None:
                token = _by_value[k] = next(_tokens)
            return token
        except TypeError:  # a __hash__ that raises: keyed by identity instead
            pass
    key = id(x)
    entry = _by_identity.get(key)
    if entry is not None and entry[0]() is x:
        return entry[1]
    held = _strong.get(key)
    if held is not None and held[0] is x:
        return held[1]
    token = next(_tokens)
    try:
        _by_identity[key] = (weakref.ref(x, lambda r, k=key: _forget(r, k)), token)
    except TypeError:  # no weak references (object(), __slots__ classes): held, so its id stays its own
        _strong[key] = (x, token)
    return token


def _static_key(x):
    """A key for a static Python value (a structure without tensors)."""
    if type(x) in _PRIMITIVES:
        return x
    if isinstance(x, (list, tuple)):
        return type(x).__name__ + "(" + ", ".join(repr(_static_key(e)) for e in x) + ")"
    if isinstance(x, dict):
        return "dict(" + ", ".join(f"{k!r}: {_static_key(v)!r}" for k, v in sorted(x.items(), key=lambda kv: repr(kv[0]))) + ")"
    if hasattr(type(x), "__tf_tracing_type__"):  # tf.types.experimental.TraceType: keyed by its equality
        trace_type = x.__tf_tracing_type__(None)
        return f"<{type(trace_type).__qualname__} #{_object_token(trace_type)}>"
    return f"<{type(x).__qualname__} #{_object_token(x)}>"


def _describe(value, tensors, datasets=None):
    """One signature entry for one argument; appends its tensors. A dataset (when `datasets`
    collects them) is keyed by its element_spec and passed as a handle tensor (_data_graph)."""
    if datasets is not None and _data_graph.is_argument(value):
        key, handle, h = _data_graph.argument_handle(value)
        tensors.append(handle)
        datasets[id(value)] = h
        return ("M", (key,))
    if _is_tensorlike(value):
        tensors.append(_as_tensor(value))
        return ("T",)
    if isinstance(value, (list, tuple)) and value and all(_is_tensorlike(v) for v in value):
        tensors.extend(_as_tensor(v) for v in value)
        return ("L", len(value))
    if isinstance(value, dict) and value and all(isinstance(k, str) and _is_tensorlike(v) for k, v in value.items()):
        keys = sorted(value)
        tensors.extend(_as_tensor(value[k]) for k in keys)
        return ("M", tuple(keys))
    if _contains_tensor(value):
        raise TypeError(
            "ef.function: an argument mixes tensors with Python values "
            f"({type(value).__name__}); pass the tensors as separate arguments, or as a list/dict of tensors")
    return ("S", _static_key(value))


def _contains_tensor(x):
    if _is_tensorlike(x):
        return True
    if isinstance(x, (list, tuple)):
        return any(_contains_tensor(e) for e in x)
    if isinstance(x, dict):
        return any(_contains_tensor(e) for e in x.values())
    return False


def _rebuild(value, it, datasets=None):
    if datasets and id(value) in datasets and _data_graph.is_argument(value):
        return _data_graph.bind_argument(value, next(it))
    if _is_tensorlike(value):
        return next(it)
    if isinstance(value, (list, tuple)) and value and all(_is_tensorlike(v) for v in value):
        return type(value)(next(it) for _ in value)
    if isinstance(value, dict) and value and all(isinstance(k, str) and _is_tensorlike(v) for k, v in value.items()):
        keys = sorted(value)
        syms = {k: next(it) for k in keys}
        return {k: syms[k] for k in value}
    if hasattr(type(value), "__tf_tracing_type__"):
        return value.__tf_tracing_type__(None).placeholder_value(None)
    return value


def _flatten_out(out, flat):
    """Results: tensors become graph outputs; Python values are returned as they were at trace time."""
    if isinstance(out, (_Tensor, _core.Variable, _np.ndarray)):
        flat.append(_as_tensor(out))
        return ("T",)
    if isinstance(out, (list, tuple)):
        return (type(out), [_flatten_out(o, flat) for o in out])
    if isinstance(out, dict):
        return (dict, [(k, _flatten_out(v, flat)) for k, v in out.items()])
    return ("S", out)


def _unflatten_out(tree, it):
    kind = tree[0]
    if kind == "T":
        return next(it)
    if kind == "S":
        return tree[1]
    if kind is dict:
        return {k: _unflatten_out(v, it) for k, v in tree[1]}
    items = [_unflatten_out(t, it) for t in tree[1]]
    return kind(*items) if hasattr(kind, "_fields") else kind(items)


class Function(_function_signatures.FunctionIntrospection):
    """A traced Python callable (TF's tf.function). See ef.function."""

    def __init__(self, fn, input_signature=None, reduce_retracing=False, name=None, autograph=True):
        self._fn = fn
        self._autograph = autograph
        self._converted = None  # AutoGraph's conversion of fn, made at the first trace (no trace of its own)
        self._datasets = threading.local()  # this thread's call: id(dataset argument) -> its handle
        # Refused at the call, as TF refuses at the trace: decorating alone is not an error.
        self._generator = ("generator" if inspect.isgeneratorfunction(fn) else
                           "async generator" if inspect.isasyncgenfunction(fn) else
                           "coroutine (async)" if inspect.iscoroutinefunction(fn) else None)
        self._input_signature = list(input_signature) if input_signature is not None else None
        if name is None:
            name = getattr(fn, "__name__", None) or getattr(fn, "name", None) or type(fn).__name__
        self._arg_names = self._parameter_names(fn)
        self._bind = None
        self._nparams = -1
        try:
            sig = inspect.signature(fn)
            params = list(sig.parameters.values())
            if not any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params) and not isinstance(fn, _core.Layer):
                self._bind = sig
                self._nparams = len(params)
        except (TypeError, ValueError):
            pass
        # A nested input_signature (a tuple or dict of specs for one argument, as TF takes): the
        # C++ cache sees each argument's tensors as arguments of their own (_nested_arguments.py).
        self._nested = _nested_arguments.NestedSignature.of(self._input_signature, self._arg_names)
        core_names, core_signature = self._arg_names, self._input_signature
        if self._nested is not None:
            core_names, core_signature = self._nested.flat_names, self._nested.flat_specs
        self._core = _core.FunctionCore(name, core_names, core_signature, reduce_retracing)
        functools.update_wrapper(self, fn, updated=()) if hasattr(fn, "__name__") else None

    @staticmethod
    def _parameter_names(fn):
        if isinstance(fn, _core.Layer):
            return ["inputs"]
        try:
            return [p.name for p in inspect.signature(fn).parameters.values()
                    if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        except (TypeError, ValueError):
            return []

    def _trace(self, args, kwargs, symbolic):
        it = iter(symbolic)
        datasets = getattr(self._datasets, "ids", None)
        with _data_graph.trace_scope():
            args = tuple(_rebuild(a, it, datasets) for a in args)
            kwargs = {k: _rebuild(v, it, datasets) for k, v in kwargs.items()}
            if self._nested is not None:
                args = self._nested.pack(args)
            fn = self._python_function()
            with _autograph_status(self._autograph):
                try:
                    out = fn(*args, **kwargs)
                except _core.Error as e:  # TF's classes: a leaked tensor, a later variable (_symbolic_errors.py)
                    from ._symbolic_errors import as_tf_class
                    tf_error = as_tf_class(e)
                    if tf_error is e:
                        raise
                    raise tf_error.with_traceback(e.__traceback__) from None
        if inspect.isgenerator(out) or inspect.iscoroutine(out) or inspect.isasyncgen(out):
            out.close()
            raise TypeError(self._generator_message(f"which returned a {type(out).__name__}"))
        # What tf.saved_model.save needs to call this trace again (its arguments' structure),
        # and what pretty_printed_concrete_signatures shows.
        _saved_inputs.record(self, args, kwargs)
        _function_signatures.record(self, args, kwargs, out)
        flat = []
        if isinstance(out, (_Tensor, _core.Variable)):
            return [_as_tensor(out)], None
        tree = _flatten_out(out, flat)
        return flat, tree

    def _python_function(self):
        """What a trace runs: fn converted by AutoGraph (autograph=True), else fn as written."""
        if not self._autograph:
            return self._fn
        if self._converted is None:
            self._converted = _autograph_api().converted_call(self._fn)
        return self._converted

    def _generator_message(self, what):
        return (f"ef.function cannot trace {self._core.name!r}, {what}: a generator's (or coroutine's) body runs "
                "only when it is iterated (awaited), after the trace has ended, so nothing in it could be traced. "
                "Return tensors (a list of them for a sequence), loop with a Python for-loop or ef.while_loop "
                "inside the function, or feed data with ef.data.Dataset.from_generator")

    def __call__(self, *args, **kwargs):
        try:
            if _call_observers:
                return _observe_call(self, args, kwargs)
            return self._call(*args, **kwargs)
        except _core.Error as e:
            if _data_graph.END_CHECK in str(e):  # next() past a dataset's end: TF's class (a host call's is another)
                raise _data_graph.end_of_sequence() from None
            raise

    def _call(self, *args, **kwargs):
        if self._generator is not None:
            raise TypeError(self._generator_message(f"a {self._generator} function"))
        # Inside another function's trace the call is one node holding this function's own
        # trace (the passes inline it); a call from its own body (recursion) is inlined.
        if _core.functions_run_eagerly():
            return self._fn(*args, **kwargs)
        if _core._in_trace() and self._core.tracing_here():
            return self._python_function()(*args, **kwargs)
        if (not kwargs and self._input_signature is None and (self._bind is None or len(args) == self._nparams)
                and all(type(a) is _Tensor for a in args)):
            out = self._core.call_tensors(self, args)
        else:
            args, kwargs = self._canonical(args, kwargs)
            if self._nested is not None:
                args, kwargs = self._nested.flatten(self._core.name, args, kwargs), {}
            if self._input_signature is not None:
                # Against a TensorSpec a variable is its value, as TF's (the read is on the tape).
                args = tuple(a.value() if isinstance(a, _core.Variable) else a for a in args)
                kwargs = {k: (v.value() if isinstance(v, _core.Variable) else v) for k, v in kwargs.items()}
            tensors = []
            datasets = None if _core._in_trace() or self._input_signature is not None else {}
            desc = [_describe(a, tensors, datasets) for a in args]
            desc += [_describe(kwargs[k], tensors, datasets) for k in kwargs]
            if self._input_signature is not None:
                _function_signatures.check_input_signature(self._core.name, self._flat_specs(), tensors, args, kwargs,
                                                            self._arg_names)
            if not datasets:
                out = self._core.call(self, desc, tensors, args, kwargs)
            else:
                self._datasets.ids = datasets  # read by _trace, if this call traces
                try:
                    out = self._core.call(self, desc, tensors, args, kwargs)
                finally:
                    self._datasets.ids = None
                    _data_graph.release_arguments(datasets.values())
        if type(out) is _Tensor:
            return out
        tree, flat = out
        return _unflatten_out(tree, iter(flat))

    def _flat_specs(self):
        return self._input_signature if self._nested is None else self._nested.flat_specs

    def _canonical(self, args, kwargs):
        """Keyword arguments in parameter order, defaults filled in (f(x, y=1), f(x, 1) share a trace)."""
        if self._bind is not None:
            try:
                bound = self._bind.bind(*args, **kwargs)
            except TypeError as e:  # "missing a required argument: 'y'": say whose, as Python does
                raise TypeError(f"ef.function {self._core.name}{self._bind}: {e}") from None
            bound.apply_defaults()
            return tuple(bound.args), dict(bound.kwargs)
        return args, dict(sorted(kwargs.items()))

    def get_concrete_function(self, *args, **kwargs):
        """The trace for these arguments (ef.TensorSpec allowed for tensors), traced if needed."""
        if self._generator is not None:
            raise TypeError(self._generator_message(f"a {self._generator} function"))
        if not args and not kwargs and self._input_signature is not None:
            args = tuple(self._input_signature)
        args, kwargs = self._canonical(args, kwargs)
        if self._nested is not None:
            args, kwargs = self._nested.flatten(self._core.name, args, kwargs), {}
        specs, desc = [], []
        for a in list(args) + [kwargs[k] for k in kwargs]:
            if isinstance(a, _core.TensorSpec):
                specs.append(a)
                desc.append(("T",))
            else:
                tensors = []
                desc.append(_describe(a, tensors))
                specs.extend(_core.TensorSpec(t.shape, t.dtype) for t in tensors)
        placeholders = tuple(_Placeholder() if isinstance(a, _core.TensorSpec) else a for a in args)
        kw = {k: (_Placeholder() if isinstance(v, _core.TensorSpec) else v) for k, v in kwargs.items()}
        return _function_signatures.pin(self, self._core.get_concrete_function(self, desc, specs, placeholders, kw))

    def experimental_get_tracing_count(self):
        return self._core.tracing_count()

    @property
    def tracing_count(self):
        return self._core.tracing_count()

    @property
    def traces(self):
        """The traces, oldest first: number, signature, reason, milliseconds, created_variables."""
        return self._core.traces()

    @property
    def concrete_functions(self):
        return self._core.concrete_functions()

    @property
    def python_function(self):
        return self._fn

    def __get__(self, obj, objtype=None):
        # @ef.function on a method: one Function per instance.
        if obj is None:
            return self
        bound = obj.__dict__.get("_ef_functions", {}).get(id(self))
        if bound is None:
            bound = Function(self._fn.__get__(obj, objtype), self._input_signature, name=self._core.name,
                             autograph=self._autograph)
            obj.__dict__.setdefault("_ef_functions", {})[id(self)] = bound
        return bound

    def __repr__(self):
        return f"<ef.function {self._core.name}>"


def _autograph_api():
    from .autograph import _api  # imported late: autograph imports this package's modules
    return _api


def _autograph_status(on):
    return _autograph_api().status(on)


# Told of every ef.function call while any is registered (tf.summary.trace_on records the graphs
# traced, the profiler the calls): observer(function, traces_before, start_ns, end_ns) after the
# call. Empty, calls pay one list test.
_call_observers = []


def _observe_call(function, args, kwargs):
    traces_before = function._core.tracing_count()
    start = time.perf_counter_ns()
    try:
        return function._call(*args, **kwargs)
    finally:
        end = time.perf_counter_ns()
        for observer in list(_call_observers):
            observer(function, traces_before, start, end)


class _Placeholder:
    """Stands for a TensorSpec argument in get_concrete_function: replaced by a symbolic tensor."""


_core_is_tensorlike = _is_tensorlike


def _is_tensorlike(x):  # noqa: F811 - placeholders count as tensors
    # A tf.Variable argument is the variable itself in the body, as TF's (assign, read_value,
    # apply_gradients on it work): it is keyed by identity and the trace captures it, so each
    # variable has its own trace. (TF traces once per variable spec, taking the variable's handle
    # as a graph input; eagerflow's graphs have no resource inputs yet.)
    return isinstance(x, (_Tensor, _np.ndarray, _Placeholder))


def function(func=None, input_signature=None, autograph=True, reduce_retracing=False, name=None, **_ignored):
    """Traces a Python callable once per input signature (TF's tf.function); usable as a decorator.
    autograph=True (TF's default) converts Python control flow on tensors into ef.cond /
    ef.while_loop (ef.autograph); autograph=False runs the Python as written."""
    if func is None:
        return lambda f: Function(f, input_signature, reduce_retracing, name, autograph)
    return Function(func, input_signature, reduce_retracing, name, autograph)
