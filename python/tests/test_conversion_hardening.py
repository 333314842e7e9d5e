"""Python -> tensor conversion (issue 29): dtype inference as TF's, no silent narrowing, every
NumPy layout accepted or refused clearly, and copies (no tensor aliases a writable array)."""
import numpy as np
import pytest

import eagerflow as ef


# --- ef.range: TF's dtype inference ----------------------------------------------------------

@pytest.mark.parametrize("args, expected", [
    ((10.,), np.arange(10, dtype=np.float32)),
    ((0., 1., 0.25), np.array([0, .25, .5, .75], np.float32)),
    ((1.5, 4.), np.array([1.5, 2.5, 3.5], np.float32)),
    ((0, 1, 0.25), np.array([0, .25, .5, .75], np.float32)),  # any float makes it float32
    ((3, 1, -0.5), np.array([3, 2.5, 2, 1.5], np.float32)),
    ((0.1, 1.0, 0.1), np.arange(0.1, 1.0, 0.1, dtype=np.float32)),  # float32 arithmetic: 9 values
])
def test_range_with_floats_is_float32(args, expected):
    r = ef.range(*args)
    assert r.dtype == ef.float32
    np.testing.assert_allclose(r.numpy(), expected, rtol=0, atol=1e-6)
    assert r.shape == expected.shape


def test_range_dtype_inference_follows_tf():
    assert ef.range(5).dtype == ef.int32
    np.testing.assert_array_equal(ef.range(3, 18, 3).numpy(), [3, 6, 9, 12, 15])
    assert ef.range(2**40, 2**40 + 3).dtype == ef.int64  # a Python int beyond int32
    np.testing.assert_array_equal(ef.range(2**40, 2**40 + 3).numpy(), [2**40, 2**40 + 1, 2**40 + 2])
    assert ef.range(ef.constant(5, dtype=ef.int64)).dtype == ef.int64
    assert ef.range(ef.constant(4.0, dtype=ef.float64)).dtype == ef.float64
    assert ef.range(np.float64(3.0), 5).dtype == ef.float32  # np.float64 is a Python float
    assert ef.range(ef.constant(1, dtype=ef.int64), 4.0).dtype == ef.float32  # float32 outranks int64
    assert ef.range(ef.constant(1.0, dtype=ef.float64), 4.0).dtype == ef.float64


def test_range_dtype_argument_is_honoured():
    r = ef.range(5, dtype=ef.float64)
    assert r.dtype == ef.float64
    np.testing.assert_array_equal(r.numpy(), np.arange(5.0))
    assert ef.range(0., 3., dtype=ef.int64).dtype == ef.int64  # whole floats convert
    np.testing.assert_array_equal(ef.range(0., 3., dtype="int32").numpy(), [0, 1, 2])
    with pytest.raises(TypeError, match="0.25"):  # a fraction as an integer: TF's TypeError
        ef.range(0., 1., 0.25, dtype=ef.int32)


def test_range_zero_delta_is_invalid_argument():
    with pytest.raises(ef.errors.InvalidArgumentError, match="delta"):
        ef.range(0, 10, 0)
    with pytest.raises(ef.errors.InvalidArgumentError):
        ef.range(0., 1., 0.)
    with pytest.raises(ef.Error):  # an ef.Error like every op error
        ef.range(1, 2, 0)
    with pytest.raises(TypeError):
        ef.range("a")


# --- integers: int64 inference, no wrapping --------------------------------------------------

def test_python_ints_beyond_int32_infer_int64():
    t = ef.constant([1, 2**40])
    assert t.dtype == ef.int64
    np.testing.assert_array_equal(t.numpy(), [1, 2**40])
    assert ef.constant(2**40).dtype == ef.int64 and int(ef.constant(2**40)) == 2**40
    assert ef.constant([[1, 2], [3, -2**31 - 1]]).dtype == ef.int64
    assert ef.constant([1, 2**31 - 1, -2**31]).dtype == ef.int32
    assert ef.convert_to_tensor([2**62]).dtype == ef.int64
    assert ef.Tensor([1, 2**40]).numpy()[1] == 2**40


