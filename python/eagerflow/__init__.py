"""eagerflow: tf.function-style tracing over a C++20 core. `import eagerflow as tf` runs
TF/Keras programs where the features exist (see README.md, "Python")."""
import atexit as _atexit
import sys as _sys
import types as _types

from . import _core
from . import errors  # noqa: F401 - tf.errors' classes; first, so that every error of the core has its class
from ._core import *  # noqa: F401,F403 - the op table as ef.<name>
from ._core import ConversionError, Error, Tensor, TensorSpec, Variable, DType, ConcreteFunction, print  # noqa: F401
from ._core import dist  # noqa: F401 - MPI collectives and DataParallel (docs/distributed.md)
from ._function import Function, RetracingWarning, function, _log_warning
from ._autodiff import GradientTape, grad, value_and_grad
from ._core import jvp, linearize, jacfwd, jacrev, hessian, vmap  # noqa: F401 - docs/transforms.md
from ._custom_gradient import custom_gradient, custom_vjp
from ._scan import scan  # noqa: E402 - JAX-style lax.scan over pytrees
from . import _layers

import collections as _collections

TopKV2 = _collections.namedtuple("TopKV2", ["values", "indices"])


def top_k(input, k=1, sorted=True, name=None):  # noqa: A002 - TF's argument names
    """tf.math.top_k over the last axis: TopKV2(values, int32 indices), largest first (always
    sorted); equal values keep the lower index first."""
    values, indices = _core.top_k(input, k)
    return TopKV2(values, indices)


newaxis = None  # tf.newaxis: x[:, tf.newaxis] adds an axis


def rank(input, name=None):  # noqa: A002 - TF's names
    """tf.rank: the number of axes, as an int32 scalar tensor (known while tracing too)."""
    return constant(len(convert_to_tensor(input)._shape_tuple), dtype=DType.int32)


float32 = DType.float32
float64 = DType.float64
int32 = DType.int32
int64 = DType.int64
bool = DType.bool  # noqa: A001 - TF's tf.bool
bfloat16 = DType.bfloat16  # a storage dtype: ops compute in float32 (docs/mixed_precision.md)
float16 = half = DType.float16  # a storage dtype too: NumPy's float16, computed in float32
string = DType.string  # byte strings (str is stored as UTF-8); ef.strings computes on them
# TF's other integers, storage dtypes as well: ops compute in int32 (uint8, int8, int16, uint16)
# or int64 (uint32, uint64) and wrap their results back (src/ops/bfloat16_dispatch.cpp).
uint8, int8, int16, uint16, uint32, uint64 = DType.uint8, DType.int8, DType.int16, DType.uint16, DType.uint32, DType.uint64
complex64, complex128 = DType.complex64, DType.complex128  # interleaved (real, imag), as NumPy's


def complex(real, imag, name=None):  # noqa: A001 - TF's tf.complex
    """tf.complex: real + i imag (float32 parts make complex64, float64 parts complex128)."""
    return _core._complex.complex(real, imag)



def _shape(self):
    return _layers.TensorShape(self._shape_tuple)


Tensor.shape = property(_shape, doc="The shape: a tuple (None for a dim unknown while tracing).")
# Tensors are immutable values: copies are the tensor itself, and pickling keeps the value (as
# TF's EagerTensor; matplotlib and copy.deepcopy of structures holding tensors rely on it).
Tensor.__complex__ = lambda self: complex(self.numpy())  # complex(t) of a one-element tensor, as TF's


def _format(self, spec):
    """f"{t:.2f}": a scalar formats as its NumPy value (TF's); a bigger tensor only with an
    empty spec (as str(t)); symbolic tensors as their description."""
    if self.is_symbolic or self.is_keras_tensor:
        return format(str(self), spec)
    if self.ndim == 0:
        return format(self.numpy(), spec)
    if spec:
        raise TypeError(f"unsupported format string passed to Tensor.__format__ (a tensor of shape "
                        f"{tuple(self._shape_tuple)}; format one element, or use str())")
    return str(self)


Tensor.__format__ = _format
Tensor.__copy__ = lambda self: self
Tensor.__deepcopy__ = lambda self, memo: self
Tensor.__reduce__ = lambda self: (_tensor_of, (self.numpy(),))


def _tensor_of(value):
    """A tensor of a NumPy value (what an unpickled tensor is made by)."""
    return constant(value)
Variable.shape = property(_shape)

