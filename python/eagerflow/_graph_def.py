"""TF's GraphDef message (graph.proto) as ConcreteFunction.graph.as_graph_def() returns it: a
list of NodeDefs (name, op, input, device, attr) and the versions, printed in protobuf's text
format as TF prints it, serialized to and parsed from the protobuf bytes.

The bytes are made by TensorBoard's graph writer (_summary_graph.graph_def) from a traced
graph; this module reads them into messages, so both views of a graph are one conversion. Op
names are eagerflow's ops (mul, matmul, fused_elementwise, ...), not TF's kernels: the graph is
the one eagerflow runs, described in TF's format.
"""
import struct as _struct

from ._example_proto import DecodeError, _fields, _ld, _read_varint  # noqa: F401 - DecodeError re-exported
from ._summary_events import string_field, varint_field

__all__ = ["GraphDef", "NodeDef", "AttrValue", "TensorShapeProto", "DecodeError"]

# TF's DataType enum (types.proto) by number, for the text format.
DATA_TYPE_NAMES = {0: "DT_INVALID", 1: "DT_FLOAT", 2: "DT_DOUBLE", 3: "DT_INT32", 4: "DT_UINT8", 5: "DT_INT16",
                   6: "DT_INT8", 7: "DT_STRING", 8: "DT_COMPLEX64", 9: "DT_INT64", 10: "DT_BOOL", 14: "DT_BFLOAT16",
                   17: "DT_UINT16", 18: "DT_COMPLEX128", 19: "DT_HALF", 20: "DT_RESOURCE", 21: "DT_VARIANT",
                   22: "DT_UINT32", 23: "DT_UINT64"}


def _text(s):
    """A string field in protobuf's text format (C-style escapes, bytes above 0x7e octal)."""
    out = []
    for c in s:
        if c == 0x22:
            out.append('\\"')
        elif c == 0x5C:
            out.append("\\\\")
        elif c == 0x0A:
            out.append("\\n")
        elif c == 0x0D:
            out.append("\\r")
        elif c == 0x09:
            out.append("\\t")
        elif c == 0x27:
            out.append("\\'")
        elif 0x20 <= c < 0x7F:
            out.append(chr(c))
        else:
            out.append(f"\\{c:03o}")
    return '"' + "".join(out) + '"'


def _signed(n):
    return n - (1 << 64) if n >= 1 << 63 else n


class TensorShapeProto:
    """dim sizes (-1: unknown) and unknown_rank."""

    def __init__(self, dims=(), unknown_rank=False):
        self.dim = [int(d) for d in dims]
        self.unknown_rank = bool(unknown_rank)

    @classmethod
    def _parse(cls, b, start, end):
        dims, unknown = [], False
        for field, _, v in _fields(b, start, end):
            if field == 2:
                size = 0
                for f2, _, v2 in _fields(b, *v):
                    if f2 == 1:
                        size = _signed(v2)
                dims.append(size)
            elif field == 3:
                unknown = bool(v)
        return cls(dims, unknown)

    def _serialize(self):
        out = b"".join(_ld(2, varint_field(1, d) if d else b"") for d in self.dim)
        return out + (varint_field(3, 1) if self.unknown_rank else b"")

    def _text_lines(self, indent):
        pad = "  " * indent
        lines = []
        for d in self.dim:
            lines += [pad + "dim {", pad + f"  size: {d}", pad + "}"]
        if self.unknown_rank:
            lines.append(pad + "unknown_rank: true")
        return lines

    def __eq__(self, other):
        return isinstance(other, TensorShapeProto) and (self.dim, self.unknown_rank) == (other.dim, other.unknown_rank)


class AttrValue:
    """One attribute: s (bytes), i, f, b, type (a DataType number), shape, or list (of shapes or
    types, the two lists the writer makes)."""

    _ONE_OF = ("s", "i", "f", "b", "type", "shape", "list")

    def __init__(self, **value):
        if len(value) > 1:
            raise ValueError("an AttrValue holds one value")
        self._kind, self._value = next(iter(value.items())) if value else (None, None)

    def WhichOneof(self, name):  # noqa: N802 - protobuf's method name
        return self._kind if name == "value" else None

    def __getattr__(self, name):
        if name in AttrValue._ONE_OF:
            if self._kind == name:
                return self._value
            return {"s": b"", "i": 0, "f": 0.0, "b": False, "type": 0, "shape": TensorShapeProto(), "list": {}}[name]
        raise AttributeError(name)

    @classmethod
    def _parse(cls, b, start, end):
        a = cls()
        for field, wire, v in _fields(b, start, end):
            if field == 2:
                a._kind, a._value = "s", bytes(b[v[0]:v[1]])
            elif field == 3:
                a._kind, a._value = "i", _signed(v)
            elif field == 4:
                a._kind, a._value = "f", _struct.unpack("<f", v)[0]
            elif field == 5:
                a._kind, a._value = "b", bool(v)
            elif field == 6:
                a._kind, a._value = "type", v
            elif field == 7:
                a._kind, a._value = "shape", TensorShapeProto._parse(b, *v)
            elif field == 1:
                shapes, types = [], []
                for f2, w2, v2 in _fields(b, *v):
                    if f2 == 7:
                        shapes.append(TensorShapeProto._parse(b, *v2))
                    elif f2 == 6:
                        if w2 == 2:  # packed
                            i, stop = v2
                            while i < stop:
                                t, i = _read_varint(b, i, stop)
                                types.append(t)
                        else:
                            types.append(v2)
                a._kind, a._value = "list", {"shape": shapes, "type": types}
        return a

    def _serialize(self):
        k, v = self._kind, self._value
        if k == "s":
            return _ld(2, v)
        if k == "i":
            return varint_field(3, v)
        if k == "f":
            return bytes([0x25]) + _struct.pack("<f", v)
        if k == "b":
            return varint_field(5, int(v))
        if k == "type":
            return varint_field(6, v)
        if k == "shape":
            return _ld(7, v._serialize())
        if k == "list":
            return _ld(1, b"".join(_ld(7, s._serialize()) for s in v["shape"]) +
                       b"".join(varint_field(6, t) for t in v["type"]))
        return b""

    def _text_lines(self, indent):
        pad = "  " * indent
        k, v = self._kind, self._value
        if k == "s":
            return [pad + "s: " + _text(v)]
        if k in ("i", "f"):
            return [pad + f"{k}: {v!r}"]
        if k == "b":
            return [pad + f"b: {'true' if v else 'false'}"]
        if k == "type":
            return [pad + f"type: {DATA_TYPE_NAMES.get(v, v)}"]
        if k == "shape":
            return [pad + "shape {"] + v._text_lines(indent + 1) + [pad + "}"]
        if k == "list":
            lines = [pad + "list {"]
            for s in v["shape"]:
                lines += [pad + "  shape {"] + s._text_lines(indent + 2) + [pad + "  }"]
            lines += [pad + f"  type: {DATA_TYPE_NAMES.get(t, t)}" for t in v["type"]]
            return lines + [pad + "}"]
        return []


