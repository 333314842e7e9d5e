#!/usr/bin/env python3
"""Side-by-side: eagerflow's benchmarks and the same workloads in PyTorch, JAX and TensorFlow.

Runs build/release/bench/ef_bench (JSON) and the peers in one go on the same machine, then
prints medians and eagerflow/peer ratios. Peers live in a virtualenv outside the repository:
    bash scripts/install_peer_deps.sh    (the peers' virtualenv, ~/.cache/eagerflow/peers)
    ~/.cache/eagerflow/peers/bin/python bench/peers/compare.py [--threads N]
A peer that is not installed is skipped. The whole run is pinned to the first N cores
(children inherit it), every framework's pools are limited to N threads and checked (process
CPU time / wall time over a heavy workload), and each process starts only once the machine is
quiet. Variants shown: torch = eager (traced rows: torch.jit.trace), torch.compile = inductor,
jax = op-by-op dispatch (eager rows) and jax.jit (traced rows), tensorflow = eager and
tf.function without XLA; libtorch = the same eager ops from C++.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import platform
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def median_us(fn, min_time=0.3, repeats=7):
    """Median over `repeats` batches of the per-call time in microseconds."""
    fn()
    n = 1
    while True:  # size a batch to take about min_time / repeats
        t = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t
        if dt > min_time / repeats or n > 1 << 22:
            break
        n *= 4
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        samples.append((time.perf_counter() - t) / n * 1e6)
    return statistics.median(samples)


def once_ms(fn, repeats=5):
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1e3)
    return statistics.median(samples)


def eagerflow(threads, exe=None, repetitions=5, min_time=0.3):
    exe = exe or os.path.join(ROOT, "build/release/bench/ef_bench")
    out = subprocess.run([exe, "--benchmark_format=json", f"--benchmark_repetitions={repetitions}",
                          "--benchmark_report_aggregates_only=true", f"--benchmark_min_time={min_time}",
                          "--benchmark_filter=CachedCall|EagerAddOverhead|SeedLayer|TraceSeed|MatMul/batch:60|TrainStep|Chain15|"
                          "MatMul/batch:0/m:1024|BiasAdd|Unary4M/tanh|MlpInferenceBatch1"],
                         capture_output=True, text=True, check=True).stdout
    res = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        name = b["run_name"]
        unit = {"ns": 1e-3, "us": 1.0, "ms": 1e3}[b["time_unit"]]
        res[name] = b["real_time"] * unit
    pick = lambda key: next((v for k, v in res.items() if k.startswith(key)), None)
    return {
        "per-op overhead: eager add of 1-element tensors (us)": pick("BM_EagerAddOverhead"),
        "cached traced call of a 1-element add (us)": pick("BM_CachedCallOverhead"),
        "seed layer Dense(32) on [60,28,28], eager (us)": pick(f"BM_SeedLayerEager/threads:{threads}"),
        "seed layer Dense(32) on [60,28,28], traced replay (us)": pick(f"BM_SeedLayerReplay/threads:{threads}"),
        "time to trace the seed layer (ms)": (pick("BM_TraceSeedLayer") or 0) / 1e3,
        "MLP 784-512-512-10 train step, Adam, batch 128 (ms)": (pick(f"BM_MlpTrainStep/threads:{threads}") or 0) / 1e3,
        "CNN conv16-pool-conv32-pool-dense10 train step, Adam, batch 128 (ms)":
            (pick(f"BM_CnnTrainStep/threads:{threads}") or 0) / 1e3,
        FIRST: (pick("BM_MlpTrainStepFirstCall") or 0) / 1e3,
        # eagerflow keeps no compile cache on disk: its first call is always "cold"
        FIRST_COLD: (pick("BM_MlpTrainStepFirstCall") or 0) / 1e3,
        INFER: pick(f"BM_MlpInferenceBatch1/threads:{threads}"),
        CHAIN_EAGER: (pick(f"BM_Chain15Eager/threads:{threads}") or 0) / 1e3,
        CHAIN_TRACED: (pick(f"BM_Chain15Traced/threads:{threads}") or 0) / 1e3,
        "15-op chain as one hand-written AVX-512 loop (SLEEF), 1 thread (ms)": (pick("BM_Chain15HandWritten") or 0) / 1e3,
        MATMUL: (pick(f"BM_MatMul/batch:0/m:1024/k:1024/n:1024/threads:{threads}") or 0) / 1e3,
        BIAS: pick(f"BM_BiasAdd/threads:{threads}"),
        TANH: (pick(f"BM_Unary4M/tanh/threads:{threads}") or 0) / 1e3,
    }


MLP = "MLP 784-512-512-10 train step, Adam, batch 128 (ms)"
CHAIN_EAGER = "15-op chain (3 tanh) over 4M float32, eager (ms)"
CHAIN_TRACED = "15-op chain (3 tanh) over 4M float32, traced (ms)"
MATMUL = "matmul 1024x1024x1024 float32 (ms)"
BIAS = "bias add [60,28,32] + [32] (us)"
TANH = "tanh over 4M float32 (ms)"


def chain15(lib, x, y):
    """The chain of bench/elementwise_bench.cpp, written once for every array library."""
    t = lib.tanh(x * 1.5 + y)
    t = lib.tanh(t * x - y)
    t = lib.maximum(t * 0.5 + x, y)
    t = lib.tanh(t * t - 0.25)
    return (t * y + 1.0) * x


def cpu_per_wall(fn, seconds=1.0):
    """Process CPU time / wall time while fn runs repeatedly: how many cores it really used."""
    c, w = time.process_time(), time.perf_counter()
    while time.perf_counter() - w < seconds:
        fn()
    return (time.process_time() - c) / (time.perf_counter() - w)
CNN = "CNN conv16-pool-conv32-pool-dense10 train step, Adam, batch 128 (ms)"
FIRST = "trace + prepare + first run of the MLP train step (ms)"
FIRST_COLD = "same, torch.compile with a cold compile cache (ms)"
INFER = "MLP 784-512-512-10 inference, batch 1, traced (us)"
FIT = "fit epoch, MLP, 8,000 x [784], batch 128, Adam (ms)"
FIT_FIRST = "first fit epoch of a new model (trace/compile of both batch sizes included) (ms)"
FIT_SAMPLES, FIT_BATCH = 8000, 128


def first_and_later(epoch, repeats=3):
    """A fit epoch's time the first time (tracing/compiling, the last batch of 64 too) and the
    median of `repeats` later ones."""
    t = time.perf_counter()
    epoch()
    first = (time.perf_counter() - t) * 1e3
    return {FIT_FIRST: first, FIT: once_ms(epoch, repeats=repeats)}


def mnist_like(n=FIT_SAMPLES):
    """Uniform [n, 784] inputs and labels 0..9 (the fit epoch's data; the numbers do not matter)."""
    import numpy as np
    rng = np.random.default_rng(0)
    return rng.uniform(size=(n, 784)).astype(np.float32), rng.integers(0, 10, size=n).astype(np.int64)


def torch_train(threads, compiled, fused=False):
    import torch
    import torch.nn as nn
    torch.manual_seed(0)
    x = torch.rand(128, 28, 28)
    xc = x.reshape(128, 1, 28, 28)
    y = torch.randint(0, 10, (128,))
    mlp = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    cnn = nn.Sequential(nn.Conv2d(1, 16, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Linear(800, 10))
    out = {}
    for name, model, inp in ((MLP, mlp, x), (CNN, cnn, xc)):
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=fused or None)
        def step(inp=inp, model=model):
            loss = nn.functional.cross_entropy(model(inp), y)
            loss.backward()
            return loss
        fn = torch.compile(step) if compiled else step
        def train(fn=fn, opt=opt):
            opt.zero_grad(set_to_none=True)
            fn()
            opt.step()
        t = time.perf_counter()
        train()
        if compiled and name == MLP:
            out[FIRST] = (time.perf_counter() - t) * 1e3
        out[name] = median_us(train, min_time=1.0) / 1e3
    return out


def torch_mlp():
    import torch.nn as nn
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))


