"""tf.device over the C++ device scope (ef._core.device), with TF's parsing of device strings.

eagerflow computes on the CPU. A GPU or TPU request is placed on the CPU, as TF's soft placement
does on a machine without one, with one log line per device name; with soft placement off
(tf.config.set_soft_device_placement(False)) it is TF's InvalidArgumentError. A device string TF
cannot parse is TF's ValueError (at the call; TF raises it when the block is entered); a job,
replica or task other than this process's is TF's InvalidArgumentError (the with-block raises
when entered, where TF raises at its first op).
"""
import logging as _logging

from . import _core
from . import errors as _errors
from . import _logical_devices

_soft_placement = [True]
_logged = set()
_CPU = "/job:localhost/replica:0/task:0/device:CPU:0"


def _parse(spec):
    """(job, replica, task, device type, index) of a device string, by TF's DeviceSpec rules."""
    job = replica = task = kind = index = None
    for part in spec.split("/"):
        if not part:
            continue
        x = part.split(":")
        key = x[0].lower()
        if len(x) == 2 and key in ("job", "replica", "task"):
            if key == "job":
                job = x[1]
            elif key == "replica":
                replica = int(x[1])
            else:
                task = int(x[1])
            continue
        if len(x) in (1, 2) and x[0].upper() in ("CPU", "GPU", "TPU"):
            new = (x[0].upper(), None if len(x) == 1 or x[1] == "*" else int(x[1]))  # '*': any index
        elif len(x) == 3 and x[0] == "device":
            new = (x[1], None if x[2] == "*" else int(x[2]))
        else:
            raise ValueError(f"Unknown attribute '{x[0]}' is encountered while parsing the device spec: '{spec}'.")
        if kind is not None:
            raise ValueError(f"Multiple device types are not allowed while parsing the device spec: {spec}.")
        kind, index = new
    return job, replica, task, kind, index


class _Placement:
    """The context manager tf.device returns."""

    def __init__(self, spec):
        self._spec = spec
        self._parsed = _parse(spec)  # a malformed string fails at the call (TF: when entered)
        self._inner = None

    def __enter__(self):
        job, replica, task, kind, index = self._parsed
        full = (f"/job:{job or 'localhost'}/replica:{replica or 0}/task:{task or 0}/device:"
                f"{kind or 'CPU'}:{index or 0}")
        if job not in (None, "localhost") or replica not in (None, 0) or task not in (None, 0):
            raise _errors.InvalidArgumentError(f"{full} unknown device.")
        target = "/CPU:0"
        if kind == "CPU" and index:
            # A logical CPU (tf.config.set_logical_device_configuration) runs on the one CPU; an
            # index past them is soft-placed on CPU:0 as TF does, or TF's error without soft placement.
            n = _logical_devices.count()
            if index >= n and not _soft_placement[0]:
                devices = ", ".join(f"/job:localhost/replica:0/task:0/device:CPU:{i}" for i in range(n))
                raise _errors.InvalidArgumentError(
                    f"Could not satisfy device specification '{full}'. enable_soft_placement=0. Supported device "
                    f"types [CPU]. All available devices [{devices}].")
        if kind is not None and kind != "CPU":
            if kind not in ("GPU", "TPU") and not kind.startswith("XLA_"):
                try:  # a device registered with the C++ core (ef::register_device), by its name
                    self._inner = _core.device(kind.lower())
                except ValueError:
                    self._inner = None
            if self._inner is None:
                if not _soft_placement[0]:
                    raise _errors.InvalidArgumentError(
                        f"Could not satisfy device specification '{full}'. enable_soft_placement=0. Supported device "
                        f"types [CPU]. All available devices [{_CPU}].")
                if full not in _logged:
                    _logged.add(full)
                    _logging.getLogger("tensorflow").warning(
                        "tf.device('%s'): eagerflow has no %s device; its ops run on the CPU (soft placement)",
                        self._spec, kind)
        if self._inner is None:
            self._inner = _core.device(target)
        self._inner.__enter__()
        return None

    def __exit__(self, *exc):
        inner, self._inner = self._inner, None
        inner.__exit__(*exc)
        return False


def device(device_name):
    """tf.device(device_name): ops in the with-block run on that device ('/CPU:0'; see the module
    note for GPU names). None leaves placement as it is."""
    if callable(device_name):
        raise RuntimeError("tf.device does not support functions.")
    if device_name is None:
        return _core.device(None)
    if hasattr(device_name, "to_string"):
        device_name = device_name.to_string()
    if not isinstance(device_name, str):
        raise TypeError(f"tf.device: device_name must be a string, got {type(device_name).__name__}")
    return _Placement(device_name)


class DeviceSpec:
    """tf.DeviceSpec: a device's job, replica, task, type and index (each may be unset);
    immutable, as TF 2's."""

    __slots__ = ("_job", "_replica", "_task", "_device_type", "_device_index")

    def __init__(self, job=None, replica=None, task=None, device_type=None, device_index=None):
        self._job = None if job is None else str(job)
        self._replica = None if replica is None else int(replica)
        self._task = None if task is None else int(task)
        kind = None if device_type is None else str(device_type)
        self._device_type = kind.upper() if kind is not None and kind.upper() in ("CPU", "GPU", "TPU") else kind
        self._device_index = None if device_index is None else int(device_index)

    @classmethod
    def from_string(cls, spec):
        job, replica, task, kind, index = _parse(spec)
        return cls(job, replica, task, kind, index)

    def parse_from_string(self, spec):
        """A new spec parsed from `spec` (TF 2's: specs are immutable)."""
        return self.from_string(spec)

    job = property(lambda self: self._job)
    replica = property(lambda self: self._replica)
    task = property(lambda self: self._task)
    device_type = property(lambda self: self._device_type)
    device_index = property(lambda self: self._device_index)

    def _fields(self):
        return (self._job, self._replica, self._task, self._device_type, self._device_index)

    def to_string(self):
        out = ""
        if self._job is not None:
            out += f"/job:{self._job}"
        if self._replica is not None:
            out += f"/replica:{self._replica}"
        if self._task is not None:
            out += f"/task:{self._task}"
        if self._device_type is not None:
            out += f"/device:{self._device_type}:{'*' if self._device_index is None else self._device_index}"
        return out

    def replace(self, **kwargs):
        fields = dict(zip(("job", "replica", "task", "device_type", "device_index"), self._fields()))
        fields.update(kwargs)
        return DeviceSpec(**fields)

    def make_merged_spec(self, dev):
        """This spec with the fields `dev` sets replaced by dev's."""
        mine = self._fields()
        theirs = dev._fields()
        return DeviceSpec(*(t if t is not None else m for m, t in zip(mine, theirs)))

    def __eq__(self, other):
        return isinstance(other, DeviceSpec) and self._fields() == other._fields()

    def __hash__(self):
        return hash(self._fields())

    def __repr__(self):
        return (f"<DeviceSpec(job={self._job}, replica={self._replica}, task={self._task}, "
                f"device_type={self._device_type}, device_index={self._device_index})>")
