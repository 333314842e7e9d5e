"""Keras 3 callbacks from Python: ReduceLROnPlateau (the rate changing inside the one traced
train step), LambdaCallback (Keras' keyword names and arguments), TerminateOnNaN(raise_error),
EarlyStopping's messages, and BackupAndRestore: a fit killed with SIGKILL and started again
ends with an uninterrupted run's weights, bit for bit."""
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import eagerflow as ef

keras = ef.keras


def data(n=96, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 8)).astype(np.float32)
    y = (x.sum(axis=1) > 0).astype(np.int64)
    return x, y


def model_for(optimizer=None, dropout=True):
    layers = [keras.layers.Dense(16, activation="relu")]
    if dropout:
        layers.append(keras.layers.Dropout(0.25))
    layers.append(keras.layers.Dense(2))
    model = keras.Sequential(layers)
    model.build((None, 8))
    model.compile(optimizer=optimizer or keras.optimizers.Adam(learning_rate=1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    return model


# ---------------------------------------------------------------- ReduceLROnPlateau
def test_reduce_lr_on_plateau_follows_keras_and_reaches_the_traced_step(capfd):
    x, y = data()
    opt = keras.optimizers.SGD(learning_rate=0.5)
    model = model_for(opt, dropout=False)
    # Nothing improves by 1e9: the second epoch reduces the rate (patience 1), by 1e-3.
    reduce = keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=1e-3, patience=1, min_delta=1e9, verbose=1)
    snapshots, rates = [], []

    def at_end(epoch, logs):
        assert set(logs) >= {"loss", "accuracy"}
        snapshots.append(model.get_weights())
        rates.append(model.optimizer.learning_rate)

    model.fit(x, y, batch_size=16, epochs=4, shuffle=False, verbose=0,
              callbacks=[reduce, keras.callbacks.LambdaCallback(on_epoch_end=at_end)])
    out = capfd.readouterr().out
    assert "\nEpoch 2: ReduceLROnPlateau reducing learning rate to 0.0005.\n" in out, out
    assert model.tracing_count() == 1
    assert rates[0] == pytest.approx(0.5) and rates[1] == pytest.approx(5e-4)
    moved_before = max(np.abs(a - b).max() for a, b in zip(snapshots[0], snapshots[1]))
    moved_after = max(np.abs(a - b).max() for a, b in zip(snapshots[2], snapshots[3]))
    assert moved_before > 1e-4
    assert 0 < moved_after < moved_before * 0.02, "the reduced rate did not reach the traced step"
    assert reduce.wait == 0 and reduce.cooldown_counter == 0 and reduce.best is not None


def test_reduce_lr_on_plateau_rule_cooldown_min_lr_and_errors(capfd):
    x, y = data(32)
    opt = keras.optimizers.SGD(learning_rate=0.1)
    model = model_for(opt)
    # min_delta 1e9: every epoch after the first is "no improvement".
    cb = keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=2, cooldown=1, min_lr=0.02,
                                           min_delta=1e9, verbose=1)
    rates = []
    model.fit(x, y, epochs=11, verbose=0, callbacks=[cb, keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: rates.append(model.optimizer.learning_rate))])
    # Keras: a reduction whenever the wait reaches 2 (epochs 3, 5, 7 from 1; the epoch after
    # each is cooldown, which clears the wait), the third clamped to min_lr, then none (0.02 as
    # float32 is not above min_lr).
    assert rates == pytest.approx([0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.02, 0.02, 0.02, 0.02, 0.02])
    out = capfd.readouterr().out
    assert out.count("ReduceLROnPlateau reducing learning rate") == 3, out
    assert "Epoch 3: ReduceLROnPlateau reducing learning rate to 0.05000000074505806." in out
    assert "Epoch 7: ReduceLROnPlateau reducing learning rate to 0.02." in out
    with pytest.raises(ef.Error, match=r"does not support a factor >= 1.0. Received factor=1.5"):
        keras.callbacks.ReduceLROnPlateau(factor=1.5)
    with pytest.raises(ef.Error, match="mode"):
        keras.callbacks.ReduceLROnPlateau(mode="sideways")
    # A monitor missing from the logs: a warning naming what is there (once), and no change.
    # From Python it is a UserWarning, as Keras warns.
    with pytest.warns(UserWarning) as record:
        model.fit(x, y, epochs=2, verbose=0, callbacks=[keras.callbacks.ReduceLROnPlateau(patience=0)])
    msgs = [str(w.message) for w in record if "conditioned" in str(w.message)]
    assert msgs == ["ReduceLROnPlateau: Learning rate reduction is conditioned on metric `val_loss` which is not "
                    "available. Available metrics are: accuracy,learning_rate,loss."], msgs
    assert model.optimizer.learning_rate == pytest.approx(0.02)


