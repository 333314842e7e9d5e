"""`.keras` files of subclassed Models (their own call()), as Keras 3 writes them: config.json
holds the class (module, class_name, registered_name) with get_config()'s dict, the input the
model was built for (build_config) and the compile settings; model.weights.h5 the weights in
Keras' layout (attributes named as Keras names them). Loading finds the class (custom_objects,
register_keras_serializable), calls from_config, builds, compiles and loads the weights."""
import datetime
import json
import os
import tempfile
import zipfile

from .. import _core
from .._layers import _PythonLayer, _own_init_arguments

_s = _core._saving


def _config_of(model):
    cls = type(model)
    own = _own_init_arguments(cls)
    overridden = any("get_config" in c.__dict__ for c in cls.__mro__[:cls.__mro__.index(_PythonLayer)]
                     if c.__module__.split(".")[0] != "eagerflow")
    if own and not overridden:
        raise NotImplementedError(
            f"Model {cls.__name__} ('{model.name}') has arguments {own} in `__init__()` and therefore must override "
            "`get_config()` to be saved; or save its weights with save_weights")
    return model.get_config()


def save(model, filepath, include_optimizer=True):
    from .saving import get_registered_name
    cls = type(model)
    build = _s.build_input(model)
    if build is None:
        raise ValueError(f"save_model: model '{model.name}' has not been built: call it on data (or build it) first")
    shape, dtype = build
    top = {"module": cls.__module__, "class_name": cls.__name__, "config": _config_of(model),
           "registered_name": get_registered_name(cls), "build_config": {"input_shape": list(shape)}}
    if dtype != "float32":
        top["build_config"]["input_dtype"] = dtype
    compile_text = _s.keras_compile_config(model) if include_optimizer else ""
    if compile_text:
        top["compile_config"] = json.loads(compile_text)
    weights = _s.keras_weights_bytes(model, bool(compile_text))
    metadata = {"keras_version": "3.15.1",  # src/io/keras_file.h's kKerasFormatVersion
                 "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")}
    folder = os.path.dirname(os.path.abspath(filepath))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(filepath) + ".", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w") as z:
            z.writestr("metadata.json", json.dumps(metadata))
            z.writestr("config.json", json.dumps(top))
            z.writestr("model.weights.h5", weights)
        os.replace(tmp, filepath)  # a killed save leaves the old file
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def is_subclassed_file(filepath):
    """Whether `filepath` is a .keras archive whose model is neither Sequential nor functional."""
    try:
        with zipfile.ZipFile(filepath) as z:
            top = json.loads(z.read("config.json"))
    except (zipfile.BadZipFile, KeyError, OSError, ValueError):
        return False  # the C++ loader says what is wrong
    return isinstance(top, dict) and top.get("class_name") not in ("Sequential", "Functional", "Model", None) and \
        "layers" not in (top.get("config") or {})


def load(filepath, custom_objects=None, compile=True):
    from .saving import get_registered_object
    what = f"load_model('{filepath}')"
    with zipfile.ZipFile(filepath) as z:
        top = json.loads(z.read("config.json"))
        weights = z.read("model.weights.h5") if "model.weights.h5" in z.namelist() else None
    name, registered = top.get("class_name"), top.get("registered_name")
    cls = None
    for key in (registered, name):
        if key and cls is None:
            cls = get_registered_object(key, custom_objects)
    if cls is None:
        raise TypeError(f"{what}: could not locate class '{name}' (registered as '{registered}'). Make sure custom "
                        "classes are decorated with `@keras.saving.register_keras_serializable()` or passed in "
                        "custom_objects")
    model = cls.from_config(top.get("config") or {})
    shape = (top.get("build_config") or {}).get("input_shape")
    if shape is not None:
        model.build(tuple(shape))
    if compile and top.get("compile_config"):
        _s.compile_from_keras_config(model, json.dumps(top["compile_config"]), what)
    if weights is not None and model.weights:
        _s.load_keras_weights_bytes(model, weights, what)
    return model
