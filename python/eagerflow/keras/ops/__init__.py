"""ef.keras.ops: Keras 3's backend-neutral ops (keras.ops) on eagerflow's ops.

NumPy's names, arguments and semantics with Keras' dtype rules (JAX-style promotion, weak Python
scalars, float-valued ops of integers in floatx). Each works on eagerflow tensors, NumPy arrays
and Python values, eagerly, inside ef.function, and on Keras tensors of the functional API (the
ops record into the model like any eagerflow op). What is missing, and why: docs/keras_coverage.md.
"""
from . import image, linalg, nn  # noqa: F401
from . import numpy  # noqa: F401
from ._arrays import *  # noqa: F401,F403
from ._elementwise import *  # noqa: F401,F403
from ._reductions import *  # noqa: F401,F403
from ._windows import bartlett, blackman, hamming, hanning, kaiser  # noqa: F401
from ._vectorize import istft, stft, vectorize  # noqa: F401
from ._einops import rearrange  # noqa: F401
from .core import (associative_scan, cast, cond, convert_to_numpy, convert_to_tensor, custom_gradient, dtype,  # noqa: F401
                   extract_sequences, fft, fft2, fori_loop, ifft2, in_top_k, irfft, is_tensor, jvp, map, polar, rfft,
                   saturate_cast, scan, scatter, scatter_update, segment_max, segment_min, segment_prod, segment_sum,
                   shape, slice, slice_update, stop_gradient, switch, top_k, unstack, vectorized_map, view_as_complex,
                   view_as_real, while_loop)
from .linalg import (cholesky, cholesky_inverse, det, eig, eigh, inv, logdet, lstsq, lu_factor, matrix_rank, norm,  # noqa: F401
                     pinv, qr, slogdet, solve, solve_triangular, svd)
from .nn import *  # noqa: F401,F403
from .nn import fold, unfold  # noqa: F401
from .core import map as map  # noqa: F401,A001 - keras.ops.map shadows the builtin on purpose
from ._arrays import where, sort  # noqa: F401

# `from x import *` leaves out nothing here but private names; the names shadowing builtins are explicit.
from ._elementwise import abs, round  # noqa: F401,F811,A004
from ._reductions import all, any, max, min, sum  # noqa: F401,F811,A004
from .core import slice  # noqa: F401,F811,A004
from ._helpers_cleanup import clean as _clean  # noqa: E402

_clean(globals())
