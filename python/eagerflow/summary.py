"""ef.summary: TensorBoard summaries, as tf.summary.

    writer = ef.summary.create_file_writer("logs/train")
    with writer.as_default():
        ef.summary.scalar("loss", 0.25, step=3)

scalar / histogram / text write to the default writer and return False when there is none.
They are ops with an effect (like ef.print): inside an ef.function they write at every call
of the traced graph, with the writer that was the default when it traced; data and step may
be tensors the graph computes. The files are TensorBoard's (events.out.tfevents.*)."""
import contextlib as _contextlib

from . import _core

_s = _core._summary
SummaryWriter = _s.SummaryWriter


@_contextlib.contextmanager
def _as_default(self, step=None):
    """This writer is the default inside the `with` block (and `step` the default step)."""
    previous, previous_step = _s.default_writer(), _s.get_step()
    _s.set_default_writer(self)
    if step is not None:
        _s.set_step(int(step))
    try:
        yield self
    finally:
        _s.set_default_writer(previous)
        if step is not None:
            _s.set_step(previous_step)


def _set_as_default(self, step=None):
    _s.set_default_writer(self)
    if step is not None:
        _s.set_step(int(step))


SummaryWriter.as_default = _as_default
SummaryWriter.set_as_default = _set_as_default
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


def scalar(name, data, step=None, description=None):
    """One number (a Python number or a tensor of one element). step: an int, a tensor, or None
    for the step set with ef.summary.experimental.set_step."""
    return _s.scalar(name, data, step)


def histogram(name, data, step=None, buckets=None, description=None):
    """A histogram of the finite values of data in `buckets` (30) equal-width buckets."""
    return _s.histogram(name, data, step, buckets)


def text(name, data, step=None, description=None):
    """Text (markdown) for TensorBoard's text dashboard."""
    return _s.text(name, str(data), step)


def flush(writer=None):
    w = writer if writer is not None else _s.default_writer()
    if w is not None:
        w.flush()


class experimental:  # noqa: N801 - tf.summary.experimental
    @staticmethod
    def set_step(step):
        _s.set_step(None if step is None else int(step))

    @staticmethod
    def get_step():
        return _s.get_step()


def _read_events(path):
    """The events of a file as tuples (wall_time, step, file_version, graph_def, values): our own
    reader, for tests."""
    return _s._read_events(str(path))


__all__ = ["SummaryWriter", "create_file_writer", "scalar", "histogram", "text", "flush", "experimental"]
