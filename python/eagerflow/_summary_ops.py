"""tf.summary's write, image, audio and graph, record_if, the no-op writer and
tf.summary.experimental.

write/image/audio are made in Python and appended to the writer's file (_summary_events): they
write when called, eagerly. Inside an ef.function they would write once, at the trace, rather
than at every call as TF's ops do, so there they raise NotImplementedError instead of writing
wrong data; scalar/histogram/text are ops and work in both."""
import contextlib as _contextlib
import io as _io
import re as _re
import threading as _threading
import wave as _wave

import numpy as _np

from . import _core
from . import _summary_events as _ev

_s = _core._summary
_local = _threading.local()  # record_if's condition, per thread as TF's


def _condition():
    return getattr(_local, "condition", True)


def _condition_now():
    """The record_if condition now: a Python bool, or a bool tensor computed inside the trace
    being made (a callable is called each time, as TF's)."""
    c = _condition()
    if callable(c):
        c = c()
    if isinstance(c, _core.Variable):
        c = c.value()
    if isinstance(c, _core.Tensor):
        value = _eager_value(c)
        if value is None:
            return c
        c = value
    return bool(c)


def _recording():
    """Whether summaries written in Python write now (those write eagerly only)."""
    c = _condition_now()
    if isinstance(c, _core.Tensor):
        raise NotImplementedError("tf.summary: a record_if condition computed inside ef.function gates only the "
                                  "summaries that are ops (scalar, histogram, text)")
    return c


def _gated(op):
    """op() (a summary op: True when written) when the record_if condition holds. A condition
    the trace computes becomes a cond around the op, so each call of the graph decides; the
    result is then a bool tensor. Without a default writer the condition is not evaluated, as TF's."""
    if _s.default_writer() is None:
        return False
    c = _condition_now()
    if isinstance(c, _core.Tensor):
        return _core.cond(c, lambda: _core.convert_to_tensor(bool(op())), lambda: _core.convert_to_tensor(False))
    return c and op()


def _scoped(name):
    """A summary's tag: its name under the enclosing name scopes (TF's summary_scope)."""
    from ._module import get_current_name_scope
    current = get_current_name_scope()
    return current + "/" + name if current else name


def _eager_value(t):
    """The tensor's NumPy value, or None for a symbolic tensor (it has none)."""
    try:
        return t.numpy()
    except Exception:  # noqa: BLE001 - a symbolic tensor has no value
        return None


def _recording_writer():
    """The default writer when summaries are recorded now, else None."""
    w = _s.default_writer()
    if w is None or not _recording():
        return None
    return w


def _resolve_step(step):
    if step is None:
        step = _default_step()
    if step is None:
        raise ValueError("No step set. Please specify one either through the `step` argument or through "
                         "tf.summary.experimental.set_step()")
    if isinstance(step, _core.Variable):
        step = step.value()
    if isinstance(step, _core.Tensor):
        step = step.numpy()
    return int(step)


def _eager_only(what):
    if _core._in_trace():
        raise NotImplementedError(
            f"tf.summary.{what} inside ef.function is not supported yet (it would write once, at the trace, "
            "not at every call); call it outside the function, or use scalar/histogram/text, which are ops")


def _false():
    return _core.convert_to_tensor(False)


@_contextlib.contextmanager
def record_if(condition):
    """Summaries inside write only when `condition` holds: a bool, a bool tensor, or a callable
    returning one, called at each summary (TF's way to write every n steps)."""
    old = _condition()
    _local.condition = condition
    try:
        yield
    finally:
        _local.condition = old


def write(tag, tensor, step=None, metadata=None, name=None):
    """A tensor (or a callable making it, called only when recording) as summary `tag`, with
    SummaryMetadata (a proto with SerializeToString, or its bytes). Returns a bool tensor:
    whether it was written."""
    _eager_only("write")
    writer = _recording_writer()
    if writer is None:
        return _false()
    step = _resolve_step(step)
    if callable(tensor):
        tensor = tensor()
    meta = b"" if metadata is None else metadata.SerializeToString() if hasattr(metadata, "SerializeToString") \
        else bytes(metadata)
    _ev.append_event(writer, step, [_ev.value(_scoped(tag), _ev.tensor_proto(tensor), meta)])
    return _core.convert_to_tensor(True)


