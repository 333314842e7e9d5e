"""ef.data.Dataset from Python: sources, map traced once (Python body at trace time only),
generators under the GIL on the pipeline's threads, iteration giving numpy-convertible
tensors, errors with element indices, early stops, and Model.fit / evaluate / predict."""
import os
import threading

import numpy as np
import pytest

import eagerflow as ef

Dataset = ef.data.Dataset


def values(ds):
    return [np.asarray(e).tolist() for e in ds]


def test_slices_batch_and_numpy():
    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    y = np.arange(6, dtype=np.int64)
    ds = Dataset.from_tensor_slices((x, y)).batch(4)
    assert ds.cardinality() == 2 and len(ds) == 2
    batches = list(ds)
    assert np.asarray(batches[0][0]).shape == (4, 2)
    np.testing.assert_array_equal(np.asarray(batches[1][1]), [4, 5])
    d = Dataset.from_tensor_slices({"b": y, "a": x})
    first = next(iter(d))
    assert sorted(first) == ["a", "b"] and int(np.asarray(first["b"])) == 0
    assert Dataset.range(5).repeat().cardinality() == ef.data.INFINITE_CARDINALITY
    assert Dataset.range(5).filter(lambda v: v > 2).cardinality() == ef.data.UNKNOWN_CARDINALITY


def test_map_traces_python_once_and_keeps_order_on_threads():
    calls = []

    def f(x, y):
        calls.append(1)  # Python runs when tracing only
        return x * 2.0, y + 1

    x = np.arange(100, dtype=np.float32)
    y = np.arange(100, dtype=np.int64)
    ds = Dataset.from_tensor_slices((x, y)).map(f, num_parallel_calls=2).prefetch(ef.data.AUTOTUNE)
    out = [(float(np.asarray(a)), int(np.asarray(b))) for a, b in ds]
    assert out == [(2.0 * i, i + 1) for i in range(100)]
    list(ds)
    assert len(calls) == 1


def test_generator_runs_under_the_gil_and_errors_name_the_element():
    def gen():
        for i in range(6):
            yield np.full((i % 3 + 1,), i, dtype=np.int64)

    spec = ef.TensorSpec(shape=(None,), dtype="int32")
    ds = Dataset.from_generator(gen, output_signature=spec).padded_batch(3, padding_values=-1).prefetch(2)
    got = values(ds)
    assert got[0] == [[0, -1, -1], [1, 1, -1], [2, 2, 2]]
    assert np.asarray(next(iter(ds))).dtype == np.int32  # int64 values into the declared int32

    def bad():
        yield np.zeros((2,), np.int32)
        raise RuntimeError("generator broke")

    with pytest.raises(ef.Error, match=r"(?s)element 1.*generator broke"):
        list(Dataset.from_generator(bad, output_signature=spec).map(lambda v: v + 1, num_parallel_calls=2))

    def wrong():
        yield np.zeros((2, 2), np.float32)

    with pytest.raises(ef.Error, match=r"element 0.*int32\[\?\]"):
        list(Dataset.from_generator(wrong, output_signature=spec))


def test_map_error_at_run_time_names_the_element():
    def gen():
        for i in range(10):
            yield np.zeros((4 if i == 6 else 3,), np.float32)

    ds = Dataset.from_generator(gen, output_signature=ef.TensorSpec((None,), "float32"))
    ds = ds.map(lambda v: ef.reshape(v, (3, 1)), num_parallel_calls=3)
    seen = 0
    with pytest.raises(ef.Error, match="map failed on element 6"):
        for _ in ds:
            seen += 1
    assert seen == 6


def test_break_stops_the_threads():
    before = threading.active_count()

    def forever():
        i = 0
        while True:
            yield np.int64(i)
            i += 1

    ds = Dataset.from_generator(forever, output_signature=ef.TensorSpec((), "int64")).map(
        lambda v: v * 2, num_parallel_calls=2).prefetch(4)
    for k, v in enumerate(ds):
        if k == 20:
            break
    # Python threads are unaffected; the C++ workers have joined (a hang here would time out).
    it = iter(ds)
    next(it)
    it.close()
    assert threading.active_count() == before


