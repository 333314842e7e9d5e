#!/usr/bin/env python3
"""Fused attention forward + backward, eagerflow (bench/attention_bench.cpp's BM_AttentionFused)
against PyTorch's scaled_dot_product_attention (bench/peers/attention_torch.py), side by side:
q, k, v [1, 4, seq, 64] float32, gradients of sum(out * w) for q, k and v; seq 1024 and 4096,
causal and not, forward alone too; 1 and 2 threads. Each process is pinned with taskset to the
first N cores (OMP_NUM_THREADS=N, torch.set_num_threads(N), ef::set_num_threads(N)); rounds
interleave eagerflow and torch; each round holds the build lock (/tmp/ef-build.lock) and
releases it after. Prints ms per step (medians over rounds) and eagerflow / torch.

    ~/.cache/eagerflow/peers/bin/python bench/peers/attention_peers.py --rounds 3 --threads 1,2
"""
import argparse
import fcntl
import json
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASES = [(1024, 0, 1), (4096, 0, 1), (1024, 1, 1), (4096, 1, 1), (1024, 0, 0), (4096, 0, 0)]  # seq, causal, backward


def env(threads):
    return dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), CUDA_VISIBLE_DEVICES="")


def run_ef(exe, threads, min_time):
    cpus = ",".join(str(c) for c in range(threads))
    pattern = "|".join(f"seq:{s}/threads:{threads}/causal:{c}/backward:{b}/" for s, c, b in CASES)
    out = subprocess.run(["taskset", "-c", cpus, exe, f"--benchmark_filter=BM_AttentionFused/({pattern})",
                          "--benchmark_format=json", f"--benchmark_min_time={min_time}"],
                         capture_output=True, text=True, check=True, env=env(threads)).stdout
    res = {}
    for b in json.loads(out)["benchmarks"]:
        m = re.search(r"seq:(\d+)/threads:\d+/causal:(\d)/backward:(\d)", b["name"])
        unit = {"ns": 1e-6, "us": 1e-3, "ms": 1.0}[b["time_unit"]]
        res[f"{m.group(1)}|{m.group(2)}|{m.group(3)}"] = b["real_time"] * unit
    return res


def run_torch(python, threads):
    cpus = ",".join(str(c) for c in range(threads))
    out = subprocess.run(["taskset", "-c", cpus, python, os.path.join(ROOT, "bench/peers/attention_torch.py"),
                          str(threads)], capture_output=True, text=True, check=True, env=env(threads)).stdout
    res = {}
    for line in out.splitlines():
        m = re.search(r"seq=(\d+) causal=(\d) backward=(\d) threads=\d+: ([\d.]+) ms", line)
        if m:
            res[f"{m.group(1)}|{m.group(2)}|{m.group(3)}"] = float(m.group(4))
    return res


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--min-time", type=float, default=1.5, help="seconds per eagerflow benchmark")
    p.add_argument("--exe", default=os.path.join(ROOT, "build/release/bench/ef_bench"))
    p.add_argument("--peer-python", default=os.path.expanduser("~/.cache/eagerflow/peers/bin/python"))
    p.add_argument("--no-lock", action="store_true")
    args = p.parse_args()
    threads_list = [int(t) for t in args.threads.split(",")]
    runs, loads = {}, []
    for r in range(args.rounds):
        lock = None
        if not args.no_lock:
            lock = open("/tmp/ef-build.lock", "a")
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            for n in threads_list:
                for who in (["ef", "torch"] if r % 2 == 0 else ["torch", "ef"]):
                    load = float(open("/proc/loadavg").read().split()[0])
                    loads.append(load)
                    res = run_ef(args.exe, n, args.min_time) if who == "ef" else run_torch(args.peer_python, n)
                    print(f"round {r + 1} {time.strftime('%H:%M:%S', time.gmtime())} load {load:.2f} threads {n} {who}: "
                          + json.dumps({k: round(v, 2) for k, v in res.items()}), file=sys.stderr, flush=True)
                    for k, v in res.items():
                        runs.setdefault(f"{who}|{n}|{k}", []).append(v)
        finally:
            if lock:
                lock.close()
    print(f"date: {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC; {args.rounds} rounds; 1-min load at starts "
          f"{min(loads):.2f}..{max(loads):.2f}")
    print("| threads | seq | causal | pass | eagerflow fused (ms) | torch SDPA (ms) | ef / torch | per-round ef | per-round torch |")
    print("|---:|---:|:---:|:---|---:|---:|---:|:---|:---|")
    for n in threads_list:
        for s, c, b in CASES:
            key = f"{s}|{c}|{b}"
            e, t = runs.get(f"ef|{n}|{key}", []), runs.get(f"torch|{n}|{key}", [])
            if not e or not t:
                continue
            me, mt = statistics.median(e), statistics.median(t)
            print(f"| {n} | {s} | {'yes' if c else 'no'} | {'fwd+bwd' if b else 'fwd'} | {me:.1f} | {mt:.1f} | {me / mt:.2f} | "
                  + " / ".join(f"{x:.1f}" for x in e) + " | " + " / ".join(f"{x:.1f}" for x in t) + " |")


if __name__ == "__main__":
    main()
