"""ef.errors: the errors of the C++ core arrive as TF's classes (tf.errors.InvalidArgumentError,
NotFoundError, ...) that are also the Python built-ins TF and Keras raise (ValueError, TypeError,
NotImplementedError), eagerly and while ef.function traces; ef.Error stays the base of all."""
import pickle

import numpy as np
import pytest

import eagerflow as ef

CLASSES = {
    "CancelledError": 1, "UnknownError": 2, "InvalidArgumentError": 3, "DeadlineExceededError": 4,
    "NotFoundError": 5, "AlreadyExistsError": 6, "PermissionDeniedError": 7, "ResourceExhaustedError": 8,
    "FailedPreconditionError": 9, "AbortedError": 10, "OutOfRangeError": 11, "UnimplementedError": 12,
    "InternalError": 13, "UnavailableError": 14, "DataLossError": 15,
}


def test_every_tf_error_class_is_an_op_error_and_an_ef_error():
    assert issubclass(ef.errors.OpError, ef.Error)
    assert issubclass(ef.errors.OpError, RuntimeError)
    for name, code in CLASSES.items():
        cls = getattr(ef.errors, name)
        assert issubclass(cls, ef.errors.OpError), name
        assert ef.errors.error_code_from_exception_type(cls) == code
        assert ef.errors.exception_type_from_error_code(code) is cls
        e = cls(None, None, "what went wrong")
        assert (e.message, e.error_code, e.op, e.node_def, str(e)) == ("what went wrong", code, None, None,
                                                                       "what went wrong")
    assert ef.errors.INVALID_ARGUMENT == 3 and ef.errors.NOT_FOUND == 5 and ef.errors.OUT_OF_RANGE == 11
    assert ef.errors.FAILED_PRECONDITION == 9 and ef.errors.UNIMPLEMENTED == 12 and ef.errors.OK == 0
    assert issubclass(ef.errors.InvalidArgumentError, ValueError)
    assert issubclass(ef.errors.UnimplementedError, NotImplementedError)
    assert ef.errors.OpError(None, None, "m", ef.errors.ABORTED).error_code == ef.errors.ABORTED


def test_a_shape_mismatch_is_invalid_argument_and_value_error():
    with pytest.raises(ef.errors.InvalidArgumentError) as info:
        ef.matmul(ef.ones([2, 3]), ef.ones([4, 5]))
    e = info.value
    assert isinstance(e, ValueError) and isinstance(e, ef.Error) and isinstance(e, RuntimeError)
    assert e.error_code == ef.errors.INVALID_ARGUMENT
    assert "[matmul]" in e.message and str(e) == e.message
    assert type(e).__name__ == "InvalidArgumentError"


def test_a_keras_layer_input_shape_mismatch_is_value_error():
    layer = ef.keras.layers.Dense(3)
    layer(np.ones((2, 4), np.float32))
    with pytest.raises(ValueError):
        layer(np.ones((2, 5), np.float32))
    with pytest.raises(ef.errors.InvalidArgumentError):
        layer(np.ones((2, 5), np.float32))


def test_a_wrong_dtype_is_type_error_and_invalid_argument():
    x, n = ef.ones([2]), ef.ones([2], dtype=ef.int32)
    with pytest.raises(TypeError) as info:
        ef.add(x, n)
    assert isinstance(info.value, ef.errors.InvalidArgumentError)  # TF's eager kernels report INVALID_ARGUMENT
    assert isinstance(info.value, ef.Error)
    assert info.value.error_code == ef.errors.INVALID_ARGUMENT
    assert type(info.value).__name__ == "InvalidArgumentError"


def test_errors_raised_while_tracing_have_the_same_classes():
    @ef.function
    def shapes(a, b):
        return ef.matmul(a, b)

    with pytest.raises(ValueError):
        shapes(ef.ones([2, 3]), ef.ones([4, 5]))
    with pytest.raises(ef.errors.InvalidArgumentError):
        shapes(ef.ones([2, 3]), ef.ones([4, 6]))

    @ef.function
    def dtypes(a, b):
        return ef.add(a, b)

    with pytest.raises(TypeError):
        dtypes(ef.ones([2]), ef.ones([2], dtype=ef.int32))

    layer = ef.keras.layers.Dense(3)

    @ef.function
    def call(x):
        return layer(x)

    call(ef.ones([2, 4]))
    with pytest.raises(ValueError):
        call(ef.ones([2, 5]))


def test_python_built_ins_raised_while_tracing_pass_unchanged():
    @ef.function
    def f(x):
        raise KeyError("mine")

    with pytest.raises(KeyError):
        f(ef.ones([2]))


