#!/usr/bin/env python3
"""Transformer block train step, side by side (issue 18): eagerflow (C++ bench binary and the
Python front end), Keras 3 on TensorFlow (tf.function with and without jit_compile), PyTorch
eager (fused Adam) and torch.compile (cold-cache first call and warm steps), JAX (jit).

Workload (bench/transformer_bench.cpp): x [16, 256, 256] (--seq 512 or 1024: [8, 512, 256] or
[4, 1024, 256], the same 4,096 tokens; the C++ rows BM_TransformerBlockLongSeq), pre-norm block LayerNorm(eps 1e-5) ->
causal multi-head attention (4 heads x 64, q/k/v/output projections with bias) -> residual ->
LayerNorm -> Dense 1024 gelu (erf) -> Dense 256 -> residual; loss mean((block(x) - y)^2);
Adam(lr 1e-3, betas 0.9 / 0.999, eps 1e-7). Inputs and weights come from one integer hash
(hashed_uniform, the same in the C++ bench), kernels glorot-uniform-sized, biases 0,
LayerNorm gamma 1 / beta 0: every framework starts from the same numbers and the first step's
loss (loss0) agrees.

Every job is a process of its own, pinned with taskset to the first N cores, with every thread
pool limited to N (OMP/MKL, torch.set_num_threads, TF intra N / inter 1, XLA_FLAGS) and checked:
process CPU time / wall time over the timed steps, and the OS thread count. Jobs are interleaved
(a different one first each round); each round holds the build lock (/tmp/ef-build.lock, the
one `flock` takes) so nobody compiles during a round, and releases it between rounds.

    ~/.cache/eagerflow/peers/bin/python bench/peers/transformer_peers.py --rounds 3 --threads 1,2
    ~/.cache/eagerflow/peers/bin/python bench/peers/transformer_peers.py --rounds 3 --seq 1024 --jobs ...
"""
import argparse
import fcntl
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOME = os.path.expanduser("~")
B, T, C, HEADS, HIDDEN = 16, 256, 256, 4, 1024
TOKENS = B * T
KD = C // HEADS


def set_seq(seq):
    """The block at sequence `seq`, the batch keeping 4,096 tokens (as the C++ rows do)."""
    global B, T
    if TOKENS % seq:
        raise SystemExit(f"--seq {seq} does not divide {TOKENS} tokens")
    B, T = TOKENS // seq, seq
EPS_LN, LR, EPS_ADAM = 1e-5, 1e-3, 1e-7


# ---------------------------------------------------------------- shared numbers


def hashed_uniform(shape, salt, limit):
    """bench/transformer_bench.cpp's transformer_values: uniform in [-limit, limit)."""
    import numpy as np
    n = int(np.prod(shape))
    i = np.arange(n, dtype=np.uint64)
    m = np.uint64(0xFFFFFFFF)
    h = (i * np.uint64(2654435761) + np.uint64(salt * 40503 + 12345)) & m
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x45D9F3B)) & m
    h ^= h >> np.uint64(16)
    u = h.astype(np.float64) / 4294967296.0
    return ((2.0 * u - 1.0) * limit).astype(np.float32).reshape(shape)


def glorot(fan_in, fan_out):
    return (6.0 / (fan_in + fan_out)) ** 0.5


def numbers():
    """x, y and the weights as (in, out) matrices: wq, wk, wv, wo [256, 256], w1 [256, 1024], w2 [1024, 256]."""
    lim, lim2 = glorot(C, C), glorot(C, HIDDEN)
    return {
        "x": hashed_uniform((B, T, C), 1, 1.0), "y": hashed_uniform((B, T, C), 2, 1.0),
        "wq": hashed_uniform((C, C), 11, lim), "wk": hashed_uniform((C, C), 12, lim),
        "wv": hashed_uniform((C, C), 13, lim), "wo": hashed_uniform((C, C), 14, lim),
        "w1": hashed_uniform((C, HIDDEN), 15, lim2), "w2": hashed_uniform((HIDDEN, C), 16, lim2),
    }


# ---------------------------------------------------------------- timing inside a job


