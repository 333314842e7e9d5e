"""Attention from Python: ef.nn.scaled_dot_product_attention (the fused op) against NumPy's
softmax(q k^T) v and central differences, ef.keras.layers.MultiHeadAttention against Keras 3
numbers on fixed weights, causality, functional models, fit, get_config and save/load, and
PositionalEmbedding."""
import numpy as np
import pytest

import eagerflow as ef
from gradcheck import assert_directional_derivatives

keras = ef.keras
L = keras.layers


def naive(q, k, v, mask=None, causal=False):
    """softmax(q k^T / sqrt(d), masked) v in NumPy (float64); masked probabilities are 0 (Keras 3)."""
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    visible = np.ones(s.shape, bool)
    if mask is not None:
        visible &= np.broadcast_to(mask, s.shape)
    if causal:
        visible &= np.tril(np.ones(s.shape[-2:], bool))
    s = np.where(visible, s, -1e9)
    p = np.exp(s - s.max(-1, keepdims=True))
    p = np.where(visible, p / p.sum(-1, keepdims=True), 0.0)
    return p @ v


def rand(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape)


def test_fused_attention_matches_numpy_with_masks_and_causality():
    q, k, v = rand(2, 3, 130, 8, seed=1), rand(2, 3, 140, 8, seed=2), rand(2, 3, 140, 5, seed=3)
    mask = np.random.default_rng(4).uniform(size=(2, 1, 130, 140)) > 0.2
    mask[0, 0, 7, :] = False  # a query that sees no key outputs zeros
    for m in (None, mask):
        for causal in (False, True):
            got = ef.nn.scaled_dot_product_attention(q, k, v, mask=m, is_causal=causal).numpy()
            np.testing.assert_allclose(got, naive(q, k, v, m, causal), rtol=1e-10, atol=1e-12)
    assert not ef.nn.scaled_dot_product_attention(q, k, v, mask=mask).numpy()[0, :, 7].any()
    f32 = ef.nn.scaled_dot_product_attention(q.astype(np.float32), k.astype(np.float32), v.astype(np.float32),
                                             is_causal=True)
    assert f32.dtype == ef.float32
    np.testing.assert_allclose(f32.numpy(), naive(q, k, v, None, True), rtol=1e-4, atol=1e-5)
    bshd = ef.nn.scaled_dot_product_attention(q.transpose(0, 2, 1, 3), k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3),
                                              mask=mask, is_causal=True, layout="bshd").numpy()
    np.testing.assert_allclose(bshd.transpose(0, 2, 1, 3), naive(q, k, v, mask, True), rtol=1e-10, atol=1e-12)
    probs = ef.nn.attention_probabilities(q, k, mask=mask, is_causal=True).numpy()
    np.testing.assert_allclose(probs @ v, naive(q, k, v, mask, True), rtol=1e-10, atol=1e-12)


def test_fused_attention_gradients_match_central_differences():
    q, k, v = rand(1, 2, 4, 3, seed=5), rand(1, 2, 6, 3, seed=6), rand(1, 2, 6, 2, seed=7)
    w = rand(1, 2, 4, 2, seed=8)
    mask = np.random.default_rng(9).uniform(size=(1, 1, 4, 6)) > 0.3
    qt, kt, vt = ef.constant(q), ef.constant(k), ef.constant(v)
    with ef.GradientTape() as tape:
        tape.watch([qt, kt, vt])
        loss = ef.reduce_sum(ef.nn.scaled_dot_product_attention(qt, kt, vt, mask=mask, is_causal=True) * w)
    grads = [g.numpy() for g in tape.gradient(loss, [qt, kt, vt])]

    def f(a, b, c):
        return float((naive(a, b, c, mask, True) * w).sum())
    assert_directional_derivatives(f, [q, k, v], grads)


def test_fused_attention_errors_name_the_op_and_shapes():
    q = rand(1, 2, 3, 4).astype(np.float32)
    with pytest.raises(ef.Error, match="scaled_dot_product_attention.*head_dim"):
        ef.nn.scaled_dot_product_attention(q, rand(1, 2, 3, 5).astype(np.float32), q)
    with pytest.raises(ef.Error, match="does not broadcast"):
        ef.nn.scaled_dot_product_attention(q, q, q, mask=np.ones((4, 3), bool))
    with pytest.raises(ef.Error, match="rank 4"):
        ef.nn.scaled_dot_product_attention(q[0], q[0], q[0])


