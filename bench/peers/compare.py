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
                          "--benchmark_filter=CachedCall|EagerAddOverhead|SeedLayer|TraceSeed|MatMul/batch:60"],
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
    }


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
        return {
            "per-op overhead: eager add of 1-element tensors (us)": median_us(lambda: a + b),
            "cached traced call of a 1-element add (us)": median_us(lambda: traced_add(a, b)),
            "seed layer Dense(32) on [60,28,28], eager (us)": median_us(lambda: lin(x)),
            "seed layer Dense(32) on [60,28,28], traced replay (us)": median_us(lambda: traced_lin(x)),
            "time to trace the seed layer (ms)": once_ms(lambda: torch.jit.trace(lin, x)),
        }


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
    }


def tf_peer(threads):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(threads)
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
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=os.cpu_count())
    args = p.parse_args()
    results = {"eagerflow": eagerflow(args.threads)}
    for name, fn in (("torch", torch_peer), ("jax", jax_peer), ("tensorflow", tf_peer)):
        try:
            results[name] = fn(args.threads)
        except ImportError:
            print(f"{name}: not installed, skipped", file=sys.stderr)
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