def torch_inference(compiled):
    """Batch-1 inference of the MLP: torch.jit.trace (frozen) or torch.compile, inference mode."""
    import torch
    torch.manual_seed(0)
    model = torch_mlp().eval()
    x = torch.rand(1, 784)
    with torch.inference_mode():
        fn = torch.compile(model) if compiled else torch.jit.freeze(torch.jit.trace(model, x))
        fn(x)
        return {INFER: median_us(lambda: fn(x))}


def torch_fit(compiled, fused=False):
    """One epoch as a torch user writes it: shuffled indices, batches of 128, Adam."""
    import torch
    import torch.nn as nn
    torch.manual_seed(0)
    xs, ys = (torch.from_numpy(a) for a in mnist_like())
    model = torch_mlp()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=fused or None)
    def step(x, y):
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        return loss
    fn = torch.compile(step) if compiled else step
    def epoch():
        perm = torch.randperm(len(xs))
        for i in range(0, len(xs), FIT_BATCH):
            idx = perm[i:i + FIT_BATCH]
            opt.zero_grad(set_to_none=True)
            fn(xs[idx], ys[idx])
            opt.step()
    return first_and_later(epoch)  # the first compiles both batch shapes (128 and the last 64)


def torch_fused_adam_peer(threads):
    """torch eager with Adam(fused=True): one kernel for all of a step's parameter updates."""
    return {**torch_train(threads, compiled=False, fused=True), **torch_fit(False, fused=True)}


