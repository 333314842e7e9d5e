"""Robustness (issue 15): no reference leaks over a million calls, the retracing warning from
Python, and lifetime/exception cases that a binding gets wrong easily."""
import gc
import os
import threading
import warnings
import weakref

import numpy as np
import pytest

import eagerflow as ef

PAGE = os.sysconf("SC_PAGE_SIZE")
# A leaked reference per call costs at least a Python object (a float: 24 bytes, a tensor with
# its C++ side: over 100): 1e6 calls would grow by 24+ MB, 2e4 by 2+ MB. Measured growth without
# leaks is under 0.1 MB; the allowance covers allocator noise.
MAX_GROWTH = 2 * 1024 * 1024


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def growth(fn, n, warmup=20000):
    """RSS growth over n calls of fn, after a warm-up (caches, allocator pools, interned objects)."""
    for _ in range(warmup):
        fn()
    gc.collect()
    before = rss()
    for _ in range(n):
        fn()
    gc.collect()
    return rss() - before


# --- a million calls, flat memory ----------------------------------------------------------


def test_million_cached_function_calls_flat_memory():
    @ef.function
    def f(x):
        return x * 2.0 + 1.0

    x = ef.constant(np.ones(4, np.float32))
    g = growth(lambda: f(x), 1_000_000)  # ~1.2 s: the one-tensor fast path
    assert f.experimental_get_tracing_count() == 1
    assert g < MAX_GROWTH, f"RSS grew {g / 2**20:.1f} MiB over 1e6 cached calls"


def test_cached_calls_with_static_values_kwargs_and_structures_flat_memory():
    # The general path (desc, static values, kwargs, dict/tuple results): 50k calls (~0.6 s).
    @ef.function
    def f(a, b, scale, mode="add"):
        return {"s": a + b * scale if mode == "add" else a * b, "p": (a * b, 3)}

    x, y = ef.ones([4]), ef.constant(np.arange(4, dtype=np.float32))
    out = []

    def call():
        out.append(f(x, [y, y][0], 2.0, mode="add"))
        out.pop()

    g = growth(call, 50_000, warmup=5000)
    assert f.experimental_get_tracing_count() == 1
    assert g < MAX_GROWTH, f"RSS grew {g / 2**20:.1f} MiB over 5e4 calls"


def test_million_eager_adds_flat_memory():
    a = ef.constant(np.ones(1, np.float32))
    g = growth(lambda: a + a, 1_000_000)  # ~0.4 s
    assert g < MAX_GROWTH, f"RSS grew {g / 2**20:.1f} MiB over 1e6 eager adds"


def test_numpy_round_trips_and_tapes_flat_memory():
    v = ef.Variable(np.ones(4, np.float32))
    x = ef.ones([4])

    def step():
        ef.constant(np.ones(16, np.float32)).numpy()
        np.asarray(x)
        with ef.GradientTape() as tape:
            y = ef.reduce_sum(v * x)
        tape.gradient(y, v)
        try:
            ef.reshape(x, [3])
        except ef.Error:
            pass

    g = growth(step, 20_000, warmup=2000)
    assert g < MAX_GROWTH, f"RSS grew {g / 2**20:.1f} MiB"


# --- the retracing warning --------------------------------------------------------------


def test_retracing_warning_reaches_python_warnings():
    # The C++ library logs it (ef::log, to stderr); from Python it is an ef.RetracingWarning,
    # attributed to the caller's line.
    @ef.function
    def changing(x):
        return x * 2.0

    with pytest.warns(ef.RetracingWarning) as record:
        for n in range(1, 11):
            changing(ef.constant(np.ones(n, np.float32)))
    msgs = [str(w.message) for w in record if issubclass(w.category, ef.RetracingWarning)]
    assert len(msgs) == 2  # 5 traces in the last 10 calls, twice
    assert "'changing' traced 5 times" in msgs[0]
    assert "first call" in msgs[0] and "float32[2] vs cached float32[1]" in msgs[0]
    assert "input_signature=[ef.TensorSpec" in msgs[0] and "FunctionOptions" not in msgs[0]
    assert all(os.path.basename(w.filename) == "test_robustness.py" for w in record)
    assert changing.experimental_get_tracing_count() == 10


