"""ef.keras.saving: whole models in one file (Keras' .keras idea; the format is
docs/efmodel_format.md): the architecture, the weights, the compile settings and the
optimizer's state, so a loaded model continues training as the original would have.

    ef.keras.saving.save_model(model, "m.efmodel")   # or model.save("m.efmodel")
    model = ef.keras.models.load_model("m.efmodel")

Sequential and functional models are saved, with built-in layers and layers written in Python:
those save what their get_config() returns under their registered name
(@register_keras_serializable(), "package>ClassName"; unregistered ones under the class name)
and load_model rebuilds them with from_config(config), the class found in the registry or in
custom_objects. A subclassed Model (its own call()) is not saved as a config: save_weights."""
from .. import _core
from .. import _training
from .._layers import _PythonLayer

_s = _core._saving

__all__ = ["save_model", "load_model", "register_keras_serializable", "get_registered_name", "get_registered_object"]

# Paths that save() and load_model() treat as whole-model files.
EXTENSIONS = (".efmodel", ".keras", ".h5", ".hdf5")


# Registered name -> class, for layers written in Python (Keras' global custom objects).
_registered = {}


def _register(name, cls, replace=False):
    owner = _registered.get(name)
    if owner is not None and owner is not cls and not replace:
        raise ValueError(f"'{name}' is already registered for {owner.__qualname__}; give {cls.__qualname__} another "
                         "name or package")
    if owner is None and _s.is_registered(name):
        raise ValueError(f"'{name}' is the name of a built-in layer; register {cls.__qualname__} under a package "
                         "(register_keras_serializable(package=...))")
    _registered[name] = cls
    _s.register_layer(name)


def _from_config(name, config):
    """load_model's factory for a layer class written in Python (python/src/saving_keras.cpp)."""
    cls = _registered.get(name)
    if cls is None:
        raise ValueError(f"load_model: no Python layer class is registered as '{name}'; use "
                         "@register_keras_serializable() or pass it in custom_objects")
    return cls.from_config(config)


def _python_layer_classes(model, seen=None):
    """The classes of the layers of `model` (nested) written in Python, and subclassed models."""
    seen = set() if seen is None else seen
    found, subclassed = [], []
    for layer in getattr(model, "layers", []) or []:
        if id(layer) in seen:
            continue
        seen.add(id(layer))
        if isinstance(layer, _training.Model) and not layer._is_functional:
            subclassed.append(layer)
        elif isinstance(layer, _PythonLayer) and not isinstance(layer, (_training.Model, _training.Sequential)):
            found.append(type(layer))
        if isinstance(layer, (_training.Model, _training.Sequential)):
            more, sub = _python_layer_classes(layer, seen)
            found += more
            subclassed += sub
    return found, subclassed


def _check_savable(model, what):
    """Registers the model's Python layer classes (under their class names unless registered) and
    refuses subclassed Models, which have no config here."""
    if isinstance(model, _training.Model) and not model._is_functional:
        raise TypeError(f"{what}: model '{model.name}' is a subclassed Model ({type(model).__name__}) written in "
                        "Python, which this version cannot save as a config; use a functional or Sequential model, "
                        "or save its weights with save_weights")
    classes, subclassed = _python_layer_classes(model)
    if subclassed:
        names = ", ".join(f"'{m.name}' ({type(m).__name__})" for m in subclassed)
        raise TypeError(f"{what}: the model(s) {names} inside '{model.name}' are subclassed Models, which this "
                        "version cannot save as a config; write them as layers (ef.keras.layers.Layer with "
                        "get_config) or save the weights with save_weights")
    # A Python layer class not registered yet is saved under its class name, as Keras does; the
    # loading program passes it in custom_objects (or registers it).
    for cls in classes:
        name = cls.__dict__.get("_ef_registered_name", cls.__name__)
        if name not in _registered:
            _register(name, cls)


def _use_custom_objects(custom_objects, what):
    for key, obj in (custom_objects or {}).items():
        if not (isinstance(obj, type) and issubclass(obj, _PythonLayer)):
            raise TypeError(f"{what}: custom_objects['{key}'] must be a Layer class written in Python, got {obj!r}")
        for name in {key, obj.__dict__.get("_ef_registered_name", obj.__name__)}:
            if _registered.get(name) is not obj:
                _register(name, obj, replace=True)


def model_config(model):
    """{"class_name": "Sequential" | "Functional", "config": ...}: the architecture save_model writes."""
    _check_savable(model, "get_config")
    return _s.model_config(model)


def _with_output_structure(model):
    """A rebuilt functional model whose outputs were a dict returns a dict again (Python keeps
    the structure of a model's outputs; the config records their names)."""
    if isinstance(model, _training.Model) and getattr(model, "_is_functional", False):
        try:
            config = _s.model_config(model)["config"]
        except Exception:  # a model that has no config keeps its list outputs
            return model
        if config.get("named_outputs"):
            model._ef_output_dict = list(config["output_names"])
    return model


