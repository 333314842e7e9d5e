"""ef.keras.optimizers: Keras 3's optimizers over the C++ ones (ef::optim): SGD, Adam, AdamW,
RMSprop, Adagrad, Adadelta, Adamax, Nadam, Ftrl, Lion, Lamb, Adafactor, Muon, ScheduleFreeAdamW
and LossScaleOptimizer.

Each takes Keras' arguments with Keras' defaults. learning_rate is a number, a schedule
(ef.keras.optimizers.schedules, or a Python LearningRateSchedule subclass) or a callable of no
arguments. clipnorm, global_clipnorm and clipvalue act as Keras'; so does weight_decay (Keras'
decoupled decay, var -= var * weight_decay * lr before the step). Options eagerflow does not
have (gradient_accumulation_steps, loss_scale_factor) are refused with a clear error when set,
never ignored; use_ema keeps Keras' moving averages (callbacks.SwapEMAWeights swaps them in).

Keras 3's custom-loop API: optimizer.apply(grads, trainable_variables) beside
apply_gradients(zip(grads, variables)); optimizer.build(variables) makes the step counter and
the slots, and names the variables apply(grads) updates when it is given none."""
import types as _types

from .. import _core

_t = _core._train

Optimizer = _t.Optimizer

# Keras' base-optimizer keyword arguments and their defaults.
_BASE_DEFAULTS = {
    "weight_decay": None,
    "clipnorm": None,
    "global_clipnorm": None,
    "clipvalue": None,
    "use_ema": False,
    "ema_momentum": 0.99,
    "ema_overwrite_frequency": None,
    "loss_scale_factor": None,
    "gradient_accumulation_steps": None,
}
_UNSUPPORTED = ("loss_scale_factor", "gradient_accumulation_steps")


def _split_base_kwargs(cls_name, kwargs):
    """Keras' base arguments from kwargs: the clip options eagerflow passes on, weight_decay
    (applied by the Python step wrapper), and errors for the ones it does not have."""
    base = {}
    for key in list(kwargs):
        if key in _BASE_DEFAULTS:
            base[key] = kwargs.pop(key)
        elif key == "name":
            base["name"] = kwargs.pop(key)
    if kwargs:
        raise TypeError(f"{cls_name}.__init__() got an unexpected keyword argument '{next(iter(kwargs))}'")
    for key in _UNSUPPORTED:
        if key in base and base[key] not in (None, False):
            raise NotImplementedError(f"{cls_name}: `{key}` is not supported by eagerflow's optimizers")
    return base


def _keras_class(cpp_cls, hyper_defaults, default_lr=0.001):
    """A Keras-named Python class over a C++ optimizer: Keras' full signature, its config."""
    names = ["learning_rate"] + list(hyper_defaults)

    def __init__(self, *args, **kwargs):
        if len(args) > len(names):
            raise TypeError(f"{cls.__name__}() takes at most {len(names)} positional arguments")
        values = dict(zip(names, args))
        for k in list(kwargs):
            if k in names:
                if k in values:
                    raise TypeError(f"{cls.__name__}() got multiple values for argument '{k}'")
                values[k] = kwargs.pop(k)
        if kwargs.pop("amsgrad", False) and cpp_cls in (_t.Adam, _t.AdamW):
            raise NotImplementedError(f"{cls.__name__}: amsgrad=True is not supported by eagerflow's optimizers")
        base = _split_base_kwargs(cls.__name__, kwargs)
        lr = values.pop("learning_rate", default_lr)
        hyper = {k: values.get(k, d) for k, d in hyper_defaults.items()}
        extra = {"use_ema": bool(base.get("use_ema", False)), "ema_momentum": float(base.get("ema_momentum", 0.99)),
                 "ema_overwrite_frequency": base.get("ema_overwrite_frequency")}
        if cpp_cls in (_t.AdamW, _t.Muon):
            if base.get("weight_decay") is not None:
                hyper["weight_decay"] = base["weight_decay"]
        elif base.get("weight_decay") is not None:
            extra["_weight_decay"] = float(base["weight_decay"])
        cpp_cls.__init__(self, lr, **hyper, clipnorm=base.get("clipnorm"),
                         global_clipnorm=base.get("global_clipnorm"), clipvalue=base.get("clipvalue"), **extra)
        self._ef_name = base.get("name")

    cls = type(cpp_cls.__name__, (cpp_cls,), {"__init__": __init__, "__module__": __name__,
                                              "__doc__": cpp_cls.__doc__})
    return cls


