"""ef.keras.optimizers: SGD (momentum, nesterov), Adam, AdamW, RMSprop, over the C++ ones.
learning_rate is a number or a schedule (ef.keras.optimizers.schedules); clipnorm and
global_clipnorm as Keras. By name: get("adam").

Keras 3's custom-loop API: optimizer.apply(grads, trainable_variables) beside
apply_gradients(zip(grads, variables)); optimizer.build(variables) names the variables that
apply(grads) updates when it is given no variables (the slots are still made on the first step,
so .variables lists them from then on)."""
import types as _types

from .. import _core
from .._training import get_optimizer as get

_t = _core._train
Optimizer = _t.Optimizer
SGD = _t.SGD
Adam = _t.Adam
AdamW = _t.AdamW
RMSprop = _t.RMSprop



def _apply(self, grads, trainable_variables=None):
    """Keras 3's apply: one step of grads over trainable_variables (in the same order), or over
    the variables given to build(); a None gradient skips its variable."""
    grads = list(grads)
    if trainable_variables is None:
        trainable_variables = _built_variables.get(id(self), (None, None))[1]
        if trainable_variables is None:
            raise ValueError("When passing `grads` without `variables`, the optimizer must already be built on a "
                             "list of variables. Call `optimizer.build(trainable_variables)` first.")
    trainable_variables = list(trainable_variables)
    if len(grads) != len(trainable_variables):
        raise ValueError(f"Argument `grads` and `trainable_variables` must have the same length: got {len(grads)} "
                         f"gradients and {len(trainable_variables)} variables")
    self.apply_gradients(zip(grads, trainable_variables))


# build()'s variables by optimizer. The C++ optimizers take no attributes and no weak
# references: the entry holds the optimizer itself, so that its id is not reused by another.
_built_variables = {}


def _build(self, variables):
    """Keras 3's build(variables): the variables that apply(grads) updates."""
    _built_variables[id(self)] = (self, list(variables))


def _built(self):
    return id(self) in _built_variables


# On the C++ base, so that optimizers made by name in compile have them too.
Optimizer.apply = _apply
Optimizer.build = _build
Optimizer.built = property(_built)

schedules = _types.ModuleType("eagerflow.keras.optimizers.schedules")
schedules.LearningRateSchedule = _t.LearningRateSchedule
schedules.ExponentialDecay = _t.ExponentialDecay
schedules.CosineDecay = _t.CosineDecay

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "get", "schedules"]
