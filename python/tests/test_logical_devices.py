"""tf.config's logical CPUs: set_logical_device_configuration splits the CPU into /device:CPU:0..n-1
(list_logical_devices shows them, tf.device accepts them); the configuration is fixed once the
devices are used, as TF fixes it when its runtime initializes."""
import pytest

import eagerflow as tf
from eagerflow import _logical_devices


@pytest.fixture
def fresh_devices():
    """A process whose logical devices were not used yet (TF's state before its first op)."""
    saved = (_logical_devices._config[0], _logical_devices._initialized[0])
    _logical_devices._config[0], _logical_devices._initialized[0] = None, False
    yield tf.config.list_physical_devices("CPU")[0]
    _logical_devices._config[0], _logical_devices._initialized[0] = saved


def test_split_the_cpu_into_logical_devices(fresh_devices):
    cpu = fresh_devices
    assert tf.config.get_logical_device_configuration(cpu) is None
    configs = [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
    tf.config.set_logical_device_configuration(cpu, configs)
    assert tf.config.get_logical_device_configuration(cpu) == configs
    assert tf.config.list_logical_devices("CPU") == [tf.config.LogicalDevice("/device:CPU:0", "CPU"),
                                                     tf.config.LogicalDevice("/device:CPU:1", "CPU")]
    assert tf.config.list_logical_devices() == tf.config.list_logical_devices("CPU")
    assert tf.config.list_logical_devices("GPU") == []
    assert repr(configs[0]) == ("LogicalDeviceConfiguration(memory_limit=None, experimental_priority=None, "
                                "experimental_device_ordinal=None)")


def test_the_experimental_virtual_names_are_the_same(fresh_devices):
    tf.config.experimental.set_virtual_device_configuration(
        fresh_devices, [tf.config.experimental.VirtualDeviceConfiguration()] * 3)
    assert len(tf.config.list_logical_devices("CPU")) == 3
    assert len(tf.config.experimental.get_virtual_device_configuration(fresh_devices)) == 3


def test_configuration_is_fixed_once_used(fresh_devices):
    cpu = fresh_devices
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    tf.config.list_logical_devices()  # first use
    with pytest.raises(RuntimeError, match="Virtual devices cannot be modified after being initialized"):
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 3)
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)  # the same: fine


def test_an_unsplit_cpu_that_was_used_refuses_a_split(fresh_devices):
    tf.config.list_logical_devices()
    with pytest.raises(RuntimeError):
        tf.config.set_logical_device_configuration(fresh_devices, [tf.config.LogicalDeviceConfiguration()] * 2)
    tf.config.set_logical_device_configuration(fresh_devices, [])  # one device, as it is
    assert len(tf.config.list_logical_devices()) == 1


def test_bad_configurations(fresh_devices):
    with pytest.raises(TypeError):
        tf.config.set_logical_device_configuration(fresh_devices, None)
    with pytest.raises(ValueError, match="memory limit on CPU"):
        tf.config.set_logical_device_configuration(fresh_devices, [tf.config.LogicalDeviceConfiguration(memory_limit=10)])
    with pytest.raises(ValueError, match="Unrecognized device"):
        tf.config.set_logical_device_configuration("CPU:0", [])


def test_ops_run_on_a_logical_cpu(fresh_devices):
    tf.config.set_logical_device_configuration(fresh_devices, [tf.config.LogicalDeviceConfiguration()] * 2)
    with tf.device("CPU:1"):
        x = tf.constant([1.0, 2.0]) * 3.0
    assert x.numpy().tolist() == [3.0, 6.0]
    with tf.device("/device:CPU:1"):

        @tf.function
        def f(v):
            return v + 1.0
        assert f(x).numpy().tolist() == [4.0, 7.0]


def test_a_cpu_past_the_logical_ones(fresh_devices):
    tf.config.set_logical_device_configuration(fresh_devices, [tf.config.LogicalDeviceConfiguration()] * 2)
    with tf.device("CPU:5"):  # soft placement: the CPU, as TF
        assert float(tf.constant(1.0) + 1.0) == 2.0
    tf.config.set_soft_device_placement(False)
    try:
        with pytest.raises(tf.errors.InvalidArgumentError, match="device:CPU:1]"):
            with tf.device("CPU:5"):
                pass
    finally:
        tf.config.set_soft_device_placement(True)
