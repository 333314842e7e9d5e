"""ef.random as tf.random (issue 31): TF's arguments and defaults, integer uniform draws, the
stateless_* family with TF's two-integer seeds, truncated_normal, shuffle, Generator (from_seed,
split, make_seeds; sequences that continue inside ef.function), global generators, split and
fold_in; and the seed rules (set_seed repeats a program, an op seed its own sequence)."""
import numpy as np
import pytest

import eagerflow as tf


def test_uniform_defaults_and_integer_draws():
    tf.random.set_seed(1)
    u = tf.random.uniform([1000])
    assert u.dtype == tf.float32 and u.shape == (1000,)
    assert 0.0 <= float(tf.reduce_min(u)) and float(tf.reduce_max(u)) < 1.0
    i = tf.random.uniform([5000], minval=-3, maxval=4, dtype=tf.int32)
    assert i.dtype == tf.int32
    assert set(np.unique(i.numpy())) == set(range(-3, 4))
    with pytest.raises(ValueError, match="maxval"):
        tf.random.uniform([3], dtype=tf.int64)
    r = tf.random.uniform([2000], 5.0, 7.0, dtype=tf.float64)
    assert r.dtype == tf.float64 and 5.0 <= r.numpy().min() and r.numpy().max() < 7.0


def test_set_seed_repeats_and_op_seeds_make_sequences():
    tf.random.set_seed(7)
    a = [tf.random.normal([3], seed=1).numpy() for _ in range(2)]
    tf.random.set_seed(7)
    b = [tf.random.normal([3], seed=1).numpy() for _ in range(2)]
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0], a[1])  # the k-th call draws the k-th set


def test_truncated_normal_bounds_and_moments():
    z = tf.random.truncated_normal([100000], mean=2.0, stddev=3.0, seed=4).numpy()
    assert z.min() >= 2.0 - 6.0 and z.max() <= 2.0 + 6.0
    assert abs(z.mean() - 2.0) < 0.05
    assert abs(z.std() - 3.0 * 0.8796) < 0.05


@pytest.mark.parametrize("fn", ["stateless_uniform", "stateless_normal", "stateless_truncated_normal"])
def test_stateless_draws_take_tf_seeds(fn):
    draw = getattr(tf.random, fn)
    a = draw([4, 3], seed=[1, 2])
    np.testing.assert_array_equal(a.numpy(), draw([4, 3], seed=(1, 2)).numpy())
    np.testing.assert_array_equal(a.numpy(), draw([4, 3], seed=tf.constant([1, 2], tf.int64)).numpy())
    assert not np.array_equal(a.numpy(), draw([4, 3], seed=[2, 1]).numpy())
    traced = tf.function(lambda: draw([4, 3], seed=[1, 2]))
    np.testing.assert_array_equal(traced().numpy(), a.numpy())
    np.testing.assert_array_equal(traced().numpy(), a.numpy())
    with pytest.raises(ValueError):
        draw([2], seed=[1, 2, 3])


def test_stateless_integer_uniform():
    i = tf.random.stateless_uniform([3000], seed=[3, 4], minval=10, maxval=13, dtype=tf.int64)
    assert i.dtype == tf.int64 and set(np.unique(i.numpy())) == {10, 11, 12}
    with pytest.raises(ValueError):
        tf.random.stateless_uniform([3], seed=[3, 4], dtype=tf.int32)


def test_shuffle_permutes_the_first_axis():
    x = np.arange(20).reshape(10, 2)
    s = tf.random.shuffle(x, seed=3).numpy()
    assert sorted(map(tuple, s)) == sorted(map(tuple, x))
    assert (s[:, 1] == s[:, 0] + 1).all()  # rows stay whole
    with pytest.raises(ValueError):
        tf.random.shuffle(tf.constant(3.0))


def test_categorical_as_tf():
    logits = tf.math.log([[0.5, 0.5, 0.0 + 1e-30], [0.0 + 1e-30, 0.0 + 1e-30, 1.0]])
    c = tf.random.categorical(logits, 200, seed=5)
    assert c.dtype == tf.int64 and c.shape == (2, 200)
    assert set(np.unique(c.numpy()[0])) == {0, 1} and (c.numpy()[1] == 2).all()
    s = tf.random.stateless_categorical(logits, 50, seed=[1, 1], dtype=tf.int32)
    assert s.dtype == tf.int32
    np.testing.assert_array_equal(s.numpy(), tf.random.stateless_categorical(logits, 50, seed=[1, 1], dtype=tf.int32).numpy())


def test_generator_from_seed_repeats_and_continues_in_functions():
    g1, g2 = tf.random.Generator.from_seed(42), tf.random.Generator.from_seed(42)
    a1, a2 = g1.normal([5]), g2.normal([5])
    np.testing.assert_array_equal(a1.numpy(), a2.numpy())
    b1 = g1.uniform([5])
    assert not np.array_equal(g1.uniform([5]).numpy(), b1.numpy())  # the sequence goes on
    other = tf.random.Generator.from_seed(43).normal([5])
    assert not np.array_equal(other.numpy(), a1.numpy())
    g = tf.random.Generator.from_seed(1)
    f = tf.function(lambda: g.normal([3]))
    x, y = f(), f()
    assert not np.array_equal(x.numpy(), y.numpy())  # each call of the traced function draws anew
    h = tf.random.Generator.from_seed(1)
    np.testing.assert_array_equal(h.normal([3]).numpy(), x.numpy())
    np.testing.assert_array_equal(h.normal([3]).numpy(), y.numpy())


def test_generator_split_seeds_state_and_copies():
    g = tf.random.Generator.from_seed(9)
    children = g.split(3)
    assert len(children) == 3
    draws = [c.uniform([8]).numpy() for c in children]
    assert not np.array_equal(draws[0], draws[1]) and not np.array_equal(draws[1], draws[2])
    seeds = g.make_seeds(4)
    assert seeds.shape == (2, 4) and seeds.dtype == tf.int64
    copy = tf.random.Generator(copy_from=g)
    np.testing.assert_array_equal(copy.normal([4]).numpy(), g.normal([4]).numpy())
    state = g.state.numpy()
    assert state.shape == (2,) and state[1] > 0
    ints = g.uniform_full_int([100], dtype=tf.int32)
    assert ints.dtype == tf.int32
    g.reset_from_seed(9)
    np.testing.assert_array_equal(g.uniform([8]).numpy(), tf.random.Generator.from_seed(9).uniform([8]).numpy())
    assert isinstance(tf.random.Generator.from_non_deterministic_state().normal([2]), tf.Tensor)


def test_global_generator_and_stateless_seed_helpers():
    g = tf.random.Generator.from_seed(5)
    tf.random.set_global_generator(g)
    assert tf.random.get_global_generator() is g
    with pytest.raises(TypeError):
        tf.random.set_global_generator(5)
    s = tf.random.split([1, 2], num=3)
    assert s.shape == (3, 2) and s.dtype == tf.int64 and len({tuple(r) for r in s.numpy()}) == 3
    np.testing.assert_array_equal(tf.random.split([1, 2], 3).numpy(), s.numpy())
    f = tf.random.fold_in([1, 2], 7)
    assert f.shape == (2,) and not np.array_equal(f.numpy(), tf.random.fold_in([1, 2], 8).numpy())
    seeded = tf.random.stateless_normal([3], seed=f)
    np.testing.assert_array_equal(seeded.numpy(), tf.random.stateless_normal([3], seed=f).numpy())
