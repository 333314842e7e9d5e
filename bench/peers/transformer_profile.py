#!/usr/bin/env python3
"""Where eagerflow's transformer block train step spends its time (bench/transformer_bench.cpp,
one thread): GEMMs of the dense layers, attention (its block products and the rest of the fused
kernel), elementwise work (GELU, LayerNorm, adds, reductions, copies), the optimizer, page
faults, the rest (framework). Three measurements, each under the build lock:
  1. BM_TransformerBlockTrainStep and BM_TransformerBlockGradients (no optimizer): the
     difference is Adam's share.
  2. ONEDNN_VERBOSE=1 over a few steps: every oneDNN matmul with its time; the attention's block
     products (128/256-row blocks) are told from the layers' matmuls ([1, 4096, *] shapes).
  3. perf record of the train step: the non-oneDNN time by symbol, grouped.
Prints a table in ms per step. Needs perf.

    python3 bench/peers/transformer_profile.py [--exe build/release/bench/ef_bench]
"""
import argparse
import fcntl
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Lock:
    def __enter__(self):
        self.f = open("/tmp/ef-build.lock", "a")
        fcntl.flock(self.f, fcntl.LOCK_EX)
        self.load = open("/proc/loadavg").read().split()[0]

    def __exit__(self, *a):
        self.f.close()


def bench(exe, name, min_time, env=None):
    out = subprocess.run(["taskset", "-c", "0", exe, f"--benchmark_filter={name}/threads:1/",
                          "--benchmark_format=json", f"--benchmark_min_time={min_time}"], capture_output=True,
                         text=True, check=True, env=dict(os.environ, **(env or {})))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--exe", default=os.path.join(ROOT, "build/release/bench/ef_bench"))
    args = p.parse_args()

    with Lock() as _:
        lk = open("/proc/loadavg").read().split()[0]
        train = json.loads(bench(args.exe, "BM_TransformerBlockTrainStep", 3).stdout)["benchmarks"][0]["median_ms"]
        grads = json.loads(bench(args.exe, "BM_TransformerBlockGradients", 3).stdout)["benchmarks"][0]["median_ms"]
    print(f"load {lk}; train step {train:.1f} ms, forward + gradients only {grads:.1f} ms", file=sys.stderr)

    # 2. oneDNN matmuls: min_time 0 runs one timed iteration; with the trace and the warm step
    # the train step runs 3 times: keep the last third of the calls.
    with Lock():
        out = bench(args.exe, "BM_TransformerBlockTrainStep", 0, {"ONEDNN_VERBOSE": "1"}).stdout
    calls = [l.split(",") for l in out.splitlines() if l.startswith("onednn_verbose,exec,cpu,matmul")]
    last = calls[len(calls) * 2 // 3:]
    dense = sum(float(c[-1]) for c in last if c[-2].startswith("1x"))
    block = sum(float(c[-1]) for c in last if not c[-2].startswith("1x"))

    # 3. perf: the share of each symbol group in the train step's samples.
    data = tempfile.mktemp(suffix=".perf")
    with Lock():
        subprocess.run(["perf", "record", "-q", "-o", data, "taskset", "-c", "0", args.exe,
                        "--benchmark_filter=BM_TransformerBlockTrainStep/threads:1/", "--benchmark_min_time=4"],
                       capture_output=True, check=True)
    rep = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "dso,symbol", "--stdio"],
                         capture_output=True, text=True).stdout
    os.unlink(data)
    groups = defaultdict(float)
    rules = [
        ("oneDNN JIT (matmuls)", lambda d, s: d.startswith("[JIT]")),
        ("oneDNN (not JIT)", lambda d, s: "libdnnl" in d),
        ("attention (not its block products)", lambda d, s: re.search(r"attention|exp_sub|hide_keys|softmax_grad|row_sum|max_f32|expf16", s)),
        ("GELU (erf, erfc)", lambda d, s: re.search(r"erf", s)),
        ("LayerNorm kernels", lambda d, s: re.search(r"layer_norm|forward_rows_f32|backward_rows_f32|LayerNorm", s)),
        ("kernel (page faults, zeroing fresh pages)", lambda d, s: d.startswith("[kernel")),
        ("elementwise / reductions / copies", lambda d, s: re.search(r"map1|map2|binary|unary|Fused|accumulate|sum_f32|strided|broadcast|memset|memmove|memcpy|sqrt|pow|cast|where", s)),
    ]
    for line in rep.splitlines():
        m = re.match(r"\s+([\d.]+)%\s+(\S+(?: \S+)*?)\s+\[\S\]\s+(.*)$", line)
        if not m:
            continue
        pct, dso, sym = float(m.group(1)), m.group(2), m.group(3)
        for name, rule in rules:
            if rule(dso, sym):
                groups[name] += pct
                break
        else:
            groups["other (framework, libc, ...)"] += pct
    jit = groups.pop("oneDNN JIT (matmuls)", 0.0)
    total_mm = dense + block
    print(f"| part of the step (1 thread) | ms per step | share |")
    print(f"|---|---:|---:|")
    rows = []
    # The JIT share splits into the layers' GEMMs and attention's block products by oneDNN's own times.
    jit_ms = train * jit / 100
    rows.append(("GEMMs of the dense layers (q/k/v/output projections, MLP), forward and backward",
                 jit_ms * dense / total_mm if total_mm else 0))
    rows.append(("attention: block products (oneDNN)", jit_ms * block / total_mm if total_mm else 0))
    for name, pct in sorted(groups.items(), key=lambda kv: -kv[1]):
        rows.append((name, train * pct / 100))
    rows.append(("optimizer (Adam; train step - forward/gradients step)", train - grads))
    for name, ms in rows:
        print(f"| {name} | {ms:.1f} | {ms / train:.0%} |")
    print(f"| total (median train step) | {train:.1f} | |")
    print(f"oneDNN's own times in the last step: dense matmuls {dense:.1f} ms, attention block products {block:.1f} ms; "
          f"perf: JIT {jit:.1f}% of samples", file=sys.stderr)
    print("(the optimizer row is a difference of two runs; the perf rows include Adam's elementwise work, so the "
          "rows overlap by that much)")


if __name__ == "__main__":
    main()
