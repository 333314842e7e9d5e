"""A traced ef.function graph as TF's GraphDef, for TensorBoard's graph dashboard
(tf.summary.trace_export).

The graph is read from its text form (ConcreteFunction.traced_graph / .graph, the jaxpr-like
text of src/trace/graph_print.cpp): `name:type` declarations, one node per line, attributes in
brackets that may hold nested graphs (cond branches, loop bodies), which are kept as a node's
attribute text rather than expanded."""
import re as _re

from ._example_proto import _ld
from ._summary_events import DATA_TYPE, string_field, varint_field

_DECL = _re.compile(r"^(.+):([a-z]+\d*)\[([0-9?,]*)\]$")


def _split_top(text):
    """Statements of a graph's body: lists of tokens split at whitespace outside brackets and
    quotes; a newline outside them ends a statement."""
    statements, tokens, cur, depth, quote = [], [], [], 0, False
    i = 0
    while i < len(text):
        c = text[i]
        if quote:
            cur.append(c)
            if c == "\\" and i + 1 < len(text):
                cur.append(text[i + 1])
                i += 1
            elif c == '"':
                quote = False
        elif c == '"':
            quote = True
            cur.append(c)
        elif c in "([{":
            depth += 1
            cur.append(c)
        elif c in ")]}":
            depth -= 1
            cur.append(c)
        elif depth == 0 and c in " \n":
            if cur:
                tokens.append("".join(cur))
                cur = []
            if c == "\n" and tokens:
                statements.append(tokens)
                tokens = []
        else:
            cur.append(c)
        i += 1
    if cur:
        tokens.append("".join(cur))
    if tokens:
        statements.append(tokens)
    return statements


def _decl(token):
    m = _DECL.match(token)
    if m is None or m.group(2) not in DATA_TYPE:
        return None
    dims = [-1 if d == "?" else int(d) for d in m.group(3).split(",") if d]
    return m.group(1), m.group(2), dims


def parse(text):
    """(inputs, nodes, outputs) of a graph's text: inputs and constants as (name, dtype, dims);
    nodes as (op, attrs, [(name, dtype, dims)] outputs, [input names]); outputs as names."""
    text = text.strip()
    if not text.startswith("{ lambda ") or ". let\n" not in text:
        raise ValueError("not a traced graph's text")
    head, body = text[len("{ lambda "):].split(". let\n", 1)
    body = "\n" + body  # a graph without nodes: its body is the `in (...)` line alone
    constvars, _, inputs = head.partition(";")
    end = body.rfind("\n  in (")
    outputs = [o.strip() for o in body[end + len("\n  in ("):].rstrip("} ").rstrip(")").split(",") if o.strip()]
    nodes = []
    for st in _split_top(body[:end]):
        outs = []
        if "=" in st:
            at = st.index("=")
            outs, st = [_decl(t) for t in st[:at]], st[at + 1:]
        op, attrs = st[0], ""
        if "[" in op:
            op, attrs = op.split("[", 1)
            attrs = attrs[:-1]
        nodes.append((op, attrs, outs, st[1:]))
    return ([_decl(t) for t in constvars.split()], [_decl(t) for t in inputs.split()], nodes, outputs)


def _shape(dims):
    return b"".join(_ld(2, varint_field(1, d)) for d in dims)


def _attr(key, value_bytes):
    return _ld(5, string_field(1, key) + _ld(2, value_bytes))


def _out_attrs(decls):
    out = _attr("_output_shapes", _ld(1, b"".join(_ld(7, _shape(d[2])) for d in decls)))
    if decls:
        out += _attr("T", varint_field(6, DATA_TYPE[decls[0][1]]))
    return out


def _clean(name):
    """TensorBoard splits node names at '/' into scopes; other characters it does not expect
    become '_' (and a variable's ':0' goes)."""
    name = _re.sub(r":\d+$", "", name)
    return _re.sub(r"[^A-Za-z0-9_.\-/]", "_", name).strip("/") or "_"


def graph_def(text, input_names=()):
    """GraphDef bytes of a traced graph's text. input_names name the placeholders (the
    function's parameters) when there is one per input."""
    constvars, inputs, nodes, outputs = parse(text)
    used, source, out = {}, {}, []

    def unique(base):
        n = used.get(base, 0)
        used[base] = n + 1
        return base if n == 0 else f"{base}_{n}"

    def node(name, op, inputs_=(), attrs=b""):
        out.append(string_field(1, name) + string_field(2, op) + b"".join(string_field(3, i) for i in inputs_) + attrs)

    names = list(input_names) if len(input_names) == len(inputs) else [d[0] for d in inputs]
    for (value, dt, dims), pname in zip(inputs, names):
        source[value] = n = unique(_clean(pname))
        node(n, "Placeholder", (), _attr("dtype", varint_field(6, DATA_TYPE[dt])) + _attr("shape", _ld(7, _shape(dims)))
             + _out_attrs([(value, dt, dims)]))
    for value, dt, dims in constvars:
        source[value] = n = unique("Const")
        node(n, "Const", (), _attr("dtype", varint_field(6, DATA_TYPE[dt])) + _out_attrs([(value, dt, dims)]))

    def ref(token):
        """The node output a token names, made on first use for literals and variables."""
        if token not in source:
            lit = _decl(token)
            if lit is not None:  # a scalar literal: 1.5:f32[]
                n = unique("Const")
                node(n, "Const", (), _attr("dtype", varint_field(6, DATA_TYPE[lit[1]])) + _attr("value_text", string_field(2, lit[0]))
                     + _out_attrs([lit]))
            else:  # a variable, by its name
                n = unique(_clean(token))
                node(n, "VarHandleOp", (), _attr("shared_name", string_field(2, token)))
            source[token] = n
        return source[token]

    for op, attrs, outs, ins in nodes:
        inputs_ = [ref(t) for t in ins]
        n = unique(_clean(op))
        extra = _attr("attrs", string_field(2, attrs[:4096])) if attrs else b""
        node(n, op, inputs_, extra + _out_attrs(outs))
        for k, (value, _, _) in enumerate(outs):
            source[value] = n if k == 0 else f"{n}:{k}"
    for k, value in enumerate(outputs):
        node(unique("Identity"), "Identity", [ref(value)])
    return b"".join(_ld(1, n) for n in out) + _ld(4, varint_field(1, 1))


def run_metadata(graphs):
    """RunMetadata bytes holding (pre-optimization, post-optimization) GraphDef pairs, as
    tf.summary.trace_export writes them (TensorBoard draws the pre-optimization graphs)."""
    return b"".join(_ld(4, _ld(2, pre) + _ld(3, post)) for pre, post in graphs)