@pytest.mark.parametrize("value", [2**64, [1, 2**64], [-1, 2**63], [2**63], -2**63 - 1, [[0], [2**70]]])
def test_ints_beyond_int64_are_refused(value):
    with pytest.raises((ValueError, TypeError), match="int64"):
        ef.constant(value)
    with pytest.raises(ef.ConversionError):
        ef.convert_to_tensor(value)


def test_conversion_error_is_type_and_value_error():
    assert issubclass(ef.ConversionError, TypeError) and issubclass(ef.ConversionError, ValueError)


def test_explicit_dtype_refuses_values_it_cannot_hold():
    with pytest.raises(ef.ConversionError, match="int32"):
        ef.constant(2**40, dtype=ef.int32)
    with pytest.raises(ef.ConversionError, match="int32"):
        ef.constant([1, 2**40], dtype=ef.int32)
    with pytest.raises(ef.ConversionError):
        ef.constant(np.array([1, 2**40]), dtype=ef.int32)
    with pytest.raises(ef.ConversionError):
        ef.constant([1.5, 2.0], dtype=ef.int32)
    with pytest.raises(ef.ConversionError):
        ef.constant(float("nan"), dtype=ef.int64)
    with pytest.raises(ef.ConversionError):
        ef.Variable([2**40], dtype=ef.int32)
    np.testing.assert_array_equal(ef.constant([1.0, 2.0], dtype=ef.int32).numpy(), [1, 2])
    assert ef.constant(2**64, dtype=ef.float32).numpy() == np.float32(2**64)  # fits a float
    assert ef.constant([2**62 + 1], dtype=ef.int64).numpy()[0] == 2**62 + 1  # exact, not via float64


@pytest.mark.parametrize("np_dtype, ef_dtype", [
    (np.int8, ef.int8), (np.int16, ef.int16), (np.uint8, ef.uint8), (np.uint16, ef.uint16),
    (np.int32, ef.int32), (np.uint32, ef.uint32), (np.int64, ef.int64), (np.uint64, ef.uint64),
    (np.float16, ef.float16), (np.float32, ef.float32), (np.float64, ef.float64), (np.bool_, ef.bool),
])
def test_every_numpy_dtype_keeps_its_values(np_dtype, ef_dtype):
    info = np.iinfo(np_dtype) if np.issubdtype(np_dtype, np.integer) else None
    if info is not None:  # every integer keeps its NumPy dtype, as in TF (uint64's top half too)
        a = np.array([info.min, 0, 1, info.max], dtype=np_dtype)
    elif np_dtype is np.bool_:
        a = np.array([True, False, True])
    else:
        a = np.array([-1.5, 0.0, 65504.0 if np_dtype is np.float16 else 1e30], dtype=np_dtype)
    t = ef.constant(a)
    assert t.dtype == ef_dtype
    np.testing.assert_array_equal(t.numpy(), a)
    assert t.numpy().dtype == a.dtype
    assert t.numpy().tolist() == a.tolist()


@pytest.mark.parametrize("convert", [ef.constant, ef.convert_to_tensor, ef.Tensor, lambda a: ef.Variable(a)])
def test_uint64_keeps_every_value(convert):
    a = np.array([1, 2**63 + 5], dtype=np.uint64)  # TF keeps uint64 (it was widened to int64 here once)
    t = convert(a)
    assert t.dtype == ef.uint64 and t.numpy().dtype == np.uint64
    assert t.numpy().tolist() == [1, 2**63 + 5]
    assert int(convert(np.uint64(2**64 - 1)).numpy()) == 2**64 - 1


@pytest.mark.parametrize("convert", [
    lambda a: ef.constant(a, dtype=ef.int64), lambda a: ef.constant([1, 2], dtype=ef.int64) + a,
    lambda a: ef.constant([1, 2], dtype=ef.int32) + a,
])
def test_uint64_above_int64_is_refused_as_int64(convert):
    a = np.array([1, 2**63 + 5], dtype=np.uint64)
    with pytest.raises(ef.ConversionError, match="uint64"):
        convert(a)
    ok = convert(np.array([1, 2], dtype=np.uint64))  # values that fit convert (TF converts arrays too)
    assert ok.dtype in (ef.int64, ef.int32) and ok.numpy().tolist()[0] in (1, 2)