def torch_compile_first_call(threads):
    """The MLP train step's first call under torch.compile in a fresh process, with the compile
    cache in TORCHINDUCTOR_CACHE_DIR (set by the caller: empty for a cold cache)."""
    return {FIRST: torch_train(threads, compiled=True)[FIRST]}


def torch_peer(threads):
    import torch
    torch.set_num_threads(threads)
    a, b = torch.tensor(1.0), torch.tensor(2.0)
    add = lambda x, y: x + y
    traced_add = torch.jit.trace(add, (a, b))
    lin = torch.nn.Linear(28, 32)
    x = torch.rand(60, 28, 28)
    with torch.no_grad():
        traced_lin = torch.jit.trace(lin, x)
        inference = {
            "per-op overhead: eager add of 1-element tensors (us)": median_us(lambda: a + b),
            "cached traced call of a 1-element add (us)": median_us(lambda: traced_add(a, b)),
            "seed layer Dense(32) on [60,28,28], eager (us)": median_us(lambda: lin(x)),
            "seed layer Dense(32) on [60,28,28], traced replay (us)": median_us(lambda: traced_lin(x)),
            "time to trace the seed layer (ms)": once_ms(lambda: torch.jit.trace(lin, x)),
        }
    x4, y4 = torch.randn(1 << 22), torch.randn(1 << 22)
    traced_chain = torch.jit.trace(lambda a, b: chain15(torch, a, b), (x4, y4))
    m1, m2 = torch.rand(1024, 1024), torch.rand(1024, 1024)
    h, bias = torch.rand(60, 28, 32), torch.rand(32)
    with torch.no_grad():
        arrays = {
            CHAIN_EAGER: median_us(lambda: chain15(torch, x4, y4)) / 1e3,
            CHAIN_TRACED: median_us(lambda: traced_chain(x4, y4)) / 1e3,
            MATMUL: median_us(lambda: m1 @ m2) / 1e3,
            TANH: median_us(lambda: torch.tanh(x4)) / 1e3,
            "cpu/wall": cpu_per_wall(lambda: m1 @ m2),
        }
        arrays[BIAS] = median_us(lambda: h + bias)
    return {**inference, **arrays, **torch_train(threads, compiled=False), **torch_inference(False), **torch_fit(False)}


def torch_compile_peer(threads):
    import torch
    x4, y4 = torch.randn(1 << 22), torch.randn(1 << 22)
    compiled = torch.compile(lambda a, b: chain15(torch, a, b))
    compiled(x4, y4)
    return {CHAIN_TRACED: median_us(lambda: compiled(x4, y4)) / 1e3,
            "cpu/wall": cpu_per_wall(lambda: compiled(x4, y4)), **torch_train(threads, compiled=True),
            **torch_inference(True), **torch_fit(True)}


