"""ef.errors: TF's exception classes (tf.errors) for the errors eagerflow raises as them.

OpError is ef.Error, the base of every error the C++ library raises; InvalidArgumentError is
the one for an argument's value an op refuses (ef.range with delta 0)."""
from ._core import Error as OpError  # noqa: F401
from ._core import InvalidArgumentError  # noqa: F401
