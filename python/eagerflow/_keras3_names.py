"""Keras 3's names for eagerflow's Keras objects in a checkpoint's object graph: what TensorFlow
(2.21, Keras 3.15) writes for tf.train.Checkpoint(model=..., optimizer=...), so that each side
restores the other's files by matching the graph's edge names.

  Sequential        _functional/_operations/<i>   (0: the InputLayer, then model.layers)
  functional Model  _operations/<i>               (its InputLayers, then model.layers)
  subclassed Model  its attributes, as before
  Dense, EinsumDense, Conv1D/2D/3D   kernel -> _kernel;  Embedding   embeddings -> _embeddings
  LSTM, GRU, SimpleRNN   cell/{kernel, recurrent_kernel, bias}
  Bidirectional     forward_layer, backward_layer
  MultiHeadAttention  _query_dense, _key_dense, _value_dense, _output_dense (each _kernel, bias)
  optimizer         _variables (iterations, learning rate, then each variable's slots),
                    _trainable_variables (the variables with slots, in the optimizer's order),
                    _iterations, _learning_rate, and one list per slot kind, aligned with
                    _trainable_variables: Adam's m and v as _momentums and _velocities, ...
Keras 3 optimizers have no TF slot variables: a TF-written optimizer's slots are found through
those lists (_tf_checkpoint.from_tf_graph) and restored by eagerflow's slot machinery.
"""
import numpy as np

from . import _core
from . import _trackable as _t

_PRIVATE_KERNEL = {"Dense", "EinsumDense", "Conv1D", "Conv2D", "Conv3D"}
_RNN_LAYERS = {"LSTM", "GRU", "SimpleRNN"}
_BIDIRECTIONAL = {"layer-0": "forward_layer", "layer-1": "backward_layer"}
_ATTENTION_PARTS = {"query": "_query_dense", "key": "_key_dense", "value": "_value_dense",
                    "attention_output": "_output_dense"}


def weight_name_of_einsum(name):
    return "_kernel" if name == "kernel" else name

# eagerflow's slot name -> Keras 3's list attribute: the default, then per optimizer class.
_SLOT_LISTS = {"m": "_momentums", "v": "_velocities", "vhat": "_velocity_hats", "momentum": "_momentums",
               "velocity": "_velocities", "accumulator": "_accumulators", "average_gradient": "_average_gradients",
               "average": "_model_variables_moving_average", "linear": "_linears"}
_SLOT_LISTS_BY_CLASS = {"SGD": {"momentum": "momentums"}, "Adamax": {"momentum": "_m", "norm": "_u"}}
# Lists of a Keras 3 optimizer's node that are not slots.
OPTIMIZER_LISTS = ("_variables", "_trainable_variables", "_trainable_variables_indices")


def _class_names(obj):
    return {c.__name__ for c in type(obj).__mro__}


def weight_name(layer, name):
    """The attribute a Keras 3 layer keeps a weight in (Dense's kernel is `_kernel`)."""
    classes = _class_names(layer)
    if name == "kernel" and classes & _PRIVATE_KERNEL:
        return "_kernel"
    if name == "embeddings" and "Embedding" in classes:
        return "_embeddings"
    return name


def _slot_rank(opt, slot):
    """Where Keras 3 puts a slot among a variable's (Adam: momentum, then velocity)."""
    if type(opt).__name__ == "RMSprop":
        return {"velocity": 0, "momentum": 1}.get(slot, 2)
    return {"m": 0, "momentum": 0, "accumulator": 0, "v": 1, "velocity": 1, "norm": 1, "linear": 1}.get(slot, 2)


def slot_list_name(opt, slot):
    own = _SLOT_LISTS_BY_CLASS.get(type(opt).__name__, {})
    return own.get(slot) or _SLOT_LISTS.get(slot) or f"_{slot}s"


def eager_slot_name(opt, list_name, existing):
    """eagerflow's slot name of a Keras 3 list name, among the slot names `existing`."""
    for slot in existing:
        if slot_list_name(opt, slot) == list_name:
            return slot
    return None


def _operations(layers, inputs):
    return _t.Node(lambda: [(str(i), _t.Node()) for i in range(inputs)] +
                   [(str(inputs + i), layer) for i, layer in enumerate(layers())])


