"""tf.summary.trace_on / trace_export / trace_off: the graphs of the ef.functions traced while
a trace is on, written for TensorBoard's graph dashboard.

As TF, a graph is collected when it is made: a function already traced before trace_on, called
again, adds nothing. Each trace gives its graph as traced (TensorBoard draws this one) and as it
runs after eagerflow's passes (fusions), the pre- and post-optimization graphs of TF's
RunMetadata."""
import logging as _logging
import threading as _threading

from . import _core, _function
from . import _summary_events as _ev
from . import _summary_graph as _graph
from ._summary_ops import _recording_writer, _resolve_step

_lock = _threading.Lock()
_state = None  # while a trace is on: {"graphs": [(pre, post)], "profiler": bool}


def _log():
    return _logging.getLogger("tensorflow")


def _collect(function, traces_before, start, end):
    new = function._core.tracing_count() - traces_before
    if new <= 0 or _state is None or not _state["graph"]:
        return
    names = list(function._arg_names)
    for cf in function.concrete_functions[-new:]:
        try:
            _state["graphs"].append((_graph.graph_def(cf.traced_graph, names), _graph.graph_def(cf.graph, names)))
        except Exception as e:  # noqa: BLE001 - a graph that cannot be drawn must not fail the user's call
            _log().warning("tf.summary.trace_on: the graph of %s is left out of the trace (%s)", function._core.name, e)


def trace_on(graph=True, profiler=False, profiler_outdir=None):
    """Starts collecting the graphs of the ef.functions traced from now on (and, with
    profiler=True and profiler_outdir, a profile: tf.profiler.experimental.start)."""
    global _state
    if _core._in_trace():
        _log().warning("Cannot enable trace inside a tf.function.")
        return
    with _lock:
        if _state is not None:
            _log().warning("Trace already enabled")
            return
        profiling = False
        if profiler:
            if profiler_outdir is None:
                _log().warning("No `profiler_outdir` passed to trace_on(). Profiler won't be enabled.")
            else:
                from . import profiler as _profiler
                _profiler.experimental.start(profiler_outdir)
                profiling = True
        _state = {"graphs": [], "graph": bool(graph) or profiling, "profiler": profiling}
        _function._call_observers.append(_collect)


def trace_off():
    """Stops the trace and drops what it collected."""
    global _state
    with _lock:
        if _state is None:
            return
        profiling, _state = _state["profiler"], None
        if _collect in _function._call_observers:
            _function._call_observers.remove(_collect)
    if profiling:
        from . import profiler as _profiler
        try:
            _profiler.experimental.stop()
        except Exception as e:  # noqa: BLE001 - as TF: stopping must not lose the trace's end
            _log().warning("Error while stopping profiler: %s", e)


def trace_export(name, step=None, profiler_outdir=None):
    """Writes the collected graphs to the default writer as summary `name` at `step` (or the
    default step), then stops the trace. ValueError when no trace is on, or when a writer is
    set and no step is."""
    if _core._in_trace():
        _log().warning("Cannot export trace inside a tf.function.")
        return
    with _lock:
        if _state is None:
            raise ValueError("Must enable trace before export through tf.summary.trace_on.")
        graphs = list(_state["graphs"])
        profiling = _state["profiler"]
    writer = _recording_writer()
    if writer is not None:
        step = _resolve_step(step)
        # TF's plugin "graph_run_metadata_graph" (graphs only) or, with the profiler on,
        # "graph_run_metadata" (TensorBoard's graph dashboard reads both).
        plugin = "graph_run_metadata" if profiling else "graph_run_metadata_graph"
        proto = _ev.string_tensor_proto([_graph.run_metadata(graphs)], [])
        _ev.append_event(writer, step, [_ev.value(name, proto, _ev.metadata(plugin, b"1"))])
    if profiling and profiler_outdir:
        _log().warning("Ignoring `profiler_outdir` passed to trace_export(). Please pass it to trace_on() instead.")
    trace_off()