def model_from_config(class_name, config, custom_objects=None, make_model=None):
    """A new model (fresh weights) of the architecture in `config`."""
    _use_custom_objects(custom_objects, "from_config")
    return _with_output_structure(_s.model_from_config(class_name, config, make_model or _make_model))


def model_from_json(json_string, custom_objects=None):
    """Keras' model_from_json: a new model (fresh weights) from model.to_json()'s text (Keras 3's
    serialization, as Keras writes it too) or from eagerflow's own config text."""
    _use_custom_objects(custom_objects, "model_from_json")
    return _with_output_structure(_s.model_from_json(json_string, _make_model))


def clone_model(model, custom_objects=None):
    """Keras' clone_model for Sequential and functional models: the same architecture, new layers
    with freshly initialized weights (not compiled)."""
    c = model_config(model)
    return model_from_config(c["class_name"], c["config"], custom_objects)


def save_model(model, filepath, overwrite=True, include_optimizer=True):
    """Saves the whole model to `filepath` (one file, written atomically)."""
    import os
    filepath = os.fspath(filepath)
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError(f"save_model: '{filepath}' exists and overwrite=False")
    if filepath.endswith(".keras") and isinstance(model, _training.Model) and not model._is_functional:
        from . import _subclassed_file  # Keras' .keras of a subclassed Model: class, config, weights
        return _subclassed_file.save(model, filepath, include_optimizer)
    _check_savable(model, "save_model")
    _s.save_model(model, filepath, include_optimizer)


def _make_model(class_name, name):
    if class_name == "Sequential":
        return _training.Sequential(name=name or None)
    return _training.Model(name=name or None)


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """Loads a model saved by save_model: an ef.keras.Sequential or ef.keras.Model, compiled as
    it was saved (compile=False: not compiled) with the optimizer's state restored. Layers
    written in Python are rebuilt by their class's from_config: registered classes, and those
    in custom_objects ({"MyLayer": MyLayer}, by the name saved or the class name). safe_mode
    (Keras'): a Lambda layer's saved lambda is Python code, loaded only with safe_mode=False."""
    import os
    from .utils._objects import scoped_layer_classes  # classes of an enclosing custom_object_scope
    if os.path.isdir(os.fspath(filepath)):  # model.save(folder) wrote a saved model: Keras 3's answer
        raise ValueError(
            f"File format not supported: filepath={os.fspath(filepath)}. Keras 3 only supports V3 `.keras` files, "
            "legacy H5 format files (`.h5` extension). Note that the legacy SavedModel format is not supported by "
            "`load_model()` in Keras 3. In order to reload a TensorFlow SavedModel as an inference-only layer in "
            f"Keras 3, use `keras.layers.TFSMLayer({os.fspath(filepath)}, call_endpoint='serving_default')` (note "
            "that your `call_endpoint` might have a different name).")
    custom = {**scoped_layer_classes(), **(custom_objects or {})}
    from . import _safe_mode, _subclassed_file
    with _safe_mode.scope(safe_mode):  # a Lambda's saved lambda loads only outside safe mode
        if _subclassed_file.is_subclassed_file(os.fspath(filepath)):
            return _subclassed_file.load(os.fspath(filepath), custom, compile)
        _use_custom_objects(custom, "load_model")
        return _with_output_structure(_s.load_model(os.fspath(filepath), compile, _make_model))


def register_keras_serializable(package="Custom", name=None):
    """Keras' decorator: registers a Layer class written in Python as "package>name" (name:
    the class name), so that load_model rebuilds its layers with from_config."""
    def decorator(cls):
        if not (isinstance(cls, type) and issubclass(cls, _PythonLayer)):
            raise TypeError(f"register_keras_serializable: {cls!r} is not a Layer class written in Python")
        registered = f"{package}>{name or cls.__name__}"
        _register(registered, cls)
        cls._ef_registered_name = registered
        return cls
    return decorator


def get_registered_name(obj):
    """The name a class (or its instance) is saved under: "package>Name", or the class name."""
    cls = obj if isinstance(obj, type) else type(obj)
    return cls.__dict__.get("_ef_registered_name", cls.__name__)


def get_registered_object(name, custom_objects=None):
    """The class registered under `name` (custom_objects first), or None."""
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    return _registered.get(name)


# One registry, as Keras: keras.saving's registration and serialization names are keras.utils'
# (functions and any class with get_config too; Layer classes also reach load_model).
from .utils._objects import (CustomObjectScope, custom_object_scope, deserialize_keras_object,  # noqa: E402
                             get_custom_objects, get_registered_name, get_registered_object,
                             register_keras_serializable, serialize_keras_object)

__all__ += ["CustomObjectScope", "custom_object_scope", "deserialize_keras_object", "get_custom_objects",
            "serialize_keras_object"]
