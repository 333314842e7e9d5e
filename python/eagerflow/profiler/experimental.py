"""tf.profiler.experimental: a profile of what a program did between start(logdir) and stop(),
written as a trace that Chrome's trace viewer, Perfetto and TensorBoard's profile plugin open:
logdir/plugins/profile/<run>/<host>.trace.json.gz, the `traceEvents` JSON format.

Recorded from Python: every ef.function call (one event: a trace, with its reason and how long
tracing took, or a replay of its graph), each element a tf.data iterator hands out (the wait
for the input pipeline), Trace annotations (`with Trace("train", step_num=3)`),
and with ProfilerOptions(python_tracer_level=1) every Python function call. Op-level timings
inside the C++ core are not recorded: the core has no timing hook yet."""
import collections as _collections
import datetime as _datetime
import gzip as _gzip
import json as _json
import os as _os
import socket as _socket
import sys as _sys
import threading as _threading
import time as _time

from .. import _data_iterators, _function, errors

__all__ = ["Profile", "ProfilerOptions", "Trace", "start", "stop"]


class ProfilerOptions(_collections.namedtuple(
        "ProfilerOptions", ["host_tracer_level", "python_tracer_level", "device_tracer_level", "delay_ms"])):
    """What to record: host_tracer_level 0 (nothing), 1 (Trace annotations), 2 (and ef.function
    calls, the default) or 3; python_tracer_level 1 records Python function calls;
    device_tracer_level is accepted (eagerflow runs on the CPU here); delay_ms delays the start."""

    def __new__(cls, host_tracer_level=2, python_tracer_level=0, device_tracer_level=1, delay_ms=None):
        return super().__new__(cls, host_tracer_level, python_tracer_level, device_tracer_level, delay_ms)


_lock = _threading.Lock()
_session = None  # the running profile


class _Session:
    def __init__(self, logdir, options):
        self.logdir, self.options = str(logdir), options
        self.events = []
        self.pid = _os.getpid()
        self.begin_ns = _time.perf_counter_ns() + int((options.delay_ms or 0) * 1_000_000)
        self.start_wall = _datetime.datetime.now()

    def add(self, name, cat, start_ns, end_ns, args=None, tid=None):
        if start_ns < self.begin_ns:
            return
        event = {"name": name, "cat": cat, "ph": "X", "pid": self.pid, "tid": tid or _threading.get_ident(),
                 "ts": start_ns / 1000.0, "dur": max(end_ns - start_ns, 0) / 1000.0}
        if args:
            event["args"] = args
        with _lock:
            self.events.append(event)


def _on_function_call(function, traces_before, start_ns, end_ns):
    s = _session
    if s is None or s.options.host_tracer_level < 2:
        return
    name = function._core.name
    new = function._core.tracing_count() - traces_before
    if new > 0:
        record = function.traces[-1]
        trace_ns = min(int(record.milliseconds * 1_000_000), end_ns - start_ns)
        s.add(name, "ef.function", start_ns, end_ns,
              {"traced": True, "reason": record.reason, "signature": record.signature, "trace_number": record.number})
        s.add(f"trace {name}", "ef.function.trace", start_ns, start_ns + trace_ns, {"reason": record.reason})
    else:
        s.add(name, "ef.function", start_ns, end_ns, {"traced": False})


def _on_next_element(start_ns, end_ns):
    s = _session
    if s is not None and s.options.host_tracer_level >= 2:
        s.add("Iterator::GetNext", "tf.data", start_ns, end_ns)


def _python_tracer(session):
    """sys.setprofile's hook: one event per Python function call (its code's qualified name)."""
    stacks = _threading.local()

    def hook(frame, event, arg):
        if event == "call":
            stack = getattr(stacks, "s", None)
            if stack is None:
                stack = stacks.s = []
            stack.append(_time.perf_counter_ns())
        elif event == "return":
            stack = getattr(stacks, "s", None)
            if stack:
                start = stack.pop()
                code = frame.f_code
                session.add(getattr(code, "co_qualname", code.co_name), "python", start, _time.perf_counter_ns(),
                            {"file": f"{code.co_filename}:{code.co_firstlineno}"})
    return hook


