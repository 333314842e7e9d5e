"""ef.nest, as tf.nest: nested structures of lists, tuples, namedtuples, dicts (any Mapping) and
attrs classes; everything else (tensors, strings, sets, None) is a leaf.

Dicts flatten in sorted key order (TF's rule: a dict's insertion order never changes the flat
order, so two dicts with equal keys always line up); pack_sequence_as gives values back under
the keys of the structure, in the structure's own key order. Errors are TF's classes with TF's
wording, so code that catches or prints them reads the same.
"""
import collections as _collections
import collections.abc as _abc

__all__ = ["flatten", "pack_sequence_as", "map_structure", "assert_same_structure", "is_nested"]


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _is_attrs(x):
    return hasattr(type(x), "__attrs_attrs__")


def is_nested(seq):
    """True for the containers nest walks into (list, tuple, namedtuple, Mapping, attrs object)."""
    return isinstance(seq, (list, tuple, _abc.Mapping)) or _is_attrs(seq)


def _sorted_keys(mapping):
    # TF refuses dicts whose keys do not sort (no order would be reproducible); its error is the
    # comparison's own TypeError.
    return sorted(mapping)


def _children(x):
    """(keys or indices, values) of a nested value, in flattening order."""
    if isinstance(x, _abc.Mapping):
        keys = _sorted_keys(x)
        return keys, [x[k] for k in keys]
    if _is_attrs(x):
        names = [a.name for a in type(x).__attrs_attrs__]
        return names, [getattr(x, n) for n in names]
    return list(range(len(x))), list(x)


def _flatten_into(x, out):
    if not is_nested(x):
        out.append(x)
        return
    for child in _children(x)[1]:
        _flatten_into(child, out)


def _refuse_composites(leaves, expand_composites):
    """expand_composites=True would split SparseTensors and RaggedTensors into their component
    tensors; that decomposition is not built, so it is refused rather than ignored."""
    if not expand_composites:
        return
    from .ragged import RaggedTensor
    from .sparse import SparseTensor
    for leaf in leaves:
        if isinstance(leaf, (SparseTensor, RaggedTensor)):
            raise NotImplementedError(f"ef.nest: expand_composites=True on a {type(leaf).__name__} (splitting it "
                                      "into its component tensors) is not supported")


def flatten(structure, expand_composites=False):
    """The leaves of `structure`, depth first (dicts by sorted key); a leaf alone is [leaf]."""
    out = []
    _flatten_into(structure, out)
    _refuse_composites(out, expand_composites)
    return out


def _flatten_with_tuple_paths(structure, path=()):
    """(path, leaf) pairs in flatten's order; a path is the tuple of keys and indices to the leaf."""
    if not is_nested(structure):
        return [(path, structure)]
    keys, values = _children(structure)
    out = []
    for k, v in zip(keys, values):
        out.extend(_flatten_with_tuple_paths(v, path + (k,)))
    return out


def _rebuild(instance, values):
    """A container like `instance` holding `values` (in flattening order)."""
    if isinstance(instance, _abc.Mapping):
        by_key = dict(zip(_sorted_keys(instance), values))
        if isinstance(instance, _collections.defaultdict):
            out = type(instance)(instance.default_factory)
            for k in instance:
                out[k] = by_key[k]
            return out
        return type(instance)((k, by_key[k]) for k in instance)
    if _is_namedtuple(instance):
        return type(instance)(*values)
    if _is_attrs(instance):
        return type(instance)(*values)
    return type(instance)(values)


def _count(structure):
    return len(flatten(structure))


def _pack(structure, flat, start):
    if not is_nested(structure):
        return flat[start], start + 1
    values = []
    for child in _children(structure)[1]:
        v, start = _pack(child, flat, start)
        values.append(v)
    return _rebuild(structure, values), start


def pack_sequence_as(structure, flat_sequence, expand_composites=False):
    """`flat_sequence` (a list of leaves, in flatten's order) arranged as `structure`."""
    if not isinstance(flat_sequence, (list, tuple)) and not (is_nested(flat_sequence)):
        raise TypeError(f"Attempted to pack value:\n  {flat_sequence}\ninto a structure, but found incompatible "
                        f"type `{type(flat_sequence)}` instead.")
    flat = list(flat_sequence)
    _refuse_composites(flatten(structure), expand_composites)
    if not is_nested(structure):
        if len(flat) != 1:
            raise ValueError(f"The target structure is of type `{type(structure)}`\n  {structure}\nHowever the input "
                             f"is a sequence ({type(flat_sequence)}) of length {len(flat)}.\n  {flat_sequence}\n"
                             "nest cannot guarantee that it is safe to map one to the other.")
        return flat[0]
    n = _count(structure)
    if n != len(flat):
        raise ValueError(f"Could not pack sequence. Structure had {n} atoms, but flat_sequence had {len(flat)} items.  "
                         f"Structure: {structure}, flat_sequence: {flat_sequence}.")
    return _pack(structure, flat, 0)[0]


