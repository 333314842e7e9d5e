#!/usr/bin/env python3
"""The hessian of a 100-parameter function: eagerflow's ef.function(ef.hessian(f)) and eager
ef.hessian(f) against jax.jit(jax.hessian(f)) and torch.func.hessian(f). Not a test.

    python3 bench/peers/hessian.py [--threads 1]

f(p) = sum(log(1 + (A p)^2)) + 0.5 |p|^2 with A a fixed [50, 100] matrix, so H is [100, 100].
Each job is a process of its own, pinned, with its framework's pools limited to N threads (as
compare.py does); each reports its median time per call (compare.median_us) and the sum of
H's entries, which must agree between frameworks.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
N, M = 100, 50


def data(np):
    r = np.random.default_rng(0)
    return (r.normal(size=(M, N)) * 0.3).astype(np.float32), r.normal(size=(N,)).astype(np.float32)


def job_eagerflow():
    import numpy as np
    import eagerflow as ef

    ef.set_num_threads(int(os.environ["EF_BENCH_THREADS"]))
    a_np, p_np = data(np)
    a = ef.convert_to_tensor(a_np)

    def f(p):
        z = ef.matmul(a, ef.reshape(p, [N, 1]))
        return ef.sum(ef.log(1.0 + z * z)) + 0.5 * ef.sum(p * p)

    h = ef.hessian(f)
    traced = ef.function(lambda p: h(p))
    p = ef.convert_to_tensor(p_np)
    out = traced(p)
    assert tuple(out.shape) == (N, N) and traced.experimental_get_tracing_count() == 1
    return {"eagerflow function(hessian)": [median_us(lambda: traced(p)), float(np.sum(out.numpy()))],
            "eagerflow hessian, eager": [median_us(lambda: h(p)), float(np.sum(h(p).numpy()))]}


def job_jax():
    import numpy as np
    import jax
    import jax.numpy as jnp

    a_np, p_np = data(np)
    a, p = jnp.asarray(a_np), jnp.asarray(p_np)

    def f(p):
        z = a @ p
        return jnp.sum(jnp.log(1.0 + z * z)) + 0.5 * jnp.sum(p * p)

    h = jax.jit(jax.hessian(f))
    run = lambda: jax.block_until_ready(h(p))  # noqa: E731
    out = run()
    return {"jax jit(hessian)": [median_us(run), float(np.sum(np.asarray(out)))]}


def job_torch():
    import numpy as np
    import torch
    from torch.func import hessian

    a_np, p_np = data(np)
    a, p = torch.from_numpy(a_np), torch.from_numpy(p_np)

    def f(p):
        z = a @ p
        return torch.sum(torch.log(1.0 + z * z)) + 0.5 * torch.sum(p * p)

    h = hessian(f)
    out = h(p)
    return {"torch.func hessian": [median_us(lambda: h(p)), float(out.sum())]}


JOBS = {"eagerflow": job_eagerflow, "jax": job_jax, "torch": job_torch}


def main():
    got = run_jobs(__file__, JOBS)
    if got is None:
        return
    results, threads = got
    base = results.get("eagerflow function(hessian)", [None])[0]
    print(f"hessian of a {N}-parameter function, {threads} thread(s): median per call, sum of H")
    for name, (us, total) in results.items():
        ratio = f"  eagerflow/peer {base / us:.2f}" if base and not name.startswith("eagerflow") else ""
        print(f"  {name:30s} {us:9.1f} us  sum(H) {total:10.4f}{ratio}")


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    from compare import median_us, run_jobs  # noqa: E402,F401  (the timer every peer table uses)
    main()
