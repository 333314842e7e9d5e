"""ef.keras.mixed_precision: Keras' dtype policies (docs/mixed_precision.md).

    ef.keras.mixed_precision.set_global_policy("mixed_bfloat16")

makes layers created afterwards keep float32 variables and compute in bfloat16 (inputs and
variables cast inside each layer call); losses compute in float32, gradients arrive float32 at
the variables, optimizer state and saved weights stay float32. Keep the last softmax in float32
with ``Activation("softmax", dtype="float32")``. On CPUs without native bfloat16 (AVX-512 BF16 /
AMX) the bfloat16 ops convert to float32 in software and run slower than float32. Every layer
kind trains under the policy; a layer's get_config() holds its policy as Keras 3 serializes it
({"module": "keras", "class_name": "DTypePolicy", "config": {"name": ...}, ...}), so a saved model
loads with the policies it was saved with, whatever the global policy is then.
"""
from .. import _core
from .optimizers import LossScaleOptimizer

DTypePolicy = Policy = _core.DTypePolicy


def set_global_policy(policy):
    """Keras' set_global_policy: a policy name ("mixed_bfloat16", "float32", ...), a DTypePolicy or a dtype."""
    _core.set_global_policy(policy)


def global_policy():
    return _core.global_policy()


# Keras 3's newer names for the same two.
set_dtype_policy = set_global_policy
dtype_policy = global_policy

__all__ = ["LossScaleOptimizer", "DTypePolicy", "Policy", "dtype_policy", "global_policy", "set_dtype_policy", "set_global_policy"]
