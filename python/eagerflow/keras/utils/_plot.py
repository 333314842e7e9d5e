"""keras.utils.plot_model and model_to_dot: the layer graph of a Sequential or functional model
drawn by Graphviz's `dot` program (a PNG, SVG, PDF, ... by the file's extension)."""
import os
import shutil
import subprocess


def _escape(text):
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _shape_text(shape):
    if shape is None:
        return "?"
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _layer_label(layer, show_shapes, show_dtype, show_layer_names, show_layer_activations, show_trainable):
    kind = layer._type_name() if type(layer).__module__.startswith("eagerflow._core") and hasattr(
        layer, "_type_name") else type(layer).__name__
    title = f"{layer.name} ({kind})" if show_layer_names else kind
    rows = [f'<tr><td colspan="2" bgcolor="black"><font color="white"><b>{_escape(title)}</b></font></td></tr>']
    config = {}
    try:
        config = layer.get_config()
    except Exception:  # noqa: BLE001 - a layer without a config shows no activation or dtype
        pass
    if show_layer_activations and isinstance(config.get("activation"), str):
        rows.append(f'<tr><td colspan="2">Activation: {_escape(config["activation"])}</td></tr>')
    if show_dtype:
        dtype = config.get("dtype")
        if isinstance(dtype, dict):
            dtype = dtype.get("config", {}).get("name")
        rows.append(f'<tr><td colspan="2">dtype: {_escape(dtype or "?")}</td></tr>')
    if show_shapes:
        rows.append(f'<tr><td>Output shape: {_escape(_shape_text(getattr(layer, "_output_shape", None)))}</td></tr>')
    if show_trainable:
        rows.append(f'<tr><td colspan="2">Trainable: {"Y" if layer.trainable else "N"}</td></tr>')
    return '<<table border="0" cellborder="1" cellspacing="0">' + "".join(rows) + "</table>>"


def _graph(model):
    """(nodes [(id, layer or input dict)], edges [(from id, to id)]) of the model's layers."""
    config = model.get_config()
    layers = list(model.layers)
    if "nodes" in config:  # functional: tensors 0.. are the inputs, then one per node, in order
        inputs = [(f"input_{i}", spec) for i, spec in enumerate(config["inputs"])]
        nodes = inputs + [(f"layer_{i}", layers[n["layer"]]) for i, n in enumerate(config["nodes"])]
        edges = []
        for i, n in enumerate(config["nodes"]):
            for tensor, _ in n["args"]:
                edges.append((nodes[tensor][0], f"layer_{i}"))
        return nodes, edges
    nodes = []
    if "build_input" in config:
        nodes.append(("input_0", {"name": "input_layer", "shape": config["build_input"]["shape"],
                                  "dtype": config["build_input"]["dtype"]}))
    nodes += [(f"layer_{i}", layer) for i, layer in enumerate(layers)]
    return nodes, [(a[0], b[0]) for a, b in zip(nodes, nodes[1:])]


def _dot_text(model, show_shapes, show_dtype, show_layer_names, rankdir, dpi, show_layer_activations, show_trainable,
              splines):
    from ..._training import Model, Sequential
    if not isinstance(model, (Model, Sequential)):
        raise ValueError(f"plot_model: expected a Sequential or functional Model, got {type(model).__name__}")
    if isinstance(model, Model) and not model._is_functional:
        raise ValueError("plot_model: a subclassed Model has no layer graph to draw (its call() is Python code); "
                         "use a Sequential or functional model")
    model._ef_build_from_input()
    nodes, edges = _graph(model)
    lines = [f'digraph "{_escape(model.name)}" {{', f'  graph [rankdir={rankdir}, dpi={int(dpi)}, splines={splines}];',
             '  node [shape=plaintext, fontname="Helvetica"];']
    for node_id, item in nodes:
        if isinstance(item, dict):  # an input
            title = f"{item.get('name', 'input')} (InputLayer)" if show_layer_names else "InputLayer"
            rows = [f'<tr><td bgcolor="black"><font color="white"><b>{_escape(title)}</b></font></td></tr>']
            if show_dtype:
                rows.append(f"<tr><td>dtype: {_escape(item.get('dtype'))}</td></tr>")
            if show_shapes:
                rows.append(f"<tr><td>Output shape: {_escape(_shape_text(item.get('shape')))}</td></tr>")
            label = '<<table border="0" cellborder="1" cellspacing="0">' + "".join(rows) + "</table>>"
        else:
            label = _layer_label(item, show_shapes, show_dtype, show_layer_names, show_layer_activations,
                                 show_trainable)
        lines.append(f"  {node_id} [label={label}];")
    lines += [f"  {a} -> {b};" for a, b in edges]
    lines.append("}")
    return "\n".join(lines) + "\n"


def model_to_dot(model, show_shapes=False, show_dtype=False, show_layer_names=True, rankdir="TB", expand_nested=False,
                 dpi=200, subgraph=False, show_layer_activations=False, show_trainable=False, splines="ortho",
                 **kwargs):
    """The model's graph as a pydot.Dot (pydot is needed, as Keras)."""
    try:
        import pydot
    except ImportError:
        raise ImportError("You must install pydot (`pip install pydot`) for model_to_dot to work.") from None
    text = _dot_text(model, show_shapes, show_dtype, show_layer_names, rankdir, dpi, show_layer_activations,
                     show_trainable, splines)
    return pydot.graph_from_dot_data(text)[0]


def plot_model(model, to_file="model.png", show_shapes=False, show_dtype=False, show_layer_names=False, rankdir="TB",
               expand_nested=False, dpi=200, show_layer_activations=False, show_trainable=False, splines="ortho",
               **kwargs):
    """Draws the model's layer graph into to_file with Graphviz's `dot` (format from the
    extension: png, svg, pdf, jpg, dot, ...); in a notebook, returns the PNG to display."""
    if kwargs:
        raise TypeError(f"plot_model: unrecognized keyword arguments: {sorted(kwargs)}")
    text = _dot_text(model, show_shapes, show_dtype, show_layer_names, rankdir, dpi, show_layer_activations,
                     show_trainable, splines)
    to_file = os.fspath(to_file)
    _, extension = os.path.splitext(to_file)
    extension = extension[1:] if extension else "png"
    if extension == "dot":
        with open(to_file, "w") as f:
            f.write(text)
    else:
        dot = shutil.which("dot")
        if dot is None:
            raise ImportError("You must install graphviz (see instructions at https://graphviz.gitlab.io/download/) "
                              "for `plot_model` to work.")
        done = subprocess.run([dot, f"-T{extension}", "-o", to_file], input=text.encode(), capture_output=True,
                              check=False)
        if done.returncode != 0:
            raise ValueError(f"plot_model: Graphviz could not write '{to_file}': {done.stderr.decode().strip()}")
    if extension != "pdf":
        try:
            from IPython import display
            return display.Image(filename=to_file)
        except ImportError:
            pass
    return None
