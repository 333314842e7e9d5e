"""TF's narrow and unsigned integers (tf.uint8, int8, int16, uint16, uint32, uint64): NumPy in and
out without widening, DType attributes, printing, tf.cast's wrapping and saturate_cast's clamping
(reference values from TF 2.21), arithmetic that wraps as TF's, mixing errors, index results that
keep their dtype, tf.image.convert_image_dtype's scaling, and tf.function with a uint8 signature."""
import numpy as np
import pytest

import eagerflow as tf

NEW = [(tf.uint8, np.uint8), (tf.int8, np.int8), (tf.int16, np.int16), (tf.uint16, np.uint16),
       (tf.uint32, np.uint32), (tf.uint64, np.uint64)]


@pytest.mark.parametrize("dtype, np_dtype", NEW)
def test_numpy_round_trips_without_widening(dtype, np_dtype):
    info = np.iinfo(np_dtype)
    a = np.array([info.min, 0, 1, info.max], np_dtype)
    t = tf.constant(a)
    assert t.dtype == dtype
    back = t.numpy()
    assert back.dtype == np_dtype
    np.testing.assert_array_equal(back, a)
    assert tf.convert_to_tensor(a).dtype == dtype and tf.Variable(a).dtype == dtype
    assert isinstance(tf.constant(np_dtype(3)).numpy(), np_dtype)
    assert np.asarray(t).dtype == np_dtype
    assert tf.dtypes.as_dtype(np_dtype) == dtype and tf.as_dtype(dtype.name) == dtype
    assert getattr(tf.dtypes, dtype.name) == dtype


@pytest.mark.parametrize("dtype, np_dtype", NEW)
def test_dtype_attributes(dtype, np_dtype):
    info = np.iinfo(np_dtype)
    assert dtype.min == int(info.min) and dtype.max == int(info.max)
    assert isinstance(dtype.max, int)
    assert dtype.is_integer and not dtype.is_floating
    assert dtype.is_unsigned == (info.min == 0)
    assert dtype.size == np.dtype(np_dtype).itemsize
    assert dtype.as_numpy_dtype == np.dtype(np_dtype)
    assert str(dtype) == f"<dtype: '{dtype.name}'>"
    assert tf.int32.is_integer and not tf.int32.is_unsigned and tf.float32.size == 4
    with pytest.raises(TypeError):
        tf.bool.min


def test_printing():
    t = tf.constant([1, 2], tf.uint8)
    assert str(t) == "tf.Tensor([1 2], shape=(2,), dtype=uint8)"
    assert repr(t) == "<tf.Tensor: shape=(2,), dtype=uint8, numpy=array([1, 2], dtype=uint8)>"
    assert str(tf.constant([-1, 2], tf.int8)) == "tf.Tensor([-1  2], shape=(2,), dtype=int8)"
    assert str(tf.constant(7, tf.uint64)) == "tf.Tensor(7, shape=(), dtype=uint64)"


def test_constants_of_a_requested_dtype_wrap_as_tfs():
    # TF 2.21: tf.constant(-1, tf.uint8) is 255 and 300 is 44 (NumPy's conversion); 1.5 is a TypeError.
    assert int(tf.constant(-1, tf.uint8)) == 255
    np.testing.assert_array_equal(tf.constant([-1, 300], tf.uint8).numpy(), np.array([255, 44], np.uint8))
    assert tf.constant([1, 2], dtype="int16").dtype == tf.int16
    with pytest.raises(TypeError):
        tf.constant(1.5, tf.uint8)


def test_casts_match_tf():
    i = np.array([300, -1, 70000, -129, 2**40 + 5], np.int64)
    want = {tf.uint8: [44, 255, 112, 127, 5], tf.int8: [44, -1, 112, 127, 5], tf.int16: [300, -1, 4464, -129, 5],
            tf.uint16: [300, 65535, 4464, 65407, 5], tf.uint32: [300, 4294967295, 70000, 4294967167, 5],
            tf.uint64: [300, 2**64 - 1, 70000, 2**64 - 129, 2**40 + 5]}
    for dtype, values in want.items():
        got = tf.cast(i, dtype).numpy()
        assert got.tolist() == values, dtype
        np.testing.assert_array_equal(got, i.astype(dtype.as_numpy_dtype))  # NumPy's wrap
    f = np.array([300.0, -1.0, 2.7, -2.7, np.nan], np.float32)
    assert tf.cast(f, tf.uint8).numpy().tolist() == [44, 255, 2, 254, 0]
    assert tf.cast(f, tf.int8).numpy().tolist() == [44, -1, 2, -2, 0]
    assert tf.cast(f, tf.uint16).numpy().tolist() == [300, 65535, 2, 65534, 0]
    assert tf.cast(tf.constant([0, 1, 2], tf.uint16), tf.bool).numpy().tolist() == [False, True, True]
    assert tf.cast(tf.constant([True, False]), tf.int8).numpy().tolist() == [1, 0]
    assert tf.cast(tf.constant([3.7, 250.6], tf.float16), tf.uint8).numpy().tolist() == [3, 250]
    np.testing.assert_array_equal(tf.cast(tf.constant([0, 255], tf.uint8), tf.float16).numpy(),
                                  np.array([0, 255], np.float16))


