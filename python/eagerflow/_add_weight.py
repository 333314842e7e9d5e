"""Keras 3's Layer.add_weight for layers and models written in Python:
add_weight(shape=None, initializer=None, dtype=None, trainable=True, autocast=True,
regularizer=None, constraint=None, aggregation="none", overwrite_with_gradient=False, name=None).
The name is optional (Keras 3 names it "variable", "variable_1", ...); eagerflow's own
add_weight(name, shape, ...) with the name first keeps working. The C++ Layer.add_weight makes
the variable; a regularizer joins the layer's losses at every call, as Keras' weight
regularizers do; a constraint projects the weight after each optimizer step (fit, train_on_batch,
optimizer.apply), as Keras' optimizers do."""
from . import _core


def _keras_kwargs(args, shape, initializer, dtype):
    # Keras 3's positional order: (shape, initializer, dtype).
    if len(args) > 3:
        raise TypeError(f"add_weight() takes at most 3 positional arguments but {len(args)} were given.")
    for i, (value, what) in enumerate(((shape, "shape"), (initializer, "initializer"), (dtype, "dtype"))):
        if i < len(args):
            if value is not None:
                raise ValueError(f"`{what}` was passed both positionally and as a keyword argument.")
    padded = list(args) + [None] * (3 - len(args))
    return (padded[0] if len(args) > 0 else shape, padded[1] if len(args) > 1 else initializer,
            padded[2] if len(args) > 2 else dtype)


def _default_name(layer):
    taken = {v.name.rsplit("/", 1)[-1] for v in layer.weights}
    name, i = "variable", 0
    while name in taken:
        i += 1
        name = f"variable_{i}"
    return name


def add_weight(self, *args, shape=None, initializer=None, dtype=None, trainable=True, autocast=True,
               regularizer=None, constraint=None, aggregation="none", overwrite_with_gradient=False, name=None):
    if args and isinstance(args[0], str):  # eagerflow's add_weight(name, shape, initializer, trainable, dtype)
        legacy = list(args[1:]) + [None] * (4 - len(args[1:]))
        name = args[0]
        shape = legacy[0] if shape is None else shape
        initializer = legacy[1] if initializer is None else initializer
        trainable = trainable if legacy[2] is None else legacy[2]
        dtype = legacy[3] if dtype is None else dtype
    else:
        shape, initializer, dtype = _keras_kwargs(args, shape, initializer, dtype)
    if overwrite_with_gradient:
        raise NotImplementedError("add_weight: overwrite_with_gradient is not supported in eagerflow")
    if aggregation not in ("none", "mean", "sum", "only_first_replica", None):
        raise ValueError(f"Invalid value for argument `aggregation`. Expected one of 'none', 'mean', 'sum', "
                         f"'only_first_replica'. Received: aggregation={aggregation}")
    if shape is None:
        shape = ()
    if initializer is None and dtype is not None:
        from .dtypes import as_dtype
        if not as_dtype(dtype).is_floating:
            initializer = "zeros"  # Keras: glorot_uniform only for floating weights
    if name is None:
        name = _default_name(self)
    if not isinstance(name, str):
        raise ValueError(f"Argument `name` must be a string. Received: name={name}")
    variable = _core.Layer.add_weight(self, name, shape, initializer, bool(trainable), dtype)
    if constraint is not None:  # projected after each optimizer step (python/eagerflow/_layer_add_weight.py)
        from . import _layer_add_weight
        from .keras import constraints
        self.__dict__.setdefault("_ef_weight_constraints", []).append((variable, constraints.get(constraint)))
        _layer_add_weight._CONSTRAINED.add(self)
    if regularizer is not None:
        from .keras import regularizers
        self._ef_weight_regularizers = getattr(self, "_ef_weight_regularizers", []) + [
            (regularizers.get(regularizer), variable)]
    return variable


def add_regularization_losses(layer):
    """The weight regularizers' penalties, added to the layer's losses after its call."""
    for regularizer, variable in getattr(layer, "_ef_weight_regularizers", ()):
        layer.add_loss(regularizer(variable))
