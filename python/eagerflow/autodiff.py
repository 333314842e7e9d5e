"""ef.autodiff, as tf.autodiff: GradientTape (reverse mode) and ForwardAccumulator (forward mode)."""
from ._autodiff import GradientTape
from ._forward_accumulator import ForwardAccumulator

__all__ = ["ForwardAccumulator", "GradientTape"]
