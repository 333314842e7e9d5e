"""TF's constructions and norms (issue 31): tf.linspace, tf.eye, tf.meshgrid, tf.norm,
tf.clip_by_norm and tf.clip_by_global_norm against NumPy, eager and traced, with TF's errors."""
import numpy as np
import pytest

import eagerflow as tf


def both_ways(fn, *args):
    eager = fn(*args)
    traced = tf.function(fn)(*args)
    np.testing.assert_array_equal(np.asarray(eager), np.asarray(traced))
    return np.asarray(eager)


def test_linspace_matches_numpy_and_ends_at_stop():
    got = tf.linspace(-1.5, 2.25, 16)
    assert got.dtype == tf.float32 and got.shape == (16,)
    np.testing.assert_allclose(got.numpy(), np.linspace(-1.5, 2.25, 16), rtol=1e-6, atol=1e-6)
    assert got.numpy()[-1] == np.float32(2.25) and got.numpy()[0] == np.float32(-1.5)
    d = tf.linspace(tf.constant(0.0, tf.float64), 1.0, 11)
    assert d.dtype == tf.float64
    np.testing.assert_allclose(d.numpy(), np.linspace(0, 1, 11), rtol=1e-15, atol=1e-16)
    np.testing.assert_array_equal(tf.linspace(2.0, 5.0, 1).numpy(), [2.0])
    assert tf.linspace(2.0, 5.0, 0).shape == (0,)
    assert tf.math.linspace is tf.linspace
    both_ways(lambda a: tf.linspace(a, 3.0, 5), np.float32(0.5))


def test_eye_with_columns_batch_and_dtype():
    np.testing.assert_array_equal(tf.eye(3).numpy(), np.eye(3, dtype=np.float32))
    np.testing.assert_array_equal(tf.eye(2, 4, dtype=tf.int32).numpy(), np.eye(2, 4, dtype=np.int32))
    b = tf.eye(2, batch_shape=[3])
    assert b.shape == (3, 2, 2)
    np.testing.assert_array_equal(b.numpy(), np.broadcast_to(np.eye(2), (3, 2, 2)))


@pytest.mark.parametrize("indexing", ["xy", "ij"])
def test_meshgrid_as_numpy(indexing):
    x, y, z = np.arange(3.0), np.arange(10.0, 12.0), np.array([7.0, 8.0, 9.0, 10.0])
    got = tf.meshgrid(x, y, z, indexing=indexing)
    want = np.meshgrid(x, y, z, indexing=indexing)
    assert len(got) == 3
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_array_equal(g.numpy(), w)
    with pytest.raises(ValueError):
        tf.meshgrid(x, y, indexing="yx")


@pytest.mark.parametrize("ord_, axis", [("euclidean", None), (1, -1), (np.inf, 0), (3, 1), (2, 1), (0.5, 1),
                                        ("fro", (0, 1)), (1, (0, 1)), (np.inf, (0, 1)), ("euclidean", [0, 1])])
def test_norm_as_numpy(ord_, axis):
    x = np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.5]])
    got = both_ways(lambda a: tf.norm(a, ord=ord_, axis=axis), x)
    if axis is None:
        want = np.linalg.norm(x.ravel())
    elif isinstance(axis, int):
        want = np.linalg.norm(x, ord=ord_, axis=axis)
    else:
        want = np.linalg.norm(x, ord="fro" if ord_ == "euclidean" else ord_, axis=tuple(axis))
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_norm_keepdims_gradient_and_errors():
    x = tf.constant([[3.0, 4.0]])
    assert tf.norm(x, axis=1, keepdims=True).shape == (1, 1)
    v = tf.Variable([3.0, 4.0])
    with tf.GradientTape() as tape:
        n = tf.norm(v)
    np.testing.assert_allclose(tape.gradient(n, v).numpy(), [0.6, 0.8], rtol=1e-6)
    with pytest.raises(ValueError):
        tf.norm(x, ord=-1)
    with pytest.raises(ValueError):
        tf.norm(tf.zeros([2, 2, 2]), axis=[0, 1, 2])


def test_clip_by_norm_as_tf():
    t = np.array([[1.0, 2.0, 2.0], [4.0, 0.0, 3.0]], np.float32)
    got = both_ways(lambda a: tf.clip_by_norm(a, 3.0), t)
    np.testing.assert_allclose(got, t * 3.0 / np.linalg.norm(t), rtol=1e-6)
    rows = tf.clip_by_norm(t, 4.0, axes=[1]).numpy()
    np.testing.assert_allclose(rows, [[1, 2, 2], [3.2, 0, 2.4]], rtol=1e-6)
    np.testing.assert_array_equal(tf.clip_by_norm(tf.zeros([3]), 1.0).numpy(), np.zeros(3))


def test_clip_by_global_norm_as_tf():
    a, b = tf.constant([3.0, 0.0]), tf.constant([[4.0]])
    clipped, global_norm = tf.clip_by_global_norm([a, None, b], 2.5)
    assert clipped[1] is None
    np.testing.assert_allclose(float(global_norm), 5.0, rtol=1e-6)
    np.testing.assert_allclose(clipped[0].numpy(), [1.5, 0.0], rtol=1e-6)
    np.testing.assert_allclose(clipped[2].numpy(), [[2.0]], rtol=1e-6)
    same, _ = tf.clip_by_global_norm([a, b], 10.0)
    np.testing.assert_array_equal(same[0].numpy(), a.numpy())
    nan, norm = tf.clip_by_global_norm([tf.constant([np.inf, 1.0])], 1.0)
    assert np.isinf(float(norm)) and np.isnan(nan[0].numpy()).all()
    with pytest.raises(TypeError):
        tf.clip_by_global_norm(a, 1.0)
