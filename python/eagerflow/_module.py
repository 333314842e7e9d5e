"""tf.Module, tf.name_scope and tf.Variable's scoped names.

A Module finds its variables and submodules by walking its attributes (lists, tuples, dicts and
namedtuples inside them too, through ef.nest), as TF's: attributes in sorted name order, the
leaves of each in nest order, then the submodules found, depth first; each object once.

Keras layers and models are Modules (registered as virtual subclasses: the C++ layers cannot
take a Python base), with .submodules, .name_scope and ._flatten; their .variables are the
layer's own weight list.

ef.Variable is a Python subclass of the C++ variable: its constructor takes TF's arguments and
names the variable as TF's (the name scope's path, then ':0'). Keras weights stay C++ variables
named by their layer path ('dense/kernel'), and are not ef.Variable instances, as Keras 3's
weights are not tf.Variables.
"""
import abc as _abc
import functools as _functools
import re as _re
import threading as _threading

from . import _core
from . import nest as _nest
from ._layers import _snake
from ._tf_misc import VariableAggregation, VariableSynchronization

__all__ = ["Module", "name_scope", "Variable", "get_current_name_scope", "variable_creator_scope"]

_state = _threading.local()


def _current_scope():
    return getattr(_state, "scope", "")


def get_current_name_scope():
    """The enclosing name scopes as one path ('outer/inner'; '' outside any)."""
    return _current_scope().rstrip("/")


class name_scope:  # noqa: N801 - TF's name
    """tf.name_scope(name): variables created inside are named 'name/...'. A name ending in '/'
    is absolute (replaces the enclosing scope); '' resets to the root. `with` yields the scope
    string ('outer/inner/'). One object may be entered again, nested too."""

    def __init__(self, name):
        if not isinstance(name, str):
            raise ValueError("name for name_scope must be a string.")
        self._name = name
        self._entered = _threading.local()

    @property
    def name(self):
        return self._name

    def __enter__(self):
        old = _current_scope()
        name = self._name
        if not name:
            new = ""
        elif name.endswith("/"):
            new = name
        else:
            new = old + name + "/"
        stack = getattr(self._entered, "stack", None)
        if stack is None:
            stack = self._entered.stack = []
        stack.append(old)
        _state.scope = new
        return new

    def __exit__(self, *exc):
        _state.scope = self._entered.stack.pop()
        return False


class variable_creator_scope:  # noqa: N801 - TF's name
    """tf.variable_creator_scope(creator): inside, tf.Variable(...) calls
    creator(next_creator, **kwargs) with every constructor argument by name; the innermost
    scope's creator runs first, and next_creator goes outwards, ending with the default one. What
    the outermost call returns is what tf.Variable(...) gives."""

    def __init__(self, variable_creator):
        self._creator = variable_creator

    def __enter__(self):
        _creators().append(self._creator)
        return None

    def __exit__(self, *exc):
        _creators().pop()
        return False


def _creators():
    stack = getattr(_state, "creators", None)
    if stack is None:
        stack = _state.creators = []
    return stack


_ARGUMENTS = ("initial_value", "trainable", "validate_shape", "caching_device", "name", "variable_def", "dtype",
              "import_scope", "constraint", "synchronization", "aggregation", "shape",
              "experimental_enable_variable_lifting")


def _default_creator(**kwargs):
    v = _core.Variable.__new__(Variable)
    Variable.__init__(v, **kwargs)
    return v


