"""tf.train.Checkpoint of a tf.data iterator's position (python/eagerflow/_iterator_state.py).

Each test compares the elements after a restore with those of an uninterrupted run of a dataset
built the same way: the restored iterator must continue that very sequence, shuffled pipelines
included, or refuse with an error naming what prevents it."""
import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import eagerflow as tf
from eagerflow import errors


def values(elements):
    """Elements as nested Python lists (comparable with ==)."""
    out = []
    for e in elements:
        if isinstance(e, tuple):
            out.append(tuple(x.numpy().tolist() for x in e))
        elif isinstance(e, dict):
            out.append({k: v.numpy().tolist() for k, v in e.items()})
        else:
            out.append(e.numpy().tolist())
    return out


def take(it, n):
    return values([next(it) for _ in range(n)])


def interrupted(make, k, extra, tmp_path, name="ck"):
    """Consumes k elements, saves, consumes `extra` more, restores: the rest of the sequence."""
    it = iter(make())
    ckpt = tf.train.Checkpoint(step=tf.Variable(0), iterator=it)
    first = take(it, k)
    path = ckpt.save(str(tmp_path / name))
    take(it, extra)
    ckpt.restore(path).assert_consumed()
    return first, values(list(it))


def check_continues(make, k, tmp_path, extra=3):
    reference = values(list(iter(make())))
    first, rest = interrupted(make, k, extra, tmp_path)
    assert first + rest == reference
    return reference


def test_deterministic_pipeline_continues(tmp_path):
    def make():
        return (tf.data.Dataset.range(20).map(lambda x: x * 3).filter(lambda x: x % 2 == 0)
                .batch(3).prefetch(2).repeat(2))
    reference = check_continues(make, 5, tmp_path)
    evens = [x * 3 for x in range(20) if (x * 3) % 2 == 0]
    batches = [evens[i:i + 3] for i in range(0, len(evens), 3)]
    assert reference == batches * 2


def test_every_position_including_start_and_end(tmp_path):
    def make():
        return tf.data.Dataset.range(6).batch(4)
    for k in range(3):  # 0: before the first element; 2: after the last
        first, rest = interrupted(make, k, 0 if k == 2 else 1, tmp_path, name=f"p{k}")
        assert first + rest == [[0, 1, 2, 3], [4, 5]]


def test_seeded_shuffle_over_epochs(tmp_path):
    def make():
        return tf.data.Dataset.range(12).shuffle(12, seed=7).repeat(3).batch(5)
    reference = check_continues(make, 4, tmp_path)
    flat = sum(reference, [])
    epochs = [flat[i * 12:(i + 1) * 12] for i in range(3)]
    assert all(sorted(e) == list(range(12)) for e in epochs)
    assert epochs[0] != epochs[1]  # reshuffled each epoch, as TF's default


def test_seeded_shuffle_first_iterator_keeps_its_order(tmp_path):
    # the checkpointable iterator gives the order a seeded shuffle gave before: the same for the
    # first iterator of any dataset built the same way, a new one for the next iterators
    a = values(tf.data.Dataset.range(10).shuffle(10, seed=3))
    ds = tf.data.Dataset.range(10).shuffle(10, seed=3)
    first, second = values(ds), values(ds)
    assert first == a and second != first and sorted(second) == list(range(10))


def test_later_iterator_of_a_used_dataset(tmp_path):
    ds = tf.data.Dataset.range(16).shuffle(8, seed=1)
    values(ds)
    values(ds)  # the next iterator gets a third order; its restore must replay that one
    it = iter(ds)
    ckpt = tf.train.Checkpoint(iterator=it)
    head = take(it, 5)
    path = ckpt.write(str(tmp_path / "w"))
    tail = values(list(it))
    ckpt.read(path)
    assert values(list(it)) == tail
    assert sorted(head + tail) == list(range(16))


def test_unseeded_shuffle_restores_same_sequence(tmp_path):
    def make():
        return tf.data.Dataset.range(30).shuffle(10).batch(4)
    it = iter(make())
    ckpt = tf.train.Checkpoint(iterator=it)
    take(it, 2)
    path = ckpt.save(str(tmp_path / "u"))
    rest = values(list(it))
    tf.random.uniform([5])  # the global generator moves on: the saved seed is what counts
    ckpt.restore(path)
    assert values(list(it)) == rest


