"""The helpers that `from module import *` brings along and keras.ops must not show."""
_HELPERS = ("tensor", "promote", "dtype_of", "float_dtype", "result_type", "standardize_dtype", "floatx", "as_dtype")


def clean(namespace):
    for name in _HELPERS:
        namespace.pop(name, None)
