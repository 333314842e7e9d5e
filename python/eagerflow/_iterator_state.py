"""An iterator's position in a tf.train.Checkpoint (TF's `<path>/.ATTRIBUTES/ITERATOR_STATE`).

TF saves a pipeline's buffers; eagerflow's C++ pipeline cannot hand its state to Python, so the
position is saved as what it takes to replay it: the number of elements handed out, the seeds of
the pass-dependent shuffles (python/eagerflow/_data_recipe.py), the pipeline's signature, and a
digest of the last element handed out. Restoring rebuilds the pipeline with those seeds, lets
the C++ pipeline skip the elements before the last (no Python per element) and compares the
last one's digest: a replay that differs (a map function drawing random numbers, a generator or
files that changed) raises FailedPreconditionError instead of silently continuing another
sequence. (Hashing every element instead would cost each training step a pass over its batch.) What is known
from the recipe to replay differently (a parallel map with deterministic=False, ...) is refused
when saving, naming the op.

The value is one string (JSON), shape [1]: tf.train.list_variables lists it as TF's does.
"""
import hashlib
import json
import os
import sys
import warnings

import numpy as np

from . import _data_recipe

STATE_SUFFIX = "/.ATTRIBUTES/ITERATOR_STATE"
_VERSION = 1


def update_digest(h, element):
    """Feeds one element (a tensor, or a tuple / dict of them) to the hash h."""
    if isinstance(element, tuple):
        h.update(b"(")
        for e in element:
            update_digest(h, e)
        h.update(b")")
        return
    if isinstance(element, dict):
        h.update(b"{")
        for k in sorted(element):
            h.update(str(k).encode() + b":")
            update_digest(h, element[k])
        h.update(b"}")
        return
    a = np.asarray(element.numpy() if hasattr(element, "numpy") else element)
    h.update(f"{a.dtype.str}{a.shape}".encode())
    if a.dtype == object:
        for b in a.reshape(-1):
            b = b if isinstance(b, bytes) else str(b).encode()
            h.update(len(b).to_bytes(8, "little") + b)
    else:
        h.update(np.ascontiguousarray(a).tobytes())


def new_digest():
    return hashlib.blake2b(digest_size=16)


def _errors():
    from . import errors
    return errors


def _digest_of(element):
    h = new_digest()
    update_digest(h, element)
    return h.hexdigest()


def state_of(iterator):
    """The JSON bytes of an iterator's position (FailedPreconditionError when its pipeline is
    known not to replay)."""
    found = _data_recipe.hazards(iterator._dataset)
    if found:
        raise _errors().FailedPreconditionError(
            None, None, f"Cannot checkpoint the iterator: eagerflow saves an iterator's position by replaying its "
            f"pipeline, and {found[0]} would not give the same elements again. Make it deterministic, or leave "
            "the iterator out of the checkpoint.")
    last = iterator._last if iterator._count else None
    stateful = _data_recipe.stateful_functions(iterator._dataset)
    if stateful:
        what, ops = stateful[0]
        policy = _external_state_policy(iterator._dataset)
        if policy is None or policy.name == "FAIL":
            raise _errors().FailedPreconditionError(
                None, None, f"Cannot checkpoint the iterator: {what} uses {', '.join(ops)}, which is stateful: a "
                "replay of the pipeline would not give the same elements (as TF, which refuses it too). Use "
                "stateless ops (tf.random.stateless_uniform, ...), or set "
                "tf.data.Options().experimental_external_state_policy to WARN or IGNORE to save the position "
                "anyway (the elements after a restore then differ from an uninterrupted run's).")
        if policy.name == "WARN":
            warnings.warn(f"tf.data iterator checkpoint: {what} uses {', '.join(ops)}, which is stateful: the "
                          "elements after a restore will differ from those of an uninterrupted run", stacklevel=_user_level())
        last = None  # not checked on restore: the user accepted another sequence
    state = {"version": _VERSION, "count": iterator._count, "seeds": [str(s) for s in iterator._seeds],
             "signature": _data_recipe.signature(iterator._dataset),
             "last": None if last is None else _digest_of(last)}
    return json.dumps(state, sort_keys=True).encode()


def _user_level():
    """warnings.warn's stacklevel of the first caller outside eagerflow (the user's save())."""
    package = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


def _external_state_policy(dataset):
    from . import _data_options
    opts = _data_options.options_of(dataset)
    return None if opts is None else opts.experimental_external_state_policy


def _suspects(dataset):
    """The ops of the pipeline that run user code or read outside data, for the replay error."""
    names, seen = [], set()

    def visit(ds):
        step = _data_recipe.step_of(ds)
        if step is None:
            names.append("a dataset built outside tf.data's constructors")
            return
        if id(step) in seen:
            return
        seen.add(id(step))
        if step.op in ("map", "filter", "interleave", "from_generator", "text_line", "tfrecord", "csv",
                       "image_folder", "cache"):
            names.append(step.op)
        for p in step.parents:
            visit(p)
    visit(dataset)
    return sorted(set(names))


def restore(iterator, value):
    """Puts the iterator at the saved position: the pipeline rebuilt with the saved seeds, run in
    C++ past the elements handed out before (Dataset.skip), and the last of them compared with
    the saved one."""
    errors = _errors()
    raw = value.reshape(-1)[0] if isinstance(value, np.ndarray) else value
    try:
        state = json.loads(bytes(raw).decode() if not isinstance(raw, str) else raw)
    except (ValueError, TypeError) as e:
        raise errors.InvalidArgumentError(None, None, f"Invalid iterator state in the checkpoint: {e}") from None
    if state.get("version") != _VERSION:
        raise errors.InvalidArgumentError(None, None, f"Unsupported iterator state version {state.get('version')!r}")
    mine = _data_recipe.signature(iterator._dataset)
    if state["signature"] != mine:
        raise errors.InvalidArgumentError(
            None, None, f"The checkpoint's iterator was over a dataset built as {state['signature']}, this iterator's "
            f"dataset is built as {mine}: restore into an iterator of a dataset built the same way.")
    try:
        dataset, seeds = _data_recipe.plan(iterator._dataset, [int(s) for s in state["seeds"]])
    except ValueError as e:
        raise errors.InvalidArgumentError(None, None, f"Cannot restore the iterator: {e}") from None
    count, last = int(state["count"]), None
    if count == 0:
        fresh = iterator._cpp_iter(dataset)
    else:
        fresh = iterator._cpp_iter(_data_recipe.skipped(dataset, count - 1))
        problem = None
        try:
            last = next(fresh)
        except StopIteration:
            problem = "ended before it"
        except BaseException:
            fresh.close()
            raise
        if problem is None and state["last"] is not None and _digest_of(last) != state["last"]:
            problem = "gave another element there"
        if problem is not None:
            fresh.close()
            suspects = ", ".join(_suspects(iterator._dataset)) or "its source"
            raise errors.FailedPreconditionError(
                None, None, f"Cannot restore the iterator: its pipeline, replayed to the saved position (element "
                f"{count}), {problem}; an op in it does not give the same elements on every run ({suspects}: a "
                "function drawing random numbers, a generator, files that changed). The iterator is left as it was.")
    iterator._replace(fresh, seeds, count, last)
