"""ef.keras.saving: whole models in one file (Keras' .keras idea; the format is
docs/efmodel_format.md): the architecture, the weights, the compile settings and the
optimizer's state, so a loaded model continues training as the original would have.

    ef.keras.saving.save_model(model, "m.efmodel")   # or model.save("m.efmodel")
    model = ef.keras.models.load_model("m.efmodel")

Sequential and functional models of the built-in layers are saved. Layers written in Python
(subclasses of ef.keras.layers.Layer) cannot be saved in this version: save_model raises a
TypeError naming the layer (save its weights with save_weights instead)."""
from .. import _core
from .. import _training
from .._layers import _PythonLayer

_s = _core._saving

__all__ = ["save_model", "load_model", "register_keras_serializable"]

# Paths that save() and load_model() treat as whole-model files.
EXTENSIONS = (".efmodel", ".keras")


def _python_layers(model, seen=None):
    """The layers of `model` (nested) that are written in Python, as (path, class name)."""
    seen = set() if seen is None else seen
    found = []
    for layer in getattr(model, "layers", []) or []:
        if id(layer) in seen:
            continue
        seen.add(id(layer))
        is_model = isinstance(layer, (_training.Model, _training.Sequential))
        if isinstance(layer, _PythonLayer) and not is_model:
            found.append((layer.name, type(layer).__name__))
        elif isinstance(layer, _training.Model) and not layer._is_functional:
            found.append((layer.name, type(layer).__name__))
        if is_model:
            found += _python_layers(layer, seen)
    return found


def save_model(model, filepath, overwrite=True, include_optimizer=True):
    """Saves the whole model to `filepath` (one file, written atomically)."""
    import os
    filepath = os.fspath(filepath)
    if not overwrite and os.path.exists(filepath):
        raise FileExistsError(f"save_model: '{filepath}' exists and overwrite=False")
    if isinstance(model, _training.Model) and not model._is_functional:
        raise TypeError(f"save_model: model '{model.name}' is a subclassed Model ({type(model).__name__}) written in "
                        "Python, which this version cannot save as a config; use a functional or Sequential model, "
                        "or save its weights with save_weights")
    bad = _python_layers(model)
    if bad:
        names = ", ".join(f"'{n}' ({c})" for n, c in bad)
        raise TypeError(f"save_model: the layer(s) {names} are written in Python, which this version cannot save as a "
                        "config (register_keras_serializable is not supported yet); save the weights with "
                        "save_weights, or use built-in layers")
    _s.save_model(model, filepath, include_optimizer)


def _make_model(class_name, name):
    if class_name == "Sequential":
        return _training.Sequential(name=name or None)
    return _training.Model(name=name or None)


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """Loads a model saved by save_model: an ef.keras.Sequential or ef.keras.Model, compiled as
    it was saved (compile=False: not compiled) with the optimizer's state restored."""
    import os
    if custom_objects:
        raise NotImplementedError("load_model: custom_objects are not supported yet (Python layers cannot be saved)")
    return _s.load_model(os.fspath(filepath), compile, _make_model)


def register_keras_serializable(package="Custom", name=None):
    """Not supported yet: layers written in Python cannot be saved as a config."""
    def decorator(cls):
        raise NotImplementedError(f"register_keras_serializable: saving layers written in Python ({cls.__name__}) is "
                                  "not supported yet; save_model raises an error naming such layers")
    return decorator


# model.save(path): a whole-model file for .efmodel / .keras paths, else the saved model
# (ef.saved_model) as before.
_saved_model_save = _training._Training.save


def _save(self, filepath, *args, **kwargs):
    import os
    if str(os.fspath(filepath)).endswith(EXTENSIONS):
        return save_model(self, filepath, *args, **kwargs)
    return _saved_model_save(self, filepath, *args, **kwargs)


_save.__doc__ = ("Saves the model: to a whole-model file (ef.keras.saving.save_model) for paths ending in "
                 ".efmodel or .keras, else for inference as a saved model (ef.saved_model.save).")
_training._Training.save = _save