def test_python_scalars_in_ops_do_not_narrow():
    x = ef.constant([1, 2])  # int32
    with pytest.raises(ef.ConversionError, match="int32"):
        x + 2**40
    with pytest.raises(ef.ConversionError):
        2**40 * x
    with pytest.raises(ef.ConversionError):
        ef.add(x, 2**40)
    y = ef.constant([1, 2], dtype=ef.int64)
    np.testing.assert_array_equal((y + 2**40).numpy(), [2**40 + 1, 2**40 + 2])
    with pytest.raises(ef.ConversionError):
        y + 2**64
    f = ef.constant([1.0], dtype=ef.float64)
    assert (f + 2**64).numpy()[0] == 2.0**64  # any int is a float64 (rounded)
    assert (x + 2).dtype == ef.int32 and (f * 2).dtype == ef.float64


def test_variable_assign_converts_to_its_dtype_without_narrowing():
    v = ef.Variable([1, 2])
    assert v.dtype == ef.int32
    with pytest.raises(ef.ConversionError):
        v.assign([1, 2**40])
    with pytest.raises(ef.ConversionError):
        v.assign(np.array([1, 2**40]))
    with pytest.raises(ef.ConversionError):
        v.assign_add([2**40, 0])
    np.testing.assert_array_equal(v.numpy(), [1, 2])
    w = ef.Variable(np.zeros(2, np.float32))
    w.assign(np.array([0.5, 1.5]))  # float64 values as the variable's float32 (TF's assign)
    np.testing.assert_array_equal(w.numpy(), [0.5, 1.5])
    assert w.dtype == ef.float32


# --- read-only, big-endian, strided, complex, strings ----------------------------------------

def _read_only(a):
    a = np.array(a)
    a.setflags(write=False)
    return a


