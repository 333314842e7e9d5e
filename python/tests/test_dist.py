"""ef.dist from Python: the collectives and DataParallel under `mpirun -np 2 python script.py`
(each rank writes what it saw to a JSON file the test reads), and a world of one without
mpirun. MPI runs only in the child processes, never in the pytest process itself."""
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

import eagerflow as ef

MPIRUN = shutil.which("mpirun")

SCRIPT = textwrap.dedent(r'''
    import json, sys
    import numpy as np
    import eagerflow as ef
    keras = ef.keras
    out = {}
    d = ef.dist
    d.init()
    r, w = d.rank(), d.world_size()
    out["rank"], out["world"] = r, w
    # Collectives: rank r holds r + 1.
    x = np.full((2, 3), r + 1.0, dtype=np.float32)
    out["sum"] = np.asarray(d.all_reduce(x)).tolist()
    out["mean"] = np.asarray(d.all_reduce(x, "mean")).tolist()
    out["max"] = np.asarray(d.all_reduce(x, op="max")).tolist()
    out["shm"] = d.shared_memory()
    d.use_shared_memory(False)
    out["shm_off"] = d.shared_memory()
    out["sum_mpi"] = np.asarray(d.all_reduce(x)).tolist()
    d.use_shared_memory(True)
    out["bcast"] = np.asarray(d.broadcast(x, root=w - 1)).tolist()
    out["gather"] = np.asarray(d.all_gather(x, axis=1)).shape
    out["scatter"] = np.asarray(d.reduce_scatter(np.ones((2 * w, 2), np.float32))).tolist()
    out["rows"] = np.asarray(d.all_gather_rows(np.full((r + 1, 2), r, np.float32))).tolist()
    # A disagreement is an error on every rank, and the next collective still works.
    try:
        d.all_reduce(np.zeros((r + 2,), np.float32))
        out["mismatch"] = "no error"
    except ef.Error as e:
        out["mismatch"] = str(e)
    d.barrier()
    # Gradients through a collective, eager and traced.
    v = ef.Variable(np.full((3,), r + 1.0, np.float32))
    with ef.GradientTape() as tape:
        y = ef.sum(d.all_reduce(v.value() * v.value()))
    out["grad"] = np.asarray(tape.gradient(y, v)).tolist()

    # DataParallel fit == one process with the same global batches.
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(512, 12)).astype(np.float32)
    ys = (xs[:, :4].argmax(1)).astype(np.int32)
    def make():
        ef.random.set_seed(5)
        m = keras.Sequential([keras.layers.Dense(16, activation="relu"), keras.layers.Dense(4)])
        m(xs[:1])
        m.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
        return m
    ref = make()
    h_ref = ref.fit(xs, ys, batch_size=64, epochs=2, verbose=0)
    model = make()
    dp = d.DataParallel()
    out["is_root"] = dp.is_root
    model.set_distribution(dp)
    h = model.fit(xs, ys, batch_size=64, epochs=2, verbose=0)
    out["loss"], out["loss_ref"] = h.history["loss"], h_ref.history["loss"]
    out["weight_diff"] = max(float(np.abs(np.asarray(a.value()) - np.asarray(b.value())).max())
                             for a, b in zip(model.weights, ref.weights))
    out["traces"] = model.tracing_count()
    out["predict"] = list(np.asarray(model.predict(xs, batch_size=100)).shape)
    # Custom loop: DistributedOptimizer averages rank r's gradient r + 1.
    wv = ef.Variable(np.zeros((2,), np.float32))
    opt = d.DistributedOptimizer(keras.optimizers.SGD(learning_rate=1.0), dp)
    opt.apply_gradients([(np.full((2,), r + 1.0, np.float32), wv)])
    out["custom"] = np.asarray(wv.value()).tolist()
    with open(sys.argv[1] + f"/rank{r}.json", "w") as f:
        json.dump(out, f)
''')


def run(tmp_path, np_ranks):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = [sys.executable, str(script), str(tmp_path)]
    if np_ranks:
        cmd = [MPIRUN, "--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader", "-np", str(np_ranks)] + cmd
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stdout + p.stderr
    return [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(np_ranks or 1)]


needs_mpi = pytest.mark.skipif(not ef.dist.available() or MPIRUN is None, reason="this build has no MPI, or no mpirun")


@needs_mpi
def test_two_ranks(tmp_path):
    outs = run(tmp_path, 2)
    for r, o in enumerate(outs):
        assert o["rank"] == r and o["world"] == 2
        assert o["sum"] == [[3.0] * 3] * 2 and o["mean"] == [[1.5] * 3] * 2 and o["max"] == [[2.0] * 3] * 2
        assert o["shm"] is True and o["shm_off"] is False and o["sum_mpi"] == o["sum"]  # both transports
        assert o["bcast"] == [[2.0] * 3] * 2
        assert o["gather"] == [2, 6]
        assert o["scatter"] == [[2.0, 2.0], [2.0, 2.0]]
        assert o["rows"] == [[0.0, 0.0], [1.0, 1.0], [1.0, 1.0]]
        assert "rank 0 has" in o["mismatch"] and "float32[2]" in o["mismatch"] and "float32[3]" in o["mismatch"], o["mismatch"]
        # d/dv of sum over ranks of sum((v_0^2 + v_1^2)) on each rank: 2 * v_r * world.
        assert o["grad"] == [2.0 * (r + 1) * 2] * 3
        assert o["is_root"] == (r == 0)
        assert o["weight_diff"] < 1e-5, o
        assert o["loss"] == pytest.approx(o["loss_ref"], abs=1e-5)
        assert o["traces"] == 1
        assert o["predict"] == [512, 4]
        assert o["custom"] == [-1.5, -1.5]
    assert outs[0]["loss"] == outs[1]["loss"]  # the same logs on every rank


