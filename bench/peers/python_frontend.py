#!/usr/bin/env python3
"""eagerflow from Python, side by side with torch, JAX and TensorFlow from Python (issue 15).
Not a test: a benchmark, recorded in bench/RESULTS.md.

Rows: the per-op overhead of an eager 1-element add; a cached traced call with one tensor
argument (ef.function vs torch.jit.trace, torch.compile, jax.jit, tf.function); a NumPy array
of 4 KB and of 4 MB into a tensor and back out (the same time for both = no copy); and the MLP
784-512-512-10 fit (MNIST test digits, batch 128, 2 epochs, Adam) from Python vs the same fit
from C++ (bench/busy_fit.cpp, built here against the library archive of the Python build, so
both run the same library code).

    ~/.cache/eagerflow/peers/bin/python bench/peers/python_frontend.py [--rounds 3]

eagerflow runs under --ef-python (the virtualenv `pip install .` went into), the peers under
--peer-python (a virtualenv with torch, jax, tensorflow-cpu; a missing one is skipped). Every
job is a process of its own, pinned to core 0 (taskset -c 0) with every framework's threads set
to 1 and checked; jobs are interleaved (round 1: all jobs, round 2: all jobs, ...), each starts
only once the machine is quiet (1-min load < 0.5, no compiler running), and the table shows
the median over rounds of each job's median.
"""
import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import median_us  # noqa: E402  (the same timer as the C++-side peer table)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOME = os.path.expanduser("~")

ADD = "eager add of 1-element tensors (us)"
CALL = "cached traced call, one 1-element tensor argument (us)"
IN_S, IN_L = "NumPy 4 KB -> tensor (us)", "NumPy 4 MB -> tensor (us)"
OUT_S, OUT_L = "tensor 4 KB -> NumPy (us)", "tensor 4 MB -> NumPy (us)"
FIT = "MLP 784-512-512-10 fit, 2 epochs on 10k MNIST, batch 128, Adam: per epoch (ms)"
ROWS = [ADD, CALL, IN_S, IN_L, OUT_S, OUT_L]


# ---------------------------------------------------------------- in the job processes


def cpu_per_wall(fn, seconds=0.5):
    c, w = time.process_time(), time.perf_counter()
    while time.perf_counter() - w < seconds:
        fn()
    return (time.process_time() - c) / (time.perf_counter() - w)


def os_threads():
    return len(os.listdir("/proc/self/task"))


def arrays():
    import numpy as np
    return np.arange(1024, dtype=np.float32), np.arange(1 << 20, dtype=np.float32)  # 4 KB, 4 MB


def job_eagerflow():
    import numpy as np
    import eagerflow as ef
    a, b = ef.constant(np.float32(1.0)), ef.constant(np.float32(2.0))
    f = ef.function(lambda x: x + 1.0)
    f(a)
    small, large = arrays()
    ts, tl = ef.constant(small), ef.constant(large)
    m = ef.constant(np.random.rand(256, 256).astype(np.float32))
    out = {
        ADD: median_us(lambda: a + b),
        CALL: median_us(lambda: f(a)),
        IN_S: median_us(lambda: ef.constant(small)), IN_L: median_us(lambda: ef.constant(large)),
        OUT_S: median_us(lambda: ts.numpy()), OUT_L: median_us(lambda: tl.numpy()),
    }
    assert np.shares_memory(tl.numpy(), large) and f.experimental_get_tracing_count() == 1
    out["threads"] = f"ef.num_threads() {ef.num_threads()}"
    out["cpu/wall"] = cpu_per_wall(lambda: ef.matmul(m, m))
    out["os threads"] = os_threads()
    return out


