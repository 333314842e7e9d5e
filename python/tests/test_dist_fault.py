"""A rank of a `mpirun -np 2 python script.py` job that fails while the other waits in an
all-reduce must end the whole job with a non-zero exit, not leave it hanging: an uncaught
exception, sys.exit(1), an exception raised in a fit callback. A job whose ranks all end
normally still exits 0. The timeout guards against the hang (it is not a speed bound)."""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import eagerflow as ef

MPIRUN = shutil.which("mpirun")

SCRIPT = textwrap.dedent(r'''
    import sys
    import numpy as np
    import eagerflow as ef
    mode = sys.argv[1]
    d = ef.dist
    d.init()
    if mode in ("fit_raise", "clean"):
        keras = ef.keras
        xs = np.random.default_rng(0).normal(size=(2048, 8)).astype(np.float32)
        ys = xs.argmax(1).astype(np.int32)
        m = keras.Sequential([keras.layers.Dense(8)])
        m(xs[:1])
        m.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        m.set_distribution(d.DataParallel())
        class Fail(keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                if mode == "fit_raise" and d.rank() == 1 and batch == 3:
                    raise ValueError("rank 1 fails on purpose")
        m.fit(xs, ys, batch_size=64, epochs=1 if mode == "clean" else 1000, verbose=0, callbacks=[Fail()])
        sys.exit(0)
    if d.rank() == 1:
        if mode == "raise":
            raise RuntimeError("rank 1 raises on purpose")
        sys.exit(1)
    d.all_reduce(np.ones((4,), np.float32))  # rank 1 never comes
    print("the all-reduce ended, which it must not", flush=True)
''')

needs_mpi = pytest.mark.skipif(not ef.dist.available() or MPIRUN is None, reason="this build has no MPI, or no mpirun")


def run(tmp_path, mode):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = [MPIRUN, "--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader", "-np", "2",
           sys.executable, str(script), mode]
    try:
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"mpirun -np 2 ({mode}) hung: {e.stderr}")


@needs_mpi
@pytest.mark.parametrize("mode", ["raise", "exit", "fit_raise"])
def test_failed_rank_ends_the_job(tmp_path, mode):
    p = run(tmp_path, mode)
    assert p.returncode != 0, p.stdout + p.stderr
    assert "must not" not in p.stdout + p.stderr
    assert "[dist] rank 1 of 2" in p.stderr, p.stderr


@needs_mpi
def test_clean_end_exits_zero(tmp_path):
    p = run(tmp_path, "clean")
    assert p.returncode == 0, p.stdout + p.stderr
