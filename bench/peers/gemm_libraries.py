#!/usr/bin/env python3
"""float32 GEMM libraries on eagerflow's shapes, side by side: ours (gemm_f32, a forward Dense's
weights packed once, and ours_unpacked: packed on every call), oneDNN's matmul,
OpenBLAS, BLIS, MKL, libxsmm (build/release/bench/ef_gemm_libraries, one process per library)
and onnxruntime's MLAS as the anchor (a one-node ONNX model per shape, run through IO binding:
a forward Dense's weights are an initializer, which MLAS packs once at load, as it would in a
served model; every other operand is an input). Each job is a process of its own, pinned with
taskset to the first N cores, its threads set to N and checked (process CPU / wall); rounds are
interleaved, the order rotating, each run holding /tmp/ef-build.lock. Prints GFLOPS per shape
(median of the rounds), the fastest as a share of the cores' FMA ceiling (register-only FMA
chains, `ef_gemm_libraries --fma-peak`, measured each round), and each library's bit checks.

    cmake --build build/release --target ef_gemm_libraries
    ~/.cache/eagerflow/peers/bin/python bench/peers/gemm_libraries.py --rounds 3 --threads 1,2

MKL comes from PyPI (`pip install mkl` into the peers virtualenv; EF_MKL_DIR points at its
lib/); OpenBLAS, BLIS and libxsmm from Debian (libopenblas0, libblis4, libxsmm-dev).
"""
import argparse
import fcntl
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXE = os.path.join(ROOT, "build/release/bench/ef_gemm_libraries")
NATIVE = ["ours", "ours_unpacked", "onednn", "openblas", "blis", "mkl", "xsmm"]


def shapes():
    """The shape list, from the program itself (one source of truth): (what, batch, m, k, n, ta, tb)."""
    import re
    src = open(os.path.join(ROOT, "bench/gemm_libraries.cpp")).read()
    out = []
    for m in re.finditer(r'\{"([^"]+)", (\d+), (\d+), (\d+), (\d+), (true|false), (true|false)\}', src):
        what, b, mm, k, n, ta, tb = m.groups()
        out.append((what, int(b), int(mm), int(k), int(n), ta == "true", tb == "true"))
    return out


