"""Keras' Model and Sequential over the C++ ef::train::Model: compile, fit, evaluate, predict.

The loops run in C++ with the GIL released (the progress bar is the C++ one); layers, losses,
schedules and callbacks written in Python take the GIL back when the loop calls them.
"""
import inspect
import math
import sys

import numpy as _np

from . import _core
from ._layers import InputLayer, _PythonLayer

_t = _core._train


# ---------------------------------------------------------------- optimizers, losses, metrics
class _Optimizers:
    @staticmethod
    def by_name(name):
        table = {"adam": _t.Adam, "sgd": _t.SGD, "rmsprop": _t.RMSprop, "adamw": _t.AdamW}
        try:
            return table[name.lower()]()
        except KeyError:
            raise ValueError(f"unknown optimizer '{name}' (known: {', '.join(sorted(table))})") from None


def get_optimizer(identifier):
    if isinstance(identifier, _t.Optimizer):
        return identifier
    if isinstance(identifier, str):
        return _Optimizers.by_name(identifier)
    raise TypeError(f"an optimizer must be an ef.keras.optimizers object or a name, got {identifier!r}")


def get_loss(identifier):
    if identifier is None:
        raise ValueError("compile needs a loss (an ef.keras.losses object, a name or a function)")
    if isinstance(identifier, _t.Loss):
        return identifier
    if isinstance(identifier, str):
        return _t.loss_by_name(identifier)
    if callable(identifier):
        return _t.Loss(identifier, getattr(identifier, "__name__", "custom_loss"))
    raise TypeError(f"a loss must be an ef.keras.losses object, a name or a function, got {identifier!r}")


def _metric_list(metrics):
    if metrics is None:
        return []
    if isinstance(metrics, (str, _t.Metric)):
        metrics = [metrics]
    out = []
    for m in metrics:
        if not isinstance(m, (str, _t.Metric)):
            raise TypeError(f"a metric must be a name or an ef.keras.metrics object, got {m!r}")
        out.append(m)
    return out


# ---------------------------------------------------------------- data
def _as_input(a, what, labels=False):
    """A tensor argument: ef tensors as they are; NumPy arrays and lists as arrays, floats in
    float32 (Keras' floatx) and boolean labels as floats. Arrays are shared, not copied."""
    if a is None or isinstance(a, (_core.Tensor, _core.Variable)):
        return a
    if isinstance(a, dict):
        raise TypeError(f"{what}: a single array is expected (models with several inputs are not supported)")
    try:
        arr = _np.asarray(a)
    except ValueError:
        arr = _np.asarray(a, dtype=object)
    if arr.dtype == object:
        raise TypeError(f"{what}: a single array is expected (models with several inputs are not supported)")
    if arr.dtype.kind == "f" and arr.dtype != _np.float32:
        arr = arr.astype(_np.float32)
    elif labels and arr.dtype.kind == "b":
        arr = arr.astype(_np.float32)
    elif arr.dtype.kind not in "fiub":
        raise TypeError(f"{what}: cannot train on an array of dtype {arr.dtype}")
    return arr


def _num_examples(a):
    if isinstance(a, (_core.Tensor, _core.Variable)):
        shape = a.shape
        return shape[0] if len(shape) else None
    return len(a) if getattr(a, "ndim", 1) else None


def _verbose(v):
    return 1 if v == "auto" else int(v)


# ---------------------------------------------------------------- History
class History:
    """What fit returns (Keras' History): .history maps "loss", "val_loss", metric names to one
    value per epoch; .epoch lists the epochs run (from 0); .params and .model as in Keras."""

    def __init__(self, history=None, epoch=None, params=None, model=None):
        self.history = history if history is not None else {}
        self.epoch = epoch if epoch is not None else []
        self.params = params if params is not None else {}
        self.model = model

    def __repr__(self):
        return f"<History epochs={len(self.epoch)} keys={sorted(self.history)}>"


