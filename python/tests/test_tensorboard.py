"""ef.summary and ef.keras.callbacks.TensorBoard, checked by the real client: the tensorboard
package's EventAccumulator and event_file_loader read every scalar (step and value), the
histograms, the text and the graph, for files written from Python and by the C++ tests."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import eagerflow as ef

from tensorboard.backend.event_processing import event_file_loader
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

KEEP_ALL = {"scalars": 0, "histograms": 0, "tensors": 0, "graph": 0, "compressedHistograms": 0, "images": 0, "audio": 0}


def accumulate(path):
    acc = EventAccumulator(str(path), size_guidance=KEEP_ALL)
    acc.Reload()
    return acc


def scalars(acc, tag):
    return [(e.step, e.value) for e in acc.Scalars(tag)]


def event_files(d):
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.startswith("events.out.tfevents."))


def test_scalars_histograms_text_read_by_tensorboard(tmp_path):
    w = ef.summary.create_file_writer(tmp_path / "run")
    assert os.path.basename(w.path).startswith("events.out.tfevents.")
    with w.as_default():
        assert ef.summary.scalar("loss", 0.5, step=1)
        assert ef.summary.scalar("loss", ef.constant(0.25), step=2)
        assert ef.summary.scalar("loss", np.float64(0.125), step=ef.constant(3, dtype=ef.int64))
        assert ef.summary.histogram("w", np.arange(10, dtype=np.float32), step=4, buckets=5)
        assert ef.summary.text("notes", "**hello**", step=5)
    assert ef.summary.scalar("loss", 1.0, step=9) is False  # no default writer: nothing written
    w.close()
    acc = accumulate(tmp_path / "run")
    assert acc.file_version == 2.0 or acc.file_version is None or float(acc.file_version) == 2.0
    assert scalars(acc, "loss") == [(1, 0.5), (2, 0.25), (3, 0.125)]
    (h,) = acc.Histograms("w")
    assert h.step == 4
    hv = h.histogram_value
    assert (hv.min, hv.max, hv.num, hv.sum) == (0.0, 9.0, 10.0, 45.0)
    assert list(hv.bucket) == [2.0] * 5
    assert list(hv.bucket_limit)[-1] == 9.0
    (t,) = acc.Tensors("notes")
    assert t.step == 5 and t.tensor_proto.string_val == [b"**hello**"]
    # The same file through the plain loader, event by event.
    events = list(event_file_loader.EventFileLoader(w.path).Load())
    assert events[0].file_version == "brain.Event:2"
    assert len(events) == 6


def test_summaries_inside_a_function_write_at_every_call(tmp_path):
    w = ef.summary.create_file_writer(tmp_path, max_queue=1)
    host = []

    @ef.function
    def step(x, i):
        host.append(1)
        y = x * 2.0
        ef.summary.scalar("y_sum", ef.reduce_sum(y), step=i)
        ef.summary.histogram("y", y, step=i)
        return y

    with w.as_default():
        for i in range(4):
            step(ef.constant([1.0, float(i)]), ef.constant(i, dtype=ef.int64))
    assert len(host) == 1
    w.flush()
    acc = accumulate(tmp_path)
    assert scalars(acc, "y_sum") == [(i, 2.0 + 2.0 * i) for i in range(4)]
    assert [h.step for h in acc.Histograms("y")] == [0, 1, 2, 3]


def test_bad_inputs_are_errors(tmp_path):
    w = ef.summary.create_file_writer(tmp_path)
    with w.as_default():
        with pytest.raises(ef.Error, match=r"summary.scalar.*'x'.*one element"):
            ef.summary.scalar("x", [1.0, 2.0], step=0)
        with pytest.raises(ef.Error, match="no step"):
            ef.summary.scalar("x", 1.0)
        with pytest.raises(ef.Error, match="buckets"):
            ef.summary.histogram("h", [1.0], step=0, buckets=0)
        with pytest.raises(TypeError):
            ef.summary.scalar("x", 1.0, step=True)
        ef.summary.experimental.set_step(7)
        try:
            assert ef.summary.scalar("x", 1.0)
        finally:
            ef.summary.experimental.set_step(None)
    with pytest.raises(ValueError, match="update_freq"):
        ef.keras.callbacks.TensorBoard(str(tmp_path), update_freq=1.5)
    with pytest.raises(ef.Error, match="update_freq"):
        ef.keras.callbacks.TensorBoard(str(tmp_path), update_freq="sometimes")
    with pytest.raises(ValueError, match="write_images"):
        ef.keras.callbacks.TensorBoard(str(tmp_path), write_images=True)


def small_model():
    model = ef.keras.Sequential([ef.keras.layers.Dense(16, activation="relu"),
                                 ef.keras.layers.Dense(2, activation="softmax")])
    model.compile(optimizer=ef.keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model


def check_fit_logs(logdir, history=None, epochs=3, batches_per_epoch=5, update_freq=2, weights=4):
    train, val = accumulate(os.path.join(logdir, "train")), accumulate(os.path.join(logdir, "validation"))
    tags = train.Tags()
    for name in ("loss", "accuracy"):
        got = scalars(train, "epoch_" + name)
        assert [s for s, _ in got] == list(range(epochs))
        got_val = scalars(val, "epoch_" + name)
        assert [s for s, _ in got_val] == list(range(epochs))
        if history is not None:
            np.testing.assert_allclose([v for _, v in got], history["" + name], rtol=1e-6)
            np.testing.assert_allclose([v for _, v in got_val], history["val_" + name], rtol=1e-6)
    assert "epoch_val_loss" not in tags["scalars"]
    assert len(scalars(train, "epoch_learning_rate")) == epochs
    total = epochs * batches_per_epoch
    assert [s for s, _ in scalars(train, "batch_loss")] == list(range(update_freq, total + 1, update_freq))
    assert len(tags["histograms"]) == weights
    for tag in tags["histograms"]:
        assert tag.endswith("/histogram")
        assert [h.step for h in train.Histograms(tag)] == list(range(0, epochs, 2))
    assert tags["graph"]
    graph = train.Graph()
    ops = {n.op for n in graph.node}
    assert {"Placeholder", "matmul", "Identity"} <= ops
    names = {n.name for n in graph.node}
    for n in graph.node:
        for i in n.input:
            assert i.split(":")[0] in names
    assert any("_output_shapes" in n.attr for n in graph.node)
    reasons = [t.tensor_proto.string_val[0].decode() for t in train.Tensors("train_step/trace_reasons")]
    assert len(reasons) == 1 and "first call" in reasons[0]


def test_fit_with_the_tensorboard_callback(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(96, 8)).astype(np.float32)
    y = (x.sum(axis=1) > 0).astype(np.int64)
    model = small_model()
    tb = ef.keras.callbacks.TensorBoard(log_dir=str(tmp_path), histogram_freq=2, update_freq=2)
    h = model.fit(x, y, batch_size=16, epochs=3, validation_split=0.25, shuffle=False, callbacks=[tb], verbose=0)
    check_fit_logs(str(tmp_path), h.history)


def test_files_written_by_the_cpp_callback(tmp_path, repo_root):
    exe = os.path.join(repo_root, "build", "release", "tests", "ef_thread_tests")
    if not os.path.exists(exe):
        pytest.skip("the C++ tests are not built (make build)")
    env = dict(os.environ, EF_TB_TEST_LOGDIR=str(tmp_path))
    r = subprocess.run([exe, "--gtest_filter=TensorBoardCallback.KerasRunsTagsAndSteps"], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    check_fit_logs(str(tmp_path))


def test_a_killed_writer_leaves_a_readable_file(tmp_path):
    # A child process writes as fast as it can (a flush per record) until SIGKILL.
    code = textwrap.dedent(f"""
        import sys
        import eagerflow as ef
        w = ef.summary.create_file_writer({str(tmp_path)!r}, max_queue=1)
        with w.as_default():
            i = 0
            while True:
                ef.summary.scalar("v", float(i), step=i)
                ef.summary.text("pad", "x" * 3000, step=i)
                if i == 50:
                    print("ready", flush=True)
                i += 1
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        time.sleep(0.2)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    (path,) = event_files(str(tmp_path))
    steps = [e.step for e in event_file_loader.EventFileLoader(path).Load()
             for v in e.summary.value if v.tag == "v"]
    assert len(steps) > 50 and steps == list(range(len(steps)))
    ours = [e for e in ef.summary._read_events(path)]
    ours_steps = [e[1] for e in ours for v in e[4] if v[0] == "v"]
    assert ours_steps == steps
    # Cut the file mid-record: both readers keep the whole records before the cut.
    data = open(path, "rb").read()
    cut = tmp_path / "cut"
    cut.mkdir()
    with open(cut / os.path.basename(path), "wb") as f:
        f.write(data[: len(data) - 1500])
    cut_steps = [e.step for e in event_file_loader.EventFileLoader(str(cut / os.path.basename(path))).Load()
                 for v in e.summary.value if v.tag == "v"]
    assert cut_steps == steps[: len(cut_steps)] and len(cut_steps) >= len(steps) - 1
    assert [e[1] for e in ef.summary._read_events(cut / os.path.basename(path)) for v in e[4] if v[0] == "v"] == cut_steps
