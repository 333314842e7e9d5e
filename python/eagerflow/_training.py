"""Keras' Model and Sequential over the C++ ef::train::Model: compile, fit, evaluate, predict.

The loops run in C++ with the GIL released (the progress bar is the C++ one); layers, losses,
schedules and callbacks written in Python take the GIL back when the loop calls them.
"""
import inspect
import math
import sys

import numpy as _np

from . import _core
from . import _distribute
from ._layers import InputLayer, _PythonLayer

_t = _core._train


# ---------------------------------------------------------------- optimizers, losses, metrics
class _Optimizers:
    @staticmethod
    def by_name(name):
        from .keras import optimizers  # Keras' classes, with Keras' names and configs
        return optimizers.get(name)


def get_optimizer(identifier):
    if isinstance(identifier, _t.Optimizer):
        return identifier
    if isinstance(identifier, str):
        return _Optimizers.by_name(identifier)
    raise TypeError(f"an optimizer must be an ef.keras.optimizers object or a name, got {identifier!r}")


def _no_loss(y_true, y_pred):
    raise ValueError("No loss to compute. Provide a `loss` argument in `compile()`.")


def get_loss(identifier):
    if identifier is None:
        # As Keras: compile without a loss is fine for a model whose train_step computes its own;
        # the default train step then fails on the first batch, with Keras' message.
        return _t.Loss(_no_loss, "loss")
    if isinstance(identifier, _t.Loss):
        wrapped = getattr(identifier, "_ef_compiled", None)
        if wrapped is not None:  # a Keras 3 catalogue loss (keras/_loss_catalogue.py): its reduction applies
            return wrapped()
        if hasattr(type(identifier), "call"):
            # A Loss subclass (Keras 3: call(y_true, y_pred) per example): the compiled loss holds
            # the object itself (its own C++ loss only refers to it weakly).
            return _t.Loss(identifier.call, identifier.name)
        return identifier
    if isinstance(identifier, str):
        from .keras._loss_catalogue import compiled_for_epsilon  # keras.config.set_epsilon
        return compiled_for_epsilon(identifier) or _t.loss_by_name(identifier)
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
        if callable(m) and not isinstance(m, (str, _t.Metric, type)):
            # Keras: a function (y_true, y_pred) -> values is the mean of its values, named as it is
            from .keras._metric_catalogue import MeanMetricWrapper
            m = MeanMetricWrapper(m, name=getattr(m, "__name__", "mean_metric_wrapper"))
        if isinstance(m, str):
            m = _keras_metric_by_name(m)
        if not isinstance(m, (str, _t.Metric)):
            raise TypeError(f"a metric must be a name or an ef.keras.metrics object, got {m!r}")
        out.append(m)
    return out


def _keras_metric_by_name(name):
    """A name the C++ metrics know stays a name (compile picks "accuracy"'s kind from the loss);
    Keras' other names of keras.metrics functions ("kl_divergence") and classes ("Precision")
    give the metric as Keras' compile makes it."""
    try:
        _t.metric_by_name(name)
        return name
    except Exception:
        from .keras import metrics
        if name in metrics._FUNCTIONS:
            from .keras._metric_catalogue import MeanMetricWrapper
            return MeanMetricWrapper(getattr(metrics, name), name=name)
        cls = getattr(metrics, name, None) if name[:1].isupper() else None
        if isinstance(cls, type) and issubclass(cls, _t.Metric):
            return cls(name=name)  # Keras logs it under the name given
        raise


def _metric_layout(metrics):
    """compile's metrics or weighted_metrics: a list, a list of lists or a dict by output name."""
    if isinstance(metrics, dict):
        return {str(k): _metric_list(v) for k, v in metrics.items()}
    if isinstance(metrics, (list, tuple)) and metrics and all(isinstance(m, (list, tuple)) for m in metrics):
        return [_metric_list(m) for m in metrics]
    return _metric_list(metrics)