def time_steps(step, threads, steps, info, warm=2):
    """step() runs one train step and returns the loss as a Python float."""
    t0 = time.perf_counter()
    loss0 = step()  # trace / compile, and the loss before any update
    first_ms = (time.perf_counter() - t0) * 1e3
    for _ in range(warm - 1):
        step()
    times = []
    c0, w0 = time.process_time(), time.perf_counter()
    for _ in range(steps):
        t = time.perf_counter()
        loss = step()
        times.append((time.perf_counter() - t) * 1e3)
    cpu_per_wall = (time.process_time() - c0) / (time.perf_counter() - w0)
    return {"median_ms": statistics.median(times), "min_ms": min(times), "first_ms": first_ms, "loss0": loss0,
            "loss": loss, "cpu_per_wall": cpu_per_wall, "os_threads": len(os.listdir("/proc/self/task")),
            "threads": info, "steps": steps}


def set_weights(layer, arrays):
    """layer.set_weights (eagerflow's Python layers have no set_weights yet: assign each variable)."""
    assert len(layer.weights) == len(arrays)
    for v, a in zip(layer.weights, arrays):
        assert tuple(v.shape) == a.shape, (v.name, tuple(v.shape), a.shape)
        v.assign(a)


def keras_block(keras, w):
    """The block with Keras layers (also eagerflow's Python front end, ef.keras)."""
    L = keras.layers
    inp = keras.Input((T, C))
    mha = L.MultiHeadAttention(num_heads=HEADS, key_dim=KD)
    up, down = L.Dense(HIDDEN, activation="gelu"), L.Dense(C)
    h = L.LayerNormalization(epsilon=EPS_LN)(inp)
    a = L.Add()([inp, mha(h, h, use_causal_mask=True)])
    out = L.Add()([a, down(up(L.LayerNormalization(epsilon=EPS_LN)(a)))])
    model = keras.Model(inp, out)
    import numpy as np
    z = lambda *s: np.zeros(s, np.float32)
    # Keras' MultiHeadAttention weights: q/k/v kernels [in, heads, key_dim], output [heads, key_dim, out].
    set_weights(mha, [w["wq"].reshape(C, HEADS, KD), z(HEADS, KD), w["wk"].reshape(C, HEADS, KD), z(HEADS, KD),
                     w["wv"].reshape(C, HEADS, KD), z(HEADS, KD), w["wo"].reshape(HEADS, KD, C), z(C)])
    set_weights(up, [w["w1"], z(HIDDEN)])
    set_weights(down, [w["w2"], z(C)])
    return model


def job_ef_python(threads, steps):
    import eagerflow as ef
    from eagerflow import keras
    ef.set_num_threads(threads)
    w = numbers()
    model = keras_block(keras, w)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=LR, beta_1=0.9, beta_2=0.999, epsilon=EPS_ADAM),
                  loss="mse")
    x, y = w["x"], w["y"]
    return time_steps(lambda: float(model.train_on_batch(x, y)), threads, steps, f"ef.num_threads() {ef.num_threads()}")


def job_keras_tf(threads, steps, xla):
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    import keras
    w = numbers()
    model = keras_block(keras, w)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=LR, beta_1=0.9, beta_2=0.999, epsilon=EPS_ADAM),
                  loss="mse", jit_compile=xla)
    x, y = tf.constant(w["x"]), tf.constant(w["y"])
    info = (f"intra {tf.config.threading.get_intra_op_parallelism_threads()}, inter "
            f"{tf.config.threading.get_inter_op_parallelism_threads()}, keras {keras.__version__}")
    return time_steps(lambda: float(model.train_on_batch(x, y)), threads, steps, info)


