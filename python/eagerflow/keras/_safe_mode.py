"""Keras 3's safe mode: loading a config that holds Python bytecode (a lambda saved by a Lambda
layer) runs that code, so it is refused unless the caller allows it (load_model(safe_mode=False),
from_config(safe_mode=False) or keras.config.enable_unsafe_deserialization())."""
import contextlib
import threading

_unsafe_everywhere = False
_scopes = threading.local()


def enable_unsafe_deserialization():
    """Keras' keras.config.enable_unsafe_deserialization: lambdas in saved configs load from now on."""
    global _unsafe_everywhere
    _unsafe_everywhere = True


def in_safe_mode():
    """Whether a lambda met while loading must be refused here."""
    if _unsafe_everywhere:
        return False
    stack = getattr(_scopes, "stack", None)
    return stack[-1] if stack else True


@contextlib.contextmanager
def scope(safe_mode):
    """The safe mode a load_model call asked for, while it loads (None: the enclosing one)."""
    stack = getattr(_scopes, "stack", None)
    if stack is None:
        stack = _scopes.stack = []
    stack.append(in_safe_mode() if safe_mode is None else bool(safe_mode))
    try:
        yield
    finally:
        stack.pop()


def refuse_lambda(what):
    raise ValueError(
        f"Requested the deserialization of a Python lambda ({what}). Loading it runs code stored in the file, "
        "so it is refused by default. If you trust the source of the saved model, pass `safe_mode=False` to the "
        "loading function (load_model, from_config), or call `keras.config.enable_unsafe_deserialization()`.")
