"""ef.keras.callbacks: subclass Callback in Python (Keras' method names; self.model is the
model, self.model.stop_training = True ends fit after the epoch), or use the C++ ones:
EarlyStopping, ModelCheckpoint, CSVLogger, LearningRateScheduler, TerminateOnNaN,
ReduceLROnPlateau, LambdaCallback, BackupAndRestore, TensorBoard.

fit calls on_train_begin/end, on_epoch_begin/end and on_train_batch_begin/end (or
on_batch_begin/end); evaluate and predict call no callbacks. Logs are dicts of floats."""
from .. import _core
from .._training import History, _positional_count  # noqa: F401

_t = _core._train
EarlyStopping = _t.EarlyStopping
ModelCheckpoint = _t.ModelCheckpoint
CSVLogger = _t.CSVLogger
TerminateOnNaN = _t.TerminateOnNaN  # TerminateOnNaN(raise_error=False), as Keras 3
ReduceLROnPlateau = _t.ReduceLROnPlateau


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


__all__ = ["BackupAndRestore", "Callback", "CSVLogger", "EarlyStopping", "History", "LambdaCallback",
           "LearningRateScheduler", "ModelCheckpoint", "ReduceLROnPlateau", "TensorBoard", "TerminateOnNaN"]
