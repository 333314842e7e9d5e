#!/usr/bin/env python3
"""Per-example gradients of the MNIST MLP (784-128-10, batch 128): eagerflow's
ef.function(ef.vmap(ef.grad(loss))) and eager ef.vmap(ef.grad(loss)) against
jax.jit(jax.vmap(jax.grad(loss))) and torch.func.vmap(torch.func.grad(loss)). Not a test.

    python3 bench/peers/per_example_grads.py [--threads 1]

eagerflow runs under --ef-python (the virtualenv `make python` installs into), the peers under
--peer-python (~/.cache/eagerflow/peers; a missing framework is skipped). Each job is a process
of its own pinned to the first N cores, with the framework's pools set to N threads (as
compare.py does); the table shows each job's median time per call (compare.median_us) and the
ratio to eagerflow's traced row. Inputs are random (the timing does not depend on the digits).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
B, D, H, C = 128, 784, 128, 10


def data(np):
    r = np.random.default_rng(0)
    params = [r.normal(size=(D, H)) * 0.05, np.zeros(H), r.normal(size=(H, C)) * 0.1, np.zeros(C)]
    x = r.normal(size=(B, D))
    y = np.eye(C)[r.integers(0, C, size=B)]
    return [p.astype(np.float32) for p in params], x.astype(np.float32), y.astype(np.float32)


def job_eagerflow():
    import numpy as np
    import eagerflow as ef

    ef.set_num_threads(int(os.environ["EF_BENCH_THREADS"]))
    (w1, b1, w2, b2), x, y = data(np)
    x, y = x.reshape(B, 1, D), y.reshape(B, 1, C)  # one example is a [1, 784] row

    def loss(w1, b1, w2, b2, xi, yi):
        h = ef.relu(ef.matmul(xi, w1) + b1)
        return -ef.sum(yi * ef.log_softmax(ef.matmul(h, w2) + b2, -1))

    per_example = ef.vmap(ef.grad(loss, argnums=(0, 1, 2, 3)), in_axes=(None, None, None, None, 0, 0))
    args = [ef.convert_to_tensor(a) for a in (w1, b1, w2, b2, x, y)]
    traced = ef.function(lambda *a: per_example(*a))
    g = traced(*args)
    assert tuple(g[0].shape) == (B, D, H) and traced.experimental_get_tracing_count() == 1
    return {"eagerflow function(vmap(grad))": median_us(lambda: traced(*args)),
            "eagerflow vmap(grad), eager": median_us(lambda: per_example(*args))}


def job_jax():
    import numpy as np
    import jax
    import jax.numpy as jnp

    params, x, y = data(np)

    def loss(w1, b1, w2, b2, xi, yi):
        h = jax.nn.relu(xi @ w1 + b1)
        return -jnp.sum(yi * jax.nn.log_softmax(h @ w2 + b2))

    f = jax.jit(jax.vmap(jax.grad(loss, argnums=(0, 1, 2, 3)), in_axes=(None, None, None, None, 0, 0)))
    args = [jnp.asarray(a) for a in (*params, x, y)]
    run = lambda: jax.block_until_ready(f(*args))  # noqa: E731
    assert run()[0].shape == (B, D, H)
    return {"jax jit(vmap(grad))": median_us(run)}


def job_torch():
    import numpy as np
    import torch
    from torch.func import grad, vmap

    params, x, y = data(np)

    def loss(w1, b1, w2, b2, xi, yi):
        h = torch.relu(xi @ w1 + b1)
        return -(yi * torch.log_softmax(h @ w2 + b2, -1)).sum()

    f = vmap(grad(loss, argnums=(0, 1, 2, 3)), in_dims=(None, None, None, None, 0, 0))
    args = [torch.from_numpy(a) for a in (*params, x, y)]
    with torch.no_grad():
        assert f(*args)[0].shape == (B, D, H)
        return {"torch.func vmap(grad)": median_us(lambda: f(*args))}


JOBS = {"eagerflow": job_eagerflow, "jax": job_jax, "torch": job_torch}


def main():
    got = run_jobs(__file__, JOBS)
    if got is None:
        return
    results, threads = got
    base = results.get("eagerflow function(vmap(grad))")
    print(f"per-example gradients, MLP {D}-{H}-{C}, batch {B}, {threads} thread(s): median per call")
    for name, us in results.items():
        ratio = f"  eagerflow/peer {base / us:.2f}" if base and not name.startswith("eagerflow") else ""
        print(f"  {name:34s} {us / 1e3:8.3f} ms{ratio}")


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    from compare import median_us, run_jobs  # noqa: E402,F401  (the timer every peer table uses)
    main()
