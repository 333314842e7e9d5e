"""tf.data.Options and its parts (ThreadingOptions, ...), and Dataset.with_options/options.

Every TF field is accepted, type-checked as TF's and kept with the dataset; eagerflow's C++
pipeline decides threading and order itself, so the values are recorded, not acted on."""
import enum as _enum
import sys as _sys


class AutoShardPolicy(_enum.IntEnum):
    OFF = -1
    AUTO = 0
    FILE = 1
    DATA = 2
    HINT = 3


class AutotuneAlgorithm(_enum.IntEnum):
    DEFAULT = 0
    HILL_CLIMB = 1
    GRADIENT_DESCENT = 2
    MAX_PARALLELISM = 3
    STAGE_BASED = 4


class ExternalStatePolicy(_enum.IntEnum):
    WARN = 0
    IGNORE = 1
    FAIL = 2


class _OptionsBase:
    """Fields declared in _FIELDS as name -> (type or None for any value, default factory or None).
    Unset fields are None (sub-options are made on first read); unknown names are refused."""
    _FIELDS = {}
    _ALIASES = {}

    def __init__(self):
        object.__setattr__(self, "_values", {})

    def _field(self, name):
        return self._ALIASES.get(name, name)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        name = self._field(name)
        if name not in self._FIELDS:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        values = object.__getattribute__(self, "_values")
        if name not in values:
            factory = self._FIELDS[name][1]
            if factory is None:
                return None
            values[name] = factory()
        return values[name]

    def __setattr__(self, name, value):
        field = self._field(name)
        if field not in self._FIELDS:
            raise AttributeError(f"Cannot set the property {name} on {type(self).__name__}.")
        ty = self._FIELDS[field][0]
        if value is not None and ty is not None and not (isinstance(value, ty) and not (ty is int and isinstance(value, bool))):
            raise TypeError(f'Property "{name}" must be of type {ty}, got: {value} (type: {type(value)})')
        self._values[field] = value

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self._FIELDS)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None

    def _merge_into(self, other):
        """A copy of self with other's set fields over it (sub-options merged field by field)."""
        out = type(self)()
        for name in self._FIELDS:
            mine, theirs = self._values.get(name), other._values.get(name)
            if isinstance(mine, _OptionsBase) or isinstance(theirs, _OptionsBase):
                base = mine if mine is not None else type(theirs)()
                out._values[name] = base._merge_into(theirs) if theirs is not None else base._merge_into(type(base)())
            elif theirs is not None:
                out._values[name] = theirs
            elif mine is not None:
                out._values[name] = mine
        return out

    def __repr__(self):
        set_ = {k: v for k, v in self._values.items() if v is not None and not (isinstance(v, _OptionsBase) and v == type(v)())}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in sorted(set_.items()))})"


def _fields(types, **sub):
    out = {n: (t, None) for n, t in types.items()}
    out.update({n: (c, c) for n, c in sub.items()})
    return out


class ThreadingOptions(_OptionsBase):
    """tf.data.ThreadingOptions: max_intra_op_parallelism, private_threadpool_size (ints)."""
    _FIELDS = _fields({"max_intra_op_parallelism": int, "private_threadpool_size": int})


class AutotuneOptions(_OptionsBase):
    _FIELDS = _fields({"enabled": bool, "cpu_budget": int, "ram_budget": int, "autotune_algorithm": AutotuneAlgorithm,
                       "initial_parallelism": int, "min_parallelism": int})


class DistributeOptions(_OptionsBase):
    _FIELDS = _fields({"auto_shard_policy": AutoShardPolicy, "num_devices": int})


class OptimizationOptions(_OptionsBase):
    _FIELDS = _fields({n: bool for n in (
        "apply_default_optimizations", "filter_fusion", "filter_parallelization", "inject_prefetch", "map_and_batch_fusion",
        "map_and_filter_fusion", "map_fusion", "map_parallelization", "noop_elimination", "parallel_batch",
        "seq_interleave_prefetch", "shuffle_and_repeat_fusion")})


class ServiceOptions(_OptionsBase):
    _FIELDS = _fields({"pinned": bool})


class Options(_OptionsBase):
    """tf.data.Options: a dataset's options (Dataset.with_options); merge() combines two, the
    argument's set fields winning."""
    _FIELDS = _fields({"deterministic": bool, "experimental_deterministic": bool, "experimental_external_state_policy": ExternalStatePolicy,
                       "experimental_slack": bool, "experimental_symbolic_checkpoint": bool, "experimental_warm_start": bool,
                       "dataset_name": str, "framework_type": list},
                      autotune=AutotuneOptions, experimental_distribute=DistributeOptions,
                      experimental_optimization=OptimizationOptions, experimental_service=ServiceOptions,
                      threading=ThreadingOptions)
    _ALIASES = {"experimental_threading": "threading"}

    def merge(self, options):
        """These options with `options`' set fields over them (a new Options)."""
        if not isinstance(options, Options):
            raise TypeError(f"merge: expected tf.data.Options, got {type(options).__name__}")
        return self._merge_into(options)


# Options of datasets, by id: the C++ Dataset takes no attributes or weak references. An entry
# holds its dataset, so the id stays its own; entries whose dataset nothing else holds go at
# the next with_options.
_by_dataset = {}


def _purge():
    for key, (ds, _) in list(_by_dataset.items()):
        # the dict's tuple, this loop's `ds` and getrefcount's argument
        if _sys.getrefcount(ds) <= 3:
            del _by_dataset[key]


def options_of(ds):
    entry = _by_dataset.get(id(ds))
    return entry[1] if entry is not None and entry[0] is ds else None


def with_options(self, options, name=None):
    """A dataset of the same elements with `options` merged over this one's."""
    if not isinstance(options, Options):
        raise TypeError(f"with_options: expected tf.data.Options, got {type(options).__name__}")
    _purge()
    out = self.take(-1)  # the same elements, a dataset object of its own
    base = options_of(self) or Options()
    _by_dataset[id(out)] = (out, base.merge(options))
    return out


def options(self):
    """This dataset's options (a default Options when none were set)."""
    return options_of(self) or Options()


def propagate(method):
    """A Dataset method whose result keeps this dataset's options, as TF's transformations do."""
    def wrapped(self, *args, **kwargs):
        out = method(self, *args, **kwargs)
        opts = options_of(self)
        if opts is not None and out is not self and options_of(out) is None and type(out) is type(self):
            _by_dataset[id(out)] = (out, opts)
        return out
    wrapped.__name__, wrapped.__doc__ = getattr(method, "__name__", "method"), getattr(method, "__doc__", None)
    return wrapped
