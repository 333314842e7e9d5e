"""NumPy arrays on the left of an operator with a tensor or variable: TF's tensors and variables
set __array_priority__ = 100, so `ndarray + tensor`, `ndarray @ variable`... defer to the
tensor's reflected operator and give a tensor (recorded by tapes and traces) where NumPy would
otherwise convert the tensor to an array, dropping gradients and failing inside ef.function."""
from . import _core

_core.Tensor.__array_priority__ = 100
_core.Variable.__array_priority__ = 100
