"""The `ag__` namespace converted code refers to (bound into each converted function's closure)."""
from ._api import converted_call  # noqa: F401
from ._log import Where  # noqa: F401
from ._loops import for_iterable, for_stmt, while_stmt  # noqa: F401
from ._operators import (Undefined, UndefinedReturnValue, and_, if_exp, if_stmt, not_, or_, retval)  # noqa: F401


def ld_attr(obj, attr):
    """obj.attr for a state read, Undefined where it does not exist yet."""
    if isinstance(obj, (Undefined, UndefinedReturnValue)):  # the object itself is made in the statement
        return Undefined(attr)
    try:
        return getattr(obj, attr)
    except AttributeError:
        return Undefined(attr)


def st_attr(obj, attr, value):
    if not isinstance(value, (Undefined, UndefinedReturnValue)) and not isinstance(obj, (Undefined, UndefinedReturnValue)):
        setattr(obj, attr, value)
