"""tf.train.CheckpointManager: numbered checkpoints in a directory, the oldest deleted past
max_to_keep, recorded in the directory's `checkpoint` state file (TF's text format)."""
import os
import time

from . import _checkpoint_io as _io


class CheckpointManager:
    """CheckpointManager(checkpoint, directory, max_to_keep, keep_checkpoint_every_n_hours=None,
    checkpoint_name='ckpt', step_counter=None, checkpoint_interval=None, init_fn=None)."""

    def __init__(self, checkpoint, directory, max_to_keep, keep_checkpoint_every_n_hours=None, checkpoint_name="ckpt",
                 step_counter=None, checkpoint_interval=None, init_fn=None):
        if not directory:
            raise ValueError("`directory` must be a non-empty path")
        if max_to_keep is not None and max_to_keep <= 0:
            raise ValueError(f"Expected a positive integer or `None` for `max_to_keep`, got {max_to_keep}.")
        if checkpoint_interval is not None and step_counter is None:
            raise ValueError("`step_counter` should be passed if `checkpoint_interval` is not None.")
        self._checkpoint = checkpoint
        self._directory = os.fspath(directory)
        self._max_to_keep = max_to_keep
        self._keep_every_s = None if keep_checkpoint_every_n_hours is None else keep_checkpoint_every_n_hours * 3600.0
        self._prefix = os.path.join(self._directory, checkpoint_name)
        self._step_counter = step_counter
        self._checkpoint_interval = checkpoint_interval
        self._init_fn = init_fn
        self._last_step = None
        state = _io.read_state(self._directory)
        now = time.time()
        if state is None:
            self._latest = None
            self._kept = []  # [(path, timestamp)], oldest first
            self._last_preserved = now
        else:
            self._latest = state["model_checkpoint_path"]
            stamps = state["all_model_checkpoint_timestamps"]
            paths = state["all_model_checkpoint_paths"]
            if len(stamps) != len(paths):
                stamps = [now] * len(paths)
            self._kept = list(zip(paths, stamps))
            self._last_preserved = state["last_preserved_timestamp"] or now

    @property
    def directory(self):
        return self._directory

    @property
    def checkpoint(self):
        return self._checkpoint

    @property
    def checkpoint_interval(self):
        return self._checkpoint_interval

    @property
    def checkpoints(self):
        """The paths of the checkpoints kept, oldest first."""
        return [p for p, _ in self._kept]

    @property
    def latest_checkpoint(self):
        """The newest checkpoint's path, or None."""
        return self._latest if self._latest is not None and _io.exists(self._latest) else None

    def _sweep(self):
        if self._max_to_keep is None:
            return
        while len(self._kept) > self._max_to_keep:
            path, stamp = self._kept.pop(0)
            if self._keep_every_s is not None and stamp - self._last_preserved >= self._keep_every_s:
                self._last_preserved = stamp  # kept for ever: out of the list, never deleted
                continue
            _io.remove(path)

    def save(self, checkpoint_number=None, check_interval=True, options=None):
        """Saves `<directory>/<checkpoint_name>-<n>` (n: checkpoint_number, else the checkpoint's
        save_counter after counting this save); returns the path, or None when checkpoint_interval
        steps have not passed."""
        if self._checkpoint_interval is not None and check_interval:
            step = int(self._step_counter.numpy() if hasattr(self._step_counter, "numpy") else self._step_counter)
            if self._last_step is not None and step < self._last_step + self._checkpoint_interval:
                return None
            self._last_step = step
        counter = self._checkpoint.save_counter
        counter.assign_add(1)
        if checkpoint_number is None:
            checkpoint_number = int(counter.numpy())
        elif hasattr(checkpoint_number, "numpy"):
            checkpoint_number = int(checkpoint_number.numpy())
        path = self._checkpoint.write(f"{self._prefix}-{int(checkpoint_number)}", options)
        now = time.time()
        self._kept = [(p, t) for p, t in self._kept if p != path] + [(path, now)]
        self._sweep()
        self._latest = path
        # the state file last: a crash before it leaves the previous checkpoint the latest
        _io.write_state(self._directory, path, self.checkpoints, [t for _, t in self._kept], self._last_preserved)
        return path

    def restore_or_initialize(self):
        """Restores the latest checkpoint and returns its path; with none, runs init_fn and returns None."""
        if self.latest_checkpoint is not None:
            self._checkpoint.restore(self.latest_checkpoint)
            return self.latest_checkpoint
        if self._init_fn is not None:
            self._init_fn()
        return None

    def sync(self):
        """Waits for an asynchronous save (saves here are synchronous): nothing to do."""
        return None
