"""tf.train's CheckpointOptions, get_checkpoint_state, checkpoints_iterator, ExponentialMovingAverage,
Coordinator and TrackableView (python/eagerflow/_train_extras.py)."""
import threading

import numpy as np
import pytest

import eagerflow as tf


def test_get_checkpoint_state(tmp_path):
    assert tf.train.get_checkpoint_state(str(tmp_path)) is None
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(1.0)), str(tmp_path), max_to_keep=2)
    manager.save()
    manager.save()
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert state.model_checkpoint_path == str(tmp_path / "ckpt-2")
    assert state.all_model_checkpoint_paths == [str(tmp_path / "ckpt-1"), str(tmp_path / "ckpt-2")]
    assert f'model_checkpoint_path: "{tmp_path / "ckpt-2"}"' in str(state)


def test_checkpoints_iterator_yields_then_times_out(tmp_path):
    tf.train.Checkpoint(v=tf.Variable(1.0)).save(str(tmp_path / "ck"))
    calls = []
    got = list(tf.train.checkpoints_iterator(str(tmp_path), timeout=1, timeout_fn=lambda: calls.append(1) or True))
    assert got == [str(tmp_path / "ck-1")] and calls == [1]


def test_options_write_callbacks_and_skip_slots(tmp_path):
    net = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    net.build((None, 3))
    opt = tf.keras.optimizers.Adam(0.1)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(net(tf.ones([1, 3])))
    opt.apply_gradients(zip(tape.gradient(loss, net.trainable_variables), net.trainable_variables))
    seen = []
    options = tf.train.CheckpointOptions(experimental_write_callbacks=[seen.append, lambda: seen.append("no-arg")],
                                         experimental_skip_slot_variables=True)
    path = tf.train.Checkpoint(net=net, optimizer=opt).write(str(tmp_path / "w"), options=options)
    assert seen == [path, "no-arg"]
    keys = [k for k, _ in tf.train.list_variables(path)]
    assert not any("/_variables/" in k for k in keys) and "optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE" in keys


def test_exponential_moving_average():
    ema = tf.train.ExponentialMovingAverage(0.9)
    v = tf.Variable(1.0, name="w")
    assert ema.average(v) is None
    ema.apply([v])
    assert ema.average_name(v) == "w/ExponentialMovingAverage" and ema.name == "ExponentialMovingAverage"
    assert float(ema.average(v).numpy()) == 1.0
    v.assign(2.0)
    ema.apply([v])
    np.testing.assert_allclose(ema.average(v).numpy(), 1.0 - 0.1 * (1.0 - 2.0))
    counted = tf.train.ExponentialMovingAverage(0.9, num_updates=tf.Variable(0))
    w = tf.Variable(1.0)
    counted.apply([w])
    w.assign(2.0)
    counted.apply([w])  # decay min(0.9, 1/10) = 0.1
    np.testing.assert_allclose(counted.average(w).numpy(), 1.0 - 0.9 * (1.0 - 2.0), rtol=1e-6)
    with pytest.raises(TypeError, match="non-Variable tensors"):
        ema.apply([tf.constant(1.0)])


def test_coordinator_stops_threads_and_reraises():
    coord = tf.train.Coordinator()
    ran = []

    def worker(i):
        with coord.stop_on_exception():
            while not coord.should_stop():
                ran.append(i)
                if i == 1:
                    raise KeyError("boom")
                coord.wait_for_stop(0.01)
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    with pytest.raises(KeyError, match="boom"):
        coord.join(threads, stop_grace_period_secs=5)
    assert coord.should_stop() and coord.joined and not any(t.is_alive() for t in threads)
    coord.clear_stop()
    assert not coord.should_stop()
    coord.request_stop(tf.errors.OutOfRangeError(None, None, "end"))  # a clean stop: nothing re-raised
    coord.join([])


def test_trackable_view():
    v = tf.Variable(1.0)
    inner = tf.train.Checkpoint(v=v)
    root = tf.train.Checkpoint(inner=inner, items=[v])
    assert tf.train.TrackableView.children(root)["inner"] is inner
    descendants = tf.train.TrackableView(root).descendants()
    assert descendants[0] is root and inner in descendants