def test_a_symbolic_tensor_as_a_python_bool_is_type_error():
    @ef.function(autograph=False)  # with AutoGraph (the default) the if becomes an ef.cond
    def f(x):
        if x > 0:
            return x
        return -x

    with pytest.raises(TypeError) as info:
        f(ef.ones([]))
    assert isinstance(info.value, ef.errors.FailedPreconditionError)


def test_loading_a_missing_file_is_not_found(tmp_path):
    missing = tmp_path / "nothing_here.efmodel"
    with pytest.raises(ef.errors.NotFoundError) as info:
        ef.keras.models.load_model(missing)
    assert isinstance(info.value, FileNotFoundError)  # an OSError, as tf.keras 2's load_model raises
    assert isinstance(info.value, ValueError)  # as Keras 3's load_model raises
    assert info.value.error_code == ef.errors.NOT_FOUND
    with pytest.raises(FileNotFoundError):
        ef.saved_model.load(str(tmp_path / "no_saved_model"))
    model = ef.keras.Sequential([ef.keras.layers.Dense(2)])
    model(np.ones((1, 3), np.float32))
    with pytest.raises(ef.errors.NotFoundError):
        model.load_weights(str(tmp_path / "none.weights.h5"))


def test_a_damaged_file_is_data_loss_and_another_kind_of_file_value_error(tmp_path):
    model = ef.keras.Sequential([ef.keras.layers.Dense(2)])
    model(np.ones((1, 3), np.float32))
    path = tmp_path / "m.efmodel"
    model.save(path)
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ef.errors.DataLossError, match="damaged"):
        ef.keras.models.load_model(path)
    path.write_bytes(b"not a model at all")
    with pytest.raises(ValueError, match="not an eagerflow model file"):
        ef.keras.models.load_model(path)


def _save_with_a_python_schedule(path):
    # A model file cannot rebuild a learning rate computed by Python: unimplemented.
    model = ef.keras.Sequential([ef.keras.Input((2,)), ef.keras.layers.Dense(1)])
    model.compile(optimizer=ef.keras.optimizers.SGD(lambda: 0.1), loss="mse")
    model.save(str(path))


def test_unimplemented_features_are_not_implemented_error(tmp_path):
    with pytest.raises(NotImplementedError) as info:
        _save_with_a_python_schedule(tmp_path / "m.efmodel")
    assert isinstance(info.value, ef.errors.UnimplementedError)
    assert isinstance(info.value, ef.Error)


def test_fit_before_compile_is_failed_precondition_value_error_and_runtime_error():
    model = ef.keras.Sequential([ef.keras.layers.Dense(2)])
    with pytest.raises(ef.errors.FailedPreconditionError) as info:
        model.fit(np.ones((4, 3), np.float32), np.ones((4, 2), np.float32), verbose=0)
    assert isinstance(info.value, ValueError)  # Keras 3 raises ValueError there
    assert isinstance(info.value, RuntimeError)  # tf.keras 2 raised RuntimeError


def test_get_next_past_the_end_is_out_of_range():
    it = iter(ef.data.Dataset.range(2))
    assert int(it.get_next()) == 0
    assert int(it.get_next()) == 1
    with pytest.raises(ef.errors.OutOfRangeError):
        it.get_next()


def test_a_range_with_zero_delta_is_invalid_argument():
    with pytest.raises(ef.errors.InvalidArgumentError):
        ef.range(0, 10, 0)
    with pytest.raises(ValueError):
        ef.range(0, 10, 0)


def test_invalid_layer_names_are_value_errors_and_ef_errors():
    with pytest.raises(ValueError) as info:
        ef.keras.layers.Dense(2, name="a/b")
    assert isinstance(info.value, ef.Error)


def test_errors_pickle_with_their_class():
    with pytest.raises(TypeError) as info:
        ef.add(ef.ones([2]), ef.ones([2], dtype=ef.int32))
    back = pickle.loads(pickle.dumps(info.value))
    assert type(back) is type(info.value) and back.message == info.value.message
    e = pickle.loads(pickle.dumps(ef.errors.NotFoundError(None, None, "gone")))
    assert type(e) is ef.errors.NotFoundError and e.message == "gone"


def test_existing_except_clauses_keep_working(tmp_path):
    for bad in (lambda: ef.matmul(ef.ones([2, 3]), ef.ones([4, 5])),
                lambda: _save_with_a_python_schedule(tmp_path / "m.efmodel")):
        with pytest.raises(ef.Error):
            bad()
        with pytest.raises(RuntimeError):
            bad()
