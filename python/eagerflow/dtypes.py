"""ef.dtypes, as tf.dtypes: the dtypes, as_dtype, cast and saturate_cast."""
from . import _core
from ._core import DType, cast  # noqa: F401
from ._tf_misc import as_dtype, saturate_cast  # noqa: F401

float16 = half = DType.float16
bfloat16 = DType.bfloat16
float32 = DType.float32
float64 = double = DType.float64
int8, int16, int32, int64 = DType.int8, DType.int16, DType.int32, DType.int64
uint8, uint16, uint32, uint64 = DType.uint8, DType.uint16, DType.uint32, DType.uint64
bool = DType.bool  # noqa: A001 - TF's tf.dtypes.bool
complex64, complex128 = DType.complex64, DType.complex128
string = DType.string
del _core
