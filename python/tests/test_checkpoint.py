"""tf.train.Checkpoint, CheckpointManager and the checkpoint readers (python/eagerflow/_checkpoint.py)."""
import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import eagerflow as tf


def _net():
    class Net(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.l1 = tf.keras.layers.Dense(3)

        def call(self, x):
            return self.l1(x)
    return Net()


def _train(net, opt, steps=2):
    x = tf.constant(np.arange(8, dtype=np.float32).reshape(4, 2))
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.abs(net(x) - 1.0))
        grads = tape.gradient(loss, net.trainable_variables)
        opt.apply_gradients(zip(grads, net.trainable_variables))


def test_save_numbers_prefixes_and_restores_values(tmp_path):
    v = tf.Variable([1.0, 2.0])
    ckpt = tf.train.Checkpoint(v=v, step=tf.Variable(7, dtype=tf.int64))
    p1 = ckpt.save(str(tmp_path / "ck"))
    v.assign([5.0, 6.0])
    p2 = ckpt.save(str(tmp_path / "ck"))
    assert (p1, p2) == (str(tmp_path / "ck-1"), str(tmp_path / "ck-2"))
    assert os.path.exists(p2 + ".index") and os.path.exists(p2 + ".data-00000-of-00001")
    assert tf.train.latest_checkpoint(str(tmp_path)) == p2
    assert 'model_checkpoint_path: "ck-2"' in (tmp_path / "checkpoint").read_text()
    v.assign([0.0, 0.0])
    status = ckpt.restore(p1)
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    assert int(ckpt.save_counter.numpy()) == 1  # the counter is restored with the rest
    status.assert_consumed()


def test_keys_follow_attribute_paths(tmp_path):
    ckpt = tf.train.Checkpoint(a=tf.Variable(1.0), lst=[tf.Variable(2.0)], d={"k": tf.Variable(3)})
    path = ckpt.write(str(tmp_path / "w"))
    assert path == str(tmp_path / "w")
    names = dict(tf.train.list_variables(path))
    assert names == {"_CHECKPOINTABLE_OBJECT_GRAPH": [], "a/.ATTRIBUTES/VARIABLE_VALUE": [],
                     "lst/0/.ATTRIBUTES/VARIABLE_VALUE": [], "d/k/.ATTRIBUTES/VARIABLE_VALUE": [],
                     "save_counter/.ATTRIBUTES/VARIABLE_VALUE": []}
    assert tf.train.load_variable(path, "d/k/.ATTRIBUTES/VARIABLE_VALUE") == 3
    reader = tf.train.load_checkpoint(path)
    assert reader.get_variable_to_dtype_map()["d/k/.ATTRIBUTES/VARIABLE_VALUE"] == tf.int32
    assert reader.has_tensor("a/.ATTRIBUTES/VARIABLE_VALUE") and not reader.has_tensor("b")
    with pytest.raises(tf.errors.NotFoundError, match="Key nope not found"):
        reader.get_tensor("nope")


def test_restore_matches_by_path_not_by_name(tmp_path):
    saved = tf.train.Checkpoint(net=tf.train.Checkpoint(l1=tf.train.Checkpoint(bias=tf.Variable([1.0, 2.0], name="x"))))
    path = saved.save(str(tmp_path / "ck"))
    target = tf.Variable([0.0, 0.0], name="completely_different")
    status = tf.train.Checkpoint(net=tf.train.Checkpoint(l1=tf.train.Checkpoint(bias=target))).restore(path)
    np.testing.assert_array_equal(target.numpy(), [1.0, 2.0])
    status.assert_existing_objects_matched().assert_consumed()


def test_keras_model_and_optimizer_slots_round_trip(tmp_path):
    net, opt = _net(), tf.keras.optimizers.Adam(0.1)
    _train(net, opt)
    ckpt = tf.train.Checkpoint(net=net, optimizer=opt)
    path = ckpt.save(str(tmp_path / "ck"))
    keys = [k for k, _ in tf.train.list_variables(path)]
    # TF's keys for Keras 3 objects: Dense keeps its kernel in `_kernel`; the optimizer's slots
    # are in its `_variables` list (after iterations and the learning rate)
    assert "net/l1/_kernel/.ATTRIBUTES/VARIABLE_VALUE" in keys
    assert "optimizer/_variables/2/.ATTRIBUTES/VARIABLE_VALUE" in keys
    assert "optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE" in keys
    assert "optimizer/_learning_rate/.ATTRIBUTES/VARIABLE_VALUE" in keys
    want = {v.path: v.numpy() for v in net.variables + opt.variables}
    _train(net, opt)  # move everything away from the saved values
    ckpt.restore(path).assert_consumed()
    for v in net.variables + opt.variables:
        np.testing.assert_allclose(v.numpy(), want[v.path])


