"""Keras' object registry and serialization: get_custom_objects, custom_object_scope,
register_keras_serializable, get_registered_name/object, serialize_keras_object and
deserialize_keras_object, in Keras 3's dict format ({"module", "class_name", "config",
"registered_name"}). Layer classes written in Python are registered with ef.keras.saving too,
so load_model finds them."""
import inspect
import threading
import types

import numpy as np

from .. import saving as _saving

_GLOBAL = {}  # keras.utils.get_custom_objects(): "package>Name" -> class or function
_scopes = threading.local()

# The public namespaces a built-in class or function is looked for in, as Keras' "module" names.
_NAMESPACES = ("layers", "activations", "initializers", "regularizers", "constraints", "losses", "metrics",
               "optimizers", "callbacks")


def _scope_stack():
    if not hasattr(_scopes, "stack"):
        _scopes.stack = []
    return _scopes.stack


class CustomObjectScope:
    """with custom_object_scope({"name": obj}, ...): the objects are found by name (by
    deserialize_keras_object, get_registered_object and load_model) inside the block."""

    def __init__(self, *custom_objects):
        self.custom_objects = {}
        for objects in custom_objects:
            self.custom_objects.update(objects or {})

    def __enter__(self):
        _scope_stack().append(self.custom_objects)
        return self

    def __exit__(self, *exc):
        _scope_stack().pop()


custom_object_scope = CustomObjectScope


def scoped_objects():
    """The objects of the custom_object_scopes entered (innermost last)."""
    out = {}
    for objects in _scope_stack():
        out.update(objects)
    return out


def scoped_layer_classes():
    """The Layer classes written in Python among the scoped objects (what load_model can use)."""
    from ..._layers import _PythonLayer
    return {k: v for k, v in scoped_objects().items() if inspect.isclass(v) and issubclass(v, _PythonLayer)}


def get_custom_objects():
    """The global dict of registered objects ("package>Name" -> class or function); it may be
    written to, as Keras'."""
    return _GLOBAL


def register_keras_serializable(package="Custom", name=None):
    """Decorator: registers a class (with get_config) or function as "package>name"."""
    def decorator(arg):
        registered = f"{package}>{name or arg.__name__}"
        if inspect.isclass(arg) and not hasattr(arg, "get_config"):
            raise ValueError("Cannot register a class that does not have a get_config() method.")
        from ..._layers import _PythonLayer
        if inspect.isclass(arg) and issubclass(arg, _PythonLayer):
            _saving._register(registered, arg, replace=True)
        _GLOBAL[registered] = arg
        arg._ef_registered_name = registered
        return arg
    return decorator


def get_registered_name(obj):
    """The name obj (a class or function) is registered under ("package>Name"), else its __name__."""
    target = obj if inspect.isclass(obj) or inspect.isroutine(obj) else type(obj)
    return getattr(target, "__dict__", {}).get("_ef_registered_name") or target.__name__


def get_registered_object(name, custom_objects=None, module_objects=None):
    """The object registered under name: from an active custom_object_scope, the global custom
    objects, custom_objects, then module_objects; None when none has it."""
    scoped = scoped_objects()
    if name in scoped:
        return scoped[name]
    if name in _GLOBAL:
        return _GLOBAL[name]
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    if module_objects and name in module_objects:
        return module_objects[name]
    return _saving._registered.get(name)  # Layer classes saving registered under their class names


def _public_module(obj):
    """"keras.<namespace>" where ef.keras exports the class obj, else its module."""
    import eagerflow.keras as k
    for ns in _NAMESPACES:
        mod = getattr(k, ns, None)
        if mod is not None and getattr(mod, obj.__name__, None) is obj:
            return f"keras.{ns}"
    return getattr(obj, "__module__", None)


