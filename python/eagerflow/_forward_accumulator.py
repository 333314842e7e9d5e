"""tf.autodiff.ForwardAccumulator: forward-mode Jacobian-vector products of the ops run inside
`with acc:`, for the primals it watches along their tangents.

eagerflow has no per-op forward rules (docs/transforms.md: forward mode from reverse mode). The
accumulator records the ops on a persistent tape that watches only its primals; acc.jvp(y) is
d/du <J^T u, v> for a cotangent u of y: the gradient J^T u is linear in u, so differentiating
its inner product with the tangents v along u gives J v exactly. Both backward passes are ops,
so enclosing tapes record them (backward over forward) and a GradientTape inside the
accumulator has its gradients differentiated forward (Hessian-vector products).
"""
from . import _core
from ._autodiff import GradientTape


def _flatten(structure):
    from . import nest
    return nest.flatten(structure)


def _shape(x):
    return tuple(x._shape_tuple)


class ForwardAccumulator:
    """tf.autodiff.ForwardAccumulator(primals, tangents): `with acc:` records the ops run on the
    primals; acc.jvp(target) is the target's tangent (None, or zeros, where unconnected)."""

    def __init__(self, primals, tangents):
        from . import nest
        nest.assert_same_structure(primals, tangents)
        self._primals = _flatten(primals)
        self._tangents = []
        for p, t in zip(self._primals, _flatten(tangents)):
            if not isinstance(p, (_core.Tensor, _core.Variable)):
                p = _core.convert_to_tensor(p)
            t = _core.convert_to_tensor(t) if not isinstance(t, _core.Tensor) else t
            if t.dtype != p.dtype:
                t = _core.cast(t, p.dtype)
            if _shape(t) != _shape(p) and None not in _shape(t) + _shape(p):
                raise ValueError(f"Tangent {t} has shape {_shape(t)}, but expected shape {_shape(p)} "
                                 f"(the shape of its primal).")
            self._tangents.append(t)
        self._tape = GradientTape(persistent=True, watch_accessed_variables=False)
        self._recording = False
        self._entered = False

    def __enter__(self):
        if self._recording:
            raise ValueError("Accumulator is already recording.")
        self._tape.__enter__()
        if not self._entered:
            for p in self._primals:
                self._tape.watch(p)
        self._entered = True
        self._recording = True
        return self

    def __exit__(self, *exc):
        if self._recording:
            self._tape.__exit__(*exc)
            self._recording = False
        return False

    def jvp(self, primals, unconnected_gradients="none"):
        """The tangents of `primals` (a tensor or a nested structure of tensors computed from the
        accumulator's primals inside `with acc:`), in the same structure."""
        from . import nest
        mode = getattr(unconnected_gradients, "value", unconnected_gradients)
        if mode not in ("none", "zero"):
            raise ValueError(f"Unknown value for unconnected_gradients: {unconnected_gradients!r}")
        flat = [self._one_jvp(t, mode) for t in _flatten(primals)]
        return nest.pack_sequence_as(primals, flat)

    def _one_jvp(self, target, mode):
        if self._tape._tape is None:
            return self._unconnected(target, mode)
        target = target if isinstance(target, (_core.Tensor, _core.Variable)) else _core.convert_to_tensor(target)
        # The dummy cotangent is recorded by an inner tape only; the accumulator's own tape must
        # not see the backward pass it differentiates (it would not change values, only cost).
        paused = self._recording
        if paused:
            self._tape._tape._stop()
        try:
            value = target.value() if isinstance(target, _core.Variable) else target
            u = _core.zeros_like(value)
            with GradientTape(watch_accessed_variables=False) as outer:
                outer.watch(u)
                grads = self._tape._tape.gradient(target, list(self._primals), u, "none")
                terms = [_core.reduce_sum(g * v) for g, v in zip(grads, self._tangents) if g is not None]
                if not terms:
                    return self._unconnected(target, mode)
                total = terms[0]
                for t in terms[1:]:
                    total = total + t
            out = outer.gradient(total, u)
        finally:
            if paused:
                self._tape._tape._resume()
        if out is None:
            return self._unconnected(target, mode)
        return out

    @staticmethod
    def _unconnected(target, mode):
        if mode == "zero":
            value = target.value() if isinstance(target, _core.Variable) else _core.convert_to_tensor(target)
            return _core.zeros_like(value)
        return None
