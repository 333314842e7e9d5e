"""tf.config and tf.device as TF's on a machine without a GPU (issue 32)."""
import logging

import numpy as np
import pytest

import eagerflow as tf


def test_device_lists():
    cpu = tf.config.PhysicalDevice(name="/physical_device:CPU:0", device_type="CPU")
    assert tf.config.list_physical_devices() == [cpu]
    assert tf.config.list_physical_devices("CPU") == [cpu]
    assert tf.config.list_physical_devices("GPU") == [] and tf.config.list_physical_devices("cpu") == []
    assert tf.config.list_logical_devices() == [tf.config.LogicalDevice(name="/device:CPU:0", device_type="CPU")]
    assert tf.config.list_logical_devices("GPU") == []
    assert tf.config.get_visible_devices() == [cpu]
    assert tf.config.experimental.list_physical_devices("GPU") == []
    assert repr(cpu) == "PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')"


def test_the_cpu_cannot_be_hidden_or_split():
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_visible_devices([cpu])  # what is visible already: accepted
    tf.config.set_visible_devices([], "GPU")
    with pytest.raises(RuntimeError, match="Visible devices cannot be modified after being initialized"):
        tf.config.set_visible_devices([], "CPU")
    assert tf.config.get_logical_device_configuration(cpu) is None
    with pytest.raises(RuntimeError, match="Virtual devices cannot be modified"):
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    with pytest.raises(ValueError, match="Cannot set memory growth on non-GPU"):
        tf.config.experimental.set_memory_growth(cpu, True)
    with pytest.raises(ValueError, match="Unrecognized device"):
        tf.config.get_logical_device_configuration("CPU:0")
    assert tf.config.LogicalDeviceConfiguration(memory_limit=10).memory_limit == 10


def test_threads_set_the_op_pool():
    before = tf._core.num_threads()
    assert tf.config.threading.get_intra_op_parallelism_threads() == 0  # TF's default: the system's choice
    try:
        tf.config.threading.set_intra_op_parallelism_threads(1)
        assert tf._core.num_threads() == 1
        assert tf.config.threading.get_intra_op_parallelism_threads() == 1
        x = np.arange(100000, dtype=np.float32)
        assert float(tf.reduce_sum(x)) == pytest.approx(float(x.astype(np.float64).sum()), rel=1e-6)
    finally:
        tf.config.threading.set_intra_op_parallelism_threads(0)
    assert tf._core.num_threads() == before
    tf.config.threading.set_inter_op_parallelism_threads(2)
    assert tf.config.threading.get_inter_op_parallelism_threads() == 2
    tf.config.threading.set_inter_op_parallelism_threads(0)
    with pytest.raises(ValueError):
        tf.config.threading.set_intra_op_parallelism_threads(-1)


def test_run_functions_eagerly():
    calls = []

    @tf.function
    def f(x):
        calls.append(tf.executing_eagerly())
        return x + 1.0
    assert not tf.config.functions_run_eagerly()
    try:
        tf.config.run_functions_eagerly(True)
        assert tf.config.functions_run_eagerly()
        f(tf.constant(1.0))
        f(tf.constant(2.0))
        assert calls == [True, True]  # the Python body ran on every call, eagerly
    finally:
        tf.config.run_functions_eagerly(False)
    assert float(f(tf.constant(1.0))) == 2.0
    assert calls[-1] is False  # traced again, now symbolically


def test_determinism_and_soft_placement_switches():
    tf.config.experimental.enable_op_determinism()
    x = np.random.default_rng(0).standard_normal(200000).astype(np.float32)
    results = {float(tf.reduce_sum(x)) for _ in range(5)}
    assert len(results) == 1
    assert tf.config.get_soft_device_placement() is True
    assert tf.config.optimizer.get_jit() == ""
    tf.config.optimizer.set_jit(True)
    assert tf.config.optimizer.get_jit() == "autoclustering"
    tf.config.optimizer.set_jit(False)


def test_device_places_gpu_names_on_the_cpu(caplog):
    cpu = "/job:localhost/replica:0/task:0/device:CPU:0"
    with caplog.at_level(logging.WARNING, logger="tensorflow"):
        for _ in range(2):
            with tf.device("/GPU:0"):
                y = tf.constant([1.0]) * 2.0
            assert y.device == cpu
    assert sum("no GPU device" in r.getMessage() for r in caplog.records) == 1  # logged once
    for name in ("/CPU:0", "/cpu:0", "CPU:0", "cpu", "/device:CPU:0", "/job:localhost/replica:0/task:0/device:CPU:0", ""):
        with tf.device(name):
            assert (tf.constant(1.0) + 1.0).device == cpu


