"""Issue 17's Keras layers from Python: Lambda, Rescaling, Normalization, Conv2DTranspose, UpSampling2D,
ZeroPadding2D, LeakyReLU, ELU, activations, regularizers with add_loss/losses, constraints. Numbers are
checked against NumPy formulas written here, shapes against Keras' documented output shapes."""
import math

import numpy as np
import pytest

import eagerflow as ef

keras = ef.keras
L = keras.layers


def rand(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


# ---------------------------------------------------------------- activations

def test_activations_match_numpy_formulas():
    x = np.array([-30.0, -3.0, -0.5, 0.0, 0.7, 2.0, 30.0], np.float64)
    softplus = np.logaddexp(0.0, x)
    erf = np.vectorize(math.erf)
    want = {
        "relu": np.maximum(x, 0), "sigmoid": 1 / (1 + np.exp(-x)), "tanh": np.tanh(x),
        "leaky_relu": np.where(x >= 0, x, 0.2 * x), "elu": np.where(x > 0, x, np.expm1(x)),
        "softplus": softplus, "swish": x / (1 + np.exp(-x)), "silu": x / (1 + np.exp(-x)),
        "mish": x * np.tanh(softplus), "gelu": 0.5 * x * (1 + erf(x / np.sqrt(2))),
        "selu": 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x)),
    }
    for name, expected in want.items():
        got = getattr(keras.activations, name)(ef.constant(x)).numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12, err_msg=name)
        assert keras.activations.get(name) is getattr(keras.activations, name)
    np.testing.assert_allclose(keras.activations.leaky_relu(ef.constant(x), negative_slope=0.5).numpy(),
                               np.where(x >= 0, x, 0.5 * x))
    np.testing.assert_allclose(keras.activations.elu(ef.constant(x), alpha=2.0).numpy(),
                               np.where(x > 0, x, 2 * np.expm1(x)))
    np.testing.assert_allclose(keras.activations.relu(ef.constant(x), negative_slope=0.1, max_value=1.0).numpy(),
                               np.minimum(np.where(x > 0, x, 0.1 * x), 1.0))
    sm = keras.activations.softmax(ef.constant(x.reshape(1, -1))).numpy()
    np.testing.assert_allclose(sm.sum(), 1.0)


def test_activation_names_work_in_dense_and_activation_layers():
    x = rand(4, 3)
    for name in ["leaky_relu", "elu", "softplus", "swish", "silu", "mish", "gelu", "selu"]:
        dense = L.Dense(2, activation=name)
        y = dense(x).numpy()
        pre = x @ dense.kernel.numpy() + dense.bias.numpy()
        np.testing.assert_allclose(y, getattr(keras.activations, name)(ef.constant(pre)).numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=name)
        np.testing.assert_allclose(L.Activation(name)(x).numpy(),
                                   getattr(keras.activations, name)(ef.constant(x)).numpy(), rtol=1e-6)
    with pytest.raises(ef.Error, match="mish"):
        L.Dense(2, activation="not_an_activation")


def test_leaky_relu_and_elu_layers_use_keras_layer_defaults():
    x = np.array([[-2.0, -0.5, 0.0, 1.5]], np.float32)
    assert L.LeakyReLU().negative_slope == pytest.approx(0.3)
    np.testing.assert_allclose(L.LeakyReLU()(x).numpy(), np.where(x >= 0, x, 0.3 * x), rtol=1e-6)
    np.testing.assert_allclose(L.LeakyReLU(negative_slope=0.1)(x).numpy(), np.where(x >= 0, x, 0.1 * x), rtol=1e-6)
    np.testing.assert_allclose(L.ELU()(x).numpy(), np.where(x > 0, x, np.expm1(x)), rtol=1e-6)
    np.testing.assert_allclose(L.ELU(alpha=0.5)(x).numpy(), np.where(x > 0, x, 0.5 * np.expm1(x)), rtol=1e-6)
    with pytest.raises(ValueError, match="negative_slope"):  # Keras 3's class and check
        L.LeakyReLU(negative_slope=-1.0)


