"""How each Dataset was built (its recipe), so that an iterator's pass can be replayed.

The C++ pipeline keeps no record Python can read back, and a shuffle's order depends on state in
its node: `seed * C + pass` (pass: how many times the node was iterated) with a seed, a draw from
ef's global generator at each pass without one (src/data/dataset_transform.cpp, ShuffleNode).
Such a shuffle is "pass-dependent" unless it has a seed and reshuffle_each_iteration=False.

So every Dataset constructor and transformation records a _Step on its result (the op, its
arguments, its input datasets), and iter(dataset) (python/eagerflow/_data_iterators.py) iterates
a copy of the pipeline rebuilt from the recipe above each pass-dependent shuffle, with an explicit
seed chosen here: fresh nodes start at pass 0, so the order of every epoch is known from that
seed alone. The iterator saves those seeds with its position; restoring rebuilds the same
pipeline and replays it. The seeds keep today's orders: the first iterator of a seeded shuffle
gets `seed` itself, the next ones seeds whose passes start 2**32 further on (a new order each,
as TF's seed generator gives); an unseeded shuffle draws its value from ef's global generator
when the iterator is made (ef.random.set_seed repeats it) and keeps it for all its epochs.

A cache() is rebuilt never (a new node would lose what it holds): what is below it is left as
built, and the iterator's replay check (python/eagerflow/_iterator_state.py) is what tells
whether it replayed the same elements.
"""
import re

from . import _core
from . import _data_options

Dataset = _core._data.Dataset

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15  # the C++ shuffle's multiplier (odd: invertible modulo 2**64)
_GOLDEN_INV = pow(_GOLDEN, -1, 1 << 64)
_ITERATOR_STRIDE = 1 << 32  # passes between two iterators' seeds of one seeded shuffle

_SOURCES = ("from_tensor_slices", "from_tensors", "range", "from_generator", "text_line", "tfrecord", "csv",
            "image_folder")
_TRANSFORMS = ("map", "filter", "shuffle", "batch", "padded_batch", "prefetch", "repeat", "take", "skip", "cache",
               "interleave", "enumerate")
_original = {}


class _Step:
    """One op of a recipe. dynamic: a pass-dependent shuffle is in it (not under a cache)."""

    __slots__ = ("op", "args", "kwargs", "parents", "dynamic", "iterators", "hazards", "stateful", "__weakref__")

    def __init__(self, op, args, kwargs, parents):
        self.op, self.args, self.kwargs, self.parents = op, args, kwargs, parents
        self.iterators = 0  # iterators made over this (seeded, pass-dependent) shuffle so far
        self.hazards = []   # what makes a replay of this step differ (found while iterating)
        self.stateful = None  # map/filter: the stateful ops its function's trace has (traced when asked)
        below = any(step_of(p) is not None and step_of(p).dynamic for p in parents)
        self.dynamic = (op == "shuffle" and _pass_dependent(self)) or (below and op != "cache")


def step_of(dataset):
    return getattr(dataset, "_ef_recipe", None)


def _shuffle_params(step):
    names = ("buffer_size", "seed", "reshuffle_each_iteration")
    params = dict(zip(names, step.args))
    params.update({k: v for k, v in step.kwargs.items() if k in names})
    seed = params.get("seed")
    return params["buffer_size"], None if seed is None else int(seed), bool(params.get("reshuffle_each_iteration", True))


def _pass_dependent(step):
    _, seed, reshuffle = _shuffle_params(step)
    return seed is None or reshuffle


def _scalar_args(step):
    """The plain arguments (numbers, strings, None) of a step, for its signature."""
    out = []
    for v in list(step.args) + [step.kwargs[k] for k in sorted(step.kwargs)]:
        if v is None or isinstance(v, (bool, int, float, str)):
            out.append(repr(v))
    return out


def signature(dataset):
    """The ops of the pipeline, outermost first, with their plain arguments: an iterator's saved
    position is restored only into a pipeline built the same way."""
    step = step_of(dataset)
    if step is None:
        return "?"
    if step.op == "shuffle":  # its seed is saved apart: an unseeded shuffle matches a seeded rebuild
        buffer_size, seed, reshuffle = _shuffle_params(step)
        args = [repr(buffer_size), "seeded" if seed is not None else "unseeded", repr(reshuffle)]
    else:
        args = _scalar_args(step)
    inner = [signature(p) for p in step.parents]
    return f"{step.op}({', '.join(inner + args)})"


