"""tf.train.Checkpoint's files in TensorFlow's format (python/eagerflow/_tf_checkpoint.py over the
C++ tensor-bundle reader and writer): the files' layout, every dtype, TF's reader API and
errors, Keras 3's names, and eagerflow's older checkpoints still restoring."""
import json
import os
import struct

import numpy as np
import pytest

import eagerflow as tf
from eagerflow import _checkpoint_io

MAGIC = 0xdb4775248b80fb57


def test_files_are_tensorflow_bundles(tmp_path):
    path = tf.train.Checkpoint(v=tf.Variable([1.0, 2.0])).write(str(tmp_path / "ck"))
    assert sorted(os.listdir(tmp_path)) == ["ck.data-00000-of-00001", "ck.index"]  # no temporary files left
    index = (tmp_path / "ck.index").read_bytes()
    assert struct.unpack("<Q", index[-8:])[0] == MAGIC  # LevelDB's table magic, as TF's index
    data = (tmp_path / "ck.data-00000-of-00001").read_bytes()
    assert struct.pack("<2f", 1.0, 2.0) in data  # the values' raw little-endian bytes
    graph = tf._core._bundle.parse_object_graph(tf.train.load_checkpoint(path).get_tensor(
        "_CHECKPOINTABLE_OBJECT_GRAPH"), "test")
    names = {name for child, name in graph[0]["children"]}
    assert names == {"v", "save_counter"}
    v_node = dict((name, child) for child, name in graph[0]["children"])["v"]
    assert graph[v_node]["attributes"] == [("VARIABLE_VALUE", "Variable", "v/.ATTRIBUTES/VARIABLE_VALUE")]
    assert graph[0]["has_checkpoint_values"]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
                                   "uint8", "bool"])
def test_every_dtype_round_trips(tmp_path, dtype):
    values = np.array([[0, 1, 1], [1, 0, 1]]) if dtype == "bool" else np.array([[1, -2, 3], [4, 5, -6]])
    if dtype.startswith("uint"):
        values = np.abs(values)
    v = tf.Variable(tf.cast(tf.constant(values), getattr(tf, dtype)))
    path = tf.train.Checkpoint(v=v).write(str(tmp_path / "ck"))
    reader = tf.train.load_checkpoint(path)
    key = "v/.ATTRIBUTES/VARIABLE_VALUE"
    assert reader.get_variable_to_dtype_map()[key] == getattr(tf, dtype)
    assert reader.get_variable_to_shape_map()[key] == [2, 3]
    np.testing.assert_array_equal(np.asarray(reader.get_tensor(key), dtype=np.float64), values)
    target = tf.Variable(tf.zeros([2, 3], dtype=getattr(tf, dtype)))
    tf.train.Checkpoint(v=target).restore(path).assert_consumed()
    np.testing.assert_array_equal(np.asarray(target.numpy(), dtype=np.float64), values)


