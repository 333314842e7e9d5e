"""tf.autograph.experimental."""
from ._api import do_not_convert  # noqa: F401
