"""ef.config, as tf.config: the devices (one CPU; no GPU), threads, run_functions_eagerly,
soft placement and determinism.

Devices: eagerflow computes on the host CPU, so the physical device list holds the CPU alone and
GPU lists are empty (what TF reports on a machine without a GPU). The CPU cannot be hidden; it can
be split into logical CPUs as TF's (python/eagerflow/_logical_devices.py).

Threads: intra-op threads are eagerflow's op thread pool (ef._core.set_num_threads); 0 means
the default it started with (OMP_NUM_THREADS or the core count), as TF's 0 means "the system
picks". Inter-op threads: eagerflow runs the ops of one caller in order, one at a time, so this
number is recorded (and read back) but cannot change execution.
"""
import collections as _collections
import sys as _sys
import types as _types

from . import _core
from . import _device
from . import _logical_devices

__all__ = ["PhysicalDevice", "LogicalDevice", "LogicalDeviceConfiguration", "list_physical_devices",
           "list_logical_devices", "get_visible_devices", "set_visible_devices", "get_logical_device_configuration",
           "set_logical_device_configuration", "run_functions_eagerly", "functions_run_eagerly",
           "experimental_run_functions_eagerly", "experimental_functions_run_eagerly", "set_soft_device_placement",
           "get_soft_device_placement", "threading", "experimental", "optimizer"]

PhysicalDevice = _collections.namedtuple("PhysicalDevice", ["name", "device_type"])
LogicalDevice = _collections.namedtuple("LogicalDevice", ["name", "device_type"])


class LogicalDeviceConfiguration(_collections.namedtuple(
        "LogicalDeviceConfiguration", ["memory_limit", "experimental_priority", "experimental_device_ordinal"])):
    """A logical device to make of a physical one (memory limit, priority, ordinal)."""

    def __new__(cls, memory_limit=None, experimental_priority=None, experimental_device_ordinal=None):
        return super().__new__(cls, memory_limit, experimental_priority, experimental_device_ordinal)


_CPU = PhysicalDevice(name="/physical_device:CPU:0", device_type="CPU")
_CPU_LOGICAL = LogicalDevice(name="/device:CPU:0", device_type="CPU")


def list_physical_devices(device_type=None):
    """The physical devices of this type ('CPU', 'GPU'; case as TF: exact), all without one."""
    return [_CPU] if device_type in (None, "CPU") else []


def list_logical_devices(device_type=None):
    """The logical CPUs (one, or as set_logical_device_configuration split the CPU); reading
    the list fixes their configuration, as TF's runtime does when it initializes."""
    if device_type not in (None, "CPU"):
        return []
    return [LogicalDevice(name=n, device_type="CPU") for n in _logical_devices.names()]


def get_visible_devices(device_type=None):
    return list_physical_devices(device_type)


def _check_device(device):
    if not isinstance(device, PhysicalDevice) or device != _CPU:
        raise ValueError(f"Unrecognized device: {device!r}")


def set_visible_devices(devices, device_type=None):
    """Only the present visibility (the CPU, no GPU) can be set: the runtime has started."""
    devices = [devices] if isinstance(devices, PhysicalDevice) else list(devices)
    for d in devices:
        _check_device(d)
    if sorted(devices) != sorted(get_visible_devices(device_type)):
        raise RuntimeError("Visible devices cannot be modified after being initialized")


def get_logical_device_configuration(device):
    """The configurations the CPU was split into; None when it was not split."""
    _check_device(device)
    return _logical_devices.get_configuration()


def set_logical_device_configuration(device, logical_devices):
    """Splits the CPU into len(logical_devices) logical CPUs (/device:CPU:0, :1, ...), which
    share its thread pool. Once they were used, only the same configuration may be set."""
    _check_device(device)
    _logical_devices.set_configuration(logical_devices, LogicalDeviceConfiguration)


def run_functions_eagerly(run_eagerly):
    """With True, every ef.function runs its Python function directly (no trace): for debugging."""
    _core.run_functions_eagerly(bool(run_eagerly))


def functions_run_eagerly():
    return bool(_core.functions_run_eagerly())


experimental_run_functions_eagerly = run_functions_eagerly  # TF's deprecated aliases
experimental_functions_run_eagerly = functions_run_eagerly


def set_soft_device_placement(enabled):
    """With False, tf.device('/GPU:0') is an InvalidArgumentError instead of running on the CPU."""
    _device._soft_placement[0] = bool(enabled)


def get_soft_device_placement():
    return _device._soft_placement[0]


def _namespace(name, doc, **functions):
    mod = _types.ModuleType(f"{__name__}.{name}", doc)
    for k, f in functions.items():
        setattr(mod, k, f)
    _sys.modules[mod.__name__] = mod
    return mod


_default_threads = _core.num_threads()
_intra = [0]
_inter = [0]


def set_intra_op_parallelism_threads(num_threads):
    """The threads one op may use; 0: the default eagerflow started with."""
    n = int(num_threads)
    if n < 0:
        raise ValueError(f"num_threads must be >= 0, got {num_threads}")
    _core.set_num_threads(n if n > 0 else _default_threads)
    _intra[0] = n


def get_intra_op_parallelism_threads():
    return _intra[0]


def set_inter_op_parallelism_threads(num_threads):
    n = int(num_threads)
    if n < 0:
        raise ValueError(f"num_threads must be >= 0, got {num_threads}")
    _inter[0] = n


def get_inter_op_parallelism_threads():
    return _inter[0]


threading = _namespace(
    "threading", "tf.config.threading: the op thread pool's size.",
    set_intra_op_parallelism_threads=set_intra_op_parallelism_threads,
    get_intra_op_parallelism_threads=get_intra_op_parallelism_threads,
    set_inter_op_parallelism_threads=set_inter_op_parallelism_threads,
    get_inter_op_parallelism_threads=get_inter_op_parallelism_threads)

_determinism = [False]


def enable_op_determinism():
    """eagerflow's CPU kernels give the same bits run to run (work is split into fixed chunks,
    never by thread timing), so this records the request and changes nothing."""
    _determinism[0] = True


def set_memory_growth(device, enable):
    """TF's rule: memory growth is a GPU setting; the CPU refuses it."""
    _check_device(device)
    raise ValueError("Cannot set memory growth on non-GPU and non-Pluggable devices")


def get_memory_growth(device):
    _check_device(device)
    raise KeyError(device)  # TF's: no memory-growth entry for the CPU


experimental = _namespace(
    "experimental", "tf.config.experimental: devices, memory growth and determinism.",
    enable_op_determinism=enable_op_determinism, list_physical_devices=list_physical_devices,
    list_logical_devices=list_logical_devices, get_visible_devices=get_visible_devices,
    set_visible_devices=set_visible_devices, set_memory_growth=set_memory_growth,
    get_memory_growth=get_memory_growth, get_virtual_device_configuration=get_logical_device_configuration,
    set_virtual_device_configuration=set_logical_device_configuration,
    VirtualDeviceConfiguration=LogicalDeviceConfiguration)

from . import _graph_options  # noqa: E402

optimizer = _namespace(
    "optimizer", "tf.config.optimizer: Grappler's options and the JIT setting, mapped onto eagerflow's passes.",
    set_jit=_graph_options.set_jit, get_jit=_graph_options.get_jit,
    set_experimental_options=_graph_options.set_experimental_options,
    get_experimental_options=_graph_options.get_experimental_options)
