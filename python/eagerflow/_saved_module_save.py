"""tf.saved_model.save of a tf.Module (or any object with tf.functions and variables).

What is saved, as TF saves it: the object tree found by walking attributes (submodules, lists,
tuples and dicts of them, variables), every ef.function attribute with each trace it has (a
function with an input_signature is traced now), and the signatures.

How, with the one saving entry point the Python bindings have (`_io._save(layer, dir, spec)`,
ef::save of a layer traced at one input spec): a private layer's call() makes, from its one
input, a stand-in tensor of each saved trace's input specs (dynamic dims included), calls each
function on them (the cached trace; one call node each, inlined by the writer), and marks with
`print` nodes which graph values are which function's inputs and results, and which variable is
which. The one graph written is then cut, in Python, into one function per trace: its marked
inputs become the function's inputs, the stand-ins' ops are dropped, and the values it shares
with earlier parts of the graph (variable reads) are copied in. The object tree, the argument
and result structures and the signatures go into saved_model.json under "objects" (ignored by
the C++ loader). With a binding of ef::save(functions, dir) this module would hand the traces
over directly instead.
"""
import json
import os
import secrets
import shutil
import warnings

from . import _core
from . import _saved_folder
from . import _saved_graph_cut as _graph_cut
from . import _saved_inputs
from . import _trackable
from ._function import Function

_io = _core._io
DEFAULT_SIGNATURE = "serving_default"


# ------------------------------------------------------------------ the object tree
def _restored_function_class():
    from ._saved_module_load import RestoredFunction
    return RestoredFunction


def _is_function(v):
    return isinstance(v, (Function, _core.ConcreteFunction, _restored_function_class()))


def _savable(v):
    from ._saved_module_load import _UserObject
    return _is_function(v) or isinstance(v, _UserObject) or (_trackable.is_trackable(v) and _holds_something(v))


def _holds_something(v):
    if isinstance(v, (list, tuple)):
        return any(_savable(x) for x in v)
    if isinstance(v, dict):
        return any(isinstance(k, str) and _savable(x) for k, x in v.items())
    return True


def _function_attributes(obj):
    """tf.functions defined on the object's class (methods), by name."""
    out = {}
    for klass in reversed(type(obj).__mro__):
        for name, v in vars(klass).items():
            if isinstance(v, Function):
                out[name] = None
            elif name in out:
                del out[name]
    return [(name, getattr(obj, name)) for name in out]


def _children(obj):
    if isinstance(obj, (list, tuple)):
        return [(str(i), v) for i, v in enumerate(obj) if _savable(v)]
    if isinstance(obj, dict):
        return [(k, v) for k, v in obj.items() if isinstance(k, str) and _savable(v)]
    if isinstance(obj, _core.Variable) or _is_function(obj):
        return []
    if isinstance(obj, _core.Layer):
        out = _trackable._layer_children(obj)
    else:
        d = getattr(obj, "__dict__", {})
        out = [(k, v) for k, v in d.items() if not k.startswith("_ef_") and _savable(v)]
    names = {k for k, _ in out}
    out += [(k, v) for k, v in _function_attributes(obj) if k not in names]
    return out


def _key(obj):
    return ("v", hash(obj)) if isinstance(obj, _core.Variable) else ("o", id(obj))


class _Tree:
    """The saved objects, each once (its first path), with the variables and functions found."""

    def __init__(self, root):
        self.nodes = []  # [obj]
        self.paths = []
        self.index = {}
        self.edges = {}  # node -> [(name, child node)]
        self.variables = []  # ef variables, in the order found
        self.variable_index = {}
        self.functions = []  # (node, Function or ConcreteFunction)
        self._add(root, "")
        i = 0
        while i < len(self.nodes):
            obj = self.nodes[i]
            self.edges[i] = [(name, self._add(child, f"{self.paths[i]}.{name}" if self.paths[i] else name))
                             for name, child in _children(obj)]
            i += 1
        for obj in self.nodes:
            if isinstance(obj, (list, tuple, dict, _core.Variable)) or _is_function(obj) or \
                    not hasattr(obj, "variables"):
                continue
            try:
                for v in list(obj.variables):
                    self._variable(v)
            except Exception:  # an object whose variables property fails: its attributes were walked
                pass

    def _variable(self, v):
        k = _key(v)
        if k not in self.variable_index:
            self.variable_index[k] = len(self.variables)
            self.variables.append(v)
        return self.variable_index[k]

    def _add(self, obj, path):
        k = _key(obj)
        if k in self.index:
            return self.index[k]
        self.index[k] = len(self.nodes)
        self.nodes.append(obj)
        self.paths.append(path)
        if isinstance(obj, _core.Variable):
            self._variable(obj)
        return self.index[k]