# Keras 3's names: a layer's weight is named by itself ("kernel") and .path holds where it lives
# ("sequential/dense/kernel"); a tf.Variable keeps TF's name ("outer/w:0"). _ef_full_name is the
# C++ name, which checkpoints and slots key on.
Variable._ef_full_name = Variable.name


def _variable_name(self):
    full = self._ef_full_name
    return full if full.endswith(":0") else full.rsplit("/", 1)[-1]


def _variable_path(self):
    full = self._ef_full_name
    return full[:-2] if full.endswith(":0") else full


Variable.name = property(_variable_name)
Variable.path = property(_variable_path)


def _variable_operator(name):
    def op(self, *args):
        return getattr(self.value(), name)(*args)
    op.__name__ = name
    return op


for _n in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__", "__rtruediv__",
           "__pow__", "__rpow__", "__matmul__", "__rmatmul__", "__neg__", "__abs__", "__lt__", "__le__", "__gt__",
           "__ge__", "__getitem__", "__float__", "__int__", "__bool__", "__len__"):
    setattr(Variable, _n, _variable_operator(_n))


def _print_sink(line):
    _sys.stdout.write(line if line.endswith("\n") else line + "\n")


_core._set_print_sink(_print_sink)
_atexit.register(_core._set_print_sink, None)  # before the interpreter goes away
# The library's warnings (retracing) as Python warnings (ef.RetracingWarning), not raw stderr.
_core._set_log_handler(_log_warning)
_atexit.register(_core._set_log_handler, None)

# ef.keras (a package: layers, Model/Sequential, optimizers, losses, metrics, callbacks),
# ef.saved_model, ef.onnx, ef.data.
from . import keras, saved_model, onnx, data  # noqa: E402
from . import summary  # noqa: E402 - ef.summary, as tf.summary (TensorBoard event files)
from . import math  # noqa: E402 - ef.math, as tf.math
from . import dtypes  # noqa: E402 - ef.dtypes, as tf.dtypes
# TF's indexing functions with TF's arguments (tf.slice takes sizes; _core.slice, ends).
from ._array_ops import (slice, strided_slice, gather, gather_nd, scatter_nd, tensor_scatter_nd_update,  # noqa: E402,A004
                         tensor_scatter_nd_add, tensor_scatter_nd_sub, tensor_scatter_nd_min, tensor_scatter_nd_max,
                         reverse, roll, split, unstack, sequence_mask, searchsorted, boolean_mask, where, unique,
                         unique_with_counts)
from ._tf_misc import *  # noqa: E402,F401,F403 - TF's small top-level functions and names
from ._tf_initializers import *  # noqa: E402,F401,F403 - tf.random_normal_initializer and its kin
from ._layers import TensorShape  # noqa: E402,F401
double = DType.float64  # tf.double
atan2, sign, scalar_mul = math.atan2, math.sign, math.scalar_mul
import importlib as _importlib  # noqa: E402
# ef.nn, as tf.nn: the module python/eagerflow/nn.py, which keeps _core.nn's functions (an import
# statement would find the _core.nn that `from ._core import *` put here and stop).
nn = _importlib.import_module(".nn", __name__)
linalg = _importlib.import_module(".linalg", __name__)  # ef.linalg, as tf.linalg
tensordot, matmul = linalg.tensordot, linalg.matmul  # TF: tf.matmul is tf.linalg.matmul (adjoint_a=...)
random = _importlib.import_module(".random", __name__)  # ef.random, as tf.random (keeps _core.random's)
sparse = _importlib.import_module(".sparse", __name__)  # ef.sparse, as tf.sparse
SparseTensor = sparse.SparseTensor
ragged = _importlib.import_module(".ragged", __name__)  # ef.ragged, as tf.ragged
RaggedTensor = ragged.RaggedTensor


def _ragged_aware(core, kind):
    """tf.reduce_<kind>, which also reduces a RaggedTensor (over its rows, columns or all)."""
    def op(input_tensor, axis=None, keepdims=False, name=None):
        if isinstance(input_tensor, RaggedTensor):
            if keepdims:
                raise NotImplementedError(f"reduce_{kind} of a RaggedTensor: keepdims is not supported")
            return input_tensor._reduce(kind, axis)
        return core(input_tensor, axis, keepdims)
    op.__name__ = op.__qualname__ = "reduce_" + kind
    op.__doc__ = f"tf.reduce_{kind}(input_tensor, axis=None, keepdims=False, name=None); RaggedTensors too."
    return op


