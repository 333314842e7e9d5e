"""tf.summary's trace_on/trace_export/trace_off, write/image/audio/graph, record_if, the no-op
writer and experimental, read back from the event files as TensorBoard reads them."""
import glob
import io
import os
import struct
import wave

import numpy as np
import pytest

import eagerflow as ef
from eagerflow._example_proto import _fields


def _records(path):
    data, i, out = open(path, "rb").read(), 0, []
    while i < len(data):
        (n,) = struct.unpack("<Q", data[i:i + 8])
        out.append(data[i + 12:i + 12 + n])
        i += 12 + n + 4
    return out


def _msg(b):
    """field number -> list of values (bytes for length-delimited fields, ints for varints)."""
    out = {}
    for f, wire, v in _fields(b, 0, len(b)):
        out.setdefault(f, []).append(b[v[0]:v[1]] if wire == 2 else v)
    return out


def _summaries(writer):
    """(step, tag, plugin name, plugin content, TensorProto fields, data class) of each value."""
    writer.flush()
    rows = []
    for rec in _records(writer.path):
        ev = _msg(rec)
        for summary in ev.get(5, []):
            for value in _msg(summary).get(1, []):
                v = _msg(value)
                meta = _msg(v[9][0]) if 9 in v else {}
                plugin = _msg(meta[1][0]) if 1 in meta else {}
                rows.append((ev.get(2, [0])[0], v[1][0].decode(), plugin.get(1, [b""])[0].decode(),
                             plugin.get(2, [b""])[0], _msg(v[8][0]) if 8 in v else {}, meta.get(4, [0])[0]))
    return rows


def _nodes(graph_def):
    return [(_msg(n)[1][0].decode(), _msg(n)[2][0].decode(), [i.decode() for i in _msg(n).get(3, [])])
            for n in _msg(graph_def).get(1, [])]


@pytest.fixture
def writer(tmp_path):
    w = ef.summary.create_file_writer(str(tmp_path / "logs"))
    yield w
    ef.summary.trace_off()
    ef.summary.experimental.set_step(None)
    w.close()


def test_trace_export_writes_the_graphs_traced_while_on(writer):
    @ef.function
    def f(x):
        return ef.reduce_sum(ef.nn.relu(ef.matmul(x, ef.ones([3, 2]))), axis=1)

    ef.summary.trace_on(graph=True, profiler=False)
    x = ef.constant(np.arange(12, dtype=np.float32).reshape(4, 3) - 5)
    got = f(x)
    f(x)  # a replay: no second graph
    with writer.as_default():
        assert ef.summary.trace_export("f_trace", step=7) is None
    np.testing.assert_allclose(got.numpy(), np.maximum(x.numpy() @ np.ones((3, 2), np.float32), 0).sum(1))
    [(step, tag, plugin, content, tensor, _)] = _summaries(writer)
    assert (step, tag, plugin, content) == (7, "f_trace", "graph_run_metadata_graph", b"1")
    assert tensor[1] == [7]  # DT_STRING
    run_metadata = _msg(tensor[8][0])
    [function_graph] = run_metadata[4]
    pre = _nodes(_msg(function_graph)[2][0])
    assert ("x", "Placeholder", []) in pre
    ops = [op for _, op, _ in pre]
    assert ops.index("matmul") < ops.index("relu") < ops.index("sum")
    relu = next(n for n in pre if n[1] == "relu")
    assert relu[2] == ["matmul"]
    assert pre[-1][1] == "Identity" and pre[-1][2] == ["sum"]
    post = [op for _, op, _ in _nodes(_msg(function_graph)[3][0])]
    assert "sum" in post and "relu" not in post  # after the passes: matmul + relu fused


def test_a_function_traced_before_trace_on_adds_no_graph(writer):
    @ef.function
    def g(x):
        return x * 2.0

    g(ef.constant(1.0))
    ef.summary.trace_on()
    g(ef.constant(2.0))
    with writer.as_default():
        ef.summary.trace_export("g", step=1)
    [(_, _, _, _, tensor, _)] = _summaries(writer)
    assert 4 not in _msg(tensor[8][0])


