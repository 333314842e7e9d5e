#!/usr/bin/env python3
"""Issue 21, bfloat16: the MLP 784-512-512-10 and CNN conv16-pool-conv32-pool-dense10 train
steps (Adam, batch 128) in float32 and under bfloat16 mixed precision, side by side in one run:
eagerflow (mixed_bfloat16 policy, traced step), Keras 3 on TensorFlow (mixed_bfloat16 policy,
train_on_batch) and torch (torch.autocast("cpu", torch.bfloat16) around forward and loss).

Every job is a process of its own pinned (taskset) to the first N cores, its pools limited to N
threads and checked (process CPU time / wall time); jobs are interleaved (rotated each round)
and each round holds /tmp/ef-build.lock and then /tmp/ef-bench.lock. Medians over rounds.

    ~/.cache/eagerflow/peers/bin/python bench/peers/mixed_precision.py --rounds 3 --threads 1
"""
import argparse
import fcntl
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
import issue21_table as t21  # noqa: E402

MLP, CNN = "MLP step (ms)", "CNN step (ms)"
JOBS = ["eagerflow float32", "eagerflow mixed_bfloat16", "Keras float32", "Keras mixed_bfloat16", "torch float32",
        "torch autocast bf16"]


def ef_job(exe, threads):
    import subprocess
    out = subprocess.run([exe, f"--benchmark_filter=BM_MixedPrecisionStep/.*threads:{threads}$",
                          "--benchmark_format=json", "--benchmark_min_time=1"], capture_output=True, text=True,
                         check=True).stdout
    res = {}
    for b in json.loads(out)["benchmarks"]:
        model, mixed = b["run_name"].split("/")[1:3]
        res[(model, mixed)] = b["real_time"] * {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b["time_unit"]]
    return res


def keras_job(mixed):
    import tensorflow as tf
    import keras
    keras.mixed_precision.set_global_policy("mixed_bfloat16" if mixed else "float32")
    tf.random.set_seed(0)
    x = tf.random.uniform((128, 28, 28))
    y = tf.random.uniform((128,), 0, 10, dtype=tf.int64)
    L = keras.layers
    mlp = keras.Sequential([L.Flatten(), L.Dense(512, activation="relu"), L.Dense(512, activation="relu"),
                            L.Dense(10, dtype="float32")])
    cnn = keras.Sequential([L.Reshape((28, 28, 1)), L.Conv2D(16, 3, activation="relu"), L.MaxPooling2D(),
                            L.Conv2D(32, 3, activation="relu"), L.MaxPooling2D(), L.Flatten(),
                            L.Dense(10, dtype="float32")])
    out = {}
    for name, model in ((MLP, mlp), (CNN, cnn)):
        model.compile(keras.optimizers.Adam(1e-3), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.train_on_batch(x, y)
        out[name] = compare.median_us(lambda model=model: model.train_on_batch(x, y), min_time=1.0) / 1e3
    return out


def torch_job(mixed):
    import contextlib
    import torch
    import torch.nn as nn
    torch.manual_seed(0)
    x = torch.rand(128, 28, 28)
    y = torch.randint(0, 10, (128,))
    mlp = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    cnn = nn.Sequential(nn.Conv2d(1, 16, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Linear(800, 10))
    out = {}
    for name, model, inp in ((MLP, mlp, x), (CNN, cnn, x.reshape(128, 1, 28, 28))):
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)

        def step(model=model, inp=inp, opt=opt):
            opt.zero_grad(set_to_none=True)
            ctx = torch.autocast("cpu", dtype=torch.bfloat16) if mixed else contextlib.nullcontext()
            with ctx:
                loss = nn.functional.cross_entropy(model(inp), y)
            loss.backward()
            opt.step()
        out[name] = compare.median_us(step, min_time=1.0) / 1e3
    return out


def run(job, threads, args):
    cpus = ",".join(str(c) for c in range(threads))
    import resource
    import subprocess
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    cmd = ["taskset", "-c", cpus, sys.executable if job.startswith("eagerflow") else args.peer_python,
           os.path.abspath(__file__), "--job", job, "--threads", str(threads), "--exe", args.exe]
    out = subprocess.run(cmd, capture_output=True, text=True, env=t21.job_env(threads), cwd=compare.ROOT)
    r1, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter() - t0
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            r = json.loads(line[7:])
            r["cpu_per_wall"] = cpu / wall
            return r
    print(f"{job}: no result\n" + "\n".join(out.stderr.strip().splitlines()[-5:]), file=sys.stderr)
    return None


def child(args):
    n = args.threads
    if args.job.startswith("eagerflow"):
        mixed = args.job.endswith("mixed_bfloat16")
        res = ef_job(args.exe, n)
        key = "mixed:1" if mixed else "mixed:0"
        return {MLP: res[("model:0", key)], CNN: res[("model:1", key)]}
    compare.limit_threads("tensorflow" if args.job.startswith("Keras") else "torch", n)
    mixed = not args.job.endswith("float32")
    return keras_job(mixed) if args.job.startswith("Keras") else torch_job(mixed)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--exe", default=os.path.join(compare.ROOT, "build/release/bench/ef_bench"))
    p.add_argument("--peer-python", default=os.path.expanduser("~/.cache/eagerflow/peers/bin/python"))
    p.add_argument("--job", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.job:
        print("RESULT " + json.dumps(child(args)), flush=True)
        return
    runs = {}
    for r in range(args.rounds):
        # Build lock first, then the bench lock: the order CONTRIBUTING.md sets (the other deadlocks).
        files = [open(f, "a") for f in ("/tmp/ef-build.lock", "/tmp/ef-bench.lock")]
        for f in files:
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            for j in JOBS[r % len(JOBS):] + JOBS[:r % len(JOBS)]:
                res = run(j, args.threads, args)
                print(f"round {r + 1} {j}: {json.dumps(res)}", file=sys.stderr, flush=True)
                if res:
                    runs.setdefault(j, []).append(res)
        finally:
            for f in reversed(files):
                f.close()
    med = {j: {k: statistics.median(x[k] for x in rs) for k in rs[0]} for j, rs in runs.items()}
    print(f"date: {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC; CPU: {compare.cpu_name()}; "
          f"threads {args.threads}; rounds {args.rounds}; versions: " +
          ", ".join(f"{k} {v}" for k, v in compare.versions().items()))
    print("| workload | " + " | ".join(JOBS) + " |")
    print("|---|" + "---|" * len(JOBS))
    for row in (MLP, CNN):
        print(f"| {row} | " + " | ".join(f"{med[j][row]:.2f}" if j in med else "-" for j in JOBS) + " |")
    for fw in ("eagerflow", "Keras", "torch"):
        a = [j for j in JOBS if j.startswith(fw)]
        if all(j in med for j in a):
            print(f"{fw}: mixed / float32 = MLP {med[a[1]][MLP] / med[a[0]][MLP]:.2f}x, "
                  f"CNN {med[a[1]][CNN] / med[a[0]][CNN]:.2f}x")
    print("thread check (median CPU/wall): " + ", ".join(
        f"{j} {statistics.median(x['cpu_per_wall'] for x in rs):.2f}" for j, rs in runs.items()))


if __name__ == "__main__":
    main()