# ---------------------------------------------------------------- MultiHeadAttention
# Keras 3.15.1 (TensorFlow backend, the peer virtualenv), as tests/attention_test.cpp states:
# keras.layers.MultiHeadAttention(num_heads=2, key_dim=3, value_dim=4, output_shape=5) on query
# fill((2,4,6), 0.1), value fill((2,5,7), 0.2), key fill((2,5,3), 0.3), fill(shape, c) =
# sin(0.7 * arange(n) + c) * 0.8 in float32, weight i of layer.weights assigned fill(shape, 1.0 + i);
# mask fill((2,4,5), 0.5) > -0.3 with query row [1, 2] fully masked; return_attention_scores=True.
K_MASK = [1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1,                                  1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
K_MASKED_OUT = [0.5325115919113159, 0.01326066255569458, -0.512226939201355, -0.7968061566352844, -0.7066351175308228, 0.08156228065490723, -1.101703405380249, -1.7668207883834839, -1.6009745597839355, -0.6821654438972473, 0.5308833122253418, 0.32625120878219604, -0.03182185813784599, -0.3749285936355591, -0.5417006015777588, 0.3489607572555542, -0.5773779153823853, -1.2321666479110718, -1.307448148727417, -0.7678164839744568, 0.8251818418502808, 0.4534277319908142, -0.13158056139945984, -0.6547044515609741, -0.869910478591919, 0.5306457281112671, -0.1201443076133728, -0.7144285440444946, -0.9727058410644531, -0.7735045552253723, 0.7914866209030151, 0.5303753614425659, 0.01982033997774124, -0.5000565052032471, -0.7847489714622498, 0.5497286319732666, -0.03203713893890381, -0.5987352728843689, -0.8838388323783875, -0.7532592415809631]
K_MASKED_SCORES = [0.19114725291728973, 0.22698695957660675, 0.16347330808639526, 0.19175632297992706, 0.22663617134094238, 0.0, 0.0, 0.0, 0.3568335771560669, 0.6431664824485779, 0.25447508692741394, 0.2970004975795746, 0.1929837316274643, 0.255540668964386, 0.0, 0.0, 0.0, 0.28032588958740234, 0.3313758075237274, 0.38829830288887024, 0.14424937963485718, 0.29082825779914856, 0.12904027104377747, 0.14538997411727905, 0.2904921770095825, 0.0, 0.0, 0.0, 0.2654128670692444, 0.7345871329307556, 0.1869688779115677, 0.467744380235672, 0.15632107853889465, 0.1889656037092209, 0.0, 0.0, 0.0, 0.22807000577449799, 0.25785937905311584, 0.5140705704689026, 0.2848246395587921, 0.25575166940689087, 0.4594237506389618, 0.0, 0.0, 0.0, 0.2551683783531189, 0.2961983382701874, 0.19239559769630432, 0.2562377154827118, 0.0, 0.0, 0.0, 0.0, 0.0, 0.18516644835472107, 0.16593800485134125, 0.2980627119541168, 0.18411830067634583, 0.1667145937681198, 0.20651459693908691, 0.21285125613212585, 0.5806341767311096, 0.0, 0.0, 0.0, 0.18969136476516724, 0.46567556262016296, 0.15288282930850983, 0.19175021350383759, 0.0, 0.0, 0.0, 0.0, 0.0, 0.1458689570426941, 0.1501510590314865, 0.4078478515148163, 0.14446300268173218, 0.15166908502578735]
K_PLAIN_OUT = [0.5325117111206055, 0.01326078176498413, -0.512226939201355, -0.7968062162399292, -0.7066351771354675, 0.5842729806900024, 0.09198665618896484, -0.44356241822242737, -0.7704971432685852, -0.7350550889968872, 0.5134100914001465, 0.008012890815734863, -0.5011528134346008, -0.7746186256408691, -0.683769166469574, 0.5310564041137695, 0.0115012526512146, -0.5134630799293518, -0.7969377040863037, -0.7056001424789429, 0.5498700737953186, -0.03228825330734253, -0.5992608666419983, -0.884391725063324, -0.7535793781280518, 0.6081573367118835, 0.031234413385391235, -0.5603784322738647, -0.8884365558624268, -0.7986491322517395, 0.5992359519004822, 0.04282835125923157, -0.5337220430374146, -0.8592546582221985, -0.7806663513183594, 0.5497286319732666, -0.03203713893890381, -0.5987352728843689, -0.8838388919830322, -0.7532593011856079]
# MultiHeadAttention(num_heads=2, key_dim=4, use_bias=False), query = value = fill((2,6,8), 0.1),
# use_causal_mask=True.
K_CAUSAL_OUT = [-6.555219650268555, -8.196341514587402, -5.982595920562744, -0.9551427364349365, 4.521529197692871, 7.871654987335205, 7.519618511199951, 3.630988121032715, -2.3040294647216797, -6.7445902824401855, -8.013065338134766, -5.512870788574219, -0.4198862910270691, 4.870576858520508, 7.870331764221191, 7.168546676635742, 3.173053503036499, -2.2228875160217285, -6.57336950302124, -7.83229398727417, -5.407567024230957, -0.439577579498291, 4.735152244567871, 7.682866096496582, 7.12750768661499, 3.2800960540771484, -2.1099960803985596, -6.507723331451416, -7.844767093658447, -5.492294788360596, -0.5567095875740051, 4.64070463180542, 7.850432395935059, 7.2490668296813965, 3.2383525371551514, -2.2954094409942627, -6.749605178833008, -8.0293550491333, -5.532775402069092, -0.4340437054634094, 5.134340763092041, 7.937526226043701, 7.007569789886475, 2.781843423843384, -2.7522270679473877, -6.991881847381592, -7.943146228790283, -5.158623695373535, -0.028083331882953644, 5.151492118835449, 7.908239364624023, 6.945618629455566, 2.716365337371826, -2.790437936782837, -6.984854221343994, -7.894184589385986, -5.068211555480957, -0.01606815494596958, 5.043632984161377, 7.731234073638916, 6.782715320587158, 2.6441798210144043, -2.737955093383789, -6.8323869705200195, -7.856634616851807, -5.186038017272949, -0.07636670023202896, 5.069221496582031, 7.83067512512207, 6.90924072265625, 2.738281726837158, -2.720533609390259, -7.136523723602295, -7.971491813659668, -5.0573410987854, 0.2353544533252716, 5.417359352111816, 8.051495552062988, 6.89888858795166, 2.501624822616577, -3.334704637527466, -7.277894496917725, -7.798177242279053, -4.65085506439209, 0.6838366985321045, 5.696908950805664, 8.03063678741455, 6.587430000305176, 1.9889986515045166, -2.7837581634521484, -6.247269630432129, -6.772593021392822, -4.112659931182861, 0.48152151703834534, 4.849236011505127, 6.936278820037842]


def fill(shape, c):
    n = int(np.prod(shape))
    return (np.sin(0.7 * np.arange(n) + c) * 0.8).astype(np.float32).reshape(shape)


def assign_fill(layer):
    for i, w in enumerate(layer.weights):
        w.assign(fill(tuple(w.shape), 1.0 + i))


def test_multi_head_attention_matches_keras_on_fixed_weights():
    ef.keras.backend.clear_session()  # the default name counts layers made before (Keras' rule)
    layer = L.MultiHeadAttention(num_heads=2, key_dim=3, value_dim=4, output_shape=5)
    q, v, k = fill((2, 4, 6), 0.1), fill((2, 5, 7), 0.2), fill((2, 5, 3), 0.3)
    layer(q, v, key=k)
    assert [w.path for w in layer.weights] == [
        "multi_head_attention/query/kernel", "multi_head_attention/query/bias", "multi_head_attention/key/kernel",
        "multi_head_attention/key/bias", "multi_head_attention/value/kernel", "multi_head_attention/value/bias",
        "multi_head_attention/attention_output/kernel", "multi_head_attention/attention_output/bias"]
    assert tuple(layer.weights[0].shape) == (6, 2, 3) and tuple(layer.weights[6].shape) == (2, 4, 5)
    assign_fill(layer)
    np.testing.assert_allclose(layer(q, v, key=k).numpy().ravel(), K_PLAIN_OUT, rtol=2e-5, atol=2e-5)
    mask = np.array(K_MASK, bool).reshape(2, 4, 5)
    np.testing.assert_allclose(layer(q, v, key=k, attention_mask=mask).numpy().ravel(), K_MASKED_OUT,
                               rtol=2e-5, atol=2e-5)
    out, scores = layer(q, v, key=k, attention_mask=mask, return_attention_scores=True)
    assert scores.shape == (2, 2, 4, 5)
    np.testing.assert_allclose(out.numpy().ravel(), K_MASKED_OUT, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(scores.numpy().ravel(), K_MASKED_SCORES, rtol=2e-5, atol=2e-5)

    causal = L.MultiHeadAttention(num_heads=2, key_dim=4, use_bias=False)
    x = fill((2, 6, 8), 0.1)
    causal(x, x, use_causal_mask=True)
    assert len(causal.weights) == 4
    assign_fill(causal)
    np.testing.assert_allclose(causal(x, x, use_causal_mask=True).numpy().ravel(), K_CAUSAL_OUT,
                               rtol=2e-5, atol=2e-5)


def test_causal_attention_cannot_see_later_tokens():
    layer = L.MultiHeadAttention(num_heads=4, key_dim=8)
    x = rand(2, 10, 16, seed=11).astype(np.float32)
    before = layer(x, x, use_causal_mask=True).numpy()
    y = x.copy()
    y[:, 6] += 3.0
    after = layer(y, y, use_causal_mask=True).numpy()
    np.testing.assert_array_equal(after[:, :6], before[:, :6])
    assert np.abs(after[:, 6:] - before[:, 6:]).max() > 1e-3
    assert np.abs(layer(y, y).numpy()[:, :6] - layer(x, x).numpy()[:, :6]).max() > 1e-3


def test_multi_head_attention_traced_and_differentiable():
    layer = L.MultiHeadAttention(num_heads=2, key_dim=4, dropout=0.0)
    x = rand(3, 5, 6, seed=12).astype(np.float32)
    eager = layer(x, x, use_causal_mask=True).numpy()
    f = ef.function(lambda a: layer(a, a, use_causal_mask=True))
    np.testing.assert_allclose(f(x).numpy(), eager, rtol=1e-6, atol=1e-6)
    f(x)
    assert f.experimental_get_tracing_count() == 1
    xt = ef.constant(x)
    with ef.GradientTape() as tape:
        tape.watch(xt)
        loss = ef.reduce_sum(layer(xt, xt) ** 2)
    grads = tape.gradient(loss, [xt] + list(layer.trainable_weights))
    assert len(grads) == 9 and all(g is not None and np.isfinite(g.numpy()).all() for g in grads)


def test_dropout_only_while_training():
    layer = L.MultiHeadAttention(num_heads=2, key_dim=4, dropout=0.5)
    x = rand(2, 8, 6, seed=13).astype(np.float32)
    np.testing.assert_array_equal(layer(x, x).numpy(), layer(x, x, training=False).numpy())
    a, b = layer(x, x, training=True).numpy(), layer(x, x, training=True).numpy()
    assert np.abs(a - b).max() > 1e-4


def test_config_round_trip_and_bad_arguments():
    layer = L.MultiHeadAttention(num_heads=3, key_dim=4, value_dim=5, dropout=0.1, use_bias=False, output_shape=7,
                                 kernel_initializer="random_normal", name="attn")
    config = layer.get_config()
    assert config["num_heads"] == 3 and config["value_dim"] == 5 and config["output_shape"] == 7
    assert config["name"] == "attn" and config["use_bias"] is False
    back = L.MultiHeadAttention.from_config(config)
    assert back.get_config() == config
    with pytest.raises(ValueError, match="attention_axes"):
        L.MultiHeadAttention(2, 4, attention_axes=(1,))
    with pytest.raises(ef.Error, match="unknown initializer"):
        L.MultiHeadAttention(2, 4, kernel_initializer="nope")
    x = rand(2, 5, 6).astype(np.float32)
    with pytest.raises(ef.Error, match="rank 3"):
        L.MultiHeadAttention(2, 4)(x[0], x[0])


def _copy_task(n=256, seq=8, vocab=6):
    ids = np.random.default_rng(5).integers(1, vocab, size=(n, seq)).astype(np.int64)
    target = np.concatenate([np.zeros((n, 1), np.int64), ids[:, :-1]], axis=1)
    return ids, target


def test_tiny_transformer_trains_and_saves(tmp_path):
    ef.random.set_seed(3)
    vocab, seq = 6, 8
    inp = keras.Input((seq,), dtype="int64", name="ids")
    h = L.PositionalEmbedding(vocab, seq, 32)(inp)
    a = L.MultiHeadAttention(num_heads=4, key_dim=8)(h, h, use_causal_mask=True)
    h = L.LayerNormalization()(L.Add()([h, a]))
    logits = L.Dense(vocab)(L.Dense(64, activation="relu")(h))
    model = keras.Model(inp, logits)
    model.compile(optimizer=keras.optimizers.Adam(0.01),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    ids, target = _copy_task()
    hist = model.fit(ids, target, epochs=30, batch_size=32, verbose=0)
    # Copying the previous token needs (causal) attention to position t - 1; chance is 1/5.
    assert hist.history["loss"][-1] < 0.3, hist.history["loss"]
    assert hist.history["accuracy"][-1] > 0.9
    path = str(tmp_path / "t.efmodel")
    model.save(path)
    loaded = keras.models.load_model(path)
    want = np.asarray(model.predict(ids[:4], verbose=0))
    np.testing.assert_allclose(np.asarray(loaded.predict(ids[:4], verbose=0)), want, rtol=1e-6, atol=1e-6)
    changed = ids[:4].copy()
    changed[:, 7] = (changed[:, 7] + 1) % vocab
    moved = np.asarray(loaded.predict(changed, verbose=0))
    np.testing.assert_array_equal(moved[:, :7], want[:, :7])


def test_positional_embedding_adds_token_and_position_vectors():
    layer = L.PositionalEmbedding(vocabulary_size=7, sequence_length=5, embedding_dim=3, name="pe")
    ids = np.array([[1, 4, 0], [6, 2, 2]], np.int64)
    y = layer(ids).numpy()
    tok, pos = layer.token_embeddings.numpy(), layer.position_embeddings.numpy()
    np.testing.assert_allclose(y, tok[ids] + pos[None, :3], rtol=1e-6)
    assert L.TokenAndPositionEmbedding is L.PositionalEmbedding
    assert layer.get_config()["sequence_length"] == 5
    with pytest.raises(ef.Error, match="longer than sequence_length 5"):
        layer(np.zeros((2, 6), np.int64))


def test_onnx_export_runs_in_onnxruntime_like_eagerflow(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    ef.random.set_seed(6)
    inp = keras.Input((6, 8), name="x")
    h = L.MultiHeadAttention(num_heads=2, key_dim=4)(inp, inp, use_causal_mask=True)
    h = L.MultiHeadAttention(num_heads=2, key_dim=3, value_dim=5)(h, inp)
    model = keras.Model(inp, L.Dense(3)(h))
    x = rand(4, 6, 8, seed=14).astype(np.float32)
    want = np.asarray(model.predict(x, verbose=0))
    path = str(tmp_path / "attention.onnx")
    ef.onnx.export_model(model, path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_keras_masks_from_embedding_are_honoured():
    # Embedding(mask_zero=True) marks padding; attention then equals the explicit mask
    # query_mask[:, :, None] & value_mask[:, None, :] (Keras' _compute_attention_mask).
    embed = L.Embedding(9, 6, mask_zero=True)
    ids = np.array([[3, 1, 4, 0, 0], [5, 2, 6, 7, 0]], np.int64)
    x = embed(ids)
    pad = ids != 0
    layer = L.MultiHeadAttention(num_heads=2, key_dim=3)
    got = layer(x, x, use_causal_mask=True).numpy()
    plain = x.numpy()  # a new tensor: no mask
    want = layer(plain, plain, attention_mask=pad[:, :, None] & pad[:, None, :], use_causal_mask=True).numpy()
    np.testing.assert_array_equal(got, want)
    assert np.abs(layer(plain, plain, use_causal_mask=True).numpy() - want).max() > 1e-4
