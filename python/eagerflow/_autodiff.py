"""ef.GradientTape as a context manager, ef.grad and ef.value_and_grad over Python functions."""
from . import _core


def _flatten(structure):
    if isinstance(structure, dict):
        return [v for k in sorted(structure) for v in _flatten(structure[k])]
    if isinstance(structure, (list, tuple)):
        return [v for item in structure for v in _flatten(item)]
    return [structure]


def _gradient(tape, target, sources, output_gradients, unconnected):
    """The C++ tape's gradient, plus TF's rule for a variable given as a target: TF differentiates
    its handle, so d variable / d (the same variable) is ones (or that target's output gradient)
    and no other source is reached through it."""
    targets = list(target) if isinstance(target, (list, tuple)) else [target]
    if not any(isinstance(t, _core.Variable) for t in targets):
        return tape.gradient(target, sources, output_gradients, unconnected)
    single = not isinstance(target, (list, tuple))
    ogs = [None] * len(targets) if output_gradients is None else (
        [output_gradients] if single else list(output_gradients))
    kept = [i for i, t in enumerate(targets) if not isinstance(t, _core.Variable)]
    flat_sources = list(sources) if isinstance(sources, (list, tuple)) else [sources]
    if kept:
        kept_ogs = None if output_gradients is None else [ogs[i] for i in kept]
        grads = tape.gradient([targets[i] for i in kept], flat_sources, kept_ogs, unconnected)
    else:
        grads = [None] * len(flat_sources)
    for j, source in enumerate(flat_sources):
        for i, t in enumerate(targets):
            if isinstance(t, _core.Variable) and isinstance(source, _core.Variable) and t._same_as(source):
                own = _core.ones_like(t.value()) if ogs[i] is None else _core.convert_to_tensor(ogs[i])
                grads[j] = own if grads[j] is None else grads[j] + own
        if grads[j] is None and unconnected == "zero":
            grads[j] = _core.zeros_like(_core.convert_to_tensor(source))
    return grads if isinstance(sources, (list, tuple)) else grads[0]


class GradientTape:
    """Records the ops run inside `with ef.GradientTape() as tape:`; tape.gradient(target, sources)."""

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._persistent = persistent
        self._watch_accessed = watch_accessed_variables
        self._tape = None
        self._used = False

    def __enter__(self):
        if self._tape is None:
            self._tape = _core._GradientTape(self._persistent, self._watch_accessed)
        else:
            self._tape._resume()
        return self

    def __exit__(self, *exc):
        if self._tape is not None:
            self._tape._stop()
        return False

    def _require(self):
        if self._tape is None:
            raise _core.Error("[gradient_tape] use the tape inside `with ef.GradientTape() as tape:` first")
        return self._tape

    def watch(self, x):
        self._require().watch(x)

    def gradient(self, target, sources, output_gradients=None, unconnected_gradients="none"):
        tape = self._require()
        self._begin_use("gradients")
        unconnected = getattr(unconnected_gradients, "value", unconnected_gradients)
        if isinstance(target, dict) or (isinstance(target, (list, tuple)) and any(isinstance(t, (dict, list, tuple)) for t in target)):
            # A nested structure of targets: their gradients add up, as TF's.
            target = _flatten(target)
            if output_gradients is not None:
                output_gradients = _flatten(output_gradients)
        if isinstance(sources, dict):
            keys = list(sources)
            grads = _gradient(tape, target, [sources[k] for k in keys], output_gradients, str(unconnected))
            return dict(zip(keys, grads))
        if isinstance(sources, tuple):
            return tuple(_gradient(tape, target, list(sources), output_gradients, str(unconnected)))
        return _gradient(tape, target, sources, output_gradients, str(unconnected))

    def _begin_use(self, what):
        if self._used and not self._persistent:
            raise _core.Error(f"[gradient_tape] a non-persistent GradientTape can compute {what} once; "
                              "use ef.GradientTape(persistent=True) for more")
        self._require()
        self._used = True

    def jacobian(self, target, sources, unconnected_gradients="none", parallel_iterations=None,
                 experimental_use_pfor=True):
        """TF's tape.jacobian: shape target.shape + source.shape per source (python/eagerflow/_jacobian.py)."""
        from . import _jacobian
        return _jacobian.jacobian(self, target, sources, unconnected_gradients, parallel_iterations,
                                  experimental_use_pfor)

    def batch_jacobian(self, target, source, unconnected_gradients="none", parallel_iterations=None,
                       experimental_use_pfor=True):
        """TF's tape.batch_jacobian: per example of the first axis, target.shape + source.shape[1:]."""
        from . import _jacobian
        return _jacobian.batch_jacobian(self, target, source, unconnected_gradients, parallel_iterations,
                                        experimental_use_pfor)

    def watched_variables(self):
        return self._require().watched_variables()

    def reset(self):
        self._require().reset()

    def stop_recording(self):
        tape = self._require()

        class _Pause:
            def __enter__(self_):
                tape._stop()

            def __exit__(self_, *exc):
                tape._resume()
                return False
        return _Pause()


def value_and_grad(fn, argnums=0):
    """fn's value and its gradient with respect to argument(s) `argnums` (JAX-style)."""
    def wrapped(*args, **kwargs):
        nums = [argnums] if isinstance(argnums, int) else list(argnums)
        args = list(args)
        for i in nums:
            args[i] = _core.identity(_core.convert_to_tensor(args[i]))
        with GradientTape() as tape:
            for i in nums:
                tape.watch(args[i])
            value = fn(*args, **kwargs)
        grads = tape.gradient(value, [args[i] for i in nums], unconnected_gradients="zero")
        return value, (grads[0] if isinstance(argnums, int) else tuple(grads))
    return wrapped


def grad(fn, argnums=0):
    """The gradient of scalar-valued fn with respect to argument(s) `argnums` (JAX-style)."""
    vg = value_and_grad(fn, argnums)
    return lambda *args, **kwargs: vg(*args, **kwargs)[1]
