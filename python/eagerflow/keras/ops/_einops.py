"""keras.ops.rearrange: einops' rearrange (axis names, groups in parentheses, no ellipsis), as Keras has it."""
import re as _re

import eagerflow as _ef
from ._dtypes import tensor


def _groups(side):
    return [g[1:-1].split() if g.startswith("(") else [g] for g in _re.findall(r"\w+|\(.*?\)", side)]


def rearrange(tensor_, pattern, **axes_lengths):
    """rearrange(images, "b (h1 h) w c -> (b h1) h w c", h1=2): split, reorder and merge named axes."""
    t = tensor(tensor_)
    left, right = _re.split(r"\s*->\s*", pattern.strip())
    lg, rg = _groups(left), _groups(right)
    if len(lg) != t.shape.rank:
        raise ValueError(f"rearrange: the pattern's input side names {len(lg)} axes, the tensor has {t.shape.rank}")
    lnames = [n for g in lg for n in g]
    rnames = [n for g in rg for n in g]
    if sorted(lnames) != sorted(rnames) or len(set(lnames)) != len(lnames):
        raise ValueError(f"rearrange: both sides must name the same axes once each: {pattern}")
    sizes = dict((k, int(v)) for k, v in axes_lengths.items())
    for g, dim in zip(lg, t.shape):
        unknown = [n for n in g if n not in sizes]
        known = 1
        for n in g:
            known *= sizes.get(n, 1)
        if len(unknown) > 1:
            raise ValueError(f"rearrange: cannot infer the sizes of {unknown}; pass them as keyword arguments")
        if unknown:
            if dim is None or dim % known:
                raise ValueError(f"rearrange: axis of size {dim} does not split into {g} with {axes_lengths}")
            sizes[unknown[0]] = dim // known
        elif dim is not None and dim != known:
            raise ValueError(f"rearrange: axis of size {dim} does not match {g} with {axes_lengths}")
    t = _ef.reshape(t, [sizes[n] for n in lnames])
    t = _ef.transpose(t, [lnames.index(n) for n in rnames])
    out = []
    for g in rg:
        size = 1
        for n in g:
            size *= sizes[n]
        out.append(size)
    return _ef.reshape(t, out)