# ---------------------------------------------------------------- Lambda, Rescaling, Normalization

def test_lambda_takes_a_python_callable_that_traces_once_and_differentiates():
    calls = []

    def fn(t):
        calls.append(1)
        return ef.square(t) * 2.0

    layer = L.Lambda(fn)
    x = rand(3, 2)
    np.testing.assert_allclose(layer(x).numpy(), 2 * x ** 2, rtol=1e-6)
    f = ef.function(lambda t: layer(t))
    calls.clear()
    f(ef.constant(x))
    f(ef.constant(x))
    assert len(calls) == 1  # Python runs at trace time only
    xt = ef.constant(x)
    with ef.GradientTape() as tape:
        tape.watch(xt)
        y = ef.reduce_sum(layer(xt)) if hasattr(ef, "reduce_sum") else ef.sum(layer(xt))
    np.testing.assert_allclose(tape.gradient(y, xt).numpy(), 4 * x, rtol=1e-6)
    with pytest.raises(TypeError):
        L.Lambda(3)


def test_rescaling_maps_pixels_to_floats():
    pixels = np.array([[0, 51, 255]], np.uint8).astype(np.int64)
    y = L.Rescaling(1.0 / 255)(pixels)
    assert y.dtype == ef.float32
    np.testing.assert_allclose(y.numpy(), [[0.0, 0.2, 1.0]], rtol=1e-6)
    np.testing.assert_allclose(L.Rescaling(scale=1 / 127.5, offset=-1)(pixels).numpy(), [[-1.0, 51 / 127.5 - 1, 1.0]],
                               rtol=1e-6)


def test_normalization_adapt_matches_keras_doc_examples():
    adapt_data = np.array([[0., 7., 4.], [2., 9., 6.], [0., 7., 4.], [2., 9., 6.]], np.float32)
    layer = L.Normalization(axis=-1)
    layer.adapt(adapt_data)
    np.testing.assert_allclose(layer(np.array([[0., 7., 4.]], np.float32)).numpy(), [[-1., -1., -1.]], rtol=1e-6)
    inverse = L.Normalization(axis=-1, invert=True)
    inverse.adapt(ef.constant(adapt_data))  # a tensor works as well as an array
    np.testing.assert_allclose(inverse(np.array([[1., 2., 3.]], np.float32)).numpy(), [[2., 10., 8.]], rtol=1e-6)
    given = L.Normalization(mean=3., variance=2.)
    np.testing.assert_allclose(given(np.array([[1.], [2.], [3.]], np.float32)).numpy(),
                               [[-1.4142135], [-0.70710677], [0.]], rtol=1e-6)


def test_normalization_statistics_are_saved_as_non_trainable_weights(tmp_path):
    data = rand(100, 5, seed=3) * 4 + 1
    model = keras.Sequential([L.Normalization(), L.Dense(2)])
    model.layers[0].adapt(data)
    norm = model.layers[0]
    np.testing.assert_allclose(norm.mean.numpy(), data.mean(axis=0), rtol=1e-5)
    np.testing.assert_allclose(norm.variance.numpy(), data.var(axis=0), rtol=1e-4)
    names = [w.name for w in norm.non_trainable_weights]
    assert [n.split("/")[-1] for n in names] == ["mean", "variance", "count"]
    assert norm.trainable_weights == []
    out = model(data)
    path = str(tmp_path / "w.safetensors")
    model.save_weights(path)
    norm.adapt(data * 10)
    assert not np.allclose(model(data).numpy(), out.numpy())
    model.load_weights(path)
    np.testing.assert_allclose(model(data).numpy(), out.numpy(), rtol=1e-6)
    np.testing.assert_allclose(L.Normalization(axis=None)(data).numpy(), data, rtol=1e-6)  # not adapted: identity
    with pytest.raises(ef.Error, match="empty"):
        L.Normalization().adapt(np.zeros((0, 5), np.float32))


# ---------------------------------------------------------------- Conv2DTranspose, UpSampling2D, ZeroPadding2D

