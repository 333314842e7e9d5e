"""ef.keras.config: Keras 3's global settings that eagerflow has.

    ef.keras.config.set_dtype_policy("mixed_bfloat16")   # = mixed_precision.set_global_policy
    ef.keras.config.floatx()                              # the global policy's variable dtype

Layers keep NHWC ("channels_last") data, and losses and metrics clip with Keras' epsilon 1e-7;
neither is a setting here, so only their readers exist.
"""
from . import mixed_precision


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


def epsilon():
    """The fuzz factor Keras' losses and metrics use: 1e-7."""
    return 1e-7


def image_data_format():
    """eagerflow's image layers take channels last (NHWC), Keras' default."""
    return "channels_last"


__all__ = ["dtype_policy", "set_dtype_policy", "floatx", "set_floatx", "epsilon", "image_data_format"]
