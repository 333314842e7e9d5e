"""TensorFlow's checkpoint format for tf.train.Checkpoint (the C++ reader and writer of
include/eagerflow/io/tensor_bundle.h, as _core._bundle).

Files: `<prefix>.index` (a sorted table of the values' dtypes, shapes, offsets and CRC-32Cs) and
`<prefix>.data-00000-of-00001` (their bytes), as TF writes them. The object graph is TF's
TrackableObjectGraph message under the key `_CHECKPOINTABLE_OBJECT_GRAPH`: each node's named
children, its values as attributes (`VARIABLE_VALUE` with the checkpoint key), and on an
optimizer's node its slot variables, each a node of its own.

_checkpoint.py works on a plainer form of the graph, {"nodes": [{"children": [[name, id]],
"key": checkpoint key, "full_name": variable name, "slots": [[optimizer id, slot name, key]]}]}
(slots on the variable they belong to); to_tf_graph and from_tf_graph convert between the two.
"""
import numpy as np

from . import _core
from . import _keras3_names as _k3
from . import errors

OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
_ATTRIBUTES = "/.ATTRIBUTES/"


def is_tf_checkpoint(prefix):
    return _core._bundle.is_tensor_bundle(prefix)


def _attribute_name(key):
    return key.rsplit(_ATTRIBUTES, 1)[1] if _ATTRIBUTES in key else "VARIABLE_VALUE"


def to_tf_graph(graph):
    """TF's TrackableObjectGraph nodes (for _core._bundle.serialize_object_graph) of the plain graph."""
    plain = graph["nodes"]
    nodes = [{"children": [(child, name) for name, child in n["children"]],
              "attributes": ([(_attribute_name(n["key"]), n.get("full_name", ""), n["key"])] if n.get("key") else []),
              "slot_variables": [], "has_checkpoint_values": False} for n in plain]
    for var_id, n in enumerate(plain):
        for opt_id, slot, key in n.get("slots", []):
            nodes.append({"children": [], "attributes": [("VARIABLE_VALUE", "", key)], "slot_variables": [],
                          "has_checkpoint_values": True})
            nodes[opt_id]["slot_variables"].append((var_id, slot, len(nodes) - 1))
    # TF marks every node with a value in its subgraph (its own, a descendant's, a slot's)
    for n in nodes:
        n["has_checkpoint_values"] = bool(n["attributes"] or n["slot_variables"])
    changed = True
    while changed:
        changed = False
        for n in nodes:
            if not n["has_checkpoint_values"] and any(nodes[c]["has_checkpoint_values"] for c, _ in n["children"]):
                n["has_checkpoint_values"] = changed = True
    return nodes


def _list_items(nodes, node_id):
    """The items of a list node (children "0", "1", ...) in order, or None when it is not one."""
    items = {}
    for child, name in nodes[node_id]["children"]:
        if not name.isdigit():
            return None
        items[int(name)] = child
    return [items[i] for i in sorted(items)]


def _keras_optimizer_slots(nodes, plain):
    """A Keras 3 optimizer's slots (no TF slot variables: lists aligned with _trainable_variables)
    as slots of the variables they belong to; those lists are dropped from the optimizer's
    children, which the slot machinery replaces."""
    for opt_id, n in enumerate(nodes):
        names = {name: child for child, name in n["children"]}
        if "_trainable_variables" not in names:
            continue
        owners = _list_items(nodes, names["_trainable_variables"]) or []
        dropped = set(_k3.OPTIMIZER_LISTS)
        for name, child in names.items():
            items = _list_items(nodes, child)
            if name in dropped or name.startswith("_iterations") or items is None or not items:
                continue
            if len(items) != len(owners):
                continue  # not a list of slots
            dropped.add(name)
            for var_id, slot_id in zip(owners, items):
                attrs = nodes[slot_id]["attributes"]
                if attrs:
                    plain[var_id].setdefault("slots", []).append([opt_id, name, attrs[0][2]])
        plain[opt_id]["children"] = [c for c in plain[opt_id]["children"] if c[0] not in dropped]