def test_no_retracing_warning_for_a_stable_function_or_when_logging_is_off():
    @ef.function
    def stable(x, scale):
        return x * scale

    with warnings.catch_warnings():
        warnings.simplefilter("error", ef.RetracingWarning)
        for _ in range(20):
            stable(ef.ones([3]), 2.0)
        ef.set_log_level("off")
        try:
            g = ef.function(lambda x: x + 1.0)
            for n in range(1, 11):
                g(ef.ones([n]))
        finally:
            ef.set_log_level("warning")
    with pytest.raises(ValueError, match="not one of"):
        ef.set_log_level("loud")


def test_retracing_warning_as_error_keeps_the_trace():
    @ef.function
    def f(x):
        return x + 1.0

    with warnings.catch_warnings():
        warnings.simplefilter("error", ef.RetracingWarning)
        raised = []
        for n in range(1, 11):
            try:
                f(ef.ones([n]))
            except ef.RetracingWarning:
                raised.append(n)
    assert raised == [5, 10]
    assert f.experimental_get_tracing_count() == 10
    np.testing.assert_allclose(f(ef.ones([5])).numpy(), np.full(5, 2.0))  # cached


def test_retracing_warning_from_static_python_values():
    @ef.function
    def f(x, step):
        return x * step

    with pytest.warns(ef.RetracingWarning, match="static arg step"):
        for step in range(6):
            f(ef.ones([2]), step)


# --- lifetimes ------------------------------------------------------------------------------


def test_numpy_view_outlives_tensor_and_function():
    @ef.function
    def f(x):
        return x * 2.0

    t = f(ef.constant(np.arange(1000, dtype=np.float32)))
    view, arr = t.numpy(), np.asarray(t)
    del t, f
    gc.collect()
    junk = [np.full(1000, 7.0, np.float32) for _ in range(200)]  # reuse freed memory, if any
    np.testing.assert_array_equal(view, np.arange(1000, dtype=np.float32) * 2)
    np.testing.assert_array_equal(arr, view)
    assert junk[0][0] == 7.0


def test_tensor_keeps_its_values_after_the_array_goes():
    a = np.arange(10, dtype=np.float32)
    t = ef.constant(a)
    a[0] = 42.0  # a copy (issue 29): the tensor keeps the values it was made with
    del a
    gc.collect()
    [np.zeros(10, np.float32) for _ in range(100)]
    np.testing.assert_array_equal(t.numpy(), list(range(10)))
    w = np.asarray(t)  # a read-only view: it keeps the tensor's storage alive
    del t
    gc.collect()
    [np.ones(10, np.float32) for _ in range(100)]
    np.testing.assert_array_equal(w, list(range(10)))


def test_function_outlives_its_python_function_name_and_is_collected():
    def body(x):
        return x + 1.0

    f = ef.function(body)
    f(ef.ones([2]))
    wf, wb = weakref.ref(f), weakref.ref(body)
    del body
    gc.collect()
    np.testing.assert_allclose(f(ef.ones([2])).numpy(), [2.0, 2.0])  # the Function holds it
    np.testing.assert_allclose(f(ef.ones([3])).numpy(), [2.0, 2.0, 2.0])  # and traces with it
    del f
    gc.collect()
    assert wf() is None and wb() is None  # no cycle through C++ keeps them


