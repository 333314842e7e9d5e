"""tf.device and Tensor.device: TF programs that place ops run (on the CPU, as TF's soft
placement does where no GPU is present)."""
import numpy as np
import pytest

import eagerflow as ef


def test_tensors_name_their_device_as_tf_does():
    t = ef.constant([1.0, 2.0])
    assert t.device == "/job:localhost/replica:0/task:0/device:CPU:0"
    assert (t + 1).device.endswith("device:CPU:0")


@pytest.mark.parametrize("spec", ["/CPU:0", "cpu", "/device:CPU:0", "/GPU:0", "GPU:1", "/job:localhost/replica:0/task:0/device:GPU:0"])
def test_device_scopes_run_the_ops_inside(spec):
    with ef.device(spec):
        a = ef.constant([[1.0, 2.0], [3.0, 4.0]])
        b = ef.matmul(a, a)
    np.testing.assert_allclose(b.numpy(), [[7, 10], [15, 22]])
    assert b.device.endswith("CPU:0")


def test_device_scopes_inside_a_function():
    @ef.function
    def f(x):
        with ef.device("/GPU:0"):
            return x * 2

    np.testing.assert_allclose(f(ef.constant([1.0, 3.0])).numpy(), [2, 6])


def test_none_places_nothing_and_bad_names_are_value_errors():
    with ef.device(None):
        assert ef.constant(1.0).device.endswith("CPU:0")
    with pytest.raises(ValueError, match="Unknown attribute 'FPGA' is encountered while parsing the device spec"):
        ef.device("/FPGA:0")  # TF's message; eagerflow raises at the call, TF when the block is entered
