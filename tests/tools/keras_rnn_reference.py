# Keras 3 reference numbers for tests/recurrent_test.cpp and tests/conv1d_test.cpp.
import os; os.environ["KERAS_BACKEND"]="tensorflow"; os.environ["CUDA_VISIBLE_DEVICES"]=""
import numpy as np, keras
def det(shape, a, b, scale):
    n = int(np.prod(shape)); return (scale*np.sin(a*np.arange(n)+b)).reshape(shape).astype(np.float32)
B,T,C,U = 2,4,5,3
x = det((B,T,C), 0.37, 0.1, 0.8)
h0 = det((B,U), 0.71, 0.3, 0.5); c0 = det((B,U), 0.29, 0.7, 0.5)
def fmt(name, a):
    a = np.asarray(a).ravel(); print(name, "=", "{" + ", ".join("%.7g" % v for v in a) + "};")
def setw(layer, shapes):
    ws = [det(s, 0.53 + 0.11*i, 0.2*i, 0.4) for i, s in enumerate(shapes)]
    layer.set_weights(ws); return ws
out = {}
# LSTM
for name, kw, init in [("lstm_seq", dict(return_sequences=True, return_state=True), False),
                       ("lstm_back_init", dict(go_backwards=True, return_state=True), True)]:
    l = keras.layers.LSTM(U, **kw); l.build((B,T,C)); setw(l, [(C,4*U),(U,4*U),(4*U,)])
    r = l(x, initial_state=[h0, c0]) if init else l(x)
    for i, t in enumerate(r): fmt(f"k_{name}_{i}", t)
for name, kw, init in [("gru_seq", dict(return_sequences=True, return_state=True), False),
                       ("gru_back_init", dict(go_backwards=True, return_state=True), True)]:
    l = keras.layers.GRU(U, **kw); l.build((B,T,C)); setw(l, [(C,3*U),(U,3*U),(2,3*U)])
    r = l(x, initial_state=h0) if init else l(x)
    for i, t in enumerate(r): fmt(f"k_{name}_{i}", t)
for name, kw in [("rnn_tanh", dict(return_sequences=True)), ("rnn_relu_back", dict(activation="relu", go_backwards=True, return_state=True))]:
    l = keras.layers.SimpleRNN(U, **kw); l.build((B,T,C)); setw(l, [(C,U),(U,U),(U,)])
    r = l(x); r = r if isinstance(r, (list, tuple)) else [r]
    for i, t in enumerate(r): fmt(f"k_{name}_{i}", t)
# Bidirectional LSTM concat / GRU sum: forward layer weights offset 0, backward offset 3
for name, mk, shapes, mode in [("bi_lstm_concat", lambda: keras.layers.LSTM(U, return_sequences=True), [(C,4*U),(U,4*U),(4*U,)], "concat"),
                               ("bi_gru_sum", lambda: keras.layers.GRU(U), [(C,3*U),(U,3*U),(2,3*U)], "sum")]:
    l = keras.layers.Bidirectional(mk(), merge_mode=mode); l.build((B,T,C))
    ws = [det(s, 0.53 + 0.11*i, 0.2*i, 0.4) for i, s in enumerate(shapes + shapes)]
    l.set_weights(ws); fmt(f"k_{name}_0", l(x))
# masking: ids with zeros (masked) at the end and in the middle
ids = np.array([[3, 1, 0, 2, 0], [4, 0, 0, 1, 2]], dtype=np.int32)
emb_w = det((5, C), 0.41, 0.5, 0.6)
for name, mk, shapes in [("mask_lstm", lambda: keras.layers.LSTM(U, return_sequences=True, return_state=True), [(C,4*U),(U,4*U),(4*U,)]),
                         ("mask_gru", lambda: keras.layers.GRU(U, return_sequences=True, return_state=True), [(C,3*U),(U,3*U),(2,3*U)]),
                         ("mask_rnn_back", lambda: keras.layers.SimpleRNN(U, return_sequences=True, go_backwards=True), [(C,U),(U,U),(U,)]),
                         ("mask_bi_lstm", lambda: keras.layers.Bidirectional(keras.layers.LSTM(U, return_sequences=True)), [(C,4*U),(U,4*U),(4*U,)]*2)]:
    e = keras.layers.Embedding(5, C, mask_zero=True); e.build((2,5)); e.set_weights([emb_w])
    l = mk(); l.build((2,5,C)); setw(l, shapes)
    r = l(e(ids)); r = r if isinstance(r, (list, tuple)) else [r]
    for i, t in enumerate(r): fmt(f"k_{name}_{i}", t)
# Conv1D / pooling
xc = det((2, 7, 3), 0.37, 0.1, 0.8)
for name, kw in [("conv_valid", dict(filters=4, kernel_size=3)), ("conv_same_s2", dict(filters=4, kernel_size=3, strides=2, padding="same")),
                 ("conv_causal_d2", dict(filters=4, kernel_size=3, padding="causal", dilation_rate=2, activation="relu"))]:
    l = keras.layers.Conv1D(**kw); l.build((2,7,3)); setw(l, [(3,3,4),(4,)]); fmt(f"k_{name}", l(xc))
fmt("k_maxpool_valid", keras.layers.MaxPooling1D(2)(xc))
fmt("k_maxpool_same_s1", keras.layers.MaxPooling1D(3, strides=1, padding="same")(xc))
fmt("k_avgpool_same", keras.layers.AveragePooling1D(3, strides=2, padding="same")(xc))
fmt("k_gap1d", keras.layers.GlobalAveragePooling1D()(xc))
fmt("k_gmp1d", keras.layers.GlobalMaxPooling1D()(xc))
fmt("k_gmp2d", keras.layers.GlobalMaxPooling2D()(det((2,3,4,2), 0.37, 0.1, 0.8)))
# GRU(reset_after=False), initial state h0
l = keras.layers.GRU(U, reset_after=False, return_sequences=True, return_state=True); l.build((B,T,C))
setw(l, [(C,3*U),(U,3*U),(3*U,)])
for i, t in enumerate(l(x, initial_state=h0)): fmt(f"k_gru_before_{i}", t)
print("# keras", keras.__version__)
