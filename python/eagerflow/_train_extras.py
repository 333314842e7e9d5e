"""tf.train's smaller pieces: CheckpointOptions, get_checkpoint_state, checkpoints_iterator,
ExponentialMovingAverage, Coordinator, TrackableView."""
import contextlib
import os
import sys
import threading
import time

from . import _checkpoint_io as _io
from . import _core
from . import _trackable as _t


class CheckpointOptions:
    """Options of Checkpoint.save/write/restore. Saves here are synchronous (what an asynchronous
    save promises once sync() returns) and on the host (no io device to choose); write callbacks
    run after each write, and experimental_skip_slot_variables leaves optimizer slots out."""

    def __init__(self, experimental_io_device=None, experimental_enable_async_checkpoint=False,
                 experimental_write_callbacks=None, enable_async=False, experimental_sharding_callback=None,
                 experimental_skip_slot_variables=False):
        if experimental_sharding_callback is not None:
            raise NotImplementedError("CheckpointOptions: sharding callbacks are not supported (one data file per "
                                      "checkpoint)")
        self.experimental_io_device = experimental_io_device
        self.experimental_enable_async_checkpoint = experimental_enable_async_checkpoint
        self.enable_async = enable_async
        self.experimental_write_callbacks = list(experimental_write_callbacks or [])
        self.experimental_sharding_callback = None
        self.experimental_skip_slot_variables = experimental_skip_slot_variables


class CheckpointState:
    """The `checkpoint` state file's fields (TF's CheckpointState message)."""

    def __init__(self, state):
        self.model_checkpoint_path = state["model_checkpoint_path"]
        self.all_model_checkpoint_paths = list(state["all_model_checkpoint_paths"])
        self.all_model_checkpoint_timestamps = list(state["all_model_checkpoint_timestamps"])
        self.last_preserved_timestamp = state["last_preserved_timestamp"] or 0.0

    def __repr__(self):
        lines = [f'model_checkpoint_path: "{self.model_checkpoint_path}"']
        lines += [f'all_model_checkpoint_paths: "{p}"' for p in self.all_model_checkpoint_paths]
        lines += [f"all_model_checkpoint_timestamps: {t!r}" for t in self.all_model_checkpoint_timestamps]
        if self.last_preserved_timestamp:
            lines.append(f"last_preserved_timestamp: {self.last_preserved_timestamp!r}")
        return "\n".join(lines) + "\n"

    __str__ = __repr__


def get_checkpoint_state(checkpoint_dir, latest_filename=None):
    """The directory's checkpoint state (paths joined to the directory), or None without one."""
    state = _io.read_state(os.fspath(checkpoint_dir), latest_filename or "checkpoint")
    return None if state is None else CheckpointState(state)


def checkpoints_iterator(checkpoint_dir, min_interval_secs=0, timeout=None, timeout_fn=None):
    """Yields each new latest checkpoint of the directory as it appears, at most one per
    min_interval_secs; after `timeout` seconds without one, stops (or asks timeout_fn: True stops)."""
    from ._checkpoint import latest_checkpoint
    last = None
    while True:
        start = time.time()
        path = None
        while True:
            path = latest_checkpoint(checkpoint_dir)
            if path is not None and path != last:
                break
            if timeout is not None and time.time() - start + 1 > timeout:
                path = None
                break
            time.sleep(1)
        if path is None:
            if timeout_fn is None or timeout_fn():
                return
            continue
        last = path
        yielded_at = time.time()
        yield path
        wait = min_interval_secs - (time.time() - yielded_at)
        if wait > 0:
            time.sleep(wait)


