"""ef.function's keys for static Python arguments (issue 29): a freed object's trace never
serves a new object that happens to get the same id(); generator functions are refused."""
import dataclasses
import warnings

import numpy as np
import pytest

import eagerflow as ef


class Config:
    def __init__(self, k):
        self.k = k


class Slotted:
    __slots__ = ("k",)  # no __weakref__: keyed by a held reference

    def __init__(self, k):
        self.k = k


@dataclasses.dataclass(frozen=True)
class Frozen:  # __eq__ and __hash__ by value: equal objects share a trace, as in TF
    k: float


@pytest.fixture(autouse=True)
def _quiet_retracing():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ef.RetracingWarning)
        yield


@pytest.mark.parametrize("make", [Config, Slotted])
def test_fresh_objects_never_reuse_a_freed_objects_trace(make):
    f = ef.function(lambda x, c: x * c.k)
    x = ef.constant([1.0, 2.0])
    for k in range(199):
        out = f(x, make(float(k)))  # freed (refcount) right after the call: its id comes back
        np.testing.assert_array_equal(out.numpy(), [k, 2.0 * k])


def test_the_same_object_reuses_its_trace():
    f = ef.function(lambda x, c: x * c.k)
    x = ef.constant([1.0, 2.0])
    c = Config(3.0)
    for _ in range(5):
        np.testing.assert_array_equal(f(x, c).numpy(), [3, 6])
    assert f.experimental_get_tracing_count() == 1


def test_objects_equal_by_value_share_a_trace():
    f = ef.function(lambda x, c: x * c.k)
    x = ef.constant([1.0])
    assert float(f(x, Frozen(2.0))[0]) == 2.0
    assert float(f(x, Frozen(2.0))[0]) == 2.0
    assert float(f(x, Frozen(5.0))[0]) == 5.0
    assert f.experimental_get_tracing_count() == 2


def test_static_objects_in_keyword_and_nested_arguments():
    f = ef.function(lambda x, cfg=None: x * cfg["c"].k)
    x = ef.constant([1.0])
    for k in range(50):
        assert float(f(x, cfg={"c": Config(float(k))})[0]) == k


def test_bound_methods_of_fresh_instances():
    class M:
        def __init__(self, k):
            self.k = k

        @ef.function
        def scale(self, x):
            return x * self.k

    x = ef.constant([1.0])
    for k in range(50):
        assert float(M(float(k)).scale(x)[0]) == k


def test_generator_function_is_refused():
    def gen(x):
        yield x * 2

    f = ef.function(gen)  # decorating is fine; calling raises, naming the function
    with pytest.raises(TypeError, match="gen.*generator"):
        f(ef.constant([1.0]))
    with pytest.raises(TypeError, match="generator"):
        f.get_concrete_function(ef.TensorSpec([1]))


def test_function_returning_a_generator_is_refused():
    f = ef.function(lambda x: (x * i for i in range(3)))
    with pytest.raises(TypeError, match="generator"):
        f(ef.constant([1.0]))


def test_async_function_is_refused():
    async def co(x):
        return x

    with pytest.raises(TypeError, match="co"):
        ef.function(co)(ef.constant([1.0]))


def test_generator_method_is_refused():
    class G:
        @ef.function
        def steps(self, x):
            yield x

    with pytest.raises(TypeError, match="generator"):
        G().steps(ef.constant([1.0]))
