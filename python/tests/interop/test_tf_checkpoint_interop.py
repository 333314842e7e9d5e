"""TensorFlow's checkpoints both ways, checked by TensorFlow itself (2.21 with Keras 3): files
TF writes (a tf.Module tree, a Keras model with its Adam state after a training step, a
CheckpointManager folder) are listed, read and restored by eagerflow with the same values, and
files eagerflow writes are listed, read and restored by TF (assert_consumed) with the same values,
training continuing with the same loss."""
import json

import numpy as np
import pytest

import eagerflow as tf

keras = tf.keras

X = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3)
Y = np.array([[0.5, -1.0], [1.0, 0.0], [-0.5, 2.0], [0.25, 0.75]], dtype=np.float32)

# The same program in both clients (`tf`/`keras` are each side's own).
MODULE_CODE = """
class Net(tf.Module):
    def __init__(self):
        super().__init__()
        self.v = tf.Variable([1.5, -2.0])
        self.lst = [tf.Variable(3, dtype=tf.int32), tf.Variable([[4.0]], dtype=tf.float64)]
        self.d = {"a": tf.Variable([[5.0, 6.0]]), "b": tf.Variable([1, 2], dtype=tf.int8)}
        self.sub = tf.Module()
        self.sub.w = tf.Variable(7, dtype=tf.int64)
        self.sub.h = tf.Variable([0.5, 0.25], dtype=tf.float16)
        self.sub.bf = tf.Variable([1.5, -3.0], dtype=tf.bfloat16)
        self.sub.flag = tf.Variable([True, False])
        self.sub.u = tf.Variable([200, 3], dtype=tf.uint8)

def zero_net():
    n = Net()
    for v in n.trainable_variables + n.non_trainable_variables:
        v.assign(tf.zeros_like(v))
    return n
"""

KERAS_CODE = """
def make_model():
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh", name="d1"),
                             keras.layers.Dense(2, name="d2")])

def make_functional():
    inp = keras.Input((3,))
    out = keras.layers.Dense(2, name="f2")(keras.layers.Dense(3, activation="relu", name="f1")(inp))
    return keras.Model(inp, out)
"""

CLIENT_PRELUDE = "import json, os, numpy as np, tensorflow as tf, keras\n" + MODULE_CODE + KERAS_CODE
exec(MODULE_CODE + KERAS_CODE)  # noqa: S102 - eagerflow's side of the same program


def _objects(arrays):
    out = np.empty(len(arrays), dtype=object)
    out[:] = arrays
    return out


def _slots(opt, model):
    """Adam's m and v of each trainable variable, in the model's order."""
    out = []
    for v in model.trainable_variables:
        s = opt._slots_of(v)
        out += [s["m"].numpy(), s["v"].numpy()]
    return out


