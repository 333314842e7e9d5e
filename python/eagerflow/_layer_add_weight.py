"""Layer.add_weight with Keras 3's signature (shape first; the name optional: "variable",
"variable_1", ... as Keras numbers them) and Keras 2's (the name first), over the C++
add_weight(name, shape, initializer, trainable, dtype) of layers written in Python.

constraint=: the C++ layer's per-weight constraints (which the C++ train step applies) are not
reachable from Python, so these are kept here and fit and train_on_batch project the weights
after each optimizer step (a callback that runs before the user's), as Keras' optimizer does.
"""
import weakref

from . import _core

_CONSTRAINED = weakref.WeakSet()  # layers written in Python that have constrained weights

# Keras 3's order after shape: the C++ binding takes these by keyword.
_KERAS3 = ("shape", "initializer", "dtype", "trainable", "autocast", "regularizer", "constraint", "aggregation")


def add_weight(self, *args, **kwargs):
    if args and isinstance(args[0], str):
        return _core.Layer.add_weight(self, *args, **kwargs)  # Keras 2: add_weight("w", shape, ...)
    if len(args) > len(_KERAS3):
        raise TypeError(f"add_weight() takes at most {len(_KERAS3)} positional arguments ({len(args)} given)")
    for key, value in zip(_KERAS3, args):
        if key in kwargs:
            raise TypeError(f"add_weight() got multiple values for argument '{key}'")
        kwargs[key] = value
    return _keras3_add_weight(self, **kwargs)


def _keras3_add_weight(self, shape=None, initializer=None, dtype=None, trainable=True, autocast=True,
                       regularizer=None, constraint=None, aggregation="none", overwrite_with_gradient=False,
                       name=None):
    from ._layers import _unique_name
    if regularizer is not None:
        # The C++ Layer has per-weight regularizers (set_weight_regularizer) that the binding does not reach yet.
        raise NotImplementedError("add_weight(regularizer=...) is not supported for layers written in Python yet; "
                                  "add the penalty in call() with self.add_loss(...)")
    if overwrite_with_gradient:
        raise NotImplementedError("add_weight(overwrite_with_gradient=True) is not supported")
    if name is None:
        name = _unique_name("variable")
    if not isinstance(name, str) or "/" in name:
        raise ValueError(f"Argument `name` must be a string and cannot contain character `/`. Received: name={name}")
    if initializer is None and dtype is not None:
        from .dtypes import as_dtype
        if not as_dtype(dtype).is_floating:
            initializer = "zeros"  # Keras: glorot_uniform only for floats
    variable = _core.Layer.add_weight(self, name, () if shape is None else shape, initializer, trainable, dtype)
    if constraint is not None:
        from .keras import constraints
        self.__dict__.setdefault("_ef_weight_constraints", []).append((variable, constraints.get(constraint)))
        _CONSTRAINED.add(self)
    return variable


def weight_constraints(model):
    """(variable, constraint) for the constrained weights of Python layers inside model."""
    pairs = [pair for layer in list(_CONSTRAINED) for pair in layer.__dict__.get("_ef_weight_constraints", [])]
    if not pairs:
        return []
    weights = list(model.weights)
    return [(v, c) for v, c in pairs if any(v._same_as(w) for w in weights)]


def project(variables):
    """Keras' optimizer step ends with each constrained variable's projection: for an optimizer's
    apply/apply_gradients, the constrained weights of Python layers among `variables`."""
    variables = list(variables)
    pairs = [pair for layer in list(_CONSTRAINED) for pair in layer.__dict__.get("_ef_weight_constraints", [])]
    apply_weight_constraints([(v, c) for v, c in pairs if any(v._same_as(w) for w in variables)])


def apply_weight_constraints(pairs):
    for variable, constraint in pairs:
        variable.assign(constraint(variable))


class ConstraintCallback(_core._train.Callback):
    """Projects the constrained weights after each training batch's update."""

    def __init__(self, pairs):
        super().__init__()
        self._pairs = pairs

    def on_train_batch_end(self, batch, logs=None):
        apply_weight_constraints(self._pairs)