def test_read_only_arrays_convert_everywhere():
    a = _read_only(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(ef.constant(a).numpy(), a)
    np.testing.assert_array_equal(ef.convert_to_tensor(a).numpy(), a)
    np.testing.assert_array_equal(ef.Variable(a).numpy(), a)
    np.testing.assert_array_equal((ef.constant(np.ones((2, 3), np.float32)) + a).numpy(), a + 1)
    s = _read_only(np.float32(2.5) * np.ones(()))
    assert float(ef.constant(s)) == 2.5 and ef.constant(s).shape == ()  # 0-d stays 0-d
    for dtype in (np.int8, np.uint16, np.uint64, np.float16, np.bool_, np.int64):
        b = _read_only(np.arange(4).astype(dtype))
        np.testing.assert_array_equal(ef.constant(b).numpy(), b)
    v = ef.Variable(np.zeros(3, np.float32))
    v.assign(_read_only(np.ones(3, np.float32)))
    np.testing.assert_array_equal(v.numpy(), np.ones(3))


def test_read_only_arrays_fit_and_predict():
    x = _read_only(np.random.default_rng(0).normal(size=(16, 3)).astype(np.float32))
    y = _read_only(np.ones((16, 1), np.float32))
    model = ef.keras.Sequential([ef.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(x, y, epochs=1, batch_size=8, verbose=0)
    assert model.predict(x, verbose=0).shape == (16, 1)
    assert np.isfinite(model.evaluate(x, y, verbose=0))


def test_big_endian_and_strided_arrays_convert():
    for dtype in (">i4", ">f4", ">f8", ">i8", ">u2", ">u8", ">f2"):
        a = np.arange(6).astype(dtype).reshape(2, 3)
        t = ef.constant(a)
        np.testing.assert_array_equal(t.numpy(), a)
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    for view in (a[:, ::2], a.T, a[::-1], a[1:3, 1:5]):
        np.testing.assert_array_equal(ef.constant(view).numpy(), view)
    be = _read_only(np.arange(4, dtype=">f4"))
    np.testing.assert_array_equal(ef.Variable(be).numpy(), np.arange(4))


@pytest.mark.parametrize("value", [1 + 2j, [1 + 0j, 2], np.ones(2, np.complex64), np.ones(3, np.complex128)])
def test_complex_values_make_complex_tensors_and_do_not_mix_with_real_ones(value):
    t = ef.constant(value)
    assert t.dtype.is_complex
    np.testing.assert_array_equal(t.numpy(), np.asarray(value))
    with pytest.raises(ef.errors.InvalidArgumentError):
        ef.constant([1.0, 2.0]) * t  # as TF: float32 and complex do not mix
    with pytest.raises(TypeError, match="complex"):
        ef.constant(np.ones(2, np.clongdouble))  # complex256 has no tensor dtype


@pytest.mark.parametrize("value", [[1, "a"], [b"x", 2.5], None, object(), np.array([1, None], dtype=object),
                                   np.array(["a", 1], dtype=object)])
def test_unconvertible_values_name_the_accepted_types(value):
    with pytest.raises(TypeError, match="accepted") as e:
        ef.constant(value)
    assert "bad_cast" not in str(e.value)


def test_unsupported_numpy_dtypes_name_the_dtype():
    for a in (np.array(["2020-01-01"], dtype="datetime64[D]"), np.zeros(2, dtype=[("a", "i4")]),
              np.zeros(2, np.longdouble) if np.dtype(np.longdouble).itemsize > 8 else np.array(["s"])):
        with pytest.raises(TypeError, match="dtype"):
            ef.constant(a)


@pytest.mark.parametrize("key", ["a", 1.5, b"x", object(), ["a"], [0.5]])
def test_non_integer_indices_are_type_errors(key):
    t = ef.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    with pytest.raises(TypeError) as e:
        t[key]
    assert "bad_cast" not in str(e.value)
    with pytest.raises(TypeError):
        t[0, key]


def test_integer_like_indices_still_work():
    t = ef.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert float(t[np.int64(1), 2]) == 5.0
    assert float(t[ef.constant(1), 0]) == 3.0
    np.testing.assert_array_equal(t[[1, 0]].numpy(), [[3, 4, 5], [0, 1, 2]])


@pytest.mark.parametrize("call", [
    lambda: ef.zeros(["a", 2]),
    lambda: ef.zeros("ab"),
    lambda: ef.ones([2.5]),
    lambda: ef.reduce_sum(ef.ones([2, 2]), axis="x"),
    lambda: ef.reduce_sum(ef.ones([2, 2]), axis=[0, "x"]),
    lambda: ef.reshape(ef.ones([4]), [2, "b"]),
    lambda: ef.constant([1, 2], shape=["x"]),
    lambda: ef.random.normal([2], seed="s"),
    lambda: ef.TensorSpec(["a"]),
    lambda: ef.ones([2, 2])[None, "x"],
    lambda: ef.data.Dataset.range(3).padded_batch(2, padded_shapes=["a"]),
    lambda: ef.keras.layers.Conv2D(2, kernel_size="a"),
    lambda: ef.transpose(ef.ones([2, 2]), ["a", 0]),
])
def test_wrong_argument_types_are_type_errors_not_bad_cast(call):
    with pytest.raises(TypeError) as e:
        call()
    assert "bad_cast" not in str(e.value)


def test_huge_integers_as_arguments_are_clear(tmp_path):
    with pytest.raises((ValueError, TypeError)) as e:
        ef.zeros([2**64])
    assert "bad_cast" not in str(e.value)
    with pytest.raises((ValueError, TypeError)) as e:
        ef.random.normal([2], seed=2**64)
    assert "bad_cast" not in str(e.value)
    with pytest.raises((ValueError, TypeError)) as e:
        ef.ones([2, 2])[2**64]
    assert "bad_cast" not in str(e.value)
    with ef.summary.create_file_writer(str(tmp_path)).as_default():  # (without a writer nothing is read, as TF's)
        with pytest.raises(ef.ConversionError, match="step"):
            ef.summary.scalar("a", 1.0, step=2**64)
    with pytest.raises(ef.ConversionError, match="kernel_size"):
        ef.keras.layers.Conv2D(2, kernel_size=2**70)


# --- copies: no tensor aliases memory the caller can write -----------------------------------

def test_variable_numpy_is_a_copy():
    v = ef.Variable([1.0, 2.0, 3.0])
    a = v.numpy()
    a[0] = 99
    np.testing.assert_array_equal(v.numpy(), [1, 2, 3])
    assert float(ef.reduce_sum(v)) == 6.0
    with pytest.raises(ValueError):  # np.asarray(v): a read-only view of the current value
        np.asarray(v)[0] = 99
    np.testing.assert_array_equal(v.numpy(), [1, 2, 3])


def test_tensor_numpy_writes_never_reach_the_tensor():
    t = ef.constant([1.0, 2.0])
    u = ef.identity(t)
    a = t.numpy()
    a[:] = -1
    np.testing.assert_array_equal(t.numpy(), [1, 2])
    np.testing.assert_array_equal(u.numpy(), [1, 2])
    view = np.asarray(t)
    assert not view.flags.writeable
    with pytest.raises(ValueError):
        view[0] = 5
    c = np.array(t)
    c[0] = 5  # np.array copies
    np.testing.assert_array_equal(t.numpy(), [1, 2])


def test_constant_copies_the_array():
    a = np.ones(3, np.float32)
    c = ef.constant(a)
    t = ef.convert_to_tensor(a)
    v = ef.Variable(a)
    a[:] = 100
    np.testing.assert_array_equal(c.numpy(), [1, 1, 1])
    np.testing.assert_array_equal(t.numpy(), [1, 1, 1])
    np.testing.assert_array_equal(v.numpy(), [1, 1, 1])
    assert a.flags.writeable  # the caller's array is left as it was


def test_eager_and_traced_agree_after_the_array_changes():
    a = np.ones(3, np.float32)
    c = ef.constant(a)
    x = ef.constant(np.zeros(3, np.float32))
    f = ef.function(lambda x: x + c)
    np.testing.assert_array_equal(f(x).numpy(), [1, 1, 1])
    a[:] = 100
    eager = (x + c).numpy()
    traced = f(x).numpy()
    np.testing.assert_array_equal(eager, traced)
    np.testing.assert_array_equal(eager, [1, 1, 1])
    # An array passed as an argument is converted at each call: both see its values now.
    g = ef.function(lambda x, b: x + b)
    np.testing.assert_array_equal(g(x, a).numpy(), (x + ef.constant(a)).numpy())


def test_dataset_of_an_array_keeps_its_values():
    a = np.arange(4, dtype=np.float32)
    ds = ef.data.Dataset.from_tensor_slices(a)
    a[:] = -1
    assert [float(v) for v in ds] == [0.0, 1.0, 2.0, 3.0]


def test_fill_values_do_not_saturate():
    x = ef.constant([1, 2])  # int32
    with pytest.raises(ef.ConversionError):
        ef.full_like(x, 2**40)
    with pytest.raises(ef.ConversionError):
        ef.full_like(x, 0.5)
    with pytest.raises(ef.ConversionError):
        ef.fill([2], 2**40, dtype=ef.int32)
    with pytest.raises(ef.ConversionError):
        ef.pad(x, 1, constant_values=2**40)
    with pytest.raises(ef.ConversionError):
        ef.pad(x, 1, constant_values=0.5)
    np.testing.assert_array_equal(ef.pad(x, 1, constant_values=7).numpy(), [7, 1, 2, 7])
    assert ef.fill([2], 3).dtype == ef.int32 and ef.fill([2], 1.5).dtype == ef.float32  # tf.fill: the value's dtype
    np.testing.assert_array_equal(ef.fill([2], 2**40).numpy(), [2**40, 2**40])
    np.testing.assert_array_equal(ef.full_like(ef.constant([1.0]), 2.5).numpy(), [2.5])
