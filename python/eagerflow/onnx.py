"""ef.onnx: export a layer or model's inference graph to ONNX (opset 17), and import ONNX
models (opsets 11 to 21) as differentiable, trainable functions."""
import os as _os

from . import _core


def export_model(obj, path, input_spec=None):
    """Writes `obj` called in inference mode at input_spec (default: its remembered input,
    batch dynamic) as an ONNX model, checked by ONNX's checker."""
    _core._io._export_onnx(obj, str(path), input_spec)


class OnnxFunction:
    """An imported ONNX graph (ef.onnx.load_model): call it with tensors or NumPy arrays, by
    position or by the ONNX input names; one output comes back as a tensor, several as a list.
    Its weights (the floating-point initializers) are `variables`, all trainable: a
    GradientTape differentiates through a call, and an optimizer fine-tunes them. Each new
    input shape traces once (eagerflow ops in a graph), later calls replay it; inside
    ef.function a call is one node of the caller's graph."""

    def __init__(self, model):
        self._model = model

    @property
    def input_names(self):
        return list(self._model.input_names)

    @property
    def output_names(self):
        return list(self._model.output_names)

    @property
    def inputs(self):
        """The inputs' TensorSpecs (dims ONNX leaves symbolic are None)."""
        return list(self._model.input_specs)

    @property
    def opset(self):
        return self._model.opset

    @property
    def variables(self):
        return list(self._model.variables)

    @property
    def trainable_variables(self):
        return list(self._model.trainable_variables)

    def get_concrete_function(self, *specs):
        """The traced graph at these TensorSpecs (default: the file's, symbolic dims dynamic)."""
        return self._model.concrete_function(list(specs))

    def __call__(self, *args, **kwargs):
        names = self._model.input_names
        if len(args) > len(names):
            raise TypeError(f"the ONNX model takes {len(names)} inputs ({', '.join(names)}), got {len(args)}")
        values = dict(zip(names, args))
        for key, value in kwargs.items():
            if key not in names:
                raise TypeError(f"the ONNX model has no input {key!r} (its inputs: {', '.join(names)})")
            if key in values:
                raise TypeError(f"input {key!r} given twice")
            values[key] = value
        missing = [n for n in names if n not in values]
        if missing:
            raise TypeError(f"missing ONNX input(s): {', '.join(missing)}")
        outs = self._model.run([values[n] for n in names])
        return outs[0] if len(outs) == 1 else list(outs)

    def __repr__(self):
        return f"<ef.onnx.OnnxFunction inputs={self.input_names} outputs={self.output_names} opset={self.opset}>"


def load_model(path_or_bytes):
    """Imports an ONNX model (a path, or the serialized bytes) as an OnnxFunction."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return OnnxFunction(_core._io._load_onnx_bytes(bytes(path_or_bytes)))
    if hasattr(path_or_bytes, "SerializeToString"):  # an onnx.ModelProto
        return OnnxFunction(_core._io._load_onnx_bytes(path_or_bytes.SerializeToString()))
    return OnnxFunction(_core._io._load_onnx(str(_os.fspath(path_or_bytes))))


def supported_ops():
    """The ONNX op types (default domain) load_model interprets."""
    return list(_core._io._onnx_supported_ops())


__all__ = ["export_model", "load_model", "supported_ops", "OnnxFunction"]