def test_tensorflow_written_checkpoints_read_and_restored(run_client, tmp_path):
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "y.npy", Y)
    run_client(CLIENT_PRELUDE + """
x, y = np.load("x.npy"), np.load("y.npy")
net = Net()
s = tf.Variable([b"ab", b"", b"xyz"])
c = tf.Variable([1 + 2j, -3j], dtype=tf.complex64)
tf.train.Checkpoint(mod=net, s=s, c=c).save("mod/ck")
json.dump([[k, shape] for k, shape in tf.train.list_variables("mod")], open("mod.json", "w"))
model, opt = make_model(), keras.optimizers.Adam(0.01)
model.compile(opt, "mse")
model.train_on_batch(x, y)
fm = make_functional()
fm(x)
ck = tf.train.Checkpoint(model=model, optimizer=opt, fm=fm)
path = ck.save("ker/ck")
np.savez("ker.npz", *[v.numpy() for v in model.weights], pred=model.predict(x, verbose=0),
         fpred=fm.predict(x, verbose=0), it=opt.iterations.numpy())
loss = model.train_on_batch(x, y)  # the next step, from the saved state
np.savez("next.npz", loss=np.float32(loss), *[v.numpy() for v in model.weights])
mgr = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(1.0)), "mgr", max_to_keep=2)
for i in range(3):
    mgr.checkpoint.v.assign(float(i))
    mgr.save()
json.dump({"latest": mgr.latest_checkpoint, "all": mgr.checkpoints}, open("mgr.json", "w"))
tf.compat.v1.train.Saver([tf.Variable([1.0, 2.0], name="w")]).save(None, "v1/model")  # name-based, TF 1's
""", tmp_path)
    # listing: TF's keys and shapes
    want = json.load(open(tmp_path / "mod.json"))
    got = [[k, list(shape)] for k, shape in tf.train.list_variables(str(tmp_path / "mod"))]
    assert got == want
    reader = tf.train.load_checkpoint(str(tmp_path / "mod"))
    assert list(reader.get_tensor("s/.ATTRIBUTES/VARIABLE_VALUE")) == [b"ab", b"", b"xyz"]
    np.testing.assert_array_equal(reader.get_tensor("c/.ATTRIBUTES/VARIABLE_VALUE"), [1 + 2j, -3j])
    assert reader.get_variable_to_dtype_map()["mod/sub/bf/.ATTRIBUTES/VARIABLE_VALUE"] == tf.bfloat16
    assert reader.get_tensor("mod/sub/w/.ATTRIBUTES/VARIABLE_VALUE") == 7
    # restoring a tf.Module tree
    net = zero_net()
    status = tf.train.Checkpoint(mod=net).restore(tf.train.latest_checkpoint(str(tmp_path / "mod")))
    status.assert_existing_objects_matched()  # (the string and complex variables are not restored here)
    ref = Net()
    for a, b in zip(net.trainable_variables + net.non_trainable_variables,
                    ref.trainable_variables + ref.non_trainable_variables):
        np.testing.assert_array_equal(np.asarray(a.numpy(), dtype=b.numpy().dtype), b.numpy())
    # a Keras model and its optimizer
    saved = np.load(tmp_path / "ker.npz")
    model, opt = make_model(), keras.optimizers.Adam(0.01)
    model.compile(opt, "mse")
    fm = make_functional()
    status = tf.train.Checkpoint(model=model, optimizer=opt, fm=fm).restore(
        tf.train.latest_checkpoint(str(tmp_path / "ker")))
    for i, w in enumerate(model.weights):
        np.testing.assert_array_equal(w.numpy(), saved[f"arr_{i}"])
    np.testing.assert_allclose(model.predict(X, verbose=0), saved["pred"], atol=1e-6)
    np.testing.assert_allclose(fm(X).numpy(), saved["fpred"], atol=1e-6)
    loss = model.train_on_batch(X, Y)  # its first step uses the restored slots and iterations
    status.assert_consumed()
    nxt = np.load(tmp_path / "next.npz")
    np.testing.assert_allclose(loss, nxt["loss"], rtol=1e-5)
    for i, w in enumerate(model.weights):
        np.testing.assert_allclose(w.numpy(), nxt[f"arr_{i}"], rtol=1e-5, atol=1e-6)
    assert int(opt.iterations.numpy()) == int(saved["it"]) + 1
    # CheckpointManager's folder: TF's state file
    mgr = json.load(open(tmp_path / "mgr.json"))
    # (the client gave the folder relative to its working directory, here tmp_path)
    assert tf.train.latest_checkpoint(str(tmp_path / "mgr")) == str(tmp_path / mgr["latest"])
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(0.0)), str(tmp_path / "mgr"), max_to_keep=2)
    assert manager.checkpoints == [str(tmp_path / p) for p in mgr["all"]]
    manager.restore_or_initialize()
    assert float(manager.checkpoint.v.numpy()) == 2.0
    # a name-based checkpoint: read by key; no object graph for Checkpoint.restore to match
    assert tf.train.list_variables(str(tmp_path / "v1")) == [("w", [2])]
    np.testing.assert_array_equal(tf.train.load_variable(str(tmp_path / "v1"), "w:0"), [1.0, 2.0])
    with pytest.raises(tf.errors.NotFoundError, match="name-based saver"):
        tf.train.Checkpoint(w=tf.Variable([0.0, 0.0])).restore(str(tmp_path / "v1" / "model"))


