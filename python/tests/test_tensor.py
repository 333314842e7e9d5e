import numpy as np
import pytest

import eagerflow as ef

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.bool_]


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_round_trip_copies(dtype):
    # No tensor aliases an array its caller can write (issue 29): constant copies, numpy()
    # is a writable copy, np.asarray(t) a read-only view of the tensor's own memory.
    a = (np.arange(12) % 3).astype(dtype).reshape(3, 4)
    t = ef.constant(a)
    assert t.shape == (3, 4)
    assert t.dtype.name == np.dtype(dtype).name
    b = t.numpy()
    c = np.asarray(t)
    assert not np.shares_memory(a, b) and not np.shares_memory(a, c) and not np.shares_memory(b, c)
    assert t._data_ptr() != a.__array_interface__["data"][0]
    assert c.__array_interface__["data"][0] == t._data_ptr() and not c.flags.writeable
    assert b.flags.writeable
    np.testing.assert_array_equal(b, a)
    np.testing.assert_array_equal(c, a)


def test_owner_kept_alive():
    t = ef.constant(np.arange(1000, dtype=np.float32))
    b = t.numpy()
    del t
    import gc
    gc.collect()
    assert b[999] == 999.0  # the array keeps the tensor's storage alive
    a = np.ones(5, np.float32)
    t = ef.constant(a)
    del a
    gc.collect()
    assert float(ef.sum(t)) == 5.0  # the tensor keeps the array alive


def test_python_literals_follow_tf_defaults():
    assert ef.constant([1.0, 2.0]).dtype == ef.float32
    assert ef.constant([1, 2]).dtype == ef.int32
    assert ef.constant(3.5).shape == ()
    assert ef.constant(np.arange(3, dtype=np.uint8)).dtype == ef.uint8  # TF keeps NumPy's integer dtypes


def test_operators_and_scalars():
    x = ef.constant(np.array([[1.0, 2.0], [3.0, 4.0]], np.float64))
    np.testing.assert_allclose((x + 1).numpy(), x.numpy() + 1)
    assert (x * 2).dtype == ef.float64  # Python numbers take the tensor's dtype
    np.testing.assert_allclose((2 - x).numpy(), 2 - x.numpy())
    np.testing.assert_allclose((x / x).numpy(), np.ones((2, 2)))
    np.testing.assert_allclose((x @ x).numpy(), x.numpy() @ x.numpy())
    np.testing.assert_allclose((-x).numpy(), -x.numpy())
    np.testing.assert_array_equal((x > 2).numpy(), x.numpy() > 2)
    np.testing.assert_array_equal((x == x).numpy(), np.ones((2, 2), bool))
    np.testing.assert_allclose((x + np.ones((2, 2))).numpy(), x.numpy() + 1)


def test_indexing():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = ef.constant(a)
    for key in [0, -1, (1, 2), (slice(None), 1), (Ellipsis, 2), (0, slice(1, 3)), (slice(None, None, 2),),
                (None, 0), (1, slice(None), slice(1, None))]:
        np.testing.assert_array_equal(t[key].numpy(), a[key], err_msg=str(key))
    np.testing.assert_array_equal(t[[1, 0]].numpy(), a[[1, 0]])
    with pytest.raises(IndexError):
        t[5]


def test_repr_like_tf():
    t = ef.constant(np.array([[1, 2, 3], [4, 5, 6]], np.float32))
    r = repr(t)
    assert r.startswith("<tf.Tensor: shape=(2, 3), dtype=float32, numpy=")
    assert "array(" in r
    assert "shape=(2, 3)" in str(t)


def test_ops_table_and_random():
    x = ef.constant(np.array([-1.0, 0.5, 2.0], np.float32))
    np.testing.assert_allclose(ef.relu(x).numpy(), [0, 0.5, 2])
    np.testing.assert_allclose(ef.exp(x).numpy(), np.exp(x.numpy()), rtol=1e-6)
    np.testing.assert_allclose(ef.reduce_sum(x).numpy(), 1.5)
    assert ef.reshape(ef.zeros([2, 3]), [3, 2]).shape == (3, 2)
    assert ef.concat([x, x], 0).shape == (6,)
    np.testing.assert_allclose(ef.softmax(x).numpy().sum(), 1.0, rtol=1e-6)
    ef.random.set_seed(7)
    u = ef.random.uniform([100, 3])
    assert u.shape == (100, 3) and 0 <= u.numpy().min() and u.numpy().max() < 1
    n = ef.random.normal([1000], seed=3)
    assert abs(float(ef.reduce_mean(n))) < 0.2
    a = ef.random.stateless_uniform([4], seed=1)
    b = ef.random.stateless_uniform([4], seed=1)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_errors_are_ef_error():
    with pytest.raises(ef.Error, match=r"\[matmul\]"):
        ef.matmul(ef.zeros([2, 3]), ef.zeros([2, 3]))
    assert issubclass(ef.Error, RuntimeError)