# ---------------------------------------------------------------- data
def _as_input(a, what, labels=False):
    """A tensor argument: ef tensors as they are; NumPy arrays and lists as arrays, floats in
    float32 (Keras' floatx) and boolean labels as floats. The tensor made of it is a copy
    (python/src/convert.cpp): writing to the array during fit changes nothing."""
    if a is None or isinstance(a, (_core.Tensor, _core.Variable)):
        return a
    if isinstance(a, dict):
        raise TypeError(f"{what}: a single array is expected here")
    if hasattr(a, "to_numpy") and hasattr(a, "dtypes"):  # a pandas DataFrame or Series
        a = _pandas_array(a, what)
    try:
        arr = _np.asarray(a)
    except ValueError:
        arr = _np.asarray(a, dtype=object)
    if arr.dtype == object:
        raise TypeError(f"{what}: a single array is expected (for several inputs or outputs give a list of arrays "
                        "or a dict by name)")
    if arr.dtype.kind == "f" and arr.dtype != _np.float32:
        arr = arr.astype(_np.float32)
    elif labels and arr.dtype.kind == "b":
        arr = arr.astype(_np.float32)
    elif arr.dtype.kind in "US":  # text, for a model that starts with TextVectorization / StringLookup
        return _core.convert_to_tensor(arr)
    elif arr.dtype.kind not in "fiub":
        raise TypeError(f"{what}: cannot train on an array of dtype {arr.dtype}")
    return arr


def _pandas_array(frame, what):
    """A DataFrame's values as one array (columns of numbers promote to one dtype, as Keras'
    data adapter reads them); a column of strings or objects cannot be trained on."""
    kinds = [_np.dtype(d).kind if isinstance(d, _np.dtype) else "O"
             for d in (frame.dtypes if hasattr(frame.dtypes, "__iter__") else [frame.dtypes])]
    if any(k not in "fiub" for k in kinds):
        raise TypeError(f"{what}: a pandas column of non-numeric dtype cannot be trained on (encode it first, "
                        "e.g. with pandas.get_dummies or a StringLookup layer)")
    return frame.to_numpy()


def _is_keras_tensor(a):
    return isinstance(a, _core.Tensor) and a.is_keras_tensor


def _as_data(a, what, labels=False):
    """x, y or sample weights: one array, a list/tuple of arrays (several inputs or outputs, in
    the model's order) or a dict by input/output name."""
    if a is None:
        return None
    if isinstance(a, dict):
        return {str(k): _as_input(v, f"{what}[{k!r}]", labels) for k, v in a.items()}
    if isinstance(a, (list, tuple)) and a and all(hasattr(v, "to_numpy") and hasattr(v, "dtypes") for v in a):
        a = [_pandas_array(v, f"{what}[{i}]") for i, v in enumerate(a)]
    if isinstance(a, (list, tuple)) and a and all(
            isinstance(v, (_core.Tensor, _core.Variable, _np.ndarray)) for v in a):
        return [_as_input(v, f"{what}[{i}]", labels) for i, v in enumerate(a)]
    return _as_input(a, what, labels)


def _first(a):
    if isinstance(a, dict):
        return next(iter(a.values()), None)
    if isinstance(a, list):
        return a[0] if a else None
    return a


def _num_examples(a):
    a = _first(a)
    if isinstance(a, (_core.Tensor, _core.Variable)):
        shape = a.shape
        return shape[0] if len(shape) else None
    return len(a) if getattr(a, "ndim", 1) else None


def _verbose(v):
    return 1 if v == "auto" else int(v)


# ---------------------------------------------------------------- History
def _overrides_call(cls):
    """A subclassed Model: its class (below Model) defines call()."""
    return any("call" in c.__dict__ for c in cls.__mro__ if c not in (Model, Sequential, _Training) and
               issubclass(c, _Training))


class Callback(_t.Callback):
    """ef.keras.callbacks.Callback: override what you need: on_train_begin(logs),
    on_train_end(logs), on_epoch_begin(epoch, logs), on_epoch_end(epoch, logs),
    on_train_batch_begin(batch, logs), on_train_batch_end(batch, logs), and as Keras 3
    on_test_begin/end(logs), on_test_batch_begin/end(batch, logs) (evaluate, and fit's
    validation), on_predict_begin/end(logs), on_predict_batch_begin/end(batch, logs). They run on
    the loop's thread with the GIL held."""

    model = None
    params = {}

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params


