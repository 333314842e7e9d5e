"""ef.keras.callbacks: subclass Callback in Python (Keras' method names; self.model is the
model, self.model.stop_training = True ends fit after the epoch), or use the C++ ones:
EarlyStopping, ModelCheckpoint, CSVLogger, LearningRateScheduler, TerminateOnNaN,
ReduceLROnPlateau, LambdaCallback, BackupAndRestore, TensorBoard, ProgbarLogger.

As Keras 3: fit calls on_train_begin/end, on_epoch_begin/end, on_train_batch_begin/end (or
on_batch_begin/end) and, for validation data, on_test_begin/end and on_test_batch_begin/end;
evaluate calls the on_test_* hooks and predict the on_predict_* ones. fit adds a History (and a
ProgbarLogger when verbose is not 0) unless its callbacks hold one. Logs are dicts of floats.
CallbackList calls a list of callbacks, for custom loops."""
from .. import _core
from .._training import Callback, History, _positional_count  # noqa: F401
from ._remote_monitor import RemoteMonitor  # noqa: F401
from ._swap_ema_weights import SwapEMAWeights  # noqa: F401

_t = _core._train
EarlyStopping = _t.EarlyStopping
from ._model_checkpoint import ModelCheckpoint  # noqa: E402 - the C++ one; makes its file's folder, as Keras
CSVLogger = _t.CSVLogger
TerminateOnNaN = _t.TerminateOnNaN  # TerminateOnNaN(raise_error=False), as Keras 3
ReduceLROnPlateau = _t.ReduceLROnPlateau
# Keras' ProgbarLogger(): the progress bar (verbose, epochs and steps come from fit's params).
ProgbarLogger = _t.ProgbarLogger


class CallbackList(Callback):
    """Keras' CallbackList: calls each callback's hook in order (a custom training loop, or fit's
    callbacks= argument). add_history / add_progbar append a History / ProgbarLogger unless the
    list holds one; params (verbose, epochs, steps) go to every callback (set_params)."""

    def __init__(self, callbacks=None, add_history=False, add_progbar=False, model=None, **params):
        super().__init__()
        self.callbacks = list(callbacks) if callbacks else []
        for cb in self.callbacks:
            if not isinstance(cb, _t.Callback):
                raise TypeError(f"callbacks must be ef.keras.callbacks.Callback objects, got {cb!r}")
        self._history = next((cb for cb in self.callbacks if isinstance(cb, History)), None)
        self._progbar = next((cb for cb in self.callbacks if isinstance(cb, ProgbarLogger)), None)
        if self._history is None and add_history:
            self._history = History()
            self.callbacks.append(self._history)
        if self._progbar is None and add_progbar:
            self._progbar = ProgbarLogger()
            self.callbacks.append(self._progbar)
        self.set_model(model)
        self.set_params(params)

    def append(self, callback):
        self.callbacks.append(callback)

    def set_model(self, model):
        if model is None:
            return
        self.model = model
        if self._history is not None:
            model.history = self._history
        for cb in self.callbacks:
            if hasattr(cb, "set_model"):
                cb.set_model(model)
            cb._ef_set_model(model)

    def set_params(self, params):
        self.params = params
        if not params:
            return
        verbose = params.get("verbose", 1)
        verbose = 1 if verbose == "auto" else int(verbose)
        for cb in self.callbacks:
            if hasattr(cb, "set_params"):
                cb.set_params(params)
            cb._ef_set_params(verbose, int(params.get("epochs", 1)), params.get("steps"))

    def __iter__(self):
        return iter(self.callbacks)

    def _each(self, hook, *args):
        for cb in self.callbacks:
            getattr(cb, hook)(*args)

    def on_train_begin(self, logs=None):
        self._each("on_train_begin", logs)

    def on_train_end(self, logs=None):
        self._each("on_train_end", logs)

    def on_epoch_begin(self, epoch, logs=None):
        self._each("on_epoch_begin", epoch, logs)

    def on_epoch_end(self, epoch, logs=None):
        self._each("on_epoch_end", epoch, logs)

    def on_batch_begin(self, batch, logs=None):
        self._each("on_batch_begin", batch, logs)

    def on_batch_end(self, batch, logs=None):
        self._each("on_batch_end", batch, logs)

    def on_train_batch_begin(self, batch, logs=None):
        self._each("on_train_batch_begin", batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        self._each("on_train_batch_end", batch, logs)

    def on_test_begin(self, logs=None):
        self._each("on_test_begin", logs)

    def on_test_end(self, logs=None):
        self._each("on_test_end", logs)

    def on_test_batch_begin(self, batch, logs=None):
        self._each("on_test_batch_begin", batch, logs)

    def on_test_batch_end(self, batch, logs=None):
        self._each("on_test_batch_end", batch, logs)

    def on_predict_begin(self, logs=None):
        self._each("on_predict_begin", logs)

    def on_predict_end(self, logs=None):
        self._each("on_predict_end", logs)

    def on_predict_batch_begin(self, batch, logs=None):
        self._each("on_predict_batch_begin", batch, logs)

    def on_predict_batch_end(self, batch, logs=None):
        self._each("on_predict_batch_end", batch, logs)


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


class LambdaCallback(_t._LambdaCallback):
    """A callback made of functions, as Keras: on_epoch_begin(epoch, logs), on_epoch_end(epoch,
    logs), on_train_begin(logs), on_train_end(logs), on_train_batch_begin(batch, logs),
    on_train_batch_end(batch, logs) (on_batch_begin/on_batch_end are the same). Other keyword
    arguments become attributes (Keras' **kwargs)."""

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_train_begin=None, on_train_end=None,
                 on_train_batch_begin=None, on_train_batch_end=None, **kwargs):
        if on_train_batch_begin is None:
            on_train_batch_begin = kwargs.pop("on_batch_begin", None)
        if on_train_batch_end is None:
            on_train_batch_end = kwargs.pop("on_batch_end", None)
        super().__init__(on_epoch_begin, on_epoch_end, on_train_begin, on_train_end, on_train_batch_begin,
                         on_train_batch_end)
        self.__dict__.update(kwargs)