def test_shuffle_seeded_repeats_and_files(tmp_path):
    a = values(Dataset.range(50).shuffle(20, seed=3))
    assert a == values(Dataset.range(50).shuffle(20, seed=3))
    assert sorted(a) == list(range(50)) and a != list(range(50))
    p = tmp_path / "t.csv"
    p.write_text('x,y\n1.5,"2"\n3,4\n')
    rows = [(float(np.asarray(e["x"])), float(np.asarray(e["y"]))) for e in Dataset.csv([str(p)])]
    assert rows == [(1.5, 2.0), (3.0, 4.0)]
    bad = tmp_path / "bad.csv"
    bad.write_text("x,y\n1,2\n3\n")
    with pytest.raises(ef.Error, match="bad.csv:3"):
        list(Dataset.csv([str(bad)]))
    t = tmp_path / "lines.txt"
    t.write_text("ab\nc\n")
    assert [e.numpy() for e in Dataset.text_line([str(t)])] == [b"ab", b"c"]
    cache = tmp_path / "cache.bin"
    assert values(Dataset.range(4).cache(str(cache))) == [0, 1, 2, 3]
    assert os.path.exists(cache)


def test_interleave_zip_enumerate():
    ds = Dataset.range(1, 4).interleave(lambda x: Dataset.from_tensors(x).repeat(2), cycle_length=2)
    assert values(ds) == [1, 2, 1, 2, 3, 3]
    z = Dataset.zip([Dataset.range(3), Dataset.range(10, 13)]).enumerate()
    assert [[int(np.asarray(t)) for t in e] for e in z] == [[0, 0, 10], [1, 1, 11], [2, 2, 12]]


def test_fit_evaluate_predict_from_a_dataset():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(96, 4)).astype(np.float32)
    y = np.argmax(x[:, :3], axis=1).astype(np.int64)

    def make():
        ef.random.set_seed(1)
        m = ef.keras.Sequential([ef.keras.layers.Dense(8, activation="relu"), ef.keras.layers.Dense(3)])
        m.compile(optimizer="adam", loss=ef.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
        return m

    a = make()
    ha = a.fit(x, y, batch_size=20, epochs=2, shuffle=False, verbose=0)
    b = make()
    train = Dataset.from_tensor_slices((x, y)).map(lambda u, v: (u, v), num_parallel_calls=2).batch(20).prefetch(2)
    hb = b.fit(train, epochs=2, verbose=0, validation_data=Dataset.from_tensor_slices((x, y)).batch(50))
    assert b.tracing_count() == 1  # 96 = 4 * 20 + 16: the partial batch reuses the trace
    np.testing.assert_array_equal(ha.history["loss"], hb.history["loss"])
    assert len(hb.history["val_loss"]) == 2
    ev = b.evaluate(Dataset.from_tensor_slices((x, y)).batch(32), return_dict=True)
    assert set(ev) == {"loss", "accuracy"}
    p = b.predict(Dataset.from_tensor_slices(x).batch(40))
    assert p.shape == (96, 3)
    np.testing.assert_allclose(p, b.predict(x), rtol=1e-6, atol=1e-6)
    h = b.fit(train.repeat(), epochs=2, steps_per_epoch=3, verbose=0)
    assert len(h.history["loss"]) == 2
    with pytest.raises(ef.Error, match="infinite"):
        b.fit(train.repeat(), epochs=1, verbose=0)


def test_as_numpy_iterator_keeps_the_element_structure():
    pairs = ef.data.Dataset.from_tensor_slices((np.arange(5, dtype=np.float32), np.arange(5))).batch(2)
    got = list(pairs.as_numpy_iterator())
    assert [len(g[0]) for g in got] == [2, 2, 1]
    assert all(isinstance(a, np.ndarray) and isinstance(b, np.ndarray) for a, b in got)
    np.testing.assert_array_equal(np.concatenate([a for a, _ in got]), np.arange(5, dtype=np.float32))
    named = list(ef.data.Dataset.from_tensor_slices({"a": np.arange(3.0, dtype=np.float32)}).as_numpy_iterator())
    assert [float(d["a"]) for d in named] == [0.0, 1.0, 2.0]
    assert [int(v) for v in ef.data.Dataset.range(3).as_numpy_iterator()] == [0, 1, 2]


def test_filter_needs_a_bool_predicate_as_tf_data():
    with pytest.raises(Exception, match="bool scalar"):
        ef.data.Dataset.range(4).filter(lambda x: x * 2)
    assert [int(v) for v in ef.data.Dataset.range(6).filter(lambda x: x > 3).as_numpy_iterator()] == [4, 5]