def hazards(dataset):
    """What makes a replay of this pipeline differ from its first run, each naming its op, found
    from the recipe (and from what interleave's function returned so far)."""
    out, seen = [], set()

    def visit(ds):
        step = step_of(ds)
        if step is None or id(step) in seen:
            return
        seen.add(id(step))
        if step.op == "map":
            params = dict(zip(("map_func", "num_parallel_calls", "deterministic"), step.args))
            params.update(step.kwargs)
            if params.get("deterministic") is False and params.get("num_parallel_calls") not in (None, 0, 1):
                out.append("map(num_parallel_calls=..., deterministic=False) (its order depends on its threads' timing)")
        out.extend(step.hazards)
        for p in step.parents:
            visit(p)
    visit(dataset)
    return out


# Ops of a traced function whose results differ from one run to the next (TF's "stateful"
# ops, refused by its iterator checkpoints as here): random ops drawing from a generator's
# state (the stateless ones are named stateless_*), and Python run at execution time.
_STATEFUL = ("random_", "py_function", "numpy_function")


def _function_of(step):
    if step.args:
        return step.args[0]
    return step.kwargs.get("map_func", step.kwargs.get("predicate"))


def _traced_stateful(step):
    """The stateful ops in a map/filter function, from a trace of it for its input's spec (made
    once, when a checkpoint first asks: the pipeline's own trace is not visible from Python)."""
    if step.stateful is None:
        try:
            from ._function import function
            spec = step.parents[0].element_spec
            traced = function(_function_of(step), autograph=False)
            concrete = (traced.get_concrete_function(*spec) if isinstance(spec, tuple)
                        else traced.get_concrete_function(spec))
            ops = re.findall(r"= ([A-Za-z_]\w*)", str(concrete.graph))
        except Exception:  # noqa: BLE001 - not traceable apart: the restore's check still guards it
            ops = []
        step.stateful = sorted({op for op in ops if op.startswith(_STATEFUL)})
    return step.stateful


def stateful_functions(dataset):
    """[(description of the function, its stateful ops)] of the pipeline's map and filter steps."""
    out, seen = [], set()

    def visit(ds):
        step = step_of(ds)
        if step is None or id(step) in seen:
            return
        seen.add(id(step))
        if step.op in ("map", "filter"):
            ops = _traced_stateful(step)
            if ops:
                name = getattr(_function_of(step), "__name__", "function")
                out.append((f"{step.op}'s function {name}", ops))
        for p in step.parents:
            visit(p)
    visit(dataset)
    return out


def plan(dataset, seeds=None):
    """(the dataset to iterate, the explicit seeds of its pass-dependent shuffles outermost first).
    seeds: those of a saved iterator (restoring); None: chosen now for a new iterator."""
    step = step_of(dataset)
    if step is None or not step.dynamic:
        return dataset, []
    given = list(seeds) if seeds is not None else None
    chosen, built = [], {}

    def seed_for(step):
        if given is not None:
            if not given:
                raise ValueError("the saved iterator has fewer shuffle seeds than this pipeline has shuffles")
            return given.pop(0)
        _, seed, _ = _shuffle_params(step)
        if seed is None:  # the C++ draw: a float64 in [0, 1) scaled to 53 bits, at pass 0
            with _core._InitScope():  # eagerly, also while ef.function traces a loop over the dataset
                draw = _core.random.uniform([], 0.0, 1.0, dtype=_core.DType.float64).numpy()
            return (int(float(draw) * 9007199254740992.0) * _GOLDEN_INV) & _MASK
        k, step.iterators = step.iterators, step.iterators + 1
        return (seed + k * _ITERATOR_STRIDE * _GOLDEN_INV) & _MASK

    def rebuild(ds):
        step = step_of(ds)
        if step is None or not step.dynamic:
            return ds
        if id(step) in built:  # one node reached twice (zip(a, a)) stays one node
            return built[id(step)]
        if step.op == "shuffle":
            s = seed_for(step)  # outermost first: the order the C++ passes draw theirs
            chosen.append(s)
            parents = [rebuild(p) for p in step.parents]
            buffer_size, seed, reshuffle = _shuffle_params(step)
            # an unseeded shuffle's epochs: reshuffled from the one draw (s + pass), or all alike
            out = _original["shuffle"](parents[0], buffer_size, s, reshuffle if seed is None else True)
        else:
            parents = [rebuild(p) for p in step.parents]
            out = _remake(step, parents)
        opts = _data_options.options_of(ds)
        if opts is not None:
            _data_options._by_dataset[id(out)] = (out, opts)
        built[id(step)] = out
        return out

    out = rebuild(dataset)
    if given:
        raise ValueError("the saved iterator has more shuffle seeds than this pipeline has shuffles")
    return out, chosen


