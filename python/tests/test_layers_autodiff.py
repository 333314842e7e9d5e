import os
import subprocess
import sys

import numpy as np
import pytest

import eagerflow as ef
import eagerflow as tf


def test_seed_prints_once(repo_root):
    seed = os.path.join(repo_root, "examples", "python", "seed.py")
    out = subprocess.run([sys.executable, seed], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("Currently running eagerly") == 1
    assert "=============" in out.stdout
    assert "leaked" not in out.stderr


class Scale(tf.keras.layers.Layer):
    def build(self, input_shape):
        self.w = self.add_weight("w", [input_shape[-1]], initializer="ones")

    def call(self, inputs, training=None):
        self.seen_training = training
        return inputs * self.w


class Block(tf.keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = tf.keras.layers.Dense(4, activation="relu")
        self.scale = Scale()

    def call(self, inputs):
        return self.scale(self.dense(inputs))


def test_python_layer_weights_and_gradients():
    block = Block()
    x = ef.random.uniform([3, 5])
    y = block(x)
    assert y.shape == (3, 4)
    names = [v.path for v in block.trainable_weights]
    assert len(names) == 3 and any(n.endswith("/w") for n in names), names
    assert names[0].startswith(block.name + "/")
    with ef.GradientTape() as tape:
        loss = ef.reduce_sum(block(x))
    grads = tape.gradient(loss, block.trainable_weights)
    assert len(grads) == 3 and all(g is not None for g in grads)
    assert grads[0].shape == (5, 4)


def test_python_layer_traced_once_and_training_flag():
    layer = Scale()
    f = tf.function(layer)
    x = ef.ones([2, 3])
    f(x)
    f(x)
    assert f.experimental_get_tracing_count() == 1
    layer(x, training=True)
    assert layer.seen_training is True


def test_gradient_tape_and_grad():
    x = ef.constant(np.array([1.0, 2.0, 3.0], np.float32))
    with ef.GradientTape() as tape:
        tape.watch(x)
        y = ef.reduce_sum(x * x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [2, 4, 6])
    v = ef.Variable(np.float32(3.0))
    with ef.GradientTape() as tape:
        z = v * v
    np.testing.assert_allclose(tape.gradient(z, v).numpy(), 6.0)
    g = ef.grad(lambda a: ef.reduce_sum(a * a * a))(x)
    np.testing.assert_allclose(g.numpy(), [3, 12, 27])
    val, g = ef.value_and_grad(lambda a, b: ef.reduce_sum(a * b), argnums=(0, 1))(x, x)
    assert float(val) == 14.0
    np.testing.assert_allclose(g[1].numpy(), x.numpy())


def test_gradients_inside_function():
    dense = tf.keras.layers.Dense(2)

    @ef.function
    def step(x):
        with ef.GradientTape() as tape:
            loss = ef.reduce_mean(dense(x))
        return tape.gradient(loss, dense.trainable_weights)

    g1 = step(ef.ones([4, 3]))
    g2 = step(ef.ones([4, 3]))
    assert step.experimental_get_tracing_count() == 1
    np.testing.assert_allclose(g1[0].numpy(), g2[0].numpy())
    assert g1[0].shape == (3, 2)
