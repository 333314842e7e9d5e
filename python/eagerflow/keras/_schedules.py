"""keras.optimizers.schedules: learning rates as functions of the optimizer's step.

Keras' schedules are the C++ ones (ef::optim), which saved models (.keras, .efmodel) can
rebuild. A user subclass of LearningRateSchedule is computed in Python with ef ops: an
optimizer calls it with the step (a float32 scalar) at trace time, so a traced train step
follows it without retracing."""
import abc as _abc
import math as _math

from .. import _core

_t = _core._train


def _ops():
    import eagerflow as ef
    return ef


def _step(step):
    ef = _ops()
    step = step if isinstance(step, _core.Tensor) else ef.convert_to_tensor(step)
    return ef.cast(step, "float32")


class LearningRateSchedule(_abc.ABC):
    """Keras' base: subclasses define __call__(step) and get_config()."""

    _ef_schedule_takes_step = True

    @_abc.abstractmethod
    def __call__(self, step):
        raise NotImplementedError(f"Learning rate schedule '{self.__class__.__name__}' must override `__call__(self, step)`.")

    def get_config(self):
        raise NotImplementedError(f"Learning rate schedule '{self.__class__.__name__}' must override `get_config()` "
                                  "in order to be serializable.")

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class ExponentialDecay(_t.ExponentialDecay):
    """initial_learning_rate * decay_rate ^ (step / decay_steps) (the exponent floored when staircase)."""

    _ef_schedule_takes_step = False

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False, name="ExponentialDecay"):
        if decay_steps <= 0:
            raise ValueError(f"Argument `decay_steps` must be > 0. Received: decay_steps={decay_steps}")
        super().__init__(float(initial_learning_rate), float(decay_steps), float(decay_rate), bool(staircase))
        self._config = {"initial_learning_rate": initial_learning_rate, "decay_steps": decay_steps,
                        "decay_rate": decay_rate, "staircase": staircase, "name": name}
        self.name = name

    def get_config(self):
        return dict(self._config)

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class CosineDecay(_t.CosineDecay):
    """Cosine decay from initial_learning_rate to alpha * it over decay_steps; with
    warmup_target, a linear warmup from initial_learning_rate to warmup_target over
    warmup_steps first (then the decay starts from warmup_target)."""

    _ef_schedule_takes_step = False

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name="CosineDecay", warmup_target=None,
                 warmup_steps=0):
        if decay_steps <= 0:
            raise ValueError(f"Argument `decay_steps` must be > 0. Received: decay_steps={decay_steps}")
        super().__init__(float(initial_learning_rate), float(decay_steps), float(alpha),
                         None if warmup_target is None else float(warmup_target), float(warmup_steps))
        self._config = {"initial_learning_rate": initial_learning_rate, "decay_steps": decay_steps, "alpha": alpha,
                        "name": name, "warmup_target": warmup_target, "warmup_steps": warmup_steps}
        self.name = name

    def __call__(self, step):
        return _t.CosineDecay.__call__(self, _step(step))

    def get_config(self):
        return dict(self._config)

    @classmethod
    def from_config(cls, config):
        return cls(**config)


LearningRateSchedule.register(ExponentialDecay)
LearningRateSchedule.register(CosineDecay)
LearningRateSchedule.register(_t.LearningRateSchedule)


class _Builtin:
    """Keras' attributes, get_config and from_config over a C++ schedule (ef::optim), which the
    optimizer computes and save_model rebuilds."""

    _ef_schedule_takes_step = False

    def __init_subclass__(cls, **kwargs):
        # A user's subclass that computes its own rate is called from Python (its __call__).
        super().__init_subclass__(**kwargs)
        if "__call__" in cls.__dict__:
            cls._ef_schedule_takes_step = True

    def __call__(self, step):
        return self._ef_cpp.__call__(self, _step(step))

    def get_config(self):
        return {k: getattr(self, k if not k.endswith("_mul") else "_" + k) for k in self._ef_keys}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class PiecewiseConstantDecay(_Builtin, _t.PiecewiseConstantDecay):
    """values[0] while step <= boundaries[0], values[i] while boundaries[i-1] < step <=
    boundaries[i], values[-1] after the last boundary."""

    _ef_cpp = _t.PiecewiseConstantDecay
    _ef_keys = ("boundaries", "values", "name")

    def __init__(self, boundaries, values, name="PiecewiseConstant"):
        if len(boundaries) != len(values) - 1:
            raise ValueError("The length of boundaries should be 1 less than the length of values. Received: "
                             f"boundaries={boundaries} of length {len(boundaries)}, and values={values} of length "
                             f"{len(values)}.")
        _t.PiecewiseConstantDecay.__init__(self, [float(b) for b in boundaries], [float(v) for v in values])
        self.boundaries, self.values, self.name = list(boundaries), list(values), name


