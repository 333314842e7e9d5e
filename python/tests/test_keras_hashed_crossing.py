"""keras.layers.HashedCrossing: Keras 3.15's bucket numbers (TF's sparse-cross hash), shapes,
one_hot output, errors, config, ef.function, Dataset.map and a model."""
import numpy as np
import pytest

import eagerflow as ef

L = ef.keras.layers
A = np.array(["a", "b", "c", "hello", "", "a"])
B = np.array([1, 7, -3, 2 ** 40, 0, 1])


def test_buckets_match_keras():
    # recorded from keras 3.15.1 (TensorFlow backend)
    assert L.HashedCrossing(num_bins=1000)([A, B]).numpy().tolist() == [485, 976, 772, 725, 600, 485]
    assert L.HashedCrossing(num_bins=7)([B, B]).numpy().tolist() == [0, 4, 6, 5, 1, 0]
    assert L.HashedCrossing(num_bins=5)([A[:, None], B[:, None]]).numpy().tolist() == [[0], [1], [2], [0], [0], [0]]
    assert int(L.HashedCrossing(num_bins=10)([np.array("x"), np.array(3)]).numpy()) == 0
    hot = L.HashedCrossing(num_bins=4, output_mode="one_hot")([A, A]).numpy()
    np.testing.assert_array_equal(hot.argmax(-1), [3, 3, 0, 1, 1, 3])
    np.testing.assert_array_equal(hot.sum(-1), np.ones(6))


def test_the_hash_is_tfs_fingerprint_chain():
    # the FingerprintCat64 chain from TF's default key over each feature's hash (an int's own value)
    from eagerflow.keras._prep_cross import _KEY, _cat64
    expected = _cat64(_cat64(_KEY, 1), 7) % 1000
    assert L.HashedCrossing(1000)([np.array([1]), np.array([7])]).numpy().tolist() == [expected]
    # order matters, as in TF
    ab = L.HashedCrossing(10 ** 6)([A, B]).numpy()
    ba = L.HashedCrossing(10 ** 6)([B, A]).numpy()
    assert (ab != ba).any()
    assert L.HashedCrossing(10 ** 6)([A, B, A]).numpy().shape == (6,)  # more than two features


def test_errors_like_keras():
    layer = L.HashedCrossing(8)
    with pytest.raises(ValueError, match="list or tuple"):
        layer(A)
    with pytest.raises(ValueError, match="at least two"):
        layer([A])
    with pytest.raises(ValueError, match="equal shape"):
        layer([A, B[:3]])
    with pytest.raises(ValueError, match="shape"):
        layer([np.ones((2, 3), np.int64), np.ones((2, 3), np.int64)])
    with pytest.raises(ValueError, match="integer or string"):
        layer([A, np.ones(6, np.float32)])
    with pytest.raises(ValueError):
        L.HashedCrossing(8, output_mode="multi_hot")


def test_config_function_dataset_and_model():
    layer = L.HashedCrossing(num_bins=50)
    config = layer.get_config()
    assert {k: config[k] for k in ("num_bins", "output_mode", "sparse", "dtype")} == \
        {"num_bins": 50, "output_mode": "int", "sparse": False, "dtype": "int64"}
    again = L.HashedCrossing.from_config(config)
    want = layer([A, B]).numpy()
    np.testing.assert_array_equal(again([A, B]).numpy(), want)
    traced = ef.function(lambda a, b: layer([a, b]))
    np.testing.assert_array_equal(traced(ef.constant(A), ef.constant(B)).numpy(), want)
    ds = ef.data.Dataset.from_tensor_slices((A, B)).batch(3).map(lambda a, b: layer([a, b]))
    np.testing.assert_array_equal(np.concatenate([t.numpy() for t in ds]), want)
    # in a functional model: one-hot crosses feed a Dense layer and train
    ia, ib = ef.keras.Input((1,), dtype="string"), ef.keras.Input((1,), dtype="int64")
    crossed = L.HashedCrossing(num_bins=16, output_mode="one_hot")([ia, ib])
    model = ef.keras.Model([ia, ib], L.Dense(1)(crossed))
    model.compile("sgd", "mse")
    h = model.fit([A[:, None], B[:, None]], np.ones((6, 1), np.float32), epochs=2, verbose=0)
    assert np.isfinite(h.history["loss"]).all()
