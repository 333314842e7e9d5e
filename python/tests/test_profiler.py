"""tf.profiler.experimental: start/stop, Profile, Trace and ProfilerOptions, writing a Chrome
trace (traceEvents JSON) under logdir/plugins/profile/<run>/<host>.trace.json.gz."""
import glob
import gzip
import json
import os

import pytest

import eagerflow as ef

P = ef.profiler.experimental


def _trace(logdir):
    [path] = glob.glob(os.path.join(str(logdir), "plugins", "profile", "*", "*.trace.json.gz"))
    doc = json.load(gzip.open(path, "rt"))
    return [e for e in doc["traceEvents"] if e["ph"] == "X"], doc


@pytest.fixture(autouse=True)
def _no_profile_left():
    yield
    try:
        P.stop(save=False)
    except ef.errors.UnavailableError:
        pass


def test_function_calls_and_annotations(tmp_path):
    @ef.function
    def step(x):
        return ef.reduce_sum(x * x)

    P.start(str(tmp_path))
    for i in range(3):
        with P.Trace("train", step_num=i, _r=1):
            step(ef.ones([4]))
    step(ef.ones([5]))  # a new shape: a second trace
    P.stop()
    events, doc = _trace(tmp_path)
    assert any(e["ph"] == "M" and e["name"] == "process_name" for e in doc["traceEvents"])
    train = [e for e in events if e["name"] == "train"]
    assert [e["args"]["step_num"] for e in train] == [0, 1, 2]
    calls = [e for e in events if e["name"] == "step" and e["cat"] == "ef.function"]
    assert [e["args"]["traced"] for e in calls] == [True, False, False, True]
    assert calls[0]["args"]["reason"] == "first call"
    assert calls[3]["args"]["reason"] == "arg 0 (x): float32[5] vs cached float32[4]"
    traces = [e for e in events if e["cat"] == "ef.function.trace"]
    assert len(traces) == 2 and all(t["dur"] <= c["dur"] for t, c in zip(traces, (calls[0], calls[3])))
    for call, annotation in zip(calls, train):  # each call lies inside its annotation
        assert annotation["ts"] <= call["ts"] and call["ts"] + call["dur"] <= annotation["ts"] + annotation["dur"] + 1e-3
    assert all(e["dur"] >= 0 for e in events)


def test_errors_and_save_false(tmp_path):
    with pytest.raises(ef.errors.UnavailableError, match="No profiler is running"):
        P.stop()
    P.start(str(tmp_path))
    with pytest.raises(ef.errors.AlreadyExistsError, match="Another profiler is running"):
        P.start(str(tmp_path))
    P.stop(save=False)
    assert not os.path.exists(tmp_path / "plugins")
    with pytest.raises(TypeError):
        P.start(str(tmp_path), options={"host_tracer_level": 2})


def test_profile_context_and_options(tmp_path):
    @ef.function
    def f(x):
        return x + 1.0

    def helper_in_python():
        return 3

    with P.Profile(str(tmp_path / "a"), options=P.ProfilerOptions(host_tracer_level=1, python_tracer_level=1)):
        with P.Trace("block") as t:
            t.set_metadata(extra="yes")
            f(ef.constant(1.0))
            helper_in_python()
    events, _ = _trace(tmp_path / "a")
    names = [e["name"] for e in events]
    assert "block" in names and "f" not in names  # level 1: annotations only
    assert next(e for e in events if e["name"] == "block")["args"] == {"extra": "yes"}
    assert any(n.endswith("helper_in_python") for n in names)  # the Python tracer
    assert P.ProfilerOptions() == (2, 0, 1, None)
    # Trace outside a profile records nothing and costs nothing
    with P.Trace("idle", x=1):
        pass


def test_summary_trace_on_with_profiler(tmp_path):
    @ef.function
    def g(x):
        return x * 3.0

    ef.summary.trace_on(graph=True, profiler=True, profiler_outdir=str(tmp_path / "prof"))
    g(ef.constant(2.0))
    writer = ef.summary.create_file_writer(str(tmp_path / "logs"))
    with writer.as_default():
        ef.summary.trace_export("g", step=0)
    writer.close()
    events, _ = _trace(tmp_path / "prof")
    assert [e["args"]["traced"] for e in events if e["name"] == "g"] == [True]
    with pytest.raises(ef.errors.UnavailableError):  # trace_export stopped the profiler
        P.stop()


def test_input_pipeline_waits_are_recorded(tmp_path):
    ds = ef.data.Dataset.range(4).map(lambda x: x * 2)
    P.start(str(tmp_path))
    got = [int(x) for x in ds]
    it = iter(ds)
    it.get_next()
    P.stop()
    assert got == [0, 2, 4, 6]
    events, _ = _trace(tmp_path)
    # 4 elements and the end of the first loop, and one get_next
    assert len([e for e in events if e["name"] == "Iterator::GetNext" and e["cat"] == "tf.data"]) == 6
    assert [int(x) for x in ds] == [0, 2, 4, 6]  # no profile: the same elements