class ExponentialMovingAverage:
    """Shadow variables following variables: shadow -= (1 - decay) * (shadow - variable) at each
    apply; with num_updates, decay is min(decay, (1 + num_updates) / (10 + num_updates))."""

    def __init__(self, decay, num_updates=None, zero_debias=False, name="ExponentialMovingAverage"):
        self._decay = decay
        self._num_updates = num_updates
        self._zero_debias = zero_debias
        self._name = name
        self._averages = {}

    @property
    def name(self):
        return self._name

    def average_name(self, var):
        return _t.short_name(var) + "/" + self._name

    def average(self, var):
        """The shadow variable of var, or None before apply([var])."""
        return self._averages.get(_t.identity(var)) if _t.is_variable(var) else None

    def _decay_value(self):
        decay = _core.convert_to_tensor(self._decay, dtype=_core.DType.float32) if not isinstance(
            self._decay, _core.Tensor) else self._decay
        if self._num_updates is not None:
            n = _core.cast(self._num_updates.value() if _t.is_variable(self._num_updates)
                           else _core.convert_to_tensor(self._num_updates), _core.DType.float32)
            decay = _core.minimum(decay, (1.0 + n) / (10.0 + n))
        return decay

    def apply(self, var_list=None):
        """Creates the shadows of new variables (their current values), then moves every shadow."""
        if var_list is None:
            raise ValueError("ExponentialMovingAverage.apply: give the variables (var_list)")
        var_list = list(var_list)
        for v in var_list:
            if not _t.is_variable(v):
                raise TypeError("tf.train.ExponentialMovingAverage does not support non-Variable tensors when "
                                "eager execution is enabled.")
            if v.dtype.name not in ("float16", "bfloat16", "float32", "float64"):
                raise TypeError(f"The variables must be half, float, or double: {v.name}")
        for v in var_list:
            if _t.identity(v) not in self._averages:
                self._averages[_t.identity(v)] = _core.Variable(v.value(), trainable=False,
                                                                 name=self.average_name(v))
        decay = self._decay_value()
        for v in var_list:
            shadow = self._averages[_t.identity(v)]
            d = _core.cast(decay, shadow.dtype)
            shadow.assign_sub((1.0 - d) * (shadow.value() - v.value()))
        return None

    def variables_to_restore(self, moving_avg_variables=None):
        raise NotImplementedError("ExponentialMovingAverage.variables_to_restore: a name map for TF1's Saver; "
                                  "not supported")


class Coordinator:
    """Stops a set of threads together: request_stop (from any thread, optionally with the
    exception that caused it), should_stop, and join, which re-raises that exception."""

    def __init__(self, clean_stop_exception_types=None):
        from . import errors
        self._clean = tuple(clean_stop_exception_types if clean_stop_exception_types is not None
                            else (errors.OutOfRangeError,))
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._exc_info = None
        self._threads = set()
        self._joined = False

    def request_stop(self, ex=None):
        with self._lock:
            if ex is not None and self._exc_info is None:
                info = ex if isinstance(ex, tuple) else (type(ex), ex, ex.__traceback__)
                if not issubclass(info[0], self._clean):
                    self._exc_info = info
            self._stop.set()

    def clear_stop(self):
        with self._lock:
            self._joined = False
            self._exc_info = None
            self._stop.clear()

    def should_stop(self):
        return self._stop.is_set()

    @contextlib.contextmanager
    def stop_on_exception(self):
        try:
            yield
        except BaseException:  # noqa: BLE001 - TF's: any exception stops the threads
            self.request_stop(ex=sys.exc_info()[1])

    def wait_for_stop(self, timeout=None):
        return self._stop.wait(timeout)

    def register_thread(self, thread):
        with self._lock:
            self._threads.add(thread)

    def join(self, threads=None, stop_grace_period_secs=120, ignore_live_threads=False):
        """Waits for the threads (registered and given) once a stop is requested; raises the
        exception given to request_stop, or RuntimeError when threads outlive the grace period."""
        threads = set(threads or []) | set(self._threads)
        while any(t.is_alive() for t in threads) and not self.wait_for_stop(1.0):
            pass
        deadline = time.time() + stop_grace_period_secs
        for t in threads:
            t.join(max(0.0, deadline - time.time()))
        alive = [t.name for t in threads if t.is_alive()]
        with self._lock:
            self._joined = True
            self._threads = set()
            info = self._exc_info
        if info is not None:
            raise info[1].with_traceback(info[2])
        if alive and not ignore_live_threads:
            raise RuntimeError(f"Coordinator stopped with threads still running: {' '.join(alive)}")

    @property
    def joined(self):
        return self._joined

    def raise_requested_exception(self):
        with self._lock:
            if self._exc_info is not None:
                raise self._exc_info[1].with_traceback(self._exc_info[2])


class TrackableView:
    """The object graph a checkpoint of root would save: children(obj) by name, descendants()."""

    def __init__(self, root):
        self._root = root

    @property
    def root(self):
        return self._root

    @classmethod
    def children(cls, obj, save_type="checkpoint", **kwargs):
        """{name: child} of a trackable object."""
        return dict(_t.children(obj))

    def descendants(self):
        """Every object reachable from root, root first, breadth-first."""
        return [obj for obj, _ in _t.walk(self._root)[0]]