SGD = _keras_class(_t.SGD, {"momentum": 0.0, "nesterov": False}, default_lr=0.01)
Adam = _keras_class(_t.Adam, {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7})
AdamW = _keras_class(_t.AdamW, {"weight_decay": 0.004, "beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7})
RMSprop = _keras_class(_t.RMSprop, {"rho": 0.9, "momentum": 0.0, "epsilon": 1e-7})
Adagrad = _keras_class(_t.Adagrad, {"initial_accumulator_value": 0.1, "epsilon": 1e-7})
Adadelta = _keras_class(_t.Adadelta, {"rho": 0.95, "epsilon": 1e-7})
Adamax = _keras_class(_t.Adamax, {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7})
Nadam = _keras_class(_t.Nadam, {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7})
Ftrl = _keras_class(_t.Ftrl, {"learning_rate_power": -0.5, "initial_accumulator_value": 0.1,
                              "l1_regularization_strength": 0.0, "l2_regularization_strength": 0.0,
                              "l2_shrinkage_regularization_strength": 0.0, "beta": 0.0})
Lion = _keras_class(_t.Lion, {"beta_1": 0.9, "beta_2": 0.99})
Lamb = _keras_class(_t.Lamb, {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-7})
Adafactor = _keras_class(_t.Adafactor, {"beta_2_decay": -0.8, "epsilon_1": 1e-30, "epsilon_2": 1e-3,
                                        "clip_threshold": 1.0, "relative_step": True})
ScheduleFreeAdamW = _keras_class(_t.ScheduleFreeAdamW, {"beta_1": 0.9, "beta_2": 0.999, "epsilon": 1e-8,
                                                        "warmup_steps": 0}, default_lr=0.0025)
_Muon = _keras_class(_t.Muon, {"adam_beta_1": 0.9, "adam_beta_2": 0.999, "adam_weight_decay": 0.004, "epsilon": 1e-7,
                               "exclude_embeddings": True, "muon_a": 3.4445, "muon_b": -4.7750, "muon_c": 2.0315,
                               "adam_lr_ratio": 1.0, "momentum": 0.95, "ns_steps": 5, "nesterov": True,
                               "rms_rate": 0.2})


class Muon(_Muon):
    """Keras' Muon: Newton-Schulz-orthogonalized momentum for 2-D weights, AdamW for the others
    (and for weights whose name holds "embedding"). weight_decay (default 0.004) is Muon's,
    adam_weight_decay the AdamW part's."""

    def __init__(self, *args, weight_decay=0.004, exclude_layers=None, **kwargs):
        if exclude_layers:
            raise NotImplementedError("Muon: exclude_layers is not supported by eagerflow's Muon (weights of rank 2 "
                                      "use Muon, embeddings and other ranks AdamW)")
        super().__init__(*args, weight_decay=weight_decay, **kwargs)

    def get_config(self):
        config = _get_config(self)
        if config.get("rms_rate") == -1.0:
            config["rms_rate"] = None
        config["exclude_layers"] = []
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        config.pop("exclude_layers", None)
        return _from_config.__func__(cls, config)


class LossScaleOptimizer(_t.LossScaleOptimizer):
    """Keras 3's dynamic loss scaling around `inner_optimizer`: scale_loss(loss) multiplies by
    the scale; apply/apply_gradients unscale, skip the step and halve the scale on Inf/NaN
    gradients, and double it after `dynamic_growth_steps` finite steps. compile + fit use it
    as Keras' do (the loss is scaled before the gradient)."""

    def __init__(self, inner_optimizer, initial_scale=2.0 ** 15, dynamic_growth_steps=2000, name=None, **kwargs):
        if not kwargs.pop("dynamic", True):
            raise ValueError("LossScaleOptimizer no longer supports `dynamic=False`. Instead, simply set "
                             "`loss_scale_factor` directly on the `inner_optimizer`.")
        for key, default in _BASE_DEFAULTS.items():
            if key in kwargs:
                value = kwargs.pop(key)
                if value != default:
                    raise ValueError(f"LossScaleOptimizer does not support `{key}`. Instead, set `{key}` on the "
                                     "`inner_optimizer`.")
        if kwargs:
            raise ValueError(f"LossScaleOptimizer does not support arguments: `{'`, `'.join(kwargs)}`.")
        if isinstance(inner_optimizer, str):
            inner_optimizer = get(inner_optimizer)
        if not isinstance(inner_optimizer, Optimizer):
            raise TypeError(f"LossScaleOptimizer: inner_optimizer must be an optimizer, got {inner_optimizer!r}")
        super().__init__(inner_optimizer, float(initial_scale), int(dynamic_growth_steps))
        self._ef_name = name

    def get_config(self):
        return {"name": self.name, "inner_optimizer": serialize(self.inner_optimizer),
                "initial_scale": self.initial_scale, "dynamic_growth_steps": self.dynamic_growth_steps}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        config["inner_optimizer"] = deserialize(config["inner_optimizer"], custom_objects=custom_objects)
        return cls(**config)


# ---------------------------------------------------------------- the Keras API on every optimizer
def _apply(self, grads, trainable_variables=None):
    """Keras 3's apply: one step of grads over trainable_variables (in the same order), or over
    the variables given to build(); a None gradient skips its variable."""
    grads = list(grads)
    if trainable_variables is None:
        trainable_variables = _built_variables.get(id(self), (None, None))[1]
        if trainable_variables is None:
            raise ValueError("When passing `grads` without `variables`, the optimizer must already be built on a "
                             "list of variables. Call `optimizer.build(trainable_variables)` first.")
    trainable_variables = list(trainable_variables)
    if len(grads) != len(trainable_variables):
        raise ValueError(f"Argument `grads` and `trainable_variables` must have the same length: got {len(grads)} "
                         f"gradients and {len(trainable_variables)} variables")
    self.apply_gradients(zip(grads, trainable_variables))


# build()'s variables by optimizer. The C++ optimizers take no weak references: the entry holds
# the optimizer itself, so that its id is not reused by another.
_built_variables = {}


def _build(self, variables):
    """Keras 3's build(variables): makes the step counter and the slots now, and names the
    variables that apply(grads) updates."""
    variables = list(variables)
    self._build(variables)
    _built_variables[id(self)] = (self, variables)


def _built(self):
    return id(self) in _built_variables


def _class_name(self):
    return self._keras_class_name() or type(self).__name__


def _learning_rate_config(self):
    lr = self._learning_rate_setting()
    if isinstance(lr, float):
        return lr
    return schedules.serialize(lr)


def _get_config(self):
    """Keras' optimizer config: name, learning_rate (a number or a serialized schedule), the
    base arguments and the class's own."""
    clipnorm, global_clipnorm, clipvalue, weight_decay, use_ema, ema_momentum, ema_frequency = self._clip_options()
    config = {"name": self.name,
              "learning_rate": _learning_rate_config(self),
              "weight_decay": weight_decay, "clipnorm": clipnorm,
              "global_clipnorm": global_clipnorm, "clipvalue": clipvalue, "use_ema": use_ema,
              "ema_momentum": ema_momentum, "ema_overwrite_frequency": ema_frequency, "loss_scale_factor": None,
              "gradient_accumulation_steps": None}
    flags = {"nesterov", "relative_step", "exclude_embeddings"}
    counts = {"ns_steps", "warmup_steps", "dynamic_growth_steps"}
    for key, value in self._hyperparameters():
        config[key] = bool(value) if key in flags else int(value) if key in counts else value
    if _class_name(self) in ("Adam", "AdamW"):
        config["amsgrad"] = False
    return config


def _snake_case(name):
    import re
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def _name(self):
    """Keras' name: the one given, or the class name in snake case ("adam", "rm_sprop")."""
    return getattr(self, "_ef_name", None) or _snake_case(_class_name(self))


@classmethod
def _from_config(cls, config, custom_objects=None):
    config = dict(config)
    lr = config.get("learning_rate")
    if isinstance(lr, dict):
        config["learning_rate"] = schedules.deserialize(lr, custom_objects=custom_objects)
    for key in ("loss_scale_factor", "gradient_accumulation_steps"):
        if config.get(key) == _BASE_DEFAULTS[key]:
            config.pop(key, None)
    return cls(**config)


def _apply_gradients(self, grads_and_vars):
    """Keras' apply_gradients(zip(grads, variables)); a None gradient skips its variable. The
    constrained weights of Python layers are projected after the step, as Keras' optimizers do."""
    pairs = list(grads_and_vars)
    Optimizer._ef_apply_gradients(self, pairs)
    from .._layer_add_weight import project
    project([v for _, v in pairs])


# On the C++ base, so that optimizers made by name in compile have them too.
Optimizer._ef_apply_gradients = Optimizer.apply_gradients
Optimizer.apply_gradients = _apply_gradients
Optimizer.apply = _apply
Optimizer.build = _build
Optimizer.built = property(_built)
Optimizer.get_config = _get_config
Optimizer._ef_cpp_name = Optimizer.name  # the C++ name, which prefixes its variables' names
Optimizer.name = property(_name)
Optimizer.from_config = _from_config

_CLASSES = {c.__name__: c for c in (SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Adamax, Nadam, Ftrl, Lion, Lamb,
                                     Adafactor, Muon, ScheduleFreeAdamW, LossScaleOptimizer)}


def _use_ema(self):
    return self._clip_options()[4]


def _ema_averages(self, variables):
    """The EMA slot ("average") of each of `variables` (use_ema)."""
    out = []
    for v in variables:
        average = self._slots_of(v).get("average")
        if average is None:
            raise ValueError(f"no moving average for variable {v.name}: the optimizer has not stepped it yet")
        out.append(average)
    return out


Optimizer.use_ema = property(_use_ema)
Optimizer._ema_averages = _ema_averages


def serialize(optimizer):
    """Keras' serialized form: {"module", "class_name", "config", "registered_name"}."""
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"serialize: expected an optimizer, got {optimizer!r}")
    name = _class_name(optimizer)
    builtin = name in _CLASSES
    return {"module": "keras.optimizers" if builtin else type(optimizer).__module__, "class_name": name,
            "config": optimizer.get_config(), "registered_name": None if builtin else name}


def deserialize(config, custom_objects=None):
    """An optimizer from serialize()'s dict (or Keras' older {"class_name", "config"})."""
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Could not interpret optimizer config: {config!r}")
    name = config["class_name"]
    cls = (custom_objects or {}).get(name) or _CLASSES.get(name)
    if cls is None:
        from . import _serialization
        cls = _serialization.lookup_registered(config.get("registered_name") or name) \
            if hasattr(_serialization, "lookup_registered") else None
    if cls is None:
        raise ValueError(f"Could not interpret optimizer identifier: unknown optimizer class '{name}'")
    return cls.from_config(config.get("config", {}), custom_objects=custom_objects) \
        if cls is LossScaleOptimizer else cls.from_config(config.get("config", {}))


def get(identifier):
    """An optimizer from a name ("adam"), a serialized dict or an optimizer (returned as is)."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        known = {name.lower(): cls for name, cls in _CLASSES.items() if cls is not LossScaleOptimizer}
        if identifier.lower() in known:
            return known[identifier.lower()]()
        raise ValueError(f"Could not interpret optimizer identifier: {identifier} (unknown optimizer; known: "
                         f"{', '.join(sorted(known))})")
    raise ValueError(f"Could not interpret optimizer identifier: {identifier!r}")


from . import _schedules as schedules  # noqa: E402

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "Nadam", "Ftrl", "Lion",
           "Lamb", "Adafactor", "Muon", "ScheduleFreeAdamW", "LossScaleOptimizer", "get", "serialize", "deserialize", "schedules"]