def naive_conv_transpose(x, k, b, strides, padding):
    n, h, w, c = x.shape
    kh, kw, f, _ = k.shape
    sh, sw = strides
    if padding == "same":
        oh, ow = h * sh, w * sw
        pt, pl = max(kh - sh, 0) // 2, max(kw - sw, 0) // 2
    else:
        oh, ow = h * sh + max(kh - sh, 0), w * sw + max(kw - sw, 0)
        pt = pl = 0
    out = np.zeros((n, oh, ow, f))
    for i in range(h):
        for j in range(w):
            for a in range(kh):
                for e in range(kw):
                    oi, oj = i * sh + a - pt, j * sw + e - pl
                    if 0 <= oi < oh and 0 <= oj < ow:
                        out[:, oi, oj, :] += x[:, i, j, :].astype(np.float64) @ k[a, e].T.astype(np.float64)
    return out + b


@pytest.mark.parametrize("kernel,strides,padding", [(3, 1, "valid"), (3, 2, "valid"), (3, 2, "same"),
                                                    ((2, 4), (2, 3), "same"), (1, 3, "valid"), (4, 2, "same")])
def test_conv2d_transpose_matches_a_naive_loop_and_keras_shapes(kernel, strides, padding):
    x = rand(2, 4, 5, 3, seed=1)
    layer = L.Conv2DTranspose(6, kernel, strides=strides, padding=padding)
    y = layer(x)
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    sh, sw = (strides, strides) if isinstance(strides, int) else strides
    assert tuple(layer.kernel.shape) == (kh, kw, 6, 3)
    layer.bias.assign(rand(6, seed=2))
    y = layer(x).numpy()
    want = naive_conv_transpose(x, layer.kernel.numpy(), layer.bias.numpy(), (sh, sw), padding)
    assert y.shape == want.shape
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
    traced = ef.function(lambda t: layer(t))(ef.constant(x)).numpy()
    np.testing.assert_allclose(traced, y, rtol=1e-6, atol=1e-6)


def test_conv2d_transpose_in_a_model_trains_and_errors_name_the_layer():
    x = rand(8, 4, 4, 2, seed=4)
    y = rand(8, 8, 8, 1, seed=5)
    model = keras.Sequential([L.Conv2DTranspose(3, 3, strides=2, padding="same", activation="relu"),
                              L.Conv2D(1, 3, padding="same")])
    model.compile(optimizer="adam", loss="mse")
    h = model.fit(x, y, epochs=2, batch_size=4, verbose=0)
    assert np.all(np.isfinite(h.history["loss"]))
    assert model.predict(x).shape == (8, 8, 8, 1)
    with pytest.raises(ef.Error, match=r"deconv.*rank 4.*\[2,4,4\]"):
        L.Conv2DTranspose(2, 3, name="deconv")(rand(2, 4, 4))
    with pytest.raises(ValueError, match="channels_last"):
        L.Conv2DTranspose(2, 3, data_format="channels_first")


def test_upsampling2d_nearest_and_bilinear():
    x = rand(2, 3, 4, 2, seed=6)
    y = L.UpSampling2D()(x).numpy()
    assert y.shape == (2, 6, 8, 2)
    np.testing.assert_array_equal(y, x.repeat(2, axis=1).repeat(2, axis=2))
    assert L.UpSampling2D(size=(3, 1))(x).shape == (2, 9, 4, 2)
    b = L.UpSampling2D(size=2, interpolation="bilinear")(x).numpy()

    def axis_weights(n_in, s):  # half-pixel centers, clamped: a [n_in * s, n_in] matrix
        m = np.zeros((n_in * s, n_in))
        for o in range(n_in * s):
            src = (o + 0.5) / s - 0.5
            lo = math.floor(src)
            f = src - lo
            m[o, min(max(lo, 0), n_in - 1)] += 1 - f
            m[o, min(max(lo + 1, 0), n_in - 1)] += f
        return m

    want = np.einsum("oh,nhwc,pw->nopc", axis_weights(3, 2), x.astype(np.float64), axis_weights(4, 2))
    np.testing.assert_allclose(b, want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ef.Error, match="bicubic"):
        L.UpSampling2D(interpolation="bicubic")