def test_trace_export_errors_and_trace_off(writer):
    with pytest.raises(ValueError, match="Must enable trace before export"):
        ef.summary.trace_export("t", step=0)
    ef.summary.trace_on()
    with writer.as_default(), pytest.raises(ValueError, match="No step set"):
        ef.summary.trace_export("t")
    # As TF, a failed export leaves the trace on; trace_off ends it, and export then fails.
    ef.summary.trace_off()
    with pytest.raises(ValueError, match="Must enable trace"):
        ef.summary.trace_export("t", step=0)
    # With no default writer nothing is written, and the trace ends.
    ef.summary.trace_on()
    ef.summary.trace_export("t", step=0)
    with pytest.raises(ValueError):
        ef.summary.trace_export("t", step=0)
    assert _summaries(writer) == []


def test_trace_on_inside_a_function_does_nothing(writer):
    @ef.function
    def h(x):
        ef.summary.trace_on()
        return x + 1.0

    h(ef.constant(1.0))
    with pytest.raises(ValueError, match="Must enable trace"):
        ef.summary.trace_export("t", step=0)


def test_write_a_tensor_with_metadata(writer):
    value = np.array([[1.5, -2.0], [3.0, 4.25]], np.float32)
    with writer.as_default():
        assert bool(ef.summary.write("raw", value, step=3))
        assert bool(ef.summary.write("lazy", lambda: ef.constant("hi"), step=4, metadata=b"\x0a\x04\x0a\x02pl"))
    (s1, t1, _, _, tensor1, _), (s2, t2, plugin2, _, tensor2, _) = _summaries(writer)
    assert (s1, t1, s2, t2, plugin2) == (3, "raw", 4, "lazy", "pl")
    assert tensor1[1] == [1]  # DT_FLOAT
    np.testing.assert_array_equal(np.frombuffer(tensor1[4][0], np.float32).reshape(2, 2), value)
    assert tensor2[8] == [b"hi"]
    assert not bool(ef.summary.write("none", 1.0, step=1))  # no default writer


def test_image_as_png_blobs(writer):
    rng = np.random.default_rng(0)
    images = rng.random((4, 5, 6, 3)).astype(np.float32)
    with writer.as_default():
        assert bool(ef.summary.image("img", images, step=2, max_outputs=2, description="d"))
    [(step, tag, plugin, _, tensor, data_class)] = _summaries(writer)
    assert (step, tag, plugin, data_class) == (2, "img", "images", 0)  # TensorBoard's to set, as for TF's
    blobs = tensor[8]
    assert blobs[:2] == [b"6", b"5"] and len(blobs) == 4  # width, height, 2 images
    decoded = ef.io.decode_png(blobs[2]).numpy()
    # convert_image_dtype to uint8 (saturating, *255.5 truncated) and back
    np.testing.assert_array_equal(decoded, (images[0] * 255.5).astype(np.uint8))
    with writer.as_default(), pytest.raises(ValueError, match="rank 4"):
        ef.summary.image("bad", images[0], step=1)


def test_audio_as_wav_blobs(writer):
    clip = np.sin(np.linspace(0, 20, 80, dtype=np.float32)).reshape(1, 80, 1) * 1.2  # beyond 1: clipped
    with writer.as_default():
        assert bool(ef.summary.audio("au", clip, 8000, step=5))
    [(step, tag, plugin, content, tensor, _)] = _summaries(writer)
    assert (step, tag, plugin, content) == (5, "au", "audio", b"\x10\x0b")
    assert tensor[8][1] == b""  # the label column of [k, 2]
    with wave.open(io.BytesIO(tensor[8][0])) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (8000, 1, 2)
        pcm = np.frombuffer(w.readframes(80), "<i2")
    np.testing.assert_array_equal(pcm, np.round(np.clip(clip[0, :, 0], -1, 1) * 32767).astype(np.int16))
    with writer.as_default(), pytest.raises(ValueError, match="Unknown encoding"):
        ef.summary.audio("au", clip, 8000, step=5, encoding="mp3")