def test_deferred_restore_of_model_built_later_and_slots_on_first_apply(tmp_path):
    net, opt = _net(), tf.keras.optimizers.Adam(0.1)
    _train(net, opt)
    path = tf.train.Checkpoint(net=net, optimizer=opt).save(str(tmp_path / "ck"))
    # the continuation of training from the checkpoint, computed on the original objects
    _train(net, opt, steps=1)
    want = [v.numpy() for v in net.variables]

    net2, opt2 = _net(), tf.keras.optimizers.Adam(0.1)
    status = tf.train.Checkpoint(net=net2, optimizer=opt2).restore(path)
    with pytest.raises(AssertionError, match="Unresolved object"):
        status.assert_consumed()  # the model has no variables yet
    _train(net2, opt2, steps=1)  # builds the model (restored), creates the slots (restored before the update)
    for got, w in zip(net2.variables, want):
        np.testing.assert_allclose(got.numpy(), w, rtol=1e-6)
    status.assert_consumed()


def test_deferred_restore_through_attributes_lists_and_dicts(tmp_path):
    save = tf.train.Checkpoint()
    save.listed = [tf.Variable(1.0)]
    save.listed.append(tf.Variable(2.0))
    save.mapped = {"one": save.listed[0]}
    save.mapped["two"] = save.listed[1]
    path = save.save(str(tmp_path / "ck"))
    restore = tf.train.Checkpoint()
    v2 = tf.Variable(0.0)
    restore.mapped = {"two": v2}
    restore.restore(path)
    assert v2.numpy() == 2.0
    restore.listed = []
    assert repr(restore.listed) == "ListWrapper([])"
    v1 = tf.Variable(0.0)
    restore.listed.append(v1)
    assert v1.numpy() == 1.0
    later = tf.train.Checkpoint()
    status = later.restore(path)
    later.extra = tf.Variable(5.0)  # not in the checkpoint: stays as it is
    assert later.extra.numpy() == 5.0
    with pytest.raises(AssertionError, match="not bound to checkpointed values"):
        status.assert_existing_objects_matched()
    assert status.expect_partial() is status


def test_restore_none_and_missing_path(tmp_path):
    status = tf.train.Checkpoint(v=tf.Variable(1.0)).restore(None)
    with pytest.raises(AssertionError, match="No checkpoint specified"):
        status.assert_consumed()
    status.expect_partial()
    with pytest.raises(tf.errors.NotFoundError, match="Failed to find any matching files"):
        tf.train.Checkpoint(v=tf.Variable(1.0)).restore(str(tmp_path / "nothere"))
    assert tf.train.latest_checkpoint(str(tmp_path)) is None
    with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file"):
        tf.train.load_checkpoint(str(tmp_path))


def test_non_trackable_argument_and_shape_mismatch(tmp_path):
    with pytest.raises(ValueError, match="expecting a to be a trackable object"):
        tf.train.Checkpoint(a=3)
    path = tf.train.Checkpoint(v=tf.Variable([1.0, 2.0])).write(str(tmp_path / "w"))
    with pytest.raises(ValueError, match="incompatible tensor with shape"):
        tf.train.Checkpoint(v=tf.Variable([1.0, 2.0, 3.0])).restore(path)


def test_dtypes_round_trip(tmp_path):
    vals = {"f64": tf.Variable(np.array([1.5, 2.5])), "i64": tf.Variable(np.array([1, 2], np.int64)),
            "b": tf.Variable([True, False]), "bf": tf.Variable(tf.constant([1.0, 2.0], dtype=tf.bfloat16)),
            "u8": tf.Variable(tf.constant([3, 250], dtype=tf.uint8))}
    path = tf.train.Checkpoint(**vals).write(str(tmp_path / "w"))
    fresh = {k: tf.Variable(tf.zeros_like(v.value())) for k, v in vals.items()}
    tf.train.Checkpoint(**fresh).restore(path).assert_consumed()
    for k in vals:
        assert fresh[k].dtype == vals[k].dtype
        np.testing.assert_array_equal(fresh[k].numpy(), vals[k].numpy())


