"""GradientTape.jacobian and GradientTape.batch_jacobian (TF's), on ef.vmap.

A Jacobian row is the gradient of the target against a one-hot cotangent; the gradient is linear
in its cotangent, so ef.vmap over the rows of an identity matrix computes every row with one
batched backward pass (what TF's pfor does for its loop over gather(target, i)). The tape's
backward ops are public ops, so the rows are themselves recorded by enclosing tapes (Hessians by
nested tapes) and by an enclosing ef.function trace.
"""
from . import _core
from ._autodiff import _gradient
from ._layers import TensorShape


def _as_target(target):
    # A variable stays one: d v / d v is the identity (python/eagerflow/_autodiff.py: _gradient).
    return target if isinstance(target, (_core.Tensor, _core.Variable)) else _core.convert_to_tensor(target)


def _eye(n, dtype):
    from .math import eye
    return eye(n, dtype=dtype)


def _executing_eagerly():
    from ._tf_misc import executing_eagerly
    return executing_eagerly()


def _unconnected_mode(unconnected_gradients):
    mode = getattr(unconnected_gradients, "value", unconnected_gradients)
    if mode not in ("none", "zero"):
        raise ValueError(f"Unknown value for unconnected_gradients: {unconnected_gradients!r}")
    return mode


def _static_shape(x, what):
    shape = tuple(x._shape_tuple) if hasattr(x, "_shape_tuple") else tuple(x.shape)
    if any(d is None for d in shape):
        # vmap batches over a static number of rows; TF's pfor would take a dynamic count.
        raise ValueError(f"GradientTape.{what}: the target's shape must be known to vectorize its rows, "
                         f"got {TensorShape(list(shape))}; call it outside ef.function or give the "
                         "function an input_signature with static shapes")
    return shape


def _rows_of_gradients(tape, target, flat_sources, cotangents, mode, chunk, persistent):
    """[rows, *source.shape] per source (None where unconnected and mode is 'none'): the gradient
    of `target` for each row of `cotangents` ([rows, *target.shape])."""
    rows = int(cotangents.shape[0])
    connected = []

    def row(ct):
        grads = _gradient(tape, target, flat_sources, ct, mode)
        connected[:] = [g is not None for g in grads]
        # vmap returns tensors only: an unconnected source is a placeholder, dropped afterwards.
        return tuple(g if g is not None else _core.zeros([], target.dtype) for g in grads)

    # Chunks need the tape more than once: only a persistent tape (TF's parallel_iterations caps
    # memory the same way, with one while_loop iteration per chunk).
    step = rows if not (persistent and chunk) else max(1, int(chunk))
    parts = []
    for start in range(0, rows, step):
        out = _core.vmap(row)(cotangents[start:start + step])
        parts.append(list(out) if isinstance(out, (list, tuple)) else [out])
    if len(parts) == 1:
        stacked = parts[0]
    else:
        stacked = [_core.concat([p[i] for p in parts], 0) for i in range(len(flat_sources))]
    return [s if ok else None for s, ok in zip(stacked, connected)]


def _rows_by_loop(tape, target, flat_sources, cotangents, mode):
    """The rows one gradient call at a time (TF's experimental_use_pfor=False)."""
    rows = [_gradient(tape, target, flat_sources, cotangents[i], mode) for i in range(int(cotangents.shape[0]))]
    out = []
    for j in range(len(flat_sources)):
        column = [r[j] for r in rows]
        out.append(None if any(g is None for g in column) else _core.stack(column, 0))
    return out


def _check_vectorizable(use_pfor, persistent, what):
    if not use_pfor and not persistent and _executing_eagerly():
        raise RuntimeError(f"GradientTape must be created with persistent=True to compute the {what} with "
                           "eager execution enabled and with experimental_use_pfor set to False.")


def _compute(tape_wrapper, target, flat_sources, cotangents, mode, parallel_iterations, use_pfor):
    tape = tape_wrapper._require()
    persistent = tape_wrapper._persistent
    if use_pfor or not persistent:
        try:
            return _rows_of_gradients(tape, target, flat_sources, cotangents, mode, parallel_iterations, persistent)
        except NotImplementedError as err:
            raise ValueError("Encountered an exception while vectorizing the jacobian computation. "
                             "Vectorization can be disabled by setting experimental_use_pfor to False.") from err
    return _rows_by_loop(tape, target, flat_sources, cotangents, mode)


def jacobian(tape_wrapper, target, sources, unconnected_gradients="none", parallel_iterations=None,
             experimental_use_pfor=True):
    from . import nest
    tape_wrapper._begin_use("jacobians")
    mode = _unconnected_mode(unconnected_gradients)
    _check_vectorizable(experimental_use_pfor, tape_wrapper._persistent, "jacobian")
    target = _as_target(target)
    flat_sources = nest.flatten(sources)
    shape = _static_shape(target, "jacobian")
    size = 1
    for d in shape:
        size *= d
    eye = _eye(size, dtype=target.dtype)
    cotangents = _core.reshape(eye, [size, *shape])
    rows = _compute(tape_wrapper, target, flat_sources, cotangents, mode, parallel_iterations, experimental_use_pfor)
    out = []
    for source, r in zip(flat_sources, rows):
        if r is not None:
            r = _core.reshape(r, [*shape, *_source_shape(source)])
        out.append(r)
    return nest.pack_sequence_as(sources, out)


def _source_shape(source):
    return [d for d in (source._shape_tuple if hasattr(source, "_shape_tuple") else source.shape)]


def batch_jacobian(tape_wrapper, target, source, unconnected_gradients="none", parallel_iterations=None,
                   experimental_use_pfor=True):
    tape_wrapper._begin_use("jacobians")
    mode = _unconnected_mode(unconnected_gradients)
    target = _as_target(target)
    t_shape = _static_shape(target, "batch_jacobian")
    s_shape = _source_shape(source)
    if len(t_shape) < 2 or len(s_shape) < 2 or (s_shape[0] is not None and s_shape[0] != t_shape[0]):
        raise ValueError(f"Need first dimension of target shape ({TensorShape(list(t_shape))}) and "
                         f"source shape ({TensorShape(s_shape)}) to match.")
    _check_vectorizable(experimental_use_pfor, tape_wrapper._persistent, "batch_jacobian")
    batch = t_shape[0]
    row_size = 1
    for d in t_shape[1:]:
        row_size *= d
    # Row i's cotangent is one-hot at element i of every example: each example's gradient is its
    # own row, as TF's gather(target, i, axis=1) summed over the batch.
    eye = _core.reshape(_eye(row_size, dtype=target.dtype), [row_size, 1, row_size])
    cotangents = _core.reshape(_core.tile(eye, [1, batch, 1]), [row_size, *t_shape])
    (rows,) = _compute(tape_wrapper, target, [source], cotangents, mode, parallel_iterations, experimental_use_pfor)
    new_shape = [*t_shape, *s_shape[1:]]
    if rows is None:
        # TF returns zeros here whatever unconnected_gradients says (its documented compatibility).
        return _core.zeros(new_shape, target.dtype)
    rows = _core.reshape(rows, [row_size, batch, -1])
    rows = _core.transpose(rows, [1, 0, 2])
    return _core.reshape(rows, new_shape)
