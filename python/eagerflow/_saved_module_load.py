"""tf.saved_model.load of a saved tf.Module: the object tree again, without the Python classes.

Objects come back as _UserObject (TF's name for them) with the saved attribute names: submodules,
lists, tuples and dicts of them, variables (the loaded ones, which every function reads), and
restored functions. A restored function runs the saved trace whose argument structure the call
matches (ValueError listing the saved ones otherwise); `signatures` maps names to functions that
take tensors by keyword and return dicts, as TF's. Everything runs through the C++ loaded model
(ef::SavedModel): differentiable under GradientTape, callable inside ef.function.
"""
import inspect

from . import _core
from . import _saved_inputs


class _UserObject:
    """A loaded object: its saved attributes, restored."""

    def __init__(self):
        self._ef_variables = []
        self._ef_trainable_variables = []

    def __getattr__(self, name):
        # Properties as TF's Modules have them, unless an attribute of that name was saved.
        if name == "variables":
            return tuple(self.__dict__.get("_ef_variables", ()))
        if name == "trainable_variables":
            return tuple(self.__dict__.get("_ef_trainable_variables", ()))
        if name == "non_trainable_variables":
            return tuple(v for v in self.__dict__.get("_ef_variables", ()) if not v.trainable)
        raise AttributeError(f"'_UserObject' object has no attribute '{name}'")

    def __call__(self, *args, **kwargs):
        fn = self.__dict__.get("__call__")
        if fn is None:
            raise TypeError("'_UserObject' object is not callable")
        return fn(*args, **kwargs)


class RestoredFunction:
    """A loaded tf.function: calls the saved trace that fits the arguments."""

    def __init__(self, saved, name, parameters, concrete):
        self._saved = saved
        self.__name__ = name.rsplit(".", 1)[-1] if name else "function"
        self._name = name
        self._signature = None
        self._parameters = parameters
        if parameters is not None:
            params = []
            for p in parameters:
                kind = inspect._ParameterKind(p["kind"])
                default = _saved_inputs._from_json_static(p["default"]) if "default" in p else inspect.Parameter.empty
                params.append(inspect.Parameter(p["name"], kind, default=default))
            try:
                sig = inspect.Signature(params)
                if not any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
                    self._signature = sig
            except ValueError:
                pass
        self._concrete = [(_saved_inputs.template_from_json(c["inputs"]), c["graph"], c["outputs"]) for c in concrete]

    def _canonical(self, args, kwargs):
        if self._signature is None:
            return args, dict(sorted(kwargs.items()))
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError:
            return None
        bound.apply_defaults()
        return tuple(bound.args), dict(bound.kwargs)

    def __call__(self, *args, **kwargs):
        canonical = self._canonical(args, kwargs)
        if canonical is not None:
            for template, graph, outputs in self._concrete:
                flat = _saved_inputs.match(template, *canonical)
                if flat is not None:
                    results = self._saved.run(graph, flat)
                    return _saved_inputs.rebuild_output(outputs, results)
        options = "\n\n".join(f"Option {i + 1}:\n" + _saved_inputs.describe_template(t)
                              for i, (t, _, _) in enumerate(self._concrete))
        shown = canonical if canonical is not None else (args, kwargs)
        raise ValueError("Could not find matching concrete function to call loaded from the SavedModel. Got:\n"
                         f"{_saved_inputs.describe_call(*shown)}\n\n Expected these arguments to match one of "
                         f"the following {len(self._concrete)} option(s):\n\n{options}")

    @property
    def concrete_functions(self):
        return [self._saved.concrete_function(g) for _, g, _ in self._concrete]

    def __repr__(self):
        return f"<RestoredFunction {self._name} ({len(self._concrete)} concrete functions)>"