def test_reshuffle_false_keeps_one_order_per_epoch(tmp_path):
    for seed in (5, None):
        def make():
            return tf.data.Dataset.range(8).shuffle(8, seed=seed, reshuffle_each_iteration=False).repeat(2)
        it = iter(make())
        ckpt = tf.train.Checkpoint(iterator=it)
        head = take(it, 3)
        path = ckpt.save(str(tmp_path / f"r{seed}"))
        tail = values(list(it))
        ckpt.restore(path)
        assert values(list(it)) == tail
        seq = head + tail
        assert seq[:8] == seq[8:] and sorted(seq[:8]) == list(range(8))


def test_zip_interleave_enumerate_padded_batch_take_skip(tmp_path):
    def make():
        a = tf.data.Dataset.range(40).shuffle(16, seed=2)
        b = tf.data.Dataset.range(100, 140)
        inner = tf.data.Dataset.range(1, 6).interleave(
            lambda n: tf.data.Dataset.range(n).map(lambda x: x + 10 * n), cycle_length=2, block_length=2)
        z = tf.data.Dataset.zip((a, b)).skip(3).take(30).enumerate()
        return tf.data.Dataset.zip((z, inner.padded_batch(2).repeat()))
    check_continues(make, 6, tmp_path)


def test_cache_and_dict_elements(tmp_path):
    def make():
        ds = tf.data.Dataset.from_tensor_slices({"x": np.arange(12, dtype=np.float32), "y": np.arange(12) % 3})
        return ds.cache().shuffle(6, seed=4).batch(5).repeat(2)
    check_continues(make, 3, tmp_path)


def test_generator_that_repeats_itself(tmp_path):
    def make():
        return tf.data.Dataset.from_generator(lambda: iter(range(9)),
                                              output_signature=tf.TensorSpec([], tf.int64)).batch(2)
    check_continues(make, 2, tmp_path)


def test_get_next_and_optional_count(tmp_path):
    it = iter(tf.data.Dataset.range(5))
    ckpt = tf.train.Checkpoint(iterator=it)
    it.get_next()
    it.get_next_as_optional()
    path = ckpt.save(str(tmp_path / "g"))
    next(it)
    ckpt.restore(path)
    assert int(it.get_next()) == 2


def test_checkpoint_manager_and_list_variables(tmp_path):
    def make():
        return tf.data.Dataset.range(10).shuffle(10, seed=9).batch(3)
    it = iter(make())
    step = tf.Variable(0)
    ckpt = tf.train.Checkpoint(step=step, iterator=it)
    manager = tf.train.CheckpointManager(ckpt, str(tmp_path / "m"), max_to_keep=2)
    take(it, 1)
    step.assign(1)
    manager.save()
    rest = values(list(it))
    step.assign(5)
    ckpt.restore(manager.latest_checkpoint).assert_consumed()
    assert int(step.numpy()) == 1 and values(list(it)) == rest
    names = dict(tf.train.list_variables(manager.latest_checkpoint))
    assert names["iterator/.ATTRIBUTES/ITERATOR_STATE"] == [1]
    state = json.loads(tf.train.load_variable(manager.latest_checkpoint, "iterator/.ATTRIBUTES/ITERATOR_STATE")[0])
    assert state["count"] == 1


def test_deferred_restore_into_an_iterator_set_later(tmp_path):
    ds = tf.data.Dataset.range(7)
    src = tf.train.Checkpoint(iterator=iter(ds))
    take(src.iterator, 4)
    path = src.save(str(tmp_path / "d"))
    dst = tf.train.Checkpoint()
    status = dst.restore(path)
    dst.iterator = iter(tf.data.Dataset.range(7))
    status.assert_consumed()
    assert values(list(dst.iterator)) == [4, 5, 6]


def test_parallel_nondeterministic_map_is_refused(tmp_path):
    ds = tf.data.Dataset.range(8).map(lambda x: x + 1, num_parallel_calls=2, deterministic=False)
    ckpt = tf.train.Checkpoint(iterator=iter(ds))
    with pytest.raises(errors.FailedPreconditionError, match=r"map\(num_parallel_calls=\.\.\., deterministic=False\)"):
        ckpt.save(str(tmp_path / "n"))
    ok = tf.data.Dataset.range(8).map(lambda x: x + 1, num_parallel_calls=2, deterministic=True)
    check_continues(lambda: ok, 3, tmp_path)


