"""tf.train.Example and its family (TF's example.proto / feature.proto messages) in pure Python:
the protobuf wire format written and read here, no protobuf package needed.

Maps serialize in sorted key order (protobuf's deterministic serialization; TF's own Python
order is its hash table's). Decoding is bounded by the input: lengths are checked against the
bytes left, the message nesting is the schema's (at most four deep), and unknown fields are
skipped without recursion.
"""
import math as _math
import struct as _struct

__all__ = ["BytesList", "FloatList", "Int64List", "Feature", "Features", "FeatureList", "FeatureLists",
           "Example", "SequenceExample"]


class DecodeError(Exception):
    """A message that cannot be decoded (protobuf's google.protobuf.message.DecodeError)."""


# ---------------------------------------------------------------- wire format
def _varint(n):
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field, wire):
    return _varint((field << 3) | wire)


def _ld(field, payload):
    return _key(field, 2) + _varint(len(payload)) + payload


def _read_varint(b, i, end):
    n = shift = 0
    while True:
        if i >= end or shift > 63:
            raise DecodeError("Error parsing message: truncated or overlong varint")
        c = b[i]
        i += 1
        n |= (c & 0x7F) << shift
        if not c & 0x80:
            return n & ((1 << 64) - 1), i
        shift += 7


def _fields(b, start, end):
    """(field number, wire type, value) of each field in b[start:end]; length-delimited values
    as (start, end) spans."""
    i = start
    while i < end:
        key, i = _read_varint(b, i, end)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise DecodeError("Error parsing message: field number 0")
        if wire == 0:
            v, i = _read_varint(b, i, end)
        elif wire == 1:
            if end - i < 8:
                raise DecodeError("Error parsing message: truncated fixed64")
            v, i = b[i:i + 8], i + 8
        elif wire == 2:
            n, i = _read_varint(b, i, end)
            if n > end - i:
                raise DecodeError("Error parsing message: a length beyond the message")
            v, i = (i, i + n), i + n
        elif wire == 5:
            if end - i < 4:
                raise DecodeError("Error parsing message: truncated fixed32")
            v, i = b[i:i + 4], i + 4
        elif wire == 3:  # a group: skipped to its end marker, counting depth instead of recursing
            depth = 1
            while depth:
                k, i = _read_varint(b, i, end)
                w = k & 7
                if w == 3:
                    depth += 1
                elif w == 4:
                    depth -= 1
                elif w == 0:
                    _, i = _read_varint(b, i, end)
                elif w == 1 or w == 5:
                    i += 8 if w == 1 else 4
                elif w == 2:
                    n, i = _read_varint(b, i, end)
                    i += n
                else:
                    raise DecodeError("Error parsing message: bad wire type")
                if i > end:
                    raise DecodeError("Error parsing message: truncated group")
            continue
        else:
            raise DecodeError(f"Error parsing message: bad wire type {wire}")
        yield field, wire, v


# ---------------------------------------------------------------- repeated scalars
def _f32(v):
    if isinstance(v, (str, bytes)) or not isinstance(v, (int, float)) and not hasattr(v, "__float__"):
        raise TypeError(f"must be real number, not {type(v).__name__}")
    v = float(v)
    try:
        return _struct.unpack("<f", _struct.pack("<f", v))[0]
    except OverflowError:
        return _math.copysign(_math.inf, v)


def _i64(v):
    if isinstance(v, bool) or not hasattr(v, "__index__"):
        raise TypeError(f"'{type(v).__name__}' object cannot be interpreted as an integer")
    v = v.__index__()
    if not -(1 << 63) <= v < (1 << 63):
        raise ValueError(f"Value out of range: {v}")
    return v


def _bytes(v):
    if not isinstance(v, (bytes, bytearray)):
        raise TypeError(f"expected bytes, {type(v).__name__} found")
    return bytes(v)


class RepeatedScalarContainer(list):
    """A repeated field's values, checked (and float32-rounded) as they are added."""

    def __init__(self, check, values=()):
        self._check = check
        super().__init__(check(v) for v in values)

    def append(self, v):
        super().append(self._check(v))

    def extend(self, vs):
        super().extend(self._check(v) for v in vs)

    def insert(self, i, v):
        super().insert(i, self._check(v))

    def __setitem__(self, i, v):
        if isinstance(i, slice):
            super().__setitem__(i, [self._check(x) for x in v])
        else:
            super().__setitem__(i, self._check(v))

    def __eq__(self, other):
        return list(self) == list(other)

    __hash__ = None