def job_ef_fit_python():
    import eagerflow as ef
    ef.random.set_seed(3)  # as bench/busy_fit.cpp
    x, y = ef.data.load_mnist_test()
    L = ef.keras.layers
    model = ef.keras.Sequential([L.Flatten(), L.Dense(512, activation="relu"), L.Dense(512, activation="relu"),
                                 L.Dense(10)])
    model.compile(optimizer=ef.keras.optimizers.Adam(learning_rate=1e-3),
                  loss=ef.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    c, t = time.process_time(), time.perf_counter()
    h = model.fit(x, y, batch_size=128, epochs=2, verbose=0)
    seconds, cpu = time.perf_counter() - t, time.process_time() - c
    return {FIT: seconds / 2 * 1e3, "loss": h.history["loss"][-1], "threads": f"ef.num_threads() {ef.num_threads()}",
            "cpu/wall": cpu / seconds, "os threads": os_threads()}


def job_torch(compiled=False):
    import torch
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    a, b = torch.tensor(1.0), torch.tensor(2.0)
    add1 = lambda x: x + 1.0
    out = {}
    if compiled:
        f = torch.compile(add1)
        f(a)
        out[CALL] = median_us(lambda: f(a))
    else:
        f = torch.jit.trace(add1, a)
        small, large = arrays()
        ts, tl = torch.from_numpy(small), torch.from_numpy(large)
        out.update({
            ADD: median_us(lambda: a + b),
            CALL: median_us(lambda: f(a)),
            IN_S: median_us(lambda: torch.from_numpy(small)), IN_L: median_us(lambda: torch.from_numpy(large)),
            OUT_S: median_us(lambda: ts.numpy()), OUT_L: median_us(lambda: tl.numpy()),
        })
    m = torch.rand(256, 256)
    out["threads"] = f"torch.get_num_threads() {torch.get_num_threads()}, interop {torch.get_num_interop_threads()}"
    out["cpu/wall"] = cpu_per_wall(lambda: m @ m)
    out["os threads"] = os_threads()
    return out


def job_jax():
    import jax
    import jax.numpy as jnp
    import numpy as np
    a, b = jnp.float32(1.0), jnp.float32(2.0)
    f = jax.jit(lambda x: x + 1.0)
    f(a).block_until_ready()
    small, large = arrays()
    ts, tl = jnp.asarray(small), jnp.asarray(large)
    m = jnp.asarray(np.random.rand(256, 256).astype(np.float32))
    mm = jax.jit(lambda m: m @ m)
    out = {
        ADD: median_us(lambda: (a + b).block_until_ready()),
        CALL: median_us(lambda: f(a).block_until_ready()),
        IN_S: median_us(lambda: jnp.asarray(small).block_until_ready()),
        IN_L: median_us(lambda: jnp.asarray(large).block_until_ready()),
        # np.asarray of a jax.Array: zero copy on CPU (cached after the first call)
        OUT_S: median_us(lambda: np.asarray(ts)), OUT_L: median_us(lambda: np.asarray(tl)),
        "threads": f"XLA_FLAGS={os.environ.get('XLA_FLAGS')!r}, devices {jax.devices()}",
        "cpu/wall": cpu_per_wall(lambda: mm(m).block_until_ready()),
        "os threads": os_threads(),
    }
    return out


def job_tf():
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    a, b = tf.constant(1.0), tf.constant(2.0)
    f = tf.function(lambda x: x + 1.0)
    f(a)
    small, large = arrays()
    ts, tl = tf.constant(small), tf.constant(large)
    m = tf.random.uniform((256, 256))
    return {
        ADD: median_us(lambda: a + b),
        CALL: median_us(lambda: f(a)),
        IN_S: median_us(lambda: tf.constant(small)), IN_L: median_us(lambda: tf.constant(large)),
        OUT_S: median_us(lambda: ts.numpy()), OUT_L: median_us(lambda: tl.numpy()),
        "threads": f"intra {tf.config.threading.get_intra_op_parallelism_threads()}, "
                   f"inter {tf.config.threading.get_inter_op_parallelism_threads()}",
        "cpu/wall": cpu_per_wall(lambda: tf.matmul(m, m)),
        "os threads": os_threads(),
    }


JOBS = {"eagerflow": job_eagerflow, "ef fit (Python)": job_ef_fit_python, "torch": job_torch,
        "torch.compile": lambda: job_torch(compiled=True), "jax": job_jax, "tensorflow": job_tf}

# ---------------------------------------------------------------- the driver


def one_thread_env():
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               TF_NUM_INTRAOP_THREADS="1", TF_NUM_INTEROP_THREADS="1", TF_CPP_MIN_LOG_LEVEL="3",
               JAX_PLATFORMS="cpu", XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
               TORCHINDUCTOR_COMPILE_THREADS="1")
    return env


def compiler_running():
    for name in ("cc1plus", "ninja"):
        if subprocess.run(["pgrep", "-x", name], capture_output=True).returncode == 0:
            return True
    return False


