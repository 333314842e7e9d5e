"""ef.saved_model (tf.saved_model): save an object's functions and variables to a folder and load
them back without the Python that defined them.

A Keras layer or model saves as before (ef::save: "serving_default", its call in inference mode);
any other object (a tf.Module) saves its attribute tree, every ef.function's traces and its
signatures (python/eagerflow/_saved_module_save.py), and loads back as objects with the same
attributes (_saved_module_load.py).
"""
import json as _json
import os as _os

from . import _core
from . import _saved_folder

_io = _core._io

DEFAULT_SERVING_SIGNATURE_DEF_KEY = "serving_default"
SERVING = "serve"
TRAINING = "train"
GPU = "gpu"
TPU = "tpu"
CLASSIFY_INPUTS = "inputs"
CLASSIFY_METHOD_NAME = "tensorflow/serving/classify"
CLASSIFY_OUTPUT_CLASSES = "classes"
CLASSIFY_OUTPUT_SCORES = "scores"
PREDICT_INPUTS = "inputs"
PREDICT_METHOD_NAME = "tensorflow/serving/predict"
PREDICT_OUTPUTS = "outputs"
REGRESS_INPUTS = "inputs"
REGRESS_METHOD_NAME = "tensorflow/serving/regress"
REGRESS_OUTPUTS = "outputs"

_VARIABLE_POLICIES = (None, "none", "save_variable_devices", "expand_distributed_variables")


def _policy(value):
    if hasattr(value, "value"):  # TF's VariablePolicy enum
        value = value.value
    if value not in _VARIABLE_POLICIES:
        raise ValueError(f"Received invalid VariablePolicy value: {value}.")
    return value


class SaveOptions:
    """TF's options of tf.saved_model.save. What applies here: experimental_custom_gradients
    (False: functions are saved without their custom gradients, which loaded functions then do
    not have either; True, TF's default: a custom gradient's rule, Python code, cannot be saved,
    so saving warns and the loaded gradient is that of the forward ops) and extra_tags (the tags
    load(tags=...) must name). The others are TF's graph and device options, accepted and checked
    as TF checks them."""

    __slots__ = ("namespace_whitelist", "save_debug_info", "function_aliases", "experimental_debug_stripper",
                 "experimental_io_device", "experimental_variable_policy", "experimental_custom_gradients",
                 "experimental_image_format", "experimental_skip_saver", "experimental_sharding_callback",
                 "extra_tags")

    def __init__(self, namespace_whitelist=None, save_debug_info=False, function_aliases=None,
                 experimental_debug_stripper=False, experimental_io_device=None, experimental_variable_policy=None,
                 experimental_custom_gradients=True, experimental_image_format=False, experimental_skip_saver=False,
                 experimental_sharding_callback=None, extra_tags=None):
        self.namespace_whitelist = list(namespace_whitelist or [])
        self.save_debug_info = save_debug_info
        self.function_aliases = function_aliases if function_aliases is not None else {}
        self.experimental_debug_stripper = experimental_debug_stripper
        self.experimental_io_device = experimental_io_device
        self.experimental_variable_policy = _policy(experimental_variable_policy)
        self.experimental_custom_gradients = experimental_custom_gradients
        self.experimental_image_format = experimental_image_format
        self.experimental_skip_saver = experimental_skip_saver
        self.experimental_sharding_callback = experimental_sharding_callback
        self.extra_tags = extra_tags


class LoadOptions:
    """TF's options of tf.saved_model.load, accepted and kept (a saved model here is read whole,
    on the host, so none changes what load does)."""

    __slots__ = ("allow_partial_checkpoint", "experimental_io_device", "experimental_skip_checkpoint",
                 "experimental_variable_policy", "experimental_load_function_aliases")

    def __init__(self, allow_partial_checkpoint=False, experimental_io_device=None, experimental_skip_checkpoint=False,
                 experimental_variable_policy=None, experimental_load_function_aliases=False):
        self.allow_partial_checkpoint = allow_partial_checkpoint
        self.experimental_io_device = experimental_io_device
        self.experimental_skip_checkpoint = experimental_skip_checkpoint
        self.experimental_variable_policy = _policy(experimental_variable_policy)
        self.experimental_load_function_aliases = experimental_load_function_aliases


def save(obj, export_dir, signatures=None, options=None, input_spec=None):
    """Saves `obj`. A Keras layer or model: called in inference mode as the signature
    "serving_default", traced at input_spec (default: its first call's input with the batch
    axis dynamic). Anything else (a tf.Module): its attributes, tf.functions and signatures, as
    TF's tf.saved_model.save."""
    if options is not None and not isinstance(options, SaveOptions):
        raise TypeError(f"options must be a tf.saved_model.SaveOptions, got {type(options).__name__}")
    if isinstance(obj, _core.Layer):
        if signatures is not None:
            if isinstance(signatures, _core.TensorSpec):
                input_spec = signatures
            else:
                raise NotImplementedError("save: the signatures of a Keras layer or model are its call at one "
                                          "TensorSpec (pass signatures=ef.TensorSpec(...))")
        _io._save(obj, str(_os.fspath(export_dir)), input_spec)
        return
    if isinstance(obj, (int, float, str, bytes, list, tuple, dict, type(None), _core.Tensor, _core.Variable)):
        raise ValueError(f"Expected an object to save (a tf.Module, or an object with tf.function attributes), "
                         f"got {obj!r}")
    from ._saved_module_save import save_module
    save_module(obj, _os.fspath(export_dir), signatures, options)


