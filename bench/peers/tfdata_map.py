"""tf.data's side of bench/dataset_bench.cpp: map throughput of sqrt(x*x + 1) * 0.5 over rows of
784 float32 on `--threads` threads (num_parallel_calls, a private thread pool of that size, one
intra-op thread). Prints `elements_per_s <rate>` (the median of 3 timed passes after a warm-up)."""
import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10000)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(a.threads)
    x = np.random.default_rng(0).random((a.rows, 784), dtype=np.float32)
    opts = tf.data.Options()
    opts.threading.private_threadpool_size = a.threads
    ds = (tf.data.Dataset.from_tensor_slices(x)
          .map(lambda v: tf.sqrt(v * v + 1.0) * 0.5, num_parallel_calls=a.threads)
          .with_options(opts))
    for _ in ds.take(1000):
        pass
    rates = []
    for _ in range(3):
        t = time.perf_counter()
        n = 0
        for _ in ds:
            n += 1
        rates.append(n / (time.perf_counter() - t))
    print(f"elements_per_s {sorted(rates)[1]:.0f}")


if __name__ == "__main__":
    main()
