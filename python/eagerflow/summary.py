"""ef.summary: TensorBoard summaries, as tf.summary.

    writer = ef.summary.create_file_writer("logs/train")
    with writer.as_default():
        ef.summary.scalar("loss", 0.25, step=3)

scalar / histogram / text write to the default writer and return False when there is none.
They are ops with an effect (like ef.print): inside an ef.function they write at every call
of the traced graph, with the writer that was the default when it traced; data and step may
be tensors the graph computes. The files are TensorBoard's (events.out.tfevents.*).

write / image / audio / graph write when called, outside ef.function (_summary_ops);
trace_on / trace_export record the graphs of the functions traced in between (_summary_trace).
record_if gates them all."""

import numpy as _np

from . import _core, _summary_ops
from ._summary_ops import (_NoopWriter, _condition_now, _default_step, _gated, _scoped, audio, experimental, graph, image,
                           record_if, write)
from ._summary_trace import trace_export, trace_off, trace_on

_s = _core._summary
SummaryWriter = _s.SummaryWriter


def _as_default(self, step=None):
    """This writer is the default inside the `with` block (and `step`, an int, tensor or
    variable, the default step)."""
    return _summary_ops.default_writer_scope(self, self, step)


def _set_as_default(self, step=None):
    _summary_ops.make_default(self, step)


SummaryWriter.as_default = _as_default
SummaryWriter.set_as_default = _set_as_default


def _init(self):
    """An eager writer is ready when made (TF's init() does nothing more); a closed one is not."""
    if self.closed:
        raise RuntimeError(f"SummaryWriter for {self.logdir!r} is already closed")


SummaryWriter.init = _init
SummaryWriter.__enter__ = lambda self: self
SummaryWriter.__exit__ = lambda self, *exc: self.close()


def create_file_writer(logdir, max_queue=None, flush_millis=None, filename_suffix=None, name=None, experimental_trackable=False,
                       experimental_mesh=None):
    """A writer of a new event file in logdir (made with its parents). Records are flushed every
    max_queue records (10), flush_millis after the oldest unwritten one (2000), and on flush()
    and close()."""
    return _s.create_file_writer(str(logdir), 10 if max_queue is None else int(max_queue),
                                 2.0 if flush_millis is None else float(flush_millis) / 1000.0,
                                 filename_suffix or "")


def _step(step):
    return _default_step() if step is None else step


def scalar(name, data, step=None, description=None):
    """One number (a Python number or a tensor of one element). step: an int, a tensor, or None
    for the step set with ef.summary.experimental.set_step."""
    return _gated(lambda: _s.scalar(_scoped(name), data, _step(step)))


def histogram(name, data, step=None, buckets=None, description=None):
    """A histogram of the finite values of data in `buckets` (30) equal-width buckets."""
    return _gated(lambda: _s.histogram(_scoped(name), data, _step(step), buckets))


def text(name, data, step=None, description=None):
    """Text (markdown) for TensorBoard's text dashboard."""
    if isinstance(data, _core.Variable):
        data = data.value()
    if isinstance(data, _core.Tensor):
        value = _summary_ops._eager_value(data)
        if value is None:
            raise NotImplementedError("tf.summary.text of a tensor computed inside ef.function is not supported; "
                                      "pass a Python string, or a tensor made outside the function")
        value = _np.asarray(value, dtype=object)
        if value.ndim != 0:  # a table of strings, as TF's text plugin shows it
            return _summary_ops.text_tensor(name, value, step, description)
        data = value.item()
    if isinstance(data, bytes):
        data = data.decode("utf-8", "replace")
    return _gated(lambda: _s.text(_scoped(name), str(data), _step(step)))


def flush(writer=None, name=None):
    """Writes out what the writer (the default one when None) holds."""
    w = writer if writer is not None else _s.default_writer()
    if w is not None:
        w.flush()


def create_noop_writer():
    """A writer that writes nothing: as the default, summaries return False."""
    return _NoopWriter()


def should_record_summaries():
    """Whether summaries write here (a bool tensor): a default writer is set and the
    record_if condition holds (inside ef.function, possibly a condition the graph computes)."""
    if _s.default_writer() is None:
        return _core.convert_to_tensor(False)
    return _core.convert_to_tensor(_condition_now())



def _read_events(path):
    """The events of a file as tuples (wall_time, step, file_version, graph_def, values): our own
    reader, for tests."""
    return _s._read_events(str(path))


__all__ = ["SummaryWriter", "audio", "create_file_writer", "create_noop_writer", "experimental", "flush", "graph", "histogram",
           "image", "record_if", "scalar", "should_record_summaries", "text", "trace_export", "trace_off", "trace_on", "write"]
