#!/usr/bin/env python3
"""MLP 784-512-512-10 (relu) inference at batch 1, 8 and 128: eagerflow (a traced ef.function from
Python, and model.predict_on_batch) against onnxruntime running eagerflow's own ONNX export of
the same model (so both compute the same function from the same weights; the outputs must agree),
and torch (inference mode, torch.jit.freeze) where installed.

Every job is a process of its own, pinned (taskset) to the first N cores, every pool limited to
N threads (ef.set_num_threads, ORT intra_op_num_threads with inter 1 and sequential execution,
torch.set_num_threads) and checked: process CPU time / wall time over the timed calls must not
exceed N. Jobs are interleaved (a different one first each round); each round holds the build
lock (/tmp/ef-build.lock) so nobody compiles meanwhile. Medians of per-round medians, in µs.

    ~/.cache/eagerflow/peers/bin/python bench/peers/inference_peers.py --rounds 3 --threads 1,2
"""
import argparse
import fcntl
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402  (the peers' shared timing loop)

ROOT = compare.ROOT
HOME = os.path.expanduser("~")
BATCHES = (1, 8, 128)


def checked(fn, threads):
    """fn's median, and process CPU / wall over a second timing of it."""
    c0, w0 = time.process_time(), time.perf_counter()
    us = compare.median_us(fn, min_time=0.5)
    return us, (time.process_time() - c0) / (time.perf_counter() - w0)


def inputs(batch):
    import numpy as np
    rng = np.random.default_rng(batch)
    return rng.random((batch, 784), dtype=np.float32)


def job_ef(threads, workdir):
    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "build/release/python_package"))
    import eagerflow as ef
    ef.set_num_threads(threads)
    ef.keras.utils.set_random_seed(0)
    model = ef.keras.Sequential([ef.keras.Input((784,)), ef.keras.layers.Dense(512, activation="relu"),
                                 ef.keras.layers.Dense(512, activation="relu"), ef.keras.layers.Dense(10)])
    onnx_path = os.path.join(workdir, "mlp.onnx")
    ef.onnx.export_model(model, onnx_path)
    np.save(os.path.join(workdir, "weights.npy"), np.array([0]))  # marks the export as done
    fn = ef.function(lambda x: model(x, training=False))
    out = {}
    for b in BATCHES:
        x = ef.constant(inputs(b))
        y = fn(x)
        np.save(os.path.join(workdir, f"ef_out_{b}.npy"), y.numpy())
        out[f"traced b{b}"], out[f"cpu b{b}"] = checked(lambda: fn(x), threads)
        out[f"predict_on_batch b{b}"], _ = checked(lambda: model.predict_on_batch(x), threads)
    return out


def job_ort(threads, workdir):
    import numpy as np
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(os.path.join(workdir, "mlp.onnx"), so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    out = {}
    for b in BATCHES:
        x = inputs(b)
        y = sess.run(None, {name: x})[0]
        ref = np.load(os.path.join(workdir, f"ef_out_{b}.npy"))
        out[f"max |ort - ef| b{b}"] = float(np.max(np.abs(y - ref)))
        out[f"session b{b}"], out[f"cpu b{b}"] = checked(lambda: sess.run(None, {name: x}), threads)
    return out


def job_torch(threads, workdir):
    import torch
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                                torch.nn.ReLU(), torch.nn.Linear(512, 10)).eval()
    out = {}
    with torch.inference_mode():
        for b in BATCHES:
            x = torch.from_numpy(inputs(b))
            fn = torch.jit.freeze(torch.jit.trace(model, x))
            out[f"jit b{b}"], out[f"cpu b{b}"] = checked(lambda: fn(x), threads)
    return out


JOBS = {"eagerflow": job_ef, "onnxruntime": job_ort, "torch": job_torch}


