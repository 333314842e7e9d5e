"""ef.onnx.load_model: ONNX graphs imported as functions of eagerflow ops. Graphs built with
onnx.helper the way PyTorch's and TensorFlow's exporters emit them run like onnxruntime on the
same inputs (1e-5); eagerflow's own exports come back with the original model's numbers; an
imported MLP fine-tunes (its gradients equal the original model's and finite differences);
bad files are clean errors."""
import math

import numpy as np
import pytest

import eagerflow as ef
from eagerflow import keras

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

L = keras.layers
F32 = TensorProto.FLOAT


def rng(seed=0):
    return np.random.default_rng(seed)


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def model_bytes(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m.SerializeToString()


def run_both(data, feeds, atol=1e-5):
    """Runs the model in onnxruntime and in eagerflow; asserts they agree; returns eagerflow's."""
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    want = session.run(None, feeds)
    f = ef.onnx.load_model(data)
    got = f(**feeds)
    got = got if isinstance(got, list) else [got]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=atol)
    return f


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


# ---------------------------------------------------------------- graphs as exporters write them

def mlp_bytes(seed=0, opset=17):
    r = rng(seed)
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1", transB=1),
        helper.make_node("Relu", ["h"], ["a"], name="relu"),
        helper.make_node("Gemm", ["a", "w2", "b2"], ["logits"], name="fc2", transB=1),
    ]
    inits = [init("w1", r.normal(size=(16, 8)).astype(np.float32) * 0.3), init("b1", r.normal(size=16).astype(np.float32) * 0.1),
             init("w2", r.normal(size=(3, 16)).astype(np.float32) * 0.3), init("b2", np.zeros(3, np.float32))]
    return model_bytes(nodes, [vi("x", F32, ["batch", 8])], [vi("logits", F32, ["batch", 3])], inits, opset)


def test_mlp_like_torch_matches_onnxruntime_by_position_and_name():
    data = mlp_bytes()
    x = rng(1).normal(size=(5, 8)).astype(np.float32)
    f = run_both(data, {"x": x})
    assert f.input_names == ["x"] and f.output_names == ["logits"]
    assert tuple(f.inputs[0].shape) == (None, 8)
    assert [v.name for v in f.variables] == ["w1", "b1", "w2", "b2"]
    assert len(f.trainable_variables) == 4
    np.testing.assert_allclose(np.asarray(f(x)), np.asarray(f(x=ef.constant(x))), rtol=0, atol=0)
    # another batch size traces again and still agrees
    x7 = rng(2).normal(size=(7, 8)).astype(np.float32)
    run_both(data, {"x": x7})