@pytest.mark.parametrize("padding,pads", [(1, ((1, 1), (1, 1))), ((2, 0), ((2, 2), (0, 0))),
                                          (((0, 3), (1, 2)), ((0, 3), (1, 2)))])
def test_zero_padding2d_accepts_keras_padding_forms(padding, pads):
    x = rand(2, 3, 4, 2, seed=7)
    y = L.ZeroPadding2D(padding)(x).numpy()
    np.testing.assert_array_equal(y, np.pad(x, ((0, 0),) + pads + ((0, 0),)))
    assert L.ZeroPadding2D(padding).padding == pads
    fn = ef.function(lambda t: L.ZeroPadding2D(padding)(t))
    np.testing.assert_array_equal(fn(ef.constant(x)).numpy(), y)


def test_zero_padding2d_rejects_negative_padding():
    with pytest.raises(ef.Error, match=r"zero_padding2d.*-1"):
        L.ZeroPadding2D(((0, -1), (0, 0)))
    with pytest.raises(ValueError, match="two elements"):
        L.ZeroPadding2D((1, 2, 3))


# ---------------------------------------------------------------- regularizers, add_loss, constraints

def test_regularizers_compute_keras_penalties():
    w = np.array([[1.0, -2.0], [0.5, -0.25]], np.float32)
    R = keras.regularizers
    assert float(R.L1()(w)) == pytest.approx(0.01 * 3.75)
    assert float(R.L2(0.1)(w)) == pytest.approx(0.1 * 5.3125)
    assert float(R.L1L2(l1=0.2, l2=0.3)(w)) == pytest.approx(0.2 * 3.75 + 0.3 * 5.3125)
    assert float(R.get("l1_l2")(w)) == pytest.approx(0.01 * (3.75 + 5.3125))
    assert R.L1L2().get_config() == {"l1": 0.0, "l2": 0.0}  # Keras 3's class defaults
    assert R.L2(0.5).get_config() == {"l2": 0.5}
    with pytest.raises(ValueError):
        R.L2(-1.0)


def test_dense_regularizers_by_name_and_object_appear_in_losses():
    x = rand(4, 3, seed=8)
    dense = L.Dense(2, kernel_regularizer="l2", bias_regularizer=keras.regularizers.L1(0.5),
                    bias_initializer="ones")
    assert dense.losses == []
    dense(x)
    losses = [float(t) for t in dense.losses]
    k = dense.kernel.numpy()
    assert losses == pytest.approx([0.01 * (k ** 2).sum(), 0.5 * 2.0], rel=1e-5)
    conv = L.Conv2D(2, 3, kernel_regularizer=keras.regularizers.L1(0.1), activity_regularizer="l2")
    y = conv(rand(5, 6, 6, 1, seed=9)).numpy()
    penalties = [float(t) for t in conv.losses]
    # Keras 3: the activity penalty (an add_loss value) divided by the batch size, then weight penalties.
    assert penalties == pytest.approx([0.01 * (y ** 2).sum() / 5, 0.1 * np.abs(conv.kernel.numpy()).sum()], rel=1e-4)


def test_python_layers_add_loss_in_call_and_losses_reset_per_outer_call():
    class Block(L.Layer):
        def __init__(self):
            super().__init__()
            self.dense = L.Dense(3, kernel_regularizer=keras.regularizers.L2(0.1))

        def call(self, inputs):
            h = self.dense(inputs)
            self.add_loss(ef.reduce_mean(ef.square(h)) if hasattr(ef, "reduce_mean") else ef.mean(ef.square(h)))
            return h

    class Net(L.Layer):
        def __init__(self):
            super().__init__()
            self.a, self.b = Block(), Block()

        def call(self, inputs):
            return self.b(self.a(inputs))

    net = Net()
    x = rand(4, 3, seed=10)
    net(x)
    losses = net.losses
    assert len(losses) == 4  # two add_loss values, then two kernel penalties
    ha = net.a.dense(x).numpy()
    assert float(losses[0]) == pytest.approx((ha ** 2).mean(), rel=1e-5)
    assert float(losses[2]) == pytest.approx(0.1 * (net.a.dense.kernel.numpy() ** 2).sum(), rel=1e-5)
    net(x)
    assert len(net.losses) == 4  # the next outermost call replaced the add_loss values


