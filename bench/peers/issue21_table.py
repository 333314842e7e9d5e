#!/usr/bin/env python3
"""Issue 21's table, side by side in one run: eagerflow before (a build of an older commit) and
after (this tree), TF/Keras, JAX, torch eager (default and fused Adam) and torch.compile (warm
steps; first call with a cold and a warm compile cache), at 1 and 2 threads.

Rows: the MLP 784-512-512-10 train step (Adam, batch 128), the CNN conv16-pool-conv32-pool-
dense10 train step, a fit epoch (8,000 x [784], batch 128), MLP batch-1 inference (traced).
The peers' workloads are bench/peers/compare.py's (one definition for both tables).

Every job is a process of its own, pinned (taskset) to the first N cores, every thread pool
limited to N (OMP, torch.set_num_threads, TF intra N / inter 1, XLA_FLAGS) and checked: process
CPU time / wall time over the whole job (children included) must not exceed N. Jobs are
interleaved (a different one first each round); each round holds /tmp/ef-bench.lock and
/tmp/ef-build.lock so nobody builds or measures meanwhile.

    ~/.cache/eagerflow/peers/bin/python bench/peers/issue21_table.py --rounds 3 --threads 1,2 \\
        --before /tmp/base/build/bench/ef_bench --results /tmp/issue21.json
"""
import argparse
import fcntl
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
from compare import CNN, FIRST, FIRST_COLD, FIT, INFER, MLP  # noqa: E402

ROOT = compare.ROOT
HOME = os.path.expanduser("~")
FLOOR = "MLP step's 8 GEMMs on bare oneDNN (ms)"
ROWS = [MLP, CNN, FIT, INFER, FIRST, FIRST_COLD]


def ef_rows(exe, threads):
    """The rows from an ef_bench binary (benchmarks it lacks are left out)."""
    flt = (f"BM_MlpTrainStep/threads:{threads}$|BM_CnnTrainStep/threads:{threads}$|"
           f"BM_MlpInferenceBatch1/threads:{threads}$|BM_MlpFitEpoch/threads:{threads}/|"
           f"BM_MlpGemmFloor.*threads:{threads}$|BM_MlpTrainStepFirstCall")
    out = subprocess.run([exe, f"--benchmark_filter={flt}", "--benchmark_format=json", "--benchmark_min_time=1",
                          "--benchmark_repetitions=3", "--benchmark_report_aggregates_only=true"],
                         capture_output=True, text=True, check=True).stdout
    res = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        unit = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b["time_unit"]]
        res[b["run_name"].split("/")[0]] = b["real_time"] * unit  # ms
    rows = {MLP: res.get("BM_MlpTrainStep"), CNN: res.get("BM_CnnTrainStep"),
            INFER: res["BM_MlpInferenceBatch1"] * 1e3 if "BM_MlpInferenceBatch1" in res else None,
            FIRST: res.get("BM_MlpTrainStepFirstCall"), FIRST_COLD: res.get("BM_MlpTrainStepFirstCall"),
            FIT: next((v for k, v in res.items() if k.startswith("BM_MlpFitEpoch")), None),
            FLOOR: next((v for k, v in res.items() if k.startswith("BM_MlpGemmFloor")), None)}
    return {k: v for k, v in rows.items() if v is not None}


def job_torch(threads):
    return {**compare.torch_train(threads, compiled=False), **compare.torch_inference(False), **compare.torch_fit(False)}


def job_torch_fused(threads):
    return compare.torch_fused_adam_peer(threads)


def job_torch_compile(threads):
    out = {**compare.torch_train(threads, compiled=True), **compare.torch_inference(True), **compare.torch_fit(True)}
    out.pop(FIRST, None)  # measured below in fresh processes, with a known cache
    return out