def wait_for_quiet(max_wait):
    """Until the 1-min load is under 0.5 and no compiler runs (other engineers build here).
    Returns the load when the job starts."""
    start = time.time()
    while True:
        with open("/proc/loadavg") as f:
            load = float(f.read().split()[0])
        if (load < 0.5 and not compiler_running()) or time.time() - start > max_wait:
            return load
        time.sleep(2)


def run_job(python, name, max_wait):
    load = wait_for_quiet(max_wait)
    cmd = ["taskset", "-c", "0", python, os.path.abspath(__file__), "--job", name]
    out = subprocess.run(cmd, capture_output=True, text=True, env=one_thread_env(), cwd=ROOT)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            r = json.loads(line[len("RESULT "):])
            r["load"] = load
            return r
    tail = (out.stderr.strip().splitlines() or ["no output"])[-1]
    print(f"{name}: no result ({tail})", file=sys.stderr)
    return None


def build_cpp_fit():
    """bench/busy_fit.cpp linked against the Python build's libeagerflow.a (same code, same flags)."""
    builds = sorted(glob.glob(os.path.join(ROOT, "build/python/*/libeagerflow.a")), key=os.path.getmtime)
    if not builds:
        return None
    lib = builds[-1]
    ninja = open(os.path.join(os.path.dirname(lib), "build.ninja")).read()
    m = re.search(r"LINK_LIBRARIES = [^\n]*libeagerflow\.a\s+([^\n]*)", ninja)
    libs = m.group(1).split() if m else []
    exe = os.path.join(ROOT, "build", "python_frontend_cpp_fit")
    src = os.path.join(ROOT, "bench", "busy_fit.cpp")
    if not os.path.exists(exe) or os.path.getmtime(exe) < max(os.path.getmtime(lib), os.path.getmtime(src)):
        cmd = ["g++", "-O3", "-DNDEBUG", "-fno-math-errno", "-fopenmp", "-std=c++20", "-I", os.path.join(ROOT, "include"),
               src, "-o", exe, lib, *libs]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print("C++ fit: build failed\n" + r.stderr[-2000:], file=sys.stderr)
            return None
    return exe


def run_cpp_fit(exe, max_wait):
    load = wait_for_quiet(max_wait)
    out = subprocess.run(["taskset", "-c", "0", exe, "mnist"], capture_output=True, text=True, env=one_thread_env(),
                         cwd=ROOT)
    parts = out.stdout.split()
    if out.returncode != 0 or len(parts) < 4:
        print("C++ fit: " + out.stderr[-500:], file=sys.stderr)
        return None
    return {FIT: float(parts[1]) / 2 * 1e3, "loss": float(parts[2]), "threads": f"ef::num_threads() {parts[3]}",
            "load": load}


def versions(python, mod):
    r = subprocess.run([python, "-c", f"import {mod}; print({mod}.__version__)"], capture_output=True, text=True,
                       env=one_thread_env())
    return r.stdout.strip().splitlines()[-1] if r.returncode == 0 else None


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "?"