def from_tf_graph(nodes):
    """The plain graph of TF's TrackableObjectGraph nodes (as _core._bundle.parse_object_graph gives them)."""
    plain = []
    for n in nodes:
        node = {"children": [[name, child] for child, name in n["children"]],
                "has_values": n["has_checkpoint_values"] or bool(n["attributes"])}
        attrs = n["attributes"]
        if attrs:
            chosen = next((a for a in attrs if a[0] == "VARIABLE_VALUE"), attrs[0])
            node["key"], node["full_name"] = chosen[2], chosen[1]
            node["attribute"] = chosen[0]
        plain.append(node)
    for opt_id, n in enumerate(nodes):
        for var_id, slot, slot_id in n["slot_variables"]:
            attrs = nodes[slot_id]["attributes"]
            if attrs:
                plain[var_id].setdefault("slots", []).append([opt_id, slot, attrs[0][2]])
    _keras_optimizer_slots(nodes, plain)
    return {"nodes": plain}


def _tensor(dtype, array):
    if dtype == "string":
        array = np.asarray(array, dtype=object)
        array = np.vectorize(lambda b: b if isinstance(b, bytes) else str(b).encode(), otypes=[object])(array) \
            if array.size else array
    return _core.constant(array, dtype=_core.DType.__members__[dtype])


def write(prefix, graph, values):
    """Writes values {key: (dtype name, ndarray)} and the object graph in TF's format; returns prefix."""
    entries = [(key, _tensor(dtype, array)) for key, (dtype, array) in values.items()]
    serialized = _core._bundle.serialize_object_graph(to_tf_graph(graph))
    entries.append((OBJECT_GRAPH_KEY, _core.constant(np.array(serialized, dtype=object), dtype=_core.DType.string)))
    _core._bundle.write(prefix, entries)
    return prefix


def _numpy(tensor):
    """A value as TF's CheckpointReader.get_tensor gives it: an ndarray; a NumPy scalar for
    shape (), bytes for a string scalar."""
    array = tensor.numpy()
    if isinstance(array, np.ndarray) and array.ndim == 0:
        return array[()]
    return array


class Reader:
    """A TF-format checkpoint's values and object graph (the interface of _checkpoint_io.Reader)."""

    def __init__(self, prefix):
        self._bundle = _core._bundle.BundleReader(prefix)
        self.prefix = prefix
        self._graph = None
        self._keys = [k for k in self._bundle.keys()]

    @property
    def object_graph(self):
        if self._graph is None:
            if not self._bundle.contains(OBJECT_GRAPH_KEY):
                raise errors.NotFoundError(None, None, f"The checkpoint {self.prefix} has no object graph "
                                           f"({OBJECT_GRAPH_KEY}): it was written by a name-based saver "
                                           "(tf.compat.v1.train.Saver), which tf.train.Checkpoint.restore "
                                           "does not match to objects; read its values with tf.train.load_checkpoint")
            data = self._bundle.read_bytes(OBJECT_GRAPH_KEY)
            self._graph = from_tf_graph(_core._bundle.parse_object_graph(
                data, f"checkpoint {self.prefix}.index ({OBJECT_GRAPH_KEY})"))
        return self._graph

    def keys(self):
        """The values' keys, the object graph's left out (as _checkpoint_io.Reader's)."""
        return [k for k in self._keys if k != OBJECT_GRAPH_KEY]

    def has_object_graph(self):
        return self._bundle.contains(OBJECT_GRAPH_KEY)

    def has_tensor(self, key):
        return self._bundle.contains(key)

    def dtype_name(self, key):
        self._check(key)
        return self._bundle.dtype_name(key)

    def shape(self, key):
        self._check(key)
        return list(self._bundle.shape(key))

    def get_tensor(self, key):
        self._check(key)
        if key == OBJECT_GRAPH_KEY:
            return self._bundle.read_bytes(key)
        return _numpy(self._bundle.read(key))

    def _check(self, key):
        if not self._bundle.contains(key):
            raise errors.NotFoundError(None, None, f"Key {key} not found in checkpoint")
