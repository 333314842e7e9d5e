"""Interpreter exit with pipelines running: a script that ends (or calls sys.exit) while a
Dataset iterator is live, a daemon thread waits in one, a producer is blocked on a full
prefetch buffer, or a generator failed, exits with its own status and no abort."""
import os
import subprocess
import sys
import textwrap

import pytest

PRELUDE = textwrap.dedent(
    """
    import sys, threading, time
    import numpy as np
    import eagerflow as ef

    def endless():
        i = 0
        while True:
            yield np.float32(i)
            i += 1

    def source(gen=endless):
        return ef.data.Dataset.from_generator(gen, output_signature=ef.TensorSpec([], ef.float32))
    """
)

SCRIPTS = {
    "live_parallel_map_prefetch": """
        ds = source().map(lambda x: x * 2, num_parallel_calls=4).prefetch(8)
        it = iter(ds)
        print(float(next(it)))
    """,
    "daemon_thread_in_prefetch": """
        ds = source().prefetch(8)
        started = threading.Event()
        def run():
            for _ in ds:
                started.set()
        threading.Thread(target=run, daemon=True).start()
        started.wait(30)
    """,
    "daemon_threads_in_parallel_map": """
        ds = source().map(lambda x: x + 1, num_parallel_calls=4).prefetch(ef.data.AUTOTUNE)
        started = threading.Barrier(4)
        def run():
            it = iter(ds)
            next(it)
            started.wait(30)
            for _ in it:
                pass
        for _ in range(3):
            threading.Thread(target=run, daemon=True).start()
        started.wait(30)
    """,
    "producer_blocked_on_full_buffer": """
        it = iter(source().prefetch(2))
        next(it)
        time.sleep(0.2)  # the producer fills the buffer and waits
    """,
    "dropped_mid_stream": """
        it = iter(source().map(lambda x: x, num_parallel_calls=2).prefetch(4))
        for _ in range(5):
            next(it)
        del it
        it2 = iter(source().prefetch(3))
        next(it2)
    """,
    "generator_raised": """
        def failing():
            yield np.float32(1)
            raise RuntimeError("boom")
        it = iter(source(failing).map(lambda x: x, num_parallel_calls=3).prefetch(4))
        next(it)
        try:
            next(it)
        except Exception as e:
            assert "boom" in str(e), e
        keep = iter(source().prefetch(4))
        next(keep)
    """,
    "sys_exit_with_live_iterators": """
        its = [iter(source().map(lambda x: x, num_parallel_calls=2).prefetch(8)) for _ in range(3)]
        for it in its:
            next(it)
        sys.exit(3)
    """,
    "interleave_in_daemon_thread": """
        ds = ef.data.Dataset.range(4).interleave(lambda i: source().prefetch(2), cycle_length=2).prefetch(4)
        started = threading.Event()
        def run():
            for _ in ds:
                started.set()
        threading.Thread(target=run, daemon=True).start()
        started.wait(30)
    """,
}

EXPECTED_STATUS = {"sys_exit_with_live_iterators": 3}


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_exit_with_live_pipelines(name):
    code = PRELUDE + textwrap.dedent(SCRIPTS[name])
    env = dict(os.environ)
    # The bound guards against a hang, not a speed: a clean exit takes well under a second.
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == EXPECTED_STATUS.get(name, 0), (r.returncode, r.stdout, r.stderr)
    assert "terminate called" not in r.stderr, r.stderr


def test_close_live_iterators_wakes_a_waiting_thread():
    # The exit hook, called directly: a thread blocked in next() (its generator waits for an
    # event that never comes) is woken, and the pipeline's threads are joined.
    import threading

    import numpy as np

    import eagerflow as ef

    gate = threading.Event()

    def slow():
        yield np.float32(0)
        gate.wait(60)
        yield np.float32(1)

    ds = ef.data.Dataset.from_generator(slow, output_signature=ef.TensorSpec([], ef.float32)).prefetch(2)
    got = []
    done = threading.Event()

    def run():
        for x in ds:
            got.append(float(x))
        done.set()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    for _ in range(600):
        if got:
            break
        threading.Event().wait(0.01)
    assert got == [0.0]
    ef.data.Dataset  # noqa: B018 - the module stays loaded
    threading.Timer(0.3, gate.set).start()  # lets the stuck element finish
    ef._core._data._close_live_iterators()
    assert done.wait(60)
    t.join(60)
    assert got[0] == 0.0