def jax_peer(threads):
    import jax
    import jax.numpy as jnp
    a, b = jnp.float32(1.0), jnp.float32(2.0)
    jadd = jax.jit(lambda x, y: x + y)
    key = jax.random.PRNGKey(0)
    w, bias = jax.random.uniform(key, (28, 32)), jnp.zeros((32,))
    x = jax.random.uniform(key, (60, 28, 28))
    dense = lambda x, w, b: x @ w + b
    jdense = jax.jit(dense)
    block = lambda f: (lambda: f().block_until_ready())
    return {
        "per-op overhead: eager add of 1-element tensors (us)": median_us(block(lambda: a + b)),
        "cached traced call of a 1-element add (us)": median_us(block(lambda: jadd(a, b))),
        "seed layer Dense(32) on [60,28,28], eager (us)": median_us(block(lambda: dense(x, w, bias))),
        "seed layer Dense(32) on [60,28,28], traced replay (us)": median_us(block(lambda: jdense(x, w, bias))),
        # A fresh function object each time: a second jit of the same object is a cache hit.
        "time to trace the seed layer (ms)": once_ms(lambda: jax.jit(lambda x, w, b: x @ w + b).lower(x, w, bias).compile()),
        **jax_arrays(),
        **jax_train(),
        **jax_inference_and_fit(),
    }


def jax_arrays():
    import jax
    import jax.numpy as jnp
    key = jax.random.PRNGKey(1)
    x4, y4 = jax.random.normal(key, (1 << 22,)), jax.random.normal(jax.random.PRNGKey(2), (1 << 22,))
    jchain = jax.jit(lambda a, b: chain15(jnp, a, b))
    m1, m2 = jax.random.uniform(key, (1024, 1024)), jax.random.uniform(key, (1024, 1024))
    jmm = jax.jit(lambda a, b: a @ b)
    h, bias = jax.random.uniform(key, (60, 28, 32)), jax.random.uniform(key, (32,))
    jtanh = jax.jit(jnp.tanh)
    block = lambda f: (lambda: f().block_until_ready())
    return {
        CHAIN_EAGER: median_us(block(lambda: chain15(jnp, x4, y4))) / 1e3,
        CHAIN_TRACED: median_us(block(lambda: jchain(x4, y4))) / 1e3,
        MATMUL: median_us(block(lambda: jmm(m1, m2))) / 1e3,
        TANH: median_us(block(lambda: jtanh(x4))) / 1e3,
        BIAS: median_us(block(lambda: h + bias)),
        "cpu/wall": cpu_per_wall(block(lambda: jmm(m1, m2))),
    }