# ------------------------------------------------------------------ traces to save
def _parse_concrete_signature(cf):
    """[(name, TensorSpec)] of a concrete function's arguments (tensors only, as signatures take)."""
    from .dtypes import as_dtype
    text = cf.signature.strip()
    if not (text.startswith("(") and text.endswith(")")):
        raise ValueError(f"cannot read the signature {text!r} of {cf!r}")
    body = text[1:-1].strip()
    out = []
    if not body:
        return out
    parts, depth, cur = [], 0, ""
    for c in body:
        if c in "[({":
            depth += 1
        elif c in "])}":
            depth -= 1
        if c == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += c
    parts.append(cur)
    for p in parts:
        name, _, spec = p.strip().partition(": ")
        if "[" not in spec or not spec.endswith("]"):
            raise ValueError(f"the concrete function {cf.name!r} takes the non-tensor argument {p.strip()!r}: "
                             "functions that take Python values cannot be exported as signatures")
        dtype, dims = spec[:-1].split("[", 1)
        shape = [None if d == "?" else int(d) for d in dims.split(",") if d]
        out.append((name, _core.TensorSpec(shape, as_dtype(dtype), name)))
    return out


class _Trace:
    """One function call to save: `target(*args, **kwargs)` built from `template`."""

    def __init__(self, target, template, where):
        self.target = target
        self.template = template
        self.where = where
        self.graph_name = None
        self.tree = None  # the result structure, known once traced


def _templates_of(fn):
    if fn._input_signature is not None:
        specs = list(fn._input_signature)
        if not all(isinstance(s, _core.TensorSpec) for s in specs):
            raise ValueError(f"{fn!r}: only flat input signatures (a list of TensorSpecs) can be saved")
        names = list(fn._arg_names)
        return [(tuple(("T", _core.TensorSpec(s.shape, s.dtype, names[i] if i < len(names) else s.name))
                       for i, s in enumerate(specs)), {})]
    return _saved_inputs.traced_templates(fn)


def _owner_of(cf, functions):
    for fn in functions:
        if isinstance(fn, Function) and fn._core.name == cf.name:
            if any(c.signature == cf.signature for c in fn.concrete_functions):
                return fn
    return None


def _signature_trace(value, key, functions):
    """A signature's trace: a Function with an input_signature, or a concrete function."""
    if isinstance(value, Function) and value._input_signature is not None:
        template = _templates_of(value)[0]
        return _Trace(value, template, f"signature {key!r}")
    from ._saved_module_load import SignatureFunction
    if isinstance(value, SignatureFunction):
        return _Trace(value._call_flat, (tuple(("T", s) for s in value._inputs), {}), f"signature {key!r}")
    if isinstance(value, _core.ConcreteFunction):
        named = _parse_concrete_signature(value)
        template = (tuple(("T", s) for _, s in named), {})
        owner = _owner_of(value, functions)
        return _Trace(owner if owner is not None else value, template, f"signature {key!r}")
    raise ValueError("Expected a TensorFlow function for which to generate a signature, but got "
                     f"{value!r}. Only `tf.functions` with an input signature or concrete functions can be "
                     "used as a signature.")


# ------------------------------------------------------------------ the traced graph
def _stand_in(x, spec):
    """A tensor of `spec` computed from x (float32, one dynamic dim): every dynamic dim of spec
    is x's; its ops are dropped from the saved functions."""
    import eagerflow as ef
    shape = list(spec.shape)
    static = [1 if d is None else d for d in shape]
    t = ef.zeros(static, ef.float32) + ef.reshape(ef.reduce_sum(x), [1] * len(shape))
    for p, d in enumerate(shape):
        if d is None:
            r = [1] * len(shape)
            r[p] = -1
            t = t + ef.reshape(x, r)
    if spec.dtype.name == "string":
        raise ValueError("tf.saved_model.save: functions that take string tensors cannot be saved yet")
    return ef.cast(t, spec.dtype)


def _marker_layer(mark, variables, traces):
    import eagerflow as ef

    class _SaveAll(ef.keras.layers.Layer):
        def call(self, x):
            for i, v in enumerate(variables):
                ef.print(f"{mark}var:{i}", v)
            for j, tr in enumerate(traces):
                ef.print(f"{mark}begin:{j}")
                specs = _saved_inputs.template_specs(tr.template)
                flat = [_stand_in(x, s) for s in specs]
                for k, t in enumerate(flat):
                    ef.print(f"{mark}in:{j}:{k}", t)
                ef.print(f"{mark}body:{j}")
                args, kwargs = _saved_inputs.fill(tr.template, flat)
                out = tr.target(*args, **kwargs)
                results = []
                tr.tree = _saved_inputs.output_tree(out, results, tr.where)
                for k, t in enumerate(results):
                    ef.print(f"{mark}out:{j}:{k}", t)
                ef.print(f"{mark}end:{j}")
            return x

    return _SaveAll(name="ef_saved_module_" + secrets.token_hex(4))


