"""tf.einsum / tf.linalg.einsum: the op table's einsum, plus a label repeated within one input
term ('ii->i', 'bxby->bxy', 'ii' for a trace), which TF and NumPy read as that operand's diagonal.

The diagonal is taken here, before the op: the repeated axes are moved last and
tf.linalg.diag_part keeps their diagonal as one axis, so the einsum op sees distinct labels and
everything stays differentiable and traceable.
"""
import re

from . import _core

_ELLIPSIS = "..."


def _tokens(term):
    return re.findall(r"\.\.\.|[A-Za-z]", term)


def _implicit_output(terms):
    # NumPy's implicit mode: broadcast axes first, then the labels seen once, alphabetically.
    counts = {}
    for term in terms:
        for t in _tokens(term):
            counts[t] = counts.get(t, 0) + 1
    ellipsis = _ELLIPSIS if _ELLIPSIS in counts else ""
    return ellipsis + "".join(sorted(t for t, n in counts.items() if n == 1 and t != _ELLIPSIS))


def _axes_of(tokens, rank):
    """Each token's axes in an operand of `rank` (the ellipsis spans what the letters leave)."""
    letters = sum(1 for t in tokens if t != _ELLIPSIS)
    axes, at = [], 0
    for t in tokens:
        width = rank - letters if t == _ELLIPSIS else 1
        axes.append(list(range(at, at + width)))
        at += width
    return axes


def _take_diagonals(term, operand):
    from .linalg import diag_part
    tokens = _tokens(term)
    while True:
        letters = [t for t in tokens if t != _ELLIPSIS]
        repeated = next((t for t in letters if letters.count(t) > 1), None)
        if repeated is None:
            return "".join(tokens), operand
        first = tokens.index(repeated)
        second = tokens.index(repeated, first + 1)
        axes = _axes_of(tokens, len(operand.shape))
        d1, d2 = operand.shape[axes[first][0]], operand.shape[axes[second][0]]
        if d1 is not None and d2 is not None and d1 != d2:
            from . import errors
            raise errors.InvalidArgumentError(
                f"[einsum] Expected dimension {d1} at axis {axes[second][0]} of the input shaped "
                f"{list(operand.shape)} but got dimension {d2} (label '{repeated}' repeats: a diagonal)")
        kept = [i for i in range(len(tokens)) if i not in (first, second)]
        perm = [a for i in kept for a in axes[i]] + axes[first] + axes[second]
        operand = diag_part(_core.transpose(operand, perm))
        tokens = [tokens[i] for i in kept] + [repeated]


def einsum(equation, *inputs, **kwargs):
    """tf.einsum(equation, *inputs): Einstein summation over the inputs' labelled axes."""
    kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"einsum() got unexpected keyword arguments: {', '.join(kwargs)}")
    spec = equation.replace(" ", "")
    lhs, arrow, rhs = spec.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(inputs) or not any(len(set(_tokens(t))) != len(_tokens(t)) for t in terms):
        return _core.einsum(equation, *inputs)
    if not arrow:
        rhs = _implicit_output(terms)
    operands = []
    new_terms = []
    for term, x in zip(terms, inputs):
        x = _core.convert_to_tensor(x)
        term, x = _take_diagonals(term, x)
        new_terms.append(term)
        operands.append(x)
    return _core.einsum(",".join(new_terms) + "->" + rhs, *operands)