# ---------------------------------------------------------------- the Keras training API
class _Training:
    """compile/fit/evaluate/predict and friends, shared by Model and Sequential."""

    def compile(self, optimizer="rmsprop", loss=None, metrics=None, run_eagerly=False, jit_compile=None, **kwargs):
        unsupported = sorted(k for k, v in kwargs.items() if v is not None)
        if unsupported:
            raise TypeError(f"compile: not supported: {', '.join(unsupported)}")
        metrics = _metric_list(metrics)
        self._compile(get_optimizer(optimizer), get_loss(loss), metrics, bool(run_eagerly))
        self._ef_metric_names = [m if isinstance(m, str) else m.name for m in metrics]

    @property
    def metrics_names(self):
        return ["loss"] + list(getattr(self, "_ef_metric_names", []))

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None, validation_split=0.0,
            validation_data=None, shuffle=True, initial_epoch=0, **kwargs):
        unsupported = sorted(k for k, v in kwargs.items() if v is not None)
        if unsupported:
            raise TypeError(f"fit: not supported: {', '.join(unsupported)}")
        batch_size = 32 if batch_size is None else int(batch_size)
        verbose = _verbose(verbose)
        x = _as_input(x, "x")
        y = _as_input(y, "y", labels=True)
        if validation_data is not None:
            if not isinstance(validation_data, (tuple, list)) or len(validation_data) != 2:
                raise ValueError("validation_data must be a pair (x_val, y_val) (sample weights are not supported)")
            validation_data = (_as_input(validation_data[0], "validation x"),
                               _as_input(validation_data[1], "validation y", labels=True))
        callbacks = list(callbacks or [])
        n = _num_examples(x) if x is not None else None
        n_train = n if n is None or validation_data is not None else n - int(math.floor(n * validation_split))
        params = {"verbose": verbose, "epochs": epochs,
                  "steps": None if not n_train else math.ceil(n_train / max(1, min(batch_size, n_train)))}
        for cb in callbacks:
            if not isinstance(cb, _t.Callback):
                raise TypeError(f"callbacks must be ef.keras.callbacks.Callback objects, got {cb!r}")
            if not _t._inst_ready(cb):  # a subclass whose __init__ skipped super().__init__()
                _t.Callback.__init__(cb)
            if hasattr(cb, "set_model"):
                cb.set_model(self)
                cb.set_params(params)
        sys.stdout.flush()
        history, epochs_run = self._fit(x, y, batch_size, int(epochs), int(initial_epoch), float(validation_split),
                                        validation_data, bool(shuffle), callbacks, verbose)
        self.history = History(history, epochs_run, params, self)
        return self.history

    def _results(self, logs, return_dict):
        names = self.metrics_names
        if return_dict:
            return {k: logs[k] for k in names if k in logs}
        values = [logs[k] for k in names]
        return values[0] if len(values) == 1 else values

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", return_dict=False, **kwargs):
        """The loss (a float) when compiled without metrics, else [loss, metric, ...] in
        metrics_names order, or a dict with return_dict=True, as Keras."""
        unsupported = sorted(k for k, v in kwargs.items() if v is not None)
        if unsupported:
            raise TypeError(f"evaluate: not supported: {', '.join(unsupported)}")
        sys.stdout.flush()
        logs = self._evaluate(_as_input(x, "x"), _as_input(y, "y", labels=True),
                              32 if batch_size is None else int(batch_size), _verbose(verbose))
        return self._results(logs, return_dict)

    def predict(self, x, batch_size=None, verbose="auto", **kwargs):
        """The outputs over x in batches (inference mode), as a NumPy array."""
        out = self._predict(_as_input(x, "x"), 32 if batch_size is None else int(batch_size))
        return out.numpy()

    def predict_on_batch(self, x):
        return self.predict(x, batch_size=max(1, _num_examples(_as_input(x, "x")) or 1))

    def train_on_batch(self, x, y=None, return_dict=False, **kwargs):
        logs = self._train_on_batch(_as_input(x, "x"), _as_input(y, "y", labels=True))
        return self._results(logs, return_dict)

    def test_on_batch(self, x, y=None, return_dict=False):
        x = _as_input(x, "x")
        logs = self._evaluate(x, _as_input(y, "y", labels=True), max(1, _num_examples(x) or 1), 0)
        return self._results(logs, return_dict)

    def build(self, input_shape):
        """Builds the model by calling it once on zeros of input_shape (None dims as 1)."""
        if getattr(self, "_ef_in_build", False) or self.built:
            return
        dims = [1 if d is None else int(d) for d in input_shape]
        self(_core.zeros(dims))

    def _ef_build(self, shape):
        # The C++ call builds a model on its first call: run a build() the user wrote, not ours.
        if type(self).build is _Training.build:
            return
        self._ef_in_build = True
        try:
            super()._ef_build(shape)
        finally:
            self._ef_in_build = False

    def count_params(self):
        return sum(int(_np.prod(v.shape)) for v in self.weights)

    def get_weights(self):
        return [_np.array(v.numpy()) for v in self.weights]

    def set_weights(self, weights):
        variables = self.weights
        if len(weights) != len(variables):
            raise ValueError(f"set_weights: the model has {len(variables)} weights, got {len(weights)} arrays")
        for v, w in zip(variables, weights):
            v.assign(_np.asarray(w, dtype=v.numpy().dtype))

    def save(self, filepath, **kwargs):
        """Saves the model for inference as a saved model (ef.saved_model.save)."""
        from . import saved_model
        saved_model.save(self, filepath, **kwargs)

    def summary(self, print_fn=None, **kwargs):
        """Keras' table: layer (type), output shape, parameter count; totals."""
        self._ef_build_from_input()
        print_fn = print_fn or print
        rule, double = "_" * 65, "=" * 65

        def shape_text(shape):
            if shape is None:
                return "(unbuilt)"
            dims = ["None"] + ["None" if d is None else str(d) for d in shape[1:]]
            return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"

        def with_commas(n):
            return f"{n:,}"

        lines = [f'Model: "{self.name}"', rule, f"{' Layer (type)':<29}{'Output Shape':<26}Param #", double]
        for layer in self.layers:
            kind = layer._type_name() if type(layer).__module__.startswith("eagerflow._core") else type(layer).__name__
            count = sum(int(_np.prod(v.shape)) for v in layer.weights)
            lines.append(f"{' ' + layer.name + ' (' + kind + ')':<29}{shape_text(layer._output_shape):<26}"
                         f"{with_commas(count)}")
        trainable = sum(int(_np.prod(v.shape)) for v in self.trainable_weights)
        frozen = sum(int(_np.prod(v.shape)) for v in self.non_trainable_weights)
        lines += [double, f"Total params: {with_commas(trainable + frozen)}",
                  f"Trainable params: {with_commas(trainable)}", f"Non-trainable params: {with_commas(frozen)}", rule]
        print_fn("\n".join(lines))

    def _ef_build_from_input(self):
        shape = getattr(self, "_ef_input_shape", None)
        if shape is not None and not self.built and self.layers:
            self.build(shape)


