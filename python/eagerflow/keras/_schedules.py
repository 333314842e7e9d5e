"""keras.optimizers.schedules: learning rates as functions of the optimizer's step.

ExponentialDecay and CosineDecay (without warmup) are the C++ schedules (ef::optim), which
saved models can rebuild. The others, and any user subclass of LearningRateSchedule, are
computed in Python with ef ops: an optimizer calls them with the step (a float32 scalar) at
trace time, so a traced train step follows them without retracing."""
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

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name="CosineDecay", warmup_target=None,
                 warmup_steps=0):
        if decay_steps <= 0:
            raise ValueError(f"Argument `decay_steps` must be > 0. Received: decay_steps={decay_steps}")
        super().__init__(float(initial_learning_rate), float(decay_steps), float(alpha))
        self._config = {"initial_learning_rate": initial_learning_rate, "decay_steps": decay_steps, "alpha": alpha,
                        "name": name, "warmup_target": warmup_target, "warmup_steps": warmup_steps}
        self.name = name
        self.warmup_target = warmup_target
        self.warmup_steps = warmup_steps
        # With a warmup the rate is this class's __call__, not the C++ decay alone.
        self._ef_schedule_takes_step = warmup_target is not None

    def _decay(self, step, decay_from):
        ef = _ops()
        fraction = step / float(self.decay_steps)
        cosine = 0.5 * (1.0 + ef.cos(_math.pi * fraction))
        return decay_from * ((1.0 - self.alpha) * cosine + self.alpha)

    def __call__(self, step):
        ef = _ops()
        step = _step(step)
        if self.warmup_target is None:
            return _t.CosineDecay.__call__(self, step)
        warmup_steps = float(self.warmup_steps)
        step = ef.minimum(step, float(self.decay_steps) + warmup_steps)
        initial, target = float(self.initial_learning_rate), float(self.warmup_target)
        warm = (target - initial) * (step / max(warmup_steps, 1e-30)) + initial
        return ef.where(step < warmup_steps, warm, self._decay(step - warmup_steps, target))

    def get_config(self):
        return dict(self._config)

    @classmethod
    def from_config(cls, config):
        return cls(**config)


LearningRateSchedule.register(ExponentialDecay)
LearningRateSchedule.register(CosineDecay)
LearningRateSchedule.register(_t.LearningRateSchedule)


class PiecewiseConstantDecay(LearningRateSchedule):
    """values[0] while step <= boundaries[0], values[i] while boundaries[i-1] < step <=
    boundaries[i], values[-1] after the last boundary."""

    def __init__(self, boundaries, values, name="PiecewiseConstant"):
        if len(boundaries) != len(values) - 1:
            raise ValueError("The length of boundaries should be 1 less than the length of values. Received: "
                             f"boundaries={boundaries} of length {len(boundaries)}, and values={values} of length "
                             f"{len(values)}.")
        self.boundaries, self.values, self.name = list(boundaries), list(values), name

    def __call__(self, step):
        ef = _ops()
        step = _step(step)
        out = ef.constant(float(self.values[-1]))
        for boundary, value in reversed(list(zip(self.boundaries, self.values[:-1]))):
            out = ef.where(step <= float(boundary), float(value), out)
        return out

    def get_config(self):
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class PolynomialDecay(LearningRateSchedule):
    """(initial - end) * (1 - step / decay_steps)^power + end; with cycle, decay_steps grows to
    the next multiple of itself past the step."""

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False,
                 name="PolynomialDecay"):
        if decay_steps <= 0:
            raise ValueError(f"Argument `decay_steps` must be > 0. Received: decay_steps={decay_steps}")
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.end_learning_rate, self.power, self.cycle, self.name = end_learning_rate, power, cycle, name

    def __call__(self, step):
        ef = _ops()
        step = _step(step)
        decay_steps = ef.constant(float(self.decay_steps))
        if self.cycle:
            multiplier = ef.where(ef.equal(step, 0.0), 1.0, ef.math.ceil(step / decay_steps))
            decay_steps = decay_steps * multiplier
        else:
            step = ef.minimum(step, decay_steps)
        p = step / decay_steps
        span = float(self.initial_learning_rate) - float(self.end_learning_rate)
        return span * ef.pow(1.0 - p, float(self.power)) + float(self.end_learning_rate)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "end_learning_rate": self.end_learning_rate, "power": self.power, "cycle": self.cycle,
                "name": self.name}


class InverseTimeDecay(LearningRateSchedule):
    """initial / (1 + decay_rate * step / decay_steps), the ratio floored when staircase."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False, name="InverseTimeDecay"):
        if decay_steps <= 0:
            raise ValueError(f"Argument `decay_steps` must be > 0. Received: decay_steps={decay_steps}")
        self.initial_learning_rate, self.decay_steps, self.decay_rate = initial_learning_rate, decay_steps, decay_rate
        self.staircase, self.name = staircase, name

    def __call__(self, step):
        ef = _ops()
        p = _step(step) / float(self.decay_steps)
        if self.staircase:
            p = ef.math.floor(p)
        return float(self.initial_learning_rate) / (1.0 + float(self.decay_rate) * p)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "decay_rate": self.decay_rate, "staircase": self.staircase, "name": self.name}


class CosineDecayRestarts(LearningRateSchedule):
    """SGDR (Loshchilov & Hutter): cosine decays restarting after first_decay_steps, each
    period t_mul times longer and its peak m_mul times lower."""

    def __init__(self, initial_learning_rate, first_decay_steps, t_mul=2.0, m_mul=1.0, alpha=0.0, name="SGDRDecay"):
        if first_decay_steps <= 0:
            raise ValueError(f"Argument `first_decay_steps` must be > 0. Received: first_decay_steps={first_decay_steps}")
        self.initial_learning_rate, self.first_decay_steps = initial_learning_rate, first_decay_steps
        self._t_mul, self._m_mul, self.alpha, self.name = t_mul, m_mul, alpha, name

    def __call__(self, step):
        ef = _ops()
        fraction = _step(step) / float(self.first_decay_steps)
        t_mul, m_mul = float(self._t_mul), float(self._m_mul)
        if t_mul == 1.0:
            i_restart = ef.math.floor(fraction)
            fraction = fraction - i_restart
        else:
            i_restart = ef.math.floor(ef.math.log(1.0 - fraction * (1.0 - t_mul)) / _math.log(t_mul))
            sum_r = (1.0 - ef.pow(ef.constant(t_mul), i_restart)) / (1.0 - t_mul)
            fraction = (fraction - sum_r) / ef.pow(ef.constant(t_mul), i_restart)
        m_fac = ef.pow(ef.constant(m_mul), i_restart)
        cosine = 0.5 * m_fac * (1.0 + ef.cos(_math.pi * fraction))
        return float(self.initial_learning_rate) * ((1.0 - self.alpha) * cosine + self.alpha)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "first_decay_steps": self.first_decay_steps,
                "t_mul": self._t_mul, "m_mul": self._m_mul, "alpha": self.alpha, "name": self.name}


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