def cnn_bytes():
    r = rng(3)
    n = lambda *s: (r.normal(size=s) * 0.3).astype(np.float32)  # noqa: E731
    nodes = [
        helper.make_node("Conv", ["x", "c1w", "c1b"], ["c1"], name="conv1", pads=[1, 1, 1, 1], strides=[1, 1], kernel_shape=[3, 3]),
        helper.make_node("BatchNormalization", ["c1", "bn_s", "bn_b", "bn_m", "bn_v"], ["bn"], name="bn", epsilon=1e-3),
        helper.make_node("Relu", ["bn"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "c2w"], ["c2"], name="grouped", group=2, dilations=[2, 2], pads=[2, 1, 2, 1]),
        helper.make_node("AveragePool", ["c2"], ["p2"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("MaxPool", ["p2"], ["p3"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
        helper.make_node("AveragePool", ["c2"], ["p4"], kernel_shape=[2, 2], strides=[1, 1], pads=[0, 0, 1, 1], count_include_pad=1),
        helper.make_node("GlobalAveragePool", ["p4"], ["gap"]),
        # x.view(x.size(0), -1) as torch exports it
        helper.make_node("Shape", ["gap"], ["shp"]),
        helper.make_node("Gather", ["shp", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus1"], ["target"], axis=0),
        helper.make_node("Reshape", ["gap", "target"], ["flat"]),
        helper.make_node("Gemm", ["flat", "fw", "fb"], ["y"], transB=1),
        helper.make_node("Flatten", ["p3"], ["y2"], axis=1),
    ]
    inits = [init("c1w", n(4, 3, 3, 3)), init("c1b", n(4)), init("bn_s", 1 + n(4)), init("bn_b", n(4)), init("bn_m", n(4)),
             init("bn_v", np.abs(n(4)) + 0.5), init("c2w", n(6, 2, 3, 3)), init("fw", n(5, 6)), init("fb", n(5)),
             init("zero", np.array(0, np.int64)), init("axes0", np.array([0], np.int64)), init("minus1", np.array([-1], np.int64))]
    return model_bytes(nodes, [vi("x", F32, ["N", 3, 12, 12])], [vi("y", F32, None), vi("y2", F32, None)], inits)


def test_cnn_like_torch_matches_onnxruntime():
    x = rng(4).normal(size=(2, 3, 12, 12)).astype(np.float32)
    run_both(cnn_bytes(), {"x": x})


def test_conv1d_and_same_padding():
    r = rng(5)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], auto_pad="SAME_UPPER", strides=[2]),
             helper.make_node("MaxPool", ["c"], ["y"], kernel_shape=[2], strides=[1], pads=[0, 1]),
             helper.make_node("Conv", ["x", "w2"], ["z"], auto_pad="SAME_LOWER", kernel_shape=[2, 2], group=3)]
    inits = [init("w", (r.normal(size=(4, 3, 3)) * 0.3).astype(np.float32)), init("b", r.normal(size=4).astype(np.float32)),
             init("w2", (r.normal(size=(3, 1, 2, 2)) * 0.3).astype(np.float32))]
    data = model_bytes(nodes[:2], [vi("x", F32, [2, 3, 9])], [vi("y", F32, None)], inits[:2])
    run_both(data, {"x": r.normal(size=(2, 3, 9)).astype(np.float32)})
    data2 = model_bytes(nodes[2:], [vi("x", F32, [2, 3, 5, 6])], [vi("z", F32, None)], inits[2:])
    run_both(data2, {"x": r.normal(size=(2, 3, 5, 6)).astype(np.float32)})


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_lstm_and_gru_match_onnxruntime(direction):
    r = rng(6)
    d = 2 if direction == "bidirectional" else 1
    h, i, t, b = 4, 3, 5, 2
    n = lambda *s: (r.normal(size=s) * 0.4).astype(np.float32)  # noqa: E731
    nodes = [
        helper.make_node("LSTM", ["x", "W", "R", "B", "", "h0", "c0"], ["Y", "Yh", "Yc"], hidden_size=h, direction=direction),
        helper.make_node("GRU", ["x", "GW", "GR", "GB"], ["GY", "GYh"], hidden_size=h, direction=direction, linear_before_reset=1),
        helper.make_node("GRU", ["x", "GW", "GR", "GB", "", "h0"], ["HY", "HYh"], hidden_size=h, direction=direction),
    ]
    inits = [init("W", n(d, 4 * h, i)), init("R", n(d, 4 * h, h)), init("B", n(d, 8 * h)), init("h0", n(d, b, h)), init("c0", n(d, b, h)),
             init("GW", n(d, 3 * h, i)), init("GR", n(d, 3 * h, h)), init("GB", n(d, 6 * h))]
    outs = [vi(name, F32, None) for name in ["Y", "Yh", "Yc", "GY", "GYh", "HY", "HYh"]]
    data = model_bytes(nodes, [vi("x", F32, [t, b, i])], outs, inits)
    run_both(data, {"x": r.normal(size=(t, b, i)).astype(np.float32)})


def test_lstm_batch_first_layout():
    # onnxruntime runs layout 0 only: the same weights in layout 0 on the transposed input.
    r = rng(7)
    h, i = 3, 2
    inits = [init("W", (r.normal(size=(1, 4 * h, i)) * 0.5).astype(np.float32)),
             init("R", (r.normal(size=(1, 4 * h, h)) * 0.5).astype(np.float32))]
    outs = [vi("Y", F32, None), vi("Yh", F32, None)]
    batch_first = model_bytes([helper.make_node("LSTM", ["x", "W", "R"], ["Y", "Yh"], hidden_size=h, layout=1)],
                              [vi("x", F32, [2, 4, i])], outs, inits)
    time_first = model_bytes([helper.make_node("LSTM", ["x", "W", "R"], ["Y", "Yh"], hidden_size=h)],
                             [vi("x", F32, [4, 2, i])], outs, inits)
    x = r.normal(size=(2, 4, i)).astype(np.float32)
    y, yh = run_both(time_first, {"x": x.transpose(1, 0, 2)}).__call__(x.transpose(1, 0, 2))
    got_y, got_yh = ef.onnx.load_model(batch_first)(x)
    np.testing.assert_allclose(np.asarray(got_y), np.asarray(y).transpose(2, 0, 1, 3), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(got_yh), np.asarray(yh).transpose(1, 0, 2), rtol=1e-6, atol=1e-6)


def transformer_bytes(opset=17):
    """One pre-norm block as torch exports nn.TransformerEncoderLayer-like code: embedding
    Gather, LayerNormalization, q/k/v MatMuls, head split through Shape/Gather/Concat/Reshape,
    scaled scores, a causal mask through Trilu/Where, Softmax, the output projection, an
    erf-GELU MLP, and mean pooling."""
    r = rng(8)
    vocab, d, heads, ff = 11, 8, 2, 16
    n = lambda *s: (r.normal(size=s) * 0.3).astype(np.float32)  # noqa: E731
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    N = helper.make_node
    nodes = [
        N("Gather", ["emb", "ids"], ["e"]),
        N("Add", ["e", "pos"], ["x0"]),
        N("LayerNormalization", ["x0", "ln_s", "ln_b"], ["x1"], axis=-1, epsilon=1e-5),
        N("MatMul", ["x1", "wq"], ["q"]), N("MatMul", ["x1", "wk"], ["k"]), N("MatMul", ["x1", "wv"], ["v"]),
        N("Shape", ["ids"], ["s"]),
        N("Gather", ["s", "c0"], ["bs"], axis=0), N("Gather", ["s", "c1"], ["sl"], axis=0),
        N("Unsqueeze", ["bs", "ax0"], ["bs1"]), N("Unsqueeze", ["sl", "ax0"], ["sl1"]),
        N("Concat", ["bs1", "sl1", "heads", "hd"], ["split_shape"], axis=0),
        N("Reshape", ["q", "split_shape"], ["q4"]), N("Reshape", ["k", "split_shape"], ["k4"]), N("Reshape", ["v", "split_shape"], ["v4"]),
        N("Transpose", ["q4"], ["qt"], perm=[0, 2, 1, 3]), N("Transpose", ["k4"], ["kt"], perm=[0, 2, 3, 1]),
        N("Transpose", ["v4"], ["vt"], perm=[0, 2, 1, 3]),
        N("MatMul", ["qt", "kt"], ["sc"]), N("Div", ["sc", "scale"], ["sc2"]),
        N("ConstantOfShape", ["sq"], ["ones"], value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0])),
        N("Trilu", ["ones"], ["tri"], upper=0),
        N("Equal", ["tri", "zero_f"], ["masked"]),
        N("Where", ["masked", "neg_inf", "sc2"], ["sc3"]),
        N("Softmax", ["sc3"], ["p"], axis=-1),
        N("MatMul", ["p", "vt"], ["o"]), N("Transpose", ["o"], ["ot"], perm=[0, 2, 1, 3]),
        N("Concat", ["bs1", "sl1", "dm"], ["merge_shape"], axis=0),
        N("Reshape", ["ot", "merge_shape"], ["o2"]), N("MatMul", ["o2", "wo"], ["o3"]), N("Add", ["o3", "x0"], ["x2"]),
        N("MatMul", ["x2", "w1"], ["f1"]), N("Add", ["f1", "b1"], ["f2"]),
        N("Div", ["f2", "sqrt2"], ["g1"]), N("Erf", ["g1"], ["g2"]), N("Add", ["g2", "one"], ["g3"]),
        N("Mul", ["f2", "g3"], ["g4"]), N("Mul", ["g4", "half"], ["g5"]),
        N("MatMul", ["g5", "w2"], ["f3"]), N("Add", ["f3", "x2"], ["x3"]),
        N("ReduceMean", ["x3"], ["pooled"], axes=[1], keepdims=0) if opset < 18 else
        N("ReduceMean", ["x3", "ax1"], ["pooled"], keepdims=0),
    ]
    inits = [init("emb", n(vocab, d)), init("pos", n(5, d)), init("ln_s", 1 + n(d)), init("ln_b", n(d)),
             init("wq", n(d, d)), init("wk", n(d, d)), init("wv", n(d, d)), init("wo", n(d, d)),
             init("w1", n(d, ff)), init("b1", n(ff)), init("w2", n(ff, d)),
             init("c0", np.array(0, np.int64)), init("c1", np.array(1, np.int64)), init("ax0", i64(0)), init("ax1", i64(1)),
             init("heads", i64(heads)), init("hd", i64(d // heads)), init("dm", i64(d)), init("sq", i64(5, 5)),
             init("scale", np.array(math.sqrt(d // heads), np.float32)), init("zero_f", np.array(0, np.float32)),
             init("neg_inf", np.array(-1e9, np.float32)), init("sqrt2", np.array(math.sqrt(2), np.float32)),
             init("one", np.array(1, np.float32)), init("half", np.array(0.5, np.float32))]
    return model_bytes(nodes, [vi("ids", TensorProto.INT64, ["batch", 5])], [vi("pooled", F32, None)], inits, opset)


@pytest.mark.parametrize("opset", [17, 18])
def test_small_transformer_matches_onnxruntime(opset):
    ids = rng(9).integers(0, 11, size=(3, 5)).astype(np.int64)
    f = run_both(transformer_bytes(opset), {"ids": ids})
    # the weights are the float initializers of rank >= 1; scalars and int64 shape pieces are constants
    names = {v.name for v in f.variables}
    assert {"emb", "wq", "ln_s", "w2"} <= names and not names & {"scale", "c0", "heads", "sq"}


def test_many_ops_match_onnxruntime():
    r = rng(10)
    N = helper.make_node
    x = r.normal(size=(2, 3, 4)).astype(np.float32)
    nodes = [
        N("Slice", ["x", "st", "en", "ax", "sp"], ["sl"]),  # x[:, ::-1, 1:]
        N("Split", ["x", "sizes"], ["s1", "s2"], axis=2),
        N("Concat", ["s2", "s1"], ["cat"], axis=2),
        N("Tile", ["s1", "reps"], ["tile"]),
        N("Expand", ["bias", "eshape"], ["exp"]),
        N("Range", ["r0", "r1", "r2"], ["rng"]),
        N("Cast", ["rng"], ["rngf"], to=TensorProto.FLOAT),
        N("Add", ["x", "rngf"], ["xr"]),
        N("Clip", ["xr", "lo", "hi"], ["clip"]),
        N("Abs", ["x"], ["ab"]), N("Sqrt", ["ab"], ["sq"]), N("Log", ["ab"], ["lg"]), N("Exp", ["x"], ["ex"]),
        N("Pow", ["ab", "three"], ["pw"]), N("Reciprocal", ["ex"], ["rc"]), N("Neg", ["x"], ["ng"]),
        N("LeakyRelu", ["x"], ["lr"], alpha=0.1), N("Elu", ["x"], ["el"], alpha=0.7), N("Selu", ["x"], ["se"]),
        N("HardSigmoid", ["x"], ["hs"]), N("Sigmoid", ["x"], ["sg"]), N("Tanh", ["x"], ["th"]),
        N("LogSoftmax", ["x"], ["ls"], axis=1), N("Gelu", ["x"], ["ge"], approximate="tanh"),
        N("ReduceSum", ["x", "ax1"], ["rs"], keepdims=1), N("ReduceMax", ["x", "ax02"], ["rm"], keepdims=0),
        N("Less", ["x", "rm_b"], ["le"]), N("Greater", ["x", "rm_b"], ["gt"]), N("Not", ["le"], ["nt"]),
        N("And", ["nt", "gt"], ["an"]), N("Where", ["an", "x", "ng"], ["wh"]),
        N("Einsum", ["x", "ein"], ["es"], equation="bij, jk -> bik"),
        N("Transpose", ["x"], ["tr"]),
        N("Squeeze", ["rs", "ax1"], ["sqz"]), N("Unsqueeze", ["sqz", "ax_m1"], ["usq"]),
        N("Identity", ["usq"], ["idn"]), N("Dropout", ["idn"], ["dr"]),
        N("Sub", ["x", "rm_b"], ["sb"]), N("Mul", ["sb", "sb"], ["ml"]), N("Div", ["ml", "three"], ["dv"]),
    ]
    inits = [init("st", np.array([-1, 1], np.int64)), init("en", np.array([-100, 2**62], np.int64)),
             init("ax", np.array([1, 2], np.int64)), init("sp", np.array([-1, 1], np.int64)),
             init("sizes", np.array([1, 3], np.int64)), init("reps", np.array([1, 2, 3], np.int64)),
             init("bias", r.normal(size=(3, 1)).astype(np.float32)), init("eshape", np.array([2, 1, 4], np.int64)),
             init("r0", np.array(0, np.int64)), init("r1", np.array(4, np.int64)), init("r2", np.array(1, np.int64)),
             init("lo", np.array(-0.5, np.float32)), init("hi", np.array(2.0, np.float32)), init("three", np.array(3, np.float32)),
             init("ax1", np.array([1], np.int64)), init("ax02", np.array([0, 2], np.int64)), init("ax_m1", np.array([-1], np.int64)),
             init("rm_b", np.array([0.1, -0.2, 0.3, 0.0], np.float32)), init("ein", r.normal(size=(4, 5)).astype(np.float32))]
    outs = ["sl", "cat", "tile", "exp", "clip", "sq", "lg", "pw", "rc", "lr", "el", "se", "hs", "sg", "th", "ls", "ge",
            "rm", "wh", "es", "tr", "dr", "dv"]
    data = model_bytes(nodes, [vi("x", F32, [2, 3, 4])], [vi(o, F32, None) for o in outs], inits, opset=20)
    run_both(data, {"x": x})


def test_opset_11_forms_of_squeeze_softmax_and_split():
    N = helper.make_node
    nodes = [N("Unsqueeze", ["x"], ["u"], axes=[0]), N("Squeeze", ["u"], ["s"], axes=[0]),
             N("Softmax", ["s"], ["sm"]),  # opset 11: axis 1, over the flattened trailing dims
             N("Split", ["s"], ["a", "b"], axis=1, split=[1, 2]), N("ReduceSum", ["s"], ["rs"], axes=[1])]
    data = model_bytes(nodes, [vi("x", F32, [2, 3, 2])], [vi(o, F32, None) for o in ["sm", "a", "b", "rs"]], opset=11)
    run_both(data, {"x": rng(11).normal(size=(2, 3, 2)).astype(np.float32)})


# ---------------------------------------------------------------- eagerflow's own exports

@pytest.mark.parametrize("kind", ["mlp", "cnn", "rnn", "attention"])
def test_eagerflow_exports_come_back_with_the_models_numbers(tmp_path, kind):
    ef.random.set_seed(12)
    if kind == "mlp":
        model = keras.Sequential([L.Dense(6, activation="relu"), L.Dense(3, activation="softmax")])
        x = rng(13).normal(size=(4, 5)).astype(np.float32)
    elif kind == "cnn":
        model = keras.Sequential([L.Conv2D(4, 3, padding="same", activation="relu"), L.MaxPooling2D(), L.BatchNormalization(),
                                  L.Conv2D(3, 2), L.GlobalAveragePooling2D(), L.Dense(2)])
        x = rng(14).normal(size=(2, 8, 8, 3)).astype(np.float32)
    elif kind == "rnn":
        model = keras.Sequential([L.LSTM(4, return_sequences=True), L.GRU(3, go_backwards=True), L.Dense(2)])
        x = rng(15).normal(size=(3, 6, 5)).astype(np.float32)
    else:
        inp = keras.Input((6, 8))
        h = L.MultiHeadAttention(num_heads=2, key_dim=4)(inp, inp, use_causal_mask=True)
        h = L.LayerNormalization()(h + inp)
        model = keras.Model(inp, L.Dense(3)(h))
        x = rng(16).normal(size=(4, 6, 8)).astype(np.float32)
    want = np.asarray(model.predict(x, verbose=0))
    path = tmp_path / f"{kind}.onnx"
    ef.onnx.export_model(model, path)
    f = ef.onnx.load_model(path)
    np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-5, atol=1e-5)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(np.asarray(f(x)), session.run(None, {f.input_names[0]: x})[0], rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- differentiation and fine-tuning

def test_gradients_equal_the_original_models_and_finite_differences(tmp_path):
    ef.random.set_seed(17)
    model = keras.Sequential([L.Dense(5, activation="tanh"), L.Dense(2)])
    x = rng(18).normal(size=(6, 4)).astype(np.float32)
    y = rng(19).normal(size=(6, 2)).astype(np.float32)
    model(x)
    ef.onnx.export_model(model, tmp_path / "m.onnx")
    f = ef.onnx.load_model(tmp_path / "m.onnx")
    assert len(f.trainable_variables) == 4

    def loss_of(fn):
        return ef.reduce_mean(ef.square(fn(x) - y))

    with ef.GradientTape() as tape:
        loss = loss_of(model)
    want = tape.gradient(loss, model.trainable_variables)
    with ef.GradientTape() as tape:
        loss2 = loss_of(f)
    got = tape.gradient(loss2, f.trainable_variables)
    np.testing.assert_allclose(float(loss2), float(loss), rtol=1e-6)
    # The exporter writes the same weights in the same shapes; match them by value.
    by_shape = {}
    for w, g in zip(model.trainable_variables, want):
        by_shape.setdefault(tuple(w.shape), []).append((np.asarray(w), np.asarray(g)))
    for v, g in zip(f.trainable_variables, got):
        assert g is not None, v.name
        matches = [wg for wv, wg in by_shape[tuple(v.shape)] if np.array_equal(wv, np.asarray(v))]
        assert matches, v.name
        np.testing.assert_allclose(np.asarray(g), matches[0], rtol=1e-5, atol=1e-6)
    # finite differences on one weight entry
    v, g = f.trainable_variables[0], np.asarray(got[0])
    base = np.asarray(v).copy()
    eps = 1e-2
    plus, minus = base.copy(), base.copy()
    plus.flat[3] += eps
    minus.flat[3] -= eps
    v.assign(plus)
    lp = float(loss_of(f))
    v.assign(minus)
    lm = float(loss_of(f))
    v.assign(base)
    assert abs((lp - lm) / (2 * eps) - g.flat[3]) < 2e-3


def test_fine_tuning_an_imported_mlp_lowers_the_loss_inside_ef_function():
    f = ef.onnx.load_model(mlp_bytes(seed=20))
    x = rng(21).normal(size=(32, 8)).astype(np.float32)
    labels = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0).astype(np.int64)
    opt = keras.optimizers.Adam(0.05)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @ef.function
    def step(x, labels):
        with ef.GradientTape() as tape:
            loss = loss_fn(labels, f(x))
        grads = tape.gradient(loss, f.trainable_variables)
        opt.apply_gradients(zip(grads, f.trainable_variables))
        return loss

    losses = [float(step(x, labels)) for _ in range(30)]
    assert losses[-1] < 0.5 * losses[0]
    # the variables changed, and a plain call sees them
    after = float(loss_fn(labels, f(x)))
    assert after < 0.5 * losses[0]


# ---------------------------------------------------------------- errors

def test_unsupported_ops_are_listed_at_once():
    N = helper.make_node
    nodes = [N("NonMaxSuppression", ["x", "x"], ["a"], name="nms"), N("Relu", ["x"], ["b"]),
             N("RoiAlign", ["x", "sc", "sc"], ["c"], name="up1"), N("RoiAlign", ["x", "sc", "sc"], ["d"], name="up2")]
    graph = helper.make_graph(nodes, "g", [vi("x", F32, [1, 1, 2, 2])], [vi(o, F32, None) for o in "abcd"],
                              [init("sc", np.ones(4, np.float32))])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(NotImplementedError, match=r"NonMaxSuppression \(node 'nms'\); RoiAlign \(nodes 'up1', 'up2'\)"):
        ef.onnx.load_model(m.SerializeToString())


def test_bad_files_are_clean_errors(tmp_path):
    data = mlp_bytes()
    with pytest.raises(ef.errors.InvalidArgumentError, match="not a valid ONNX model"):
        ef.onnx.load_model(data[: len(data) // 2])
    with pytest.raises(ef.errors.InvalidArgumentError, match="not a valid ONNX model"):
        ef.onnx.load_model(b"")
    with pytest.raises(ef.errors.NotFoundError):
        ef.onnx.load_model(tmp_path / "missing.onnx")
    m = onnx.load_from_string(data)
    m.opset_import[0].version = 9
    with pytest.raises(NotImplementedError, match="opset 9"):
        ef.onnx.load_model(m.SerializeToString())
    m = onnx.load_from_string(data)
    m.graph.node[1].input[0] = "nowhere"
    with pytest.raises(ef.errors.InvalidArgumentError, match="reads 'nowhere'"):
        ef.onnx.load_model(m.SerializeToString())
    m = onnx.load_from_string(data)
    m.graph.node[0].input[0] = "a"  # fc1 <- relu <- fc1: a cycle
    with pytest.raises(ef.errors.InvalidArgumentError, match="cycle"):
        ef.onnx.load_model(m.SerializeToString())
    m = onnx.load_from_string(data)
    m.graph.node[0].attribute[0].type = onnx.AttributeProto.FLOAT
    with pytest.raises(ef.errors.InvalidArgumentError, match="transB' must be an INT"):
        ef.onnx.load_model(m.SerializeToString())
    m = onnx.load_from_string(data)
    t = m.graph.initializer[0]
    t.data_location = onnx.TensorProto.EXTERNAL
    with pytest.raises(NotImplementedError, match="external file"):
        ef.onnx.load_model(m.SerializeToString())
    m = onnx.load_from_string(data)
    m.graph.initializer[0].raw_data = m.graph.initializer[0].raw_data[:-4]
    with pytest.raises(ef.errors.InvalidArgumentError, match="raw_data holds"):
        ef.onnx.load_model(m.SerializeToString())
    f = ef.onnx.load_model(data)
    with pytest.raises(TypeError, match="no input 'y'"):
        f(y=np.zeros((1, 8), np.float32))
    with pytest.raises(ValueError, match="must be float32"):
        f(np.zeros((1, 9), np.float32))


# ---------------------------------------------------------------- dynamic dims, typed fields

def test_dynamic_batch_inside_ef_function_with_an_input_signature():
    # The torch-style shape chains (Shape -> Gather -> Concat -> Reshape) run as runtime-shape
    # ops when the batch is dynamic in the trace.
    f = ef.onnx.load_model(transformer_bytes())
    g = ef.onnx.load_model(cnn_bytes())

    @ef.function(input_signature=[ef.TensorSpec([None, 5], ef.int64), ef.TensorSpec([None, 3, 12, 12], ef.float32)])
    def both(ids, x):
        return f(ids), g(x)

    for batch in (1, 4):
        ids = rng(30 + batch).integers(0, 11, size=(batch, 5)).astype(np.int64)
        x = rng(40 + batch).normal(size=(batch, 3, 12, 12)).astype(np.float32)
        got_f, (got_y, got_y2) = both(ids, x)
        np.testing.assert_allclose(np.asarray(got_f), np.asarray(f(ids)), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(got_y), np.asarray(g(x)[0]), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(got_y2), np.asarray(g(x)[1]), rtol=1e-5, atol=1e-6)
    assert both.experimental_get_tracing_count() == 1
    cf = f.get_concrete_function()  # at the file's specs, batch dynamic
    assert cf is not None


def test_typed_initializer_fields_and_float64_graphs():
    r = rng(50)
    w = r.normal(size=(3, 2))
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Add", ["m", "b"], ["y"]),
             helper.make_node("Cast", ["idx"], ["idx64"], to=TensorProto.INT64), helper.make_node("Gather", ["y", "idx64"], ["z"], axis=1)]
    inits = [helper.make_tensor("w", TensorProto.DOUBLE, [3, 2], w.flatten().tolist()),  # double_data, not raw
             helper.make_tensor("b", TensorProto.DOUBLE, [2], [0.5, -0.25]),
             helper.make_tensor("idx", TensorProto.INT32, [3], [1, 0, -1])]
    data = model_bytes(nodes, [vi("x", TensorProto.DOUBLE, [4, 3])], [vi("y", TensorProto.DOUBLE, None), vi("z", TensorProto.DOUBLE, None)],
                       inits)
    f = run_both(data, {"x": r.normal(size=(4, 3))})
    assert [v.name for v in f.variables] == ["w", "b"] and f.variables[0].dtype == ef.float64


def test_recurrent_ops_over_a_dynamic_sequence_length_run_as_a_scan():
    # Unrolled at each static length; inside ef.function with the time axis dynamic, one
    # ef.scan per direction (one trace for every length).
    r = rng(51)
    h = 2
    nodes = [helper.make_node("LSTM", ["x", "W", "R", "B"], ["Y", "Yh", "Yc"], hidden_size=h, direction="bidirectional"),
             helper.make_node("GRU", ["x", "GW", "GR"], ["G", "Gh"], hidden_size=h, direction="reverse")]
    inits = [init("W", (r.normal(size=(2, 4 * h, 3)) * 0.5).astype(np.float32)), init("R", (r.normal(size=(2, 4 * h, h)) * 0.5).astype(np.float32)),
             init("B", (r.normal(size=(2, 8 * h)) * 0.5).astype(np.float32)),
             init("GW", (r.normal(size=(1, 3 * h, 3)) * 0.5).astype(np.float32)), init("GR", (r.normal(size=(1, 3 * h, h)) * 0.5).astype(np.float32))]
    outs = [vi(o, F32, None) for o in ["Y", "Yh", "Yc", "G", "Gh"]]
    data = model_bytes(nodes, [vi("x", F32, ["time", "batch", 3])], outs, inits)
    f = ef.onnx.load_model(data)
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])

    @ef.function(input_signature=[ef.TensorSpec([None, None, 3], ef.float32)])
    def dynamic(x):
        return f(x)

    for shape in [(4, 1, 3), (7, 2, 3)]:
        x = r.normal(size=shape).astype(np.float32)
        want = session.run(None, {"x": x})
        for got in (f(x), dynamic(x)):
            for g, w in zip(got, want):
                np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5, atol=1e-5)
    assert dynamic.experimental_get_tracing_count() == 1
    with ef.GradientTape() as tape:
        loss = ef.reduce_sum(dynamic(r.normal(size=(5, 2, 3)).astype(np.float32))[0])
    grads = tape.gradient(loss, f.trainable_variables)
    assert all(g is not None for g in grads) and len(grads) == 5


@pytest.mark.parametrize("case", ["strided", "grouped_dilated", "one_d"])
def test_conv_transpose_matches_onnxruntime(case):
    r = rng(60)
    n = lambda *s: (r.normal(size=s) * 0.3).astype(np.float32)  # noqa: E731
    if case == "strided":
        node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2], pads=[1, 0, 1, 1], output_padding=[1, 0])
        shape, inits = [2, 3, 4, 5], [init("w", n(3, 4, 3, 3)), init("b", n(4))]
    elif case == "grouped_dilated":
        node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], group=2, dilations=[2, 1], strides=[1, 3], pads=[3, 1, 0, 2])
        shape, inits = [1, 4, 5, 4], [init("w", n(4, 3, 2, 3))]
    else:
        node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[3], pads=[1, 2])
        shape, inits = [2, 2, 6], [init("w", n(2, 3, 4)), init("b", n(3))]
    data = model_bytes([node], [vi("x", F32, shape)], [vi("y", F32, None)], inits)
    run_both(data, {"x": r.normal(size=shape).astype(np.float32)})