class SignatureFunction:
    """A loaded signature: tensors by keyword (or one positional when it takes one), a dict of
    tensors back."""

    def __init__(self, saved, key, entry):
        from ._saved_inputs import spec_from_json
        self._saved = saved
        self.name = key
        self._graph = entry["graph"]
        self._inputs = [spec_from_json(s) for s in entry["inputs"]]
        self._outputs = dict(entry["outputs"])
        specs = saved.signature_specs(self._graph)[2]
        self.structured_input_signature = ((), {s.name: s for s in self._inputs})
        self.structured_outputs = {k: _core.TensorSpec(specs[i].shape, specs[i].dtype, k)
                                   for k, i in self._outputs.items()}

    def __call__(self, *args, **kwargs):
        names = [s.name for s in self._inputs]
        if args:
            if len(args) > 1 or len(names) != 1 or kwargs:
                raise TypeError(f"signature {self.name!r} takes its inputs by keyword ({', '.join(names)}); got "
                                f"{len(args)} positional arguments")
            kwargs = {names[0]: args[0]}
        missing = [n for n in names if n not in kwargs]
        extra = [k for k in kwargs if k not in names]
        if missing or extra:
            what = f"missing a required argument: {missing[0]!r}" if missing else f"unexpected argument {extra[0]!r}"
            raise TypeError(f"Binding inputs to signature {self.name!r} failed: {what} (it takes "
                            f"{', '.join(names)})")
        flat = []
        for s in self._inputs:
            v = kwargs[s.name]
            if not isinstance(v, (_core.Tensor, _core.Variable)):
                raise TypeError(f"signature {self.name!r}: expected argument {s.name!r} to be a Tensor; got "
                                f"{type(v).__name__} ({v!r})")
            t = _saved_inputs._as_tensor_for(v, s)
            if t is None:
                raise ValueError(f"signature {self.name!r}: argument {s.name!r} is "
                                 f"{v.dtype.name}{list(v.shape)}, which does not fit "
                                 f"{_saved_inputs._tf_spec_repr(s)}")
            flat.append(t)
        return self._call_flat(*flat)

    def _call_flat(self, *flat):
        results = self._saved.run(self._graph, list(flat))
        return {k: results[i] for k, i in self._outputs.items()}

    def __repr__(self):
        ins = ", ".join(f"{s.name}: {_saved_inputs._tf_spec_repr(s)}" for s in self._inputs)
        return f"<ConcreteFunction (*, {ins}) -> Dict[{', '.join(map(repr, self._outputs))}]>"


class _SignatureMap(dict):
    def __repr__(self):
        return f"_SignatureMap({dict.__repr__(self)})"

    def _readonly(self, *args, **kwargs):
        raise TypeError("a loaded model's signatures cannot be changed")

    __setitem__ = __delitem__ = update = pop = popitem = clear = setdefault = _readonly


def restore(saved, meta):
    """The object tree saved in `meta` ("objects", "signatures"), over the loaded model."""
    by_key = saved.variables
    keys = list(meta["variable_keys"])
    variables = [by_key[k] for k in keys]
    objects = meta["objects"]
    made = [None] * len(objects)
    for i, o in enumerate(objects):
        kind = o["kind"]
        if kind == "variable":
            made[i] = variables[o["variable"]]
        elif kind == "function":
            made[i] = RestoredFunction(saved, o["name"], o["parameters"], o["concrete"])
        elif kind == "list":
            made[i] = []
        elif kind == "dict":
            made[i] = {}
        elif kind == "tuple":
            made[i] = None  # made once its children are
        else:
            made[i] = _UserObject()

    def build(i, stack):
        o = objects[i]
        if o["kind"] == "tuple" and made[i] is None:
            if i in stack:
                raise ValueError("a saved tuple contains itself (the file is damaged)")
            made[i] = tuple(build(c, stack | {i}) for _, c in o["children"])
        return made[i]

    for i, o in enumerate(objects):
        children = o.get("children", [])
        if o["kind"] == "list":
            made[i].extend(build(c, {i}) for _, c in children)
        elif o["kind"] == "dict":
            made[i].update((name, build(c, {i})) for name, c in children)
        elif o["kind"] == "object":
            obj = made[i]
            for name, c in children:
                obj.__dict__[name] = build(c, {i})
            obj._ef_variables = [variables[v] for v in o.get("variables", [])]
            obj._ef_trainable_variables = [variables[v] for v in o.get("trainable_variables", [])]
    root = build(0, set())
    if isinstance(root, _UserObject):
        sigs = _SignatureMap()
        dict.update(sigs, {k: SignatureFunction(saved, k, e) for k, e in meta.get("signatures", {}).items()})
        root.__dict__["signatures"] = sigs
    return root