# ---------------------------------------------------------------- LambdaCallback
def test_lambda_callback_keras_names_and_arguments():
    x, y = data(40)
    model = model_for()
    events = []
    cb = keras.callbacks.LambdaCallback(
        on_epoch_begin=lambda epoch, logs: events.append(("epoch_begin", epoch, dict(logs))),
        on_epoch_end=lambda epoch, logs: events.append(("epoch_end", epoch, sorted(logs))),
        on_train_begin=lambda logs: events.append(("train_begin", dict(logs))),
        on_train_end=lambda logs: events.append(("train_end", dict(logs))),
        on_train_batch_begin=lambda batch, logs: events.append(("batch_begin", batch)),
        on_train_batch_end=lambda batch, logs: events.append(("batch_end", batch, sorted(logs))),
        note="kept")
    assert cb.note == "kept"  # Keras' **kwargs become attributes
    model.fit(x, y, batch_size=20, epochs=2, verbose=0, callbacks=[cb])
    keys = ["accuracy", "loss"]
    epoch = [("batch_begin", 0), ("batch_end", 0, keys), ("batch_begin", 1), ("batch_end", 1, keys)]
    assert events == ([("train_begin", {}), ("epoch_begin", 0, {})] + epoch + [("epoch_end", 0, keys)]
                      + [("epoch_begin", 1, {})] + epoch + [("epoch_end", 1, keys), ("train_end", {})])
    # on_batch_end (Keras 2's name) is on_train_batch_end; errors in a function propagate.
    seen = []
    model.fit(x, y, batch_size=20, epochs=1, verbose=0,
              callbacks=[keras.callbacks.LambdaCallback(on_batch_end=lambda b, logs: seen.append(b))])
    assert seen == [0, 1]

    def boom(epoch, logs):
        raise ZeroDivisionError("from a lambda callback")

    with pytest.raises(ZeroDivisionError, match="from a lambda callback"):
        model.fit(x, y, epochs=1, verbose=0, callbacks=[keras.callbacks.LambdaCallback(on_epoch_begin=boom)])
    with pytest.raises(TypeError, match="on_epoch_end must be callable"):
        keras.callbacks.LambdaCallback(on_epoch_end=3)
    # A stop from a function.
    stopper = keras.callbacks.LambdaCallback(on_epoch_end=lambda e, logs: setattr(model, "stop_training", e == 1))
    assert model.fit(x, y, epochs=5, verbose=0, callbacks=[stopper]).epoch == [0, 1]


# ---------------------------------------------------------------- EarlyStopping, TerminateOnNaN
def test_early_stopping_and_terminate_on_nan_messages(capfd):
    x, y = data()
    model = model_for()
    es = keras.callbacks.EarlyStopping(monitor="loss", min_delta=1e9, patience=2, verbose=1, restore_best_weights=True)
    assert model.fit(x, y, batch_size=16, epochs=10, verbose=0, callbacks=[es]).epoch == [0, 1, 2]
    out = capfd.readouterr().out
    assert "Epoch 3: early stopping\nRestoring model weights from the end of the best epoch: 1.\n" in out, out
    with pytest.warns(UserWarning, match="Early stopping conditioned on metric `val_loss` which is not available"):
        h = model.fit(x, y, epochs=2, verbose=0, callbacks=[keras.callbacks.EarlyStopping()])
    assert h.epoch == [0, 1]

    bad = x.copy()
    bad[32:] = np.nan
    stop = keras.callbacks.TerminateOnNaN()
    assert model_for().fit(bad, y, batch_size=16, epochs=3, shuffle=False, verbose=0, callbacks=[stop]).epoch == [0]
    assert "Batch 2: Invalid loss, terminating training" in capfd.readouterr().out
    with pytest.raises(ef.Error, match=r"NaN or Inf loss encountered at batch 2\. Loss value: nan\."):
        model_for().fit(bad, y, batch_size=16, epochs=3, shuffle=False, verbose=0,
                        callbacks=[keras.callbacks.TerminateOnNaN(raise_error=True)])


# ---------------------------------------------------------------- BackupAndRestore
def test_backup_and_restore_resumes_like_keras(tmp_path):
    x, y = data()
    backup_dir = tmp_path / "backup"
    ef.random.set_seed(5)
    reference = model_for()
    reference.fit(x, y, batch_size=16, epochs=6, verbose=0)

    class Interrupt(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            if epoch == 4:
                raise RuntimeError("Interrupting!")

    ef.random.set_seed(5)
    model = model_for()
    backup = keras.callbacks.BackupAndRestore(backup_dir=str(backup_dir))
    with pytest.raises(RuntimeError, match="Interrupting"):
        model.fit(x, y, batch_size=16, epochs=6, verbose=0, callbacks=[backup, Interrupt()])
    assert os.listdir(backup_dir) == ["latest.safetensors"]
    ef.random.set_seed(123)  # as a new process would be: other weights and random state
    fresh = model_for()
    h = fresh.fit(x, y, batch_size=16, epochs=6, verbose=0, callbacks=[backup])
    assert h.epoch == [4, 5] and backup.restored_epoch == 4  # Keras' example: the run continues at 4
    assert fresh.tracing_count() == 1
    for a, b in zip(fresh.get_weights(), reference.get_weights()):
        assert a.tobytes() == b.tobytes()
    assert not backup_dir.exists()  # deleted on completion

    with pytest.raises(ValueError, match="Empty `backup_dir`"):
        keras.callbacks.BackupAndRestore("")
    with pytest.raises(ef.Error, match="save_freq='10'"):
        keras.callbacks.BackupAndRestore(str(backup_dir), save_freq=10)
    with pytest.raises(ValueError, match="Invalid value for argument `save_freq`"):
        keras.callbacks.BackupAndRestore(str(backup_dir), save_freq="batch")

    # A damaged backup is an ef.Error naming the file.
    keep = keras.callbacks.BackupAndRestore(str(backup_dir), delete_checkpoint=False)
    fresh.fit(x, y, epochs=1, verbose=0, callbacks=[keep])
    path = backup_dir / "latest.safetensors"
    good = path.read_bytes()
    rng = random.Random(1)
    for i in range(40):
        bad = bytearray(good)
        if i < 5:
            bad = bad[: rng.randrange(len(good))]
        else:
            at = rng.randrange(len(good))
            bad[at] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(bad))
        try:
            model_for().fit(x, y, epochs=1, verbose=0, callbacks=[keras.callbacks.BackupAndRestore(str(backup_dir))])
        except ef.Error as e:
            assert str(path) in str(e)


SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import eagerflow as ef
    keras = ef.keras

    backup_dir, out = sys.argv[1], sys.argv[2]
    ef.random.set_seed(42)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((24576, 64)).astype(np.float32)  # a few hundred ms per epoch
    y = (x.sum(axis=1) > 0).astype(np.int64)
    model = keras.Sequential([keras.layers.Dense(256, activation="relu"), keras.layers.Dropout(0.25),
                              keras.layers.Dense(256, activation="relu"), keras.layers.Dense(2)])
    model.build((None, 64))
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    callbacks = [keras.callbacks.LambdaCallback(on_train_begin=lambda logs: print("training", flush=True),
                                                on_epoch_end=lambda e, logs: print("epoch", e, "saving", flush=True))]
    backup = None
    if backup_dir != "-":
        backup = keras.callbacks.BackupAndRestore(backup_dir)
        callbacks.append(backup)
        callbacks.append(keras.callbacks.LambdaCallback(
            on_train_begin=lambda logs: print("resumed at epoch", backup.restored_epoch, flush=True)))
    model.fit(x, y, batch_size=32, epochs=6, verbose=0, callbacks=callbacks)
    model.save_weights(out)
    print("finished", flush=True)
""")


def test_backup_and_restore_survives_sigkill_bit_for_bit(tmp_path):
    script = tmp_path / "fit_with_backup.py"
    script.write_text(SCRIPT)
    ref, out, backup_dir = tmp_path / "ref.safetensors", tmp_path / "out.safetensors", tmp_path / "backup"
    # The reference run, timed from fit's start (the imports before it take their own time).
    ref_run = subprocess.Popen([sys.executable, str(script), "-", str(ref)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    start = None
    for line in ref_run.stdout:
        if "training" in line and start is None:
            start = time.monotonic()
    run_s = time.monotonic() - (start or time.monotonic())
    _, ref_err = ref_run.communicate(timeout=120)
    assert ref_run.returncode == 0, ref_err
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    killed_mid_run, resumed, log = 0, 0, []
    for attempt in range(6):
        p = subprocess.Popen([sys.executable, str(script), str(backup_dir), str(out)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        read = []  # the lines read before the kill (communicate() returns only the rest)
        if attempt % 2 == 0:
            # Within the first 60% of fit: a kill after fit's end (the backup already deleted,
            # "finished" not yet printed) would leave nothing to resume from.
            for line in p.stdout:
                read.append(line)
                if "training" in line:
                    break
            time.sleep(rng.uniform(0, 0.6 * run_s))
        else:  # as a backup is being written: the line comes just before BackupAndRestore's
            wanted = 2 if attempt == 1 else rng.randint(1, 2)
            seen = 0
            for line in p.stdout:
                read.append(line)
                seen += "saving" in line
                if seen >= wanted:
                    break
            time.sleep(rng.uniform(0, 0.004))  # into the write
        os.kill(p.pid, signal.SIGKILL)
        stdout, stderr = p.communicate()
        stdout = "".join(read) + stdout
        log.append(f"attempt {attempt} rc {p.returncode}: {stdout}")
        resumed += "resumed at epoch" in stdout and "resumed at epoch -1" not in stdout
        if p.returncode == -signal.SIGKILL:
            killed_mid_run += "training" in stdout and "finished" not in stdout  # inside fit
        else:
            assert p.returncode == 0, stderr
            break
    last = subprocess.run([sys.executable, str(script), str(backup_dir), str(out)], capture_output=True, text=True,
                          timeout=120)
    assert last.returncode == 0, last.stderr
    log.append("last: " + last.stdout)
    resumed += "resumed at epoch" in last.stdout and "resumed at epoch -1" not in last.stdout
    note = f"kill seed {seed}\n" + "\n".join(log)
    assert killed_mid_run >= 1, note
    assert resumed >= 1, note
    assert out.read_bytes() == ref.read_bytes(), note
    assert not (backup_dir / "latest.safetensors").exists()
