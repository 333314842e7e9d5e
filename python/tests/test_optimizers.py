"""The Keras optimizers from Python run the fused C++ update ops (one pass per variable and step):
their numbers against the update rules written out in NumPy, eager against traced, and arrays
handed to or read from a variable keep their values while the update writes in place."""
import numpy as np
import pytest

import eagerflow as ef

keras = ef.keras


# ---------------------------------------------------------------- the rules in NumPy (float64)
def numpy_steps(kind, w, grads, lr=0.01, **kw):
    """Keras' update rules applied to w over the gradients; returns the final w."""
    lr = float(np.float32(lr))  # the rate is a float32 variable (as Keras'), for float64 weights too
    w = w.astype(np.float64).copy()
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for t, g in enumerate(grads, start=1):
        g = g.astype(np.float64)
        clip = kw.get("clipnorm")
        if clip is not None:
            g = g * clip / max(np.sqrt(np.sum(g * g)), clip)
        if kind == "sgd":
            mom = kw.get("momentum", 0.0)
            if mom == 0.0:
                w = w - lr * g
            else:
                m = mom * m - lr * g
                w = w + (mom * m - lr * g if kw.get("nesterov") else m)
        elif kind in ("adam", "adamw"):
            b1, b2, eps = kw.get("beta_1", 0.9), kw.get("beta_2", 0.999), kw.get("epsilon", 1e-7)
            if kind == "adamw":
                w = w - w * lr * kw["weight_decay"]
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            alpha = lr * np.sqrt(1 - b2**t) / (1 - b1**t)
            w = w - alpha * m / (np.sqrt(v) + eps)
        elif kind == "rmsprop":
            rho, mom, eps = kw.get("rho", 0.9), kw.get("momentum", 0.0), kw.get("epsilon", 1e-7)
            v = rho * v + (1 - rho) * g * g
            inc = lr * g / np.sqrt(v + eps)
            if mom > 0:
                m = mom * m + inc
                w = w - m
            else:
                w = w - inc
    return w


CASES = [
    ("sgd", lambda: keras.optimizers.SGD(learning_rate=0.01), {}),
    ("sgd", lambda: keras.optimizers.SGD(learning_rate=0.01, momentum=0.9), {"momentum": 0.9}),
    ("sgd", lambda: keras.optimizers.SGD(learning_rate=0.01, momentum=0.8, nesterov=True),
     {"momentum": 0.8, "nesterov": True}),
    ("adam", lambda: keras.optimizers.Adam(learning_rate=0.01), {}),
    ("adam", lambda: keras.optimizers.Adam(learning_rate=0.01, beta_1=0.8, beta_2=0.95, clipnorm=0.5),
     {"beta_1": 0.8, "beta_2": 0.95, "clipnorm": 0.5}),
    ("adamw", lambda: keras.optimizers.AdamW(learning_rate=0.01, weight_decay=0.1), {"weight_decay": 0.1}),
    ("rmsprop", lambda: keras.optimizers.RMSprop(learning_rate=0.01), {}),
    ("rmsprop", lambda: keras.optimizers.RMSprop(learning_rate=0.01, momentum=0.5), {"momentum": 0.5}),
]


def case_id(case):
    kind, _, kw = case
    return kind + "".join(f"-{k}" for k in kw)


def draws(dtype, shape=(37, 5), steps=4, seed=0):
    rng = np.random.default_rng(seed)
    w0 = rng.normal(size=shape).astype(dtype)
    grads = [rng.normal(size=shape).astype(dtype) for _ in range(steps)]
    return w0, grads


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_optimizer_matches_the_numpy_rule(case, dtype):
    kind, make, kw = case
    w0, grads = draws(dtype)
    w = ef.Variable(w0, name="w")
    opt = make()
    for g in grads:
        opt.apply_gradients([(g, w)])
    want = numpy_steps(kind, w0, grads, **kw)
    got = w.numpy()
    assert got.dtype == dtype
    tol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert not np.allclose(got, w0, atol=1e-4)  # the weights moved
    assert int(opt.iterations.numpy()) == len(grads)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_traced_steps_equal_eager_ones_bit_for_bit(case, dtype):
    _, make, _ = case
    w0, grads = draws(dtype, shape=(300, 150), steps=3, seed=1)  # large enough for two threads
    eager_w, traced_w = ef.Variable(w0, name="w"), ef.Variable(w0, name="w")
    eager_opt, traced_opt = make(), make()

    @ef.function
    def step(g):
        traced_opt.apply_gradients([(g, traced_w)])
        return g

    for g in grads:
        eager_opt.apply_gradients([(g, eager_w)])
        step(g)
    np.testing.assert_array_equal(traced_w.numpy(), eager_w.numpy())
    assert len(traced_opt.variables) == len(eager_opt.variables)
    for a, b in zip(traced_opt.variables, eager_opt.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_arrays_given_to_or_read_from_a_variable_keep_their_values():
    # The update writes in place only over buffers of its own: a NumPy array the variable was
    # made from or assigned, and an array read before a step, keep their numbers.
    start = np.arange(6, dtype=np.float32).reshape(2, 3)
    w = ef.Variable(np.zeros((2, 3), np.float32), name="w")
    w.assign(start)
    opt = keras.optimizers.Adam(learning_rate=0.1)
    g = np.ones((2, 3), np.float32)
    opt.apply_gradients([(g, w)])
    np.testing.assert_array_equal(start, np.arange(6, dtype=np.float32).reshape(2, 3))
    read = w.numpy()
    kept = read.copy()
    for _ in range(3):
        opt.apply_gradients([(g, w)])
    np.testing.assert_array_equal(read, kept)
    assert not np.array_equal(w.numpy(), kept)
    np.testing.assert_array_equal(g, np.ones((2, 3), np.float32))


def test_the_update_is_one_node_of_a_traced_step():
    w = ef.Variable(np.zeros((4,), np.float32), name="w")
    opt = keras.optimizers.Adam(learning_rate=0.01)

    @ef.function
    def step(g):
        opt.apply_gradients([(g, w)])
        return g

    step(np.ones(4, np.float32))
    text = str(step.get_concrete_function(ef.TensorSpec([4], ef.float32)).graph)  # the graph that runs
    assert text.count("apply_adam[var=w:0 m=w:0/m v=w:0/v") == 1, text


def test_bad_gradients_are_clear_errors():
    w = ef.Variable(np.zeros((2, 3), np.float32), name="w")
    opt = keras.optimizers.Adam()
    with pytest.raises(ef.Error, match="does not fit"):
        opt.apply_gradients([(np.ones((3, 2), np.float32), w)])
    counts = ef.Variable(np.zeros(3, np.int32), name="counts")
    with pytest.raises(ef.Error, match="float32 or float64"):
        keras.optimizers.SGD().apply_gradients([(np.zeros(3, np.int32), counts)])
    np.testing.assert_array_equal(w.numpy(), np.zeros((2, 3), np.float32))