def mlas_job(threads, min_ms):
    """One JSON line per shape, as ef_gemm_libraries prints them, for onnxruntime's MLAS."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    def session(shape, n_threads, b_value):
        what, batch, m, k, n, ta, tb = shape
        forward_dense = batch == 1 and not ta and not tb and what.startswith(("Dense", "LSTM", "transformer", "conv"))
        a_dims = ([k, "M"] if ta else ["M", k]) if batch == 1 else [batch, "M", k]
        b_dims = ([n, k] if tb else [k, n]) if batch == 1 else [batch, n, k] if tb else [batch, k, n]
        inputs = [helper.make_tensor_value_info("A", TensorProto.FLOAT, a_dims)]
        inits = []
        if forward_dense:
            inits.append(helper.make_tensor("B", TensorProto.FLOAT, b_dims, b_value.ravel().tolist()))
        else:
            inputs.append(helper.make_tensor_value_info("B", TensorProto.FLOAT, b_dims))
        out_dims = ["M", n] if batch == 1 else [batch, "M", n]
        if batch == 1:
            node = helper.make_node("Gemm", ["A", "B"], ["C"], transA=int(ta), transB=int(tb))
        else:
            node = helper.make_node("FusedMatMul", ["A", "B"], ["C"], domain="com.microsoft", transB=int(tb))
        graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("C", TensorProto.FLOAT, out_dims)],
                                  initializer=inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
        model.ir_version = 8
        so = ort.SessionOptions()
        so.intra_op_num_threads = n_threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        return sess, forward_dense

    rng = np.random.default_rng(7)
    for shape in shapes():
        what, batch, m, k, n, ta, tb = shape
        a_shape = ((k, m) if ta else (m, k)) if batch == 1 else (batch, m, k)
        b_shape = ((n, k) if tb else (k, n)) if batch == 1 else ((batch, n, k) if tb else (batch, k, n))
        a = rng.uniform(-1, 1, a_shape).astype(np.float32)
        b = rng.uniform(-1, 1, b_shape).astype(np.float32)
        sess, b_init = session(shape, threads, b)
        c = np.empty(((m, n) if batch == 1 else (batch, m, n)), np.float32)

        def run(s, a_val, out):
            io = s.io_binding()
            io.bind_cpu_input("A", a_val)
            if not b_init:
                io.bind_cpu_input("B", b)
            io.bind_ortvalue_output("C", ort.OrtValue.ortvalue_from_numpy(out))
            return io

        io = run(sess, a, c)
        sess.run_with_iobinding(io)
        first = c.copy()
        sess.run_with_iobinding(io)
        repeat = bool(np.array_equal(first, c))
        row_alone = True
        for rows in (1, 3):
            if rows >= m:
                continue
            part_a = (a[:, :rows] if ta else a[:rows]) if batch == 1 else a[:1, :rows]
            part_a = np.ascontiguousarray(part_a)
            if batch != 1:
                continue  # the batched model's batch is fixed; its rows are checked on 2-D shapes
            pc = np.empty((rows, n), np.float32)
            sess.run_with_iobinding(run(sess, part_a, pc))
            row_alone = row_alone and bool(np.array_equal(pc, first[:rows]))
        threads_same = True
        if threads > 1:
            s1, _ = session(shape, 1, b)
            c1 = np.empty_like(c)
            s1.run_with_iobinding(run(s1, a, c1))
            threads_same = bool(np.array_equal(c1, first))
        t0 = time.perf_counter()
        calls = 0
        while time.perf_counter() - t0 < min_ms / 3e3:
            sess.run_with_iobinding(io)
            calls += 1
        per = max(1, calls * 3)
        us = []
        c0, w0 = time.process_time(), time.perf_counter()
        for _ in range(5):
            t = time.perf_counter()
            for _ in range(per):
                sess.run_with_iobinding(io)
            us.append((time.perf_counter() - t) / per * 1e6)
        cpu = (time.process_time() - c0) / (time.perf_counter() - w0)
        med = statistics.median(us)
        print(json.dumps({"lib": "mlas", "detail": f"onnxruntime {ort.__version__}", "threads": threads, "shape": what,
                          "us": round(med, 2), "gflops": round(2 * batch * m * k * n / med * 1e-3, 1),
                          "cpu_per_wall": round(cpu, 2), "repeat": repeat, "threads_same": threads_same,
                          "row_alone": row_alone, "rel_err": 0.0}), flush=True)


def run_job(lib, threads, args):
    cores = ",".join(str(i) for i in range(threads))
    env = dict(os.environ)
    env.update({"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "OPENBLAS_NUM_THREADS": str(threads),
                "BLIS_NUM_THREADS": str(threads)})
    if lib == "mlas":
        cmd = [args.peer_python, os.path.abspath(__file__), "--mlas-job", str(threads), "--min-ms", str(args.min_ms)]
    else:
        cmd = [EXE, "--lib", lib, "--threads", str(threads), "--min-ms", str(args.min_ms)]
        if lib == "mkl":
            env["EF_MKL_DIR"] = args.mkl_dir
            env["LD_LIBRARY_PATH"] = args.mkl_dir + ":" + env.get("LD_LIBRARY_PATH", "")
            env["MKL_THREADING_LAYER"] = "GNU"  # libgomp, the runtime everything else here uses
    with open("/tmp/ef-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        out = subprocess.run(["taskset", "-c", cores] + cmd, capture_output=True, text=True, env=env)
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode != 0 or not rows or "error" in rows[0]:
        print(f"  {lib} at {threads} threads: {rows[0].get('error') if rows else out.stderr[-400:]}", file=sys.stderr)
        return []
    return rows


def fma_peak(threads):
    """GFLOPS of register-only FMA chains on the first `threads` cores (holding the build lock)."""
    cores = ",".join(str(i) for i in range(threads))
    with open("/tmp/ef-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        out = subprocess.run(["taskset", "-c", cores, EXE, "--fma-peak", "--threads", str(threads)],
                             capture_output=True, text=True, env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return rows[0]["fma_peak_gflops"] if rows else None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", default="1,2")
    p.add_argument("--libs", default=",".join(NATIVE + ["mlas"]))
    p.add_argument("--min-ms", type=float, default=30)
    p.add_argument("--peer-python", default=os.path.expanduser("~/.cache/eagerflow/peers/bin/python"))
    p.add_argument("--mkl-dir", default=os.path.expanduser("~/.cache/eagerflow/peers/lib"))
    p.add_argument("--mlas-job", type=int, default=0)
    args = p.parse_args()
    if args.mlas_job:
        mlas_job(args.mlas_job, args.min_ms)
        return
    libs = args.libs.split(",")
    thread_counts = [int(t) for t in args.threads.split(",")]
    results = {}  # (lib, threads, shape) -> [rows]
    peaks = {}  # threads -> [GFLOPS]
    for r in range(args.rounds):
        for n in thread_counts:
            peak = fma_peak(n)
            if peak:
                peaks.setdefault(n, []).append(peak)
            order = libs[r % len(libs):] + libs[:r % len(libs)]
            for lib in order:
                for row in run_job(lib, n, args):
                    results.setdefault((lib, n, row["shape"]), []).append(row)
            print(f"round {r + 1} threads {n} done", file=sys.stderr, flush=True)
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; CPU: {cpu}; {args.rounds} interleaved rounds; GFLOPS "
          "(median of the rounds; higher is faster)")
    present = [l for l in libs if any(k[0] == l for k in results)]
    for n in thread_counts:
        peak = statistics.median(peaks[n]) if peaks.get(n) else None
        print(f"\n{n} thread(s); FMA ceiling (register-only FMA chains, median of the rounds): "
              + (f"{peak:.0f} GFLOPS ({', '.join(f'{x:.0f}' for x in peaks[n])})" if peak else "not measured") + "\n")
        print("| shape | " + " | ".join(present) + " | fastest | ours / fastest (time) | fastest / ceiling | ours / ceiling |")
        print("|---|" + "---:|" * (len(present) + 4))
        for what, *_ in shapes():
            g = {l: statistics.median(x["gflops"] for x in results.get((l, n, what), [])) if (l, n, what) in results else None
                 for l in present}
            best = max((l for l in present if g[l]), key=lambda l: g[l])
            ratio = g[best] / g["ours"] if g.get("ours") else float("nan")
            cells = " | ".join(f"{g[l]:.0f}" if g[l] else "-" for l in present)
            share = (lambda x: f"{x / peak:.0%}" if peak and x else "-")
            print(f"| {what} | {cells} | {best} | {ratio:.2f} | {share(g[best])} | {share(g.get('ours'))} |")
        print("\nthreads checked (process CPU / wall, lowest and highest over all shapes and rounds): " +
              "; ".join(f"{l} {min(x['cpu_per_wall'] for k, v in results.items() if k[0] == l and k[1] == n for x in v):.2f}-"
                        f"{max(x['cpu_per_wall'] for k, v in results.items() if k[0] == l and k[1] == n for x in v):.2f}"
                        for l in present))
    print("\nBits (shapes where the check held, of all): repeat = a second call; threads = 1 and N threads; "
          "row alone = a row computed alone or with 2 others as in the whole product")
    print("\n| library | detail | repeat | threads | row alone | shapes where a row depends on the batch |")
    print("|---|---|---:|---:|---:|---|")
    for l in present:
        rows = [x for k, v in results.items() if k[0] == l for x in v]
        detail = rows[0]["detail"]
        total = len({(x["shape"], x["threads"]) for x in rows})
        # A check holds for a shape where it held in every round.
        held = {c: total - len({(x["shape"], x["threads"]) for x in rows if not x[c]})
                for c in ("repeat", "threads_same", "row_alone")}
        bad = sorted({x["shape"] for x in rows if not x["row_alone"]})
        print(f"| {l} | {detail} | {held['repeat']}/{total} | {held['threads_same']}/{total} | {held['row_alone']}/{total} | "
              f"{'; '.join(bad) if bad else '-'} |")


if __name__ == "__main__":
    main()