def _remake(step, parents):
    if step.op == "zip":
        return _original["zip"](list(parents))
    return _original[step.op](parents[0], *step.args, **step.kwargs)


def skipped(dataset, count):
    """dataset.skip(count), not recorded (a restore's replay, not a pipeline of the program)."""
    return _original["skip"](dataset, count) if count else dataset


def _record(op, out, args, kwargs, parents):
    if isinstance(out, Dataset) and step_of(out) is None:
        try:
            out._ef_recipe = _Step(op, args, kwargs, parents)
        except AttributeError:  # a Dataset subclass without attributes: left unrecorded (opaque)
            pass
    return out


def _source(op, fn):
    def wrapped(*args, **kwargs):
        # the sources' arguments (tensors, files) are not kept: a source is never rebuilt
        return _record(op, fn(*args, **kwargs), (), {}, [])
    wrapped.__name__, wrapped.__doc__ = op, getattr(fn, "__doc__", None)
    return staticmethod(wrapped)


def _transform(op, fn):
    def wrapped(self, *args, **kwargs):
        holder = {}
        if op == "interleave":
            args, kwargs = _watched_interleave(args, kwargs, holder)
        out = _record(op, fn(self, *args, **kwargs), args, kwargs, [self])
        holder["step"] = step_of(out)
        return out
    wrapped.__name__, wrapped.__doc__ = op, getattr(fn, "__doc__", None)
    return wrapped


def _watched_interleave(args, kwargs, holder):
    """interleave's function wrapped to note, on its step (holder["step"]), inner datasets a
    replay would not give again: their shuffles draw from the global generator, or one dataset
    object is returned again and its shuffle's passes go on."""
    fn = args[0] if args else kwargs.get("map_func")
    if fn is None or not callable(fn):
        return args, kwargs

    def watched(*a):
        ds = fn(*a)
        step, inner = holder.get("step"), step_of(ds)
        if step is not None and inner is not None and inner.dynamic:
            used = getattr(ds, "_ef_interleave_used", False)
            if not used:
                try:
                    ds._ef_interleave_used = True
                except AttributeError:
                    pass
            unseeded = _has_unseeded_shuffle(ds)
            if unseeded or used:
                why = ("a shuffle without a seed" if unseeded else
                       "a shuffle with reshuffle_each_iteration=True in a dataset it returns more than once")
                note = f"interleave (its function returns datasets with {why})"
                if note not in step.hazards:
                    step.hazards.append(note)
        return ds

    watched.__name__ = getattr(fn, "__name__", "interleave_fn")
    if args:
        return (watched,) + tuple(args[1:]), kwargs
    return args, dict(kwargs, map_func=watched)


def _has_unseeded_shuffle(ds):
    step = step_of(ds)
    if step is None:
        return False
    if step.op == "shuffle" and _shuffle_params(step)[1] is None:
        return True
    return any(_has_unseeded_shuffle(p) for p in step.parents)


def _zip(fn):
    def wrapped(datasets, *args, **kwargs):
        out = fn(datasets, *args, **kwargs)
        parents = list(datasets) if isinstance(datasets, (list, tuple)) else []
        if len(parents) and all(isinstance(p, Dataset) for p in parents):
            _record("zip", out, (), {}, parents)
        return out
    wrapped.__name__, wrapped.__doc__ = "zip", getattr(fn, "__doc__", None)
    return staticmethod(wrapped)


def install():
    """Wraps Dataset's constructors and transformations (once) to record their recipes."""
    if _original:
        return
    for name in _SOURCES + _TRANSFORMS + ("zip",):
        fn = Dataset.__dict__.get(name)
        if fn is None:
            continue
        fn = fn.__func__ if isinstance(fn, staticmethod) else fn
        _original[name] = fn
        if name == "zip":
            setattr(Dataset, name, _zip(fn))
        elif name in _SOURCES:
            setattr(Dataset, name, _source(name, fn))
        else:
            setattr(Dataset, name, _transform(name, fn))