def test_interleave_of_unseeded_shuffles_is_refused(tmp_path):
    ds = tf.data.Dataset.range(3).interleave(lambda n: tf.data.Dataset.range(4).shuffle(4), cycle_length=2)
    it = iter(ds)
    ckpt = tf.train.Checkpoint(iterator=it)
    take(it, 2)
    with pytest.raises(errors.FailedPreconditionError, match="interleave .*shuffle without a seed"):
        ckpt.save(str(tmp_path / "i"))


def test_stateful_map_and_filter_functions_are_refused_on_save(tmp_path):
    def noisy(x):
        return tf.cast(tf.random.uniform([]) * 1000, tf.int64) + x

    def doubled(x):
        return tf.py_function(lambda v: v * 2, [x], tf.int64)
    for ds, op in ((tf.data.Dataset.range(10).map(noisy), "map's function noisy uses random_uniform"),
                   (tf.data.Dataset.range(10).map(doubled), "py_function"),
                   (tf.data.Dataset.range(10).filter(lambda x: tf.random.uniform([]) < 0.5), "filter's function")):
        it = iter(ds)
        ckpt = tf.train.Checkpoint(iterator=it)
        next(it)
        with pytest.raises(errors.FailedPreconditionError, match=op):
            ckpt.save(str(tmp_path / "rnd"))
    stateless = tf.data.Dataset.range(10).map(
        lambda x: x + tf.cast(10 * tf.random.stateless_uniform([], seed=[1, 2]), tf.int64))
    check_continues(lambda: stateless, 4, tmp_path)


@pytest.mark.parametrize("policy", ["WARN", "IGNORE"])
def test_external_state_policy_saves_the_position_anyway(tmp_path, policy):
    options = tf.data.Options()
    options.experimental_external_state_policy = getattr(tf.data.experimental.ExternalStatePolicy, policy)
    ds = tf.data.Dataset.range(10).map(lambda x: x * 100 + tf.cast(tf.random.uniform([]) * 10, tf.int64))
    it = iter(ds.with_options(options))
    ckpt = tf.train.Checkpoint(iterator=it)
    take(it, 4)
    if policy == "WARN":
        with pytest.warns(UserWarning, match="random_uniform, which is stateful"):
            path = ckpt.save(str(tmp_path / policy))
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            path = ckpt.save(str(tmp_path / policy))
    take(it, 3)
    ckpt.restore(path)
    assert [v // 100 for v in values(list(it))] == [4, 5, 6, 7, 8, 9]  # the position; the noise is new


def test_nondeterministic_generator_fails_on_restore_not_silently(tmp_path):
    rng = np.random.default_rng(0)
    ds = tf.data.Dataset.from_generator(lambda: iter(rng.integers(0, 10 ** 9, size=10)),
                                        output_signature=tf.TensorSpec([], tf.int64))
    it = iter(ds)
    ckpt = tf.train.Checkpoint(iterator=it)
    take(it, 3)
    path = ckpt.save(str(tmp_path / "gen"))
    nxt = take(it, 1)
    with pytest.raises(errors.FailedPreconditionError, match="does not give the same elements.*from_generator"):
        ckpt.restore(path)
    assert len(nxt) == 1 and len(values(list(it))) == 6  # left where it was


def test_restore_into_a_differently_built_dataset(tmp_path):
    src = tf.train.Checkpoint(iterator=iter(tf.data.Dataset.range(10).batch(2)))
    path = src.save(str(tmp_path / "s"))
    dst = tf.train.Checkpoint(iterator=iter(tf.data.Dataset.range(10).batch(3)))
    with pytest.raises(errors.InvalidArgumentError, match="built as batch"):
        dst.restore(path)


def test_shorter_dataset_fails_on_restore(tmp_path):
    state = {"n": 8}

    def gen():
        return iter(range(state["n"]))
    ds = tf.data.Dataset.from_generator(gen, output_signature=tf.TensorSpec([], tf.int64))
    it = iter(ds)
    ckpt = tf.train.Checkpoint(iterator=it)
    take(it, 6)
    path = ckpt.save(str(tmp_path / "short"))
    state["n"] = 4
    with pytest.raises(errors.FailedPreconditionError, match="element 6.*ended before it"):
        ckpt.restore(path)


_FRESH = textwrap.dedent("""
    import json, sys
    import eagerflow as tf
    mode, directory = sys.argv[1], sys.argv[2]
    ds = (tf.data.Dataset.range(50).shuffle(20).map(lambda x: x * 2).batch(4)
          .repeat(2).prefetch(tf.data.AUTOTUNE))
    it = iter(ds)
    ckpt = tf.train.Checkpoint(step=tf.Variable(0), iterator=it)
    manager = tf.train.CheckpointManager(ckpt, directory, max_to_keep=1)
    if mode == "save":
        for _ in range(9):
            next(it)
        ckpt.step.assign(9)
        manager.save()
    else:
        ckpt.restore(manager.latest_checkpoint).assert_consumed()
    print(json.dumps({"step": int(ckpt.step.numpy()), "rest": [b.numpy().tolist() for b in it]}))
""")


def test_fresh_process_continues_unseeded_shuffle(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(_FRESH)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))

    def run(mode):
        out = subprocess.run([sys.executable, str(script), mode, str(tmp_path / "ck")], capture_output=True,
                             text=True, env=env, timeout=300)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])
    saved = run("save")
    restored = run("restore")
    assert restored["step"] == 9 and restored["rest"] == saved["rest"]
    assert len(saved["rest"]) == 26 - 9