def start(logdir, options=None):
    """Starts profiling into logdir (written at stop()). AlreadyExistsError when a profile is
    already running."""
    global _session
    options = options if options is not None else ProfilerOptions()
    if not isinstance(options, ProfilerOptions):
        raise TypeError(f"options must be a tf.profiler.experimental.ProfilerOptions, got {type(options).__name__}")
    with _lock:
        if _session is not None:
            raise errors.AlreadyExistsError(None, None, "Another profiler is running.")
        _session = _Session(logdir, options)
    _function._call_observers.append(_on_function_call)
    _data_iterators._next_observers.append(_on_next_element)
    if options.python_tracer_level and options.python_tracer_level > 0:
        hook = _python_tracer(_session)
        _sys.setprofile(hook)
        _threading.setprofile(hook)


def stop(save=True):
    """Stops profiling and, with save, writes the trace. UnavailableError when none runs."""
    global _session
    with _lock:
        s, _session = _session, None
    if s is None:
        raise errors.UnavailableError(None, None, "Cannot export profiling results. No profiler is running.")
    if _on_function_call in _function._call_observers:
        _function._call_observers.remove(_on_function_call)
    if _on_next_element in _data_iterators._next_observers:
        _data_iterators._next_observers.remove(_on_next_element)
    if s.options.python_tracer_level and s.options.python_tracer_level > 0:
        _sys.setprofile(None)
        _threading.setprofile(None)
    if save:
        _write(s)


def _write(s):
    """logdir/plugins/profile/<start time>/<host>.trace.json.gz; a run of the same second gets
    a suffix rather than overwriting the earlier one."""
    base = _os.path.join(s.logdir, "plugins", "profile", s.start_wall.strftime("%Y_%m_%d_%H_%M_%S"))
    run, n = base, 1
    while _os.path.exists(run):
        run, n = f"{base}_{n}", n + 1
    _os.makedirs(run)
    host = _socket.gethostname() or "localhost"
    meta = [{"name": "process_name", "ph": "M", "pid": s.pid, "args": {"name": f"{host} (eagerflow, pid {s.pid})"}}]
    for tid in sorted({e["tid"] for e in s.events}):
        meta.append({"name": "thread_name", "ph": "M", "pid": s.pid, "tid": tid,
                     "args": {"name": "main" if tid == _threading.main_thread().ident else f"thread {tid}"}})
    doc = {"displayTimeUnit": "ns", "traceEvents": meta + sorted(s.events, key=lambda e: e["ts"])}
    with _gzip.open(_os.path.join(run, f"{host}.trace.json.gz"), "wt", encoding="utf-8") as f:
        _json.dump(doc, f)


class Profile:
    """`with Profile(logdir):` profiles the block (start on entry, stop on exit)."""

    def __init__(self, logdir, options=None):
        self._logdir, self._options = logdir, options

    def __enter__(self):
        start(self._logdir, self._options)
        return self

    def __exit__(self, *exc):
        stop()
        return False


class Trace:
    """An annotation: `with Trace("train", step_num=step):` marks the block as one event in the
    profile, its keyword arguments as the event's metadata. Free when no profile runs."""

    def __init__(self, name, **kwargs):
        self._name, self._args, self._start = name, dict(kwargs), None

    def __enter__(self):
        if _session is not None and _session.options.host_tracer_level >= 1:
            self._start = _time.perf_counter_ns()
        return self

    def set_metadata(self, **kwargs):
        """More metadata for this event (before the block ends)."""
        self._args.update(kwargs)

    def __exit__(self, *exc):
        s = _session
        if self._start is not None and s is not None:
            s.add(self._name, "Trace", self._start, _time.perf_counter_ns(), {k: _jsonable(v) for k, v in self._args.items()})
        self._start = None
        return False


def _jsonable(v):
    if hasattr(v, "numpy"):
        v = v.numpy()
        v = v.item() if hasattr(v, "item") and getattr(v, "ndim", 1) == 0 else str(v)
    return v if isinstance(v, (bool, int, float, str, type(None))) else str(v)