class RepeatedCompositeContainer(list):
    """A repeated message field: add() makes the next element."""

    def __init__(self, cls, values=()):
        self._cls = cls
        super().__init__(_coerce(cls, v) for v in values)

    def add(self, **kwargs):
        m = self._cls(**kwargs)
        super().append(m)
        return m

    def append(self, v):
        super().append(_coerce(self._cls, v))

    def extend(self, vs):
        super().extend(_coerce(self._cls, v) for v in vs)

    def __eq__(self, other):
        return list(self) == list(other)

    __hash__ = None


class MessageMap(dict):
    """A map<string, Message> field: a missing key reads as a new, stored message (protobuf's rule)."""

    def __init__(self, cls, values=None):
        super().__init__()
        self._cls = cls
        for k, v in (values or {}).items():
            self[k] = v

    def __missing__(self, key):
        m = self._cls()
        dict.__setitem__(self, self._key(key), m)
        return m

    def __getitem__(self, key):
        return super().__getitem__(self._key(key))

    def __setitem__(self, key, value):
        # protobuf forbids assignment to a message map; the constructor's dict is copied in.
        dict.__setitem__(self, self._key(key), _coerce(self._cls, value))

    def __contains__(self, key):
        return super().__contains__(self._key(key))

    def get_or_create(self, key):
        return self[key]

    @staticmethod
    def _key(key):
        if isinstance(key, bytes):
            key = key.decode()
        if not isinstance(key, str):
            raise TypeError(f"map keys are str, got {type(key).__name__}")
        return key

    def __eq__(self, other):
        return dict(self) == dict(other)

    __hash__ = None


def _coerce(cls, v):
    if isinstance(v, cls):
        c = cls()
        c.CopyFrom(v)
        return c
    if isinstance(v, dict):
        return cls(**v)
    raise TypeError(f"expected {cls.__name__}, got {type(v).__name__}")