def fmt(v):
    return "-" if v is None else f"{v:.3g}"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--ef-python", default=os.path.join(HOME, ".cache/eagerflow/venv/bin/python"))
    p.add_argument("--peer-python", default=os.path.join(HOME, ".cache/eagerflow/peers/bin/python"))
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    p.add_argument("--max-wait", type=float, default=180, help="seconds to wait for a quiet machine per job")
    p.add_argument("--jobs", help="comma-separated subset of the jobs, e.g. 'ef fit (Python),ef fit (C++)'")
    p.add_argument("--job", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.job:
        print("RESULT " + json.dumps(JOBS[args.job]()))
        return
    if not shutil.which("taskset"):
        sys.exit("taskset is needed (util-linux)")

    have = {"torch": versions(args.peer_python, "torch"), "jax": versions(args.peer_python, "jax"),
            "tensorflow": versions(args.peer_python, "tensorflow"), "eagerflow": versions(args.ef_python, "eagerflow")}
    peers = [n for n in ("torch", "torch.compile", "jax", "tensorflow")
             if have[n.split(".")[0]] and not (n == "torch.compile" and args.no_compile)]
    exe = build_cpp_fit()
    jobs = ["eagerflow", *peers, "ef fit (Python)"] + (["ef fit (C++)"] if exe else [])
    if args.jobs:
        keep = args.jobs.split(",")
        jobs, peers = [j for j in jobs if j in keep], [p_ for p_ in peers if p_ in keep]
    runs = {j: [] for j in jobs}
    for r in range(args.rounds):
        order = jobs[r % len(jobs):] + jobs[:r % len(jobs)]  # a different job goes first each round
        for j in order:
            if j == "ef fit (C++)":
                res = run_cpp_fit(exe, args.max_wait)
            else:
                python = args.ef_python if j in ("eagerflow", "ef fit (Python)") else args.peer_python
                res = run_job(python, j, args.max_wait)
            if res:
                runs[j].append(res)
            print(f"round {r + 1} {j}: " + json.dumps(res), file=sys.stderr, flush=True)

    def med(job, key):
        vals = [x[key] for x in runs.get(job, []) if x.get(key) is not None]
        return statistics.median(vals) if vals else None

    loads = [x["load"] for v in runs.values() for x in v] or [0.0]
    missing = [n for n in ("torch", "jax", "tensorflow") if not have[n]]
    print(f"date: {time.strftime('%Y-%m-%d %H:%M')}; CPU: {cpu_name()} ({os.cpu_count()} cores); every job pinned "
          f"to core 0 (taskset -c 0), OMP_NUM_THREADS=1; {args.rounds} rounds, interleaved; 1-min load at job starts "
          f"{min(loads):.2f}..{max(loads):.2f}")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in have.items() if v) + f"; Python {sys.version.split()[0]}"
          + (f"; missing: {', '.join(missing)}" if missing else ""))
    print("threads check (configured; process CPU time / wall time on a 256x256 matmul loop or the fit; OS threads):")
    for j in jobs:
        if runs[j]:
            x = runs[j][-1]
            cw = f", cpu/wall {x['cpu/wall']:.2f}" if "cpu/wall" in x else ""
            ot = f", {x['os threads']} OS threads" if "os threads" in x else ""
            print(f"  {j}: {x['threads']}{cw}{ot}")
    if runs.get("eagerflow"):  # the op table (absent when --jobs ran only the fits)
        print("\nmedians over rounds; ratio = eagerflow / peer (below 1: eagerflow faster)\n")
        print("| workload | eagerflow | " + " | ".join(f"{p_} | ratio" for p_ in peers) + " |")
        print("|" + "---|" * (2 + 2 * len(peers)))
        for row in ROWS:
            ours = med("eagerflow", row)
            line = f"| {row} | {fmt(ours)} |"
            for p_ in peers:
                theirs = med(p_, row)
                line += f" {fmt(theirs)} | {ours / theirs:.2f} |" if theirs and ours else " - | - |"
            print(line)
        for label, (a, b) in (("4 MB / 4 KB, NumPy -> tensor", (IN_L, IN_S)), ("4 MB / 4 KB, tensor -> NumPy", (OUT_L, OUT_S))):
            line = f"| {label} (1 = no copy) | {fmt(med('eagerflow', a) / med('eagerflow', b)) if med('eagerflow', b) else '-'} |"
            for p_ in peers:
                x, y = med(p_, a), med(p_, b)
                line += f" {fmt(x / y)} | |" if x and y else " - | |"
            print(line)
    py, cpp = med("ef fit (Python)", FIT), med("ef fit (C++)", FIT)
    print(f"\n| {FIT} | from Python | from C++ | Python / C++ |\n|---|---|---|---|")
    ratio = f"{py / cpp:.3f}" if py and cpp else "-"
    pairs = [a[FIT] / b[FIT] for a, b in zip(runs.get("ef fit (Python)", []), runs.get("ef fit (C++)", []))]
    if pairs:  # the two fits of one round ran one after the other: their ratio is less exposed to drift
        ratio += f" (median of per-round ratios {statistics.median(pairs):.3f})"
    print(f"| per-epoch medians ({len(runs.get('ef fit (Python)', []))} and {len(runs.get('ef fit (C++)', []))} fits) "
          f"| {fmt(py)} | {fmt(cpp)} | {ratio} |")
    for j in ("ef fit (Python)", "ef fit (C++)"):
        if runs.get(j):
            print(f"  {j}: per epoch ms " + ", ".join(f"{x[FIT]:.1f}" for x in runs[j])
                  + f"; final loss {runs[j][-1]['loss']:.6g}")


if __name__ == "__main__":
    main()