def test_save_again_after_restore(tmp_path):
    def make():
        return tf.data.Dataset.range(30).shuffle(30, seed=11).batch(2).repeat(2)
    reference = values(list(iter(make())))
    it = iter(make())
    ckpt = tf.train.Checkpoint(iterator=it)
    take(it, 4)
    first = ckpt.save(str(tmp_path / "a"))
    take(it, 6)
    ckpt.restore(first)
    take(it, 5)  # at 9 now
    second = ckpt.save(str(tmp_path / "a"))
    take(it, 2)
    ckpt.restore(second)
    assert values(list(it)) == reference[9:]


def test_far_position_replays_in_the_pipeline(tmp_path):
    # the replay runs in C++ (Dataset.skip): a position far into a long pipeline restores
    def make():
        return tf.data.Dataset.range(10 ** 7).map(lambda x: x * 2).batch(10)
    src = tf.train.Checkpoint(iterator=iter(make()))
    for _ in range(20_000):
        next(src.iterator)
    path = src.save(str(tmp_path / "far"))
    dst = tf.train.Checkpoint(iterator=iter(make()))
    dst.restore(path).assert_consumed()
    assert next(dst.iterator).numpy().tolist() == [2 * x for x in range(200_000, 200_010)]


def test_seeds_follow_the_pipeline_shuffle_formula():
    # _data_recipe.py reproduces the C++ shuffle's per-pass seed (seed * C + pass) and its
    # unseeded draw: if src/data/dataset_transform.cpp changes them, these orders part ways
    from eagerflow import _data_recipe, data

    def raw(ds):
        return [int(x) for x in data._cpp_iter(ds)]
    ds = tf.data.Dataset.range(20).shuffle(20, seed=5)
    raw(ds)
    second_pass = raw(ds)
    shifted = (5 + _data_recipe._GOLDEN_INV) % (1 << 64)  # pass 1 of seed 5 as pass 0 of another seed
    assert raw(tf.data.Dataset.range(20).shuffle(20, seed=shifted)) == second_pass
    tf.random.set_seed(3)
    before = raw(tf.data.Dataset.range(20).shuffle(20))
    tf.random.set_seed(3)
    assert [int(x) for x in tf.data.Dataset.range(20).shuffle(20)] == before


def test_unseeded_shuffle_read_inside_a_trace():
    # the iterator's seed is drawn eagerly (init_scope), not as an op of the trace
    ds = tf.data.Dataset.range(6).shuffle(6)

    @tf.function
    def total():
        s = tf.constant(0, tf.int64)
        for x in ds:
            s += x
        return s
    assert int(total()) == 15


def test_cache_over_a_seeded_shuffle(tmp_path):
    # the cache keeps its first pass: every epoch and the replay read that order
    def make():
        return tf.data.Dataset.range(10).shuffle(10, seed=8).cache().repeat(3)
    reference = check_continues(make, 13, tmp_path)
    assert reference[:10] == reference[10:20] == reference[20:]
