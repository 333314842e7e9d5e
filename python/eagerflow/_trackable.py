"""The object graph a tf.train.Checkpoint saves: what is trackable, and each object's named children.

A checkpoint saves the values reachable from its root by named edges (attribute names, list
indices, dict keys), not by variable names, so that a program restores into objects built the
same way whatever their variables are called. Trackable here: ef.Variable, Keras layers and models
(their attributes, their sub-layers as layer-<i>, their own weights by their short names),
optimizers (`iterations`; their slot variables are saved beside the variable they belong to),
tf.train.Checkpoint, ef.Module (when present) and lists/dicts/tuples of these (ListWrapper,
DictWrapper: they restore what is appended to them after a restore).

Keras models, layers and optimizers are named as TensorFlow names Keras 3's objects, so that
TF restores what eagerflow saves and the other way round: a Sequential's layers under
`_functional/_operations/<i>` (0: its InputLayer), a functional model's under `_operations/<i>`,
Dense's and Conv's kernel `_kernel`, Embedding's `_embeddings`, an optimizer's `_iterations`,
`_learning_rate`, and (when saving) its `_variables`, `_trainable_variables` and slot lists
(`_momentums`, `_velocities`, ...: see python/eagerflow/_keras3_names.py). eagerflow's older
checkpoints used other names (`layer-<i>`, `kernel`, `iterations`, slots beside their
variables): `legacy_names()` switches to those while such a checkpoint is restored.
"""
import contextlib
import threading
import weakref

from . import _core

_notify_hooks = []  # called with an object whose children changed (deferred restoration)


class _Naming(threading.local):
    """Per thread (a save and a restore may run at once): legacy names, and the optimizers'
    Keras 3 lists while a save walks the graph (id(optimizer) -> lists)."""

    def __init__(self):
        self.legacy = False
        self.extras = {}


_naming = _Naming()


@contextlib.contextmanager
def legacy_names(on=True):
    """children() with eagerflow's older names (restoring an older checkpoint) while active."""
    old = _naming.legacy
    _naming.legacy = on
    try:
        yield
    finally:
        _naming.legacy = old


@contextlib.contextmanager
def saving_extras(extras):
    """children() of optimizers with their Keras 3 variable lists (computed by the saver) while active."""
    old = _naming.extras
    _naming.extras = extras
    try:
        yield
    finally:
        _naming.extras = old


class Node:
    """An object of Keras 3's structure eagerflow has no counterpart of (a Sequential's
    `_functional`, an InputLayer): its children computed when asked (they follow the model)."""

    def __init__(self, fn=None):
        self._fn = fn

    def _ef_checkpoint_children(self):
        return self._fn() if self._fn is not None else []

    def __repr__(self):
        return "<checkpoint node>"


def _optimizer_class():
    return _core._train.Optimizer


def _module_class():
    import eagerflow
    m = getattr(eagerflow, "Module", None)
    return m if isinstance(m, type) else None


def is_variable(obj):
    return isinstance(obj, _core.Variable)


def is_trackable(obj):
    if isinstance(obj, (_core.Variable, _core.Layer, _optimizer_class(), ListWrapper, DictWrapper, list, tuple, dict)):
        return True
    if (getattr(obj, "_ef_checkpoint_root", False) or hasattr(obj, "_ef_checkpoint_state")  # (iterators)
            or hasattr(type(obj), "_ef_checkpoint_children")):
        return True
    module = _module_class()
    return module is not None and isinstance(obj, module)


def wrap(value):
    """A list or dict as the wrapper that tracks its later changes (tuples are immutable)."""
    if type(value) is list:
        return ListWrapper(value)
    if type(value) is dict:
        return DictWrapper(value)
    return value


def changed(obj):
    for hook in list(_notify_hooks):
        hook(obj)


class ListWrapper(list):
    """A list a checkpoint tracks: appending a variable after a restore restores it."""

    def __init__(self, items=()):
        super().__init__(wrap(v) for v in items)

    def append(self, value):
        super().append(wrap(value))
        changed(self)

    def extend(self, values):
        super().extend(wrap(v) for v in values)
        changed(self)

    def insert(self, index, value):
        super().insert(index, wrap(value))
        changed(self)

    def __setitem__(self, index, value):
        super().__setitem__(index, wrap(value) if not isinstance(index, slice) else [wrap(v) for v in value])
        changed(self)

    def __iadd__(self, values):
        self.extend(values)
        return self

    def __repr__(self):
        return f"ListWrapper({list.__repr__(self)})"


class DictWrapper(dict):
    """A dict a checkpoint tracks: setting a key after a restore restores its value."""

    def __init__(self, items=()):
        super().__init__()
        for k, v in dict(items).items():
            super().__setitem__(k, wrap(v))

    def __setitem__(self, key, value):
        super().__setitem__(key, wrap(value))
        changed(self)

    def update(self, *args, **kwargs):
        for k, v in dict(*args, **kwargs).items():
            super().__setitem__(k, wrap(v))
        changed(self)

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]


def identity(obj):
    """A key of the object: variables by their storage (a variable's Python wrappers may differ)."""
    return ("v", hash(obj)) if is_variable(obj) else ("o", id(obj))


