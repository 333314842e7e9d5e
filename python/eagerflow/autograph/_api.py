"""Converting functions: source -> AST -> converted code, cached per code object (the
transformation) and per function object (the function with its own globals, closure cells and
defaults); converted_call, which converted code calls every callee through (user code is
converted recursively, library code never: TF's rule); to_graph, to_code, do_not_convert."""
import ast
import functools
import inspect
import os
import sys
import textwrap
import threading
import types
import weakref

from . import _log, _transformer

_code_cache = weakref.WeakKeyDictionary()  # original code -> (converted code, source), or None (not convertible)
_function_cache = weakref.WeakKeyDictionary()  # original function -> its converted function
_converted_codes = weakref.WeakSet()  # code objects of converted functions (never converted again)
_as_written = weakref.WeakSet()  # library functions: run unconverted
_LIBRARY_ROOTS = {"eagerflow", "numpy", "tensorflow", "keras", "scipy", "ml_dtypes", "jax", "torch", "pandas",
                  "absl", "google", "pytest", "_pytest", "pluggy", "IPython", "ipykernel", "matplotlib"}
_SITE = ("site-packages" + os.sep, "dist-packages" + os.sep)
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


_status = threading.local()


class status:  # noqa: N801 - used as a context manager
    """Whether AutoGraph is on for the trace running in this thread (ef.function's autograph=):
    Keras layers convert their `call` when it is (TF's control status context)."""

    def __init__(self, on):
        self.on = on

    def __enter__(self):
        self.saved = getattr(_status, "on", False)
        _status.on = self.on
        _status.depth = getattr(_status, "depth", 0) + 1

    def __exit__(self, *exc):
        _status.on = self.saved
        _status.depth -= 1
        if _status.depth == 0:
            from . import _operators
            _operators._partial().clear()  # the trace's symbolic tensors are not kept alive


def enabled():
    return getattr(_status, "on", False)


def do_not_convert(func=None):
    """tf.autograph.experimental.do_not_convert: func runs as written inside converted code."""
    if func is None:
        return do_not_convert
    try:
        func.__ag_do_not_convert__ = True
        return func
    except (AttributeError, TypeError):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            return func(*args, **kwargs)
        wrapper.__ag_do_not_convert__ = True
        return wrapper


def _why_not(fn):
    """Why fn is run unconverted, or None to convert it."""
    if getattr(fn, "__ag_do_not_convert__", False):
        return "marked do_not_convert"
    code = getattr(fn, "__code__", None)
    if code is None:
        return "no Python source (a builtin or C function)"
    if code in _converted_codes:
        return "already converted"
    if fn.__name__ == "<lambda>":
        return "a lambda (its expression runs as written)"
    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR):
        return "a generator or coroutine"
    module = (getattr(fn, "__module__", None) or "").split(".")[0]
    if module in _LIBRARY_ROOTS or module in sys.stdlib_module_names or module == "builtins":
        return f"library code ({module})"
    filename = code.co_filename
    if filename.startswith(_PACKAGE_DIR) or any(s in filename for s in _SITE):
        return "library code"
    return None


def _source_tree(fn):
    try:
        source = textwrap.dedent(inspect.getsource(fn.__code__))  # the code: never __wrapped__
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return None, None
    if not tree.body or not isinstance(tree.body[0], ast.FunctionDef) or tree.body[0].name != fn.__code__.co_name:
        return None, None
    return tree.body[0], source


def _class_name(fn):
    parts = fn.__qualname__.split(".")
    if len(parts) >= 2 and parts[-2] != "<locals>":
        return parts[-2]
    return None


def _template(fn):
    """The converted code for fn's code object (compiled once), or None."""
    code = fn.__code__
    if code in _code_cache:
        return _code_cache[code]
    node, source = _source_tree(fn)
    if node is None:
        _code_cache[code] = None
        return None
    node = _transformer.convert_function(node, fn.__qualname__, line_offset=code.co_firstlineno - 1)
    node.name = "ag__fn"  # its own name inside the body stays a global (a recursive call), not the factory's local
    freevars = [v for v in code.co_freevars if v != "__class__"]
    cls = _class_name(fn)
    inner = node
    if cls is not None:  # a class scope keeps `super()` and __private name mangling working
        inner = ast.ClassDef(name=cls, bases=[], keywords=[], body=[node], decorator_list=[], type_params=[])
        ret = ast.parse(f"return {cls}.__dict__[{node.name!r}]").body[0]
        if cls not in freevars:  # the class's name in the method stays the user's global, not this wrapper
            inner = [ast.Global(names=[cls]), inner]
    else:
        ret = ast.Return(value=ast.Name(id=node.name, ctx=ast.Load()))
    factory = ast.FunctionDef(
        name="ag__factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=a) for a in ["ag__"] + freevars], vararg=None,
                           kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=(inner if isinstance(inner, list) else [inner]) + [ret], decorator_list=[], returns=None, type_params=[])
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    ast.increment_lineno(module, code.co_firstlineno - 1)
    for n in ast.walk(module):  # moved code keeps its start line; spans across moves are meaningless
        if hasattr(n, "end_lineno"):
            n.end_lineno, n.end_col_offset = n.lineno, n.col_offset
    namespace = {}
    exec(compile(module, code.co_filename, "exec"), namespace)  # noqa: S102 - the user's own code, converted
    made = namespace["ag__factory"](*([None] * (1 + len(freevars))))
    new_code = made.__code__.replace(co_name=code.co_name, co_qualname=code.co_qualname)
    _mark(new_code)
    _mark(made.__code__)
    node.name = code.co_name
    entry = (new_code, ast.unparse(node))
    _code_cache[code] = entry
    return entry


