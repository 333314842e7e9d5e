"""tf.function(input_signature=...) whose entries are structures of TensorSpecs, as TF takes."""
import numpy as np
import pytest

import eagerflow as ef


def test_tuple_entry_traces_once_for_every_batch_size():
    @ef.function(input_signature=[(ef.TensorSpec([None, 1]), ef.TensorSpec([None, 1])), ef.TensorSpec([])])
    def f(pair, s):
        a, b = pair
        return a * 2.0 + b * s

    a, b = np.ones([2, 1], np.float32), np.full([2, 1], 2.0, np.float32)
    np.testing.assert_allclose(f((ef.constant(a), ef.constant(b)), ef.constant(3.0)).numpy(), a * 2 + b * 3)
    np.testing.assert_allclose(f((ef.ones([3, 1]), ef.ones([3, 1])), ef.constant(1.0)).numpy(), np.full([3, 1], 3.0))
    np.testing.assert_allclose(f(pair=(ef.ones([1, 1]), ef.ones([1, 1])), s=ef.constant(0.0)).numpy(), [[2.0]])
    assert f.experimental_get_tracing_count() == 1


def test_dict_entry_and_concrete_function():
    @ef.function(input_signature=[{"x": ef.TensorSpec([None]), "y": ef.TensorSpec([None], ef.int32)}])
    def g(d):
        return d["x"] + ef.cast(d["y"], ef.float32)

    out = g({"y": ef.constant([1, 2]), "x": ef.constant([0.5, 0.25])})
    np.testing.assert_allclose(out.numpy(), [1.5, 2.25])
    cf = g.get_concrete_function()
    np.testing.assert_allclose(cf({"x": ef.constant([1.0]), "y": ef.constant([1])}).numpy(), [2.0])
    assert g.experimental_get_tracing_count() == 1


def test_a_tensor_that_does_not_fit_is_a_type_error():
    @ef.function(input_signature=[(ef.TensorSpec([None, 1]), ef.TensorSpec([None, 1]))])
    def f(pair):
        return pair[0] + pair[1]

    with pytest.raises(TypeError):
        f((ef.ones([2, 2]), ef.ones([2, 1])))


def test_a_structure_that_does_not_fit_is_a_type_error():
    @ef.function(input_signature=[(ef.TensorSpec([None]), ef.TensorSpec([None]))])
    def f(pair):
        return pair[0]

    with pytest.raises(TypeError, match="structure"):
        f((ef.ones([2]), ef.ones([2]), ef.ones([2])))


def test_eager_equals_traced():
    def h(pair):
        return ef.reduce_sum(pair[0]) - ef.reduce_sum(pair[1])

    traced = ef.function(h, input_signature=[(ef.TensorSpec([None]), ef.TensorSpec([None]))])
    x, y = ef.constant([1.0, 2.0, 3.0]), ef.constant([0.5])
    np.testing.assert_allclose(traced((x, y)).numpy(), h((x, y)).numpy())