# ---------------------------------------------------------------- messages
class _Message:
    # (name, number, kind, type): kind 'scalars' (type: 'float' | 'int64' | 'bytes'), 'message',
    # 'messages' or 'map'.
    _FIELDS = ()
    _ONEOF = None  # the field names of a oneof, when the message is one

    def __init__(self, **kwargs):
        self._set = set()  # singular messages set explicitly (present even when empty)
        for name, _, kind, typ in self._FIELDS:
            object.__setattr__(self, "_f_" + name, self._empty(kind, typ))
        for name, value in kwargs.items():
            spec = self._spec(name)
            if value is None:
                continue
            if spec[2] == "message":
                self._set_message(name, _coerce(spec[3], value))
            elif spec[2] == "scalars":
                getattr(self, name).extend(value)
            elif spec[2] == "messages":
                getattr(self, name).extend(value)
            else:
                m = getattr(self, name)
                for k, v in dict(value).items():
                    m[k] = v

    @staticmethod
    def _empty(kind, typ):
        if kind == "scalars":
            return RepeatedScalarContainer({"float": _f32, "int64": _i64, "bytes": _bytes}[typ])
        if kind == "messages":
            return RepeatedCompositeContainer(typ)
        if kind == "map":
            return MessageMap(typ)
        return typ()

    @classmethod
    def _spec(cls, name):
        for f in cls._FIELDS:
            if f[0] == name:
                return f
        raise ValueError(f'Protocol message {cls.__name__} has no "{name}" field.')

    def _set_message(self, name, m):
        if self._ONEOF and name in self._ONEOF:
            for other in self._ONEOF:
                if other != name:
                    self._set.discard(other)
                    object.__setattr__(self, "_f_" + other, self._spec(other)[3]())
        object.__setattr__(self, "_f_" + name, m)
        self._set.add(name)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        self._spec(name)
        return object.__getattribute__(self, "_f_" + name)

    def __setattr__(self, name, value):
        if name.startswith("_"):
            object.__setattr__(self, name, value)
            return
        spec = self._spec(name)
        raise AttributeError(f'Assignment not allowed to {"composite " if spec[2] != "scalars" else "repeated "}field '
                             f'"{name}" in protocol message object.')

    # -- presence
    def _nonempty(self):
        for name, _, kind, _typ in self._FIELDS:
            v = object.__getattribute__(self, "_f_" + name)
            if kind == "message":
                if name in self._set or v._nonempty():
                    return True
            elif len(v):
                return True
        return False

    def HasField(self, name):  # noqa: N802 - protobuf's name
        spec = self._spec(name)
        if spec[2] != "message":
            raise ValueError(f'Protocol message has no singular "{name}" field.')
        return name in self._set or getattr(self, name)._nonempty()

    def WhichOneof(self, group):  # noqa: N802
        if not self._ONEOF or group != "kind":
            raise ValueError(f'Protocol message has no oneof "{group}" field.')
        present = [n for n in self._ONEOF if self.HasField(n)]
        explicit = [n for n in present if n in self._set]
        return (explicit or present or [None])[-1]

    def ClearField(self, name):  # noqa: N802
        spec = self._spec(name)
        self._set.discard(name)
        object.__setattr__(self, "_f_" + name, self._empty(spec[2], spec[3]))

    def Clear(self):  # noqa: N802
        for f in self._FIELDS:
            self.ClearField(f[0])

    def CopyFrom(self, other):  # noqa: N802
        if other is self:
            return
        self.Clear()
        self.MergeFrom(other)

    def MergeFrom(self, other):  # noqa: N802
        if type(other) is not type(self):
            raise TypeError(f"Parameter to MergeFrom() must be instance of same class: expected {type(self).__name__} "
                            f"got {type(other).__name__}.")
        self.MergeFromString(other.SerializeToString())

    # -- wire format
    def SerializeToString(self, deterministic=None):  # noqa: N802
        out = []
        for name, num, kind, typ in self._FIELDS:
            v = object.__getattribute__(self, "_f_" + name)
            if kind == "scalars":
                if not v:
                    continue
                if typ == "bytes":
                    out.extend(_ld(num, x) for x in v)
                elif typ == "float":
                    out.append(_ld(num, _struct.pack(f"<{len(v)}f", *v)))
                else:
                    out.append(_ld(num, b"".join(_varint(x) for x in v)))
            elif kind == "message":
                if self._ONEOF and name in self._ONEOF and self.WhichOneof("kind") != name:
                    continue
                if name in self._set or v._nonempty():
                    out.append(_ld(num, v.SerializeToString()))
            elif kind == "messages":
                out.extend(_ld(num, m.SerializeToString()) for m in v)
            else:
                for k in sorted(v):
                    out.append(_ld(num, _ld(1, k.encode()) + _ld(2, v[k].SerializeToString())))
        return b"".join(out)

    SerializePartialToString = SerializeToString

    def ByteSize(self):  # noqa: N802
        return len(self.SerializeToString())

    def MergeFromString(self, serialized):  # noqa: N802
        b = bytes(serialized)
        self._merge(b, 0, len(b))
        return len(b)

    def ParseFromString(self, serialized):  # noqa: N802
        self.Clear()
        return self.MergeFromString(serialized)

    @classmethod
    def FromString(cls, s):  # noqa: N802
        m = cls()
        m.MergeFromString(s)
        return m

    def _merge(self, b, start, end):
        by_num = {f[1]: f for f in self._FIELDS}
        for num, wire, v in _fields(b, start, end):
            spec = by_num.get(num)
            if spec is None:
                continue  # an unknown field: skipped
            name, _, kind, typ = spec
            if kind == "scalars":
                c = object.__getattribute__(self, "_f_" + name)
                if typ == "bytes":
                    if wire != 2:
                        raise DecodeError(f"Error parsing message: wrong wire type for {name}")
                    list.append(c, b[v[0]:v[1]])
                elif typ == "float":
                    if wire == 5:
                        list.append(c, _struct.unpack("<f", v)[0])
                    elif wire == 2:
                        n = v[1] - v[0]
                        if n % 4:
                            raise DecodeError("Error parsing message: packed floats of a length not a multiple of 4")
                        list.extend(c, _struct.unpack(f"<{n // 4}f", b[v[0]:v[1]]))
                    else:
                        raise DecodeError(f"Error parsing message: wrong wire type for {name}")
                else:
                    signed = lambda x: x - (1 << 64) if x >= (1 << 63) else x  # noqa: E731
                    if wire == 0:
                        list.append(c, signed(v))
                    elif wire == 2:
                        i = v[0]
                        while i < v[1]:
                            x, i = _read_varint(b, i, v[1])
                            list.append(c, signed(x))
                    else:
                        raise DecodeError(f"Error parsing message: wrong wire type for {name}")
                continue
            if wire != 2:
                raise DecodeError(f"Error parsing message: wrong wire type for {name}")
            if kind == "message":
                if self._ONEOF and name in self._ONEOF and self.WhichOneof("kind") not in (None, name):
                    self._set_message(name, typ())
                m = object.__getattribute__(self, "_f_" + name)
                m._merge(b, v[0], v[1])
                self._set.add(name)
            elif kind == "messages":
                m = typ()
                m._merge(b, v[0], v[1])
                list.append(object.__getattribute__(self, "_f_" + name), m)
            else:
                key, val = "", typ()
                for n2, w2, v2 in _fields(b, v[0], v[1]):
                    if w2 != 2:
                        raise DecodeError("Error parsing message: wrong wire type in a map entry")
                    if n2 == 1:
                        try:
                            key = b[v2[0]:v2[1]].decode()
                        except UnicodeDecodeError:
                            raise DecodeError("Error parsing message: a map key that is not UTF-8") from None
                    elif n2 == 2:
                        val = typ()
                        val._merge(b, v2[0], v2[1])
                dict.__setitem__(object.__getattribute__(self, "_f_" + name), key, val)

    # -- comparison and text
    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self.SerializeToString() == other.SerializeToString()

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    __hash__ = None

    def _text(self, indent):
        pad = "  " * indent
        lines = []
        for name, _, kind, typ in self._FIELDS:
            v = object.__getattribute__(self, "_f_" + name)
            if kind == "scalars":
                for x in v:
                    if typ == "bytes":
                        s = "".join(chr(c) if 32 <= c < 127 and c not in (34, 39, 92) else
                                    {34: '\\"', 39: "\\'", 92: "\\\\", 10: "\\n", 13: "\\r", 9: "\\t"}.get(c, f"\\{c:03o}")
                                    for c in x)
                        lines.append(f'{pad}{name}: "{s}"')
                    elif typ == "float":
                        lines.append(f"{pad}{name}: {_float_text(x)}")
                    else:
                        lines.append(f"{pad}{name}: {x}")
            elif kind == "message":
                if self.HasField(name) and (not self._ONEOF or self.WhichOneof("kind") == name):
                    lines += [f"{pad}{name} {{", *v._text(indent + 1), f"{pad}}}"]
            elif kind == "messages":
                for m in v:
                    lines += [f"{pad}{name} {{", *m._text(indent + 1), f"{pad}}}"]
            else:
                for k in v:
                    lines += [f"{pad}{name} {{", f'{pad}  key: "{k}"', f"{pad}  value {{", *v[k]._text(indent + 2),
                              f"{pad}  }}", f"{pad}}}"]
        return lines

    def __str__(self):
        t = self._text(0)
        return "\n".join(t) + "\n" if t else ""

    def __repr__(self):
        return str(self)

    def __reduce__(self):
        return (type(self).FromString, (self.SerializeToString(),))

    def __deepcopy__(self, memo):
        return type(self).FromString(self.SerializeToString())


