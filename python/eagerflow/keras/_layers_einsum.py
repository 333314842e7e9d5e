"""Keras 3's EinsumDense written from ef.einsum: the kernel's shape follows from the equation, the
input shape and the (partial) output shape, as Keras derives it."""
import re

import eagerflow as _ef

from . import activations as _activations
from ._catalogue_base import CatalogueLayer, initializer, register, regularizer


def _parse(equation):
    """(input spec, kernel spec, output spec, where the ellipsis is: None / "left" / "right")."""
    eq = equation.replace("...", "0")
    for pattern, side in ((r"^([a-zA-Z]+),([a-zA-Z]+)->([a-zA-Z]+)$", None),
                          (r"^0([a-zA-Z]+),([a-zA-Z]+)->0([a-zA-Z]+)$", "left"),
                          (r"^([a-zA-Z]{2,})0,([a-zA-Z]+)->([a-zA-Z]+)0$", "right")):
        m = re.match(pattern, eq)
        if m:
            return m.group(1), m.group(2), m.group(3), side
    raise ValueError(f"Invalid einsum equation '{equation}'. Equations must be in the form [X],[Y]->[Z], "
                     "...[X],[Y]->...[Z], or [X]...,[Y]->[Z]....")


def _shapes(equation, bias_axes, input_shape, partial_output):
    """(kernel shape, bias shape or None, full output shape) for this input shape."""
    ins, ws, outs, side = _parse(equation)
    input_shape = list(input_shape)
    elided = len(input_shape) - len(ins)
    out = [partial_output] if isinstance(partial_output, int) else list(partial_output)
    # The full output: the batch, then the elided axes where the ellipsis stands, then the given ones.
    if side == "left" and elided > 0:
        out = [input_shape[0]] + input_shape[1:elided] + out
    else:
        out = [input_shape[0]] + out
        if elided > 0:
            out += input_shape[len(input_shape) - elided:]
    offset = elided if side == "left" else 0
    in_at = {c: (i + offset) for i, c in enumerate(ins)}
    out_at = {c: (i + offset) for i, c in enumerate(outs)}
    for c in ins:
        if c in out_at and out[out_at[c]] is not None and out[out_at[c]] != input_shape[in_at[c]]:
            raise ValueError(f"Input shape and output shape do not match at shared dimension '{c}'. Input shape is "
                             f"{input_shape[in_at[c]]}, and output shape is {out[out_at[c]]}.")
    for c in outs:
        if c not in ins and c not in ws:
            raise ValueError(f"Dimension '{c}' was specified in the output '{outs}' but has no corresponding dim in "
                             f"the input spec '{ins}' or weight spec '{ws}'")
    kernel = []
    for c in ws:
        if c in out_at:
            kernel.append(out[out_at[c]])
        elif c in in_at:
            kernel.append(input_shape[in_at[c]])
        else:
            raise ValueError(f"Weight dimension '{c}' did not have a match in either the input spec '{ins}' or the "
                             f"output spec '{outs}'. For this layer, the weight must be fully specified.")
    bias = None
    if bias_axes is not None:
        for c in bias_axes:
            if c not in outs:
                raise ValueError(f"Bias dimension '{c}' was requested, but is not part of the output spec '{outs}'")
        first = min(outs.find(c) for c in bias_axes)
        bias = [out[out_at[c]] if c in bias_axes else 1 for c in outs[first:]]
        if side != "left":
            bias += [1] * max(elided, 0)
    return kernel, bias, out


class EinsumDense(CatalogueLayer):
    """A dense layer of any einsum: EinsumDense("abc,cd->abd", output_shape=(None, 64), bias_axes="d")."""

    _config = ("output_shape", "equation", "activation", "bias_axes", "kernel_initializer", "bias_initializer",
               "kernel_regularizer", "bias_regularizer", "kernel_constraint", "bias_constraint")

    def __init__(self, equation, output_shape, activation=None, bias_axes=None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, lora_rank=None, lora_alpha=None, **kwargs):
        unsupported = {k: v for k, v in (("kernel_constraint", kernel_constraint), ("bias_constraint", bias_constraint),
                                         ("lora_rank", lora_rank)) if v is not None}
        for key in ("gptq_unpacked_column_size", "quantization_config"):
            if kwargs.pop(key, None) is not None:
                unsupported[key] = True
        if unsupported:
            raise NotImplementedError(f"EinsumDense: {sorted(unsupported)} are not supported in eagerflow")
        super().__init__(**kwargs)
        _parse(equation)
        self.equation = equation
        self.output_shape = (output_shape,) if isinstance(output_shape, int) else tuple(output_shape)
        self.activation = _activations.get(activation)
        self.bias_axes = bias_axes
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer, self.bias_regularizer = regularizer(kernel_regularizer), regularizer(bias_regularizer)
        self.kernel_constraint = self.bias_constraint = None

    def build(self, input_shape):
        kernel, bias, _ = _shapes(self.equation, self.bias_axes, input_shape, self.output_shape)
        if any(d is None for d in kernel):
            raise ValueError(f"EinsumDense: the kernel shape {kernel} has an unknown dimension; give it in "
                             f"output_shape or in the input shape")
        self.kernel = self._regularize(self.kernel_regularizer, self.add_weight(
            "kernel", shape=tuple(kernel), initializer=initializer(self.kernel_initializer)))
        if bias is not None:
            self.bias = self._regularize(self.bias_regularizer, self.add_weight(
                "bias", shape=tuple(bias), initializer=initializer(self.bias_initializer)))

    def call(self, inputs):
        y = _ef.einsum(self.equation, inputs, self.kernel)
        if self.bias_axes is not None:
            y = y + self.bias
        return self.activation(y)


register(EinsumDense)
