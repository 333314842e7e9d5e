"""fit from Python runs the C++ loop and adds nothing to its steps: an epoch equals the traced train
step on each batch in turn (the last, partial batch included, on the same trace), its logs the
example-weighted means of the batches', its shuffle repeatable with the seed; NumPy inputs are
read, never written. (Timings are bench/peers/issue21_table.py --fit's, not a test's.)"""
import numpy as np
import pytest

import eagerflow as ef

keras = ef.keras


@pytest.fixture(scope="module")
def digits():
    return ef.data.synthetic_digits(300, seed=7)


def compiled(seed):
    ef.random.set_seed(seed)
    model = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(24, activation="relu"), keras.layers.Dense(10)])
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return model


def test_an_epoch_is_its_steps_with_the_partial_last_batch(digits):
    x, y = digits  # 300 examples, batches of 64: four full and one of 44
    x_before, y_before = x.copy(), y.copy()
    fitted = compiled(11)
    h = fitted.fit(x, y, batch_size=64, epochs=1, shuffle=False, verbose=0)
    assert fitted.tracing_count() == 1  # the batch of 44 reuses the step traced for 64
    stepped = compiled(11)
    loss = accuracy = 0.0
    for b in range(0, 300, 64):
        logs = stepped.train_on_batch(x[b:b + 64], y[b:b + 64], return_dict=True)
        n = len(x[b:b + 64])
        loss += logs["loss"] * n
        accuracy += logs["accuracy"] * n
    assert stepped.tracing_count() == 1
    for a, b in zip(fitted.get_weights(), stepped.get_weights()):
        np.testing.assert_array_equal(a, b)  # bit for bit: the same kernels on the same batches
    assert h.history["loss"][0] == pytest.approx(loss / 300, rel=1e-6)
    assert h.history["accuracy"][0] == pytest.approx(accuracy / 300, abs=1e-6)  # a float32 mean
    np.testing.assert_array_equal(x, x_before)  # fit reads the arrays (shared, not copied), never writes them
    np.testing.assert_array_equal(y, y_before)


def test_shuffle_repeats_with_the_seed_and_changes_the_order(digits):
    x, y = digits

    def run(shuffle):
        model = compiled(5)
        h = model.fit(x, y, batch_size=48, epochs=3, shuffle=shuffle, verbose=0)
        assert model.tracing_count() == 1
        return model.get_weights(), h.history["loss"]

    (wa, la), (wb, lb), (wu, lu) = run(True), run(True), run(False)
    for a, b in zip(wa, wb):
        np.testing.assert_array_equal(a, b)
    assert la == lb
    assert any(not np.array_equal(a, u) for a, u in zip(wa, wu))
    assert la[0] != lu[0]


def test_a_python_callback_reading_every_batch_changes_no_number(digits):
    x, y = digits[0][:150], digits[1][:150]

    class Count(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.batches = []

        def on_train_batch_end(self, batch, logs=None):
            self.batches.append((batch, sorted(logs)))

    def run(callbacks):
        model = compiled(9)
        h = model.fit(x, y, batch_size=32, epochs=2, verbose=0, callbacks=callbacks)
        return model.get_weights(), h.history

    cb = Count()
    (ws, hs), (wl, hl) = run([]), run([cb])
    assert [b for b, _ in cb.batches] == [0, 1, 2, 3, 4] * 2  # 4 of 32 and one of 22, twice
    assert all(keys == ["accuracy", "loss"] for _, keys in cb.batches)
    for a, b in zip(ws, wl):
        np.testing.assert_array_equal(a, b)
    assert hs == hl
