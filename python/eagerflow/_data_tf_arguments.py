"""tf.data.Dataset methods take TF's full argument lists: the arguments that are only hints
here (name=, an op's name; num_parallel_calls= and deterministic= of interleave and batch, whose
pipelines run in order, which is the order TF's deterministic default gives and one that
deterministic=False allows) are accepted and change nothing else."""
import functools


def _with_hints(method, hints, defaults=None):
    @functools.wraps(method)
    def wrapped(self, *args, **kwargs):
        for hint in hints:
            kwargs.pop(hint, None)
        for key, value in (defaults or {}).items():
            if kwargs.get(key, 0) is None:
                kwargs[key] = value
        return method(self, *args, **kwargs)
    return wrapped


def _interleave(method):
    @functools.wraps(method)
    def interleave(self, map_func, cycle_length=None, block_length=None, num_parallel_calls=None,
                   deterministic=None, name=None):
        return method(self, map_func, cycle_length, 1 if block_length is None else block_length)
    return interleave


def install(dataset_class):
    dataset_class.interleave = _interleave(dataset_class.interleave)
    dataset_class.batch = _with_hints(dataset_class.batch, ("num_parallel_calls", "deterministic", "name"))
    for name in ("filter", "prefetch", "shuffle", "cache", "padded_batch", "map", "take", "skip", "repeat",
                 "enumerate", "apply"):
        setattr(dataset_class, name, _with_hints(getattr(dataset_class, name), ("name",)))
