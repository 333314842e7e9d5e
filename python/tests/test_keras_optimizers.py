"""Keras 3's optimizers, schedules and LossScaleOptimizer from Python: updates equal to Keras',
eagerly and in a traced step, fit with each, configs, serialization, and mixed_float16."""
import math

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import keras

O = keras.optimizers
S = keras.optimizers.schedules

GRADS = [np.array([[0.1, -0.2, 0.3], [0.5, 0.5, -0.5]], "float32"),
         np.array([[-1, 2, 0.25], [0.0, 1e-3, -3]], "float32"),
         np.array([[0.3, 0.3, 0.3], [-0.7, 0.2, 0.9]], "float32")]
START = np.array([[1.0, -2.0, 3.0], [0.5, 0.25, -1.5]], "float32")

# Keras 3.15's results (TensorFlow backend) for the same three steps from START.
KERAS = {
    "Adagrad": (lambda: O.Adagrad(0.1), [1.0373785, -2.0594289, 2.8301620, 0.4918608, 0.1332900, -1.3456095]),
    "Adadelta": (lambda: O.Adadelta(0.5), [0.9998776, -2.0005004, 2.9979045, 0.5001100, 0.2489077, -1.4987117]),
    "Adamax": (lambda: O.Adamax(0.1), [0.9670653, -1.9836870, 2.7142160, 0.3681351, 0.0576735, -1.3123249]),
    "Nadam": (lambda: O.Nadam(0.1), [0.9715278, -2.0181282, 2.7485700, 0.4690050, 0.0893997, -1.3127632]),
    "Ftrl": (lambda: O.Ftrl(0.1, l1_regularization_strength=0.01, l2_regularization_strength=0.02,
                            l2_shrinkage_regularization_strength=0.03, beta=0.1),
             [0.0595990, -0.2794939, 0.4791487, 0.1871660, -0.0017479, -0.4383171]),
    "Lion": (lambda: O.Lion(0.1), [0.9, -2.1, 2.7, 0.4, -0.05, -1.4]),
    "Lamb": (lambda: O.Lamb(0.1), [1.0453607, -2.1166277, 2.3935401, 0.2532242, -0.2251700, -1.0571944]),
    "Adafactor": (lambda: O.Adafactor(0.1), [1.0398626, -2.1508558, 2.7205660, 0.4898950, 0.0502762, -1.2597448]),
    "SGD weight_decay": (lambda: O.SGD(0.1, weight_decay=0.1),
                         [1.0294980, -2.1489959, 2.8267438, 0.5061445, 0.1734708, -1.1994436]),
    "Muon": (lambda: O.Muon(0.1), [0.9869498, -2.0431318, 2.9528790, 0.4877448, 0.2221425, -1.4326308]),
    "ScheduleFreeAdamW": (lambda: O.ScheduleFreeAdamW(0.1, warmup_steps=2),
                          [1.0272759, -2.0523126, 2.8544674, 0.4969734, 0.1783613, -1.3734065]),
    "SGD ema overwrite": (lambda: O.SGD(0.1, use_ema=True, ema_momentum=0.5, ema_overwrite_frequency=2),
                          [1.0100000, -2.1100000, 2.9275000, 0.5200000, 0.1799500, -1.3900001]),
    "Adam clipvalue": (lambda: O.Adam(0.1, clipvalue=0.4),
                       [0.9533213, -1.9957110, 2.7012098, 0.3415835, 0.0077735, -1.2738038]),
}


@pytest.mark.parametrize("name", sorted(KERAS))
def test_three_steps_equal_keras_eagerly_and_traced(name):
    make, want = KERAS[name]
    opt = make()
    v = ef.Variable(START)
    for g in GRADS:
        opt.apply([ef.constant(g)], [v])
    np.testing.assert_allclose(v.numpy().ravel(), want, atol=1e-5 if name == "Muon" else 2e-6)
    assert int(opt.iterations.numpy()) == 3

    opt2 = make()
    w = ef.Variable(START)

    @ef.function
    def step(g):
        opt2.apply_gradients([(g, w)])

    for g in GRADS:
        step(ef.constant(g))
    np.testing.assert_allclose(w.numpy().ravel(), want, atol=1e-5 if name == "Muon" else 2e-6)
    assert step.experimental_get_tracing_count() == 1