@needs_mpi
def test_world_of_one_without_mpirun(tmp_path):
    (o,) = run(tmp_path, 0)
    assert o["world"] == 1 and o["sum"] == [[1.0] * 3] * 2 and o["gather"] == [2, 3]
    assert o["shm"] is False and o["sum_mpi"] == o["sum"]  # nothing to share with
    assert "no error" == o["mismatch"]  # one rank always agrees with itself
    assert o["weight_diff"] < 1e-6


@needs_mpi
def test_a_failing_rank_ends_the_job(tmp_path):
    script = tmp_path / "fail.py"
    script.write_text(textwrap.dedent('''
        import numpy as np, eagerflow as ef
        keras = ef.keras
        dp = ef.dist.DataParallel()
        m = keras.Sequential([keras.layers.Dense(4)])
        m.compile(optimizer="sgd", loss="mse")
        m.set_distribution(dp)
        def boom(batch, logs):
            if dp.rank == 1 and batch == 3:
                raise RuntimeError("rank 1 fails on purpose")
        x = np.zeros((4096, 8), np.float32)
        m.fit(x, np.zeros((4096, 4), np.float32), batch_size=32, epochs=1000, verbose=0,
              callbacks=[keras.callbacks.LambdaCallback(on_batch_end=boom)])
    '''))
    env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    t0 = time.monotonic()
    p = subprocess.run([MPIRUN, "--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader", "-np", "2",
                        sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)
    took = time.monotonic() - t0
    assert p.returncode != 0
    assert "rank 1 fails on purpose" in p.stderr + p.stdout
    assert took < 30, took


WITHOUT_OPEN_MPI = textwrap.dedent(r'''
    import json
    import numpy as np
    import eagerflow as ef
    keras = ef.keras
    out = {"available": ef.dist.available(), "initialized": ef.dist.is_initialized()}
    # Everything but ef.dist works: ops, a fit, saving (which asks ef.dist.is_file_writer()).
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    out["sum"] = float(np.asarray(ef.sum(x)))
    m = keras.Sequential([keras.layers.Dense(2)])
    m.compile(optimizer="sgd", loss="mse")
    m.fit(x, np.zeros((2, 2), np.float32), epochs=1, verbose=0)
    m.save_weights(__import__("sys").argv[1] + "/w.safetensors")
    out["writer"] = ef.dist.is_file_writer()
    errors = {}
    for name, call in [("init", ef.dist.init), ("rank", ef.dist.rank), ("all_reduce", lambda: ef.dist.all_reduce(x)),
                       ("DataParallel", ef.dist.DataParallel)]:
        try:
            call()
            errors[name] = None
        except ef.Error as e:
            errors[name] = str(e)
    out["errors"] = errors
    out["libmpi_loaded"] = "libmpi" in open("/proc/self/maps").read()
    print(json.dumps(out))
''')


@pytest.mark.skipif(not ef.dist.available(), reason="this build has no MPI")
def test_without_open_mpi_installed_only_dist_asks_for_it(tmp_path):
    # Open MPI is loaded at run time (dlopen of libmpi.so.40 by the first ef.dist call), so a
    # wheel runs on a machine without it; EF_MPI_LIBRARY names a missing library instead.
    script = tmp_path / "no_mpi.py"
    script.write_text(WITHOUT_OPEN_MPI)
    env = dict(os.environ, EF_MPI_LIBRARY="libdoesnotexist.so.0", OMP_NUM_THREADS="1")
    p = subprocess.run([sys.executable, str(script), str(tmp_path)], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    o = json.loads(p.stdout.strip().splitlines()[-1])
    assert o["available"] is True and o["initialized"] is False and o["writer"] is True
    assert o["sum"] == 15.0 and (tmp_path / "w.safetensors").exists()
    for name, message in o["errors"].items():
        assert message is not None, name
        for part in ["[dist]", "Open MPI's library libdoesnotexist.so.0", "EF_MPI_LIBRARY", "install Open MPI",
                     "apt-get install openmpi-bin", "everything else in eagerflow works without it"]:
            assert part in message, (name, part, message)
    assert "cannot open shared object file" in o["errors"]["init"]
    assert o["libmpi_loaded"] is False


@pytest.mark.skipif(ef.dist.available(), reason="this build has MPI")
def test_without_mpi_every_call_says_so():
    with pytest.raises(ef.Error, match="this build has no MPI"):
        ef.dist.init()
    with pytest.raises(ef.Error, match="this build has no MPI"):
        ef.dist.all_reduce([1.0])
