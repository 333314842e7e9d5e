"""ef.keras.callbacks: subclass Callback in Python (Keras' method names; self.model is the
model, self.model.stop_training = True ends fit after the epoch), or use the C++ ones:
EarlyStopping, ModelCheckpoint, CSVLogger, LearningRateScheduler, TerminateOnNaN.

fit calls on_train_begin/end, on_epoch_begin/end and on_train_batch_begin/end (or
on_batch_begin/end); evaluate and predict call no callbacks. Logs are dicts of floats."""
from .. import _core
from .._training import History, _positional_count  # noqa: F401

_t = _core._train
EarlyStopping = _t.EarlyStopping
ModelCheckpoint = _t.ModelCheckpoint
CSVLogger = _t.CSVLogger
TerminateOnNaN = _t.TerminateOnNaN


class Callback(_t.Callback):
    """Override what you need: on_train_begin(logs), on_train_end(logs), on_epoch_begin(epoch,
    logs), on_epoch_end(epoch, logs), on_train_batch_begin(batch, logs),
    on_train_batch_end(batch, logs). They run on fit's thread with the GIL held."""

    model = None
    params = {}

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params


class LearningRateScheduler(_t._LearningRateScheduler):
    """Sets the learning rate at each epoch's start: schedule(epoch, lr) -> new rate (or
    schedule(epoch)), as Keras."""

    def __init__(self, schedule, verbose=0):
        takes_rate = _positional_count(schedule) >= 2
        self.schedule = schedule
        self.verbose = verbose

        def rate(epoch, lr):
            new = float(schedule(epoch, lr) if takes_rate else schedule(epoch))
            if verbose:
                print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to {new}.")
            return new

        super().__init__(rate)


__all__ = ["Callback", "CSVLogger", "EarlyStopping", "History", "LearningRateScheduler", "ModelCheckpoint",
           "TerminateOnNaN"]