def test_names_configs_and_serialization_round_trip():
    assert O.Adam().name == "adam" and O.RMSprop().name == "rm_sprop" and O.AdamW().name == "adam_w"
    assert O.SGD(name="mine").name == "mine"
    config = O.Ftrl(0.05, l1_regularization_strength=0.5).get_config()
    assert config["learning_rate"] == pytest.approx(0.05)
    assert config["l1_regularization_strength"] == 0.5 and config["learning_rate_power"] == -0.5
    assert config["use_ema"] is False and config["weight_decay"] is None
    assert O.Adam().get_config()["amsgrad"] is False
    for cls in (O.SGD, O.Adam, O.AdamW, O.RMSprop, O.Adagrad, O.Adadelta, O.Adamax, O.Nadam, O.Ftrl, O.Lion, O.Lamb,
                O.Adafactor, O.Muon, O.ScheduleFreeAdamW):
        opt = cls(learning_rate=0.02, clipnorm=1.5)
        data = O.serialize(opt)
        assert data["module"] == "keras.optimizers" and data["class_name"] == cls.__name__
        back = O.deserialize(data)
        assert type(back) is cls
        assert back.get_config() == opt.get_config()
    assert isinstance(O.get("nadam"), O.Nadam) and isinstance(O.get("Adafactor"), O.Adafactor)
    with pytest.raises(ValueError):
        O.get("adamm")


def test_unsupported_options_are_refused_not_ignored():
    with pytest.raises(NotImplementedError, match="gradient_accumulation_steps"):
        O.Adam(gradient_accumulation_steps=2)
    with pytest.raises(NotImplementedError, match="amsgrad"):
        O.Adam(amsgrad=True)
    with pytest.raises(TypeError, match="betaa"):
        O.Nadam(betaa=0.3)
    with pytest.raises(Exception, match="initial_accumulator_value"):
        O.Adagrad(initial_accumulator_value=-1.0)


@pytest.mark.parametrize("name", ["adagrad", "adadelta", "adamax", "nadam", "ftrl", "lion", "lamb", "adafactor"])
def test_each_optimizer_trains_a_model_in_fit(name):
    ef.keras.utils.set_random_seed(0)
    x = np.random.RandomState(0).normal(size=(64, 4)).astype("float32")
    y = x @ np.array([[1.0], [-2.0], [0.5], [3.0]], "float32")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    # Adadelta's first steps are about sqrt(epsilon): a larger epsilon makes 30 epochs enough.
    opt = O.Adadelta(1.0, epsilon=1e-3) if name == "adadelta" else O.get(name)
    if name != "adadelta":
        opt.learning_rate = 0.05
    model.compile(optimizer=opt, loss="mse")
    first = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=30, batch_size=16, verbose=0)
    assert model.evaluate(x, y, verbose=0) < first * 0.8
    assert int(opt.iterations.numpy()) == 30 * 4


def test_build_makes_slots_before_the_first_step():
    opt = O.Adagrad(initial_accumulator_value=0.25)
    v = ef.Variable(np.zeros((2, 2), "float32"))
    opt.build([v])
    assert opt.built
    slots = [s for s in opt.variables if s.shape == (2, 2)]
    assert len(slots) == 1 and np.all(slots[0].numpy() == 0.25)
    opt.apply([ef.ones((2, 2))])  # the variables given to build
    np.testing.assert_allclose(v.numpy(), -0.001 / math.sqrt(1.25 + 1e-7), rtol=1e-5)


