"""Keras' InputSpec: what a layer accepts (dtype, rank, axis sizes, shape). A Python layer that sets
self.input_spec has its inputs checked at every call, with Keras' ValueError messages."""

__all__ = ["InputSpec", "assert_input_compatibility"]


def _dtype_name(dtype):
    return getattr(dtype, "name", None) or str(dtype)


class InputSpec:
    """InputSpec(dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None, axes=None,
    allow_last_axis_squeeze=False, name=None, optional=False)."""

    def __init__(self, dtype=None, shape=None, ndim=None, max_ndim=None, min_ndim=None, axes=None,
                 allow_last_axis_squeeze=False, name=None, optional=False):
        self.dtype = None if dtype is None else _dtype_name(dtype)
        if shape is not None:
            self.shape = tuple(None if d is None else int(d) for d in shape)
            self.ndim = len(self.shape)
        else:
            self.shape, self.ndim = None, ndim
        self.max_ndim, self.min_ndim = max_ndim, min_ndim
        self.name, self.optional, self.allow_last_axis_squeeze = name, optional, allow_last_axis_squeeze
        try:
            axes = axes or {}
            self.axes = {int(k): axes[k] for k in axes}
        except (ValueError, TypeError):
            raise TypeError(f"Argument `axes` must be a dict with integer keys. Received: axes={axes}") from None
        if self.axes and (self.ndim is not None or self.max_ndim is not None):
            highest = (self.ndim if self.ndim else self.max_ndim) - 1
            if max(self.axes) > highest:
                raise ValueError(f"Axis {max(self.axes)} is greater than the maximum allowed value: {highest}")

    def __repr__(self):
        parts = [f"dtype={self.dtype}" if self.dtype else "", f"shape={self.shape}" if self.shape else "",
                 f"ndim={self.ndim}" if self.ndim else "", f"max_ndim={self.max_ndim}" if self.max_ndim else "",
                 f"min_ndim={self.min_ndim}" if self.min_ndim else "", f"axes={self.axes}" if self.axes else ""]
        return f"InputSpec({', '.join(p for p in parts if p)})"

    def get_config(self):
        return {"dtype": self.dtype, "shape": self.shape, "ndim": self.ndim, "max_ndim": self.max_ndim,
                "min_ndim": self.min_ndim, "axes": self.axes, "optional": self.optional}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _flat(value):
    if isinstance(value, (list, tuple)):
        out = []
        for v in value:
            out.extend(_flat(v))
        return out
    return [value]


def assert_input_compatibility(input_spec, inputs, layer_name):
    """Keras' check of inputs against a layer's input_spec (an InputSpec or a list of them)."""
    if not input_spec:
        return
    specs = _flat(input_spec)
    if isinstance(inputs, dict):
        names = [s.name for s in specs]
        if all(names):
            for n in names:
                if n not in inputs:
                    raise ValueError(f'Missing data for input "{n}". You passed a data dictionary with keys '
                                     f"{list(inputs.keys())}. Expected the following keys: {names}")
            inputs = [inputs[n] for n in names]
        else:
            inputs = list(inputs.values())
    inputs = _flat(inputs)
    if len(inputs) != len(specs):
        raise ValueError(f'Layer "{layer_name}" expects {len(specs)} input(s), but it received {len(inputs)} input '
                         f"tensors. Inputs received: {inputs}")
    for index, (x, spec) in enumerate(zip(inputs, specs)):
        if spec is None or (x is None and spec.optional):
            continue
        if not hasattr(x, "shape"):
            raise ValueError(f"Inputs to a layer should be tensors. Got '{x}' (of type {type(x)}) as input for layer "
                             f"'{layer_name}'.")
        shape = tuple(None if d is None else int(d) for d in x.shape)
        ndim = len(shape)
        where = f"Input {index} with name '{spec.name}' of layer '{layer_name}' is incompatible with the layer: "
        if spec.ndim is not None and not spec.allow_last_axis_squeeze and ndim != spec.ndim:
            raise ValueError(f"{where}expected ndim={spec.ndim}, found ndim={ndim}. Full shape received: {shape}")
        if spec.max_ndim is not None and ndim > spec.max_ndim:
            raise ValueError(f"{where}expected max_ndim={spec.max_ndim}, found ndim={ndim}")
        if spec.min_ndim is not None and ndim < spec.min_ndim:
            raise ValueError(f"{where}expected min_ndim={spec.min_ndim}, found ndim={ndim}. "
                             f"Full shape received: {shape}")
        if spec.dtype is not None and _dtype_name(x.dtype) != spec.dtype:
            raise ValueError(f"{where}expected dtype={spec.dtype}, found dtype={_dtype_name(x.dtype)}")
        for axis, value in (spec.axes or {}).items():
            if value is not None and shape[axis] not in (value, None):
                raise ValueError(f"{where}expected axis {axis} of input shape to have value {value}, but received "
                                 f"input with shape {shape}")
        if spec.shape is not None:
            want, got = spec.shape, shape
            if spec.allow_last_axis_squeeze:
                got = got[:-1] if got and got[-1] == 1 else got
                want = want[:-1] if want and want[-1] == 1 else want
            for w, d in zip(want, got):
                if w is not None and d is not None and w != d:
                    raise ValueError(f"{where}expected shape={spec.shape}, found shape={shape}")
