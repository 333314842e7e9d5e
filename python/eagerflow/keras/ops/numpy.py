"""keras.ops.numpy: the NumPy-style half of keras.ops (the same functions as ef.keras.ops.<name>)."""
from ._arrays import *  # noqa: F401,F403
from ._elementwise import *  # noqa: F401,F403
from ._reductions import *  # noqa: F401,F403
from ._windows import bartlett, blackman, hamming, hanning, kaiser  # noqa: F401
from ._elementwise import abs, round  # noqa: F401,F811,A004
from ._reductions import all, any, max, min, sum  # noqa: F401,F811,A004
from .linalg import logdet, norm, slogdet  # noqa: F401
from ._vectorize import vectorize  # noqa: F401
from ._helpers_cleanup import clean as _clean

_clean(globals())
