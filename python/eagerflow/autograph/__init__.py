"""ef.autograph, as tf.autograph: ef.function converts Python control flow on tensors (`if`,
`while`, `for` over tf.range / a tensor, `break`, `continue`, `return`, `and`/`or`/`not`)
into ef.cond / ef.while_loop at trace time (autograph=True, the default). See docs/autograph.md."""
from ._api import to_code, to_graph  # noqa: F401
from ._log import set_verbosity  # noqa: F401
from . import experimental  # noqa: F401


def trace(*args):
    """tf.autograph.trace: prints its arguments when the code runs in Python (at trace time
    inside ef.function), as print does."""
    print(*args)