def test_constant_nodes_and_masks_from_runtime_lengths_like_torch():
    # torch writes shapes and scalars as Constant nodes, builds causal masks from the sequence
    # length (Shape -> Gather -> Range) and LSTM initial states from the batch size
    # (ConstantOfShape of a Concat of Shape pieces).
    r = rng(70)
    N = helper.make_node
    h = 3
    nodes = [
        N("Constant", [], ["c1"], value_int=1), N("Constant", [], ["c0"], value=numpy_helper.from_array(np.array(0, np.int64))),
        N("Constant", [], ["one"], value_ints=[1]), N("Constant", [], ["hid"], value_ints=[h]),
        N("Constant", [], ["scale"], value_float=0.5),
        N("Shape", ["x"], ["s"]), N("Gather", ["s", "c1"], ["seq"]), N("Gather", ["s", "c0"], ["batch"]),
        N("Constant", [], ["step"], value=numpy_helper.from_array(np.array(1, np.int64))),
        N("Range", ["c0", "seq", "step"], ["pos"]),
        N("Unsqueeze", ["pos", "ax0"], ["row"]), N("Unsqueeze", ["pos", "ax1"], ["col"]),
        N("GreaterOrEqual", ["col", "row"], ["causal"]),  # [seq, seq]
        N("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
        N("MatMul", ["x", "xt"], ["scores"]), N("Mul", ["scores", "scale"], ["scaled"]),
        N("Where", ["causal", "scaled", "ninf"], ["masked"]), N("Softmax", ["masked"], ["p"], axis=-1),
        N("MatMul", ["p", "x"], ["ctx"]),
        N("Unsqueeze", ["batch", "ax0"], ["b1"]), N("Concat", ["one", "b1", "hid"], ["state_shape"], axis=0),
        N("ConstantOfShape", ["state_shape"], ["h0"]),
        N("Transpose", ["ctx"], ["tnc"], perm=[1, 0, 2]),
        N("LSTM", ["tnc", "W", "R", "", "", "h0", "h0"], ["Y", "Yh"], hidden_size=h),
    ]
    inits = [init("ax0", np.array([0], np.int64)), init("ax1", np.array([1], np.int64)),
             init("ninf", np.array(-1e9, np.float32)),
             init("W", (r.normal(size=(1, 4 * h, 4)) * 0.5).astype(np.float32)),
             init("R", (r.normal(size=(1, 4 * h, h)) * 0.5).astype(np.float32))]
    data = model_bytes(nodes, [vi("x", F32, ["batch", "seq", 4])], [vi("Y", F32, None), vi("Yh", F32, None)], inits)
    for shape in [(2, 5, 4), (3, 2, 4)]:
        run_both(data, {"x": r.normal(size=shape).astype(np.float32)})


def test_keras_cnn_like_tf2onnx_writes_it():
    # tf2onnx keeps Keras' NHWC input and wraps Conv in Transposes, writes Dense as MatMul + Add,
    # Flatten as a Reshape to a constant [-1, n], and keeps Identity nodes.
    r = rng(80)
    n = lambda *s: (r.normal(size=s) * 0.3).astype(np.float32)  # noqa: E731
    N = helper.make_node
    nodes = [
        N("Transpose", ["input_1"], ["nchw"], perm=[0, 3, 1, 2]),
        N("Conv", ["nchw", "conv/kernel", "conv/bias"], ["conv"], kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"),
        N("Relu", ["conv"], ["relu"]),
        N("MaxPool", ["relu"], ["pool"], kernel_shape=[2, 2], strides=[2, 2]),
        N("Transpose", ["pool"], ["nhwc"], perm=[0, 2, 3, 1]),
        N("Reshape", ["nhwc", "flat_shape"], ["flat"]),
        N("MatMul", ["flat", "dense/kernel"], ["mm"]), N("Add", ["mm", "dense/bias"], ["logits"]),
        N("Softmax", ["logits"], ["probs"], axis=1), N("Identity", ["probs"], ["dense"]),
    ]
    inits = [init("conv/kernel", n(4, 3, 3, 3)), init("conv/bias", n(4)), init("flat_shape", np.array([-1, 16], np.int64)),
             init("dense/kernel", n(16, 5)), init("dense/bias", n(5))]
    data = model_bytes(nodes, [vi("input_1", F32, ["unk__6", 8, 8, 3])], [vi("dense", F32, ["unk__7", 5])], inits, opset=13)
    f = run_both(data, {"input_1": r.normal(size=(3, 8, 8, 3)).astype(np.float32)})
    # Keras names a variable by its last path component; the path is the initializer name
    assert [v.path for v in f.variables] == ["conv/kernel", "conv/bias", "dense/kernel", "dense/bias"]


def test_more_ops_match_onnxruntime():
    r = rng(90)
    N = helper.make_node
    x = r.normal(size=(2, 3, 4)).astype(np.float32)
    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    nodes = [
        N("Mish", ["x"], ["mish"]), N("Softplus", ["x"], ["softplus"]), N("Softsign", ["x"], ["softsign"]),
        N("HardSwish", ["x"], ["hardswish"]), N("PRelu", ["x", "slope"], ["prelu"]),
        N("Sign", ["x"], ["sign"]), N("Floor", ["x"], ["floor"]), N("Ceil", ["x"], ["ceil"]), N("Round", ["x"], ["round"]),
        N("Sin", ["x"], ["sin"]), N("Cos", ["x"], ["cos"]), N("Erf", ["x"], ["erf"]),
        N("Max", ["x", "slope", "x"], ["max3"]), N("Min", ["x", "slope"], ["min2"]), N("Sum", ["x", "slope"], ["sum2"]),
        N("Mean", ["x", "slope", "x"], ["mean3"]),
        N("ArgMax", ["x"], ["argmax"], axis=1), N("ArgMin", ["x"], ["argmin"], axis=-1, keepdims=0),
        N("CumSum", ["x", "ax1"], ["cumsum"], exclusive=1, reverse=1),
        N("TopK", ["x", "k2"], ["topv", "topi"]),
        N("Trilu", ["x", "k1"], ["tril"], upper=0),
        N("GatherElements", ["x", "ge_idx"], ["gather_el"], axis=2),
        N("GatherND", ["x", "gnd_idx"], ["gather_nd"]),
        N("Pad", ["x", "pads", "", "pad_axes"], ["pad_reflect"], mode="reflect"),
        N("InstanceNormalization", ["x", "in_s", "in_b"], ["inorm"], epsilon=1e-3),
        N("GlobalMaxPool", ["x"], ["gmp"]),
        N("ReduceMin", ["x", "ax1"], ["rmin"]), N("ReduceProd", ["x", "ax1"], ["rprod"], keepdims=0),
        N("ReduceLogSumExp", ["x", "ax1"], ["rlse"]), N("ReduceSumSquare", ["x", "ax1"], ["rss"]), N("ReduceL2", ["x", "ax1"], ["rl2"]),
        N("Greater", ["x", "slope"], ["gt"]), N("Less", ["x", "zero"], ["lt"]), N("Xor", ["gt", "lt"], ["xor"]),
        N("Or", ["gt", "lt"], ["or"]), N("Equal", ["xor", "or"], ["eq"]), N("Cast", ["eq"], ["eqf"], to=TensorProto.FLOAT),
        N("Size", ["x"], ["size"]), N("CastLike", ["size", "x"], ["sizef"]),
        N("Div", ["x", "zero"], ["inf"]), N("IsNaN", ["inf"], ["isnan"]), N("IsInf", ["inf"], ["isinf"], detect_negative=0),
    ]
    inits = [init("slope", r.normal(size=(3, 1)).astype(np.float32)), init("ax1", i64(1)), init("k2", i64(2)), init("k1", i64(1)),
             init("ge_idx", r.integers(0, 4, size=(2, 3, 2)).astype(np.int64)),
             init("gnd_idx", np.array([[0, 1], [1, 2]], np.int64)), init("pads", i64(1, 2, 1, 1)), init("pad_axes", i64(1, 2)),
             init("in_s", r.normal(size=3).astype(np.float32)), init("in_b", r.normal(size=3).astype(np.float32)),
             init("zero", np.array(0, np.float32))]
    outs = ["mish", "softplus", "softsign", "hardswish", "prelu", "sign", "floor", "ceil", "round", "sin", "cos", "erf", "max3", "min2",
            "sum2", "mean3", "cumsum", "topv", "tril", "gather_el", "gather_nd", "pad_reflect", "inorm", "gmp", "rmin", "rprod",
            "rlse", "rss", "rl2", "eqf", "sizef"]
    int_outs = ["argmax", "argmin", "topi"]
    bool_outs = ["isnan", "isinf"]
    data = model_bytes(nodes, [vi("x", F32, [2, 3, 4])],
                       [vi(o, F32, None) for o in outs] + [vi(o, TensorProto.INT64, None) for o in int_outs] +
                       [vi(o, TensorProto.BOOL, None) for o in bool_outs], inits, opset=18)
    run_both(data, {"x": x})


@pytest.mark.parametrize("case", ["torch_upsample_nearest", "linear_half_pixel_sizes", "linear_pytorch_half_pixel"])
def test_resize_matches_onnxruntime(case):
    r = rng(95)
    x = r.normal(size=(2, 3, 4, 5)).astype(np.float32)
    N = helper.make_node
    if case == "torch_upsample_nearest":
        node = N("Resize", ["x", "", "scales"], ["y"], mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")
        inits = [init("scales", np.array([1, 1, 2, 3], np.float32))]
    elif case == "linear_half_pixel_sizes":
        node = N("Resize", ["x", "", "", "sizes"], ["y"], mode="linear", coordinate_transformation_mode="half_pixel")
        inits = [init("sizes", np.array([2, 3, 7, 3], np.int64))]
    else:
        node = N("Resize", ["x", "", "scales"], ["y"], mode="linear", coordinate_transformation_mode="pytorch_half_pixel")
        inits = [init("scales", np.array([1, 1, 2, 2], np.float32))]
    data = model_bytes([node], [vi("x", F32, [2, 3, 4, 5])], [vi("y", F32, None)], inits, opset=13)
    run_both(data, {"x": x})
