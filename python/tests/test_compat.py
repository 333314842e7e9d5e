"""tf.compat: conversions, dimension helpers, forward compatibility, and the v1 names that keep
their meaning in eager TF 2 (reference values from TF 2.21's behaviour)."""
import pathlib

import numpy as np
import pytest

import eagerflow as tf


def test_as_bytes_and_as_text():
    assert tf.compat.as_bytes("héllo") == "héllo".encode()
    assert tf.compat.as_bytes(bytearray(b"zz")) == b"zz"
    assert tf.compat.as_bytes("é", encoding="latin-1") == b"\xe9"
    assert tf.compat.as_text(b"h\xc3\xa9") == "hé"
    assert tf.compat.as_str(b"x") == "x"
    assert tf.compat.as_str_any(3) == "3" and tf.compat.as_str_any(b"ab") == "ab"
    for bad in (3, None):
        with pytest.raises(TypeError, match="Expected binary or unicode string"):
            tf.compat.as_bytes(bad)
        with pytest.raises(TypeError, match="Expected binary or unicode string"):
            tf.compat.as_text(bad)


def test_path_to_str():
    assert tf.compat.path_to_str(pathlib.Path("/a/b")) == "/a/b"
    assert tf.compat.path_to_str(3) == 3  # not a path: unchanged


def test_forward_compatible_and_horizon():
    assert tf.compat.forward_compatible(2019, 1, 1)
    assert not tf.compat.forward_compatible(2099, 1, 1)
    with tf.compat.forward_compatibility_horizon(2099, 1, 2):
        assert tf.compat.forward_compatible(2099, 1, 1)
    assert not tf.compat.forward_compatible(2099, 1, 1)


def test_type_tuples():
    assert isinstance(3, tf.compat.integral_types) and isinstance(np.int8(3), tf.compat.integral_types)
    assert not isinstance(3.5, tf.compat.integral_types)
    assert isinstance(np.float32(1), tf.compat.real_types) and isinstance(1j, tf.compat.complex_types)
    assert tf.compat.bytes_or_text_types == (bytes, str)


def test_dimension():
    D = tf.compat.v1.Dimension
    assert str(D(3)) == "3" and repr(D(3)) == "Dimension(3)" and str(D(None)) == "?"
    assert (D(3) + D(4)).value == 7 and (D(3) + D(None)).value is None
    assert (3 + D(4)).value == 7 and (10 - D(3)).value == 7 and (D(7) // 2).value == 3 and (D(7) % 3).value == 1
    assert (D(3) == 3) is True and (D(3) != 4) is True and (D(None) == 3) is None
    assert (D(3) < D(4)) is True and (D(None) < 3) is None
    assert int(D(3)) == 3 and D(5).__index__() == 5
    assert D(3).merge_with(3).value == 3 and D(None).merge_with(5).value == 5
    assert D(3).is_compatible_with(None) and not D(3).is_compatible_with(4)
    with pytest.raises(ValueError, match="Dimensions 3 and 4 are not compatible"):
        D(3).merge_with(4)
    with pytest.raises(ValueError, match="must be >= 0"):
        D(-1)
    with pytest.raises(TypeError):
        D("a")
    with pytest.raises(TypeError):
        D(6) / 2  # TF: use //
    with pytest.raises(TypeError):
        hash(D(3))


def test_dimension_value_and_at_index():
    assert tf.compat.dimension_value(tf.compat.v1.Dimension(3)) == 3
    assert tf.compat.dimension_value(None) is None and tf.compat.dimension_value(4) == 4
    d = tf.compat.dimension_at_index(tf.TensorShape([3, None]), 1)
    assert isinstance(d, tf.compat.v1.Dimension) and d.value is None
    assert tf.compat.dimension_at_index([3, 5], 0).value == 3


def test_v1_switches_report_tf2_behaviour():
    v1 = tf.compat.v1
    assert v1.executing_eagerly() is True
    assert v1.enable_eager_execution() is None
    for switch in (v1.enable_v2_behavior, v1.enable_resource_variables, v1.enable_control_flow_v2,
                   v1.enable_tensor_equality, v1.enable_v2_tensorshape):
        assert switch() is None
    assert v1.resource_variables_enabled() and v1.control_flow_v2_enabled()

    @tf.function
    def f():
        return tf.constant(v1.executing_eagerly())
    assert not bool(f())  # inside a trace, as TF's


def test_v2_is_eagerflow_and_v1_has_no_graph_mode():
    assert tf.compat.v2 is tf
    assert tf.compat.v2.constant(1.0).numpy() == 1.0
    for name in ("Session", "placeholder", "variable_scope", "get_variable", "disable_eager_execution"):
        assert not hasattr(tf.compat.v1, name)
