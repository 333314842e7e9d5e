"""Variable.assign / assign_add / assign_sub with TF's arguments: read_value=False gives None,
use_locking and name are accepted, and an assign of another shape is TF's ValueError (no
broadcasting), eagerly and while ef.function traces; the variable keeps its value."""
import numpy as np
import pytest

import eagerflow as ef


def test_shape_mismatch_is_value_error_and_leaves_the_value():
    v = ef.Variable([1.0, 2.0])
    with pytest.raises(ValueError, match=r"Shape mismatch.*\(2,\).*\(3,\)"):
        v.assign([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="Shape mismatch"):
        v.assign(5.0)  # TF does not broadcast an assigned value
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_shape_mismatch_inside_function():
    v = ef.Variable([1.0, 2.0])
    f = ef.function(lambda: v.assign(ef.constant([1.0, 2.0, 3.0])))
    with pytest.raises(ValueError, match="Shape mismatch"):
        f()


def test_tf_arguments():
    v = ef.Variable([1.0, 2.0])
    assert v.assign([3.0, 4.0], read_value=False) is None
    np.testing.assert_array_equal(v.numpy(), [3.0, 4.0])
    out = v.assign_add([1.0, 1.0], use_locking=True, name="inc")
    np.testing.assert_array_equal(np.asarray(out), [4.0, 5.0])
    assert v.assign_sub(ef.constant([4.0, 5.0]), read_value=False) is None
    np.testing.assert_array_equal(v.numpy(), [0.0, 0.0])


def test_layer_weights_have_them_too():
    layer = ef.keras.layers.Dense(3)
    layer(ef.ones([1, 2]))
    with pytest.raises(ValueError, match="Shape mismatch"):
        layer.kernel.assign(np.zeros((3, 2), np.float32))
    layer.kernel.assign(np.ones((2, 3), np.float32), read_value=False)
    np.testing.assert_array_equal(layer.kernel.numpy(), np.ones((2, 3), np.float32))