def text_tensor(name, strings, step, description=None):
    """Text of a string array of any rank (TensorBoard's text plugin draws a table)."""
    _eager_only("text of a string array")
    writer = _recording_writer()
    if writer is None:
        return _false()
    step = _resolve_step(step)
    flat = [x if isinstance(x, bytes) else str(x).encode() for x in strings.ravel()]
    meta = _ev.metadata("text", b"", description)
    _ev.append_event(writer, step, [_ev.value(_scoped(name), _ev.string_tensor_proto(flat, strings.shape), meta)])
    return _core.convert_to_tensor(True)


def _numpy(data):
    if isinstance(data, _core.Variable):
        data = data.value()
    return data.numpy() if hasattr(data, "numpy") else _np.asarray(data)


def image(name, data, step=None, max_outputs=3, description=None):
    """Images [k, h, w, c] (c 1, 3 or 4; floats in [0, 1] or uint8) for TensorBoard's image
    dashboard: the first max_outputs, as PNG."""
    _eager_only("image")
    writer = _recording_writer()
    if writer is None:
        return _false()
    step = _resolve_step(step)
    from . import image as _image
    from . import io as _eio
    arr = _numpy(data)
    if arr.ndim != 4:
        raise ValueError(f"tf.summary.image: data must have rank 4 ([k, h, w, c]), got shape {list(arr.shape)}")
    if arr.shape[3] not in (1, 3, 4):
        raise ValueError(f"tf.summary.image: images must have 1, 3 or 4 channels, got {arr.shape[3]}")
    images = _image.convert_image_dtype(_core.convert_to_tensor(arr), _core.DType.uint8, saturate=True).numpy()
    encoded = [_eio.encode_png(_core.convert_to_tensor(im)).numpy() for im in images[:int(max_outputs)]]
    blobs = [str(arr.shape[2]).encode(), str(arr.shape[1]).encode()] + encoded
    meta = _ev.metadata("images", b"", description)  # no data class: TensorBoard sets it on reading, as for TF's
    _ev.append_event(writer, step, [_ev.value(_scoped(name), _ev.string_tensor_proto(blobs, [len(blobs)]), meta)])
    return _core.convert_to_tensor(True)


def _wav(samples, sample_rate):
    """16-bit PCM WAV of samples [t, c] in [-1, 1] (TF's encode_wav: clipped, scaled by 32767)."""
    pcm = _np.round(_np.clip(samples, -1.0, 1.0) * 32767.0).astype("<i2")
    buf = _io.BytesIO()
    with _wave.open(buf, "wb") as w:
        w.setnchannels(samples.shape[1])
        w.setsampwidth(2)
        w.setframerate(int(sample_rate))
        w.writeframes(pcm.tobytes())
    return buf.getvalue()


def audio(name, data, sample_rate, step=None, max_outputs=3, encoding=None, description=None):
    """Audio clips [k, t, c] of floats in [-1, 1] for TensorBoard's audio dashboard, as WAV."""
    _eager_only("audio")
    if encoding not in (None, "wav"):
        raise ValueError(f"Unknown encoding: {encoding!r}")
    writer = _recording_writer()
    if writer is None:
        return _false()
    step = _resolve_step(step)
    arr = _numpy(data).astype(_np.float32)
    if arr.ndim != 3:
        raise ValueError(f"tf.summary.audio: data must have rank 3 ([k, t, c]), got shape {list(arr.shape)}")
    rate = int(_numpy(sample_rate))
    clips = [_wav(a, rate) for a in arr[:int(max_outputs)]]
    blobs = [b for c in clips for b in (c, b"")]  # [k, 2]: the clip and its (empty) label
    # AudioPluginData{encoding: WAV (11)}
    meta = _ev.metadata("audio", b"\x10\x0b", description)  # TensorBoard keeps the clips, drops the labels
    _ev.append_event(writer, step, [_ev.value(_scoped(name), _ev.string_tensor_proto(blobs, [len(clips), 2]), meta)])
    return _core.convert_to_tensor(True)


