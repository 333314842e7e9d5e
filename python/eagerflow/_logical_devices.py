"""Logical CPU devices, as tf.config.set_logical_device_configuration makes them.

TF can split one physical CPU into several logical ones (/device:CPU:0, /device:CPU:1, ...) so
that one process runs code written for several devices (tf.device('CPU:1'), a MirroredStrategy
over ['CPU:0', 'CPU:1']). They share the physical CPU: a logical device is a name a program can
place work on, not more hardware. eagerflow keeps the same model: the configured logical CPUs
are valid placement targets, and all of them run on the one CPU thread pool.

TF fixes the configuration when its runtime initializes (on first use of the devices); setting it
afterwards to something different is its RuntimeError. Here the devices are first used when their
list is read (tf.config.list_logical_devices, a strategy, a tf.device block naming a CPU): from
then on only the same configuration may be set again, as in TF.
"""
import threading as _threading

_lock = _threading.Lock()
_config = [None]  # None: not split (one logical CPU); else the list of LogicalDeviceConfigurations
_initialized = [False]


def _validate(logical_devices, config_cls):
    if logical_devices is None:
        raise TypeError("'NoneType' object is not iterable")  # TF iterates the list as given
    devices = list(logical_devices)
    for d in devices:
        if not isinstance(d, config_cls):
            raise ValueError(f"Virtual device configuration must be a LogicalDeviceConfiguration, got {d!r}")
        if d.memory_limit is not None:
            raise ValueError("Setting memory limit on CPU virtual devices is currently not supported")
        if d.experimental_priority is not None:
            raise ValueError("Setting experimental_priority on CPU virtual devices is currently not supported")
    return devices


def set_configuration(logical_devices, config_cls):
    devices = _validate(logical_devices, config_cls)
    with _lock:
        if _initialized[0] and devices != (_config[0] or []):
            raise RuntimeError("Virtual devices cannot be modified after being initialized")
        _config[0] = devices


def get_configuration():
    c = _config[0]
    return None if c is None else list(c)


def count(mark_initialized=True):
    """How many logical CPUs there are (at least one); reading it fixes the configuration."""
    if mark_initialized:
        _initialized[0] = True
    c = _config[0]
    return max(1, len(c)) if c is not None else 1


def names():
    return [f"/device:CPU:{i}" for i in range(count())]