def test_record_if_and_should_record(writer):
    assert not bool(ef.summary.should_record_summaries())  # no writer
    with writer.as_default():
        assert bool(ef.summary.should_record_summaries())
        with ef.summary.record_if(False):
            assert not bool(ef.summary.should_record_summaries())
            assert not ef.summary.scalar("off", 1.0, step=1)
            assert not bool(ef.summary.write("off", 1.0, step=1))
        steps = []
        with ef.summary.record_if(lambda: steps[-1] % 2 == 0):
            for s in range(4):
                steps.append(s)
                ef.summary.scalar("even", float(s), step=s)
        with ef.summary.record_if(ef.constant(True)):
            assert bool(ef.summary.should_record_summaries())
    assert [(s, t) for s, t, *_ in _summaries(writer)] == [(0, "even"), (2, "even")]


def test_noop_writer(writer):
    noop = ef.summary.create_noop_writer()
    with writer.as_default():
        with noop.as_default():
            assert not bool(ef.summary.should_record_summaries())
            assert not ef.summary.scalar("x", 1.0, step=1)
        assert ef.summary.scalar("y", 1.0, step=1)
    noop.flush(), noop.close(), noop.init()
    assert [t for _, t, *_ in _summaries(writer)] == ["y"]


def test_step_from_a_variable(writer):
    step = ef.Variable(0, dtype=ef.int64)
    ef.summary.experimental.set_step(step)
    assert ef.summary.experimental.get_step() is step
    with writer.as_default():
        for _ in range(3):
            step.assign_add(5)
            ef.summary.scalar("loss", 0.5)
            ef.summary.write("w", 1.0)
    rows = [(s, t) for s, t, *_ in _summaries(writer)]
    assert rows == [(5, "loss"), (5, "w"), (10, "loss"), (10, "w"), (15, "loss"), (15, "w")]


def test_summary_scope_tags():
    with ef.summary.experimental.summary_scope("foo", "bar") as (tag, scope):
        assert (tag, scope) == ("foo", "foo/")
    with ef.name_scope("outer"):
        with ef.summary.experimental.summary_scope("a/b:c", "bar") as (tag, scope):
            assert (tag, scope) == ("outer/a/b:c", "outer/a/bc/")
        with ef.summary.experimental.summary_scope(None, "bar") as (tag, scope):
            assert (tag, scope) == ("outer/bar", "outer/bar/")


def test_eager_only_summaries_refuse_inside_a_function(writer):
    @ef.function
    def f(x):
        ef.summary.image("i", x, step=0)
        return x

    with writer.as_default(), pytest.raises(NotImplementedError, match="inside ef.function"):
        f(ef.zeros([1, 2, 2, 1]))


def test_graph_and_closed_writer(writer, tmp_path):
    @ef.function
    def f(x):
        return ef.exp(x)

    cf = f.get_concrete_function(ef.TensorSpec([2], ef.float32))
    with writer.as_default():
        assert bool(ef.summary.graph(cf))
        with pytest.raises(ValueError, match="not a ConcreteFunction or a GraphDef"):
            ef.summary.graph("nope")
    writer.flush()
    graphs = [_msg(r)[4][0] for r in _records(writer.path) if 4 in _msg(r)]
    assert [op for _, op, _ in _nodes(graphs[0])] == ["Placeholder", "exp", "Identity"]
    writer.init()
    writer.close()
    with pytest.raises(RuntimeError, match="already closed"):
        writer.init()
    with writer.as_default(), pytest.raises(ef.errors.FailedPreconditionError):
        ef.summary.write("x", 1.0, step=0)
    assert len(glob.glob(os.path.join(writer.logdir, "events.out.tfevents.*"))) == 1


def test_record_if_with_a_condition_the_graph_computes(writer):
    counter = ef.Variable(0, dtype=ef.int64)

    @ef.function
    def train_step(x):
        counter.assign_add(1)
        with ef.summary.record_if(lambda: ef.equal(counter % 3, 0)):
            ef.summary.scalar("loss", x, step=counter)
            return ef.summary.should_record_summaries()

    with writer.as_default():
        recorded = [bool(train_step(ef.constant(float(i)))) for i in range(7)]
    assert train_step.experimental_get_tracing_count() == 1  # one graph decides at every call
    assert recorded == [False, False, True, False, False, True, False]
    assert [(s, t) for s, t, *_ in _summaries(writer)] == [(3, "loss"), (6, "loss")]