def test_manager_keeps_max_and_numbers(tmp_path):
    ckpt = tf.train.Checkpoint(v=tf.Variable(1.0))
    manager = tf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=2)
    assert manager.latest_checkpoint is None
    paths = [manager.save() for _ in range(4)]
    assert paths == [str(tmp_path / f"ckpt-{i}") for i in range(1, 5)]
    assert manager.checkpoints == paths[2:]
    assert not os.path.exists(paths[0] + ".index") and os.path.exists(paths[3] + ".index")
    assert manager.save(checkpoint_number=10) == str(tmp_path / "ckpt-10")
    assert int(ckpt.save_counter.numpy()) == 5  # counted even with an explicit number, as TF's
    again = tf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=2)
    assert again.checkpoints == [str(tmp_path / "ckpt-4"), str(tmp_path / "ckpt-10")]
    assert again.latest_checkpoint == tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "ckpt-10")
    state = (tmp_path / "checkpoint").read_text()
    assert 'all_model_checkpoint_paths: "ckpt-4"' in state and "all_model_checkpoint_timestamps" in state


def test_manager_restore_or_initialize(tmp_path):
    v = tf.Variable(1.0)
    called = []
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=v), str(tmp_path), max_to_keep=None,
                                         init_fn=lambda: called.append(1))
    assert manager.restore_or_initialize() is None and called == [1]
    manager.save()
    v.assign(9.0)
    assert manager.restore_or_initialize() == str(tmp_path / "ckpt-1")
    assert v.numpy() == 1.0


def test_killed_save_leaves_previous_checkpoint_loadable(tmp_path):
    # a child process saves once, then dies (os._exit) in the middle of the second save's data file
    script = textwrap.dedent(f"""
        import os, eagerflow as tf
        from eagerflow import _checkpoint_io as io
        ckpt = tf.train.Checkpoint(v=tf.Variable([1.0, 2.0]))
        manager = tf.train.CheckpointManager(ckpt, {str(tmp_path)!r}, max_to_keep=1)
        manager.save()
        ckpt.v.assign([3.0, 4.0])
        def dying(prefix, graph, values):
            with open(prefix + ".data-00000-of-00001.tmpPARTIAL", "wb") as f:
                f.write(b"partial")
            os._exit(9)
        io._tf.write = dying
        manager.save()
    """)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(tf.__file__)))
    rc = subprocess.run([sys.executable, "-c", script], env=env).returncode
    assert rc == 9
    latest = tf.train.latest_checkpoint(str(tmp_path))
    assert latest == str(tmp_path / "ckpt-1")
    v = tf.Variable([0.0, 0.0])
    tf.train.Checkpoint(v=v).restore(latest).assert_consumed()
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_data_file_not_matching_its_index_is_data_loss(tmp_path):
    ckpt = tf.train.Checkpoint(v=tf.Variable([1.0, 2.0]))
    first = ckpt.write(str(tmp_path / "a"))
    ckpt.v.assign([3.0, 4.0])
    ckpt.write(str(tmp_path / "b"))
    os.replace(str(tmp_path / "b.data-00000-of-00001"), first + ".data-00000-of-00001")
    with pytest.raises(tf.errors.DataLossError, match="CRC-32C"):
        tf.train.Checkpoint(v=tf.Variable([0.0, 0.0])).restore(first)


def test_slots_restored_before_a_traced_first_step(tmp_path):
    net, opt = _net(), tf.keras.optimizers.Adam(0.1)
    _train(net, opt)
    path = tf.train.Checkpoint(net=net, optimizer=opt).save(str(tmp_path / "ck"))
    _train(net, opt, steps=1)
    want = [v.numpy() for v in net.variables]

    net2, opt2 = _net(), tf.keras.optimizers.Adam(0.1)
    net2(tf.zeros([1, 2]))  # built before the restore: the slots are made and restored by restore() itself
    tf.train.Checkpoint(net=net2, optimizer=opt2).restore(path).assert_consumed()
    x = tf.constant(np.arange(8, dtype=np.float32).reshape(4, 2))

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.abs(net2(x) - 1.0))
        grads = tape.gradient(loss, net2.trainable_variables)
        opt2.apply_gradients(zip(grads, net2.trainable_variables))
        return loss
    step(x)
    for got, w in zip(net2.variables, want):
        np.testing.assert_allclose(got.numpy(), w, rtol=1e-5, atol=1e-6)