class PolynomialDecay(_Builtin, _t.PolynomialDecay):
    """(initial - end) * (1 - step / decay_steps)^power + end; with cycle, decay_steps grows to
    the next multiple of itself past the step."""

    _ef_cpp = _t.PolynomialDecay
    _ef_keys = ("initial_learning_rate", "decay_steps", "end_learning_rate", "power", "cycle", "name")

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False,
                 name="PolynomialDecay"):
        if decay_steps <= 0:
            raise ValueError(f"Argument `decay_steps` must be > 0. Received: decay_steps={decay_steps}")
        _t.PolynomialDecay.__init__(self, float(initial_learning_rate), float(decay_steps), float(end_learning_rate),
                                    float(power), bool(cycle))
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.end_learning_rate, self.power, self.cycle, self.name = end_learning_rate, power, cycle, name


class InverseTimeDecay(_Builtin, _t.InverseTimeDecay):
    """initial / (1 + decay_rate * step / decay_steps), the ratio floored when staircase."""

    _ef_cpp = _t.InverseTimeDecay
    _ef_keys = ("initial_learning_rate", "decay_steps", "decay_rate", "staircase", "name")

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False, name="InverseTimeDecay"):
        if decay_steps <= 0:
            raise ValueError(f"Argument `decay_steps` must be > 0. Received: decay_steps={decay_steps}")
        _t.InverseTimeDecay.__init__(self, float(initial_learning_rate), float(decay_steps), float(decay_rate),
                                     bool(staircase))
        self.initial_learning_rate, self.decay_steps, self.decay_rate = initial_learning_rate, decay_steps, decay_rate
        self.staircase, self.name = staircase, name


class CosineDecayRestarts(_Builtin, _t.CosineDecayRestarts):
    """SGDR (Loshchilov & Hutter): cosine decays restarting after first_decay_steps, each
    period t_mul times longer and its peak m_mul times lower."""

    _ef_cpp = _t.CosineDecayRestarts
    _ef_keys = ("initial_learning_rate", "first_decay_steps", "t_mul", "m_mul", "alpha", "name")

    def __init__(self, initial_learning_rate, first_decay_steps, t_mul=2.0, m_mul=1.0, alpha=0.0, name="SGDRDecay"):
        if first_decay_steps <= 0:
            raise ValueError(f"Argument `first_decay_steps` must be > 0. Received: first_decay_steps={first_decay_steps}")
        _t.CosineDecayRestarts.__init__(self, float(initial_learning_rate), float(first_decay_steps), float(t_mul),
                                        float(m_mul), float(alpha))
        self.initial_learning_rate, self.first_decay_steps = initial_learning_rate, first_decay_steps
        self._t_mul, self._m_mul, self.alpha, self.name = t_mul, m_mul, alpha, name


_CLASSES = {c.__name__: c for c in (ExponentialDecay, CosineDecay, PiecewiseConstantDecay, PolynomialDecay,
                                     InverseTimeDecay, CosineDecayRestarts)}


def serialize(learning_rate_schedule):
    """Keras' serialized form of a schedule."""
    if not hasattr(learning_rate_schedule, "get_config"):
        raise TypeError(f"serialize: expected a LearningRateSchedule, got {learning_rate_schedule!r}")
    cls = type(learning_rate_schedule)
    name = cls.__name__
    builtin = _CLASSES.get(name) is cls
    return {"module": "keras.optimizers.schedules" if builtin else cls.__module__, "class_name": name,
            "config": learning_rate_schedule.get_config(), "registered_name": None if builtin else name}


def deserialize(config, custom_objects=None):
    """A schedule from serialize()'s dict."""
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Could not interpret learning rate schedule config: {config!r}")
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or _CLASSES.get(name)
    if cls is None:
        raise ValueError(f"Unknown learning rate schedule: '{name}'. Pass it in `custom_objects`.")
    return cls.from_config(config.get("config", {}))


__all__ = ["LearningRateSchedule", "ExponentialDecay", "CosineDecay", "PiecewiseConstantDecay", "PolynomialDecay",
           "InverseTimeDecay", "CosineDecayRestarts", "serialize", "deserialize"]
