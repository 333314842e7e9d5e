"""TF's indexing functions (issue 31): gather_nd (batch_dims), scatter_nd, the tensor_scatter_nd
family, tf.gather's axis and batch_dims, tf.slice with begin and *size*, tf.strided_slice's
masks; against NumPy, eager == traced, gradients, and TF's errors."""
import numpy as np
import pytest

import eagerflow as tf

P = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)


def both_ways(fn, *args):
    eager = fn(*args)
    traced = tf.function(fn)(*args)
    np.testing.assert_array_equal(np.asarray(eager), np.asarray(traced))
    return np.asarray(eager)


def np_gather_nd(params, indices):
    indices = np.asarray(indices)
    k = indices.shape[-1]
    rows = indices.reshape(-1, k)
    out = np.stack([params[tuple(r)] for r in rows]) if len(rows) else np.zeros((0,) + params.shape[k:], params.dtype)
    return out.reshape(indices.shape[:-1] + params.shape[k:])


@pytest.mark.parametrize("indices", [[[1, 2, 3], [0, 0, 0]], [[1], [0], [1]], [[[0, 1]], [[1, 2]]], [[1, 2]], np.zeros((0, 2), np.int64)])
def test_gather_nd_as_numpy(indices):
    idx = np.asarray(indices, np.int32 if np.asarray(indices).size else np.int64)
    got = both_ways(lambda p, i: tf.gather_nd(p, i), P, idx)
    np.testing.assert_array_equal(got, np_gather_nd(P, idx))


def test_gather_nd_batch_dims():
    idx = np.array([[[2], [0]], [[1], [1]]])  # per batch, rows into that batch's [3, 4]
    got = tf.gather_nd(P, idx, batch_dims=1).numpy()
    want = np.stack([np_gather_nd(P[b], idx[b]) for b in range(2)])
    np.testing.assert_array_equal(got, want)


def test_gather_nd_gradient_accumulates_repeated_rows():
    v = tf.Variable(np.ones((3, 2), np.float32))
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.gather_nd(v, [[0], [2], [0]]) * tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [[6, 8], [0, 0], [3, 4]])


def test_gather_nd_out_of_range_is_invalid_argument():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = \[1, 3\] does not index into param shape"):
        tf.gather_nd(P, [[0, 0], [1, 3]])
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.gather_nd(P, [[-1]])
    with pytest.raises(ValueError):
        tf.gather_nd(P, [[0, 0, 0, 0]])  # depth 4 > rank 3
    with pytest.raises(TypeError):
        tf.gather_nd(P, [[0.5]])


def test_scatter_nd_sums_repeated_rows():
    got = both_ways(lambda i, u: tf.scatter_nd(i, u, [5]), np.array([[4], [1], [4]]), np.array([1.0, 2.0, 3.0], np.float32))
    np.testing.assert_array_equal(got, [0, 2, 0, 0, 4])
    slices = tf.scatter_nd([[1]], [[5, 6]], tf.constant([3, 2]))
    np.testing.assert_array_equal(slices.numpy(), [[0, 0], [5, 6], [0, 0]])
    assert slices.dtype == tf.int32


@pytest.mark.parametrize("mode", ["update", "add", "sub", "min", "max"])
def test_tensor_scatter_nd_as_numpy(mode):
    t = np.array([[1.0, 5.0], [3.0, -2.0], [0.5, 4.0]], np.float32)
    idx = np.array([[2], [0]])
    upd = np.array([[2.0, 2.0], [0.0, 9.0]], np.float32)
    got = both_ways(lambda a, i, u: getattr(tf, "tensor_scatter_nd_" + mode)(a, i, u), t, idx, upd)
    want = t.copy()
    for r, row in enumerate(idx[:, 0]):
        want[row] = {"update": upd[r], "add": want[row] + upd[r], "sub": want[row] - upd[r],
                     "min": np.minimum(want[row], upd[r]), "max": np.maximum(want[row], upd[r])}[mode]
    np.testing.assert_array_equal(got, want)


def test_tensor_scatter_nd_update_last_write_wins_and_errors():
    np.testing.assert_array_equal(tf.tensor_scatter_nd_update([1, 2, 3, 4], [[1], [1]], [7, 9]).numpy(), [1, 9, 3, 4])
    with pytest.raises(tf.errors.InvalidArgumentError, match="does not index into tensor shape"):
        tf.tensor_scatter_nd_update(tf.zeros([4]), [[5]], [1.0])
    with pytest.raises(ValueError):
        tf.tensor_scatter_nd_add(tf.zeros([4]), [[1]], [1.0, 2.0])  # updates of the wrong shape
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.tensor_scatter_nd_add(tf.zeros([4]), [[1]], tf.constant([1], tf.int32))


def test_tensor_scatter_nd_gradients():
    t = tf.Variable([1.0, 2.0, 3.0])
    u = tf.Variable([10.0, 0.5])
    w = tf.constant([1.0, 2.0, 3.0])
    for mode, dt, du in [("update", [1, 0, 0], [3, 2]), ("add", [1, 2, 3], [3, 2]), ("sub", [1, 2, 3], [-3, -2]),
                         ("max", [1, 2, 0], [3, 0]), ("min", [1, 0, 3], [0, 2])]:
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(getattr(tf, "tensor_scatter_nd_" + mode)(t, [[2], [1]], u) * w)
        gt, gu = tape.gradient(y, [t, u])
        np.testing.assert_array_equal(gt.numpy(), dt, err_msg=mode)
        np.testing.assert_array_equal(gu.numpy(), du, err_msg=mode)


@pytest.mark.parametrize("axis,batch_dims", [(0, 0), (1, 0), (2, 0), (-1, 0), (1, 1), (2, 1)])
def test_gather_axis_and_batch_dims_as_tf(axis, batch_dims):
    idx = np.array([[0, 1], [1, 1]])
    got = both_ways(lambda p, i: tf.gather(p, i, axis=axis, batch_dims=batch_dims), P, idx)
    if batch_dims == 0:
        want = np.take(P, idx, axis=axis)
    else:
        a = axis % 3
        want = np.stack([np.take(P[b], idx[b], axis=a - 1) for b in range(2)])
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_slice_takes_sizes_as_tf():
    x = np.arange(10, dtype=np.float32)
    np.testing.assert_array_equal(tf.slice(x, begin=[1], size=[3]).numpy(), [1, 2, 3])
    np.testing.assert_array_equal(tf.slice(x, [4], [-1]).numpy(), x[4:])
    np.testing.assert_array_equal(tf.slice(P, tf.constant([1, 0, 2]), [1, 2, -1]).numpy(), P[1:2, 0:2, 2:])
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.slice(x, [8], [5])


def test_strided_slice_masks_as_tf():
    x = np.arange(24).reshape(2, 3, 4)
    np.testing.assert_array_equal(tf.strided_slice(x, [0, 1, 0], [2, 3, 4], [1, 1, 2], begin_mask=1, shrink_axis_mask=2).numpy(),
                                  x[:2, 1, 0:4:2])
    np.testing.assert_array_equal(tf.strided_slice(x, [1, 0], [0, 0], [1, 1], end_mask=1, ellipsis_mask=2).numpy(), x[1:, ...])
    np.testing.assert_array_equal(tf.strided_slice(x, [0, 0], [1, 0], [1, 1], new_axis_mask=2).numpy(), x[0:1, None])
    np.testing.assert_array_equal(tf.strided_slice(x, [-1], [0], [-1]).numpy(), x[-1:0:-1])
