"""ef.keras.optimizers: SGD (momentum, nesterov), Adam, AdamW, RMSprop, over the C++ ones.
learning_rate is a number or a schedule (ef.keras.optimizers.schedules); clipnorm and
global_clipnorm as Keras. By name: get("adam")."""
import types as _types

from .. import _core
from .._training import get_optimizer as get

_t = _core._train
Optimizer = _t.Optimizer
SGD = _t.SGD
Adam = _t.Adam
AdamW = _t.AdamW
RMSprop = _t.RMSprop

schedules = _types.ModuleType("eagerflow.keras.optimizers.schedules")
schedules.LearningRateSchedule = _t.LearningRateSchedule
schedules.ExponentialDecay = _t.ExponentialDecay
schedules.CosineDecay = _t.CosineDecay

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "get", "schedules"]