def job_torch_compile_first(threads):
    """The first compiled MLP train step in fresh processes: an empty compile cache, then the
    cache that call left behind."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="ef_issue21_inductor_") as d:
        env = {"TORCHINDUCTOR_CACHE_DIR": os.path.join(d, "inductor"), "TRITON_CACHE_DIR": os.path.join(d, "triton")}
        for row in (FIRST_COLD, FIRST):
            r = run_job("torch.compile first call (child)", threads, sys.executable, env)
            if r:
                out[row] = r[FIRST]
    return out


def job_jax(threads):
    return {**compare.jax_train(), **compare.jax_inference_and_fit()}


def job_tf(threads):
    return {**compare.tf_train(), **compare.tf_inference_and_fit()}


JOBS = {
    "eagerflow before": None,
    "eagerflow after": None,
    "TF/Keras": job_tf,
    "JAX": job_jax,
    "torch": job_torch,
    "torch fused Adam": job_torch_fused,
    "torch.compile": job_torch_compile,
    "torch.compile first call": job_torch_compile_first,
}
CHILD_JOBS = {"torch.compile first call (child)": lambda n: compare.torch_compile_first_call(n)}
EF_JOBS = ("eagerflow before", "eagerflow after")


def job_env(threads, extra=None):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               TF_NUM_INTRAOP_THREADS=str(threads), TF_NUM_INTEROP_THREADS="1", TF_CPP_MIN_LOG_LEVEL="3",
               CUDA_VISIBLE_DEVICES="", JAX_PLATFORMS="cpu", TORCHINDUCTOR_COMPILE_THREADS="1",
               XLA_FLAGS=f"--xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'} "
                         f"intra_op_parallelism_threads={threads}")
    env.pop("PYTHONPATH", None)
    env.update(extra or {})
    return env


def run_job(name, threads, python, extra_env=None, before=None, after=None):
    """One job in a process of its own, pinned to the first `threads` cores; its rows plus
    cpu/wall (process CPU time over wall time, children included) and the 1-minute load."""
    with open("/proc/loadavg") as f:
        load = float(f.read().split()[0])
    cpus = ",".join(str(c) for c in range(threads))
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    if name in EF_JOBS:
        exe = before if name == "eagerflow before" else after
        cmd = ["taskset", "-c", cpus, sys.executable, os.path.abspath(__file__), "--ef-job", exe, "--threads", str(threads)]
    else:
        cmd = ["taskset", "-c", cpus, python, os.path.abspath(__file__), "--job", name, "--threads", str(threads)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=job_env(threads, extra_env), cwd=ROOT)
    r1, wall = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter() - t0
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            r = json.loads(line[len("RESULT "):])
            r.update(load=load, cpu_per_wall=cpu / wall, job_s=wall)
            return r
    tail = "\n".join((out.stderr.strip().splitlines() or ["no output"])[-5:])
    print(f"{name} threads={threads}: no result\n{tail}", file=sys.stderr)
    return None


def compare_rows(args, threads_list):
    """compare.py's eagerflow rows from both binaries, interleaved rounds: no row may get slower."""
    runs = {}
    for r in range(args.rounds):
        with (Locks() if not args.no_lock else open(os.devnull)):
            for n in threads_list:
                cpus = set(range(n))
                for name, exe in (("before", args.before), ("after", args.after))[::1 if r % 2 == 0 else -1]:
                    os.sched_setaffinity(0, cpus)
                    os.environ["OMP_NUM_THREADS"] = str(n)
                    runs.setdefault(f"{name}|{n}", []).append(compare.eagerflow(n, exe, repetitions=3, min_time=0.1))
                    os.sched_setaffinity(0, set(range(os.cpu_count())))
    lines = []
    for n in threads_list:
        lines += [f"\n{n} thread(s): eagerflow before / after over compare.py's rows (medians of {args.rounds} rounds)\n",
                  "| row | before | after | after / before |", "|---|---:|---:|---:|"]
        for row in runs[f"after|{n}"][0]:
            b = [x[row] for x in runs[f"before|{n}"] if x.get(row)]
            a = [x[row] for x in runs[f"after|{n}"] if x.get(row)]
            if a and b:
                mb, ma = statistics.median(b), statistics.median(a)
                lines.append(f"| {row} | {fmt(mb)} | {fmt(ma)} | {ma / mb:.2f} |")
    return "\n".join(lines)


def fmt(v):
    return "-" if v is None else (f"{v:.3g}" if v < 100 else f"{v:.0f}")


