#!/usr/bin/env python3
"""Side-by-side: eagerflow's benchmarks and the same workloads in PyTorch, JAX and TensorFlow.

Runs build/release/bench/ef_bench (JSON) and the peers in one go on the same machine, then
prints medians and eagerflow/peer ratios. Peers live in a virtualenv outside the repository:
    python3 -m venv ~/peers && ~/peers/bin/pip install torch jax tensorflow-cpu
    ~/peers/bin/python bench/peers/compare.py [--threads N]
A peer that is not installed is skipped.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def median_us(fn, min_time=0.3, repeats=7):
    """Median over `repeats` batches of the per-call time in microseconds."""
    fn()
    n = 1
    while True:  # size a batch to take about min_time / repeats
        t = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t
        if dt > min_time / repeats or n > 1 << 22:
            break
        n *= 4
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(samples)


def once_ms(fn, repeats=5):
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1e3)
    return statistics.median(samples)


def eagerflow(threads):
    exe = os.path.join(ROOT, "build/release/bench/ef_bench")
    out = subprocess.run([exe, "--benchmark_format=json", "--benchmark_repetitions=5",
                          "--benchmark_report_aggregates_only=true", "--benchmark_min_time=0.3",
                          "--benchmark_filter=CachedCall|EagerAddOverhead|SeedLayer|TraceSeed|MatMul/batch:60|TrainStep"],
                         capture_output=True, text=True, check=True).stdout
    res = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        name = b["run_name"]
        unit = {"ns": 1e-3, "us": 1.0, "ms": 1e3}[b["time_unit"]]
        res[name] = b["real_time"] * unit
    pick = lambda key: next((v for k, v in res.items() if k.startswith(key)), None)
    return {
        "per-op overhead: eager add of 1-element tensors (us)": pick("BM_EagerAddOverhead"),
        "cached traced call of a 1-element add (us)": pick("BM_CachedCallOverhead"),
        "seed layer Dense(32) on [60,28,28], eager (us)": pick(f"BM_SeedLayerEager/threads:{threads}"),
        "seed layer Dense(32) on [60,28,28], traced replay (us)": pick(f"BM_SeedLayerReplay/threads:{threads}"),
        "time to trace the seed layer (ms)": (pick("BM_TraceSeedLayer") or 0) / 1e3,
        "MLP 784-512-512-10 train step, Adam, batch 128 (ms)": (pick(f"BM_MlpTrainStep/threads:{threads}") or 0) / 1e3,
        "CNN conv16-pool-conv32-pool-dense10 train step, Adam, batch 128 (ms)":
            (pick(f"BM_CnnTrainStep/threads:{threads}") or 0) / 1e3,
        "trace + prepare + first run of the MLP train step (ms)": (pick("BM_MlpTrainStepFirstCall") or 0) / 1e3,
    }


MLP = "MLP 784-512-512-10 train step, Adam, batch 128 (ms)"
CNN = "CNN conv16-pool-conv32-pool-dense10 train step, Adam, batch 128 (ms)"
FIRST = "trace + prepare + first run of the MLP train step (ms)"


def torch_train(threads, compiled):
    import torch
    import torch.nn as nn
    torch.manual_seed(0)
    x = torch.rand(128, 28, 28)
    xc = x.reshape(128, 1, 28, 28)
    y = torch.randint(0, 10, (128,))
    mlp = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    cnn = nn.Sequential(nn.Conv2d(1, 16, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Linear(800, 10))
    out = {}
    for name, model, inp in ((MLP, mlp, x), (CNN, cnn, xc)):
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        def step(inp=inp, model=model):
            loss = nn.functional.cross_entropy(model(inp), y)
            loss.backward()
            return loss
        fn = torch.compile(step) if compiled else step
        def train(fn=fn, opt=opt):
            opt.zero_grad(set_to_none=True)
            fn()
            opt.step()
        t = time.perf_counter()
        train()
        if compiled and name == MLP:
            out[FIRST] = (time.perf_counter() - t) * 1e3
        out[name] = median_us(train, min_time=1.0) / 1e3
    return out


def torch_peer(threads):
    import torch
    torch.set_num_threads(threads)
    a, b = torch.tensor(1.0), torch.tensor(2.0)
    add = lambda x, y: x + y
    traced_add = torch.jit.trace(add, (a, b))
    lin = torch.nn.Linear(28, 32)
    x = torch.rand(60, 28, 28)
    with torch.no_grad():
        traced_lin = torch.jit.trace(lin, x)
        inference = {
            "per-op overhead: eager add of 1-element tensors (us)": median_us(lambda: a + b),
            "cached traced call of a 1-element add (us)": median_us(lambda: traced_add(a, b)),
            "seed layer Dense(32) on [60,28,28], eager (us)": median_us(lambda: lin(x)),
            "seed layer Dense(32) on [60,28,28], traced replay (us)": median_us(lambda: traced_lin(x)),
            "time to trace the seed layer (ms)": once_ms(lambda: torch.jit.trace(lin, x)),
        }
    return {**inference, **torch_train(threads, compiled=False)}


def torch_compile_peer(threads):
    return torch_train(threads, compiled=True)


def jax_peer(threads):
    import jax
    import jax.numpy as jnp
    a, b = jnp.float32(1.0), jnp.float32(2.0)
    jadd = jax.jit(lambda x, y: x + y)
    key = jax.random.PRNGKey(0)
    w, bias = jax.random.uniform(key, (28, 32)), jnp.zeros((32,))
    x = jax.random.uniform(key, (60, 28, 28))
    dense = lambda x, w, b: x @ w + b
    jdense = jax.jit(dense)
    block = lambda f: (lambda: f().block_until_ready())
    return {
        "per-op overhead: eager add of 1-element tensors (us)": median_us(block(lambda: a + b)),
        "cached traced call of a 1-element add (us)": median_us(block(lambda: jadd(a, b))),
        "seed layer Dense(32) on [60,28,28], eager (us)": median_us(block(lambda: dense(x, w, bias))),
        "seed layer Dense(32) on [60,28,28], traced replay (us)": median_us(block(lambda: jdense(x, w, bias))),
        "time to trace the seed layer (ms)": once_ms(lambda: jax.jit(dense).lower(x, w, bias).compile()),
        **jax_train(),
    }


def jax_train():
    import jax
    import jax.numpy as jnp

    def init(key, shapes):
        params = []
        for s in shapes:
            key, sub = jax.random.split(key)
            params.append(jax.random.normal(sub, s) * 0.05)
        return params

    def adam_step(loss_fn):
        @jax.jit
        def step(params, m, v, t, x, y):
            loss, g = jax.value_and_grad(loss_fn)(params, x, y)
            t = t + 1
            m = [0.9 * a + 0.1 * b for a, b in zip(m, g)]
            v = [0.999 * a + 0.001 * b * b for a, b in zip(v, g)]
            alpha = 1e-3 * jnp.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
            params = [p - alpha * a / (jnp.sqrt(b) + 1e-7) for p, a, b in zip(params, m, v)]
            return params, m, v, t, loss
        return step

    def xent(logits, y):
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    def mlp_loss(p, x, y):
        h = jax.nn.relu(x.reshape(x.shape[0], -1) @ p[0] + p[1])
        h = jax.nn.relu(h @ p[2] + p[3])
        return xent(h @ p[4] + p[5], y)

    def cnn_loss(p, x, y):
        dn = ("NHWC", "HWIO", "NHWC")
        pool = lambda t: jax.lax.reduce_window(t, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        h = pool(jax.nn.relu(jax.lax.conv_general_dilated(x, p[0], (1, 1), "VALID", dimension_numbers=dn) + p[1]))
        h = pool(jax.nn.relu(jax.lax.conv_general_dilated(h, p[2], (1, 1), "VALID", dimension_numbers=dn) + p[3]))
        return xent(h.reshape(h.shape[0], -1) @ p[4] + p[5], y)

    key = jax.random.PRNGKey(0)
    x = jax.random.uniform(key, (128, 28, 28))
    y = jax.random.randint(key, (128,), 0, 10)
    out = {}
    for name, loss_fn, shapes, inp in (
            (MLP, mlp_loss, [(784, 512), (512,), (512, 512), (512,), (512, 10), (10,)], x),
            (CNN, cnn_loss, [(3, 3, 1, 16), (16,), (3, 3, 16, 32), (32,), (800, 10), (10,)], x.reshape(128, 28, 28, 1))):
        params = init(key, shapes)
        state = [params, [jnp.zeros_like(q) for q in params], [jnp.zeros_like(q) for q in params], 0.0]
        step = adam_step(loss_fn)
        t = time.perf_counter()
        jax.block_until_ready(step(*state, inp, y))
        if name == MLP:
            out[FIRST] = (time.perf_counter() - t) * 1e3
        def train(step=step, state=state, inp=inp):
            res = step(*state, inp, y)
            state[:4] = res[:4]
            jax.block_until_ready(res[4])
        out[name] = median_us(train, min_time=1.0) / 1e3
    return out


def tf_peer(threads):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    a, b = tf.constant(1.0), tf.constant(2.0)
    fadd = tf.function(lambda x, y: x + y)
    layer = tf.keras.layers.Dense(32)
    x = tf.random.uniform((60, 28, 28))
    layer(x)
    flayer = tf.function(layer)
    flayer(x)
    def trace():
        tf.function(lambda t: layer(t)).get_concrete_function(tf.TensorSpec((60, 28, 28), tf.float32))
    return {
        "per-op overhead: eager add of 1-element tensors (us)": median_us(lambda: a + b),
        "cached traced call of a 1-element add (us)": median_us(lambda: fadd(a, b)),
        "seed layer Dense(32) on [60,28,28], eager (us)": median_us(lambda: layer(x)),
        "seed layer Dense(32) on [60,28,28], traced replay (us)": median_us(lambda: flayer(x)),
        "time to trace the seed layer (ms)": once_ms(trace),
        **tf_train(),
    }


def tf_train():
    import tensorflow as tf
    tf.random.set_seed(0)
    x = tf.random.uniform((128, 28, 28))
    y = tf.random.uniform((128,), 0, 10, dtype=tf.int64)
    L = tf.keras.layers
    mlp = tf.keras.Sequential([L.Flatten(), L.Dense(512, "relu"), L.Dense(512, "relu"), L.Dense(10)])
    cnn = tf.keras.Sequential([L.Reshape((28, 28, 1)), L.Conv2D(16, 3, activation="relu"), L.MaxPooling2D(),
                               L.Conv2D(32, 3, activation="relu"), L.MaxPooling2D(), L.Flatten(), L.Dense(10)])
    out = {}
    for name, model in ((MLP, mlp), (CNN, cnn)):
        model.compile(tf.keras.optimizers.Adam(1e-3), tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        t = time.perf_counter()
        model.train_on_batch(x, y)
        if name == MLP:
            out[FIRST] = (time.perf_counter() - t) * 1e3
        out[name] = median_us(lambda model=model: model.train_on_batch(x, y), min_time=1.0) / 1e3
    return out


PEERS = {"torch": "torch_peer", "torch.compile": "torch_compile_peer", "jax": "jax_peer", "tensorflow": "tf_peer"}


def limit_threads(framework, threads):
    """The framework's pools to `threads` (before it is imported: each peer runs in a process
    of its own, since torch, JAX and TensorFlow clash when loaded together)."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    if framework == "jax":
        os.environ["XLA_FLAGS"] = (f"--xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'} "
                                   f"intra_op_parallelism_threads={threads}")
    if framework.startswith("torch"):
        import torch
        torch.set_num_threads(threads)
        torch.set_num_interop_threads(1)
        assert torch.get_num_threads() == threads
    if framework == "tensorflow":
        import tensorflow as tf
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(1)