def test_eagerflow_written_checkpoints_restored_by_tensorflow(run_client, tmp_path):
    net = Net()
    tf.train.Checkpoint(mod=net).save(str(tmp_path / "mod" / "ck"))
    model, opt = make_model(), keras.optimizers.Adam(0.01)
    model.compile(opt, "mse")
    model.train_on_batch(X, Y)
    fm = make_functional()
    fm(X)
    tf.train.Checkpoint(model=model, optimizer=opt, fm=fm).save(str(tmp_path / "ker" / "ck"))
    np.savez(tmp_path / "ker.npz", *[v.numpy() for v in model.weights], pred=model.predict(X, verbose=0),
             fpred=fm(X).numpy(), it=opt.iterations.numpy(), slots=_objects(_slots(opt, model)))
    loss = model.train_on_batch(X, Y)
    np.savez(tmp_path / "next.npz", *[v.numpy() for v in model.weights], loss=np.float32(loss))
    mgr = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(1.0)), str(tmp_path / "mgr"), max_to_keep=2)
    for i in range(3):
        mgr.checkpoint.v.assign(float(i))
        mgr.save()
    listed = [[k, list(s)] for k, s in tf.train.list_variables(str(tmp_path / "ker"))]
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "y.npy", Y)
    out = run_client(CLIENT_PRELUDE + """
x, y = np.load("x.npy"), np.load("y.npy")
result = {}
net = zero_net()
tf.train.Checkpoint(mod=net).restore(tf.train.latest_checkpoint("mod")).assert_consumed()
ref = Net()
result["module"] = all(np.array_equal(np.asarray(a.numpy()), np.asarray(b.numpy()))
                       for a, b in zip(net.variables, ref.variables))
result["listed"] = [[k, shape] for k, shape in tf.train.list_variables("ker")]
saved = np.load("ker.npz", allow_pickle=True)
model, opt = make_model(), keras.optimizers.Adam(0.01)
model.compile(opt, "mse")
fm = make_functional()
fm(x)
opt.build(model.trainable_variables)
tf.train.Checkpoint(model=model, optimizer=opt, fm=fm).restore(tf.train.latest_checkpoint("ker")).assert_consumed()
result["weights"] = all(np.array_equal(w.numpy(), saved[f"arr_{i}"]) for i, w in enumerate(model.weights))
result["pred"] = float(np.abs(model.predict(x, verbose=0) - saved["pred"]).max())
result["fpred"] = float(np.abs(fm.predict(x, verbose=0) - saved["fpred"]).max())
result["iterations"] = int(opt.iterations.numpy()) == int(saved["it"])
slots = [s for pair in zip(opt._momentums, opt._velocities) for s in pair]
result["slots"] = max(float(np.abs(s.numpy() - w).max()) for s, w in zip(slots, saved["slots"]))
result["loss"] = float(model.train_on_batch(x, y))
nxt = np.load("next.npz")
result["next"] = max(float(np.abs(w.numpy() - nxt[f"arr_{i}"]).max()) for i, w in enumerate(model.weights))
mgr = tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(0.0)), "mgr", max_to_keep=2)
mgr.restore_or_initialize()
result["mgr"] = [mgr.latest_checkpoint, mgr.checkpoints, float(mgr.checkpoint.v.numpy())]
print(json.dumps(result))
""", tmp_path)
    result = json.loads(out.strip().splitlines()[-1])
    assert result["module"]
    assert result["listed"] == listed  # TF lists the same keys and shapes eagerflow does
    assert "model/_functional/_operations/2/bias/.ATTRIBUTES/VARIABLE_VALUE" in [k for k, _ in listed] or any(
        k.startswith("optimizer/_trainable_variables/") for k, _ in listed)
    assert result["weights"] and result["iterations"]
    assert result["pred"] < 1e-6 and result["fpred"] < 1e-6
    assert result["slots"] < 1e-7
    nxt = np.load(tmp_path / "next.npz")
    assert result["loss"] == pytest.approx(float(nxt["loss"]), rel=1e-5)
    assert result["next"] < 1e-5
    latest, kept, value = result["mgr"]
    assert latest == str(tmp_path / "mgr" / "ckpt-3") or latest.endswith("mgr/ckpt-3")
    assert [p.rsplit("/", 1)[-1] for p in kept] == ["ckpt-2", "ckpt-3"]
    assert value == 2.0


