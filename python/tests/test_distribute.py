"""tf.distribute over ef.dist: one process alone is a one-replica strategy equal to plain code;
under `mpirun -np 2` (child processes only, as test_dist.py) the strategies span the ranks."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import eagerflow as tf

keras = tf.keras
MPIRUN = shutil.which("mpirun")
STRATEGIES = [tf.distribute.MirroredStrategy, tf.distribute.MultiWorkerMirroredStrategy,
              lambda: tf.distribute.OneDeviceStrategy("/cpu:0")]


def test_default_strategy_and_contexts():
    s = tf.distribute.get_strategy()
    assert s.num_replicas_in_sync == 1
    assert not tf.distribute.has_strategy() and not tf.distribute.in_cross_replica_context()
    ctx = tf.distribute.get_replica_context()
    assert ctx is not None and ctx.num_replicas_in_sync == 1 and int(ctx.replica_id_in_sync_group) == 0
    with s.scope():  # the default strategy's scope changes nothing
        assert not tf.distribute.has_strategy()
    assert tf.distribute.get_strategy() is s


@pytest.mark.parametrize("make", STRATEGIES)
def test_scope_and_run_contexts(make):
    s = make()
    assert s.num_replicas_in_sync == 1
    assert s.extended.worker_devices == ("/job:localhost/replica:0/task:0/device:CPU:0",)
    with s.scope():
        assert tf.distribute.has_strategy() and tf.distribute.get_strategy() is s
        assert tf.distribute.in_cross_replica_context()
        assert tf.distribute.get_replica_context() is None

        def fn(x):
            assert not tf.distribute.in_cross_replica_context()
            ctx = tf.distribute.get_replica_context()
            return ctx.all_reduce(tf.distribute.ReduceOp.SUM, x * 2.0), ctx.replica_id_in_sync_group
        y, rid = s.run(fn, args=(tf.constant([1.0, 2.0]),), options=tf.distribute.RunOptions())
    np.testing.assert_array_equal(y.numpy(), [2.0, 4.0])
    assert int(rid) == 0
    assert not tf.distribute.has_strategy()


def test_mixing_strategies_is_an_error():
    a, b = tf.distribute.MirroredStrategy(), tf.distribute.MirroredStrategy()
    with a.scope():
        with a.scope():  # the same one again is fine
            pass
        with pytest.raises(ValueError, match="Mixing different"):
            with b.scope():
                pass


def test_reduce_gather_local_results_equal_plain_code():
    s = tf.distribute.MirroredStrategy()
    v = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(s.reduce("SUM", tf.constant(v), axis=None).numpy(), v)
    np.testing.assert_array_equal(s.reduce(tf.distribute.ReduceOp.MEAN, tf.constant(v), axis=None).numpy(), v)
    np.testing.assert_allclose(s.reduce("SUM", v, axis=0).numpy(), v.sum(0))
    np.testing.assert_allclose(s.reduce("MEAN", v, axis=1).numpy(), v.mean(1))
    nested = s.reduce("SUM", {"a": tf.constant(1.0), "b": (tf.constant([2.0]),)}, axis=None)
    assert float(nested["a"]) == 1.0 and nested["b"][0].numpy().tolist() == [2.0]
    np.testing.assert_array_equal(s.gather(tf.constant(v), axis=1).numpy(), v)
    (local,) = s.experimental_local_results(tf.constant(v))
    np.testing.assert_array_equal(local.numpy(), v)
    with pytest.raises(ValueError, match="not a valid ReduceOp"):
        s.reduce("PROD", v, axis=None)


def test_reduce_inside_run_is_an_error():
    s = tf.distribute.MirroredStrategy()
    with pytest.raises(RuntimeError, match="cross-replica context"):
        s.run(lambda: s.reduce("SUM", tf.constant(1.0), axis=None))


def test_run_traced_equals_eager():
    s = tf.distribute.MultiWorkerMirroredStrategy()

    def step(x):
        return tf.distribute.get_replica_context().all_reduce("MEAN", tf.reduce_sum(x * x))

    @tf.function
    def traced(x):
        return s.run(step, args=(x,))
    x = tf.constant([1.0, 2.0, 3.0])
    assert float(traced(x)) == float(s.run(step, args=(x,))) == 14.0


def test_reduce_op_and_input_context():
    o = tf.distribute.RunOptions(experimental_bucketizing_dynamic_shape=True)
    assert tuple(o) == (True, True, None) and o.experimental_xla_options is None
    assert [op.value for op in tf.distribute.ReduceOp] == ["SUM", "MEAN"]
    assert tf.distribute.ReduceOp("MEAN") is tf.distribute.ReduceOp.MEAN
    assert [m.value for m in tf.distribute.InputReplicationMode] == ["PER_WORKER", "PER_REPLICA"]
    ctx = tf.distribute.InputContext()
    assert (ctx.num_input_pipelines, ctx.input_pipeline_id, ctx.num_replicas_in_sync) == (1, 0, 1)
    assert str(ctx) == "tf.distribute.InputContext(input pipeline id 0, total: 1)"
    ctx = tf.distribute.InputContext(2, 1, 4)
    assert ctx.get_per_replica_batch_size(8) == 2
    with pytest.raises(ValueError, match="not divisible"):
        ctx.get_per_replica_batch_size(7)


def test_distributed_datasets_one_replica():
    s = tf.distribute.MirroredStrategy()
    ds = tf.data.Dataset.from_tensor_slices((np.arange(10, dtype=np.float32), np.arange(10))).batch(4)
    got = [(a.numpy().tolist(), b.numpy().tolist()) for a, b in s.experimental_distribute_dataset(ds)]
    assert got == [(a.numpy().tolist(), b.numpy().tolist()) for a, b in ds]
    it = iter(s.experimental_distribute_dataset(ds))
    assert it.get_next()[0].numpy().tolist() == [0.0, 1.0, 2.0, 3.0]
    next(it), next(it)
    with pytest.raises(tf.errors.OutOfRangeError):
        it.get_next()
    seen = []

    def dataset_fn(ctx):
        seen.append((ctx.num_input_pipelines, ctx.input_pipeline_id, ctx.num_replicas_in_sync))
        return tf.data.Dataset.from_tensor_slices(np.arange(6, dtype=np.float32)).batch(ctx.get_per_replica_batch_size(3))
    got = [e.numpy().tolist() for e in s.distribute_datasets_from_function(dataset_fn)]
    assert seen == [(1, 0, 1)] and got == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert s.experimental_distribute_values_from_function(lambda c: (c.replica_id_in_sync_group, c.num_replicas_in_sync)) == (0, 1)


def test_variables_created_in_scope():
    s = tf.distribute.MirroredStrategy()
    with s.scope():
        v = tf.Variable([1.0, 2.0])
    w = tf.Variable(3.0)
    assert s.extended.variable_created_in_scope(v) and not s.extended.variable_created_in_scope(w)
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def _data():
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(96, 5)).astype(np.float32)
    return xs, (xs[:, :3].argmax(1)).astype(np.int32)


def _model():
    tf.random.set_seed(3)
    m = keras.Sequential([keras.layers.Dense(6, activation="relu"), keras.layers.Dense(3)])
    m.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return m


def test_keras_fit_in_scope_equals_plain_fit():
    xs, ys = _data()
    ref = _model()
    h_ref = ref.fit(xs, ys, batch_size=32, epochs=2, verbose=0, shuffle=False)
    s = tf.distribute.MirroredStrategy()
    with s.scope():
        m = _model()
    assert m.distribute_strategy is s and ref.distribute_strategy is tf.distribute.get_strategy()
    h = m.fit(xs, ys, batch_size=32, epochs=2, verbose=0, shuffle=False)
    assert h.history["loss"] == h_ref.history["loss"]
    for a, b in zip(m.get_weights(), ref.get_weights()):
        np.testing.assert_array_equal(a, b)
    # fit takes a distributed dataset as the dataset it was made from.
    ds = tf.data.Dataset.from_tensor_slices((xs, ys)).batch(32)
    h2 = m.fit(s.experimental_distribute_dataset(ds), epochs=1, verbose=0)
    h3 = ref.fit(ds, epochs=1, verbose=0)
    assert h2.history["loss"] == h3.history["loss"]


def test_custom_loop_in_scope_equals_plain_loop():
    xs, ys = _data()

    def train(strategy):
        tf.random.set_seed(9)
        with strategy.scope():
            m = keras.Sequential([keras.layers.Dense(3)])
            m.build((None, 5))
            opt = keras.optimizers.SGD(learning_rate=0.5)

        @tf.function
        def step(xb, yb):
            def replica(xb, yb):
                with tf.GradientTape() as tape:
                    per = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=yb, logits=m(xb))
                    loss = tf.nn.compute_average_loss(per)
                opt.apply_gradients(zip(tape.gradient(loss, m.trainable_variables), m.trainable_variables))
                return loss
            return strategy.reduce("SUM", strategy.run(replica, args=(xb, yb)), axis=None)
        ds = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices((xs, ys)).batch(32))
        losses = [float(step(a, b)) for a, b in ds]
        return losses, m.get_weights()
    l1, w1 = train(tf.distribute.get_strategy())
    l2, w2 = train(tf.distribute.MultiWorkerMirroredStrategy())
    assert l1 == l2 and len(l1) == 3
    for a, b in zip(w1, w2):
        np.testing.assert_array_equal(a, b)


def test_average_losses_in_replica_context():
    s = tf.distribute.MirroredStrategy()
    assert float(s.run(lambda: tf.nn.compute_average_loss([1.0, 2.0, 6.0]))) == 3.0
    assert float(s.run(lambda: tf.nn.scale_regularization_loss([1.0, 2.0]))) == 3.0
    with s.scope():  # TF's error: these belong inside strategy.run
        with pytest.raises(RuntimeError, match="cross replica context"):
            tf.nn.compute_average_loss([1.0])
        with pytest.raises(RuntimeError, match="cross replica context"):
            tf.nn.scale_regularization_loss(1.0)


def test_distribute_from_function_needs_global_batches_in_fit_only_when_split():
    s = tf.distribute.MirroredStrategy()
    xs, ys = _data()
    with s.scope():
        m = _model()
    dd = s.distribute_datasets_from_function(lambda ctx: tf.data.Dataset.from_tensor_slices((xs, ys)).batch(32))
    assert len(m.fit(dd, epochs=1, verbose=0).history["loss"]) == 1  # one replica: its batches are global


TWO_RANKS = textwrap.dedent(r'''
    import json, sys
    import numpy as np
    import eagerflow as tf
    keras = tf.keras
    out = {}
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    n = strategy.num_replicas_in_sync
    r = int(strategy.experimental_distribute_values_from_function(lambda ctx: ctx.replica_id_in_sync_group))
    out["n"], out["rank"] = n, r
    out["mirrored_n"] = tf.distribute.MirroredStrategy().num_replicas_in_sync
    out["one_device_n"] = tf.distribute.OneDeviceStrategy("/cpu:0").num_replicas_in_sync
    x = tf.constant(np.full((r + 1, 2), r + 1.0, np.float32))  # rank 0: one row of 1s, rank 1: two rows of 2s
    out["sum"] = strategy.reduce("SUM", tf.constant([r + 1.0, 1.0]), axis=None).numpy().tolist()
    out["mean"] = strategy.reduce("MEAN", tf.constant([r + 1.0, 1.0]), axis=None).numpy().tolist()
    out["sum_axis"] = strategy.reduce("SUM", x, axis=0).numpy().tolist()
    out["mean_axis"] = strategy.reduce(tf.distribute.ReduceOp.MEAN, x, axis=0).numpy().tolist()
    out["gather"] = strategy.gather(x, axis=0).numpy().tolist()
    out["gather1"] = strategy.gather(tf.constant(np.full((2, r + 1), r, np.float32)), axis=1).numpy().tolist()
    def step(v):
        ctx = tf.distribute.get_replica_context()
        return ctx.all_reduce("SUM", v), ctx.replica_id_in_sync_group
    s, rid = strategy.run(step, args=(tf.constant(float(r + 1)),))
    out["run_sum"], out["rid"] = float(s), int(rid)
    with strategy.scope():
        tf.random.set_seed(100 + r)  # different on purpose: the scope mirrors rank 0's value
        v = tf.Variable(tf.random.normal([3]))
    out["var"] = v.numpy().tolist()
    ds = tf.data.Dataset.from_tensor_slices(np.arange(10, dtype=np.float32)).batch(5)
    out["shards"] = [e.numpy().tolist() for e in strategy.experimental_distribute_dataset(ds)]
    def dfn(ctx):
        return (tf.data.Dataset.from_tensor_slices(np.arange(8, dtype=np.float32))
                .skip(4 * ctx.input_pipeline_id).take(8 // ctx.num_input_pipelines).batch(ctx.get_per_replica_batch_size(4)))
    out["fromfn"] = [e.numpy().tolist() for e in strategy.distribute_datasets_from_function(dfn)]
    try:
        with strategy.scope():
            m0 = keras.Sequential([keras.layers.Dense(1)])
            m0.compile(optimizer="sgd", loss="mse")
        m0.fit(strategy.distribute_datasets_from_function(lambda ctx: tf.data.Dataset.from_tensor_slices(
            (np.ones((4, 2), np.float32), np.ones((4, 1), np.float32))).batch(2)), verbose=0)
        out["fit_fromfn"] = "no error"
    except ValueError as e:
        out["fit_fromfn"] = str(e)

    rng = np.random.default_rng(0)
    xs = rng.normal(size=(256, 6)).astype(np.float32)
    ys = (xs[:, :3].argmax(1)).astype(np.int32)
    def make():
        m = keras.Sequential([keras.layers.Dense(8, activation="relu"), keras.layers.Dense(3)])
        m.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
        return m
    tf.random.set_seed(5)
    ref = make()  # one process's training on the full global batches
    h_ref = ref.fit(xs, ys, batch_size=64, epochs=2, verbose=0, shuffle=False)
    tf.random.set_seed(5 if r == 0 else 51)  # rank 1 starts elsewhere: fit starts from rank 0's weights
    with strategy.scope():
        model = make()
    h = model.fit(xs, ys, batch_size=64, epochs=2, verbose=0, shuffle=False)
    out["loss"], out["loss_ref"] = h.history["loss"], h_ref.history["loss"]
    out["weight_diff"] = max(float(np.abs(a - b).max()) for a, b in zip(model.get_weights(), ref.get_weights()))
    # A custom loop as TF's guides write it: the loss scaled by the global batch, gradients summed.
    def custom(st):
        tf.random.set_seed(7)
        with st.scope():
            m = keras.Sequential([keras.layers.Dense(3)])
            m.build((None, 6))
            opt = keras.optimizers.SGD(learning_rate=0.5)
        def train_step(xb, yb):
            with tf.GradientTape() as tape:
                per = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=yb, logits=m(xb))
                loss = tf.nn.compute_average_loss(per)  # / 16 per rank x 2 replicas
            grads = tape.gradient(loss, m.trainable_variables)
            opt.apply_gradients(zip(grads, m.trainable_variables))
            return loss
        dd = st.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices((xs[:128], ys[:128])).batch(32))
        losses = [float(st.reduce("SUM", st.run(train_step, args=(a, b)), axis=None)) for a, b in dd]
        return losses, m.get_weights()
    l_ref, w_ref = custom(tf.distribute.get_strategy())
    l_d, w_d = custom(strategy)
    out["custom_loss"], out["custom_loss_ref"] = l_d, l_ref
    out["custom_diff"] = max(float(np.abs(a - b).max()) for a, b in zip(w_ref, w_d))
    with open(sys.argv[1] + f"/rank{r}.json", "w") as f:
        json.dump(out, f)
''')


@pytest.mark.skipif(not tf.dist.available() or MPIRUN is None, reason="this build has no MPI, or no mpirun")
def test_two_ranks(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(TWO_RANKS)
    # The children import the eagerflow this test imported (an in-tree one too).
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(tf.__file__)))
    env = dict(os.environ, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               PYTHONPATH=os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p))
    cmd = [MPIRUN, "--oversubscribe", "--bind-to", "none", "--mca", "btl", "self,vader", "-np", "2",
           sys.executable, str(script), str(tmp_path)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
    outs = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]
    for r, o in enumerate(outs):
        assert (o["n"], o["rank"], o["rid"]) == (2, r, r)
        assert o["mirrored_n"] == 2 and o["one_device_n"] == 1
        assert o["sum"] == [3.0, 2.0] and o["mean"] == [1.5, 1.0]
        assert o["sum_axis"] == [5.0, 5.0]  # 1 + 2 + 2
        assert o["mean_axis"] == pytest.approx([5.0 / 3] * 2)  # over all three rows
        assert o["gather"] == [[1.0, 1.0], [2.0, 2.0], [2.0, 2.0]]
        assert o["gather1"] == [[0.0, 1.0, 1.0], [0.0, 1.0, 1.0]]
        assert o["run_sum"] == 3.0
        assert "per-replica batches" in o["fit_fromfn"], o["fit_fromfn"]
        assert o["shards"] == ([[0.0, 1.0, 2.0], [5.0, 6.0, 7.0]] if r == 0 else [[3.0, 4.0], [8.0, 9.0]])
        assert o["fromfn"] == ([[0.0, 1.0], [2.0, 3.0]] if r == 0 else [[4.0, 5.0], [6.0, 7.0]])
        assert o["loss"] == pytest.approx(o["loss_ref"], abs=1e-6)
        assert o["weight_diff"] < 1e-6, o
        assert o["custom_loss"] == pytest.approx(o["custom_loss_ref"], abs=1e-6)
        assert o["custom_diff"] < 1e-6, o
    assert outs[0]["var"] == outs[1]["var"]  # mirrored from rank 0 despite different seeds


def test_cross_device_ops_and_communication_options():
    for ops in (tf.distribute.HierarchicalCopyAllReduce(), tf.distribute.NcclAllReduce(num_packs=2),
                tf.distribute.ReductionToOneDevice()):
        s = tf.distribute.MirroredStrategy(cross_device_ops=ops)
        assert s.num_replicas_in_sync == 1
        np.testing.assert_array_equal(ops.reduce("SUM", tf.constant([1.0, 2.0]), destinations="/cpu:0").numpy(), [1.0, 2.0])
        (m,) = ops.batch_reduce(tf.distribute.ReduceOp.MEAN, [(tf.constant(4.0), "/cpu:0")])
        assert float(m) == 4.0 and float(ops.broadcast(tf.constant(3.0), "/cpu:0")) == 3.0
    with pytest.raises(ValueError, match="cross_device_ops"):
        tf.distribute.MirroredStrategy(cross_device_ops="nccl")
    with pytest.raises(ValueError, match="devices"):
        tf.distribute.MirroredStrategy(devices="/gpu:0")
    exp = tf.distribute.experimental
    assert [c.value for c in exp.CommunicationImplementation] == ["AUTO", "RING", "NCCL"]
    assert exp.CollectiveCommunication is exp.CommunicationImplementation
    o = exp.CommunicationOptions()
    assert (o.bytes_per_pack, o.timeout_seconds, o.implementation) == (0, None, exp.CommunicationImplementation.AUTO)
    with pytest.raises(ValueError, match="bytes_per_pack"):
        exp.CommunicationOptions(bytes_per_pack=-1)
    s = tf.distribute.MultiWorkerMirroredStrategy(communication_options=exp.CommunicationOptions(
        implementation=exp.CommunicationImplementation.NCCL))
    assert s.num_replicas_in_sync == 1
    c = exp.CentralStorageStrategy()
    assert c.num_replicas_in_sync == 1 and c.extended.parameter_devices == ("/job:localhost/replica:0/task:0/device:CPU:0",)


def test_experimental_set_strategy():
    s = tf.distribute.MirroredStrategy()
    tf.distribute.experimental_set_strategy(s)
    try:
        assert tf.distribute.get_strategy() is s and tf.distribute.in_cross_replica_context()
    finally:
        tf.distribute.experimental_set_strategy(None)
    assert not tf.distribute.has_strategy()