def test_saturate_cast_clamps():
    f = tf.constant([300.0, -1.0, 2.7, -2.7, 1e10, -1e10, np.nan])
    assert tf.dtypes.saturate_cast(f, tf.uint8).numpy().tolist() == [255, 0, 2, 0, 255, 0, 0]
    assert tf.saturate_cast(f, tf.int8).numpy().tolist() == [127, -1, 2, -2, 127, -128, 0]
    assert tf.saturate_cast(f, tf.uint32).numpy().tolist() == [300, 0, 2, 0, 4294967040, 0, 0]
    i = tf.constant([300, -1, 70000, -129], tf.int64)
    assert tf.saturate_cast(i, tf.uint8).numpy().tolist() == [255, 0, 255, 0]
    assert tf.saturate_cast(i, tf.int16).numpy().tolist() == [300, -1, 32767, -129]
    assert tf.saturate_cast(tf.constant([-1, 300]), "uint8").numpy().tolist() == [0, 255]
    assert tf.saturate_cast(tf.constant([1e10, -5.0], tf.float64), tf.uint32).numpy().tolist() == [4294967295, 0]


def test_arithmetic_wraps_as_tfs():
    a, b = tf.constant([200, 100, 255], tf.uint8), tf.constant([100, 200, 1], tf.uint8)
    assert (a + b).dtype == tf.uint8 and (a + b).numpy().tolist() == [44, 44, 0]
    assert (tf.constant([200], tf.uint8) + 100).numpy().tolist() == [44]
    assert int(tf.reduce_sum(a)) == 43 and int(tf.reduce_mean(a)) == 185 and int(tf.reduce_prod(a)) == 224
    assert tf.reduce_sum(a).dtype == tf.uint8
    assert int(tf.reduce_sum(tf.constant([100, 100, 100], tf.int8))) == 44
    assert (tf.constant([1, 2], tf.uint16) - tf.constant([3, 1], tf.uint16)).numpy().tolist() == [65534, 1]
    assert tf.math.floordiv(tf.constant([7], tf.uint8), 2).numpy().tolist() == [3]
    assert tf.math.floordiv(tf.constant([-7], tf.int8), 2).numpy().tolist() == [-4]  # TF: floor
    assert (tf.constant([3, 4], tf.uint8) / tf.constant([2, 2], tf.uint8)).dtype == tf.float32  # TF's truediv
    assert (tf.constant([3, 4], tf.uint32) / tf.constant([2, 2], tf.uint32)).dtype == tf.float64
    rng = np.random.default_rng(0)
    for dtype, np_dtype in NEW:
        x = rng.integers(0, 100, 12).astype(np_dtype)
        y = rng.integers(1, 100, 12).astype(np_dtype)
        got = (tf.constant(x) * tf.constant(y) + tf.constant(x)).numpy()
        with np.errstate(over="ignore"):
            want = x * y + x  # NumPy wraps in the dtype, as TF does
        assert got.dtype == np_dtype
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(tf.maximum(x, y).numpy(), np.maximum(x, y))
        np.testing.assert_array_equal((tf.constant(x) < tf.constant(y)).numpy(), x < y)


def test_mixing_dtypes_is_an_error():
    # TF: tf.constant(1, tf.uint8) + tf.constant(1) raises.
    with pytest.raises((TypeError, tf.errors.InvalidArgumentError), match="uint8"):
        tf.constant(1, tf.uint8) + tf.constant(1)
    with pytest.raises((TypeError, tf.errors.InvalidArgumentError)):
        tf.constant([1], tf.uint8) + tf.constant([1], tf.int8)
    with pytest.raises((TypeError, tf.errors.InvalidArgumentError)):
        tf.constant([1], tf.uint32) + tf.constant([1], tf.int64)


def test_index_results_keep_their_dtype():
    x = tf.constant([0, 5, 3], tf.uint8)
    assert tf.argmax(x).dtype == tf.int64 and int(tf.argmax(x)) == 1
    assert int(tf.argmin(x)) == 0 and int(tf.argmin(tf.constant([-128, 5], tf.int8))) == 0
    assert tf.argmax(x, output_type=tf.int32).dtype == tf.int32
    v, i = tf.math.top_k(x, 2)
    assert v.dtype == tf.uint8 and v.numpy().tolist() == [5, 3]
    assert i.dtype == tf.int32 and i.numpy().tolist() == [1, 2]
    assert tf.shape(x).numpy().tolist() == [3] and tf.size(x).numpy() == 3
    assert tf.sort(tf.constant([3, 250, 1], tf.uint8)).numpy().tolist() == [1, 3, 250]
    assert tf.argsort(tf.constant([3, 250, 1], tf.uint8)).numpy().tolist() == [2, 0, 1]
    oh = tf.one_hot(tf.constant([1, 0], tf.uint8), 3)
    assert oh.dtype == tf.float32 and oh.numpy().tolist() == [[0, 1, 0], [1, 0, 0]]
    assert tf.math.unsorted_segment_max(tf.constant([3, 250, 1], tf.uint8), [0, 0, 2], 3).numpy().tolist() == [250, 0, 1]
    assert tf.gather(tf.constant([1, 2, 3], tf.uint8), [2, 0]).numpy().tolist() == [3, 1]
    assert tf.transpose(tf.constant([[1, 2], [3, 4]], tf.int16)).numpy().tolist() == [[1, 3], [2, 4]]