def table(runs, threads_list, jobs):
    def med(j, n, key):
        vals = [r[key] for r in runs.get(f"{j}|{n}", []) if r and r.get(key) is not None]
        return statistics.median(vals) if vals else None

    peers = [j for j in jobs if j not in EF_JOBS]
    lines = []
    for n in threads_list:
        lines.append(f"\n{n} thread(s); medians of {max(len(v) for v in runs.values())} rounds; "
                     "ratio = eagerflow after / best peer (below 1: eagerflow faster)\n")
        lines.append("| workload | " + " | ".join(jobs) + " | best peer | after / best | after / before | floor |")
        lines.append("|---|" + "---:|" * len(jobs) + "---|---:|---:|---|")
        for row in ROWS:
            cells = [med(j, n, row) for j in jobs]
            best = min(((med(j, n, row), j) for j in peers if med(j, n, row) is not None), default=None)
            after, before = med("eagerflow after", n, row), med("eagerflow before", n, row)
            floor = ""
            if row == MLP and med("eagerflow after", n, FLOOR):
                floor = f"GEMMs {fmt(med('eagerflow after', n, FLOOR))} (after/floor {after / med('eagerflow after', n, FLOOR):.2f})"
            if row == FIT and med("eagerflow after", n, MLP) and after:
                steps = -(-compare.FIT_SAMPLES // compare.FIT_BATCH)
                fl = steps * med("eagerflow after", n, MLP)
                floor = f"{steps} steps x step = {fl:.0f} (after/that {after / fl:.2f})"
            if row == INFER:
                floor = "2.7 MB of weights read once"
            vs_best = f"{after / best[0]:.2f}" if best and after else "-"
            vs_before = f"{after / before:.2f}" if after and before else "-"
            lines.append(f"| {row} | " + " | ".join(fmt(c) for c in cells) +
                         f" | {best[1] if best else '-'} | {vs_best} | {vs_before} | {floor} |")
        lines.append("\nthread check (median process CPU time / wall time per job; load at job start): " + ", ".join(
            f"{j} {med(j, n, 'cpu_per_wall'):.2f}" for j in jobs if med(j, n, "cpu_per_wall") is not None))
    return "\n".join(lines)


class Locks:
    """Holds /tmp/ef-bench.lock and /tmp/ef-build.lock (in that order) for a round."""
    def __enter__(self):
        self.files = [open(p, "a") for p in ("/tmp/ef-bench.lock", "/tmp/ef-build.lock")]
        for f in self.files:
            fcntl.flock(f, fcntl.LOCK_EX)

    def __exit__(self, *exc):
        for f in reversed(self.files):
            f.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--before", default="/tmp/base/build/bench/ef_bench", help="ef_bench of the older build")
    p.add_argument("--after", default=os.path.join(ROOT, "build/release/bench/ef_bench"))
    p.add_argument("--jobs", help="comma-separated subset of: " + ", ".join(JOBS))
    p.add_argument("--results", help="JSON file the runs are appended to (and read back: resume)")
    p.add_argument("--no-lock", action="store_true")
    p.add_argument("--table-only", action="store_true")
    p.add_argument("--peer-python", default=os.path.join(HOME, ".cache/eagerflow/peers/bin/python"))
    p.add_argument("--compare-rows", action="store_true",
                   help="instead: eagerflow before vs after over compare.py's rows (no row may get slower)")
    p.add_argument("--job", help=argparse.SUPPRESS)
    p.add_argument("--ef-job", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.compare_rows:
        print(compare_rows(args, [int(t) for t in args.threads.split(",")]))
        return
    if args.job or args.ef_job:
        n = int(args.threads)
        if args.ef_job:
            print("RESULT " + json.dumps(ef_rows(args.ef_job, n)), flush=True)
            return
        if args.job != "torch.compile first call":
            compare.limit_threads("torch" if args.job.startswith("torch") else
                                  {"TF/Keras": "tensorflow", "JAX": "jax"}[args.job], n)
        print("RESULT " + json.dumps({**JOBS, **CHILD_JOBS}[args.job](n)), flush=True)
        return
    threads_list = [int(t) for t in args.threads.split(",")]
    jobs = [j for j in JOBS if not args.jobs or j in args.jobs.split(",")]
    runs = {}
    if args.results and os.path.exists(args.results):
        with open(args.results) as f:
            runs = json.load(f)
    if not args.table_only:
        for r in range(args.rounds):
            with (Locks() if not args.no_lock else open(os.devnull)):
                print(f"round {r + 1}: {time.strftime('%H:%M:%S', time.gmtime())} UTC", file=sys.stderr, flush=True)
                for n in threads_list:
                    order = jobs[r % len(jobs):] + jobs[:r % len(jobs)]
                    for j in order:
                        if j == "torch.compile first call" and r > 0:
                            continue  # a cold compile takes ~15 s: measured in the first round only
                        res = run_job(j, n, args.peer_python, before=args.before, after=args.after)
                        runs.setdefault(f"{j}|{n}", []).append(res)
                        print(f"  threads {n} {j}: " + json.dumps(res), file=sys.stderr, flush=True)
            if args.results:
                with open(args.results, "w") as f:
                    json.dump(runs, f, indent=1)
    v = compare.versions()
    print(f"date: {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC; CPU: {compare.cpu_name()} "
          f"({os.cpu_count()} cores); versions: " + ", ".join(f"{k} {x}" for k, x in v.items()))
    print(table(runs, threads_list, jobs))


if __name__ == "__main__":
    main()