class Model(_Training, _PythonLayer, _t.Model):
    """Keras' Model, subclassed in Python: define call(inputs[, training]) and assign layers as
    attributes in __init__; then compile/fit/evaluate/predict as Keras.
    (The functional API, Model(inputs, outputs), is not supported.)"""

    def __init__(self, *args, name=None, trainable=True, **kwargs):
        if args or "inputs" in kwargs or "outputs" in kwargs:
            raise NotImplementedError(
                "ef.keras.Model(inputs, outputs) (the functional API) is not supported: subclass Model and define "
                "call(), or use ef.keras.Sequential")
        _PythonLayer.__init__(self, name=name, trainable=trainable, **kwargs)


class Sequential(_Training, _t.Sequential):
    """A stack of layers, each fed the previous one's output (the C++ ef::train::Sequential)."""

    def __init__(self, layers=None, name=None, trainable=True):
        super().__init__(name or "")
        self._ef_input_shape = None
        if not trainable:
            self.trainable = False
        for layer in layers or []:
            self.add(layer)

    def add(self, layer):
        if isinstance(layer, InputLayer):
            if self._ef_input_shape is not None or self.layers:
                raise ValueError("Sequential: an Input can only come first")
            self._ef_input_shape = layer.shape
            return
        if not isinstance(layer, _core.Layer):
            raise TypeError(f"Sequential.add expects a layer, got {layer!r}")
        self._add(layer)

    @property
    def layers(self):
        return self._stack

    def __repr__(self):
        return f"<Sequential name={self.name}, {len(self.layers)} layers>"


def _positional_count(fn):
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return 2
    return sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