def _float_text(x):
    if _math.isnan(x):
        return "nan"
    if _math.isinf(x):
        return "inf" if x > 0 else "-inf"
    s = repr(_struct.unpack("<f", _struct.pack("<f", x))[0])
    # The shortest text that reads back to the same float32, as protobuf prints floats.
    for digits in range(1, 10):
        t = f"{x:.{digits}g}"
        if _struct.pack("<f", float(t)) == _struct.pack("<f", x):
            s = t
            break
    return s


def _message(name, fields, oneof=None, doc=""):
    return type(name, (_Message,), {"_FIELDS": fields, "_ONEOF": oneof, "__doc__": doc, "__module__": __name__})


BytesList = _message("BytesList", (("value", 1, "scalars", "bytes"),), doc="tf.train.BytesList: repeated bytes value.")
FloatList = _message("FloatList", (("value", 1, "scalars", "float"),), doc="tf.train.FloatList: repeated float value (packed).")
Int64List = _message("Int64List", (("value", 1, "scalars", "int64"),), doc="tf.train.Int64List: repeated int64 value (packed).")
Feature = _message("Feature", (("bytes_list", 1, "message", BytesList), ("float_list", 2, "message", FloatList),
                               ("int64_list", 3, "message", Int64List)),
                   oneof=("bytes_list", "float_list", "int64_list"), doc="tf.train.Feature: one of the three lists.")
Features = _message("Features", (("feature", 1, "map", Feature),), doc="tf.train.Features: map<string, Feature> feature.")
FeatureList = _message("FeatureList", (("feature", 1, "messages", Feature),), doc="tf.train.FeatureList: repeated Feature.")
FeatureLists = _message("FeatureLists", (("feature_list", 1, "map", FeatureList),),
                        doc="tf.train.FeatureLists: map<string, FeatureList> feature_list.")
Example = _message("Example", (("features", 1, "message", Features),), doc="tf.train.Example: Features features.")
SequenceExample = _message("SequenceExample", (("context", 1, "message", Features), ("feature_lists", 2, "message", FeatureLists)),
                           doc="tf.train.SequenceExample: context Features and FeatureLists.")
