"""tf.sparse.SparseTensor and tf.RaggedTensor at the level of TF's tensor guide (issue 31):
construction, TF's printing, to_dense/from_dense, sparse_dense_matmul and reductions against
NumPy, gradients through values, ragged elementwise ops, reductions by row and column, to_tensor,
indexing, and errors."""
import numpy as np
import pytest

import eagerflow as tf


def test_sparse_tensor_construction_and_printing():
    st = tf.sparse.SparseTensor(indices=[[0, 0], [1, 2]], values=[1, 2], dense_shape=[3, 4])
    assert st.shape == (3, 4) and st.dtype == tf.int32
    assert st.indices.dtype == tf.int64 and st.dense_shape.dtype == tf.int64
    assert repr(st).startswith("SparseTensor(indices=tf.Tensor(")
    np.testing.assert_array_equal(tf.sparse.to_dense(st).numpy(), [[1, 0, 0, 0], [0, 0, 2, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(tf.sparse.to_dense(st, default_value=-1).numpy()[2], [-1, -1, -1, -1])
    assert tf.SparseTensor is tf.sparse.SparseTensor
    with pytest.raises(ValueError):
        tf.sparse.SparseTensor(indices=[[0, 0]], values=[1, 2], dense_shape=[3, 4])


def test_from_dense_round_trip_and_reorder():
    d = np.array([[0.0, 2.5, 0.0], [1.0, 0.0, -3.0]], np.float32)
    st = tf.sparse.from_dense(d)
    np.testing.assert_array_equal(st.indices.numpy(), [[0, 1], [1, 0], [1, 2]])
    np.testing.assert_array_equal(tf.sparse.to_dense(st).numpy(), d)
    shuffled = tf.sparse.SparseTensor([[1, 2], [0, 1], [1, 0]], [-3.0, 2.5, 1.0], [2, 3])
    np.testing.assert_array_equal(tf.sparse.reorder(shuffled).indices.numpy(), st.indices.numpy())
    np.testing.assert_array_equal(tf.sparse.reorder(shuffled).values.numpy(), st.values.numpy())
    np.testing.assert_array_equal(tf.sparse.to_dense(tf.sparse.transpose(st)).numpy(), d.T)
    np.testing.assert_array_equal(tf.sparse.to_dense(tf.sparse.reshape(st, [3, 2])).numpy(), d.reshape(3, 2))


def test_sparse_dense_matmul_reductions_and_gradient():
    rng = np.random.default_rng(2)
    d = rng.normal(size=(4, 5)) * (rng.random((4, 5)) < 0.4)
    b = rng.normal(size=(5, 3))
    st = tf.sparse.from_dense(d)
    np.testing.assert_allclose(tf.sparse.sparse_dense_matmul(st, b).numpy(), d @ b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(tf.sparse.sparse_dense_matmul(st, rng.normal(size=(4, 3)), adjoint_a=True).numpy().shape, (5, 3))
    np.testing.assert_allclose(tf.sparse.reduce_sum(st, axis=1).numpy(), d.sum(1), rtol=1e-12)
    np.testing.assert_allclose(float(tf.sparse.reduce_sum(st)), d.sum(), rtol=1e-12)
    values = tf.Variable(st.values)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.sparse.sparse_dense_matmul(tf.sparse.SparseTensor(st.indices, values, st.dense_shape), b))
    rows = st.indices.numpy()
    np.testing.assert_allclose(tape.gradient(y, values).numpy(), b.sum(1)[rows[:, 1]], rtol=1e-12)
    added = tf.sparse.add(st, st)
    np.testing.assert_allclose(tf.sparse.to_dense(added).numpy(), 2 * d)
    np.testing.assert_allclose(tf.sparse.add(st, np.ones((4, 5))).numpy(), d + 1)
    sm = tf.sparse.softmax(tf.sparse.SparseTensor([[0, 0], [0, 2], [1, 1]], [1.0, 2.0, 5.0], [2, 3]))
    np.testing.assert_allclose(sm.values.numpy(), [np.exp(1) / (np.exp(1) + np.exp(2)), np.exp(2) / (np.exp(1) + np.exp(2)), 1.0])
    np.testing.assert_allclose(tf.sparse.reduce_max(tf.sparse.SparseTensor([[0, 0], [0, 2]], [-1.0, -2.0], [2, 3]), axis=1).numpy(), [-1.0, 0.0])
    np.testing.assert_array_equal(tf.sparse.to_dense(tf.sparse.eye(3)).numpy(), np.eye(3))
    parts = tf.sparse.split(sp_input=st, num_split=2, axis=1)
    np.testing.assert_allclose(np.concatenate([tf.sparse.to_dense(p).numpy() for p in parts], 1), d)
    np.testing.assert_allclose(tf.sparse.to_dense(tf.sparse.concat(1, parts)).numpy(), d)
    with pytest.raises(TypeError):
        tf.sparse.to_dense(d)


def test_ragged_constant_printing_and_structure():
    rt = tf.ragged.constant([[3, 1, 4, 1], [], [5, 9, 2], [6], []])
    assert repr(rt) == "<tf.RaggedTensor [[3, 1, 4, 1], [], [5, 9, 2], [6], []]>"
    assert rt.shape == (5, None) and rt.dtype == tf.int32 and rt.row_splits.dtype == tf.int64
    np.testing.assert_array_equal(rt.row_lengths().numpy(), [4, 0, 3, 1, 0])
    np.testing.assert_array_equal(rt.bounding_shape().numpy(), [5, 4])
    np.testing.assert_array_equal(rt[2].numpy(), [5, 9, 2])
    assert rt[1:3].to_list() == [[], [5, 9, 2]]
    assert tf.ragged.constant([[1.5], [2, 3]]).dtype == tf.float32
    assert tf.RaggedTensor.from_row_lengths([1, 2, 3], [2, 1]).to_list() == [[1, 2], [3]]
    assert tf.RaggedTensor.from_value_rowids([1, 2, 3], [0, 0, 2], nrows=3).to_list() == [[1, 2], [], [3]]
    assert tf.RaggedTensor.from_row_splits([1, 2, 3], [0, 1, 3]).to_list() == [[1], [2, 3]]
    assert tf.RaggedTensor.from_tensor([[1, 2, 0], [3, 0, 0]], padding=0).to_list() == [[1, 2], [3]]
    with pytest.raises(ValueError):
        tf.RaggedTensor.from_row_splits([1, 2, 3], [0, 2])
    with pytest.raises(IndexError):
        rt[7]


def test_ragged_ops_reductions_and_to_tensor():
    rt = tf.ragged.constant([[3, 1, 4, 1], [], [5, 9, 2], [6], []])
    assert (rt + 1).to_list() == [[4, 2, 5, 2], [], [6, 10, 3], [7], []]
    assert (2 * rt).to_list()[0] == [6, 2, 8, 2]
    assert tf.ragged.map_flat_values(tf.square, rt).to_list()[2] == [25, 81, 4]
    np.testing.assert_array_equal(tf.reduce_sum(rt, axis=1).numpy(), [9, 0, 16, 6, 0])
    np.testing.assert_array_equal(tf.reduce_sum(rt, axis=0).numpy(), [14, 10, 6, 1])
    assert int(tf.reduce_sum(rt)) == 31
    f = tf.ragged.constant([[1.0, 3.0], [], [2.0]])
    np.testing.assert_allclose(tf.reduce_mean(f, axis=1).numpy(), [2.0, 0.0, 2.0])
    np.testing.assert_array_equal(rt.to_tensor().numpy(), [[3, 1, 4, 1], [0, 0, 0, 0], [5, 9, 2, 0], [6, 0, 0, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(rt.to_tensor(default_value=-1).numpy()[1], [-1, -1, -1, -1])
    assert tf.ragged.range([3, 1]).to_list() == [[0, 1, 2], [0]]
    assert tf.ragged.boolean_mask(np.array([[1, 2, 3], [4, 5, 6]]), np.array([[True, False, True], [False, False, True]])).to_list() == [[1, 3], [6]]
    np.testing.assert_array_equal(tf.ragged.row_splits_to_segment_ids([0, 2, 2, 3]).numpy(), [0, 0, 2])
    np.testing.assert_array_equal(tf.ragged.segment_ids_to_row_splits([0, 0, 2]).numpy(), [0, 2, 2, 3])
    assert tf.ragged.stack([np.array([1, 2]), np.array([3])]).to_list() == [[1, 2], [3]]
    v = tf.Variable([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.reduce_max(tf.RaggedTensor.from_row_lengths(v, [2, 1]), axis=1))
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [0, 1, 1])
    with pytest.raises(ValueError):
        rt + tf.ragged.constant([[1], [2], [3], [4], [5]])
