"""tf.random.Generator in tf.train.Checkpoint: draws after a restore repeat those after the save."""
import numpy as np

import eagerflow as tf


def _draws(g, n=3):
    return [float(g.normal([])) for _ in range(n)]


def test_restore_repeats_the_stream_after_the_save(tmp_path):
    g = tf.random.Generator.from_seed(1)
    cp = tf.train.Checkpoint(generator=g)
    g.normal([])
    path = cp.write(str(tmp_path / "ckpt"))
    after_save = _draws(g)
    cp.restore(path)
    assert _draws(g) == after_save
    assert int(g.state.numpy()[1]) > 0


def test_a_fresh_generator_restores_another_ones_state(tmp_path):
    g = tf.random.Generator.from_seed(7)
    g.uniform([4])
    path = tf.train.Checkpoint(gen=g).write(str(tmp_path / "ckpt"))
    expected = _draws(g)
    other = tf.random.Generator.from_seed(99)  # another seed: the restore replaces it
    tf.train.Checkpoint(gen=other).restore(path).assert_consumed()
    assert _draws(other) == expected
    np.testing.assert_array_equal(other.state.numpy()[0], g.state.numpy()[0])


def test_traced_draws_follow_a_restore(tmp_path):
    g = tf.random.Generator.from_seed(3)

    @tf.function
    def draw():
        return g.normal([])
    cp = tf.train.Checkpoint(g=g)
    path = cp.write(str(tmp_path / "ckpt"))
    first = [float(draw()) for _ in range(2)]
    cp.restore(path)
    assert [float(draw()) for _ in range(2)] == first
    assert draw.experimental_get_tracing_count() == 1


def test_the_state_is_saved_under_tfs_name(tmp_path):
    g = tf.random.Generator.from_seed(5)
    path = tf.train.Checkpoint(generator=g).write(str(tmp_path / "ckpt"))
    names = [n for n, _ in tf.train.list_variables(path)]
    assert "generator/state/.ATTRIBUTES/VARIABLE_VALUE" in names