def test_device_parsing_errors_are_tfs():
    with pytest.raises(ValueError, match="Unknown attribute 'foo' is encountered while parsing the device spec: 'foo'"):
        with tf.device("foo"):
            pass
    with pytest.raises(ValueError, match="Multiple device types are not allowed"):
        tf.device("/gpu:0/cpu:0")
    with pytest.raises(ValueError):
        tf.device("/GPU:x")
    with pytest.raises(tf.errors.InvalidArgumentError, match="task:1/device:CPU:0 unknown device"):
        with tf.device("/task:1"):
            pass
    with pytest.raises(RuntimeError, match="tf.device does not support functions"):
        tf.device(lambda op: "/cpu:0")


def test_soft_placement_off_refuses_gpu():
    tf.config.set_soft_device_placement(False)
    try:
        assert tf.config.get_soft_device_placement() is False
        with pytest.raises(tf.errors.InvalidArgumentError, match="Could not satisfy device specification"):
            with tf.device("/GPU:0"):
                pass
        with tf.device("/CPU:0"):
            tf.constant(1.0)
    finally:
        tf.config.set_soft_device_placement(True)


def test_device_inside_function():
    @tf.function
    def f(x):
        with tf.device("/GPU:0"):
            return x * 2.0
    np.testing.assert_array_equal(f(tf.constant([1.0, 2.0])).numpy(), [2.0, 4.0])


def test_version_is_tfs_api_level():
    assert tf.__version__ == tf.version.VERSION == "2.21.0"
    major, minor = (int(p) for p in tf.__version__.split(".")[:2])
    assert (major, minor) >= (2, 16)  # what TF-checking code tests
    assert tf.version.EAGERFLOW_VERSION  # eagerflow's own release


def test_small_top_level_names():
    @tf.function
    def f(a):
        return tf.constant(tf.executing_eagerly())
    assert tf.executing_eagerly() and not bool(f(tf.constant(1.0)))
    assert tf.get_static_value([1, 2]) == [1, 2]
    assert tf.get_static_value(tf.Variable(2.0)) is None  # a variable may change
    np.testing.assert_array_equal(tf.get_static_value(tf.constant([3, 4])), [3, 4])
    x, z = tf.Variable(1.0), tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = tf.stop_gradient(x * 3.0) + tf.identity(x)
    assert float(tape.gradient(y, x)) == 1.0
    with tf.GradientTape() as tape:
        y = x * 3.0
    gx, gz = tape.gradient(y, [x, z], unconnected_gradients=tf.UnconnectedGradients.ZERO)
    assert float(gx) == 3.0 and float(gz) == 0.0


def test_device_spec():
    s = tf.DeviceSpec.from_string("/job:w/replica:1/task:2/device:GPU:3")
    assert (s.job, s.replica, s.task, s.device_type, s.device_index) == ("w", 1, 2, "GPU", 3)
    assert s.to_string() == "/job:w/replica:1/task:2/device:GPU:3"
    assert tf.DeviceSpec(device_type="gpu", device_index=0).to_string() == "/device:GPU:0"
    assert tf.DeviceSpec().to_string() == "" and tf.DeviceSpec(job="a").to_string() == "/job:a"
    assert tf.DeviceSpec.from_string("cpu").to_string() == "/device:CPU:*"  # no index: any
    assert s.replace(job="x").to_string() == "/job:x/replica:1/task:2/device:GPU:3"
    assert s.make_merged_spec(tf.DeviceSpec(task=7)).task == 7
    assert tf.DeviceSpec.from_string("/task:1") == tf.DeviceSpec(task=1)
    assert hash(tf.DeviceSpec.from_string("/task:1")) == hash(tf.DeviceSpec(task=1))
    with pytest.raises(ValueError):
        tf.DeviceSpec(replica="x")
    with tf.device(tf.DeviceSpec(device_type="CPU", device_index=0)):
        assert tf.constant(1.0).device.endswith("device:CPU:0")