def test_losses_change_the_gradient_of_a_custom_training_loop():
    x, target = rand(6, 3, seed=11), rand(6, 2, seed=12)
    model = keras.Sequential([L.Dense(2, kernel_regularizer=keras.regularizers.L2(0.05))])
    model(x)
    kernel = model.layers[0].kernel

    def grads(with_losses):
        with ef.GradientTape() as tape:
            pred = model(x)
            loss = ef.mean(ef.square(pred - target))
            if with_losses:
                for extra in model.losses:
                    loss = loss + extra
        return tape.gradient(loss, model.trainable_weights)

    plain, reg = grads(False), grads(True)
    np.testing.assert_allclose(reg[0].numpy(), plain[0].numpy() + 0.1 * kernel.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(reg[1].numpy(), plain[1].numpy(), rtol=1e-6)


def test_constraints_project_as_keras_and_apply_constraints_assigns_them():
    w = np.array([[3.0, 0.1, -1.0], [4.0, 0.2, 1.0]], np.float32)
    norms = np.sqrt((w ** 2).sum(axis=0, keepdims=True))
    C = keras.constraints
    np.testing.assert_allclose(C.MaxNorm()(w).numpy(), w * np.minimum(norms, 2) / (1e-7 + norms), rtol=1e-6)
    np.testing.assert_allclose(C.MaxNorm(max_value=1, axis=1)(w).numpy(),
                               w * np.minimum(np.sqrt((w ** 2).sum(1, keepdims=True)), 1) /
                               (1e-7 + np.sqrt((w ** 2).sum(1, keepdims=True))), rtol=1e-6)
    np.testing.assert_allclose(C.NonNeg()(w).numpy(), np.maximum(w, 0))
    np.testing.assert_allclose(C.UnitNorm()(w).numpy(), w / (1e-7 + norms), rtol=1e-6)
    np.testing.assert_allclose(C.MinMaxNorm(0.5, 1.5, rate=0.5)(w).numpy(),
                               w * (0.5 * np.clip(norms, 0.5, 1.5) + 0.5 * norms) / (1e-7 + norms), rtol=1e-6)

    dense = L.Dense(4, kernel_constraint=C.MaxNorm(0.5), bias_constraint="non_neg", bias_initializer="ones")
    other = L.Dense(2, kernel_constraint=lambda k: k * 0.0)  # any callable
    model = keras.Sequential([dense, other])
    model(rand(3, 5, seed=13))
    dense.bias.assign(np.array([-1.0, 2.0, -3.0, 4.0], np.float32))
    k = dense.kernel.numpy()
    model.apply_constraints()
    col = np.sqrt((k ** 2).sum(axis=0, keepdims=True))
    np.testing.assert_allclose(dense.kernel.numpy(), k * np.minimum(col, 0.5) / (1e-7 + col), rtol=1e-6)
    np.testing.assert_allclose(dense.bias.numpy(), [0.0, 2.0, 0.0, 4.0])
    np.testing.assert_array_equal(other.kernel.numpy(), np.zeros((4, 2), np.float32))
    with pytest.raises(ef.Error, match="maxnorm"):
        L.Dense(2, kernel_constraint="maxnorm")


def test_activity_regularizer_is_settable_on_any_layer():
    layer = L.LeakyReLU()
    assert layer.activity_regularizer is None
    layer.activity_regularizer = keras.regularizers.L1(1.0)
    x = rand(4, 3, seed=14)
    y = layer(x).numpy()
    assert float(layer.losses[0]) == pytest.approx(np.abs(y).sum() / 4, rel=1e-5)