class _Signature:
    def __init__(self, saved, name):
        self._saved = saved
        self.name = name
        self.input_names, self.inputs, self.outputs = saved.signature_specs(name)

    def __call__(self, *inputs):
        outs = self._saved.run(self.name, list(inputs))
        return outs[0] if len(outs) == 1 else outs

    def __repr__(self):
        return f"<signature {self.name}({', '.join(self.input_names)})>"


class Loaded:
    """A loaded saved model: loaded(x) runs "serving_default"; loaded.signatures[name](...)
    runs any signature (one output comes back as a tensor, several as a list)."""

    def __init__(self, saved):
        self._saved = saved
        self.signatures = {n: _Signature(saved, n) for n in saved.signature_names()}

    @property
    def variables(self):
        return list(self._saved.variables.values())

    @property
    def trainable_variables(self):
        return list(self._saved.trainable_variables)

    def __call__(self, *inputs):
        if "serving_default" not in self.signatures:
            raise ValueError(f"no 'serving_default' signature (there are: {sorted(self.signatures)})")
        return self.signatures["serving_default"](*inputs)

    def __repr__(self):
        return f"<ef.saved_model.Loaded signatures={sorted(self.signatures)}>"


def _read_json(folder):
    try:
        with open(_os.path.join(folder, _saved_folder.JSON_FILE), "rb") as f:
            return f.read()
    except OSError:
        return None


def load(export_dir, tags=None, options=None):
    """Loads a saved model. A tf.Module comes back as objects with its attributes, functions and
    signatures; a Keras layer or model as Loaded. Functions and signatures are differentiable
    (a GradientTape sees their variables) and callable inside ef.function."""
    if options is not None and not isinstance(options, LoadOptions):
        raise TypeError(f"options must be a tf.saved_model.LoadOptions, got {type(options).__name__}")
    path = str(_os.fspath(export_dir))
    # The C++ loader reads the folder between two reads of its JSON here: equal, they are the
    # same save (a save that replaced the folder meanwhile makes them differ: read again).
    for _ in range(5):
        before = _read_json(_saved_folder.recover(_os.path.realpath(path.rstrip("/") or "/")))
        saved = _io._load(path)
        after = _read_json(_saved_folder.recover(_os.path.realpath(path.rstrip("/") or "/")))
        if before == after:
            break
    else:
        raise RuntimeError(f"load: '{path}' kept changing while it was read (saves are replacing it)")
    meta = _json.loads(after) if after is not None else {}
    saved_tags = meta.get("tags", ["serve"])
    if tags is not None:
        wanted = [tags] if isinstance(tags, str) else list(tags)
        if set(wanted) != set(saved_tags):
            raise ValueError(f"Got an incompatible argument to `tags`: {wanted}. The SavedModel at {path} has one "
                             f"MetaGraph with tags {saved_tags}. You may omit the argument, pass 'None', or pass "
                             "matching tags.")
    if "objects" not in meta:
        return Loaded(saved)
    from ._saved_module_load import restore
    meta["variable_keys"] = [v["key"] for v in meta["variables"]]
    return restore(saved, meta)


def contains_saved_model(export_dir):
    """Whether export_dir is a saved model's folder (TF's tf.saved_model.contains_saved_model)."""
    return _os.path.isfile(_os.path.join(_os.fspath(export_dir), _saved_folder.JSON_FILE))


def SavedModelLayer(filepath, call_endpoint="serving_default", trainable=True, name=""):
    """Keras' TFSMLayer: one signature of a saved model (a folder, or a Loaded model) as a
    layer whose weights are the model's variables, so that fit fine-tunes it."""
    if isinstance(filepath, Loaded):
        return _io.SavedModelLayer(filepath._saved, call_endpoint, trainable, name or "")
    return _io.SavedModelLayer(str(filepath), call_endpoint, trainable, name or "")


__all__ = ["save", "load", "Loaded", "SavedModelLayer", "SaveOptions", "LoadOptions", "contains_saved_model",
           "DEFAULT_SERVING_SIGNATURE_DEF_KEY", "SERVING", "TRAINING", "GPU", "TPU", "CLASSIFY_INPUTS",
           "CLASSIFY_METHOD_NAME", "CLASSIFY_OUTPUT_CLASSES", "CLASSIFY_OUTPUT_SCORES", "PREDICT_INPUTS",
           "PREDICT_METHOD_NAME", "PREDICT_OUTPUTS", "REGRESS_INPUTS", "REGRESS_METHOD_NAME", "REGRESS_OUTPUTS"]