def test_function_of_layer_and_layer_are_collected_results_stay():
    class L(ef.keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.d = ef.keras.layers.Dense(2)

        def call(self, x):
            return self.d(x)

    layer = L()
    f = ef.function(layer)
    out = f(ef.ones([2, 3]))
    expected = out.numpy().copy()
    kernel = layer.trainable_weights[0].numpy()
    kernel_copy = kernel.copy()
    wl = weakref.ref(layer)
    del layer, f
    gc.collect()
    assert wl() is None
    np.testing.assert_array_equal(out.numpy(), expected)
    np.testing.assert_array_equal(kernel, kernel_copy)


# --- exceptions -----------------------------------------------------------------------------


class Boom(Exception):
    pass


def test_exception_in_nested_trace_propagates_and_leaves_caches_empty():
    @ef.function
    def inner(x):
        raise Boom("inner")

    @ef.function
    def outer(x):
        return inner(x) + 1.0

    for _ in range(2):
        with pytest.raises(Boom, match="inner"):
            outer(ef.ones([2]))
    assert outer.experimental_get_tracing_count() == 0
    assert inner.experimental_get_tracing_count() == 0
    assert not ef._core._in_trace()
    np.testing.assert_allclose(ef.function(lambda x: x * 5.0)(ef.ones([2])).numpy(), [5.0, 5.0])


def test_nested_concrete_function_trace_raising_is_caught_by_the_outer_trace():
    @ef.function
    def inner(x):
        if x.shape[0] == 2:
            raise ValueError("no 2")
        return x * 2.0

    caught = []

    @ef.function
    def outer(x):
        try:
            inner.get_concrete_function(ef.TensorSpec([2]))
        except ValueError as e:
            caught.append(str(e))
        return x + 1.0

    np.testing.assert_allclose(outer(ef.ones([3])).numpy(), [2.0] * 3)
    assert caught == ["no 2"]
    assert outer.experimental_get_tracing_count() == 1 and inner.experimental_get_tracing_count() == 0
    np.testing.assert_allclose(inner(ef.ones([3])).numpy(), [2.0] * 3)  # the outer graph is intact


def test_exceptions_in_branches_recursion_tapes_and_keyboard_interrupt():
    @ef.function
    def c(x):
        def bad():
            raise KeyError("branch")
        return ef.cond(ef.reduce_sum(x) > 0, lambda: x * 2.0, bad)

    with pytest.raises(KeyError):
        c(ef.ones([2]))
    assert c.experimental_get_tracing_count() == 0

    @ef.function
    def rec(x):
        return rec(x)

    with pytest.raises(RecursionError):
        rec(ef.ones([1]))

    @ef.function
    def kb(x):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        kb(ef.ones([1]))

    v = ef.Variable(np.ones(2, np.float32))

    @ef.function
    def fails(x):
        raise ZeroDivisionError

    with ef.GradientTape() as tape:
        y = v * 3.0
        with pytest.raises(ZeroDivisionError):
            fails(v)
        z = ef.reduce_sum(y)
    np.testing.assert_allclose(tape.gradient(z, v).numpy(), [3.0, 3.0])
    assert not ef._core._in_trace()


def test_trace_that_raises_then_succeeds():
    calls = []

    @ef.function
    def f(x):
        calls.append(1)
        if len(calls) == 1:
            raise ValueError("first")
        return x * 3.0

    with pytest.raises(ValueError, match="first"):
        f(ef.ones([2]))
    np.testing.assert_allclose(f(ef.ones([2])).numpy(), [3.0, 3.0])
    assert [t.reason for t in f.traces] == ["first call"]


def test_python_layer_raises_then_succeeds_cache_unchanged():
    class Flaky(ef.keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.dense = ef.keras.layers.Dense(2)
            self.fail_on = {5}

        def call(self, x):
            if x.shape[0] in self.fail_on:
                self.fail_on.discard(x.shape[0])
                raise RuntimeError("flaky")
            return self.dense(x)

    layer = Flaky()
    f = ef.function(layer)
    first = f(ef.ones([2, 3])).numpy()
    with pytest.raises(RuntimeError, match="flaky"):
        f(ef.ones([5, 3]))
    assert f.experimental_get_tracing_count() == 1  # the failed trace was not added
    assert len(layer.trainable_weights) == 2
    np.testing.assert_array_equal(f(ef.ones([2, 3])).numpy(), first)  # the cached trace runs
    assert f.experimental_get_tracing_count() == 1
    assert f(ef.ones([5, 3])).shape == (5, 2)  # now it succeeds and traces
    assert [t.reason for t in f.traces][0] == "first call" and f.experimental_get_tracing_count() == 2
    assert len(layer.trainable_weights) == 2

    eager = Flaky()
    eager.fail_on = {1}
    with pytest.raises(RuntimeError):
        eager(ef.ones([1, 3]))
    assert eager(ef.ones([1, 3])).shape == (1, 2)
    assert len(eager.trainable_weights) == 2


def test_python_layer_build_raises_then_succeeds_no_duplicate_weights():
    class B(ef.keras.layers.Layer):
        builds = 0

        def build(self, shape):
            B.builds += 1
            self.w = self.add_weight(name="w", shape=(shape[-1], 2))
            if B.builds == 1:
                raise RuntimeError("build")

        def call(self, x):
            return ef.matmul(x, self.w)

    layer = B()
    f = ef.function(layer)
    with pytest.raises(RuntimeError, match="build"):
        f(ef.ones([1, 3]))
    assert f(ef.ones([1, 3])).shape == (1, 2)
    assert len(layer.trainable_weights) == 1


def test_two_threads_tracing_one_raising():
    @ef.function
    def f(x, fail):
        if fail:
            raise ValueError("thread")
        return x + 1.0

    errors = []

    def work(fail):
        for _ in range(100):
            try:
                f(ef.ones([2]), fail)
            except ValueError:
                errors.append(1)

    threads = [threading.Thread(target=work, args=(b,)) for b in (True, False)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(errors) == 100 and f.experimental_get_tracing_count() == 1


# --- wrong arguments ------------------------------------------------------------------------


@pytest.mark.parametrize("args,kwargs,match", [
    ((1,), {}, r"two\(x, y\): missing a required argument: 'y'"),
    ((1, 2, 3), {}, "too many positional arguments"),
    ((1, 2), {"z": 1}, "unexpected keyword argument 'z'"),
    ((1,), {"x": 2}, "multiple values for argument 'x'"),
    ((), {}, "missing a required argument: 'x'"),
])
def test_wrong_argument_counts_and_kwargs_are_type_errors(args, kwargs, match):
    @ef.function
    def two(x, y):
        return x + y

    args = tuple(ef.ones([2]) for _ in args)
    kwargs = {k: ef.ones([2]) for k in kwargs}
    with pytest.raises(TypeError, match=match):
        two(*args, **kwargs)
    assert two.experimental_get_tracing_count() == 0
    np.testing.assert_allclose(two(ef.ones([2]), y=ef.ones([2])).numpy(), [2.0, 2.0])


def test_wrong_arguments_to_signature_functions_and_layers():
    @ef.function(input_signature=[ef.TensorSpec([None, 2])])
    def f(x):
        return x * 2.0

    with pytest.raises(TypeError, match="do not match the input signature"):  # TF's class
        f(ef.ones([3, 3]))
    with pytest.raises(TypeError, match="int32"):
        f(ef.constant(np.ones((3, 2), np.int32)))
    with pytest.raises(TypeError, match="too many positional arguments"):
        f(ef.ones([3, 2]), ef.ones([3, 2]))
    assert f(ef.ones([4, 2])).shape == (4, 2)

    layer_fn = ef.function(ef.keras.layers.Dense(2))
    with pytest.raises(TypeError):
        layer_fn(ef.ones([1, 3]), ef.ones([1, 3]))
    with pytest.raises(TypeError):
        layer_fn(ef.ones([1, 3]), foo=1)
    assert layer_fn(ef.ones([1, 3]), training=True).shape == (1, 2)
