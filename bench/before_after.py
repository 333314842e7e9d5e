#!/usr/bin/env python3
"""Two ef_bench binaries (an older build and this tree's) on the same rows, interleaved: each
round runs every row in both, the binary that goes first alternating, each run pinned to the
first N cores (N = the row's thread count) and holding /tmp/ef-build.lock. Prints per-row
medians of the rounds (wall-clock, Google Benchmark's real time) and after / before.

    python3 bench/before_after.py --before /tmp/base/build/bench/ef_bench --rounds 3 \\
        --filter 'BM_MlpTrainStep/threads:1$' 'BM_TransformerBlockTrainStep/threads:2/'
"""
import argparse
import fcntl
import json
import os
import re
import statistics
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(exe, pattern, min_time):
    # Pinned to as many cores as the most threads the pattern names ('threads:(1|2)' -> 2).
    counts = re.search(r"threads:\(?([\d|]+)", pattern)
    n = max(int(c) for c in counts.group(1).split("|") if c) if counts else 1
    cores = ",".join(str(i) for i in range(n))
    out = subprocess.run(["taskset", "-c", cores, exe, "--benchmark_filter=" + pattern, "--benchmark_format=json",
                          f"--benchmark_min_time={min_time}"], capture_output=True, text=True, check=True)
    res = {}
    for b in json.loads(out.stdout)["benchmarks"]:
        unit = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b["time_unit"]]
        res[b["name"]] = b["real_time"] * unit
    return res


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--before", required=True)
    p.add_argument("--after", default=os.path.join(ROOT, "build/release/bench/ef_bench"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--min-time", type=float, default=1.0)
    p.add_argument("--filter", nargs="+", required=True, help="one benchmark filter per row group")
    args = p.parse_args()
    times = {}
    for r in range(args.rounds):
        for pattern in args.filter:
            with open("/tmp/ef-build.lock", "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                order = [("before", args.before), ("after", args.after)]
                for which, exe in (order if r % 2 == 0 else order[::-1]):
                    for name, ms in run(exe, pattern, args.min_time).items():
                        times.setdefault((name, which), []).append(ms)
    cpu = open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].strip(": \t")
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; CPU: {cpu}; {args.rounds} interleaved rounds; "
          f"before = {args.before}")
    print("| row | before ms (rounds) | after ms (rounds) | after / before |")
    print("|---|---|---|---:|")
    names = list(dict.fromkeys(n for n, _ in times))  # first-run order
    for name in names:
        b, a = times.get((name, "before")), times.get((name, "after"))
        if not b or not a:
            continue
        fmt = lambda xs: f"{statistics.median(xs):.3f} ({', '.join(f'{x:.3f}' for x in xs)})"
        print(f"| {name} | {fmt(b)} | {fmt(a)} | {statistics.median(a) / statistics.median(b):.2f} |")


if __name__ == "__main__":
    main()
