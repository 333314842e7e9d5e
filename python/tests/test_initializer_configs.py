"""A layer's initializers in its config, as Keras 3 writes them: get_config names them, from_config
and clone_model make the same kind of weights (they used to come back as the defaults), a
keras.initializers object keeps its class and seed, and a function of your own is left out."""
import numpy as np
import pytest

import eagerflow as ef
from eagerflow import keras

L = keras.layers


def _init_config(layer, key):
    return layer.get_config()[key]


def test_default_and_named_initializers_are_in_the_config():
    config = L.Dense(3).get_config()
    assert config["kernel_initializer"] == {"module": "keras.initializers", "class_name": "GlorotUniform",
                                            "config": {"seed": None, "input_axes": None, "output_axes": None},
                                            "registered_name": None}
    assert config["bias_initializer"]["class_name"] == "Zeros"
    assert _init_config(L.Conv2D(2, 3, kernel_initializer="he_normal"), "kernel_initializer")["class_name"] == "HeNormal"
    seeded = _init_config(L.Dense(2, kernel_initializer=keras.initializers.HeUniform(seed=5)), "kernel_initializer")
    assert seeded["class_name"] == "HeUniform" and seeded["config"]["seed"] == 5
    constant = _init_config(L.Dense(2, bias_initializer=keras.initializers.Constant(0.5)), "bias_initializer")
    assert constant["class_name"] == "Constant" and constant["config"]["value"] == 0.5
    own = L.Dense(2, kernel_initializer=lambda shape, dtype=None: np.ones(shape, np.float32))
    assert "kernel_initializer" not in own.get_config()  # no Keras name: the default comes back


def test_clone_model_and_from_config_keep_the_initializers():
    model = keras.Sequential([keras.Input((2,)), L.Dense(3, kernel_initializer="zeros", bias_initializer="ones")])
    clone = keras.models.clone_model(model)
    np.testing.assert_array_equal(clone.weights[0].numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(clone.weights[1].numpy(), np.ones(3))
    seeded = L.Dense(4, kernel_initializer=keras.initializers.GlorotNormal(seed=11))
    seeded.build((None, 5))
    again = L.Dense.from_config(seeded.get_config())
    again.build((None, 5))
    np.testing.assert_array_equal(again.kernel.numpy(), seeded.kernel.numpy())  # the same seeded draw


def test_keras_configs_of_initializers_are_read():
    config = {"name": "d", "units": 3,
              "kernel_initializer": {"module": "keras.initializers", "class_name": "Constant", "config": {"value": 2.0},
                                     "registered_name": None},
              "bias_initializer": "ones"}
    dense = L.Dense.from_config(config)
    dense.build((None, 2))
    np.testing.assert_array_equal(dense.kernel.numpy(), np.full((2, 3), 2.0))
    np.testing.assert_array_equal(dense.bias.numpy(), np.ones(3))
    with pytest.raises(Exception, match="unknown initializer"):
        L.Dense.from_config({"name": "e", "units": 2, "kernel_initializer": "no_such_initializer"})


def test_saved_model_file_carries_the_initializers(tmp_path):
    model = keras.Sequential([keras.Input((2,)), L.Dense(3, bias_initializer=keras.initializers.Constant(0.25))])
    path = str(tmp_path / "m.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    assert loaded.layers[0].get_config()["bias_initializer"]["config"]["value"] == 0.25
    fresh = keras.models.clone_model(loaded)
    np.testing.assert_array_equal(fresh.weights[1].numpy(), np.full(3, 0.25))


def test_every_layer_with_weights_takes_keras_initializer_arguments():
    x_seq, x_img = np.ones((1, 2, 3), np.float32), np.ones((1, 4, 4, 1), np.float32)
    lstm = L.LSTM(2, kernel_initializer="ones", recurrent_initializer="zeros",
                  bias_initializer=keras.initializers.Constant(0.5))
    lstm(x_seq)
    np.testing.assert_array_equal(lstm.weights[0].numpy(), np.ones((3, 8)))
    np.testing.assert_array_equal(lstm.weights[1].numpy(), np.zeros((2, 8)))
    # Keras' unit_forget_bias: the forget gate's bias is ones, the other gates' from bias_initializer.
    np.testing.assert_array_equal(lstm.weights[2].numpy(), [0.5, 0.5, 1, 1, 0.5, 0.5, 0.5, 0.5])
    gru = L.GRU(2, kernel_initializer="zeros", bias_initializer="ones")
    gru(x_seq)
    assert not gru.weights[0].numpy().any() and gru.weights[2].numpy().min() == 1.0
    rnn = L.SimpleRNN(2, recurrent_initializer="identity")
    rnn(x_seq)
    np.testing.assert_array_equal(rnn.weights[1].numpy(), np.eye(2))
    emb = L.Embedding(5, 2, embeddings_initializer="ones")
    emb(np.array([[1, 2]]))
    np.testing.assert_array_equal(emb.embeddings.numpy(), np.ones((5, 2)))
    conv1 = L.Conv1D(2, 2, kernel_initializer="ones", bias_initializer="ones")
    conv1(x_seq)
    assert conv1.kernel.numpy().min() == 1.0 and conv1.bias.numpy().min() == 1.0
    transposed = L.Conv2DTranspose(2, 3, kernel_initializer="zeros", bias_initializer="ones")
    transposed(x_img)
    assert not transposed.kernel.numpy().any() and transposed.bias.numpy().min() == 1.0
    bn = L.BatchNormalization(gamma_initializer="zeros", beta_initializer="ones",
                              moving_variance_initializer=keras.initializers.Constant(2.0))
    bn(np.ones((2, 3), np.float32))
    np.testing.assert_array_equal([w.numpy() for w in bn.weights], [np.zeros(3), np.ones(3), np.zeros(3), np.full(3, 2.0)])


@pytest.mark.parametrize("make, shape", [
    (lambda: L.LSTM(2, kernel_initializer="ones", recurrent_initializer="zeros", bias_initializer="ones"), (1, 2, 3)),
    (lambda: L.GRU(2, kernel_initializer="zeros", recurrent_initializer="ones", bias_initializer="ones"), (1, 2, 3)),
    (lambda: L.SimpleRNN(2, kernel_initializer=keras.initializers.Constant(0.5), recurrent_initializer="identity"),
     (1, 2, 3)),
    (lambda: L.Embedding(4, 2, embeddings_initializer=keras.initializers.RandomNormal(seed=3)), None),
    (lambda: L.Conv1D(2, 2, kernel_initializer=keras.initializers.HeNormal(seed=1)), (1, 3, 2)),
    (lambda: L.Conv2DTranspose(2, 2, kernel_initializer="zeros", bias_initializer="ones"), (1, 3, 3, 1)),
    (lambda: L.BatchNormalization(gamma_initializer="zeros", moving_mean_initializer="ones"), (2, 3)),
])
def test_from_config_makes_the_same_initial_weights(make, shape):
    layer = make()  # fixed or seeded initializers only: the same weights again
    x = np.array([[1, 2]]) if shape is None else np.ones(shape, np.float32)
    layer(x)
    again = type(layer).from_config(layer.get_config())
    again(x)
    assert again.get_config() == layer.get_config()
    assert len(again.weights) == len(layer.weights)
    for a, b in zip(layer.weights, again.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