def test_tags_follow_name_scopes_and_text_tensors(writer):
    with writer.as_default():
        with ef.name_scope("train"):
            ef.summary.scalar("loss", 1.0, step=1)
            ef.summary.write("raw", 2.0, step=1)
        ef.summary.text("note", ef.constant("hello"), step=2)
        ef.summary.text("table", ef.constant([["a", "b"], ["c", "d"]]), step=2)
    rows = _summaries(writer)
    assert [t for _, t, *_ in rows] == ["train/loss", "train/raw", "note", "table"]
    table = rows[3][4]
    assert table[8] == [b"a", b"b", b"c", b"d"] and rows[3][2] == "text"
    assert [_msg(d)[1][0] for d in _msg(table[2][0])[2]] == [2, 2]

    @ef.function
    def f(s):
        return ef.summary.text("t", s, step=0)

    @ef.function
    def g():
        return ef.summary.text("t", ef.constant([["a"]]), step=0)

    with writer.as_default():
        with pytest.raises(NotImplementedError, match="inside ef.function"):
            f(ef.constant("x"))
        with pytest.raises(NotImplementedError, match="inside ef.function"):
            g()


def test_write_raw_pb(writer):
    # Summary{value: [Value{tag: "raw", simple_value: 0.5}]}, encoded by hand
    value = b"\x0a\x03raw" + b"\x15" + struct.pack("<f", 0.5)
    summary = b"\x0a" + bytes([len(value)]) + value
    with writer.as_default():
        assert bool(ef.summary.experimental.write_raw_pb(ef.constant([summary, summary]), step=9))
        with pytest.raises(ef.errors.InvalidArgumentError):
            ef.summary.experimental.write_raw_pb(ef.constant(b"\xff\xff"), step=9)
    writer.flush()
    events = [_msg(r) for r in _records(writer.path)][1:]
    assert [e[2] for e in events] == [[9], [9]]
    [val] = _msg(events[0][5][0])[1]
    assert _msg(val)[1] == [b"raw"] and struct.unpack("<f", _msg(val)[2][0]) == (0.5,)


def test_graph_def_of_control_flow_multiple_outputs_and_variables():
    from eagerflow._summary_graph import graph_def
    v = ef.Variable(ef.ones([3]), name="dense/kernel")

    @ef.function
    def f(x, n):
        ef.print("message [with brackets] {}", x)
        y = ef.cond(ef.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x - 1.0)
        _, y = ef.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, y * 1.5), (ef.constant(0), y))
        top, idx = ef.math.top_k(y, 2)
        a, b = ef.split(ef.reshape(y, [2, 3]), 2, axis=0)
        v.assign_add(ef.ones([3]))
        return a + b + v, idx

    cf = f.get_concrete_function(ef.TensorSpec([6], ef.float32), ef.TensorSpec([], ef.int32))
    nodes = _nodes(graph_def(cf.traced_graph, ["x", "n"]))
    names = {name for name, _, _ in nodes}
    assert all(i.split(":")[0] in names for _, _, inputs in nodes for i in inputs)  # every edge has its source
    by_op = {op: (name, inputs) for name, op, inputs in nodes}
    assert by_op["cond"][1] == ["greater", "x"]
    assert by_op["while"][1][1:] == ["cond", "n"]
    assert by_op["top_k"][1] == ["while:1"]  # the loop's second result
    assert [inputs for _, op, inputs in nodes if op == "Identity"][1] == ["top_k:1"]  # idx, top_k's second output
    assert "print" in by_op and "assign_add" in by_op


def test_as_default_with_a_step_variable(writer):
    step = ef.Variable(2, dtype=ef.int64)
    ef.summary.experimental.set_step(7)
    with writer.as_default(step=step):
        ef.summary.scalar("a", 1.0)
        step.assign(4)
        ef.summary.scalar("a", 1.0)
    assert ef.summary.experimental.get_step() == 7  # restored
    assert [s for s, *_ in _summaries(writer)] == [2, 4]