def _mark(code):
    _converted_codes.add(code)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _mark(c)


def convert(fn):
    """fn's converted function (cached), or fn itself where it is not converted."""
    weak = _hashable_weak(fn)
    cached = _function_cache.get(fn) if weak else None
    if cached is not None:
        return cached
    if weak and fn in _as_written:
        return fn
    reason = _why_not(fn)
    if reason is not None:
        if reason != "already converted":
            _log.log(2, f"Not converted: {getattr(fn, '__qualname__', fn)!s} ({reason})")
        if weak and reason.startswith("library"):
            _as_written.add(fn)  # decided once: library functions are called at every trace
        return fn
    try:
        entry = _template(fn)
    except Exception as e:  # noqa: BLE001 - a construct the converter does not handle: run fn as written (TF's rule)
        _code_cache[fn.__code__] = entry = None
        _log.log(0, f"WARNING: AutoGraph could not transform {fn.__code__.co_qualname} and will run it as-is "
                    f"({type(e).__name__}: {e})")
    if entry is None:
        _log.log(2, f"Not converted: {fn.__code__.co_qualname} (its source is not available)")
        result = fn
    else:
        code = entry[0]
        from . import _runtime
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        closure = tuple(types.CellType(_runtime) if name == "ag__" else cells.get(name, types.CellType())
                        for name in code.co_freevars)
        result = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, closure or None)
        result.__kwdefaults__ = fn.__kwdefaults__
        result.__qualname__, result.__module__, result.__doc__ = fn.__qualname__, fn.__module__, fn.__doc__
        result.__dict__.update(fn.__dict__)
        _log.log(1, f"Converted {fn.__code__.co_qualname} ({fn.__code__.co_filename}:{fn.__code__.co_firstlineno})")
    try:
        _function_cache[fn] = result
    except TypeError:
        pass
    return result


def _hashable_weak(fn):
    return isinstance(fn, types.FunctionType)


def converted_call(f):
    """The callable converted code calls in place of f."""
    if isinstance(f, types.FunctionType):
        return convert(f)
    if isinstance(f, types.MethodType):
        func = f.__func__
        if isinstance(func, types.FunctionType):
            c = convert(func)
            return f if c is func else types.MethodType(c, f.__self__)
        return f
    if isinstance(f, functools.partial):
        inner = converted_call(f.func)
        return f if inner is f.func else functools.partial(inner, *f.args, **f.keywords)
    if isinstance(f, (type, types.BuiltinFunctionType, types.BuiltinMethodType)) or not callable(f):
        return f
    call = getattr(type(f), "__call__", None)
    if isinstance(call, types.FunctionType) and _why_not(call) is None and not _is_library_object(f):
        c = convert(call)
        return f if c is call else types.MethodType(c, f)
    return f


def _is_library_object(obj):
    from .. import _function
    return isinstance(obj, _function.Function)


def to_graph(entity, recursive=True, experimental_optional_features=None):
    """tf.autograph.to_graph: the converted Python function (or method, or callable object)."""
    if isinstance(entity, types.MethodType):
        c = convert(entity.__func__)
        return types.MethodType(c, entity.__self__)
    if isinstance(entity, type):
        raise NotImplementedError("tf.autograph.to_graph of a class is not supported by eagerflow; convert its methods")
    if isinstance(entity, types.FunctionType):
        return convert(entity)
    return converted_call(entity)


def to_code(entity, recursive=True, experimental_optional_features=None):
    """tf.autograph.to_code: the source of the converted function (as tf.autograph.to_code)."""
    fn = entity.__func__ if isinstance(entity, types.MethodType) else entity
    fn = getattr(fn, "python_function", fn)
    if not isinstance(fn, types.FunctionType):
        raise ValueError(f"tf.autograph.to_code expects a Python function, got {type(entity).__name__}")
    entry = _template(fn)  # what it is given, library code too (as TF's to_code)
    if entry is None:
        raise ValueError(f"cannot convert {fn.__qualname__}: its source code is not available")
    return entry[1] + "\n"
