"""Peer for bench/scan_bench.cpp (BM_LstmScan): the same LSTM cell on jax.lax.scan (batch 64,
hidden 256, input 256, 100 steps), jax.jit of the gradients of sum(hs) w.r.t. the kernels and
bias, CPU, 1 (default) or --threads N threads.
Run with the peer virtualenv: ~/.cache/eagerflow/peers/bin/python bench/peers/scan_jax.py"""
import argparse
import os
import time

parser = argparse.ArgumentParser()
parser.add_argument("--threads", type=int, default=1)
parser.add_argument("--steps", type=int, default=20)
args = parser.parse_args()
os.environ["XLA_FLAGS"] = (f"--xla_cpu_multi_thread_eigen={'true' if args.threads > 1 else 'false'} "
                           f"intra_op_parallelism_threads={args.threads}")
os.environ["OMP_NUM_THREADS"] = str(args.threads)
os.environ["JAX_PLATFORMS"] = "cpu"
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

B, H, C, T = 64, 256, 256, 100
r = np.random.default_rng(0)
xs = jnp.asarray(r.normal(size=(T, B, C)).astype(np.float32))
wx = jnp.asarray(0.05 * r.normal(size=(C, 4 * H)).astype(np.float32))
wh = jnp.asarray(0.05 * r.normal(size=(H, 4 * H)).astype(np.float32))
b = jnp.zeros((4 * H,), jnp.float32)


def loss(wx, wh, b, xs):
    def cell(carry, x):
        h, c = carry
        z = x @ wx + h @ wh + b
        i, f, g, o = (z[:, k * H:(k + 1) * H] for k in range(4))
        c2 = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h2 = jax.nn.sigmoid(o) * jnp.tanh(c2)
        return (h2, c2), h2

    zeros = jnp.zeros((B, H), jnp.float32)
    _, hs = jax.lax.scan(cell, (zeros, zeros), xs)
    return jnp.sum(hs)


step = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))
jax.block_until_ready(step(wx, wh, b, xs))
times = []
for _ in range(args.steps):
    t0 = time.perf_counter()
    jax.block_until_ready(step(wx, wh, b, xs))
    times.append(time.perf_counter() - t0)
print(f"jax lax.scan LSTM cell grads  threads={args.threads}  median {1e3 * np.median(times):8.2f} ms "
      f"({10 * np.median(times):.2f} ms/step)  min {1e3 * min(times):8.2f} ms")
