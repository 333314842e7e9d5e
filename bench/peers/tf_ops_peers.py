#!/usr/bin/env python3
"""Issue 31's ops beside TensorFlow's: gather_nd, tensor_scatter_nd_add, image resize, string split
and a few string functions, each inside a traced function (ef.function / tf.function), one thread.

Two worker processes (one per framework, each pinned to the same core with taskset, threads set
and checked) run the rows in interleaved rounds: the driver asks each in turn for one timing of
one row, so drift in the machine hits both alike. Reported: the median per call of each, and the
ratio eagerflow / TF (below 1: eagerflow faster).

    python bench/peers/tf_ops_peers.py --ef-python ~/.cache/eagerflow/venv/bin/python \\
        --tf-python /root/.cache/tfvenv/bin/python --pythonpath build/release/python_package
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

WORKER = r'''
import json, os, sys, time
import numpy as np
fw = sys.argv[1]
if fw == "tf":
    import tensorflow as tf
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    assert tf.config.threading.get_intra_op_parallelism_threads() == 1
    fn = tf.function
else:
    import eagerflow as tf
    tf.set_num_threads(1)
    fn = tf.function
rng = np.random.default_rng(0)
params = tf.constant(rng.random((1000, 64), dtype=np.float32))
idx = tf.constant(rng.integers(0, 1000, (4096, 1)).astype(np.int32))
upd = tf.constant(rng.random((4096, 64), dtype=np.float32))
img = tf.constant(rng.random((8, 128, 128, 3), dtype=np.float32))
words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
lines = tf.constant([" ".join(words[(i + k) % 8] for k in range(12)) for i in range(1024)])
rows = {
    "gather_nd [4096 of 1000x64]": (fn(lambda p, i: tf.gather_nd(p, i)), (params, idx)),
    "tensor_scatter_nd_add [4096 rows into 1000x64]": (fn(lambda p, i, u: tf.tensor_scatter_nd_add(p, i, u)), (params, idx, upd)),
    "image.resize bilinear 8x128x128x3 -> 224": (fn(lambda x: tf.image.resize(x, [224, 224])), (img,)),
    "strings.split 1024 lines x 12 words": (fn(lambda s: tf.strings.split(s).values), (lines,)),
    "strings lower+regex_replace+length 1024 lines": (fn(lambda s: tf.strings.length(tf.strings.regex_replace(tf.strings.lower(s), "a", "A"))), (lines,)),
    "strings.to_hash_bucket_fast 1024 lines": (fn(lambda s: tf.strings.to_hash_bucket_fast(s, 1000)), (lines,)),
}
for f, args in rows.values():
    for _ in range(3):
        f(*args)
print(json.dumps(sorted(rows)), flush=True)
for line in sys.stdin:
    name, reps = json.loads(line)
    f, args = rows[name]
    t0 = time.perf_counter()
    for _ in range(reps):
        out = f(*args)
    _ = out.numpy() if hasattr(out, "numpy") else out
    print(json.dumps((time.perf_counter() - t0) / reps), flush=True)
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ef-python", required=True)
    ap.add_argument("--tf-python", required=True)
    ap.add_argument("--pythonpath", required=True)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--core", type=int, default=1)
    a = ap.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS="1", TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=os.path.abspath(a.pythonpath))
    procs = {}
    for fw, py in (("ef", a.ef_python), ("tf", a.tf_python)):
        procs[fw] = subprocess.Popen(["taskset", "-c", str(a.core), py, "-c", WORKER, fw], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env)
    names = None
    for p in procs.values():
        names = json.loads(p.stdout.readline())
    times = {fw: {n: [] for n in names} for fw in procs}
    for _ in range(a.rounds):
        for n in names:
            for fw, p in procs.items():
                p.stdin.write(json.dumps((n, 20)) + "\n")
                p.stdin.flush()
                times[fw][n].append(json.loads(p.stdout.readline()))
    for p in procs.values():
        p.stdin.close()
        p.wait()
    print(f"| row | eagerflow | TF | ratio |\n|---|---:|---:|---:|")
    for n in names:
        e, t = statistics.median(times["ef"][n]), statistics.median(times["tf"][n])
        print(f"| {n} | {e * 1e6:.0f} µs | {t * 1e6:.0f} µs | {e / t:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
