import threading

import numpy as np
import pytest

import eagerflow as ef


def test_python_runs_at_trace_time_only(capfd):
    runs = []

    @ef.function
    def f(x):
        runs.append(1)
        ef.print("value:", x)
        return ef.relu(x) * 2.0

    x = ef.constant(np.array([-1.0, 3.0], np.float32))
    for _ in range(3):
        np.testing.assert_allclose(f(x).numpy(), [0.0, 6.0])
    assert len(runs) == 1
    assert f.experimental_get_tracing_count() == 1
    out = capfd.readouterr().out
    assert out.count("value:") == 3  # ef.print is an op: it prints at every call


def test_retrace_reasons_shapes_and_statics():
    @ef.function
    def f(x, scale, mode="a"):
        return x * scale if mode == "a" else x + scale

    x = ef.ones([2])
    f(x, 2.0)
    f(x, 2.0)
    f(ef.ones([3]), 2.0)
    f(x, 3.0)
    f(x, 3.0, mode="b")
    np.testing.assert_allclose(f(x, 3.0, mode="b").numpy(), [4.0, 4.0])
    assert f.experimental_get_tracing_count() == 4
    reasons = [t.reason for t in f.traces]
    assert reasons[0] == "first call"
    assert "float32[3]" in reasons[1] and "float32[2]" in reasons[1]
    assert "scale" in reasons[2] and "3" in reasons[2]
    assert "mode" in reasons[3]


def test_numpy_arguments_are_traced_not_static():
    f = ef.function(lambda x: x + 1)
    f(np.ones(3, np.float32))
    f(np.zeros(3, np.float32))
    assert f.experimental_get_tracing_count() == 1


def test_containers_of_tensors_and_results():
    @ef.function
    def f(xs, d):
        return {"sum": xs[0] + xs[1], "pair": (d["a"], 7)}

    a, b = ef.ones([2]), ef.ones([2])
    out = f([a, b], {"a": a})
    np.testing.assert_allclose(out["sum"].numpy(), [2, 2])
    assert out["pair"][1] == 7
    f([a, b], {"a": b})
    assert f.experimental_get_tracing_count() == 1


def test_input_signature_and_reduce_retracing():
    f = ef.function(lambda x: ef.reduce_sum(x), input_signature=[ef.TensorSpec([None, 4], ef.float32)])
    f(ef.ones([2, 4]))
    f(ef.ones([5, 4]))
    assert f.experimental_get_tracing_count() == 1
    with pytest.raises(TypeError, match="Can not cast"):  # TF's class for arguments outside the signature
        f(ef.ones([2, 3]))
    g = ef.function(lambda x: x * 2, reduce_retracing=True)
    for n in range(1, 6):
        g(ef.ones([n]))
    assert g.experimental_get_tracing_count() == 2


def test_concrete_function_prints_graph():
    f = ef.function(lambda x: ef.relu(x) + 1.0)
    cf = f.get_concrete_function(ef.TensorSpec([2, 3], ef.float32))
    text = str(cf.graph)
    assert "lambda" in text and "f32[2,3]" in text
    assert str(cf).startswith("ConcreteFunction Input Parameters:")  # TF's str of a ConcreteFunction


def test_python_exception_propagates_and_cache_unchanged():
    class Boom(Exception):
        pass

    fail = [True]

    @ef.function
    def f(x):
        if fail[0]:
            raise Boom("from the body")
        return x + 1

    with pytest.raises(Boom, match="from the body"):
        f(ef.ones([2]))
    assert f.experimental_get_tracing_count() == 0
    fail[0] = False
    np.testing.assert_allclose(f(ef.ones([2])).numpy(), [2, 2])
    assert f.experimental_get_tracing_count() == 1


def test_symbolic_bool_and_float_name_cond_and_print():
    def body(x):
        if ef.reduce_sum(x) > 0:
            return x
        return -x

    f = ef.function(body, autograph=False)  # AutoGraph off: a Python `if` on a tensor stays an error
    with pytest.raises(ef.Error, match=r"ef\.cond.*ef\.print"):
        f(ef.ones([2]))
    np.testing.assert_allclose(ef.function(body)(-ef.ones([2])).numpy(), [1, 1])  # on: an ef.cond

    @ef.function
    def g(x):
        return float(x)

    with pytest.raises(ef.Error, match="ef.cond"):
        g(ef.ones([]))


def test_cond_traced():
    @ef.function
    def f(x):
        return ef.cond(ef.reduce_sum(x) > 0, lambda: x * 2.0, lambda: -x)

    np.testing.assert_allclose(f(ef.ones([2])).numpy(), [2, 2])
    np.testing.assert_allclose(f(-ef.ones([2])).numpy(), [1, 1])
    assert f.experimental_get_tracing_count() == 1


def test_two_threads_call_one_function():
    f = ef.function(lambda x: ef.matmul(x, x))
    x = ef.ones([16, 16])
    errors = []

    def work():
        try:
            for _ in range(200):
                assert float(f(x)[0, 0]) == 16.0
        except Exception as e:  # pragma: no cover
            errors.append(e)

    ts = [threading.Thread(target=work) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    assert f.experimental_get_tracing_count() == 1
