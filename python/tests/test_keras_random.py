"""ef.keras.random (Keras 3's keras.random) and ef.keras.backend: shapes, dtypes, Keras' seed rules
(an int seed repeats, a SeedGenerator advances, also inside ef.function), distributions' moments."""
import numpy as np
import pytest

import eagerflow as ef

kr = ef.keras.random
ops = ef.keras.ops


DRAWS = [
    ("normal", lambda seed: kr.normal((4000,), mean=2.0, stddev=3.0, seed=seed), "float32", 2.0, 3.0),
    ("uniform", lambda seed: kr.uniform((4000,), minval=-1.0, maxval=3.0, seed=seed), "float32", 1.0, 4 / np.sqrt(12)),
    ("truncated_normal", lambda seed: kr.truncated_normal((4000,), stddev=2.0, seed=seed), "float32", 0.0, 2.0 * 0.8796),
    ("randint", lambda seed: kr.randint((4000,), 0, 10, seed=seed), "int32", 4.5, np.sqrt(99 / 12)),
    ("gamma", lambda seed: kr.gamma((4000,), 3.0, seed=seed), "float32", 3.0, np.sqrt(3.0)),
    ("gamma_small_alpha", lambda seed: kr.gamma((4000,), 0.5, seed=seed), "float32", 0.5, np.sqrt(0.5)),
    ("beta", lambda seed: kr.beta((4000,), 2.0, 3.0, seed=seed), "float32", 0.4, np.sqrt(6 / (25 * 6))),
    ("binomial", lambda seed: kr.binomial((4000,), 10, 0.3, seed=seed), "float32", 3.0, np.sqrt(2.1)),
    ("categorical", lambda seed: kr.categorical(np.log([[0.2, 0.8]]).astype("float32"), 4000, seed=seed)[0], "int32",
     0.8, 0.4),
]


@pytest.mark.parametrize("name,draw,dtype,mean,std", DRAWS, ids=[d[0] for d in DRAWS])
@pytest.mark.parametrize("seed_kind", ["int", "generator", "none"])
def test_draw_moments_and_dtype(name, draw, dtype, mean, std, seed_kind):
    seed = {"int": 7, "generator": kr.SeedGenerator(3), "none": None}[seed_kind]
    x = draw(seed)
    assert x.shape == (4000,) and ops.dtype(x) == dtype
    v = x.numpy().astype("float64")
    assert abs(v.mean() - mean) < 5 * std / np.sqrt(4000) + 1e-3
    assert abs(v.std() - std) < 0.1 * std
    if name == "truncated_normal":
        assert np.all(np.abs(v) <= 4.0 + 1e-6)
    if name == "randint":
        assert v.min() == 0 and v.max() == 9


@pytest.mark.parametrize("name,draw", [(d[0], d[1]) for d in DRAWS], ids=[d[0] for d in DRAWS])
def test_seed_rules(name, draw):
    # an int seed gives the same numbers on every call (eager and traced)
    a, b = draw(11).numpy(), draw(11).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, draw(12).numpy())
    f = ef.function(lambda: draw(11))
    np.testing.assert_array_equal(f().numpy(), f().numpy())
    # a SeedGenerator advances: a new set each call, the same sequence from the same seed
    g1, g2 = kr.SeedGenerator(5), kr.SeedGenerator(5)
    first, second = draw(g1).numpy(), draw(g1).numpy()
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(draw(g2).numpy(), first)
    gen = kr.SeedGenerator(9)
    traced = ef.function(lambda: draw(gen))
    assert not np.array_equal(traced().numpy(), traced().numpy())


def test_dropout_and_shuffle():
    x = np.ones((200, 50), "float32")
    y = kr.dropout(x, 0.25, seed=1).numpy()
    kept = y != 0
    assert abs(kept.mean() - 0.75) < 0.02
    np.testing.assert_allclose(y[kept], 1 / 0.75, rtol=1e-6)
    y = kr.dropout(x, 0.5, noise_shape=(1, 50), seed=kr.SeedGenerator(2)).numpy()
    assert np.all((y == 0).all(0) | (y != 0).all(0))  # one mask shared along the batch
    with pytest.raises(ValueError):
        kr.dropout(x, 1.5)
    v = np.arange(20).reshape(4, 5)
    s = kr.shuffle(v, axis=1, seed=3).numpy()
    assert sorted(s[0].tolist()) == list(range(5)) and np.array_equal(s, v[:, s[0]])  # whole columns move
    assert not np.array_equal(s, v)
    np.testing.assert_array_equal(np.sort(kr.shuffle(v, seed=kr.SeedGenerator(1)).numpy(), 0), v)


def test_seed_errors_and_generator_api():
    with pytest.raises(ValueError):
        kr.normal((2,), seed="abc")
    with pytest.raises(ValueError):
        kr.SeedGenerator(1.5)
    with pytest.raises(ValueError):
        kr.uniform((2,), dtype="int32")
    with pytest.raises(ValueError):
        kr.randint((2,), 0, 3, dtype="float32")
    with pytest.raises(ValueError):
        kr.categorical(np.zeros(3, "float32"), 2)
    g = kr.SeedGenerator(4)
    s = g.next()
    assert s.shape == (2,) and ops.dtype(s) == "int32" and not np.array_equal(s.numpy(), g.next().numpy())
    assert kr.SeedGenerator.from_config(g.get_config()).get_config() == {"seed": 4}
    assert ops.dtype(kr.normal((2,), dtype="float16")) == "float16"
    assert ops.dtype(kr.randint((2,), 0, 5, dtype="int64")) == "int64"


def test_backend_basics():
    be = ef.keras.backend
    assert be.backend() == "tensorflow"  # Keras code takes its TensorFlow path, which eagerflow runs
    assert be.floatx() == "float32" and be.epsilon() == 1e-7 and be.image_data_format() == "channels_last"
    be.set_image_data_format("channels_last")
    with pytest.raises(ValueError):
        be.set_image_data_format("channels_first")
    with pytest.raises(ValueError):
        be.set_image_data_format("nhwc")
    try:
        be.set_floatx("float64")
        assert be.floatx() == "float64"
        assert ops.dtype(ops.mean(np.arange(3))) == "float64"  # floatx drives the float results of integers
        assert ops.dtype(ops.ones(2)) == "float64"
    finally:
        be.set_floatx("float32")
    assert be.standardize_dtype("float") == "float32" and be.standardize_dtype(np.int64) == "int64"
    assert be.standardize_dtype(ef.bfloat16) == "bfloat16"
    with pytest.raises(ValueError):
        be.standardize_dtype("floaty")
    assert be.is_float_dtype("float16") and not be.is_float_dtype("int8") and be.is_int_dtype("uint8")
    assert be.result_type("int32", "float16") == "float16"
    be.clear_session()
    assert be.get_uid("x") == 1 and be.get_uid("x") == 2 and be.get_uid("y") == 1
    be.clear_session()
    assert be.get_uid("x") == 1
    assert be.is_keras_tensor(ef.keras.Input(shape=(2,))) and not be.is_keras_tensor(ef.ones([2]))
    assert ef.keras.backend is ef.keras.backend and ef.keras.ops.sum is ef.keras.ops.numpy.sum