def serialize_keras_object(obj):
    """A JSON-able description of obj: plain values as they are, NumPy values as Keras writes
    them, functions and objects with get_config as Keras 3's dicts."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, bytes):
        return {"class_name": "__bytes__", "config": {"value": obj.decode("utf-8")}}
    if isinstance(obj, np.ndarray) and obj.ndim > 0:
        return {"class_name": "__numpy__", "config": {"value": obj.tolist(), "dtype": str(obj.dtype)}}
    if isinstance(obj, (np.generic, np.ndarray)):
        return obj.item()
    if isinstance(obj, (list, tuple)):
        return type(obj)(serialize_keras_object(x) for x in obj)
    if isinstance(obj, dict):
        return {k: serialize_keras_object(v) for k, v in obj.items()}
    if isinstance(obj, types.FunctionType) and obj.__name__ == "<lambda>":
        # Keras 3 writes a lambda's bytecode (loading it back needs safe_mode=False).
        from .._layers_lambda import dump_lambda
        return {"class_name": "__lambda__", "config": {"value": dump_lambda(obj)}}
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)):
        registered = obj.__dict__.get("_ef_registered_name") if hasattr(obj, "__dict__") else None
        return {"module": "builtins", "class_name": "function",
                "config": registered or obj.__name__, "registered_name": "function"}
    if not hasattr(obj, "get_config"):
        raise TypeError(f"Cannot serialize {obj!r} because it doesn't implement `get_config()`.")
    cls = type(obj)
    registered = cls.__dict__.get("_ef_registered_name")
    module = _public_module(cls)
    return {"module": None if registered else module, "class_name": cls.__name__,
            "config": serialize_keras_object(obj.get_config()), "registered_name": registered}


def _lookup_function(name, custom_objects, module_objects):
    found = get_registered_object(name, custom_objects, module_objects)
    if found is not None:
        return found
    from .. import activations, losses, metrics
    for mod in (activations, losses, metrics):
        if callable(getattr(mod, name, None)):
            return getattr(mod, name)
    return None


def _lookup_class(config, custom_objects, module_objects):
    class_name, registered = config["class_name"], config.get("registered_name")
    for name in (registered, class_name):
        if name:
            found = get_registered_object(name, custom_objects, module_objects)
            if found is not None:
                return found
    module = config.get("module") or ""
    if module.startswith("keras."):
        import eagerflow.keras as k
        ns = getattr(k, module.split(".")[1], None)
        if ns is not None and getattr(ns, class_name, None) is not None:
            return getattr(ns, class_name)
    raise TypeError(f"Could not locate class '{class_name}'. Make sure custom classes and functions are decorated "
                    "with `@keras.saving.register_keras_serializable()`. If they are already decorated, make sure "
                    "they are all imported so that the decorator is run before trying to load them. Full object "
                    f"config: {config}")


def deserialize_keras_object(config, custom_objects=None, safe_mode=True, **kwargs):
    """The object serialize_keras_object described: classes rebuilt with from_config, found in
    custom_object_scope, the registered objects, custom_objects or ef.keras' namespaces."""
    module_objects = kwargs.pop("module_objects", None)
    if config is None or isinstance(config, (bool, int, float, str)):
        return config
    if isinstance(config, (list, tuple)):
        return type(config)(deserialize_keras_object(c, custom_objects, safe_mode, module_objects=module_objects)
                            for c in config)
    if not isinstance(config, dict):
        raise TypeError(f"Could not parse config: {config}")
    if "class_name" not in config or "config" not in config:
        return {k: deserialize_keras_object(v, custom_objects, safe_mode, module_objects=module_objects)
                for k, v in config.items()}
    class_name, inner = config["class_name"], config["config"]
    if class_name == "__numpy__":
        return np.array(inner["value"], dtype=inner["dtype"])
    if class_name == "__bytes__":
        return inner["value"].encode("utf-8")
    if class_name == "__lambda__":
        from .._layers_lambda import deserialize_function
        return deserialize_function(config, "lambda", custom_objects, None if safe_mode is True else safe_mode)
    if class_name == "function":
        fn = _lookup_function(inner, custom_objects, module_objects)
        if fn is None:
            raise TypeError(f"Could not locate function '{inner}'. Make sure custom classes and functions are "
                            "decorated with `@keras.saving.register_keras_serializable()`. Full object config: "
                            f"{config}")
        return fn
    cls = _lookup_class(config, custom_objects, module_objects)
    if not hasattr(cls, "from_config"):
        raise TypeError(f"Unable to reconstruct an instance of '{class_name}' because the class is missing a "
                        f"`from_config()` method. Full object config: {config}")
    return cls.from_config(inner)