def run_peer(name, threads):
    """Runs one peer in a child process; its results, or None when it is not installed."""
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--peer", name, "--threads", str(threads)],
                         capture_output=True, text=True)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    print(f"{name}: no result ({out.stderr.strip().splitlines()[-1:] if out.stderr else 'no output'})", file=sys.stderr)
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile (slow to compile)")
    p.add_argument("--peer", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.peer:
        limit_threads(args.peer, args.threads)
        try:
            print("RESULT " + json.dumps(globals()[PEERS[args.peer]](args.threads)))
        except ImportError:
            pass
        return
    results = {"eagerflow": eagerflow(args.threads)}
    for name in PEERS:
        if name == "torch.compile" and args.no_compile:
            continue
        r = run_peer(name, args.threads)
        if r:
            results[name] = r
    peers = [n for n in results if n != "eagerflow"]
    print(f"threads={args.threads}; medians; ratio = eagerflow / peer (below 1: eagerflow faster)\n")
    header = "| workload | eagerflow | " + " | ".join(f"{p} | ratio" for p in peers) + " |"
    print(header)
    print("|" + "---|" * (2 + 2 * len(peers)))
    for metric, ours in results["eagerflow"].items():
        row = f"| {metric} | {ours:.3g} |"
        for p_ in peers:
            theirs = results[p_].get(metric)
            row += f" {theirs:.3g} | {ours / theirs:.2f} |" if theirs and ours else " - | - |"
        print(row)


if __name__ == "__main__":
    main()