SCHEDULE_STEPS = [0, 5, 10, 15, 25, 100]
# Keras 3.15's values at SCHEDULE_STEPS.
SCHEDULES = {
    "piecewise": (lambda: S.PiecewiseConstantDecay([10, 20], [1.0, 0.5, 0.1]), [1.0, 1.0, 1.0, 0.5, 0.1, 0.1]),
    "polynomial": (lambda: S.PolynomialDecay(0.1, 20, 0.01, power=2.0),
                   [0.1, 0.060625, 0.0325, 0.015625, 0.01, 0.01]),
    "polynomial cycle": (lambda: S.PolynomialDecay(0.1, 20, 0.01, power=0.5, cycle=True),
                         [0.1, 0.0879423, 0.0736396, 0.055, 0.0651135, 0.01]),
    "inverse time": (lambda: S.InverseTimeDecay(0.1, 10, 0.5),
                     [0.1, 0.08, 0.0666667, 0.0571429, 0.0444444, 0.0166667]),
    "inverse time staircase": (lambda: S.InverseTimeDecay(0.1, 10, 0.5, staircase=True),
                               [0.1, 0.1, 0.0666667, 0.0666667, 0.05, 0.0166667]),
    "cosine restarts": (lambda: S.CosineDecayRestarts(0.1, 10),
                        [0.1, 0.05, 0.1, 0.0853553, 0.0146447, 0.0691342]),
    "cosine restarts t_mul 1": (lambda: S.CosineDecayRestarts(0.1, 10, t_mul=1.0, m_mul=0.5, alpha=0.1),
                                [0.1, 0.055, 0.055, 0.0325, 0.02125, 0.0100879]),
    "cosine warmup": (lambda: S.CosineDecay(0.0, 20, alpha=0.1, warmup_target=0.2, warmup_steps=5),
                      [0.0, 0.2, 0.1736396, 0.11, 0.02, 0.02]),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_schedules_equal_keras(name):
    make, want = SCHEDULES[name]
    schedule = make()
    got = [float(schedule(t)) for t in SCHEDULE_STEPS]
    np.testing.assert_allclose(got, want, atol=2e-6)
    assert isinstance(schedule, S.LearningRateSchedule)
    back = S.deserialize(S.serialize(schedule))
    np.testing.assert_allclose([float(back(t)) for t in SCHEDULE_STEPS], want, atol=2e-6)


def test_an_optimizer_follows_a_python_schedule_in_a_traced_step():
    class Halving(S.LearningRateSchedule):  # a user schedule, without super().__init__()
        def __init__(self, rate):
            self.rate = rate

        def __call__(self, step):
            return self.rate * ef.pow(0.5, step)

    opt = O.SGD(Halving(1.0))
    v = ef.Variable([0.0])

    @ef.function
    def step():
        opt.apply_gradients([(ef.constant([1.0]), v)])

    for _ in range(3):
        step()
    np.testing.assert_allclose(v.numpy(), [-(1.0 + 0.5 + 0.25)], rtol=1e-6)
    assert step.experimental_get_tracing_count() == 1
    assert opt.learning_rate == pytest.approx(0.125)

    calls = O.SGD(lambda: 0.5)  # a callable of no arguments, as Keras allows
    w = ef.Variable([0.0])
    calls.apply_gradients([(ef.constant([1.0]), w)])
    np.testing.assert_allclose(w.numpy(), [-0.5])


def test_loss_scale_optimizer_skips_non_finite_steps_and_adapts():
    lso = O.LossScaleOptimizer(O.SGD(0.1), initial_scale=8, dynamic_growth_steps=2)
    v = ef.Variable([1.0, 2.0])
    assert float(lso.scale_loss(ef.constant(2.0))) == 16.0
    lso.apply([ef.constant([8.0, 16.0])], [v])
    np.testing.assert_allclose(v.numpy(), [0.9, 1.8], rtol=1e-6)
    lso.apply([ef.constant([np.inf, 1.0])], [v])
    np.testing.assert_allclose(v.numpy(), [0.9, 1.8], rtol=1e-6)
    assert float(lso.dynamic_scale.numpy()) == 4.0
    lso.apply([ef.constant([4.0, 4.0])], [v])
    lso.apply([ef.constant([4.0, 4.0])], [v])
    assert float(lso.dynamic_scale.numpy()) == 8.0
    assert int(lso.iterations.numpy()) == 3
    config = lso.get_config()
    assert config["inner_optimizer"]["class_name"] == "SGD" and config["dynamic_growth_steps"] == 2
    back = O.LossScaleOptimizer.from_config(config)
    assert isinstance(back.inner_optimizer, O.SGD) and back.initial_scale == 8
    assert keras.mixed_precision.LossScaleOptimizer is O.LossScaleOptimizer
    with pytest.raises(ValueError, match="clipnorm"):
        O.LossScaleOptimizer(O.SGD(), clipnorm=1.0)


def _train_small_model(policy, optimizer):
    keras.mixed_precision.set_global_policy(policy)
    try:
        ef.keras.utils.set_random_seed(1)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                                  keras.layers.Dense(1, dtype="float32")])
        model.compile(optimizer=optimizer, loss="mse")
        x = np.random.RandomState(0).normal(size=(64, 4)).astype("float32")
        y = x.sum(axis=1, keepdims=True)
        model.fit(x, y, epochs=20, batch_size=16, verbose=0)
        return model, model.evaluate(x, y, verbose=0)
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_mixed_float16_compiles_with_loss_scaling_and_trains_as_float32():
    model, loss16 = _train_small_model("mixed_float16", O.Adam(0.01))
    assert model.layers[0].compute_dtype == "float16" and model.layers[0].kernel.dtype == ef.float32
    assert isinstance(model.optimizer, O.LossScaleOptimizer)  # compile wrapped it, as Keras does
    assert int(model.optimizer.iterations.numpy()) == 80
    _, loss32 = _train_small_model("float32", O.Adam(0.01))
    assert loss16 < 0.2 and abs(loss16 - loss32) < 0.05 * loss32