def layer_children(layer):
    from . import _training
    if isinstance(layer, _training.Sequential):
        ops = _operations(lambda: list(layer.layers), 1)
        return [("_functional", _t.Node(lambda: [("_operations", ops)]))] + _t._layer_children(layer, False, True)
    if getattr(layer, "_is_functional", False):
        inputs = len(getattr(layer, "input_names", None) or [None])
        ops = _operations(lambda: list(layer.layers), inputs)
        return [("_operations", ops)] + _t._layer_children(layer, False, True)
    out = _t._layer_children(layer, True, True)
    classes = _class_names(layer)
    if "Bidirectional" in classes:
        return [(_BIDIRECTIONAL.get(name, name), v) for name, v in out]
    if "MultiHeadAttention" in classes and not any(isinstance(v, _core.Layer) for _, v in out):
        # Keras 3's attention keeps its projections in four EinsumDense sub-layers; eagerflow's C++
        # layer holds their weights itself, named <layer>/<projection>/<kernel|bias>
        groups = {}
        for w in layer.weights:
            parts = _t.short_name(w).split("/")
            if len(parts) >= 2:
                name = weight_name_of_einsum(parts[-1])
                groups.setdefault(_ATTENTION_PARTS.get(parts[-2], parts[-2]), []).append((name, w))
        return [(name, v) for name, v in out if not _t.is_variable(v)] + [
            (part, _t.Node(lambda ws=ws: ws)) for part, ws in groups.items()]
    if classes & _RNN_LAYERS and not hasattr(layer, "cell"):
        # Keras 3 keeps an RNN layer's weights in its cell; eagerflow's C++ layer holds them itself
        weights = [(name, v) for name, v in out if _t.is_variable(v)]
        return [(name, v) for name, v in out if not _t.is_variable(v)] + [("cell", _t.Node(lambda: weights))]
    return out


class LearningRate:
    """An optimizer's learning rate as Keras 3 saves it (a float32 variable `_learning_rate`)."""

    def __init__(self, opt):
        self._opt = opt

    def _ef_checkpoint_children(self):
        return []

    def _ef_variable_value(self):
        return "float32", np.array(float(self._opt.learning_rate), dtype=np.float32)

    def _ef_restore_variable_value(self, value):
        if isinstance(self._opt.learning_rate, (int, float)):  # a schedule gives the rate itself
            self._opt.learning_rate = float(np.asarray(value))

    def __repr__(self):
        return "<learning rate>"


def _learning_rate(opt):
    try:
        lr = opt.learning_rate
    except Exception:  # noqa: BLE001 - an optimizer without one saves none
        return None
    return LearningRate(opt) if isinstance(lr, (int, float)) else None


def optimizer_children(opt, own, extras):
    own = dict(own)
    out = []
    if extras:
        out += [("_variables", extras["variables"]), ("_trainable_variables", extras["trainable"])]
    iterations = own.pop("iterations", None)
    if iterations is not None:
        out.append(("_iterations", iterations))
    lr = extras["lr"] if extras else _learning_rate(opt)
    if lr is not None:
        out.append(("_learning_rate", lr))
    out += list(own.items())
    if extras:
        out += list(extras["slots"].items())
    return out


def saving_lists(opt, variables, skip_slots=False):
    """The Keras 3 lists of `opt` for a save: its slots of `variables` (the variables the
    checkpoint reaches), in the optimizer's order."""
    order = {_t.identity(v): i for i, v in enumerate(opt.variables)}
    owners = []
    for v in ([] if skip_slots else variables):
        slots = opt._slots_of(v)
        if slots:
            owners.append((min(order.get(_t.identity(s), len(order)) for s in slots.values()), v, slots))
    owners.sort(key=lambda t: t[0])
    lists, ordered = {}, []
    for _, _, slots in owners:
        for name, s in sorted(slots.items(), key=lambda kv: (_slot_rank(opt, kv[0]), order.get(_t.identity(kv[1]), 0))):
            lists.setdefault(slot_list_name(opt, name), []).append(s)
    # _variables: Keras 3 makes each build() call's slots variable by variable (Adam: m, v of the
    # first variable, then of the second); RMSprop makes its velocities, then its momentums
    separate = type(opt).__name__ == "RMSprop"
    for rank in sorted({_slot_rank(opt, name) for _, _, slots in owners for name in slots}) if separate else [None]:
        for _, _, slots in owners:
            for name, s in sorted(slots.items(), key=lambda kv: _slot_rank(opt, kv[0])):
                if rank is None or _slot_rank(opt, name) == rank:
                    ordered.append(s)
    lr = _learning_rate(opt)
    iterations = dict(_t.optimizer_variables(opt)[0]).get("iterations")
    return {"variables": [x for x in (iterations, lr) if x is not None] + ordered,
            "trainable": [v for _, v, _ in owners], "slots": lists, "lr": lr}