def test_sequential_and_python_layer_weights(tmp_path):
    class Scale(tf.keras.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")

        def call(self, x):
            return x * self.w
    model = tf.keras.Sequential([tf.keras.layers.Dense(2), Scale()])
    model.build((None, 3))
    model.layers[1].w.assign([2.0, 3.0])
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "w"))
    keys = [k for k, _ in tf.train.list_variables(path)]
    # as TF names a Keras 3 Sequential's layers: its functional model's operations (0: the input)
    assert "model/_functional/_operations/1/_kernel/.ATTRIBUTES/VARIABLE_VALUE" in keys
    assert "model/_functional/_operations/2/w/.ATTRIBUTES/VARIABLE_VALUE" in keys
    fresh = tf.keras.Sequential([tf.keras.layers.Dense(2), Scale()])
    status = tf.train.Checkpoint(model=fresh).restore(path)
    out = fresh(tf.ones([1, 3]))  # built by this call: restored before its result is computed
    np.testing.assert_allclose(fresh.layers[1].w.numpy(), [2.0, 3.0])
    np.testing.assert_allclose(out.numpy(), model(tf.ones([1, 3])).numpy(), rtol=1e-6)
    status.assert_consumed()


def test_layers_in_attribute_lists_keep_their_paths_and_hooks_go_away(tmp_path):
    class Blocks(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.blocks = [tf.keras.layers.Dense(2), tf.keras.layers.Dense(3)]

        def call(self, x):
            for b in self.blocks:
                x = b(x)
            return x
    # (not Layer.__call__ now: a restoration an earlier test left waiting may still hold the hooks until collected)
    from eagerflow import _checkpoint
    original_call = _checkpoint._originals["call"]
    m = Blocks()
    m(tf.ones([1, 2]))
    path = tf.train.Checkpoint(model=m).write(str(tmp_path / "w"))
    keys = [k for k, _ in tf.train.list_variables(path)]
    assert "model/blocks/1/_kernel/.ATTRIBUTES/VARIABLE_VALUE" in keys and not any("layer-" in k for k in keys)
    fresh = Blocks()
    status = tf.train.Checkpoint(model=fresh).restore(path)
    assert tf._core.Layer.__call__ is not original_call  # waiting for the model to be built
    np.testing.assert_allclose(fresh(tf.ones([1, 2])).numpy(), m(tf.ones([1, 2])).numpy(), rtol=1e-6)
    gc.collect()  # restorations other tests left waiting, on objects gone with them
    status.assert_consumed()
    assert tf._core.Layer.__call__ is original_call  # nothing waits: layer calls are not wrapped any more


def test_model_build_after_restore_restores(tmp_path):
    model = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    model.build((None, 3))
    path = tf.train.Checkpoint(model=model).write(str(tmp_path / "w"))
    fresh = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    status = tf.train.Checkpoint(model=fresh).restore(path)
    fresh.build((None, 3))
    for got, want in zip(fresh.variables, model.variables):
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    status.assert_consumed()


def test_iterations_of_an_optimizer_without_slots(tmp_path):
    net, opt = _net(), tf.keras.optimizers.SGD(0.1)
    _train(net, opt, steps=3)
    path = tf.train.Checkpoint(net=net, optimizer=opt).write(str(tmp_path / "w"))
    net2, opt2 = _net(), tf.keras.optimizers.SGD(0.1)
    net2(tf.zeros([1, 2]))
    status = tf.train.Checkpoint(net=net2, optimizer=opt2).restore(path)
    _train(net2, opt2, steps=1)  # its first update: iterations made, restored (3), then counted (4)
    assert int(opt2.variables[0].numpy()) == 4
    status.assert_consumed()


def test_variables_made_where_restore_cannot_watch_are_never_overwritten(tmp_path):
    net, opt = _net(), tf.keras.optimizers.Adam(0.1)
    _train(net, opt)
    path = tf.train.Checkpoint(net=net, optimizer=opt).write(str(tmp_path / "w"))
    net2, opt2 = _net(), tf.keras.optimizers.Adam(0.1)
    ckpt = tf.train.Checkpoint(net=net2, optimizer=opt2)
    status = ckpt.restore(path)

    @tf.function
    def step(x):  # the model is built, and the optimizer's slots made, inside the trace
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.abs(net2(x) - 1.0))
        grads = tape.gradient(loss, net2.trainable_variables)
        opt2.apply_gradients(zip(grads, net2.trainable_variables))
        return loss
    step(tf.ones([4, 2]))
    trained = [v.numpy() for v in net2.variables]
    with pytest.warns(UserWarning, match="not restored"):
        ckpt.write(str(tmp_path / "again"))  # a later event: the checkpoint's values must not replace the trained ones
    for got, want in zip(net2.variables, trained):
        np.testing.assert_array_equal(got.numpy(), want)
    with pytest.raises(AssertionError, match="Unresolved object"):
        status.assert_consumed()


