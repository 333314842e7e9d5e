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
from compare import CNN, FIRST, FIRST_COLD, FIT, FIT_FIRST, INFER, MLP  # noqa: E402

ROOT = compare.ROOT
HOME = os.path.expanduser("~")
FLOOR = "MLP step's 8 GEMMs on bare oneDNN (ms)"
STEPS_ONLY = "the epoch's 63 batches through train_on_batch, no fit loop (ms)"
BATCHES_ONLY = "fit's shuffled batch gathers alone, 63 batches (ms)"
ROWS = [MLP, CNN, FIT, INFER, FIRST, FIRST_COLD]
FIT_ROWS = [FIT_FIRST, FIT]
FIT_JOBS = ["eagerflow after", "eagerflow Python", "TF/Keras", "JAX", "torch", "torch fused Adam"]


def ef_rows(exe, threads, fit_only=False):
    """The rows from an ef_bench binary (benchmarks it lacks are left out). fit_only: the fit
    rows and their floors (the MLP step, the epoch's steps alone, the batch gathers alone)."""
    n = threads
    fit = (f"BM_MlpFitEpoch/threads:{n}/|BM_MlpFitFirstEpoch/threads:{n}/|BM_MlpFitStepsOnly/threads:{n}/|"
           f"BM_MlpFitBatchesOnly/threads:{n}$|BM_MlpTrainStep/threads:{n}$")
    flt = fit if fit_only else (f"BM_MlpTrainStep/threads:{n}$|BM_CnnTrainStep/threads:{n}$|"
                                f"BM_MlpInferenceBatch1/threads:{n}$|BM_MlpFitEpoch/threads:{n}/|"
                                f"BM_MlpGemmFloor.*threads:{n}$|BM_MlpTrainStepFirstCall")
    out = subprocess.run([exe, f"--benchmark_filter={flt}", "--benchmark_format=json", "--benchmark_min_time=1",
                          "--benchmark_repetitions=3", "--benchmark_report_aggregates_only=true"],
                         capture_output=True, text=True, check=True).stdout
    res = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        unit = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[b["time_unit"]]
        res[b["run_name"].split("/")[0]] = b["real_time"] * unit  # ms
        if b["run_name"].startswith("BM_MlpFitEpoch") and "traces" in b:
            res["traces"] = b["traces"]  # of the fit's train step, over every epoch run
    # Every benchmark the filter names and the binary has must have run (last session's fit row
    # went missing when a /min_time: suffix slipped past the filter): fail instead of a blank row.
    listed = {t.split("/")[0] for t in subprocess.run([exe, "--benchmark_list_tests"], capture_output=True,
                                                      text=True, check=True).stdout.split()}
    missed = [name for name in {p.split("/")[0].split(".")[0] for p in flt.split("|")} if name in listed and name not in res]
    if missed:
        raise SystemExit(f"{exe}: the filter {flt!r} ran none of {', '.join(sorted(missed))}")
    rows = {MLP: res.get("BM_MlpTrainStep"), CNN: res.get("BM_CnnTrainStep"),
            INFER: res["BM_MlpInferenceBatch1"] * 1e3 if "BM_MlpInferenceBatch1" in res else None,
            FIRST: res.get("BM_MlpTrainStepFirstCall"), FIRST_COLD: res.get("BM_MlpTrainStepFirstCall"),
            FIT: res.get("BM_MlpFitEpoch"), FIT_FIRST: res.get("BM_MlpFitFirstEpoch"),
            STEPS_ONLY: res.get("BM_MlpFitStepsOnly"), BATCHES_ONLY: res.get("BM_MlpFitBatchesOnly"),
            FLOOR: res.get("BM_MlpGemmFloor"), "traces": res.get("traces")}
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