class Variable(_core.Variable):
    """tf.Variable: a mutable tensor, named by the enclosing name scopes ('outer/w:0')."""

    def __new__(cls, *args, **kwargs):
        stack = _creators()
        if not stack or cls is not Variable:
            return super().__new__(cls)
        if len(args) > len(_ARGUMENTS):
            raise TypeError(f"Variable() takes at most {len(_ARGUMENTS)} positional arguments ({len(args)} given)")
        named = dict(zip(_ARGUMENTS, (None, None, True, None, None, None, None, None, None,
                                      VariableSynchronization.AUTO, VariableAggregation.NONE, None, True)))
        named.update(zip(_ARGUMENTS, args))
        for k, v in kwargs.items():
            if k not in named:
                raise TypeError(f"Variable() got an unexpected keyword argument '{k}'")
            named[k] = v
        creators = list(stack)

        def chain(i):
            if i < 0:
                return _default_creator
            return lambda **kw: creators[i](chain(i - 1), **kw)
        return chain(len(creators) - 1)(**named)

    def __init__(self, initial_value=None, trainable=None, validate_shape=True, caching_device=None, name=None,
                 variable_def=None, dtype=None, import_scope=None, constraint=None,
                 synchronization=VariableSynchronization.AUTO, aggregation=VariableAggregation.NONE, shape=None,
                 experimental_enable_variable_lifting=True):
        if "_synchronization" in self.__dict__:
            return  # made by a creator (variable_creator_scope) already; Python calls __init__ again
        if variable_def is not None:
            raise ValueError("variable_def: creating a variable from a VariableDef protocol buffer (TF1 graphs) is "
                             "not supported; pass initial_value")
        if initial_value is None:
            raise ValueError("The `initial_value` arg to `tf.Variable` must be specified except when you are not "
                             "providing a `variable_def`. You provided neither.")
        if constraint is not None and not callable(constraint):
            raise ValueError(f"Argument `constraint` must be None or a callable. a callable. Got a {type(constraint)}:  "
                             f"{constraint}")
        synchronization = VariableSynchronization(synchronization)
        if trainable is None:
            trainable = synchronization != VariableSynchronization.ON_READ
        elif trainable and synchronization == VariableSynchronization.ON_READ:
            raise ValueError("Synchronization value can be set to VariableSynchronization.ON_READ only for "
                             "non-trainable variables. You have specified trainable=True and "
                             "synchronization=VariableSynchronization.ON_READ.")
        if callable(initial_value):
            initial_value = initial_value()
        if shape is not None:
            have = tuple(_core.convert_to_tensor(initial_value)._shape_tuple) if not isinstance(
                initial_value, (_core.Tensor, _core.Variable)) else tuple(initial_value._shape_tuple)
            want = tuple(shape) if not hasattr(shape, "as_list") else tuple(shape.as_list())
            fits = len(want) == len(have) and all(w is None or h is None or int(w) == int(h) for w, h in zip(want, have))
            if not fits:
                raise ValueError(f"In this `tf.Variable` creation, the initial value's shape ({have}) is not compatible "
                                 f"with the explicitly supplied `shape` argument ({list(want)}).")
            if any(w is None for w in want):
                raise NotImplementedError("tf.Variable(shape=...) with unknown dimensions (a variable whose shape may "
                                          "change) is not supported: eagerflow's variables keep their initial shape")
        base = name if name else "Variable"
        super().__init__(initial_value, name=_current_scope() + base + ":0", trainable=bool(trainable), dtype=dtype)
        self._constraint = constraint
        self._synchronization = synchronization
        self._aggregation = VariableAggregation(aggregation)

    @property
    def constraint(self):
        return self._constraint

    @property
    def synchronization(self):
        return self._synchronization

    @property
    def aggregation(self):
        return self._aggregation


_VALID_NAME = _re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _is_variable(x):
    return isinstance(x, _core.Variable)


def _is_module(x):
    return isinstance(x, Module)


def _attributes(obj):
    """The attributes a Module walks: its __dict__; a Keras layer adds the weights and sublayers
    the C++ layer tracks (a Python layer may keep them only there)."""
    items = dict(getattr(obj, "__dict__", {}))
    if isinstance(obj, _core.Layer):
        items.pop("_ef_functions", None)
        items["_ef_weights"] = list(obj.weights)
        items["_ef_layers"] = list(getattr(obj, "layers", []) or [])
    return items