class History(Callback):
    """Keras' History: .history maps "loss", "val_loss", metric names to one value per epoch;
    .epoch lists the epochs run (from 0); .params and .model as in Keras. fit returns one (the
    one in its callbacks when given, as Keras); as Keras, on_train_begin clears .epoch and keeps
    .history."""

    def __init__(self, history=None, epoch=None, params=None, model=None):
        super().__init__()
        self.history = history if history is not None else {}
        self.epoch = epoch if epoch is not None else []
        self.params = params if params is not None else {}
        self.model = model

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)
        if self.model is not None:
            self.model.history = self

    def __repr__(self):
        return f"<History epochs={len(self.epoch)} keys={sorted(self.history)}>"


def _callback_list(callbacks, model, params):
    """fit's, evaluate's and predict's callbacks as a list, each given the model and params
    (Keras' set_model / set_params); a CallbackList gives its callbacks."""
    if isinstance(callbacks, _t.Callback) and hasattr(callbacks, "callbacks"):
        callbacks = callbacks.callbacks
    callbacks = list(callbacks or [])
    for cb in callbacks:
        if not isinstance(cb, _t.Callback):
            raise TypeError(f"callbacks must be ef.keras.callbacks.Callback objects, got {cb!r}")
        if not _t._inst_ready(cb):  # a subclass whose __init__ skipped super().__init__()
            _t.Callback.__init__(cb)
        if hasattr(cb, "set_model"):
            cb.set_model(model)
            cb.set_params(params)
    return callbacks


def _with_constraints(model, callbacks):
    # add_weight(constraint=...) of Python layers: projected after each update, before the
    # user's callbacks see the batch (Keras' optimizer projects inside the step)
    from ._layer_add_weight import ConstraintCallback, weight_constraints
    pairs = weight_constraints(model)
    return [ConstraintCallback(pairs)] + callbacks if pairs else callbacks


def _history_in(callbacks):
    return next((cb for cb in callbacks if isinstance(cb, History)), None)


