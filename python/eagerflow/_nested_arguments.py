"""A tf.function input_signature whose entries are structures (a tuple or dict of TensorSpecs
for one argument, as TF takes, e.g. a distributed dataset's element_spec).

The C++ function cache matches one spec per argument, so such a function gives it each
argument's tensors as arguments of their own (flattened as tf.nest does: dicts by sorted key),
and a trace packs them back into the argument's structure before the Python function runs."""
from . import _core


class NestedSignature:
    def __init__(self, signature, arg_names):
        from . import nest
        self.signature = list(signature)
        self.flat_specs, self.flat_names, self.sizes = [], [], []
        for i, spec in enumerate(self.signature):
            name = arg_names[i] if i < len(arg_names) else f"arg_{i}"
            leaves = [spec] if isinstance(spec, _core.TensorSpec) else nest.flatten(spec)
            if not all(isinstance(s, _core.TensorSpec) for s in leaves):
                raise TypeError(f"input_signature must be a possibly nested sequence of TensorSpec objects, got "
                                f"{spec!r} for argument {name!r}")
            self.flat_specs.extend(leaves)
            self.flat_names.extend([name] if len(leaves) == 1 else [f"{name}_{j}" for j in range(len(leaves))])
            self.sizes.append(len(leaves))

    @staticmethod
    def of(signature, arg_names):
        """The nested signature, or None for a flat one (or none)."""
        if signature is None or all(isinstance(s, _core.TensorSpec) for s in signature):
            return None
        return NestedSignature(signature, arg_names)

    def flatten(self, function_name, args, kwargs):
        """The arguments (bound in parameter order) as the flat tensors the C++ cache matches."""
        from . import nest
        args = tuple(args) + tuple(kwargs.values())
        if len(args) != len(self.signature):
            raise TypeError(f"{function_name}: the input_signature has {len(self.signature)} arguments, "
                            f"the call gives {len(args)}")
        flat = []
        for i, (spec, arg) in enumerate(zip(self.signature, args)):
            if isinstance(spec, _core.TensorSpec):
                flat.append(arg)
                continue
            try:
                nest.assert_same_structure(spec, arg, check_types=False)
            except (TypeError, ValueError) as e:
                raise TypeError(f"{function_name}: argument {i} does not have the structure of the input_signature's "
                                f"{spec!r}: {e}") from None
            flat.extend(nest.flatten(arg))
        return tuple(flat)

    def pack(self, flat):
        """The flat arguments of a trace as the function's own arguments."""
        from . import nest
        out, k = [], 0
        for spec, n in zip(self.signature, self.sizes):
            part = list(flat[k:k + n])
            k += n
            out.append(part[0] if isinstance(spec, _core.TensorSpec) else nest.pack_sequence_as(spec, part))
        return tuple(out)