class NodeDef:
    """One node: name, op, input (names of the nodes, 'node:k' for output k), device, attr."""

    def __init__(self, name="", op="", input=(), device="", attr=None):  # noqa: A002 - TF's field name
        self.name, self.op, self.input, self.device = name, op, list(input), device
        self.attr = dict(attr or {})

    @classmethod
    def _parse(cls, b, start, end):
        n = cls()
        for field, _, v in _fields(b, start, end):
            if field == 1:
                n.name = bytes(b[v[0]:v[1]]).decode()
            elif field == 2:
                n.op = bytes(b[v[0]:v[1]]).decode()
            elif field == 3:
                n.input.append(bytes(b[v[0]:v[1]]).decode())
            elif field == 4:
                n.device = bytes(b[v[0]:v[1]]).decode()
            elif field == 5:
                key, value = "", AttrValue()
                for f2, _, v2 in _fields(b, *v):
                    if f2 == 1:
                        key = bytes(b[v2[0]:v2[1]]).decode()
                    elif f2 == 2:
                        value = AttrValue._parse(b, *v2)
                n.attr[key] = value
        return n

    def _serialize(self):
        out = string_field(1, self.name) + string_field(2, self.op) + b"".join(string_field(3, i) for i in self.input)
        if self.device:
            out += string_field(4, self.device)
        for k in self.attr:
            out += _ld(5, string_field(1, k) + _ld(2, self.attr[k]._serialize()))
        return out

    def _text_lines(self, indent):
        pad = "  " * indent
        lines = [pad + "name: " + _text(self.name.encode()), pad + "op: " + _text(self.op.encode())]
        lines += [pad + "input: " + _text(i.encode()) for i in self.input]
        if self.device:
            lines.append(pad + "device: " + _text(self.device.encode()))
        for k, v in self.attr.items():
            lines += [pad + "attr {", pad + "  key: " + _text(k.encode()), pad + "  value {"]
            lines += v._text_lines(indent + 2)
            lines += [pad + "  }", pad + "}"]
        return lines

    def __str__(self):
        return "\n".join(self._text_lines(0)) + "\n"


class GraphDef:
    """TF's GraphDef: `node` (NodeDefs in order), `versions.producer`."""

    class _Versions:
        def __init__(self, producer=0):
            self.producer = producer

    def __init__(self, node=(), producer=0):
        self.node = list(node)
        self.versions = GraphDef._Versions(producer)

    @classmethod
    def FromString(cls, data):  # noqa: N802 - protobuf's name
        g = cls()
        g.ParseFromString(data)
        return g

    def ParseFromString(self, data):  # noqa: N802
        b = bytes(data)
        self.node, self.versions = [], GraphDef._Versions()
        for field, _, v in _fields(b, 0, len(b)):
            if field == 1:
                self.node.append(NodeDef._parse(b, *v))
            elif field == 4:
                for f2, _, v2 in _fields(b, *v):
                    if f2 == 1:
                        self.versions.producer = _signed(v2)
        return len(b)

    def SerializeToString(self):  # noqa: N802
        out = b"".join(_ld(1, n._serialize()) for n in self.node)
        return out + _ld(4, varint_field(1, self.versions.producer) if self.versions.producer else b"")

    def __str__(self):
        lines = []
        for n in self.node:
            lines += ["node {"] + n._text_lines(1) + ["}"]
        lines += ["versions {"] + ([f"  producer: {self.versions.producer}"] if self.versions.producer else []) + ["}"]
        return "\n".join(lines) + "\n"

    def __repr__(self):
        return str(self)


def from_graph_text(text, input_names=(), add_shapes=False):
    """The GraphDef of a traced graph's text (ConcreteFunction.traced_graph). Without
    add_shapes the writer's _output_shapes attributes go, as TF's as_graph_def leaves them out."""
    from . import _summary_graph
    g = GraphDef.FromString(_summary_graph.graph_def(text, input_names))
    if not add_shapes:
        for n in g.node:
            n.attr.pop("_output_shapes", None)
    return g