def jax_train():
    import jax
    import jax.numpy as jnp

    def init(key, shapes):
        params = []
        for s in shapes:
            key, sub = jax.random.split(key)
            params.append(jax.random.normal(sub, s) * 0.05)
        return params

    def adam_step(loss_fn):
        @jax.jit
        def step(params, m, v, t, x, y):
            loss, g = jax.value_and_grad(loss_fn)(params, x, y)
            t = t + 1
            m = [0.9 * a + 0.1 * b for a, b in zip(m, g)]
            v = [0.999 * a + 0.001 * b * b for a, b in zip(v, g)]
            alpha = 1e-3 * jnp.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
            params = [p - alpha * a / (jnp.sqrt(b) + 1e-7) for p, a, b in zip(params, m, v)]
            return params, m, v, t, loss
        return step

    def xent(logits, y):
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    def mlp_loss(p, x, y):
        h = jax.nn.relu(x.reshape(x.shape[0], -1) @ p[0] + p[1])
        h = jax.nn.relu(h @ p[2] + p[3])
        return xent(h @ p[4] + p[5], y)

    def cnn_loss(p, x, y):
        dn = ("NHWC", "HWIO", "NHWC")
        pool = lambda t: jax.lax.reduce_window(t, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        h = pool(jax.nn.relu(jax.lax.conv_general_dilated(x, p[0], (1, 1), "VALID", dimension_numbers=dn) + p[1]))
        h = pool(jax.nn.relu(jax.lax.conv_general_dilated(h, p[2], (1, 1), "VALID", dimension_numbers=dn) + p[3]))
        return xent(h.reshape(h.shape[0], -1) @ p[4] + p[5], y)

    key = jax.random.PRNGKey(0)
    x = jax.random.uniform(key, (128, 28, 28))
    y = jax.random.randint(key, (128,), 0, 10)
    out = {}
    for name, loss_fn, shapes, inp in (
            (MLP, mlp_loss, [(784, 512), (512,), (512, 512), (512,), (512, 10), (10,)], x),
            (CNN, cnn_loss, [(3, 3, 1, 16), (16,), (3, 3, 16, 32), (32,), (800, 10), (10,)], x.reshape(128, 28, 28, 1))):
        params = init(key, shapes)
        state = [params, [jnp.zeros_like(q) for q in params], [jnp.zeros_like(q) for q in params], 0.0]
        step = adam_step(loss_fn)
        t = time.perf_counter()
        jax.block_until_ready(step(*state, inp, y))
        if name == MLP:
            out[FIRST] = (time.perf_counter() - t) * 1e3
        def train(step=step, state=state, inp=inp):
            res = step(*state, inp, y)
            state[:4] = res[:4]
            jax.block_until_ready(res[4])
        out[name] = median_us(train, min_time=1.0) / 1e3
    return out


def jax_mlp_params(key):
    import jax
    params = []
    for fan_in, fan_out in ((784, 512), (512, 512), (512, 10)):
        key, sub = jax.random.split(key)
        params += [jax.random.normal(sub, (fan_in, fan_out)) * 0.05, jax.numpy.zeros((fan_out,))]
    return params


def jax_mlp(p, x):
    import jax
    h = jax.nn.relu(x @ p[0] + p[1])
    h = jax.nn.relu(h @ p[2] + p[3])
    return h @ p[4] + p[5]


def jax_inference_and_fit():
    """Batch-1 inference under jax.jit, and an epoch as a JAX user writes it: a permutation,
    batches of 128 sliced on the host, one jitted Adam step each."""
    import jax
    params = jax_mlp_params(jax.random.PRNGKey(0))
    x1 = jax.random.uniform(jax.random.PRNGKey(1), (1, 784))
    infer = jax.jit(jax_mlp)
    infer(params, x1).block_until_ready()
    return {INFER: median_us(lambda: infer(params, x1).block_until_ready()), **jax_fit(params)}


def jax_fit(params=None):
    """An epoch as a JAX user writes it: a permutation, batches of 128 sliced on the host, one
    jitted Adam step each (jax.jit compiles the last batch of 64 separately)."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    params = params if params is not None else jax_mlp_params(jax.random.PRNGKey(0))

    def loss_fn(p, x, y):
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(jax_mlp(p, x)), y[:, None], axis=1))

    @jax.jit
    def step(p, m, v, t, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        t = t + 1
        m = [0.9 * a + 0.1 * b for a, b in zip(m, g)]
        v = [0.999 * a + 0.001 * b * b for a, b in zip(v, g)]
        alpha = 1e-3 * jnp.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        p = [q - alpha * a / (jnp.sqrt(b) + 1e-7) for q, a, b in zip(p, m, v)]
        return p, m, v, t, loss

    xs, ys = mnist_like()
    state = [params, [jnp.zeros_like(q) for q in params], [jnp.zeros_like(q) for q in params], 0.0]
    rng = np.random.default_rng(0)

    def epoch():
        perm = rng.permutation(len(xs))
        loss = None
        for i in range(0, len(xs), FIT_BATCH):
            idx = perm[i:i + FIT_BATCH]
            *state[:4], loss = step(*state, xs[idx], ys[idx])
        jax.block_until_ready(loss)
    out = first_and_later(epoch)  # the first compiles both batch shapes
    out["traces"] = step._cache_size()  # one compilation per batch shape: 2
    return out


def tf_peer(threads):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    a, b = tf.constant(1.0), tf.constant(2.0)
    fadd = tf.function(lambda x, y: x + y)
    layer = tf.keras.layers.Dense(32)
    x = tf.random.uniform((60, 28, 28))
    layer(x)
    flayer = tf.function(layer)
    flayer(x)
    def trace():
        tf.function(lambda t: layer(t)).get_concrete_function(tf.TensorSpec((60, 28, 28), tf.float32))
    return {
        "per-op overhead: eager add of 1-element tensors (us)": median_us(lambda: a + b),
        "cached traced call of a 1-element add (us)": median_us(lambda: fadd(a, b)),
        "seed layer Dense(32) on [60,28,28], eager (us)": median_us(lambda: layer(x)),
        "seed layer Dense(32) on [60,28,28], traced replay (us)": median_us(lambda: flayer(x)),
        "time to trace the seed layer (ms)": once_ms(trace),
        **tf_arrays(),
        **tf_train(),
        **tf_inference_and_fit(),
    }


def tf_arrays():
    import tensorflow as tf
    x4, y4 = tf.random.normal((1 << 22,)), tf.random.normal((1 << 22,))
    fchain = tf.function(lambda a, b: chain15(tf.math, a, b))
    fchain(x4, y4)
    m1, m2 = tf.random.uniform((1024, 1024)), tf.random.uniform((1024, 1024))
    h, bias = tf.random.uniform((60, 28, 32)), tf.random.uniform((32,))
    return {
        # (TF's CPU ops run synchronously: no .numpy() copy needed to wait for them)
        CHAIN_EAGER: median_us(lambda: chain15(tf.math, x4, y4)) / 1e3,
        CHAIN_TRACED: median_us(lambda: fchain(x4, y4)) / 1e3,
        MATMUL: median_us(lambda: tf.matmul(m1, m2)) / 1e3,
        TANH: median_us(lambda: tf.math.tanh(x4)) / 1e3,
        BIAS: median_us(lambda: h + bias),
        "cpu/wall": cpu_per_wall(lambda: tf.matmul(m1, m2)),
    }


def tf_train():
    import tensorflow as tf
    tf.random.set_seed(0)
    x = tf.random.uniform((128, 28, 28))
    y = tf.random.uniform((128,), 0, 10, dtype=tf.int64)
    L = tf.keras.layers
    mlp = tf.keras.Sequential([L.Flatten(), L.Dense(512, "relu"), L.Dense(512, "relu"), L.Dense(10)])
    cnn = tf.keras.Sequential([L.Reshape((28, 28, 1)), L.Conv2D(16, 3, activation="relu"), L.MaxPooling2D(),
                               L.Conv2D(32, 3, activation="relu"), L.MaxPooling2D(), L.Flatten(), L.Dense(10)])
    out = {}
    for name, model in ((MLP, mlp), (CNN, cnn)):
        model.compile(tf.keras.optimizers.Adam(1e-3), tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        t = time.perf_counter()
        model.train_on_batch(x, y)
        if name == MLP:
            out[FIRST] = (time.perf_counter() - t) * 1e3
        out[name] = median_us(lambda model=model: model.train_on_batch(x, y), min_time=1.0) / 1e3
    return out


def tf_inference_and_fit():
    """Batch-1 inference under tf.function (no XLA), and Keras' fit for one epoch."""
    import tensorflow as tf
    L = tf.keras.layers
    tf.random.set_seed(0)
    model = tf.keras.Sequential([tf.keras.Input((784,)), L.Dense(512, "relu"), L.Dense(512, "relu"), L.Dense(10)])
    x1 = tf.random.uniform((1, 784))
    infer = tf.function(lambda x: model(x, training=False))
    infer(x1)
    return {INFER: median_us(lambda: infer(x1)), **tf_fit(model)}


def tf_fit(model=None):
    """Keras' fit for one epoch at a time, with the accuracy metric as eagerflow's BM_MlpFitEpoch."""
    import tensorflow as tf
    L = tf.keras.layers
    if model is None:
        tf.random.set_seed(0)
        model = tf.keras.Sequential([tf.keras.Input((784,)), L.Dense(512, "relu"), L.Dense(512, "relu"), L.Dense(10)])
    xs, ys = mnist_like()
    model.compile(tf.keras.optimizers.Adam(1e-3), tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])  # as eagerflow's BM_MlpFitEpoch
    fit = lambda: model.fit(xs, ys, batch_size=FIT_BATCH, epochs=1, verbose=0)
    out = first_and_later(fit)  # the first traces the train function
    try:  # Keras 3 on TF: a tf.function; its traces over the epochs (the last batch is 64 rows)
        out["traces"] = model.train_function.experimental_get_tracing_count()
    except AttributeError:
        pass
    return out