def _identity(x):
    # A C++ variable may come back as a new Python object each time (a layer's weight list): its
    # identity is its state, which its hash is.
    return ("variable", hash(x)) if isinstance(x, _core.Variable) else id(x)


def _walk(module, recursive, predicate, key, ignored, with_path, path, seen, stack):
    items = _attributes(module)
    submodules = []
    for attr in sorted(items, key=key):
        if attr in ignored:
            continue
        try:
            leaves = _nest._flatten_with_tuple_paths(items[attr])
        except Exception as cause:
            raise ValueError(f"Error processing property {attr!r} of {module!r}") from cause
        for leaf_path, leaf in leaves:
            leaf_path = path + (attr,) + leaf_path
            if not with_path:
                key_of_leaf = _identity(leaf)
                if key_of_leaf in seen:
                    continue
                seen.add(key_of_leaf)
            if predicate(leaf):
                yield (leaf_path, leaf) if with_path else leaf
            if recursive and _is_module(leaf) and id(leaf) not in stack:
                submodules.append((leaf_path, leaf))
    stack.add(id(module))
    for sub_path, sub in submodules:
        yield from _walk(sub, recursive, predicate, key, ignored, with_path, sub_path, seen, stack)
    stack.discard(id(module))


def _flatten(self, recursive=True, predicate=None, attribute_traversal_key=None, with_path=False,
             expand_composites=False):
    """The objects under this module that `predicate` accepts (all, without one), found by
    walking attributes; with_path gives (attribute path, object) pairs instead."""
    ignored = getattr(type(self), "_TF_MODULE_IGNORED_PROPERTIES", frozenset())
    return _walk(self, recursive, predicate or (lambda _: True), attribute_traversal_key, ignored, with_path, (),
                 {id(self)}, set())


class Module(metaclass=_abc.ABCMeta):
    """tf.Module: a named container of variables and other modules."""

    _TF_MODULE_IGNORED_PROPERTIES = frozenset()

    def __init__(self, name=None):
        if name is None:
            name = _snake(type(self).__name__)
        elif not _VALID_NAME.match(name):
            raise ValueError(f"{name!r} is not a valid module name. Module names must be valid Python identifiers "
                             "(e.g. a valid class name).")
        self._name = name
        with name_scope(name) as scope:
            self._name_scope = name_scope(scope)  # absolute: the scope where the module was made

    @property
    def name(self):
        return self._name

    @property
    def name_scope(self):
        return self._name_scope

    @property
    def variables(self):
        return tuple(self._flatten(predicate=_is_variable))

    @property
    def trainable_variables(self):
        return tuple(self._flatten(predicate=lambda v: _is_variable(v) and v.trainable))

    @property
    def non_trainable_variables(self):
        return tuple(self._flatten(predicate=lambda v: _is_variable(v) and not v.trainable))

    @property
    def submodules(self):
        return tuple(self._flatten(predicate=_is_module))

    _flatten = _flatten

    @classmethod
    def with_name_scope(cls, method):
        """A decorator: the method runs inside the module's name scope."""
        @_functools.wraps(method)
        def wrapped(self, *args, **kwargs):
            with self.name_scope:
                return method(self, *args, **kwargs)
        return wrapped


# Keras layers are Modules (tf.keras 2's layers subclass tf.Module). Their .variables and
# .trainable_variables are the C++ layer's own; the rest comes from here.
Module.register(_core.Layer)
_core.Layer.submodules = property(lambda self: tuple(_flatten(self, predicate=_is_module)),
                                  doc="The layers and Modules under this layer, found as tf.Module finds them.")
_core.Layer.name_scope = property(lambda self: name_scope(self.name + "/"),
                                  doc="A name scope named after the layer.")
_core.Layer._flatten = _flatten
_core.Layer.with_name_scope = classmethod(Module.with_name_scope.__func__)
if not hasattr(_core.Layer, "non_trainable_variables"):
    _core.Layer.non_trainable_variables = property(lambda self: list(self.non_trainable_weights))