def job_ef_python(threads):
    """The fit epoch from Python (ef.keras, NumPy arrays in, the same C++ loop underneath)."""
    import eagerflow as ef
    ef.set_num_threads(threads)
    assert ef.num_threads() == threads
    ef.random.set_seed(1)
    L = ef.keras.layers
    model = ef.keras.Sequential([L.Dense(512, activation="relu"), L.Dense(512, activation="relu"), L.Dense(10)])
    model.compile(optimizer=ef.keras.optimizers.Adam(learning_rate=1e-3),
                  loss=ef.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    xs, ys = compare.mnist_like()
    out = compare.first_and_later(lambda: model.fit(xs, ys, batch_size=compare.FIT_BATCH, epochs=1, verbose=0))
    out["traces"] = model.tracing_count()
    return out


def job_tf_fit(threads):
    return compare.tf_fit()


def job_jax_fit(threads):
    return compare.jax_fit()


def job_torch_fit(threads):
    return compare.torch_fit(False)


def job_torch_fused_fit(threads):
    return compare.torch_fit(False, fused=True)


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
# --fit: only the fit rows, from each framework's fit workload alone.
FIT_ONLY_JOBS = {"eagerflow Python": job_ef_python, "TF/Keras": job_tf_fit, "JAX": job_jax_fit,
                 "torch": job_torch_fit, "torch fused Adam": job_torch_fused_fit}
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


def run_job(name, threads, python, extra_env=None, before=None, after=None, fit=False):
    """One job in a process of its own, pinned to the first `threads` cores; its rows plus
    cpu/wall (process CPU time over wall time, children included) and the 1-minute load.
    fit: the job's fit rows only (FIT_ONLY_JOBS; eagerflow's fit benchmarks)."""
    with open("/proc/loadavg") as f:
        load = float(f.read().split()[0])
    cpus = ",".join(str(c) for c in range(threads))
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    if name in EF_JOBS:
        exe = before if name == "eagerflow before" else after
        cmd = ["taskset", "-c", cpus, sys.executable, os.path.abspath(__file__), "--ef-job", exe, "--threads", str(threads)]
    else:
        cmd = ["taskset", "-c", cpus, python, os.path.abspath(__file__), "--job", name, "--threads", str(threads)]
    if fit:
        cmd.append("--fit")
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


def fit_table(runs, threads_list, jobs):
    """--fit: the first and later epochs in every framework, and eagerflow's epoch against its
    floors measured in the same process."""
    def vals(j, n, key):
        return [r[key] for r in runs.get(f"{j}|{n}", []) if r and r.get(key) is not None]

    def med(j, n, key):
        v = vals(j, n, key)
        return statistics.median(v) if v else None

    peers = [j for j in jobs if j not in EF_JOBS and j != "eagerflow Python"]
    ours = "eagerflow after"
    steps = -(-compare.FIT_SAMPLES // compare.FIT_BATCH)
    lines = []
    for n in threads_list:
        rounds = max((len(vals(j, n, FIT)) for j in jobs), default=0)
        lines += [f"\n{n} thread(s); medians of {rounds} rounds (ms); ratio = eagerflow (C++) / best peer "
                  "(below 1: eagerflow faster)\n",
                  "| workload | " + " | ".join(jobs) + " | best peer | eagerflow / best |",
                  "|---|" + "---:|" * len(jobs) + "---|---:|"]
        for row in FIT_ROWS:
            best = min(((med(j, n, row), j) for j in peers if med(j, n, row) is not None), default=None)
            mine = med(ours, n, row)
            lines.append(f"| {row} | " + " | ".join(fmt(med(j, n, row)) for j in jobs) +
                         f" | {best[1] if best else '-'} | {f'{mine / best[0]:.2f}' if best and mine else '-'} |")
        fit, step, alone, gathers = (med(ours, n, k) for k in (FIT, MLP, STEPS_ONLY, BATCHES_ONLY))
        if fit and step and alone:
            lines.append(f"\neagerflow's epoch against its floors (same process, medians): epoch {fmt(fit)}; "
                         f"the epoch's {steps} batches through train_on_batch {fmt(alone)} (epoch / that "
                         f"{fit / alone:.3f}); {steps} x the 128-row step {fmt(steps * step)} (epoch / that "
                         f"{fit / (steps * step):.3f}); the batch gathers alone {fmt(gathers)}")
        py, cpp = med("eagerflow Python", n, FIT), fit
        if py and cpp:
            pairs = [a / b for a, b in zip(vals("eagerflow Python", n, FIT), vals(ours, n, FIT))]
            lines.append(f"fit from Python / from C++: {py / cpp:.3f} (per round: " +
                         ", ".join(f"{x:.3f}" for x in pairs) + ")")
        lines.append("train-step traces / compilations after all epochs (the last batch is 64 rows): " + ", ".join(
            f"{j} {int(med(j, n, 'traces'))}" for j in jobs if med(j, n, "traces") is not None))
        lines.append("thread check (median process CPU time / wall time per job): " + ", ".join(
            f"{j} {med(j, n, 'cpu_per_wall'):.2f}" for j in jobs if med(j, n, "cpu_per_wall") is not None))
    return "\n".join(lines)


class Locks:
    """Holds /tmp/ef-build.lock and /tmp/ef-bench.lock for a round, in the order of the team's
    `flock /tmp/ef-build.lock flock /tmp/ef-bench.lock <cmd>` (the opposite order deadlocked
    against it: this run held the bench lock waiting for the build lock held by one waiting
    for the bench lock)."""
    def __enter__(self):
        self.files = [open(p, "a") for p in ("/tmp/ef-build.lock", "/tmp/ef-bench.lock")]
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
    p.add_argument("--ef-python", default=os.path.join(HOME, ".cache/eagerflow/venv/bin/python"),
                   help="the virtualenv `make python` installs eagerflow into (--fit's Python job)")
    p.add_argument("--fit", action="store_true",
                   help="only the fit rows: first and later epochs, with eagerflow's floors (the epoch's steps "
                        "alone, 63 x the step, the batch gathers alone) and the fit from Python")
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
            print("RESULT " + json.dumps(ef_rows(args.ef_job, n, fit_only=args.fit)), flush=True)
            return
        if args.fit:
            if args.job != "eagerflow Python":
                compare.limit_threads("torch" if args.job.startswith("torch") else
                                      {"TF/Keras": "tensorflow", "JAX": "jax"}[args.job], n)
            print("RESULT " + json.dumps(FIT_ONLY_JOBS[args.job](n)), flush=True)
            return
        if args.job != "torch.compile first call":
            compare.limit_threads("torch" if args.job.startswith("torch") else
                                  {"TF/Keras": "tensorflow", "JAX": "jax"}[args.job], n)
        print("RESULT " + json.dumps({**JOBS, **CHILD_JOBS}[args.job](n)), flush=True)
        return
    threads_list = [int(t) for t in args.threads.split(",")]
    if args.fit:  # eagerflow before only when asked for (--jobs)
        jobs = [j for j in ["eagerflow before"] + FIT_JOBS if j in (args.jobs.split(",") if args.jobs else FIT_JOBS)]
    else:
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
                        python = args.ef_python if j == "eagerflow Python" else args.peer_python
                        res = run_job(j, n, python, before=args.before, after=args.after, fit=args.fit)
                        runs.setdefault(f"{j}|{n}", []).append(res)
                        print(f"  threads {n} {j}: " + json.dumps(res), file=sys.stderr, flush=True)
            if args.results:
                with open(args.results, "w") as f:
                    json.dump(runs, f, indent=1)
    v = compare.versions()
    print(f"date: {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC; CPU: {compare.cpu_name()} "
          f"({os.cpu_count()} cores); versions: " + ", ".join(f"{k} {x}" for k, x in v.items()))
    print(fit_table(runs, threads_list, jobs) if args.fit else table(runs, threads_list, jobs))


if __name__ == "__main__":
    main()