class BackupAndRestore(_t._BackupAndRestore):
    """Keras' BackupAndRestore: backs up the training state (weights, optimizer, random state,
    epoch) to backup_dir at the end of each epoch, atomically; a fit that finds a backup
    restores it and continues at the next epoch, ending with the weights an uninterrupted run
    has, bit for bit; a completed fit deletes the backup (delete_checkpoint). The model must be
    built before fit when a backup exists. save_freq: "epoch" only (backups every N batches
    would re-run the interrupted epoch and could not end where an uninterrupted run ends);
    double_checkpoint is unneeded: a backup is replaced atomically and carries a checksum."""

    def __init__(self, backup_dir, save_freq="epoch", double_checkpoint=False, delete_checkpoint=True):
        if not backup_dir:
            raise ValueError("Empty `backup_dir` argument passed")
        if double_checkpoint:
            raise ValueError("BackupAndRestore: double_checkpoint=True is not supported (each backup is written "
                             "atomically and checked by a checksum when restored)")
        if save_freq is False:
            raise ValueError("BackupAndRestore: save_freq=False (preemption checkpointing) is not supported")
        if save_freq != "epoch" and not isinstance(save_freq, int):
            raise ValueError(f"Invalid value for argument `save_freq`. Received: save_freq={save_freq}. "
                             "Expected either 'epoch' or an integer value.")
        super().__init__(str(backup_dir), str(save_freq), bool(delete_checkpoint))
        self.save_freq = save_freq
        self.double_checkpoint = double_checkpoint
        self.delete_checkpoint = delete_checkpoint


class TensorBoard(_t._TensorBoard):
    """Keras' TensorBoard callback (docs/tensorboard.md): runs log_dir/train and
    log_dir/validation; epoch_<metric> scalars and epoch_learning_rate at each epoch's end,
    batch_<metric> every update_freq batches ("batch": every batch; "epoch": none), weight
    histograms every histogram_freq epochs, and with write_graph the traced train step's graph
    with each trace's reason as text. write_images, profiling and embeddings are not supported."""

    def __init__(self, log_dir="logs", histogram_freq=0, write_graph=True, write_images=False,
                 write_steps_per_second=False, update_freq="epoch", profile_batch=0, embeddings_freq=0,
                 embeddings_metadata=None):
        for flag, value in (("write_images", write_images), ("write_steps_per_second", write_steps_per_second),
                            ("profile_batch", profile_batch), ("embeddings_freq", embeddings_freq),
                            ("embeddings_metadata", embeddings_metadata)):
            if value:
                raise ValueError(f"TensorBoard: {flag}={value!r} is not supported")
        if isinstance(update_freq, bool) or not isinstance(update_freq, (int, str)):
            raise ValueError(f"TensorBoard: update_freq must be 'epoch', 'batch' or an int, got {update_freq!r}")
        super().__init__(str(log_dir), int(histogram_freq), bool(write_graph), update_freq)
        self.histogram_freq = int(histogram_freq)
        self.write_graph = bool(write_graph)
        self.update_freq = update_freq


__all__ = ["BackupAndRestore", "Callback", "CallbackList", "CSVLogger", "EarlyStopping", "History", "LambdaCallback",
           "LearningRateScheduler", "ModelCheckpoint", "ProgbarLogger", "ReduceLROnPlateau", "RemoteMonitor",
           "SwapEMAWeights", "TensorBoard", "TerminateOnNaN"]