def torch_setup(threads):
    import torch
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    import torch.nn as nn
    import torch.nn.functional as F
    w = numbers()

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(C, eps=EPS_LN), nn.LayerNorm(C, eps=EPS_LN)
            self.q, self.k, self.v, self.o = (nn.Linear(C, C) for _ in range(4))
            self.up, self.down = nn.Linear(C, HIDDEN), nn.Linear(HIDDEN, C)
            with torch.no_grad():
                for lin, name in ((self.q, "wq"), (self.k, "wk"), (self.v, "wv"), (self.o, "wo"), (self.up, "w1"),
                                  (self.down, "w2")):
                    lin.weight.copy_(torch.from_numpy(w[name].T.copy()))  # torch keeps [out, in]
                    lin.bias.zero_()

        def forward(self, x):
            h = self.ln1(x)
            heads = lambda t: t.view(B, T, HEADS, KD).transpose(1, 2)
            a = F.scaled_dot_product_attention(heads(self.q(h)), heads(self.k(h)), heads(self.v(h)), is_causal=True)
            x = x + self.o(a.transpose(1, 2).reshape(B, T, C))
            return x + self.down(F.gelu(self.up(self.ln2(x))))  # F.gelu: the erf form

    block = Block()
    opt = torch.optim.Adam(block.parameters(), lr=LR, betas=(0.9, 0.999), eps=EPS_ADAM, fused=True)
    x, y = torch.from_numpy(w["x"]), torch.from_numpy(w["y"])

    def step():
        opt.zero_grad(set_to_none=True)
        loss = ((block(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        return loss.detach()

    info = f"torch.get_num_threads() {torch.get_num_threads()}, interop {torch.get_num_interop_threads()}, {torch.__version__}"
    return torch, step, info


def job_torch(threads, steps):
    torch, step, info = torch_setup(threads)
    return time_steps(lambda: float(step()), threads, steps, info)


def job_torch_compile(threads, steps):
    # A fresh, empty inductor cache: the first call is a cold compile.
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="ef-inductor-")
    torch, step, info = torch_setup(threads)
    compiled = torch.compile(step)
    try:
        return time_steps(lambda: float(compiled()), threads, steps, info + ", inductor (cold cache)")
    finally:
        shutil.rmtree(os.environ["TORCHINDUCTOR_CACHE_DIR"], ignore_errors=True)


def job_jax(threads, steps):
    import jax
    import jax.numpy as jnp
    w = numbers()
    params = {k: jnp.asarray(v) for k, v in w.items() if k.startswith("w")}
    params.update({f"b{k[1:]}": jnp.zeros(v.shape[1], jnp.float32) for k, v in w.items() if k.startswith("w")})
    params.update({"g1": jnp.ones(C), "be1": jnp.zeros(C), "g2": jnp.ones(C), "be2": jnp.zeros(C)})
    x, y = jnp.asarray(w["x"]), jnp.asarray(w["y"])

    def ln(t, g, b):
        mu = jnp.mean(t, -1, keepdims=True)
        var = jnp.mean(jnp.square(t - mu), -1, keepdims=True)
        return (t - mu) * jax.lax.rsqrt(var + EPS_LN) * g + b

    def block(p, x):
        h = ln(x, p["g1"], p["be1"])
        heads = lambda t: t.reshape(B, T, HEADS, KD)
        a = jax.nn.dot_product_attention(heads(h @ p["wq"] + p["bq"]), heads(h @ p["wk"] + p["bk"]),
                                         heads(h @ p["wv"] + p["bv"]), is_causal=True)
        x = x + a.reshape(B, T, C) @ p["wo"] + p["bo"]
        u = jax.nn.gelu(ln(x, p["g2"], p["be2"]) @ p["w1"] + p["b1"], approximate=False)
        return x + u @ p["w2"] + p["b2"]

    def loss_fn(p):
        return jnp.mean(jnp.square(block(p, x) - y))

    @jax.jit
    def step(p, m, v, t):  # Adam as Keras 3 writes it
        loss, g = jax.value_and_grad(loss_fn)(p)
        t = t + 1
        alpha = LR * jnp.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        m = jax.tree.map(lambda m_, g_: m_ + (g_ - m_) * 0.1, m, g)
        v = jax.tree.map(lambda v_, g_: v_ + (g_ * g_ - v_) * 0.001, v, g)
        p = jax.tree.map(lambda p_, m_, v_: p_ - alpha * m_ / (jnp.sqrt(v_) + EPS_ADAM), p, m, v)
        return p, m, v, t, loss

    state = [params, jax.tree.map(jnp.zeros_like, params), jax.tree.map(jnp.zeros_like, params), jnp.float32(0)]

    def run():
        state[0], state[1], state[2], state[3], loss = step(*state)
        return float(loss)

    info = f"XLA_FLAGS={os.environ.get('XLA_FLAGS')!r}, {jax.devices()[0].platform}, jax {jax.__version__}"
    return time_steps(run, threads, steps, info)


def job_ef_cpp(threads, steps):
    exe = os.path.join(ROOT, "build/release/bench/ef_bench")
    row = (f"BM_TransformerBlockTrainStep/threads:{threads}/" if T == 256 else
           f"BM_TransformerBlockLongSeq/seq:{T}/threads:{threads}/")
    out = subprocess.run([exe, f"--benchmark_filter={row}",
                          "--benchmark_format=json", "--benchmark_min_time=2"], capture_output=True, text=True,
                         check=True).stdout
    b = json.loads(out)["benchmarks"][0]
    return {"median_ms": b["median_ms"], "first_ms": None, "loss0": b["loss0"], "loss": b["loss"],
            "cpu_per_wall": b["cpu_per_wall"], "os_threads": None, "threads": f"ef::set_num_threads({threads})",
            "steps": b["iterations"]}


JOBS = {
    "eagerflow (C++)": job_ef_cpp,
    "eagerflow (Python)": job_ef_python,
    "Keras/TF": lambda n, s: job_keras_tf(n, s, False),
    "Keras/TF jit_compile": lambda n, s: job_keras_tf(n, s, True),
    "torch eager": job_torch,
    "torch.compile": job_torch_compile,
    "JAX jit": job_jax,
}
EF_JOBS = ("eagerflow (C++)", "eagerflow (Python)")


# ---------------------------------------------------------------- the driver


def job_env(threads):
    return dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
                OPENBLAS_NUM_THREADS=str(threads), TF_NUM_INTRAOP_THREADS=str(threads), TF_NUM_INTEROP_THREADS="1",
                TF_CPP_MIN_LOG_LEVEL="3", KERAS_BACKEND="tensorflow", CUDA_VISIBLE_DEVICES="", JAX_PLATFORMS="cpu",
                XLA_FLAGS=f"--xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'} "
                          f"intra_op_parallelism_threads={threads}",
                TORCHINDUCTOR_COMPILE_THREADS="1",
                # eagerflow's jobs import the tree's build (the peers' interpreter never sees it)
                PYTHONPATH=os.path.join(ROOT, "build/release/python_package"))


def run_job(name, threads, steps, ef_python, peer_python, seq):
    with open("/proc/loadavg") as f:
        load = float(f.read().split()[0])
    python = ef_python if name == "eagerflow (Python)" else peer_python
    cpus = ",".join(str(c) for c in range(threads))
    cmd = ["taskset", "-c", cpus, python, os.path.abspath(__file__), "--job", name, "--threads", str(threads),
           "--steps", str(steps), "--seq", str(seq)]
    t0 = time.time()
    out = subprocess.run(cmd, capture_output=True, text=True, env=job_env(threads), cwd=ROOT)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            r = json.loads(line[len("RESULT "):])
            r.update(load=load, job_s=time.time() - t0)
            return r
    tail = "\n".join((out.stderr.strip().splitlines() or ["no output"])[-5:])
    print(f"{name} threads={threads}: no result\n{tail}", file=sys.stderr)
    return None


def cpu_name():
    r = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    return next((l.split(":", 1)[1].strip() for l in r.splitlines() if l.startswith("Model name")), "?")


def table(runs, threads_list, jobs):
    def med(j, n, key):
        vals = [r[key] for r in runs.get(f"{j}|{n}", []) if r and r.get(key) is not None]
        return statistics.median(vals) if vals else None

    lines = ["| threads | " + " | ".join(jobs) + " | best peer | eagerflow (C++) / best peer |",
             "|---:|" + "---:|" * len(jobs) + "---|---:|"]
    for n in threads_list:
        cells, best = [], None
        for j in jobs:
            m = med(j, n, "median_ms")
            cells.append("-" if m is None else f"{m:.1f}")
            if j not in EF_JOBS and m is not None and (best is None or m < best[1]):
                best = (j, m)
        ef = med("eagerflow (C++)", n, "median_ms")
        ratio = f"{ef / best[1]:.2f}" if ef and best else "-"
        lines.append(f"| {n} | " + " | ".join(cells) + f" | {best[0] if best else '-'} | {ratio} |")
    lines.append("")
    lines.append("first call (trace / compile + first step, ms; torch.compile with an empty inductor cache):")
    for n in threads_list:
        lines.append(f"  threads {n}: " + ", ".join(
            f"{j} {med(j, n, 'first_ms'):.0f}" for j in jobs if med(j, n, "first_ms") is not None))
    lines.append("loss before the first update (must agree) / thread check (median cpu/wall; OS threads; settings):")
    for n in threads_list:
        for j in jobs:
            rs = [r for r in runs.get(f"{j}|{n}", []) if r]
            if rs:
                lines.append(f"  threads {n} {j}: loss0 {rs[-1]['loss0']:.6f}, cpu/wall {med(j, n, 'cpu_per_wall'):.2f}, "
                             f"OS threads {rs[-1]['os_threads']}, {rs[-1]['threads']}; per-round medians "
                             + " / ".join(f"{r['median_ms']:.1f}" for r in rs))
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--steps", type=int, default=10, help="timed steps per job (after the first call and a warm one)")
    p.add_argument("--jobs", help="comma-separated subset of: " + ", ".join(JOBS))
    p.add_argument("--results", default=None, help="JSON file the runs are appended to (and read back: resume)")
    p.add_argument("--no-lock", action="store_true", help="do not take /tmp/ef-build.lock per round")
    p.add_argument("--ef-python", default=os.path.join(HOME, ".cache/eagerflow/venv/bin/python"))
    p.add_argument("--peer-python", default=os.path.join(HOME, ".cache/eagerflow/peers/bin/python"))
    p.add_argument("--seq", type=int, default=256, help="sequence length (the batch keeps 4,096 tokens)")
    p.add_argument("--job", help=argparse.SUPPRESS)
    p.add_argument("--table-only", action="store_true")
    args = p.parse_args()
    set_seq(args.seq)
    if args.job:
        print("RESULT " + json.dumps(JOBS[args.job](int(args.threads), args.steps)), flush=True)
        return
    threads_list = [int(t) for t in args.threads.split(",")]
    jobs = [j for j in JOBS if not args.jobs or j in args.jobs.split(",")]
    runs = {}
    if args.results and os.path.exists(args.results):
        with open(args.results) as f:
            runs = json.load(f)
    if not args.table_only:
        for r in range(args.rounds):
            lock = None
            if not args.no_lock:
                lock = open("/tmp/ef-build.lock", "a")
                fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                print(f"round {r + 1}: {time.strftime('%H:%M:%S', time.gmtime())} UTC, load "
                      f"{open('/proc/loadavg').read().split()[0]}", file=sys.stderr, flush=True)
                for n in threads_list:
                    order = jobs[r % len(jobs):] + jobs[:r % len(jobs)]
                    for j in order:
                        res = run_job(j, n, args.steps, args.ef_python, args.peer_python, args.seq)
                        runs.setdefault(f"{j}|{n}", []).append(res)
                        print(f"  threads {n} {j}: " + json.dumps(res), file=sys.stderr, flush=True)
            finally:
                if lock:
                    lock.close()
            if args.results:
                with open(args.results, "w") as f:
                    json.dump(runs, f, indent=1)
    loads = [r["load"] for v in runs.values() for r in v if r]
    print(f"date: {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC; CPU: {cpu_name()} ({os.cpu_count()} cores); "
          f"x [{B}, {T}, {C}]; "
          f"each job pinned to the first N cores (taskset); 1-min load at job starts "
          f"{min(loads, default=0):.2f}..{max(loads, default=0):.2f}")
    print(table(runs, threads_list, jobs))


if __name__ == "__main__":
    main()
