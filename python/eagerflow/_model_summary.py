"""Keras 3's model.summary(): the rows and columns Keras prints (Layer (type), Output Shape,
Param #, Connected to for a functional model that is not a chain, Trainable with
show_trainable), nested models' layers under them with expand_nested, and the totals with
their sizes. The table is drawn in plain characters (Keras draws it with rich).

A functional model's graph lives in C++: its rows come from the C++ summary text
(src/train/functional.cpp, FunctionalGraph::summary), put in Keras' order, the layers of a
depth-first walk from the outputs along each layer's inputs."""
import re

import numpy as _np

# " name (Type)", the output shape(s), the parameter count, then what it is connected to; the
# C++ pads columns without truncating, so a long cell may run into the next one.
_ROW = re.compile(r"^ (?P<name>\S+) \((?P<type>[^)]*)\)\s*(?P<shape>\(.*\))\s*(?P<params>[\d,]+)\s*(?P<conn>.*)$")
_CALL = re.compile(r"([^\s,\[\]]+)\[\d+\]\[\d+\]")


class _Row:
    def __init__(self, name, type_name, shape, params, connections, layer):
        self.name, self.type_name, self.shape, self.params = name, type_name, shape, params
        self.connections, self.layer = connections, layer


def _type_name(layer):
    if getattr(layer, "_is_functional", False) and type(layer).__name__ == "Model":
        return "Functional"  # Keras' class for Model(inputs, outputs)
    if type(layer).__module__.startswith("eagerflow._core"):
        return layer._type_name()
    return type(layer).__name__


def _shape_text(shape):
    if shape is None:
        return "?"
    dims = ["None" if d is None else str(d) for d in shape]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def _count(weights):
    seen, n = set(), 0
    for w in weights:
        if id(w) not in seen:  # a shared weight counts once
            seen.add(id(w))
            n += int(_np.prod(w.shape))
    return n


def _bytes(weights):
    seen, n = set(), 0
    for w in weights:
        if id(w) not in seen:
            seen.add(id(w))
            n += int(_np.prod(w.shape)) * _np.dtype(w.dtype.as_numpy_dtype).itemsize
    return n


def _readable(size):
    """Keras' readable_memory_size: 1024-based units with two decimals."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size / 1024 < 1:
            return f"{size:.2f} {unit}"
        size /= 1024
    return f"{size:.2f} PB"


def _layer_named(model, name):
    try:
        return model.get_layer(name)
    except (ValueError, KeyError, IndexError):
        return None


def _functional_rows(model):
    rows, by_name = [], {}
    for line in model._summary_text().splitlines():
        m = _ROW.match(line)
        if not m:
            continue
        conn = m.group("conn").strip()
        parents = [] if conn in ("", "-") else _CALL.findall(conn)
        name = m.group("name")
        if name in by_name:  # a shared layer: one row, every call's inputs
            by_name[name].connections += parents
            by_name[name].conn_text += ", " + conn
            continue
        layer = None if m.group("type") == "InputLayer" else _layer_named(model, name)
        row = _Row(name, m.group("type"), m.group("shape"), int(m.group("params").replace(",", "")), parents, layer)
        row.conn_text = conn or "-"
        rows.append(row)
        by_name[name] = row
    # Keras' layer order: a depth-first walk from the outputs, each layer after its inputs.
    consumed = {p for r in rows for p in r.connections}
    ordered, seen = [], set()

    def visit(row):
        if row.name in seen:
            return
        seen.add(row.name)
        for parent in row.connections:
            if parent in by_name:
                visit(by_name[parent])
        ordered.append(row)

    for row in rows:
        if row.name not in consumed:
            visit(row)
    for row in rows:  # anything the walk missed keeps the C++ order
        visit(row)
    return ordered


def _chain_like(rows):
    """Keras' sequential_like for a functional model: one input, each layer fed by one tensor
    and feeding at most one layer, no layer called twice."""
    inputs = [r for r in rows if r.type_name == "InputLayer"]
    if len(inputs) != 1:
        return False
    fed = [p for r in rows for p in r.connections]
    return (all(len(r.connections) == 1 for r in rows if r.type_name != "InputLayer")
            and len(fed) == len(set(fed)))


def _plain_rows(model):
    rows = []
    for layer in model.layers:
        rows.append(_Row(layer.name, _type_name(layer), _shape_text(layer._output_shape), _count(layer.weights), [],
                         layer))
        rows[-1].conn_text = "-"
    return rows


def _rows_of(model):
    if getattr(model, "_is_functional", False):
        return _functional_rows(model)
    return _plain_rows(model)


def _trainable_mark(row):
    layer = row.layer
    if layer is None or not list(layer.weights):
        return "-"
    return "Y" if layer.trainable else "N"


def _is_model(layer):
    from ._training import _Training
    return isinstance(layer, _Training)


def summary(model, line_length=None, positions=None, print_fn=None, expand_nested=False, show_trainable=False,
            layer_range=None):
    """model.summary as Keras 3 prints it (see the module's docstring); line_length and
    positions only shape Keras' drawing and are taken without effect here."""
    model._ef_build_from_input()
    print_fn = print_fn or print
    rows = _rows_of(model)
    chain = not getattr(model, "_is_functional", False) or _chain_like(rows)
    if layer_range is not None:
        names = [r.name for r in rows]
        if len(layer_range) != 2 or any(n not in names for n in layer_range):
            raise ValueError(f"layer_range must be a list of two layer names of the model, got {layer_range}")
        rows = rows[names.index(layer_range[0]):names.index(layer_range[1]) + 1]

    header = ["Layer (type)", "Output Shape", "Param #"] + ([] if chain else ["Connected to"])
    header += ["Trainable"] if show_trainable else []
    table = []

    def add(row, level, outer):
        prefix = "   " * level + "└ " if level else ""
        cells = [f"{prefix}{row.name} ({row.type_name})", row.shape, f"{row.params:,}"]
        if not chain:
            cells.append(row.conn_text if outer else "-")  # Keras finds no connection for a nested layer
        if show_trainable:
            cells.append(_trainable_mark(row))
        table.append(cells)
        if expand_nested and row.layer is not None and _is_model(row.layer) and row.layer.layers:
            for inner in _rows_of(row.layer):
                add(inner, level + 1, False)

    for row in rows:
        add(row, 0, True)
    widths = [max(len(c) for c in col) + 2 for col in zip(header, *table)]
    right = {2}  # Keras right-aligns the counts

    def line(cells):
        return "".join(" " + (c.rjust(w - 2) if i in right else c.ljust(w - 2)) + " "
                       for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    rule = "_" * sum(widths)
    out = [f'Model: "{model.name}"', rule, line(header), "=" * sum(widths)]
    for i, cells in enumerate(table):
        out.append(line(cells))
        out.append("_" * sum(widths) if i + 1 < len(table) else "=" * sum(widths))
    if not table:
        out.append("=" * sum(widths))
    trainable, frozen = list(model.trainable_weights), list(model.non_trainable_weights)
    out += [f" Total params: {_count(trainable) + _count(frozen):,} ({_readable(_bytes(trainable) + _bytes(frozen))})",
            f" Trainable params: {_count(trainable):,} ({_readable(_bytes(trainable))})",
            f" Non-trainable params: {_count(frozen):,} ({_readable(_bytes(frozen))})"]
    print_fn("\n".join(out))


__all__ = ["summary"]