# ---------------------------------------------------------------- the Keras training API
class _Training:
    """compile/fit/evaluate/predict and friends, shared by Model and Sequential."""

    def compile(self, optimizer="rmsprop", loss=None, loss_weights=None, metrics=None, weighted_metrics=None,
                run_eagerly=False, jit_compile=None, **kwargs):
        """Keras' compile. loss: an object, a name or a function; with several outputs also a list
        (in output order) or a dict by output name. loss_weights likewise. metrics: a list (for
        every output), a list of lists (per output) or a dict by output name. weighted_metrics:
        laid out as metrics, updated with sample_weight/class_weight (metrics are not); one named
        like a metric reports as "weighted_<name>"."""
        unsupported = sorted(k for k, v in kwargs.items() if v is not None)
        if unsupported:
            raise TypeError(f"compile: not supported: {', '.join(unsupported)}")
        if isinstance(loss, dict):
            loss = {str(k): get_loss(v) for k, v in loss.items()}
        elif isinstance(loss, (list, tuple)):
            loss = [get_loss(v) for v in loss]
        else:
            loss = get_loss(loss)
        if loss_weights is not None and not isinstance(loss_weights, dict):
            loss_weights = [float(w) for w in (loss_weights if isinstance(loss_weights, (list, tuple)) else [loss_weights])]
        metrics = _metric_layout(metrics)
        weighted_metrics = _metric_layout(weighted_metrics)
        optimizer = get_optimizer(optimizer)
        policy = getattr(self, "dtype_policy", None)
        policy_name = getattr(policy, "name", None) or _core.global_policy().name
        if policy_name == "mixed_float16" and not isinstance(optimizer, _t.LossScaleOptimizer):
            # As Keras: float16 training scales its loss, so that small gradients survive.
            from .keras.optimizers import LossScaleOptimizer
            optimizer = LossScaleOptimizer(optimizer)
        self._compile(optimizer, loss, loss_weights, metrics, bool(run_eagerly), weighted_metrics)
        _distribute._keras_compile(self)  # under a tf.distribute strategy: data-parallel fit

    @property
    def distribute_strategy(self):
        """The tf.distribute strategy the model was created or compiled under (else the default)."""
        return _distribute._model_strategy(self)

    @property
    def metrics_names(self):
        return list(_t._metrics_names(self))

    @property
    def metrics(self):
        """Keras' model.metrics: the loss tracker and compiled metrics, then the metrics assigned
        as attributes (a custom train_step's trackers). fit resets each one when an epoch starts,
        evaluate (and validation) when it starts; a subclass may override this property."""
        out = list(self._compiled_metrics)
        seen = {id(m) for m in out}
        for value in list(getattr(self, "__dict__", {}).values()):
            if isinstance(value, _t.Metric) and id(value) not in seen:
                seen.add(id(value))
                out.append(value)
        return out

    def _ef_metrics(self):
        # What the C++ loop resets (python/src/training.cpp): the property, overridden or not.
        return list(self.metrics)

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None, validation_split=0.0,
            validation_data=None, shuffle=True, class_weight=None, sample_weight=None, initial_epoch=0, **kwargs):
        from .keras.config import _capped_epochs  # keras.config.set_max_epochs
        epochs = _capped_epochs(epochs)
        x = _distribute._fit_input(x)  # a distributed dataset: fit splits the global batches itself
        from .keras.utils._py_dataset import PyDataset, for_model  # Keras' PyDataset/Sequence, read as a Dataset
        if isinstance(x, PyDataset):
            x, class_weight = for_model(x, y, "fit", shuffle, class_weight), None
        validation_data = for_model(validation_data, None, "fit", as_arrays=not isinstance(x, _core._data.Dataset))
        if isinstance(x, _core._data.Dataset):  # ef.data.Dataset: its own batches (python/src/dataset.cpp)
            return self._fit_dataset(x, epochs, verbose, callbacks, validation_data, initial_epoch, **kwargs)
        batch_size = 32 if batch_size is None else int(batch_size)
        if kwargs.get("steps_per_epoch") is not None or kwargs.get("validation_steps") is not None:
            if class_weight is not None:
                raise TypeError("fit: class_weight with steps_per_epoch on arrays is not supported; give "
                                "sample_weight")
            from ._fit_steps import arrays_as_datasets
            x, validation_data = arrays_as_datasets(
                _as_data(x, "x"), _as_data(y, "y", labels=True), batch_size, float(validation_split), validation_data,
                bool(shuffle), _as_data(sample_weight, "sample_weight"), _num_examples(_as_data(x, "x")))
            return self._fit_dataset(x, epochs, verbose, callbacks, validation_data, initial_epoch, **kwargs)
        unsupported = sorted(k for k, v in kwargs.items() if v is not None)
        if unsupported:
            raise TypeError(f"fit: not supported: {', '.join(unsupported)}")
        verbose = _verbose(verbose)
        x = _as_data(x, "x")
        y = _as_data(y, "y", labels=True)
        sample_weight = _as_data(sample_weight, "sample_weight")
        if class_weight is not None:
            if not isinstance(class_weight, dict):
                raise TypeError("class_weight must be a dict {class index: weight}")
            class_weight = {int(k): float(v) for k, v in class_weight.items()}
        if validation_data is not None:
            if not isinstance(validation_data, (tuple, list)) or len(validation_data) not in (2, 3):
                raise ValueError("validation_data must be (x_val, y_val) or (x_val, y_val, sample_weight_val)")
            validation_data = tuple([_as_data(validation_data[0], "validation x"),
                                     _as_data(validation_data[1], "validation y", labels=True)] +
                                    ([_as_data(validation_data[2], "validation sample_weight")]
                                     if len(validation_data) == 3 else []))
        n = _num_examples(x) if x is not None else None
        n_train = n if n is None or validation_data is not None else n - int(math.floor(n * validation_split))
        params = {"verbose": verbose, "epochs": epochs,
                  "steps": None if not n_train else math.ceil(n_train / max(1, min(batch_size, n_train)))}
        callbacks = _with_constraints(self, _callback_list(callbacks, self, params))
        sys.stdout.flush()
        history, epochs_run = self._fit(x, y, batch_size, int(epochs), int(initial_epoch), float(validation_split),
                                        validation_data, bool(shuffle), callbacks, verbose, sample_weight, class_weight)
        return self._fit_history(callbacks, history, epochs_run, params)

    def _fit_history(self, callbacks, history, epochs_run, params):
        # As Keras: fit returns the History among its callbacks, else the one it added.
        given = _history_in(callbacks)
        self.history = given if given is not None else History(history, epochs_run, params, self)
        return self.history

    def _fit_dataset(self, ds, epochs, verbose, callbacks, validation_data, initial_epoch, steps_per_epoch=None,
                     validation_steps=None, **kwargs):
        unsupported = sorted(k for k, v in kwargs.items() if v is not None)
        if unsupported:
            raise TypeError(f"fit(dataset): not supported: {', '.join(unsupported)}")
        verbose = _verbose(verbose)
        n = ds.cardinality()
        params = {"verbose": verbose, "epochs": epochs,
                  "steps": int(steps_per_epoch) if steps_per_epoch else (n if n >= 0 else None)}
        callbacks = _with_constraints(self, _callback_list(callbacks, self, params))
        if validation_data is not None and not isinstance(validation_data, _core._data.Dataset):
            validation_data = tuple(validation_data)
        sys.stdout.flush()
        history, epochs_run = _core._data._fit(self, ds, int(epochs), int(initial_epoch),
                                               -1 if steps_per_epoch is None else int(steps_per_epoch), validation_data,
                                               -1 if validation_steps is None else int(validation_steps), callbacks, verbose)
        return self._fit_history(callbacks, history, epochs_run, params)

    def _results(self, logs, return_dict):
        names = [k for k in self.metrics_names if k in logs] + sorted(k for k in logs if k not in self.metrics_names)
        if return_dict:
            return {k: logs[k] for k in names}
        values = [logs[k] for k in names]
        return values[0] if len(values) == 1 else values

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None, return_dict=False,
                 callbacks=None, **kwargs):
        """The loss (a float) when compiled without metrics, else [loss, metric, ...] in
        metrics_names order, or a dict with return_dict=True, as Keras. callbacks get the
        on_test_* hooks."""
        steps = kwargs.pop("steps", None)
        unsupported = sorted(k for k, v in kwargs.items() if v is not None)
        if unsupported:
            raise TypeError(f"evaluate: not supported: {', '.join(unsupported)}")
        from .keras.utils._py_dataset import for_model
        x = for_model(x, y, "evaluate")
        verbose = _verbose(verbose)
        callbacks = _callback_list(callbacks, self, {"verbose": verbose, "epochs": 1, "steps": steps})
        sys.stdout.flush()
        if isinstance(x, _core._data.Dataset):
            logs = _core._data._evaluate(self, x, verbose, -1 if steps is None else int(steps), callbacks)
            return self._results(logs, return_dict)
        logs = self._evaluate(_as_data(x, "x"), _as_data(y, "y", labels=True),
                              32 if batch_size is None else int(batch_size), verbose,
                              _as_data(sample_weight, "sample_weight"), callbacks)
        return self._results(logs, return_dict)

    def _structured(self, outs):
        """Outputs as the model was built: a dict for dict outputs, a list for several."""
        names = getattr(self, "_ef_output_dict", None)
        if names is not None:
            return dict(zip(names, outs))
        if len(outs) == 1 and not getattr(self, "_ef_output_list", False):
            return outs[0]
        if not self._is_functional and self._ef_output_kind == "tuple":
            return tuple(outs)  # a subclassed model whose call() returns a tuple
        return list(outs)

    def predict(self, x, batch_size=None, verbose="auto", callbacks=None, **kwargs):
        """The outputs over x in batches (inference mode, through a traced predict step), as
        NumPy arrays: one array, or a list / dict for a model with several outputs. callbacks
        get the on_predict_* hooks (arrays); verbose 1 or 2 prints a progress bar ("auto" prints
        none)."""
        from .keras.utils._py_dataset import for_model
        x = for_model(x, None, "predict")
        if isinstance(x, _core._data.Dataset):
            if callbacks:
                raise TypeError("predict(dataset): callbacks are not supported; give arrays")
            steps = kwargs.get("steps")
            outs = _core._data._predict(self, x, -1 if steps is None else int(steps))
            return self._structured([o.numpy() for o in outs])
        verbose = 0 if verbose == "auto" else int(verbose)
        callbacks = _callback_list(callbacks, self, {"verbose": verbose, "epochs": 1, "steps": None})
        sys.stdout.flush()
        outs = self._predict(_as_data(x, "x"), 32 if batch_size is None else int(batch_size), verbose, callbacks)
        return self._structured([o.numpy() for o in outs])

    def predict_on_batch(self, x):
        return self.predict(x, batch_size=max(1, _num_examples(_as_data(x, "x")) or 1))

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None, return_dict=False):
        if class_weight is not None:
            raise TypeError("train_on_batch: give sample_weight (class_weight is for fit)")
        logs = self._train_on_batch(_as_data(x, "x"), _as_data(y, "y", labels=True),
                                    _as_data(sample_weight, "sample_weight"))
        from ._layer_add_weight import apply_weight_constraints, weight_constraints
        apply_weight_constraints(weight_constraints(self))
        return self._results(logs, return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        logs = self._train_on_batch(_as_data(x, "x"), _as_data(y, "y", labels=True),
                                    _as_data(sample_weight, "sample_weight"), test=True)
        return self._results(logs, return_dict)

    def build(self, input_shape):
        """Keras' Model.build: creates the weights for inputs of this shape (batch axis first,
        None for any), through a symbolic call: nothing runs. A list of shapes for several inputs."""
        if getattr(self, "_ef_in_build", False) or self.built:
            return
        shapes = input_shape if (isinstance(input_shape, list) and input_shape and
                                 isinstance(input_shape[0], (list, tuple))) else [input_shape]
        self._build_shapes([[-1 if d is None else int(d) for d in s] for s in shapes])

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
        """Keras' set_weights: checks the count, every shape and dtype first (ValueError naming each
        mismatch), then assigns them all; on an error nothing changes."""
        _t._set_weights(self, list(weights))

    def get_layer(self, name=None, index=None):
        """Keras' get_layer: one of this model's layers by name or by index."""
        if (name is None) == (index is None):
            raise ValueError("get_layer: give either a name or an index")
        layers = list(self.layers)
        if index is not None:
            if not -len(layers) <= index < len(layers):
                raise ValueError(f"get_layer: index {index} is out of range: the model has {len(layers)} layers")
            return layers[index]
        for layer in layers:
            if layer.name == name:
                return layer
        raise ValueError(f"No such layer: {name}. Existing layers are: {[layer.name for layer in layers]}.")

    def get_config(self):
        """Keras' get_config of a Sequential or functional model: its layers' configs nested (what
        from_config and save_model use). A subclassed Model gives what its own get_config gives."""
        if isinstance(self, Sequential) or (self._is_functional and not _overrides_call(type(self))):
            from .keras import saving
            return saving.model_config(self)["config"]
        return super().get_config()

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """Keras' from_config: a new model (fresh weights) from get_config()'s dict."""
        from .keras import saving
        if issubclass(cls, Sequential):
            make = (lambda class_name, name: cls(name=name or None)) if cls is not Sequential else None
            return saving.model_from_config("Sequential", config, custom_objects, make)
        if isinstance(config, dict) and "nodes" in config and "outputs" in config and not _overrides_call(cls):
            return saving.model_from_config("Functional", config, custom_objects)
        return super().from_config(config)

    def to_json(self, **kwargs):
        """Keras' to_json: the architecture as JSON text in Keras 3's serialization, which Keras'
        model_from_json reads too (ef.keras.models.model_from_json reads it and Keras' own)."""
        import json
        from .keras import saving
        saving._check_savable(self, "to_json")
        text = saving._s.model_to_keras_json(self)
        return json.dumps(json.loads(text), **kwargs) if kwargs else text

    def save(self, filepath, *args, **kwargs):
        """Saves the model: to a whole-model file (ef.keras.saving.save_model) for paths ending in
        .efmodel, .keras (Keras 3's format) or .h5 (Keras' legacy HDF5), else for inference as a
        saved model (ef.saved_model.save)."""
        import os
        if str(os.fspath(filepath)).endswith((".efmodel", ".keras", ".h5", ".hdf5")):
            from .keras import saving
            return saving.save_model(self, filepath, *args, **kwargs)
        from . import saved_model
        return saved_model.save(self, filepath, *args, **kwargs)

    def summary(self, line_length=None, positions=None, print_fn=None, expand_nested=False, show_trainable=False,
                layer_range=None):
        """Keras 3's table: layer (type), output shape, parameter count (the layers each one's
        inputs come from, for a functional model that is not a chain), Trainable with
        show_trainable, nested models' layers with expand_nested; totals with their sizes."""
        from ._model_summary import summary
        summary(self, line_length, positions, print_fn, expand_nested, show_trainable, layer_range)

    def _ef_build_from_input(self):
        shape = getattr(self, "_ef_input_shape", None)
        if shape is not None and not self.built and self.layers:
            dtype = getattr(self, "_ef_input_dtype", None)
            if dtype is None:
                self.build(shape)
            else:
                self._build_specs([[-1 if d is None else int(d) for d in shape]], [dtype])


class Model(_Training, _PythonLayer, _t.Model):
    """Keras' Model, two ways:
    - the functional API: Model(inputs, outputs) with Keras tensors from ef.keras.Input and the
      layers called on them (inputs/outputs: one tensor, a list, or for outputs a dict by name);
    - subclassed: define call(inputs[, training]) and assign layers as attributes in __init__.
    Either way compile/fit/evaluate/predict as Keras; train_step(data), test_step(data) and
    predict_step(x) may be overridden (fit still traces them once)."""

    def __init__(self, inputs=None, outputs=None, name=None, trainable=True, **kwargs):
        if (inputs is None) != (outputs is None):
            raise ValueError("Model(inputs, outputs) needs both inputs and outputs")
        if name is None and inputs is not None and type(self) is Model:
            # Keras 3: Model(inputs, outputs) is a Functional, named "functional", "functional_1", ...
            from ._layers import _unique_name
            name = _unique_name("functional")
        _PythonLayer.__init__(self, name=name, trainable=trainable, **kwargs)
        _distribute._keras_created(self)
        if inputs is None:
            return
        if isinstance(inputs, dict):
            inputs = list(inputs.values())
        elif not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        names = []
        if isinstance(outputs, dict):
            names = [str(k) for k in outputs]
            self._ef_output_dict = names
            outputs = list(outputs.values())
        elif isinstance(outputs, (list, tuple)):
            self._ef_output_list = True
            outputs = list(outputs)
        else:
            outputs = [outputs]
        for what, ts in (("inputs", inputs), ("outputs", outputs)):
            for t in ts:
                if not _is_keras_tensor(t):
                    raise TypeError(f"Model {what} must be Keras tensors (from ef.keras.Input and the layers called on "
                                    f"them), got {t!r}")
        self._init_functional(list(inputs), list(outputs), names)

    def _ef_get_config(self):
        # A subclassed Model is not saved as a config (save_model says so); a functional one
        # saves its graph (python/src/py_layer.h does not ask).
        return None

    def __call__(self, inputs, training=None):
        out = super().__call__(inputs, training=training)
        if not self._is_functional:
            return out
        return self._structured(out if isinstance(out, list) else [out])


class Sequential(_Training, _t.Sequential):
    """A stack of layers, each fed the previous one's output (the C++ ef::train::Sequential)."""

    def __init__(self, layers=None, name=None, trainable=True):
        super().__init__(name or "")
        _distribute._keras_created(self)
        self._ef_input_shape = None
        self._ef_input_dtype = None
        self._ef_input_name = None
        if not trainable:
            self.trainable = False
        for layer in layers or []:
            self.add(layer)
        # As Keras: a Sequential that starts with an Input is built at once (its weights exist).
        self._ef_build_from_input()

    def add(self, layer):
        if isinstance(layer, InputLayer) or _is_keras_tensor(layer):
            if self._ef_input_shape is not None or self.layers:
                raise ValueError("Sequential: an Input can only come first")
            self._ef_input_shape = layer.shape if isinstance(layer, InputLayer) else tuple(layer._shape_tuple)
            # The Input's dtype and name as the functional API keeps them (an int64 Input for an
            # Embedding builds the model for int64 ids).
            self._ef_input_dtype = getattr(layer, "dtype", None)
            self._ef_input_name = getattr(layer, "name", None) or None
            return
        if not isinstance(layer, _core.Layer):
            raise TypeError(f"Sequential.add expects a layer, got {layer!r}")
        declared = getattr(layer, "_ef_declared_input_shape", None)
        if declared is not None and self._ef_input_shape is None and not self.layers:
            self._ef_input_shape = declared  # Dense(..., input_shape=...) first: built as with an Input
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