def graph(graph_data):
    """A graph for TensorBoard's graph dashboard, at step 0: an ef.function's ConcreteFunction
    (its graph as traced) or a GraphDef (a proto with SerializeToString)."""
    if _core._in_trace():
        raise ValueError("graph() cannot be invoked inside a graph context.")
    from . import _summary_graph
    if isinstance(graph_data, _core.ConcreteFunction):
        data = _summary_graph.graph_def(graph_data.traced_graph)
    elif hasattr(graph_data, "SerializeToString") and type(graph_data).__name__ == "GraphDef":
        data = graph_data.SerializeToString()
    else:
        raise ValueError("Argument 'graph_data' is not a ConcreteFunction or a GraphDef. "
                         f"Received graph_data={graph_data} of type {type(graph_data).__name__}.")
    writer = _recording_writer()
    if writer is None:
        return _false()
    writer._write_graph_def(data, 0)
    return _core.convert_to_tensor(True)


@_contextlib.contextmanager
def default_writer_scope(writer, core_writer, step=None):
    """`core_writer` (None: no writer) the default inside the `with` block, and `step` (an int,
    tensor or variable) the default step; the block's target is `writer`."""
    previous, previous_step = _s.default_writer(), experimental.get_step()
    make_default(core_writer, step)
    try:
        yield writer
    finally:
        _s.set_default_writer(previous)
        if step is not None:
            experimental.set_step(previous_step)


def make_default(core_writer, step=None):
    _s.set_default_writer(core_writer)
    if step is not None:
        experimental.set_step(step)


class _NoopWriter:
    """tf.summary.create_noop_writer()'s writer: while it is the default, nothing is written."""

    def as_default(self, step=None):
        return default_writer_scope(self, None, step)

    def set_as_default(self, step=None):
        make_default(None, step)

    def init(self):
        pass

    def flush(self):
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_INVALID_SCOPE = _re.compile(r"[^A-Za-z0-9_.\\/>-]")


_step_variable = []  # a variable given to set_step: summaries read its value when they write


def _default_step():
    """The step of a summary given none: set_step's variable (read where the summary runs,
    inside a trace too), else its number, else None."""
    return _step_variable[0] if _step_variable else _s.get_step()


class experimental:  # noqa: N801 - tf.summary.experimental
    @staticmethod
    def set_step(step):
        """The step of summaries given none: an int, an integer tensor, a variable (read at each
        summary, as TF's optimizer.iterations idiom needs), or None."""
        _step_variable.clear()
        if isinstance(step, _core.Variable):
            _step_variable.append(step)
        _s.set_step(None if step is None else _resolve_step(step))

    @staticmethod
    def get_step():
        return _default_step()

    @staticmethod
    def write_raw_pb(tensor, step=None, name=None):
        """Serialized Summary protos (a string tensor, one or more), each written as one event
        at `step`. InvalidArgumentError for bytes that are not a Summary."""
        _eager_only("experimental.write_raw_pb")
        writer = _recording_writer()
        if writer is None:
            return _false()
        step = _resolve_step(step)
        protos = [bytes(b) for b in _np.atleast_1d(_numpy(tensor)).ravel()]
        from . import errors
        from ._example_proto import DecodeError, _fields
        for b in protos:
            try:
                values = [b[v[0]:v[1]] for f, w, v in _fields(b, 0, len(b)) if f == 1 and w == 2]
            except DecodeError:
                raise errors.InvalidArgumentError(None, None, "failed to parse a Summary proto in write_raw_pb") from None
            _ev.append_event(writer, step, values)
        return _core.convert_to_tensor(True)

    @staticmethod
    @_contextlib.contextmanager
    def summary_scope(name, default_name="summary", values=None):
        """Yields (tag, scope): the tag is `name` (default_name when empty) under the enclosing
        name scopes; the scope is a name scope of it without characters scopes refuse."""
        from ._module import get_current_name_scope, name_scope
        name = name or default_name
        current = get_current_name_scope()
        tag = current + "/" + name if current else name
        with name_scope(_INVALID_SCOPE.sub("", name)) as scope:
            yield tag, scope