def run_job(name, threads, python, workdir):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               OPENBLAS_NUM_THREADS=str(threads))
    cores = ",".join(str(i) for i in range(threads))
    r = subprocess.run(["taskset", "-c", cores, python, os.path.abspath(__file__), "--job", name,
                        "--job-threads", str(threads), "--workdir", workdir], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        print(f"  {name} failed: {r.stderr[-600:]}", file=sys.stderr)
        return None
    res = json.loads(r.stdout.strip().splitlines()[-1])
    bad = [k for k, v in res.items() if k.startswith("cpu") and v > threads * 1.05]
    if bad:
        raise SystemExit(f"{name} at {threads} threads used more CPU than allowed: {res}")
    return res


def fma_peak(threads):
    """GFLOPS of register-only FMA chains on the first `threads` cores (the caller holds the lock):
    what no framework's model can beat, to read the batch-128 times against."""
    exe = os.path.join(ROOT, "build/release/bench/ef_gemm_libraries")
    if not os.path.exists(exe):
        return None
    cores = ",".join(str(i) for i in range(threads))
    out = subprocess.run(["taskset", "-c", cores, exe, "--fma-peak", "--threads", str(threads)],
                         capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return rows[0].get("fma_peak_gflops") if rows else None


# Floating-point operations of one call of the 784-512-512-10 model per row (multiply-adds x 2).
FLOPS_PER_ROW = 2 * (784 * 512 + 512 * 512 + 512 * 10)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--ef-python", default=os.path.join(HOME, ".cache/eagerflow/venv/bin/python"))
    p.add_argument("--peer-python", default=os.path.join(HOME, ".cache/eagerflow/peers/bin/python"))
    p.add_argument("--job", help=argparse.SUPPRESS)
    p.add_argument("--job-threads", type=int, help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.job:
        print(json.dumps(JOBS[args.job](args.job_threads, args.workdir)))
        return
    threads_list = [int(t) for t in args.threads.split(",")]
    runs = {}
    with tempfile.TemporaryDirectory() as workdir:
        for r in range(args.rounds):
            with open("/tmp/ef-build.lock", "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                for n in threads_list:
                    # eagerflow first in round 0 (it writes the ONNX file), then rotated.
                    order = list(JOBS) if r == 0 else list(JOBS)[r % 3:] + list(JOBS)[:r % 3]
                    for name in order:
                        py = args.ef_python if name == "eagerflow" else args.peer_python
                        res = run_job(name, n, py, workdir)
                        if res is not None:
                            runs.setdefault((name, n), []).append(res)
                            print(f"round {r + 1} threads {n} {name}: {json.dumps(res)}", file=sys.stderr)
                    peak = fma_peak(n)
                    if peak:
                        runs.setdefault(("ceiling", n), []).append({"gflops": peak})
                        print(f"round {r + 1} threads {n} FMA ceiling: {peak} GFLOPS", file=sys.stderr)
    cpu = open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].strip(": \t")

    def med(name, n, key):
        vals = [x[key] for x in runs.get((name, n), []) if key in x]
        return statistics.median(vals) if vals else None

    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; CPU: {cpu}; {args.rounds} interleaved rounds; µs per call")
    print("| threads | batch | eagerflow traced | eagerflow predict_on_batch | onnxruntime | torch jit | traced / onnxruntime | max abs diff |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in threads_list:
        for b in BATCHES:
            ef_t, ef_p = med("eagerflow", n, f"traced b{b}"), med("eagerflow", n, f"predict_on_batch b{b}")
            ort_t, th = med("onnxruntime", n, f"session b{b}"), med("torch", n, f"jit b{b}")
            diff = med("onnxruntime", n, f"max |ort - ef| b{b}")
            f = lambda v: "-" if v is None else f"{v:.1f}"
            ratio = f"{ef_t / ort_t:.2f}" if ef_t and ort_t else "-"
            print(f"| {n} | {b} | {f(ef_t)} | {f(ef_p)} | {f(ort_t)} | {f(th)} | {ratio} | {diff if diff is None else f'{diff:.1e}'} |")
    peaks = {n: med("ceiling", n, "gflops") for n in threads_list}
    if any(peaks.values()):
        b = BATCHES[-1]
        print(f"\nBatch {b}, the whole model's GFLOPS as a share of the FMA ceiling (register-only FMA chains, "
              "`ef_gemm_libraries --fma-peak`, measured in every round):")
        print("| threads | ceiling GFLOPS | eagerflow traced | onnxruntime | torch jit | 0.9x onnxruntime would need |")
        print("|---:|---:|---:|---:|---:|---:|")
        for n in threads_list:
            peak = peaks[n]
            if not peak:
                continue
            share = lambda us: "-" if not us else f"{FLOPS_PER_ROW * b / us * 1e-3 / peak:.0%}"
            ort_t = med("onnxruntime", n, f"session b{b}")
            need = "-" if not ort_t else share(0.9 * ort_t)
            print(f"| {n} | {peak:.0f} | {share(med('eagerflow', n, f'traced b{b}'))} | {share(ort_t)} | "
                  f"{share(med('torch', n, f'jit b{b}'))} | {need} |")


if __name__ == "__main__":
    main()