def test_no_gradients_through_integers():
    v = tf.Variable([1.5, 2.5])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.cast(tf.square(tf.cast(v, tf.uint8)), tf.float32))
    assert tape.gradient(y, v) is None  # TF: None through an integer cast


def test_convert_image_dtype_scales_as_tf():
    u8 = tf.constant([0, 128, 255], tf.uint8)
    np.testing.assert_allclose(tf.image.convert_image_dtype(u8, tf.float32).numpy(), np.array([0, 128, 255]) / 255.0,
                               rtol=1e-6)
    f = tf.constant([0.0, 0.5, 1.0, 1.2, -0.1])
    assert tf.image.convert_image_dtype(f, tf.uint8).numpy().tolist() == [0, 127, 255, 50, 231]
    assert tf.image.convert_image_dtype(f, tf.uint8, saturate=True).numpy().tolist() == [0, 127, 255, 255, 0]
    assert tf.image.convert_image_dtype(u8, tf.int32).numpy().tolist() == [0, 1073741824, 2139095040]
    assert tf.image.convert_image_dtype(u8, tf.uint16).numpy().tolist() == [0, 32768, 65280]
    u16 = tf.constant([0, 1000, 65535], tf.uint16)
    assert tf.image.convert_image_dtype(u16, tf.uint8).numpy().tolist() == [0, 3, 255]
    np.testing.assert_allclose(tf.image.convert_image_dtype(u16, tf.float32).numpy(), [0, 1000 / 65535, 1], rtol=1e-6)
    assert tf.image.convert_image_dtype(tf.constant([0, 2**30, 2**31 - 1]), tf.uint8).numpy().tolist() == [0, 128, 255]
    np.testing.assert_allclose(tf.image.convert_image_dtype(tf.constant([-128, 0, 127], tf.int8), tf.float32).numpy(),
                               [-128 / 127, 0, 1], rtol=1e-6)


def test_random_uniform_refuses_uint8_as_tf():
    with pytest.raises(ValueError, match="dtype"):
        tf.random.uniform([2], maxval=5, dtype=tf.uint8)


def test_function_with_a_uint8_signature_traces_once():
    traces = []

    @tf.function(input_signature=[tf.TensorSpec([None], tf.uint8)])
    def f(x):
        traces.append(1)
        return x * x + x

    for n in (2, 3, 5):
        x = np.arange(n, dtype=np.uint8) + 14
        got = f(tf.constant(x))
        assert got.dtype == tf.uint8
        with np.errstate(over="ignore"):
            np.testing.assert_array_equal(got.numpy(), x * x + x)
    assert len(traces) == 1


def test_keras_input_of_uint8():
    inp = tf.keras.Input(shape=(3,), dtype="uint8")
    assert inp.dtype == tf.uint8
    out = tf.keras.layers.Lambda(lambda t: tf.cast(t, tf.float32) / 255.0)(inp)
    model = tf.keras.Model(inp, out)
    got = model(np.array([[0, 255, 51]], np.uint8))
    np.testing.assert_allclose(got.numpy(), [[0.0, 1.0, 0.2]], rtol=1e-6)


def test_saved_model_and_onnx_keep_a_uint8_constant(tmp_path):
    table = tf.constant([10, 200, 255, 7], tf.uint8)

    def fn(x):  # float32 pixels times a uint8 lookup (its constant saved as uint8)
        return x * tf.cast(table + tf.constant(60, tf.uint8), tf.float32)  # 200 + 60 wraps to 4

    model = tf.keras.Sequential([tf.keras.layers.Lambda(fn)])
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    want = x * np.array([70, 4, 59, 67], np.float32)
    np.testing.assert_array_equal(model(x).numpy(), want)
    tf.saved_model.save(model, str(tmp_path / "sm"))
    loaded = tf.saved_model.load(str(tmp_path / "sm"))
    np.testing.assert_array_equal(loaded(x).numpy(), want)
    path = tmp_path / "u8.onnx"
    tf.onnx.export_model(model, str(path))
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(str(path))
    np.testing.assert_array_equal(session.run(None, {session.get_inputs()[0].name: x})[0], want)