def test_swap_ema_weights_evaluates_with_the_averages():
    ef.keras.utils.set_random_seed(2)
    x = np.random.RandomState(0).normal(size=(32, 3)).astype("float32")
    y = x @ np.array([[1.0], [2.0], [-1.0]], "float32")
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    opt = O.SGD(0.05, use_ema=True, ema_momentum=0.9)
    model.compile(optimizer=opt, loss="mse")
    model.fit(x, y, epochs=3, batch_size=8, verbose=0)
    kernel = model.layers[0].kernel
    averages = opt._ema_averages([kernel])
    raw, ema = kernel.numpy().copy(), averages[0].numpy().copy()
    assert not np.allclose(raw, ema)
    swap = keras.callbacks.SwapEMAWeights()
    prediction = model.predict(x, verbose=0, callbacks=[swap])
    bias = model.layers[0].bias
    np.testing.assert_allclose(prediction, x @ ema + opt._ema_averages([bias])[0].numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(kernel.numpy(), raw)  # swapped back after predict
    with pytest.raises(ValueError, match="use_ema"):
        plain = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        plain.compile(optimizer="sgd", loss="mse")
        plain.predict(x, verbose=0, callbacks=[keras.callbacks.SwapEMAWeights()])


def test_layers_take_keras_activation_and_initializer_names_the_core_lacks():
    layer = keras.layers.Dense(2, activation="celu", kernel_initializer="orthogonal")
    out = layer(np.array([[-1.0, 0.5]], "float32"))
    kernel = layer.kernel.numpy()
    np.testing.assert_allclose(kernel.T @ kernel, np.eye(2), atol=1e-5)  # orthogonal columns
    pre = np.array([[-1.0, 0.5]], "float32") @ kernel + layer.bias.numpy()
    np.testing.assert_allclose(out.numpy(), np.where(pre > 0, pre, np.expm1(pre)), rtol=1e-5, atol=1e-6)
    assert layer.get_config()["activation"] == "celu"
    with pytest.raises(ValueError):
        keras.layers.Dense(2, activation="no_such_activation")


def test_sixteen_bit_variables_are_a_clear_error_for_every_optimizer():
    # bfloat16 rounds 0.999 to 1: an Adam-like 1 - beta_2^t would divide by zero. Refused, never NaN.
    for cls in (O.SGD, O.Adam, O.Nadam, O.Adamax, O.Lamb, O.Adagrad, O.Muon, O.ScheduleFreeAdamW):
        v = ef.Variable(np.ones((2, 2), "float32"), dtype="bfloat16")
        with pytest.raises(TypeError, match="float32 or float64"):
            cls(0.01).apply([ef.cast(ef.ones((2, 2)), "bfloat16")], [v])
        assert np.all(ef.cast(v, "float32").numpy() == 1.0)  # untouched


def test_updates_flush_subnormal_state_to_zero_as_tensorflow_does():
    # A converging model's optimizer state turns subnormal (slow on x86); TF's kernels flush it.
    import numpy as np
    import eagerflow as ef
    w = ef.Variable(np.full((1000,), 1e-39, dtype="float32"))
    ef.keras.optimizers.SGD(0.1).apply_gradients([(ef.zeros((1000,)), w)])
    assert np.all(w.numpy() == 0.0)
    m = ef.Variable(np.ones((8,), dtype="float32"))
    ef.keras.optimizers.Adam(1e-3).apply_gradients([(ef.fill((8,), 1e-30), m)])
    assert np.all(np.isfinite(m.numpy()))
    # Other ops keep subnormals.
    assert (ef.constant(np.float32(1e-39)) * 1.0).numpy() == np.float32(1e-39)