# ------------------------------------------------------------------ save
def _signature_entries(signatures, root, tree):
    functions = [f for _, f in tree.functions]
    if signatures is None:
        from ._saved_module_load import _SignatureMap
        loaded = getattr(root, "__dict__", {}).get("signatures")
        if isinstance(loaded, _SignatureMap):  # a loaded model saved again keeps its signatures
            return dict(loaded), False
        # TF's rule: the root's function named _default_save_signature, else the one function
        # with an input signature (or concrete function) whose results make a signature. Which
        # ones do is known once traced: all are traced as candidates, and one kept (or none).
        candidates = {}
        for name, child in _children(root):
            if not isinstance(child, (Function, _core.ConcreteFunction)):
                continue
            if name == "_default_save_signature":
                return {DEFAULT_SIGNATURE: child}, False
            if isinstance(child, _core.ConcreteFunction) or child._input_signature is not None:
                candidates[f"candidate{len(candidates)}"] = child
        return candidates, True
    if not isinstance(signatures, dict):
        return {DEFAULT_SIGNATURE: signatures}, False
    return dict(signatures), False


def _trace_input_signatures(tree):
    """Traces each function with an input signature that has not been (TF traces them at save):
    outside any trace, so that variables their first trace makes are made as on a first call."""
    traced = False
    for obj in tree.nodes:
        if isinstance(obj, Function) and obj._input_signature is not None and not obj.concrete_functions:
            obj.get_concrete_function()
            traced = True
    return traced


def save_module(obj, export_dir, signatures=None, options=None):
    tree = _Tree(obj)
    if _trace_input_signatures(tree):
        tree = _Tree(obj)  # with the variables those traces made
    for node, child in enumerate(tree.nodes):
        if _is_function(child):
            tree.functions.append((node, child))
    function_names = {}
    traces = []
    entries = {}  # tree node -> [trace index]
    for node, fn in tree.functions:
        where = f"function {tree.paths[node]!r}"
        if isinstance(fn, _restored_function_class()):  # a loaded function saved again: its traces
            templates, target = [t for t, _, _ in fn._concrete], fn
        elif isinstance(fn, _core.ConcreteFunction):
            named = _parse_concrete_signature(fn)
            templates = [(tuple(("T", s) for _, s in named), {})]
            target = _owner_of(fn, [f for _, f in tree.functions]) or fn
        else:
            templates, target = _templates_of(fn), fn
        entries[node] = []
        for template in templates:
            _saved_inputs.template_json(template, where)  # a Python value that cannot be saved fails here
            entries[node].append(len(traces))
            traces.append(_Trace(target, template, where))
        function_names[node] = tree.paths[node]
    sig_values, tentative = _signature_entries(signatures, obj, tree)
    sig_traces = {}
    for key, value in sig_values.items():
        if not isinstance(key, str) or not key or ":" in key:
            raise ValueError(f"signature names must be non-empty strings without ':', got {key!r}")
        tr = _signature_trace(value, key, [f for _, f in tree.functions])
        sig_traces[key] = len(traces)
        traces.append(tr)

    mark = "\x1fef-saved-module-" + secrets.token_hex(8) + ":"
    layer = _marker_layer(mark, tree.variables, traces)
    custom_gradients = True if options is None else options.experimental_custom_gradients

    def write(staging):
        raw = os.path.join(staging, "raw")
        _io._save(layer, raw, _core.TensorSpec([None], _core_float32()))
        with open(os.path.join(raw, _saved_folder.JSON_FILE), "rb") as f:
            saved = json.loads(f.read())
        graph = saved["functions"][0]["graph"]
        parts, var_of = _graph_cut.cut(graph, mark)
        skipped = set()
        if tentative:
            valid = [t for t in sig_traces.values() if _saved_inputs.signature_outputs(traces[t].tree)[0]]
            skipped = set(sig_traces.values()) - set(valid[:1] if len(valid) == 1 else [])
            sig_traces.clear()
            if len(valid) == 1:
                sig_traces[DEFAULT_SIGNATURE] = valid[0]
        sig_names = {t: key for key, t in sig_traces.items()}
        functions = []
        uses_custom = []
        for j, tr in enumerate(traces):
            if j in skipped:
                continue
            g = _graph_cut.function_graph(graph, parts[j], mark, tr.where)
            if _graph_cut.has_custom_gradient(g):
                if custom_gradients:
                    uses_custom.append(tr.where)
                else:
                    _graph_cut.drop_custom_gradients(g)
            # A signature's graph has the signature's name (TFSMLayer and C++ load it by that name).
            tr.graph_name = sig_names.get(j) or f"{j}:{tr.where}"
            specs = _saved_inputs.template_specs(tr.template)
            inputs = [{"name": s.name or f"input_{k}", "spec": {"dtype": g["values"][v]["dtype"],
                                                                "shape": g["values"][v]["shape"]}}
                      for k, (s, v) in enumerate(zip(specs, g["inputs"]))]
            functions.append({"name": tr.graph_name, "inputs": inputs, "graph": g})
        if uses_custom:
            warnings.warn(f"tf.saved_model.save: {', '.join(sorted(set(uses_custom)))} uses a custom gradient, whose "
                          "rule (Python code) a saved model cannot hold: the loaded function's gradient is that of "
                          "its forward ops. Pass options=tf.saved_model.SaveOptions(experimental_custom_gradients="
                          "False) to save it so knowingly.", UserWarning, stacklevel=_user_stacklevel())
        saved["functions"] = functions
        saved["objects"] = _objects_json(tree, entries, traces, var_of, function_names)
        saved["signatures"] = _signatures_json(sig_traces, traces)
        saved["tags"] = ["serve"] + [t for t in (getattr(options, "extra_tags", None) or []) if t != "serve"]
        data = json.dumps(saved, separators=(",", ":")).encode()
        _saved_folder.write_file(os.path.join(staging, _saved_folder.JSON_FILE), data)
        os.rename(os.path.join(raw, _saved_folder.VARIABLES_FILE), os.path.join(staging, _saved_folder.VARIABLES_FILE))
        shutil.rmtree(raw)

    _saved_folder.write_atomically(export_dir, write)