PEERS = {"torch": "torch_peer", "torch fused Adam": "torch_fused_adam_peer", "torch.compile": "torch_compile_peer",
         "jax": "jax_peer", "tensorflow": "tf_peer"}


def limit_threads(framework, threads):
    """The framework's pools to `threads` (before it is imported: each peer runs in a process
    of its own, since torch, JAX and TensorFlow clash when loaded together)."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    if framework == "jax":
        os.environ["XLA_FLAGS"] = (f"--xla_cpu_multi_thread_eigen={'true' if threads > 1 else 'false'} "
                                   f"intra_op_parallelism_threads={threads}")
    if framework.startswith("torch"):
        import torch
        torch.set_num_threads(threads)
        torch.set_num_interop_threads(1)
        assert torch.get_num_threads() == threads
    if framework == "tensorflow":
        import tensorflow as tf
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(1)


def run_jobs(script, jobs):
    """The command line of a peer script whose jobs ({"eagerflow": fn, "jax": fn, ...}, each
    returning {row: value}) run in processes of their own, pinned to the first N cores with the
    framework's pools limited to N threads. `--job NAME` runs one job and prints its JSON (returns
    None); otherwise eagerflow's job runs under --ef-python, the others under --peer-python (one
    that fails is skipped, saying why), and this returns (rows, threads)."""
    home = os.path.expanduser("~")
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--job", choices=list(jobs))
    ap.add_argument("--ef-python", default=os.path.join(home, ".cache/eagerflow/venv/bin/python"))
    ap.add_argument("--peer-python", default=os.path.join(home, ".cache/eagerflow/peers/bin/python"))
    a = ap.parse_args()
    if a.job:
        os.sched_setaffinity(0, set(range(a.threads)))
        limit_threads(a.job, a.threads)
        os.environ["EF_BENCH_THREADS"] = str(a.threads)
        print(json.dumps(jobs[a.job]()))
        return None
    rows = {}
    for name in jobs:
        python = a.ef_python if name == "eagerflow" else a.peer_python
        cmd = [python, os.path.abspath(script), "--job", name, "--threads", str(a.threads)]
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=os.path.join(ROOT, "build"))
        if p.returncode != 0:
            print(f"  {name}: skipped ({(p.stderr.strip().splitlines() or ['failed'])[-1]})")
            continue
        rows.update(json.loads(p.stdout.strip().splitlines()[-1]))
    return rows, a.threads


def wait_for_quiet(max_wait=60.0, busy_limit=0.15):
    """Waits until the other processes use less than busy_limit of one core (shared machines)."""
    def busy():
        def read():
            with open("/proc/stat") as f:
                v = [int(t) for t in f.readline().split()[1:]]
            return sum(v), v[3] + v[4]
        t0, i0 = read()
        time.sleep(0.5)
        t1, i1 = read()
        return (1 - (i1 - i0) / max(t1 - t0, 1)) * os.cpu_count()
    start = time.time()
    while busy() > busy_limit and time.time() - start < max_wait:
        pass


def run_peer(name, threads, env=None):
    """Runs one peer in a child process; its results, or None when it is not installed."""
    wait_for_quiet()
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--peer", name, "--threads", str(threads)],
                         capture_output=True, text=True, env=None if env is None else {**os.environ, **env})
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    print(f"{name}: no result ({out.stderr.strip().splitlines()[-1:] if out.stderr else 'no output'})", file=sys.stderr)
    return None


EXTRA_JOBS = {"torch.compile first call": "torch_compile_first_call"}


def torch_compile_first_calls(threads):
    """torch.compile's first MLP train step in fresh processes: with an empty compile cache
    (FIRST_COLD), then with the cache that call left (FIRST, a warm cache on disk)."""
    import tempfile
    out = {}
    with tempfile.TemporaryDirectory(prefix="ef_compare_inductor_") as d:
        env = {"TORCHINDUCTOR_CACHE_DIR": os.path.join(d, "inductor"), "TRITON_CACHE_DIR": os.path.join(d, "triton")}
        for row in (FIRST_COLD, FIRST):
            r = run_peer("torch.compile first call", threads, env)
            if r:
                out[row] = r[FIRST]
    return out


def libtorch_cpp(threads):
    """Builds bench/peers/libtorch_overhead.cpp against the torch wheel and runs it."""
    try:
        from torch.utils import cpp_extension
    except ImportError:
        return None
    exe = os.path.join(ROOT, "build", "libtorch_overhead")
    src = os.path.join(ROOT, "bench", "peers", "libtorch_overhead.cpp")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        inc = sum((["-I", d] for d in cpp_extension.include_paths()), [])
        libs = cpp_extension.library_paths()
        cmd = ["g++", "-O2", "-std=c++20", src, "-o", exe, *inc, *[f"-L{d}" for d in libs],
               *[f"-Wl,-rpath,{d}" for d in libs], "-ltorch", "-ltorch_cpu", "-lc10", "-D_GLIBCXX_USE_CXX11_ABI=1"]
        if subprocess.run(cmd, capture_output=True).returncode != 0:
            print("libtorch: build failed", file=sys.stderr)
            return None
    wait_for_quiet()
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = subprocess.run([exe, str(threads)], capture_output=True, text=True, env=env)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    return None


def versions():
    out = {}
    for mod in ("torch", "jax", "tensorflow"):
        r = subprocess.run([sys.executable, "-c", f"import {mod}; print({mod}.__version__)"], capture_output=True, text=True,
                           env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
        if r.returncode == 0:
            out[mod] = r.stdout.strip().splitlines()[-1]
    return out


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile (slow to compile)")
    p.add_argument("--peer", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.peer:
        limit_threads(args.peer, args.threads)
        try:
            print("RESULT " + json.dumps(globals()[{**PEERS, **EXTRA_JOBS}[args.peer]](args.threads)))
        except ImportError:
            pass
        return
    # Pin this run (and every child) to the first `threads` cores: no framework can use more.
    os.sched_setaffinity(0, set(range(args.threads)))
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    wait_for_quiet()
    results = {"eagerflow": eagerflow(args.threads)}
    for name in PEERS:
        if name == "torch.compile" and args.no_compile:
            continue
        r = run_peer(name, args.threads)
        if r:
            results[name] = r
    if "torch.compile" in results:
        results["torch.compile"].update(torch_compile_first_calls(args.threads))
    cpp = libtorch_cpp(args.threads)
    if cpp:
        results["libtorch (C++)"] = cpp
    peers = [n for n in results if n != "eagerflow"]
    v = versions()
    print(f"date: {time.strftime('%Y-%m-%d %H:%M')}; CPU: {cpu_name()} ({os.cpu_count()} cores); "
          f"threads: {args.threads} per framework, pinned to cores {sorted(os.sched_getaffinity(0))}")
    print("versions: " + ", ".join(f"{k} {x}" for k, x in v.items()))
    checks = ", ".join(f"{n} {results[n]['cpu/wall']:.2f}" for n in peers if "cpu/wall" in results[n])
    print(f"thread check (process CPU time / wall time on its heaviest workload): {checks}")
    print("medians; ratio = eagerflow / peer (below 1: eagerflow faster)\n")
    header = "| workload | eagerflow | " + " | ".join(f"{p} | ratio" for p in peers) + " |"
    print(header)
    print("|" + "---|" * (2 + 2 * len(peers)))
    for metric, ours in results["eagerflow"].items():
        row = f"| {metric} | {ours:.3g} |"
        for p_ in peers:
            theirs = results[p_].get(metric)
            row += f" {theirs:.3g} | {ours / theirs:.2f} |" if theirs and ours else " - | - |"
        print(row)


if __name__ == "__main__":
    main()
