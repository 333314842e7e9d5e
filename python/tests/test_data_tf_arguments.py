"""tf.data's argument lists and small methods: interleave/batch hints, name=, flat_map,
from_generator values read by their signature, py_function run for its effect."""
import time

import numpy as np

import eagerflow as ef

D = ef.data.Dataset


def _values(ds):
    return [np.asarray(x).tolist() for x in ds.as_numpy_iterator()]


def test_interleave_takes_tfs_hints_and_keeps_the_order():
    ds = D.range(3).interleave(lambda x: D.range(x * 10, x * 10 + 3), cycle_length=2,
                               num_parallel_calls=ef.data.AUTOTUNE, deterministic=True, name="i")
    assert _values(ds) == [0, 10, 1, 11, 2, 12, 20, 21, 22]
    # block_length=None is TF's default of 1
    assert _values(D.range(2).interleave(lambda x: D.range(2), cycle_length=2, block_length=None)) == [0, 0, 1, 1]


def test_name_and_batch_hints_change_nothing():
    ds = D.range(7).map(lambda x: x * 2, name="m").filter(lambda x: x > 2, name="f")
    ds = ds.batch(2, num_parallel_calls=2, deterministic=False, name="b").prefetch(1, name="p")
    assert _values(ds) == [[4, 6], [8, 10], [12]]


def test_flat_map():
    assert _values(D.range(4).flat_map(lambda x: D.range(x))) == [0, 0, 1, 0, 1, 2]
    assert _values(D.from_tensor_slices([[1, 2], [3, 4]]).flat_map(D.from_tensor_slices)) == [1, 2, 3, 4]


def test_from_generator_tuple_for_one_spec():
    def gen(n):
        for i in range(n):
            yield (i,)

    ds = D.from_generator(gen, output_signature=ef.TensorSpec(shape=(1,), dtype=ef.int64), args=(3,))
    assert _values(ds) == [[0], [1], [2]]


def test_from_generator_lists_inside_a_tuple_signature():
    def gen():
        yield [("a",), ("b",)], [(1.0, 2.0)]

    ds = D.from_generator(gen, output_types=(ef.string, ef.float32), output_shapes=((2, 1), (1, 2)))
    (s, f), = list(ds.as_numpy_iterator())
    assert s.tolist() == [[b"a"], [b"b"]]
    np.testing.assert_allclose(f, [[1.0, 2.0]])


def test_py_function_for_its_effect_returns_an_empty_list():
    calls = []
    assert ef.py_function(lambda: calls.append(1), [], ()) == []

    def step(s):
        ef.py_function(lambda: time.sleep(0), [], ())
        return s + 1

    assert _values(D.range(3).map(step)) == [1, 2, 3]
    assert len(calls) == 1


def test_py_function_with_string_inputs_in_a_trace():
    def upper(s):
        return ef.py_function(lambda t: np.char.upper(t.numpy()), [s], ef.string)

    assert _values(D.from_tensor_slices(["ab", "c"]).map(upper)) == [b"AB", b"C"]
