"""ef.onnx: export a layer or model's inference graph to ONNX (opset 17)."""
from . import _core


def export_model(obj, path, input_spec=None):
    """Writes `obj` called in inference mode at input_spec (default: its remembered input,
    batch dynamic) as an ONNX model, checked by ONNX's checker."""
    _core._io._export_onnx(obj, str(path), input_spec)


__all__ = ["export_model"]