def test_fit_after_restore_starts_from_the_checkpoint(tmp_path):
    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    y = np.ones((4, 2), np.float32)

    def model():
        m = tf.keras.Sequential([tf.keras.layers.Dense(2)])
        m.compile(optimizer=tf.keras.optimizers.Adam(0.1), loss="mse")
        return m
    trained = model()
    trained.fit(x, y, epochs=2, batch_size=4, verbose=0)
    path = tf.train.Checkpoint(model=trained, optimizer=trained.optimizer).write(str(tmp_path / "w"))
    trained.fit(x, y, epochs=1, batch_size=4, verbose=0)  # the step a restored copy must repeat
    fresh = model()
    status = tf.train.Checkpoint(model=fresh, optimizer=fresh.optimizer).restore(path)
    fresh.fit(x, y, epochs=1, batch_size=4, verbose=0)  # built (and restored) before the C++ loop runs
    for got, want in zip(fresh.variables, trained.variables):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    status.assert_consumed()


def test_slots_of_same_named_variables(tmp_path):
    # tf.Variable's default name is "Variable": slots are the optimizer's own record of each
    # variable's slots, whatever the names and shapes
    a, b = tf.Variable(1.0), tf.Variable([2.0, 3.0])
    opt = tf.keras.optimizers.Adam(0.1)
    opt.apply_gradients([(tf.constant(1.0), a), (tf.constant([1.0, 2.0]), b)])
    path = tf.train.Checkpoint(a=a, b=b, opt=opt).write(str(tmp_path / "w"))
    keys = [k for k, _ in tf.train.list_variables(path)]
    assert "opt/_variables/5/.ATTRIBUTES/VARIABLE_VALUE" in keys  # b's velocity: the last of four slots
    a2, b2 = tf.Variable(0.0), tf.Variable([0.0, 0.0])
    opt2 = tf.keras.optimizers.Adam(0.1)
    status = tf.train.Checkpoint(a=a2, b=b2, opt=opt2).restore(path)
    opt2.apply_gradients([(tf.constant(0.0), a2), (tf.constant([0.0, 0.0]), b2)])
    status.assert_consumed()
    for var, var2 in ((a, a2), (b, b2)):
        saved, restored = opt._slots_of(var), opt2._slots_of(var2)
        # m after a zero-gradient update: beta_1 times the saved m
        np.testing.assert_allclose(restored["m"].numpy(), 0.9 * saved["m"].numpy(), rtol=1e-6)
    c, d = tf.Variable(1.0), tf.Variable(2.0)
    opt3 = tf.keras.optimizers.Adam(0.1)
    opt3.apply_gradients([(tf.constant(1.0), c), (tf.constant(3.0), d)])
    path = tf.train.Checkpoint(c=c, d=d, opt=opt3).write(str(tmp_path / "x"))
    c2, d2, opt4 = tf.Variable(0.0), tf.Variable(0.0), tf.keras.optimizers.Adam(0.1)
    tf.train.Checkpoint(c=c2, d=d2, opt=opt4).restore(path)
    opt4.build([c2, d2])
    for var, var2 in ((c, c2), (d, d2)):  # same names and shapes: each gets its own slots
        np.testing.assert_allclose(opt4._slots_of(var2)["v"].numpy(), opt3._slots_of(var)["v"].numpy())
