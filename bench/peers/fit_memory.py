#!/usr/bin/env python3
"""Peak resident memory of a process that fits the MLP 784-512-512-10 (relu, Adam 1e-3, sparse
categorical cross-entropy) for 2 epochs on 8,000 random 784-feature rows, batch 128, as a user of
each framework writes it: eagerflow (model.fit), Keras 3 on TensorFlow (model.fit), torch (a
DataLoader-free loop over shuffled indices, fused Adam), JAX (jit'd step, Adam written out).

Each framework runs in a process of its own (pinned to the first core, one thread), which prints
its peak resident set (VmHWM from /proc/self/status) after the fit, and the same before importing
the framework (the interpreter alone). Rounds are interleaved; medians in MB.

    python3 bench/peers/fit_memory.py [--rounds 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOME = os.path.expanduser("~")
N, BATCH, EPOCHS = 8000, 128, 2


def vmhwm_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return None


def data():
    import numpy as np
    rng = np.random.default_rng(0)
    return rng.random((N, 784), dtype=np.float32), rng.integers(0, 10, N).astype(np.int64)


def job_eagerflow():
    sys.path.insert(0, os.path.join(ROOT, "build/release/python_package"))
    import eagerflow as ef
    ef.set_num_threads(1)
    x, y = data()
    model = ef.keras.Sequential([ef.keras.Input((784,)), ef.keras.layers.Dense(512, activation="relu"),
                                 ef.keras.layers.Dense(512, activation="relu"), ef.keras.layers.Dense(10)])
    model.compile(optimizer=ef.keras.optimizers.Adam(1e-3),
                  loss=ef.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model.fit(x, y, batch_size=BATCH, epochs=EPOCHS, verbose=0).history["loss"][-1]


def job_keras():
    os.environ["KERAS_BACKEND"] = "tensorflow"
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    import keras
    x, y = data()
    model = keras.Sequential([keras.Input((784,)), keras.layers.Dense(512, activation="relu"),
                              keras.layers.Dense(512, activation="relu"), keras.layers.Dense(10)])
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return float(model.fit(x, y, batch_size=BATCH, epochs=EPOCHS, verbose=0).history["loss"][-1])


def job_torch():
    import torch
    torch.set_num_threads(1)
    x, y = (torch.from_numpy(a) for a in data())
    model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                                torch.nn.ReLU(), torch.nn.Linear(512, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)
    loss = None
    for _ in range(EPOCHS):
        perm = torch.randperm(N)
        for i in range(0, N, BATCH):
            idx = perm[i:i + BATCH]
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
    return float(loss)


def job_jax():
    import jax
    import jax.numpy as jnp
    import numpy as np
    x, y = data()
    key = jax.random.PRNGKey(0)
    sizes = [784, 512, 512, 10]
    params = []
    for i in range(3):
        key, k = jax.random.split(key)
        lim = (6 / (sizes[i] + sizes[i + 1])) ** 0.5
        params.append((jax.random.uniform(k, (sizes[i], sizes[i + 1]), minval=-lim, maxval=lim), jnp.zeros(sizes[i + 1])))

    def loss_fn(p, xb, yb):
        h = xb
        for i, (w, b) in enumerate(p):
            h = h @ w + b
            if i < 2:
                h = jax.nn.relu(h)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(h), yb[:, None], axis=1))

    @jax.jit
    def step(p, m, v, t, xb, yb):
        loss, g = jax.value_and_grad(loss_fn)(p, xb, yb)
        m = jax.tree_util.tree_map(lambda a, b: 0.9 * a + 0.1 * b, m, g)
        v = jax.tree_util.tree_map(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
        lr = 1e-3 * jnp.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        p = jax.tree_util.tree_map(lambda a, mm, vv: a - lr * mm / (jnp.sqrt(vv) + 1e-7), p, m, v)
        return p, m, v, loss

    m = jax.tree_util.tree_map(jnp.zeros_like, params)
    v = jax.tree_util.tree_map(jnp.zeros_like, params)
    t, loss, rng = 0, None, np.random.default_rng(1)
    for _ in range(EPOCHS):
        perm = rng.permutation(N)
        for i in range(0, N - BATCH + 1, BATCH):  # full batches: one compiled shape
            idx = perm[i:i + BATCH]
            t += 1
            params, m, v, loss = step(params, m, v, t, x[idx], y[idx])
    return float(loss)


JOBS = {"eagerflow": job_eagerflow, "Keras 3 / TF": job_keras, "torch": job_torch, "JAX": job_jax}
# Keras from a TensorFlow-only virtualenv where there is one (TF's import alone is smaller
# there), else from the peers' (scripts/install_peer_deps.sh installs TF and Keras into it).
KERAS_PYTHON = next((p for p in (".cache/tfvenv/bin/python", ".cache/eagerflow/peers/bin/python")
                     if os.path.exists(os.path.join(os.path.expanduser("~"), p))), ".cache/tfvenv/bin/python")
PYTHONS = {"eagerflow": ".cache/eagerflow/venv/bin/python", "Keras 3 / TF": KERAS_PYTHON,
           "torch": ".cache/eagerflow/peers/bin/python", "JAX": ".cache/eagerflow/peers/bin/python"}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--job", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.job:
        before = vmhwm_mb()
        t = time.perf_counter()
        loss = JOBS[args.job]()
        print(json.dumps({"peak_mb": vmhwm_mb(), "interpreter_mb": before, "loss": loss,
                          "fit_s": time.perf_counter() - t}))
        return
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
               TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    runs = {}
    for r in range(args.rounds):
        names = list(JOBS)[r % len(JOBS):] + list(JOBS)[:r % len(JOBS)]
        for name in names:
            py = os.path.join(HOME, PYTHONS[name])
            if not os.path.exists(py):
                print(f"  {name}: no {py}, skipped", file=sys.stderr)
                continue
            out = subprocess.run(["taskset", "-c", "0", py, os.path.abspath(__file__), "--job", name],
                                 capture_output=True, text=True, env=env)
            if out.returncode != 0:
                print(f"  {name} failed: {out.stderr[-500:]}", file=sys.stderr)
                continue
            res = json.loads(out.stdout.strip().splitlines()[-1])
            runs.setdefault(name, []).append(res)
            print(f"round {r + 1} {name}: {json.dumps(res)}", file=sys.stderr)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {args.rounds} interleaved rounds; MLP fit, "
          f"{EPOCHS} epochs of {N} rows, batch {BATCH}, one thread; peak RSS (VmHWM), medians")
    keras = statistics.median(x["peak_mb"] for x in runs["Keras 3 / TF"]) if "Keras 3 / TF" in runs else None
    print("| framework | peak RSS MB | interpreter before import MB | / Keras 3 / TF | fit s | last loss |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, rs in runs.items():
        peak = statistics.median(x["peak_mb"] for x in rs)
        ratio = f"{peak / keras:.2f}" if keras else "-"
        print(f"| {name} | {peak:.0f} | {statistics.median(x['interpreter_mb'] for x in rs):.0f} | {ratio} | "
              f"{statistics.median(x['fit_s'] for x in rs):.2f} | {rs[-1]['loss']:.4f} |")


if __name__ == "__main__":
    main()
