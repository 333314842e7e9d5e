"""ef.saved_model: save a layer or model for inference (ef::save) and load it back without the
Python that defined it (ef::load)."""
from . import _core

_io = _core._io


def save(obj, export_dir, signatures=None, input_spec=None):
    """Saves `obj` (a layer or model, called once or built) called in inference mode as the
    signature "serving_default", traced at input_spec (default: its first call's input with
    the batch axis dynamic)."""
    if signatures is not None:
        if isinstance(signatures, _core.TensorSpec):
            input_spec = signatures
        else:
            raise NotImplementedError("save: signatures other than one TensorSpec are not supported")
    if not isinstance(obj, _core.Layer):
        raise TypeError(f"ef.saved_model.save saves layers and models, got {type(obj).__name__}")
    _io._save(obj, str(export_dir), input_spec)


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


def load(export_dir):
    """Loads a saved model. Its signatures are differentiable (a GradientTape sees their
    variables) and callable inside ef.function; SavedModelLayer makes one a trainable layer."""
    return Loaded(_io._load(str(export_dir)))


def SavedModelLayer(filepath, call_endpoint="serving_default", trainable=True, name=""):
    """Keras' TFSMLayer: one signature of a saved model (a folder, or a Loaded model) as a
    layer whose weights are the model's variables, so that fit fine-tunes it."""
    if isinstance(filepath, Loaded):
        return _io.SavedModelLayer(filepath._saved, call_endpoint, trainable, name or "")
    return _io.SavedModelLayer(str(filepath), call_endpoint, trainable, name or "")


__all__ = ["save", "load", "Loaded", "SavedModelLayer"]
