"""ef.keras.config: Keras 3's global settings that eagerflow has.

    ef.keras.config.set_dtype_policy("mixed_bfloat16")   # = mixed_precision.set_global_policy
    ef.keras.config.floatx()                              # the global policy's variable dtype

Layers keep NHWC ("channels_last") data (not a setting here). epsilon()/set_epsilon is the fuzz
factor of keras.losses and keras.metrics; the C++ cross-entropy, KL divergence and Poisson losses
clip with a fixed 1e-7, so after set_epsilon their Python forms serve instead (standalone and in
compile).

backend() is "tensorflow", as keras.backend.backend() (see backend.py for why). set_max_epochs caps
the epochs of every fit (Keras' debugging switch; KERAS_MAX_EPOCHS in the environment sets it at
import).
"""
import os as _os
import warnings as _warnings

from . import mixed_precision

_MAX_EPOCHS = int(_os.environ["KERAS_MAX_EPOCHS"]) if "KERAS_MAX_EPOCHS" in _os.environ else None


def enable_unsafe_deserialization():
    """Keras': lambdas saved in configs (a Lambda layer's function) load from now on, also where
    load_model's safe_mode is left True."""
    from ._safe_mode import enable_unsafe_deserialization as enable
    enable()


def dtype_policy():
    """The global dtype policy (a DTypePolicy), as keras.config.dtype_policy()."""
    return mixed_precision.global_policy()


def set_dtype_policy(policy):
    """keras.config.set_dtype_policy: a policy name ("mixed_bfloat16", "float32", ...), a DTypePolicy or a dtype."""
    mixed_precision.set_global_policy(policy)


def floatx():
    """The dtype new layers make their variables in, as a string ("float32" unless a policy says otherwise)."""
    return str(dtype_policy().variable_dtype)


def set_floatx(value):
    """keras.config.set_floatx for the float dtypes eagerflow has: "float32", "float64" or "bfloat16".

    It sets the global dtype policy to that dtype (Keras 3's default policy is floatx()), so a
    mixed policy set before is replaced."""
    if not isinstance(value, str) or value not in ("float32", "float64", "bfloat16"):
        raise ValueError(f"set_floatx: unknown floatx {value!r}; expected one of 'float32', 'float64', 'bfloat16'")
    mixed_precision.set_global_policy(value)


_EPSILON = 1e-7


def epsilon():
    """The fuzz factor Keras' losses and metrics use (1e-7 unless set_epsilon changed it)."""
    return _EPSILON


def set_epsilon(value):
    """keras.config.set_epsilon: the fuzz factor of later calls of the Python losses and metrics."""
    global _EPSILON
    _EPSILON = float(value)


def image_data_format():
    """eagerflow's image layers take channels last (NHWC), Keras' default."""
    return "channels_last"


def backend():
    """The backend Keras code should take: "tensorflow" (keras.backend.backend())."""
    return "tensorflow"


def max_epochs():
    """The cap on fit's epochs set by set_max_epochs or KERAS_MAX_EPOCHS, or None."""
    return _MAX_EPOCHS


def set_max_epochs(max_epochs):
    """Caps the epochs of every later fit at max_epochs (None: no cap), with a warning when it cuts."""
    global _MAX_EPOCHS
    _MAX_EPOCHS = max_epochs


def _capped_epochs(epochs):
    # fit's epochs under the cap, as Keras' trainer applies it
    if _MAX_EPOCHS and _MAX_EPOCHS < epochs:
        _warnings.warn("Limiting epochs to %d" % _MAX_EPOCHS)
        return _MAX_EPOCHS
    return epochs


__all__ = ["backend", "enable_unsafe_deserialization", "dtype_policy", "set_dtype_policy", "floatx", "set_floatx", "epsilon", "set_epsilon",
           "image_data_format", "max_epochs", "set_max_epochs"]