def test_reader_api_as_tensorflow(tmp_path):
    ck = tf.train.Checkpoint(a=tf.Variable(3, dtype=tf.int64), e=tf.Variable(tf.zeros([0, 4])))
    ck.save(str(tmp_path / "ck"))
    ck.a.assign(5)
    ck.save(str(tmp_path / "ck"))
    assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "ck-2")
    state = (tmp_path / "checkpoint").read_text()
    assert state == 'model_checkpoint_path: "ck-2"\nall_model_checkpoint_paths: "ck-2"\n'  # byte for byte TF's
    reader = tf.train.load_checkpoint(str(tmp_path))  # a folder: its latest checkpoint
    scalar = reader.get_tensor("a/.ATTRIBUTES/VARIABLE_VALUE")
    assert scalar == 5 and isinstance(scalar, np.int64)  # a NumPy scalar, as TF's reader gives
    assert reader.get_tensor("e/.ATTRIBUTES/VARIABLE_VALUE").shape == (0, 4)
    assert reader.has_tensor("save_counter/.ATTRIBUTES/VARIABLE_VALUE") and not reader.has_tensor("nope")
    assert isinstance(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"), bytes)
    assert tf.train.load_variable(str(tmp_path / "ck-1"), "a/.ATTRIBUTES/VARIABLE_VALUE") == 3
    assert [k for k, _ in tf.train.list_variables(str(tmp_path))] == [
        "_CHECKPOINTABLE_OBJECT_GRAPH", "a/.ATTRIBUTES/VARIABLE_VALUE", "e/.ATTRIBUTES/VARIABLE_VALUE",
        "save_counter/.ATTRIBUTES/VARIABLE_VALUE"]


def test_errors_are_tensorflows(tmp_path):
    with pytest.raises(tf.errors.NotFoundError, match="Failed to find any matching files"):
        tf.train.load_checkpoint(str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="Couldn't find 'checkpoint' file"):
        tf.train.load_checkpoint(str(tmp_path))
    path = tf.train.Checkpoint(v=tf.Variable([1.0, 2.0, 3.0])).write(str(tmp_path / "ck"))
    with pytest.raises(tf.errors.NotFoundError, match="Key nope not found"):
        tf.train.load_checkpoint(path).get_tensor("nope")
    data = bytearray((tmp_path / "ck.data-00000-of-00001").read_bytes())
    data[2] ^= 0x40
    (tmp_path / "ck.data-00000-of-00001").write_bytes(bytes(data))
    with pytest.raises(tf.errors.DataLossError, match=r"ck\.index.*CRC-32C"):
        tf.train.Checkpoint(v=tf.Variable([0.0, 0.0, 0.0])).restore(path)
    index = (tmp_path / "ck.index").read_bytes()
    (tmp_path / "ck.index").write_bytes(index[:-5])
    with pytest.raises(tf.errors.DataLossError, match="ck.index"):
        tf.train.load_checkpoint(path)


def test_keras_objects_have_tensorflows_keras3_names(tmp_path):
    keras = tf.keras
    seq = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2), keras.layers.BatchNormalization()])
    inp = keras.Input((5,))
    emb = keras.layers.Embedding(10, 3)(inp)
    conv = keras.layers.Conv1D(2, 3)(emb)
    functional = keras.Model(inp, keras.layers.LayerNormalization()(conv))
    opt = keras.optimizers.SGD(0.1, momentum=0.9)
    seq.compile(opt, "mse")
    seq.train_on_batch(np.ones((2, 3), np.float32), np.ones((2, 2), np.float32))
    path = tf.train.Checkpoint(seq=seq, fn=functional, opt=opt).write(str(tmp_path / "k"))
    keys = {k for k, _ in tf.train.list_variables(path)}
    for key in ["seq/_functional/_operations/2/moving_mean", "fn/_operations/1/_embeddings",
                "fn/_operations/2/_kernel", "fn/_operations/2/bias", "fn/_operations/3/gamma",
                "opt/_iterations", "opt/_learning_rate", "opt/_trainable_variables/0", "opt/_variables/2"]:
        assert key + "/.ATTRIBUTES/VARIABLE_VALUE" in keys, key
    # the momentum list of SGD is Keras 3's `momentums`, aligned with _trainable_variables
    graph = tf._core._bundle.parse_object_graph(tf.train.load_checkpoint(path).get_tensor(
        "_CHECKPOINTABLE_OBJECT_GRAPH"), "test")
    root = {name: child for child, name in graph[0]["children"]}
    opt_children = {name: child for child, name in graph[root["opt"]]["children"]}
    assert len(graph[opt_children["momentums"]]["children"]) == len(seq.trainable_variables)
    assert float(tf.train.load_variable(path, "opt/_learning_rate/.ATTRIBUTES/VARIABLE_VALUE")) == pytest.approx(0.1)


def test_nested_keras3_structures(tmp_path):
    # layers whose Keras 3 counterparts keep weights in sub-objects eagerflow's C++ layers do not have
    keras = tf.keras
    inp = keras.Input((3, 4))
    h = keras.layers.MultiHeadAttention(2, 3)(inp, inp)
    h = keras.layers.LSTM(2, return_sequences=True)(h)
    out = keras.layers.Bidirectional(keras.layers.GRU(2))(h)
    model = keras.Model(inp, out)
    path = tf.train.Checkpoint(m=model).write(str(tmp_path / "n"))
    keys = {k for k, _ in tf.train.list_variables(path)}
    for key in ["m/_operations/1/_query_dense/_kernel", "m/_operations/1/_output_dense/bias",
                "m/_operations/2/cell/recurrent_kernel", "m/_operations/3/forward_layer/cell/kernel",
                "m/_operations/3/backward_layer/cell/bias"]:
        assert key + "/.ATTRIBUTES/VARIABLE_VALUE" in keys, key
    x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 3, 4)
    inp2 = keras.Input((3, 4))
    h2 = keras.layers.LSTM(2, return_sequences=True)(keras.layers.MultiHeadAttention(2, 3)(inp2, inp2))
    fresh = keras.Model(inp2, keras.layers.Bidirectional(keras.layers.GRU(2))(h2))
    tf.train.Checkpoint(m=fresh).restore(path).assert_consumed()
    np.testing.assert_allclose(fresh(x).numpy(), model(x).numpy(), atol=1e-6)