def short_name(variable):
    name = getattr(variable, "_ef_full_name", None) or variable.name
    if name.endswith(":0"):
        name = name[:-2]
    return name


def _attribute_children(obj):
    d = getattr(obj, "__dict__", None)
    if not d:
        return []
    return [(k, v) for k, v in d.items() if not k.startswith("_ef_") and is_trackable(v)]


def _layer_children(layer, sublayers_by_index=True, keras3_names=False):
    """A layer's children: its attributes, its other sub-layers as layer-<i> (unless
    sublayers_by_index is False), its own weights by their short names (Keras 3's attribute
    names with keras3_names: Dense's kernel is `_kernel`)."""
    from . import _keras3_names
    out = _attribute_children(layer)
    seen = set()

    def see(v):  # the layers held by attributes, in containers too: those keep their attribute paths
        seen.add(identity(v))
        if isinstance(v, (list, tuple)):
            for x in v:
                see(x)
        elif isinstance(v, dict):
            for x in v.values():
                see(x)
    for _, v in out:
        see(v)
    sublayers = [l for l in (getattr(layer, "layers", None) or []) if l is not layer]
    for i, sub in enumerate(sublayers):
        if identity(sub) not in seen and sublayers_by_index:
            out.append((f"layer-{i}", sub))
            seen.add(identity(sub))
    # the layer's own weights: its variables less its sub-layers' (and those held as attributes)
    for v in [sub for sub in sublayers] + [v for _, v in out]:
        if isinstance(v, _core.Layer):
            seen.update(identity(w) for w in v.variables)
    names = set()
    for w in layer.variables:
        if identity(w) in seen:
            continue
        seen.add(identity(w))
        name = short_name(w).rsplit("/", 1)[-1]
        if keras3_names:
            name = _keras3_names.weight_name(layer, name)
        base, n = name, 1
        while name in names:
            name, n = f"{base}_{n}", n + 1
        names.add(name)
        out.append((name, w))
    return out


def optimizer_variables(opt):
    """(iterations and other non-slot variables as [(name, var)], slots as [(var name, slot, var)])."""
    if hasattr(opt, "inner_optimizer"):  # LossScaleOptimizer: its own two; the rest is its child's
        return [("step_counter", opt.step_counter), ("dynamic_scale", opt.dynamic_scale)], []
    # The C++ name prefixes the optimizer's own variables ("Adam/iterations"); .name is Keras'.
    prefix = getattr(opt, "_ef_cpp_name", opt.name) + "/"
    plain, slots = [], []
    for v in opt.variables:
        name = short_name(v)
        if name.startswith(prefix) and "/" not in name[len(prefix):]:
            plain.append((name[len(prefix):], v))
        elif "/" in name:
            owner, slot = name.rsplit("/", 1)
            # (a tf.Variable's slot is named after its TF name: "w:0/m")
            slots.append((owner[:-2] if owner.endswith(":0") else owner, slot, v))
        else:
            plain.append((name, v))
    return plain, slots


def children(obj):
    """The named children of a trackable, in a fixed order: [(name, child)]."""
    if is_variable(obj):
        return []
    if isinstance(obj, (list, tuple)):
        return [(str(i), v) for i, v in enumerate(obj) if is_trackable(v)]
    if isinstance(obj, dict):
        return [(str(k), v) for k, v in obj.items() if is_trackable(v)]
    if isinstance(obj, _optimizer_class()):
        own = optimizer_variables(obj)[0]
        inner = getattr(obj, "inner_optimizer", None)
        if inner is not None:
            return own + [("inner_optimizer", inner)]
        if _naming.legacy:
            return own
        from . import _keras3_names
        return _keras3_names.optimizer_children(obj, own, _naming.extras.get(id(obj)))
    if hasattr(obj, "_ef_checkpoint_children"):
        return obj._ef_checkpoint_children()
    if isinstance(obj, _core.Layer):
        if _naming.legacy:
            return _layer_children(obj)
        from . import _keras3_names
        return _keras3_names.layer_children(obj)
    return _attribute_children(obj)


def escape(name):
    return name.replace(".", "..").replace("/", ".S")


def walk(root):
    """Breadth-first from root: [(obj, path)] with each object once (its first path), and the
    edges [(parent index, name, child index)]."""
    order, index, edges = [(root, ())], {identity(root): 0}, []
    i = 0
    while i < len(order):
        obj, path = order[i]
        for name, child in children(obj):
            key = identity(child)
            if key not in index:
                index[key] = len(order)
                order.append((child, path + (name,)))
            edges.append((i, name, index[key]))
        i += 1
    return order, edges


class WeakList:
    """Live objects, weakly held (restorations with pending values)."""

    def __init__(self):
        self._refs = []

    def add(self, obj):
        self._refs.append(weakref.ref(obj))

    def __iter__(self):
        self._refs = [r for r in self._refs if r() is not None]
        return iter([r() for r in self._refs if r() is not None])

    def discard(self, obj):
        self._refs = [r for r in self._refs if r() is not None and r() is not obj]
