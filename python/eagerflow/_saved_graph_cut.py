"""The one graph that tf.saved_model.save traces for a tf.Module, cut into one function per trace.

The graph (saved_model.json's "serving_default", written by ef::save of the private layer in
_saved_module_save.py) holds, for each trace j: a `print` node marking its begin, the ops that
make stand-ins of its inputs, a print per input ("in:j:k", its input: the stand-in), a "body"
mark, the trace's ops, a print per result ("out:j:k") and an "end" mark; and first, a print per
saved variable ("var:i") whose input is that variable's read. Cutting keeps a trace's body,
makes the marked stand-ins its inputs, and copies in the nodes of earlier parts whose values it
uses (variable reads a trace reuses), renumbering the values.
"""


def node_ids(graph):
    produced = {}
    for n, node in enumerate(graph["nodes"]):
        for o in node["outputs"]:
            produced[o] = n
    return produced


def cut(graph, mark):
    """The marked parts of the one traced graph: per trace (begin, body nodes, input ids, output
    ids), and the variable index of each marked variable."""
    nodes = graph["nodes"]
    produced = node_ids(graph)
    var_of = {}
    parts = {}
    for n, node in enumerate(nodes):
        if not is_marker(node, mark):
            continue
        kind, *rest = node["pieces"][0][len(mark):].split(":")
        if kind == "var":
            src = nodes[produced[node["inputs"][0]]]
            if src["op"] != "read_variable":
                raise RuntimeError("tf.saved_model.save: a variable's read was not found in the traced graph")
            var_of[int(rest[0])] = src["variable"]
            continue
        j = int(rest[0])
        p = parts.setdefault(j, {"inputs": [], "outputs": []})
        if kind in ("begin", "body", "end"):
            p[kind] = n
        elif kind == "in":
            p["inputs"].append(node["inputs"][0])
        elif kind == "out":
            p["outputs"].append(node["inputs"][0])
    return parts, var_of


def is_marker(node, mark):
    pieces = node.get("pieces") if node["op"] == "print" else None
    return bool(pieces) and isinstance(pieces[0], str) and pieces[0].startswith(mark)


def drop_custom_gradients(graph):
    """TF's experimental_custom_gradients=False: custom gradient nodes pass their outputs on."""
    subst = {}
    kept = []
    for node in graph["nodes"]:
        node["inputs"] = [subst.get(i, i) for i in node["inputs"]]
        for key, subs in (("scan", ("body",)), ("cond", ("then", "else")), ("while", ("cond", "body"))):
            if key in node:
                for s in subs:
                    drop_custom_gradients(node[key][s])
        if node["op"] == "custom_gradient":
            attrs = dict(a.split("=", 1) for a in node["attrs"].split() if "=" in a)
            n_in = int(attrs.get("inputs", 0))
            for k, o in enumerate(node["outputs"]):
                subst[o] = node["inputs"][n_in + k]
            continue
        kept.append(node)
    graph["nodes"] = kept
    graph["outputs"] = [subst.get(o, o) for o in graph["outputs"]]


def has_custom_gradient(graph):
    for node in graph["nodes"]:
        if node["op"] == "custom_gradient":
            return True
        for key, subs in (("scan", ("body",)), ("cond", ("then", "else")), ("while", ("cond", "body"))):
            if key in node and any(has_custom_gradient(node[key][s]) for s in subs):
                return True
    return False


def function_graph(graph, part, mark, where):
    """One trace's graph: its body (and the reads it shares with earlier parts) over its inputs."""
    nodes = graph["nodes"]
    produced = node_ids(graph)
    constant_key = {c["value"]: c["tensor"] for c in graph["constants"]}
    inputs = part["inputs"]
    end = part.get("end", len(nodes))
    body = [n for n in range(part["body"] + 1, end) if not is_marker(nodes[n], mark)]
    defined = set(inputs) | set(constant_key)
    for n in body:
        defined.update(nodes[n]["outputs"])
    needed = []
    outer_input = set(graph["inputs"])

    def need(value):
        if value in defined:
            return
        if value in outer_input or value not in produced:
            raise RuntimeError(f"tf.saved_model.save: {where} uses a value it does not make (internal error)")
        n = produced[value]
        node = nodes[n]
        defined.update(node["outputs"])
        for i in node["inputs"]:
            need(i)
        needed.append(n)

    for n in body:
        for i in nodes[n]["inputs"]:
            need(i)
    for o in part["outputs"]:
        need(o)
    order = sorted(needed) + body
    ids = {}
    values = []

    def new(v):
        if v not in ids:
            ids[v] = len(values)
            values.append(graph["values"][v])
        return ids[v]

    new_inputs = [new(v) for v in inputs]
    constants = {}

    def use(v):
        if v in constant_key and v not in inputs:
            constants[v] = constant_key[v]
        return new(v)

    new_nodes = []
    for n in order:
        node = dict(nodes[n])
        node["inputs"] = [use(i) for i in node["inputs"]]
        node["outputs"] = [new(o) for o in node["outputs"]]
        new_nodes.append(node)
    new_outputs = [use(o) for o in part["outputs"]]
    return {"values": values, "inputs": new_inputs, "outputs": new_outputs,
            "constants": [{"value": ids[v], "tensor": k} for v, k in constants.items()], "nodes": new_nodes}