def _user_stacklevel():
    """The stack level of the first frame outside this package (the user's save call)."""
    import sys
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def _core_float32():
    from .dtypes import float32
    return float32


def _parameters_json(fn):
    import inspect
    if isinstance(fn, _restored_function_class()):
        return fn._parameters
    target = fn.python_function if isinstance(fn, Function) else None
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    out = []
    for p in sig.parameters.values():
        entry = {"name": p.name, "kind": int(p.kind)}
        if p.default is not inspect.Parameter.empty:
            try:
                entry["default"] = _saved_inputs._json_static(p.default, "default")
            except ValueError:
                pass
        out.append(entry)
    return out


def _objects_json(tree, entries, traces, var_of, function_names):
    objs = []
    for i, obj in enumerate(tree.nodes):
        children = [[name, c] for name, c in tree.edges.get(i, [])]
        if isinstance(obj, _core.Variable):
            objs.append({"kind": "variable", "variable": var_of[tree.variable_index[_key(obj)]]})
        elif _is_function(obj):
            concrete = [{"graph": traces[t].graph_name,
                         "inputs": _saved_inputs.template_json(traces[t].template, traces[t].where),
                         "outputs": traces[t].tree} for t in entries[i]]
            objs.append({"kind": "function", "name": function_names[i],
                         "parameters": _parameters_json(obj),
                         "concrete": concrete})
        elif isinstance(obj, (list, tuple, dict)):
            kind = "dict" if isinstance(obj, dict) else "tuple" if isinstance(obj, tuple) else "list"
            objs.append({"kind": kind, "children": children})
        else:
            entry = {"kind": "object", "children": children}
            try:
                entry["variables"] = [var_of[tree.variable_index[_key(v)]] for v in obj.variables]
                entry["trainable_variables"] = [var_of[tree.variable_index[_key(v)]] for v in obj.trainable_variables]
            except Exception:
                pass
            objs.append(entry)
    return objs


def _signatures_json(sig_traces, traces):
    out = {}
    for key, t in sig_traces.items():
        tr = traces[t]
        outputs, problem = _saved_inputs.signature_outputs(tr.tree)
        if outputs is None:
            raise ValueError(f"Got {problem} in the output of the function used to generate the SavedModel "
                             f"signature {key!r}. Outputs for functions used as signatures must be a single Tensor, "
                             "a sequence of Tensors, or a dictionary from string to Tensor.")
        inputs = []
        for e in tr.template[0]:
            if e[0] != "T":
                raise ValueError(f"signature {key!r}: signatures take tensors only")
            inputs.append(_saved_inputs.spec_json(e[1]))
        out[key] = {"graph": tr.graph_name, "inputs": inputs, "outputs": outputs}
    return out