LAYERS_CODE = """
def cnn():
    return keras.Sequential([keras.Input((6, 6, 1)), keras.layers.Conv2D(2, 3, name="c"),
                             keras.layers.BatchNormalization(), keras.layers.Flatten(),
                             keras.layers.Dense(3, activation="relu"), keras.layers.Dropout(0.0),
                             keras.layers.Dense(2)])

def embedder():
    inp = keras.Input((4,), dtype="int32")
    h = keras.layers.LayerNormalization()(keras.layers.Embedding(7, 3)(inp))
    h = keras.layers.MultiHeadAttention(2, 3)(h, h)
    h = keras.layers.SimpleRNN(3, return_sequences=True)(keras.layers.LSTM(3, return_sequences=True)(h))
    return keras.Model(inp, keras.layers.Dense(1)(keras.layers.Bidirectional(keras.layers.GRU(2))(h)))

class Sub(keras.Model):
    def __init__(self):
        super().__init__()
        self.d1 = keras.layers.Dense(3)
        self.d2 = keras.layers.Dense(1)

    def call(self, x):
        return self.d2(self.d1(x))

X1 = np.linspace(-1, 1, 72, dtype=np.float32).reshape(2, 6, 6, 1)
X2 = np.array([[1, 2, 3, 4], [0, 1, 5, 6]], np.int32)
X3 = np.linspace(-1, 1, 10, dtype=np.float32).reshape(2, 5)

def trained(seed_weights=None):
    m1, m2, m3 = cnn(), embedder(), Sub()
    m2(X2)
    m3(X3)
    opt, opt2 = keras.optimizers.Adam(0.01), keras.optimizers.RMSprop(0.01, momentum=0.5)
    m1.compile(opt, "mse")
    m3.compile(opt2, "mse")
    m1.train_on_batch(X1, np.ones((2, 2), np.float32))
    m3.train_on_batch(X3, np.ones((2, 1), np.float32))
    return tf.train.Checkpoint(cnn=m1, emb=m2, sub=m3, opt=opt, opt2=opt2), (m1, m2, m3)

def fresh():
    m1, m2, m3 = cnn(), embedder(), Sub()
    m2(X2)
    m3(X3)
    opt, opt2 = keras.optimizers.Adam(0.01), keras.optimizers.RMSprop(0.01, momentum=0.5)
    m1.compile(opt, "mse")
    m3.compile(opt2, "mse")
    return tf.train.Checkpoint(cnn=m1, emb=m2, sub=m3, opt=opt, opt2=opt2), (m1, m2, m3), (opt, opt2)

def predictions(models):
    m1, m2, m3 = models
    return [np.asarray(m1(X1, training=False)), np.asarray(m2(X2)), np.asarray(m3(X3))]
"""
exec(LAYERS_CODE)  # noqa: S102


def test_keys_are_tensorflows_and_both_restore_the_other(run_client, tmp_path):
    # The same Keras program saved by each (Conv2D, BatchNormalization, Dropout, Embedding,
    # LayerNormalization, MultiHeadAttention, LSTM, SimpleRNN, Bidirectional GRU, a subclassed
    # model, Adam, RMSprop): TF's keys and
    # shapes, key for key; each restores the other's file.
    ckpt, models = trained()
    ckpt.save(str(tmp_path / "ef" / "ck"))
    ef_listed = [[k, list(s)] for k, s in tf.train.list_variables(str(tmp_path / "ef"))]
    np.savez(tmp_path / "ef_pred.npz", *predictions(models))
    out = run_client(CLIENT_PRELUDE + LAYERS_CODE + """
ckpt, models = trained()
ckpt.save("tf/ck")
np.savez("tf_pred.npz", *predictions(models))
listed = [[k, shape] for k, shape in tf.train.list_variables("tf")]
target, models, opts = fresh()
models[0].build((None, 6, 6, 1))
for opt, m in zip(opts, (models[0], models[2])):
    opt.build(m.trainable_variables)
target.restore(tf.train.latest_checkpoint("ef")).assert_consumed()
want = np.load("ef_pred.npz")
diff = max(float(np.abs(p - want[f"arr_{i}"]).max()) for i, p in enumerate(predictions(models)))
losses = [float(models[0].train_on_batch(X1, np.ones((2, 2), np.float32))),
          float(models[2].train_on_batch(X3, np.ones((2, 1), np.float32)))]
print(json.dumps({"listed": listed, "diff": diff, "losses": losses}))
""", tmp_path)
    result = json.loads(out.strip().splitlines()[-1])
    assert ef_listed == result["listed"]
    assert result["diff"] < 1e-6  # TF's model with eagerflow's weights predicts as eagerflow's
    target, models, opts = fresh()
    status = target.restore(tf.train.latest_checkpoint(str(tmp_path / "tf")))
    models[0].build((None, 6, 6, 1))
    want = np.load(tmp_path / "tf_pred.npz")
    for i, p in enumerate(predictions(models)):
        np.testing.assert_allclose(p, want[f"arr_{i}"], atol=1e-6)
    models[0].train_on_batch(X1, np.ones((2, 2), np.float32))  # the optimizers' first steps: their slots restored
    models[2].train_on_batch(X3, np.ones((2, 1), np.float32))
    status.assert_consumed()
    # TF continued eagerflow's training: its next losses are eagerflow's (a dropout rate of 0: no random masks)
    again, models = trained()
    again.restore(tf.train.latest_checkpoint(str(tmp_path / "ef"))).assert_consumed()
    ours = [float(models[0].train_on_batch(X1, np.ones((2, 2), np.float32))),
            float(models[2].train_on_batch(X3, np.ones((2, 1), np.float32)))]
    np.testing.assert_allclose(result["losses"], ours, rtol=1e-5)