def _describe(x):
    return f"type={type(x).__name__} str={x}"


def _outline(x):
    """The structure with every leaf shown as '.', as TF prints it in mismatch errors."""
    if not is_nested(x):
        return "."
    keys, values = _children(x)
    if isinstance(x, _abc.Mapping):
        return "{" + ", ".join(f"{k!r}: {_outline(v)}" for k, v in zip(keys, values)) + "}"
    if _is_namedtuple(x) or _is_attrs(x):
        return f"{type(x).__name__}(" + ", ".join(f"{k}={_outline(v)}" for k, v in zip(
            x._fields if _is_namedtuple(x) else keys, values)) + ")"
    inner = ", ".join(_outline(v) for v in values)
    if isinstance(x, tuple):
        return "(" + inner + ("," if len(values) == 1 else "") + ")"
    return "[" + inner + "]"


def _same_type(a, b):
    if isinstance(a, _abc.Mapping) and isinstance(b, _abc.Mapping):
        return True  # dict and OrderedDict line up (TF's rule)
    if _is_namedtuple(a) or _is_namedtuple(b):
        # Namedtuples match by name and fields, so two definitions of one record line up.
        return (_is_namedtuple(a) and _is_namedtuple(b) and type(a).__name__ == type(b).__name__
                and type(a)._fields == type(b)._fields)
    return type(a) is type(b)


def _mismatch(a, b, check_types):
    """(exception class, detail) of the first place where a and b differ, or None."""
    na, nb = is_nested(a), is_nested(b)
    if na != nb:
        seq, leaf = (a, b) if na else (b, a)
        return ValueError, f'Substructure "{_describe(seq)}" is a sequence, while substructure "{_describe(leaf)}" is not'
    if not na:
        return None
    if check_types and not _same_type(a, b):
        return TypeError, (f"The two namedtuples don't have the same sequence type. First structure {_describe(a)} has "
                           f"type {type(a).__name__}, while second structure {_describe(b)} has type {type(b).__name__}")
    if isinstance(a, _abc.Mapping) and isinstance(b, _abc.Mapping) and set(a) != set(b):
        return ValueError, (f"The two dictionaries don't have the same set of keys. First structure has keys "
                            f"{_describe(list(a))}, while second structure has keys {_describe(list(b))}")
    ka, va = _children(a)
    kb, vb = _children(b)
    if len(va) != len(vb):
        return ValueError, (f"The two structures don't have the same number of elements. First structure: {_describe(a)}. "
                            f"Second structure: {_describe(b)}")
    for x, y in zip(va, vb):
        found = _mismatch(x, y, check_types)
        if found is not None:
            return found
    return None


def assert_same_structure(nest1, nest2, check_types=True, expand_composites=False):
    """Raises ValueError (shapes of the nesting differ) or TypeError (container types differ,
    with check_types) naming the first difference, as TF."""
    _refuse_composites(flatten(nest1) + flatten(nest2), expand_composites)
    found = _mismatch(nest1, nest2, check_types)
    if found is None:
        return
    cls, detail = found
    raise cls(f"The two structures don't have the same nested structure.\n\nFirst structure: {_describe(nest1)}\n\n"
              f"Second structure: {_describe(nest2)}\n\nMore specifically: {detail}\nEntire first structure:\n"
              f"{_outline(nest1)}\nEntire second structure:\n{_outline(nest2)}")


def map_structure(func, *structure, **kwargs):
    """func applied to the leaves of one or more structures of the same shape, packed as the first."""
    if not callable(func):
        raise TypeError(f"func must be callable, got: {func}")
    if not structure:
        raise ValueError("Must provide at least one structure")
    check_types, expand_composites = True, False
    for k, v in kwargs.items():
        if k == "check_types":
            check_types = v
        elif k == "expand_composites":
            expand_composites = v
        else:
            raise ValueError(f"Only valid keyword arguments are `check_types` and `expand_composites`, not: `{k}`")
    for other in structure[1:]:
        assert_same_structure(structure[0], other, check_types=check_types)
    flats = [flatten(s, expand_composites) for s in structure]
    return pack_sequence_as(structure[0], [func(*leaves) for leaves in zip(*flats)])