reduce_sum, reduce_mean, reduce_max, reduce_min = (_ragged_aware(_core.reduce_sum, "sum"), _ragged_aware(_core.reduce_mean, "mean"),
                                                   _ragged_aware(_core.reduce_max, "max"), _ragged_aware(_core.reduce_min, "min"))
math.reduce_sum, math.reduce_mean, math.reduce_max, math.reduce_min = reduce_sum, reduce_mean, reduce_max, reduce_min
image = _importlib.import_module(".image", __name__)  # ef.image, as tf.image
strings = _importlib.import_module(".strings", __name__)  # ef.strings, as tf.strings
as_string = strings.as_string  # top level in TF too
signal = _importlib.import_module(".signal", __name__)  # ef.signal, as tf.signal (FFTs)
io = _importlib.import_module(".io", __name__)  # ef.io, as tf.io
train = _importlib.import_module(".train", __name__)  # ef.train, as tf.train (Example messages)
# TF's top-level aliases of tf.math where eagerflow's own default differed (cumsum over axis 0,
# not flattened; argmax over axis 0 as int64).
cumsum, cumprod, argmax, argmin = math.cumsum, math.cumprod, math.argmax, math.argmin
add_n = math.add_n
reduce_prod, reduce_logsumexp = math.reduce_prod, math.reduce_logsumexp  # top level in TF too
# TF's top-level constructions and norms (tf.linalg.eye / tf.linalg.norm in TF as well).
linspace, eye, norm, clip_by_norm, clip_by_global_norm, meshgrid = (math.linspace, math.eye, math.norm, math.clip_by_norm,
                                                                    math.clip_by_global_norm, math.meshgrid)
# TF's top-level space/batch rearrangements (tf.nn's, in python/eagerflow/_nn_space_batch.py).
from . import _nn_space_batch as _space_batch  # noqa: E402
space_to_batch = space_to_batch_nd = _space_batch.space_to_batch
batch_to_space = _space_batch.batch_to_space
required_space_to_batch_paddings = _space_batch.required_space_to_batch_paddings
math.approx_max_k, math.approx_min_k = nn.approx_max_k, nn.approx_min_k
# tf.Module, tf.name_scope and tf.Variable (scoped names); tf.config, tf.device, tf.nest, tf.debugging, tf.version.
from ._module import Module, name_scope, Variable, get_current_name_scope, variable_creator_scope  # noqa: E402,F811
from . import config, nest, debugging, version  # noqa: E402
from ._device import device, DeviceSpec  # noqa: E402,F811
from .debugging import assert_equal, assert_less, assert_greater, assert_rank, Assert  # noqa: E402,F811 - TF: top level too
__version__ = version.VERSION  # TF's API level: see ef.version
# TF's higher-order functions and tf.TensorArray (python/eagerflow/_functional_ops.py,
# _tensor_array.py); while_loop with TF's signature over nested loop variables and TensorArrays
# (_control_flow.py); ef.scan takes TF's tf.scan calls beside JAX's (see _functional_ops.py).
from ._functional_ops import map_fn, foldl, foldr, scan, vectorized_map, py_function, numpy_function  # noqa: E402,F811
from ._tensor_array import TensorArray  # noqa: E402
from ._control_flow import while_loop  # noqa: E402,F811
from . import autograph, _tensor_mod  # noqa: E402,F401 - ef.autograph, as tf.autograph; Tensor % and //
from . import distribute  # noqa: E402 - tf.distribute over ef.dist (python/eagerflow/_distribute.py)
from . import profiler  # noqa: E402,F401 - ef.profiler, as tf.profiler (experimental.start/stop, Profile, Trace)
from . import compat  # noqa: E402,F401 - ef.compat, as tf.compat (v1: only what eager TF 2 keeps; v2: eagerflow)
from . import types  # noqa: E402,F401 - ef.types, as tf.types (experimental.TraceType: the tracing protocol)
from ._einsum import einsum  # noqa: E402,F811 - diagonals (a label repeated in a term) as TF's
from . import _numpy_interop  # noqa: E402,F401 - ndarray (op) tensor gives a tensor, as TF's
from . import autodiff  # noqa: E402 - tf.autodiff: GradientTape, ForwardAccumulator
from . import _variable_assign  # noqa: E402,F401 - Variable.assign*: TF's signature and shape error
from . import _symbolic_errors, _tensor_ref  # noqa: E402,F401 - h-guides3: TF's classes for symbolic tensors misused (AttributeError...); tensor.ref(), compat.v1 tensor equality