def test_learning_rate_and_slots_restore(tmp_path):
    w = tf.Variable([1.0, -1.0])
    opt = tf.keras.optimizers.Adam(0.05)
    opt.apply_gradients([(tf.constant([0.5, 2.0]), w)])
    path = tf.train.Checkpoint(w=w, opt=opt).write(str(tmp_path / "ck"))
    w2, opt2 = tf.Variable([0.0, 0.0]), tf.keras.optimizers.Adam(0.001)
    status = tf.train.Checkpoint(w=w2, opt=opt2).restore(path)
    assert opt2.learning_rate == pytest.approx(0.05)
    opt.apply_gradients([(tf.constant([1.0, 1.0]), w)])
    opt2.apply_gradients([(tf.constant([1.0, 1.0]), w2)])  # made and restored before this update
    status.assert_consumed()
    np.testing.assert_allclose(w2.numpy(), w.numpy(), rtol=1e-6)
    np.testing.assert_allclose(opt2._slots_of(w2)["v"].numpy(), opt._slots_of(w)["v"].numpy(), rtol=1e-6)
    assert int(opt2.iterations.numpy()) == 2


def test_older_eagerflow_checkpoints_still_restore(tmp_path):
    # eagerflow's earlier format and names: a JSON index, `layer-<i>`, `kernel`, `iterations`,
    # slots beside their variable
    k = np.arange(6, dtype=np.float32).reshape(3, 2)
    b = np.array([0.5, -0.5], np.float32)
    m = np.full((3, 2), 0.25, np.float32)
    graph = {"nodes": [
        {"children": [["model", 1], ["optimizer", 2], ["save_counter", 3]]},
        {"children": [["layer-0", 4]]},
        {"children": [["iterations", 5]]},
        {"children": [], "key": "save_counter/.ATTRIBUTES/VARIABLE_VALUE"},
        {"children": [["kernel", 6], ["bias", 7]]},
        {"children": [], "key": "optimizer/iterations/.ATTRIBUTES/VARIABLE_VALUE"},
        {"children": [], "key": "model/layer-0/kernel/.ATTRIBUTES/VARIABLE_VALUE",
         "slots": [[2, "m", "model/layer-0/kernel/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE"]]},
        {"children": [], "key": "model/layer-0/bias/.ATTRIBUTES/VARIABLE_VALUE"},
    ]}
    values = {"save_counter/.ATTRIBUTES/VARIABLE_VALUE": ("int64", np.array(1)),
              "optimizer/iterations/.ATTRIBUTES/VARIABLE_VALUE": ("int64", np.array(4)),
              "model/layer-0/kernel/.ATTRIBUTES/VARIABLE_VALUE": ("float32", k),
              "model/layer-0/kernel/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE": ("float32", m),
              "model/layer-0/bias/.ATTRIBUTES/VARIABLE_VALUE": ("float32", b)}
    prefix = str(tmp_path / "old")
    _checkpoint_io.write_legacy(prefix, graph, values)
    assert json.loads((tmp_path / "old.index").read_text())["format"] == "eagerflow-object-checkpoint"
    model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2)])
    opt = tf.keras.optimizers.Adam(0.1)
    status = tf.train.Checkpoint(model=model, optimizer=opt).restore(prefix)
    np.testing.assert_array_equal(model.layers[0].kernel.numpy(), k)
    np.testing.assert_array_equal(model.layers[0].bias.numpy(), b)
    opt.apply_gradients([(tf.zeros_like(v), v) for v in model.trainable_variables])
    np.testing.assert_allclose(opt._slots_of(model.layers[0].kernel)["m"].numpy(), 0.9 * m, rtol=1e-6)
    assert int(opt.iterations.numpy()) == 5
    status.assert_consumed()
    assert tf.train.load_variable(prefix, "model/layer-0/bias/.ATTRIBUTES/VARIABLE_VALUE").tolist() == [0.5, -0.5]
