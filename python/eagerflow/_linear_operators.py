"""TF's concrete linear operators over eagerflow ops. Each computes with its structure: a diagonal operator
solves by division, a triangular one by substitution, a product factor by factor, a Kronecker product on its
factors, a low-rank update by Woodbury's identity. Circulant operators are left out: they need complex FFTs.
"""
import numpy as _np

from ._linear_operator import LinearOperator, _swap_last, _t, _tf

__all__ = ["LinearOperatorFullMatrix", "LinearOperatorDiag", "LinearOperatorIdentity", "LinearOperatorScaledIdentity",
           "LinearOperatorLowerTriangular", "LinearOperatorComposition", "LinearOperatorAdjoint",
           "LinearOperatorInversion", "LinearOperatorBlockDiag", "LinearOperatorKronecker",
           "LinearOperatorLowRankUpdate", "LinearOperatorZeros", "LinearOperatorHouseholder",
           "LinearOperatorPermutation", "LinearOperatorToeplitz", "LinearOperatorTridiag",
           "LinearOperatorBlockLowerTriangular"]

_FLOATS = ("float32", "float64")


def _float_tensor(x, what, dtype=None):
    t = _t(x, dtype)
    if t.dtype.name not in _FLOATS:
        raise TypeError(f"{what} must be float32 or float64, got {t.dtype}")
    return t


def _arg(x, adjoint_arg):
    return _swap_last(x) if adjoint_arg else x


def _batch(*shapes):
    return tuple(_np.broadcast_shapes(*[tuple(s) for s in shapes]))


def _same_dtype(operators, who):
    dtypes = {op.dtype for op in operators}
    if len(dtypes) != 1:
        raise TypeError(f"{who}: expected all operators to have the same dtype, got {sorted(str(d) for d in dtypes)}")
    return operators[0].dtype


def _real_self_adjoint(is_self_adjoint, who):
    if is_self_adjoint is False:
        raise ValueError(f"{who} is always self-adjoint for real dtypes.")
    return True


class LinearOperatorFullMatrix(LinearOperator):
    """A dense matrix [..., M, N]."""

    def __init__(self, matrix, is_non_singular=None, is_self_adjoint=None, is_positive_definite=None, is_square=None,
                 name="LinearOperatorFullMatrix"):
        self._matrix = _float_tensor(matrix, "matrix")
        if len(self._matrix.shape) < 2:
            raise ValueError(f"matrix must have rank >= 2, got shape {tuple(self._matrix.shape)}")
        super().__init__(self._matrix.dtype, None, is_non_singular, is_self_adjoint, is_positive_definite, is_square,
                         name, dict(matrix=matrix))

    def _shape(self):
        return tuple(self._matrix.shape)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return _tf().matmul(self._matrix, x, adjoint_a=adjoint, adjoint_b=adjoint_arg)

    def _to_dense(self):
        return self._matrix


class LinearOperatorDiag(LinearOperator):
    """diag(d) [..., N, N] from d [..., N]: products and solves are elementwise."""

    def __init__(self, diag, is_non_singular=None, is_self_adjoint=None, is_positive_definite=None, is_square=None,
                 name="LinearOperatorDiag"):
        self._diag = _float_tensor(diag, "diag")
        if len(self._diag.shape) < 1:
            raise ValueError(f"diag must have rank >= 1, got shape {tuple(self._diag.shape)}")
        if is_square is False:
            raise ValueError("Only square diagonal operators currently supported.")
        super().__init__(self._diag.dtype, None, is_non_singular, _real_self_adjoint(is_self_adjoint, "A real diagonal "
                         "operator"), is_positive_definite, True, name, dict(diag=diag))

    @property
    def diag(self):
        return self._diag

    def _shape(self):
        s = tuple(self._diag.shape)
        return s + s[-1:]

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return _tf().expand_dims(self._diag, -1) * _arg(x, adjoint_arg)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return _arg(rhs, adjoint_arg) / _tf().expand_dims(self._diag, -1)

    def _to_dense(self):
        return _tf().linalg.diag(self._diag)

    def _determinant(self):
        return _tf().reduce_prod(self._diag, axis=-1)

    def _log_abs_determinant(self):
        return _tf().reduce_sum(_tf().math.log(_tf().abs(self._diag)), axis=-1)

    def _diag_part(self):
        return self._diag

    def _add_to_tensor(self, x):
        tf = _tf()
        return tf.linalg.set_diag(x, tf.linalg.diag_part(x) + self._diag)

    def _inverse(self):
        return LinearOperatorDiag(1.0 / self._diag, is_non_singular=self.is_non_singular,
                                  is_positive_definite=self.is_positive_definite)

    def _cholesky(self):
        return LinearOperatorDiag(_tf().sqrt(self._diag), is_non_singular=True, is_positive_definite=True)

    def _compose(self, other):
        if isinstance(other, LinearOperatorDiag):
            return LinearOperatorDiag(self._diag * other._diag)
        return super()._compose(other)


def _concrete(t):
    """t's values as a NumPy array, or None inside ef.function (a symbolic tensor has none yet)."""
    try:
        return _np.asarray(t.numpy())
    except _tf().errors.FailedPreconditionError:
        return None


def _num_rows(n, what):
    if isinstance(n, _tf().Tensor):
        n = n.numpy()
    if _np.ndim(n) != 0 or int(n) != n:
        raise ValueError(f"{what} must be a 0-D integer, got {n!r}")
    if int(n) < 0:
        raise ValueError(f"{what} must be non-negative, got {int(n)}")
    return int(n)


def _batch_shape(batch_shape):
    if batch_shape is None:
        return ()
    shape = tuple(int(d) for d in _np.asarray(batch_shape.numpy() if hasattr(batch_shape, "numpy") else batch_shape))
    if any(d < 0 for d in shape):
        raise ValueError(f"batch_shape must be non-negative, got {shape}")
    return shape


class LinearOperatorIdentity(LinearOperator):
    """The identity [batch_shape..., N, N]: matmul and solve return their argument (broadcast to the batch)."""

    def __init__(self, num_rows, batch_shape=None, dtype=None, is_non_singular=True, is_self_adjoint=True,
                 is_positive_definite=True, is_square=True, assert_proper_shapes=False, name="LinearOperatorIdentity"):
        if not (is_non_singular and is_self_adjoint and is_positive_definite and is_square):
            raise ValueError("An identity operator is always non-singular, self-adjoint, positive definite and square.")
        self._n = _num_rows(num_rows, "num_rows")
        self._batch_dims = _batch_shape(batch_shape)
        super().__init__(_tf().as_dtype(dtype) if dtype is not None else _tf().float32, None, True, True, True, True,
                         name, dict(num_rows=num_rows, batch_shape=batch_shape, dtype=dtype))

    def _shape(self):
        return self._batch_dims + (self._n, self._n)

    def _broadcast(self, x):
        tf = _tf()
        batch = _batch(self._batch_dims, tuple(x.shape[:-2]))
        return tf.broadcast_to(x, list(batch) + list(x.shape[-2:]))

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return self._broadcast(_arg(x, adjoint_arg))

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return self._broadcast(_arg(rhs, adjoint_arg))

    def _to_dense(self):
        return _tf().eye(self._n, batch_shape=list(self._batch_dims), dtype=self.dtype)

    def _determinant(self):
        return _tf().ones(list(self._batch_dims), dtype=self.dtype)

    def _log_abs_determinant(self):
        return _tf().zeros(list(self._batch_dims), dtype=self.dtype)

    def _diag_part(self):
        return _tf().ones(list(self._batch_dims) + [self._n], dtype=self.dtype)

    def _add_to_tensor(self, x):
        tf = _tf()
        return tf.linalg.set_diag(x, tf.linalg.diag_part(x) + 1.0)

    def _inverse(self):
        return self

    def _cholesky(self):
        return self

    def _compose(self, other):
        if self._batch_dims == () and other.range_dimension == self._n:
            return other
        return super()._compose(other)


class LinearOperatorScaledIdentity(LinearOperator):
    """multiplier * I [..., N, N], multiplier [...] the batch."""

    def __init__(self, num_rows, multiplier, is_non_singular=None, is_self_adjoint=None, is_positive_definite=None,
                 is_square=True, assert_proper_shapes=False, name="LinearOperatorScaledIdentity"):
        if is_square is False:
            raise ValueError("A ScaledIdentity operator is always square.")
        self._n = _num_rows(num_rows, "num_rows")
        self._m = _float_tensor(multiplier, "multiplier")
        super().__init__(self._m.dtype, None, is_non_singular, _real_self_adjoint(is_self_adjoint, "A real scaled "
                         "identity"), is_positive_definite, True, name, dict(num_rows=num_rows, multiplier=multiplier))

    @property
    def multiplier(self):
        return self._m

    def _shape(self):
        return tuple(self._m.shape) + (self._n, self._n)

    def _scale(self):
        tf = _tf()
        return tf.expand_dims(tf.expand_dims(self._m, -1), -1)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return self._scale() * _arg(x, adjoint_arg)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return _arg(rhs, adjoint_arg) / self._scale()

    def _to_dense(self):
        tf = _tf()
        return self._scale() * tf.eye(self._n, dtype=self.dtype)

    def _determinant(self):
        return self._m ** float(self._n)

    def _log_abs_determinant(self):
        tf = _tf()
        return float(self._n) * tf.math.log(tf.abs(self._m))

    def _diag_part(self):
        tf = _tf()
        return tf.expand_dims(self._m, -1) * tf.ones([self._n], dtype=self.dtype)

    def _trace(self):
        return self._m * float(self._n)

    def _add_to_tensor(self, x):
        tf = _tf()
        return tf.linalg.set_diag(x, tf.linalg.diag_part(x) + tf.expand_dims(self._m, -1))

    def _inverse(self):
        return LinearOperatorScaledIdentity(self._n, 1.0 / self._m, is_non_singular=self.is_non_singular,
                                            is_positive_definite=self.is_positive_definite)


class LinearOperatorLowerTriangular(LinearOperator):
    """The lower triangle of tril [..., N, N] (the rest is not read): solves by substitution."""

    def __init__(self, tril, is_non_singular=None, is_self_adjoint=None, is_positive_definite=None, is_square=None,
                 name="LinearOperatorLowerTriangular"):
        if is_square is False:
            raise ValueError("Only square lower triangular operators supported at this time.")
        t = _float_tensor(tril, "tril")
        if len(t.shape) < 2 or t.shape[-1] != t.shape[-2]:
            raise ValueError(f"tril must be square matrices, got shape {tuple(t.shape)}")
        self._tril = _tf().linalg.band_part(t, -1, 0)
        super().__init__(t.dtype, None, is_non_singular, is_self_adjoint, is_positive_definite, True, name,
                         dict(tril=tril))

    def _shape(self):
        return tuple(self._tril.shape)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return _tf().matmul(self._tril, x, adjoint_a=adjoint, adjoint_b=adjoint_arg)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        tf = _tf()
        rhs = _arg(rhs, adjoint_arg)
        tril = self._tril
        batch = _batch(tuple(tril.shape[:-2]), tuple(rhs.shape[:-2]))
        tril = tf.broadcast_to(tril, list(batch) + list(tril.shape[-2:]))
        rhs = tf.broadcast_to(rhs, list(batch) + list(rhs.shape[-2:]))
        return tf.linalg.triangular_solve(tril, rhs, lower=True, adjoint=adjoint)

    def _to_dense(self):
        return self._tril

    def _diag_part(self):
        return _tf().linalg.diag_part(self._tril)

    def _determinant(self):
        return _tf().reduce_prod(self._diag_part(), axis=-1)

    def _log_abs_determinant(self):
        tf = _tf()
        return tf.reduce_sum(tf.math.log(tf.abs(self._diag_part())), axis=-1)


class LinearOperatorComposition(LinearOperator):
    """operators[0] @ operators[1] @ ...: applied factor by factor, solved in reverse."""

    def __init__(self, operators, is_non_singular=None, is_self_adjoint=None, is_positive_definite=None,
                 is_square=None, name=None):
        operators = list(operators)
        if not operators:
            raise ValueError(f"Expected a non-empty list of operators. Found: {operators}")
        dtype = _same_dtype(operators, "LinearOperatorComposition")
        for a, b in zip(operators, operators[1:]):
            if a.domain_dimension != b.range_dimension:
                raise ValueError(f"Operators are incompatible: {a.name} has domain dimension {a.domain_dimension} and "
                                 f"{b.name} range dimension {b.range_dimension}")
        if all(op.is_non_singular for op in operators):
            if is_non_singular is False:
                raise ValueError("The composition of non-singular operators is always non-singular.")
            is_non_singular = True
        self._operators = operators
        super().__init__(dtype, None, is_non_singular, is_self_adjoint, is_positive_definite, is_square,
                         name or "_o_".join(op.name for op in operators), dict(operators=operators))

    @property
    def operators(self):
        return list(self._operators)

    def _shape(self):
        batch = _batch(*[op._shape()[:-2] for op in self._operators])
        return batch + (self._operators[0].range_dimension, self._operators[-1].domain_dimension)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        order = self._operators if adjoint else self._operators[::-1]
        y = order[0].matmul(x, adjoint=adjoint, adjoint_arg=adjoint_arg)
        for op in order[1:]:
            y = op.matmul(y, adjoint=adjoint)
        return y

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        order = self._operators[::-1] if adjoint else self._operators
        y = order[0].solve(rhs, adjoint=adjoint, adjoint_arg=adjoint_arg)
        for op in order[1:]:
            y = op.solve(y, adjoint=adjoint)
        return y

    def _to_dense(self):
        dense = self._operators[-1].to_dense()
        for op in self._operators[-2::-1]:
            dense = op.matmul(dense)
        return dense

    def _determinant(self):
        if not all(op.is_square for op in self._operators):
            return super()._determinant()
        det = self._operators[0].determinant()
        for op in self._operators[1:]:
            det = det * op.determinant()
        return det

    def _log_abs_determinant(self):
        if not all(op.is_square for op in self._operators):
            return super()._log_abs_determinant()
        out = self._operators[0].log_abs_determinant()
        for op in self._operators[1:]:
            out = out + op.log_abs_determinant()
        return out


class LinearOperatorAdjoint(LinearOperator):
    """operator^H: matmul and solve with the adjoint flag flipped."""

    def __init__(self, operator, is_non_singular=None, is_self_adjoint=None, is_positive_definite=None,
                 is_square=None, name=None):
        if not isinstance(operator, LinearOperator):
            raise TypeError(f"operator must be a LinearOperator, got {type(operator).__name__}")
        self._operator = operator

        def inherit(hint, own, what):
            if own is not None and hint is not None and own != hint:
                raise ValueError(f"An operator is {what} if and only if its adjoint is {what}.")
            return hint if own is None else own

        super().__init__(operator.dtype, None, inherit(is_non_singular, operator.is_non_singular, "non-singular"),
                         inherit(is_self_adjoint, operator.is_self_adjoint, "self-adjoint"),
                         inherit(is_positive_definite, operator.is_positive_definite, "positive-definite"),
                         inherit(is_square, operator.is_square, "square"), name or operator.name + "_adjoint",
                         dict(operator=operator))

    @property
    def operator(self):
        return self._operator

    def _shape(self):
        s = self._operator._shape()
        return tuple(s[:-2]) + (s[-1], s[-2])

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return self._operator.matmul(x, adjoint=not adjoint, adjoint_arg=adjoint_arg)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return self._operator.solve(rhs, adjoint=not adjoint, adjoint_arg=adjoint_arg)

    def _to_dense(self):
        return _swap_last(self._operator.to_dense())

    def _determinant(self):
        return self._operator.determinant()

    def _log_abs_determinant(self):
        return self._operator.log_abs_determinant()

    def _diag_part(self):
        return self._operator.diag_part()

    def _adjoint(self):
        return self._operator


class LinearOperatorInversion(LinearOperator):
    """operator^-1: matmul is the operator's solve and solve its matmul."""

    def __init__(self, operator, is_non_singular=None, is_self_adjoint=None, is_positive_definite=None,
                 is_square=None, name=None):
        if not isinstance(operator, LinearOperator):
            raise TypeError(f"operator must be a LinearOperator, got {type(operator).__name__}")
        if operator.is_non_singular is False or is_non_singular is False:
            raise ValueError("operator and its inverse must be non-singular.")
        if operator.is_square is False or is_square is False:
            raise ValueError("operator and its inverse must be square.")
        self._operator = operator
        sa = operator.is_self_adjoint if is_self_adjoint is None else is_self_adjoint
        pd = operator.is_positive_definite if is_positive_definite is None else is_positive_definite
        super().__init__(operator.dtype, None, True, sa, pd, True, name or operator.name + "_inv",
                         dict(operator=operator))

    @property
    def operator(self):
        return self._operator

    def _shape(self):
        return tuple(self._operator._shape())

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return self._operator.solve(x, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return self._operator.matmul(rhs, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def _determinant(self):
        return 1.0 / self._operator.determinant()

    def _log_abs_determinant(self):
        return -self._operator.log_abs_determinant()

    def _inverse(self):
        return self._operator


def _split_rows(x, sizes):
    return _tf().split(x, sizes, axis=-2)


class LinearOperatorBlockDiag(LinearOperator):
    """Square operators on the diagonal of a block matrix: each block works on its rows of the argument."""

    def __init__(self, operators, is_non_singular=None, is_self_adjoint=None, is_positive_definite=None,
                 is_square=True, name=None):
        operators = list(operators)
        if not operators:
            raise ValueError(f"Expected a non-empty list of operators. Found: {operators}")
        if not all(op.is_square for op in operators) or is_square is False:
            raise ValueError("Argument is_square is expected to be True, and all operators square.")
        dtype = _same_dtype(operators, "LinearOperatorBlockDiag")
        if all(op.is_non_singular for op in operators):
            is_non_singular = True if is_non_singular is None else is_non_singular
        if all(op.is_self_adjoint for op in operators):
            is_self_adjoint = True if is_self_adjoint is None else is_self_adjoint
        if all(op.is_positive_definite for op in operators):
            is_positive_definite = True if is_positive_definite is None else is_positive_definite
        self._operators = operators
        super().__init__(dtype, None, is_non_singular, is_self_adjoint, is_positive_definite, True,
                         name or "_ds_".join(op.name for op in operators), dict(operators=operators))

    @property
    def operators(self):
        return list(self._operators)

    def _sizes(self):
        return [op.domain_dimension for op in self._operators]

    def _shape(self):
        n = sum(self._sizes())
        return _batch(*[op._shape()[:-2] for op in self._operators]) + (n, n)

    def _blockwise(self, x, adjoint_arg, fn):
        tf = _tf()
        parts = _split_rows(_arg(x, adjoint_arg), self._sizes())
        outs = [fn(op, p) for op, p in zip(self._operators, parts)]
        batch = _batch(*[tuple(o.shape[:-2]) for o in outs])
        return tf.concat([tf.broadcast_to(o, list(batch) + list(o.shape[-2:])) for o in outs], axis=-2)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return self._blockwise(x, adjoint_arg, lambda op, p: op.matmul(p, adjoint=adjoint))

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return self._blockwise(rhs, adjoint_arg, lambda op, p: op.solve(p, adjoint=adjoint))

    def _determinant(self):
        det = self._operators[0].determinant()
        for op in self._operators[1:]:
            det = det * op.determinant()
        return det

    def _log_abs_determinant(self):
        out = self._operators[0].log_abs_determinant()
        for op in self._operators[1:]:
            out = out + op.log_abs_determinant()
        return out

    def _diag_part(self):
        tf = _tf()
        parts = [op.diag_part() for op in self._operators]
        batch = _batch(*[tuple(p.shape[:-1]) for p in parts])
        return tf.concat([tf.broadcast_to(p, list(batch) + [p.shape[-1]]) for p in parts], axis=-1)


class LinearOperatorKronecker(LinearOperator):
    """operators[0] (x) operators[1] (x) ...: applied to the argument reshaped, one factor at a time."""

    def __init__(self, operators, is_non_singular=None, is_self_adjoint=None, is_positive_definite=None,
                 is_square=None, name=None):
        operators = list(operators)
        if not operators:
            raise ValueError(f"Expected a non-empty list of operators. Found: {operators}")
        dtype = _same_dtype(operators, "LinearOperatorKronecker")
        if all(op.is_non_singular for op in operators):
            is_non_singular = True if is_non_singular is None else is_non_singular
        if all(op.is_self_adjoint for op in operators):
            is_self_adjoint = True if is_self_adjoint is None else is_self_adjoint
        self._operators = operators
        super().__init__(dtype, None, is_non_singular, is_self_adjoint, is_positive_definite, is_square,
                         name or "_x_".join(op.name for op in operators), dict(operators=operators))

    @property
    def operators(self):
        return list(self._operators)

    def _shape(self):
        m = int(_np.prod([op.range_dimension for op in self._operators]))
        n = int(_np.prod([op.domain_dimension for op in self._operators]))
        return _batch(*[op._shape()[:-2] for op in self._operators]) + (m, n)

    def _apply(self, x, fn, out_dim, in_dim):
        """(A (x) R) x for the first factor A and R the Kronecker product of the rest, fn(op, y) applying one."""
        tf = _tf()
        batch = _batch(self._shape()[:-2], tuple(x.shape[:-2]))
        x = tf.broadcast_to(x, list(batch) + list(x.shape[-2:]))
        nb, k = len(batch), x.shape[-1]
        b = list(batch)
        first, rest = self._operators[0], self._operators[1:]
        q = int(_np.prod([in_dim(op) for op in rest])) if rest else 1
        y = tf.reshape(x, b + [in_dim(first), q * k])
        y = fn(first, y)  # [..., m, q * k]
        if not rest:
            return y
        m = out_dim(first)
        perm = list(range(nb)) + [nb + 1, nb, nb + 2]
        y = tf.reshape(tf.transpose(tf.reshape(y, b + [m, q, k]), perm), b + [q, m * k])
        tail = rest[0] if len(rest) == 1 else LinearOperatorKronecker(rest)
        y = fn(tail, y)  # [..., p, m * k]
        p = int(_np.prod([out_dim(op) for op in rest]))
        return tf.reshape(tf.transpose(tf.reshape(y, b + [p, m, k]), perm), b + [m * p, k])

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        out_dim = (lambda op: op.domain_dimension) if adjoint else (lambda op: op.range_dimension)
        in_dim = (lambda op: op.range_dimension) if adjoint else (lambda op: op.domain_dimension)
        return self._apply(_arg(x, adjoint_arg), lambda op, y: op.matmul(y, adjoint=adjoint), out_dim, in_dim)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        dim = lambda op: op.domain_dimension  # noqa: E731 - square factors
        return self._apply(_arg(rhs, adjoint_arg), lambda op, y: op.solve(y, adjoint=adjoint), dim, dim)

    def _square_factors(self):
        return all(op.is_square for op in self._operators)

    def _determinant(self):
        if not self._square_factors():
            return super()._determinant()
        n = self.domain_dimension
        det = None
        for op in self._operators:
            d = op.determinant() ** float(n // op.domain_dimension)
            det = d if det is None else det * d
        return det

    def _log_abs_determinant(self):
        if not self._square_factors():
            return super()._log_abs_determinant()
        n = self.domain_dimension
        out = None
        for op in self._operators:
            d = op.log_abs_determinant() * float(n // op.domain_dimension)
            out = d if out is None else out + d
        return out

    def _diag_part(self):
        if not self._square_factors():
            return super()._diag_part()
        tf = _tf()
        d = self._operators[0].diag_part()
        for op in self._operators[1:]:
            e = op.diag_part()
            d = tf.reshape(tf.expand_dims(d, -1) * tf.expand_dims(e, -2),
                           list(_batch(tuple(d.shape[:-1]), tuple(e.shape[:-1]))) + [d.shape[-1] * e.shape[-1]])
        return d

    def _trace(self):
        if not self._square_factors():
            return super()._trace()
        t = self._operators[0].trace()
        for op in self._operators[1:]:
            t = t * op.trace()
        return t


class LinearOperatorLowRankUpdate(LinearOperator):
    """base + u diag(diag_update) v^H (v = u when not given): solves and determinants by Woodbury's identity
    and the matrix determinant lemma, through the small capacitance matrix diag_update^-1 + v^H base^-1 u."""

    def __init__(self, base_operator, u, diag_update=None, v=None, is_diag_update_positive=None, is_non_singular=None,
                 is_self_adjoint=None, is_positive_definite=None, is_square=None, name="LinearOperatorLowRankUpdate"):
        if not isinstance(base_operator, LinearOperator):
            raise TypeError(f"base_operator must be a LinearOperator, got {type(base_operator).__name__}")
        dtype = base_operator.dtype
        self._base = base_operator
        self._u = _float_tensor(u, "u", dtype)
        self._v = self._u if v is None else _float_tensor(v, "v", dtype)
        if self._u.dtype != dtype or self._v.dtype != dtype:
            raise TypeError(f"u and v must have the base operator's dtype {dtype}")
        if self._u.shape[-1] != self._v.shape[-1]:
            raise ValueError(f"u {tuple(self._u.shape)} and v {tuple(self._v.shape)} must have the same rank k")
        self._diag_update = None if diag_update is None else _float_tensor(diag_update, "diag_update", dtype)
        if v is None and base_operator.is_self_adjoint and is_self_adjoint is None:
            is_self_adjoint = True
        if (v is None and base_operator.is_positive_definite and is_positive_definite is None and
                (diag_update is None or is_diag_update_positive)):
            is_positive_definite = True
        super().__init__(dtype, None, is_non_singular, is_self_adjoint, is_positive_definite, is_square, name,
                         dict(base_operator=base_operator, u=u, diag_update=diag_update, v=v,
                              is_diag_update_positive=is_diag_update_positive))

    @property
    def base_operator(self):
        return self._base

    @property
    def u(self):
        return self._u

    @property
    def v(self):
        return self._v

    @property
    def diag_update(self):
        return self._diag_update

    def _shape(self):
        s = self._base._shape()
        return _batch(s[:-2], tuple(self._u.shape[:-2]), tuple(self._v.shape[:-2])) + tuple(s[-2:])

    def _d(self, x):  # diag_update * x (rows)
        return x if self._diag_update is None else _tf().expand_dims(self._diag_update, -1) * x

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        tf = _tf()
        x = _arg(x, adjoint_arg)
        left, right = (self._v, self._u) if adjoint else (self._u, self._v)
        low = tf.matmul(left, self._d(tf.matmul(right, x, adjoint_a=True)))
        return self._base.matmul(x, adjoint=adjoint) + low

    def _capacitance(self, adjoint):
        tf = _tf()
        left, right = (self._v, self._u) if adjoint else (self._u, self._v)
        c = tf.matmul(right, self._base.solve(left, adjoint=adjoint), adjoint_a=True)
        d_inv = 1.0 / self._diag_update if self._diag_update is not None else tf.ones([self._u.shape[-1]], self.dtype)
        return tf.linalg.set_diag(c, tf.linalg.diag_part(c) + d_inv)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        # (L + U D V^H)^-1 = L^-1 - L^-1 U C^-1 V^H L^-1
        tf = _tf()
        left, right = (self._v, self._u) if adjoint else (self._u, self._v)
        y = self._base.solve(_arg(rhs, adjoint_arg), adjoint=adjoint)
        c = self._capacitance(adjoint)
        t = tf.matmul(right, y, adjoint_a=True)
        batch = _batch(tuple(c.shape[:-2]), tuple(t.shape[:-2]))
        z = tf.linalg.solve(tf.broadcast_to(c, list(batch) + list(c.shape[-2:])),
                            tf.broadcast_to(t, list(batch) + list(t.shape[-2:])))
        return y - self._base.solve(tf.matmul(left, z), adjoint=adjoint)

    def _log_abs_determinant(self):
        # det(L + U D V^H) = det(C) det(D) det(L)
        tf = _tf()
        out = self._base.log_abs_determinant() + tf.linalg.slogdet(self._capacitance(False))[1]
        if self._diag_update is not None:
            out = out + tf.reduce_sum(tf.math.log(tf.abs(self._diag_update)), axis=-1)
        return out

    def _determinant(self):
        tf = _tf()
        det = self._base.determinant() * tf.linalg.det(self._capacitance(False))
        if self._diag_update is not None:
            det = det * tf.reduce_prod(self._diag_update, axis=-1)
        return det

    def _diag_part(self):
        tf = _tf()
        low = tf.reduce_sum(self._u * self._v if self._diag_update is None else
                            self._u * self._v * tf.expand_dims(self._diag_update, -2), axis=-1)
        return self._base.diag_part() + low


class LinearOperatorZeros(LinearOperator):
    """The zero matrix [batch_shape..., num_rows, num_columns]."""

    def __init__(self, num_rows, num_columns=None, batch_shape=None, dtype=None, is_non_singular=False,
                 is_self_adjoint=True, is_positive_definite=False, is_square=True, assert_proper_shapes=False,
                 name="LinearOperatorZeros"):
        if is_non_singular:
            raise ValueError("A Zeros operator is always singular.")
        if is_positive_definite:
            raise ValueError("A Zeros operator is never positive definite.")
        self._rows = _num_rows(num_rows, "num_rows")
        self._cols = self._rows if num_columns is None else _num_rows(num_columns, "num_columns")
        if is_square and self._rows != self._cols:
            raise ValueError(f"LinearOperatorZeros initialized as is_square=True, but got num_rows({self._rows}) != "
                             f"num_columns({self._cols})")
        self._batch_dims = _batch_shape(batch_shape)
        super().__init__(_tf().as_dtype(dtype) if dtype is not None else _tf().float32, None, False, is_self_adjoint,
                         False, is_square, name, dict(num_rows=num_rows, num_columns=num_columns,
                                                      batch_shape=batch_shape, dtype=dtype))

    def _shape(self):
        return self._batch_dims + (self._rows, self._cols)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        tf = _tf()
        x = _arg(x, adjoint_arg)
        rows = self._cols if adjoint else self._rows
        batch = _batch(self._batch_dims, tuple(x.shape[:-2]))
        return tf.zeros(list(batch) + [rows, x.shape[-1]], dtype=self.dtype)

    def _to_dense(self):
        return _tf().zeros(list(self._shape()), dtype=self.dtype)

    def _determinant(self):
        return _tf().zeros(list(self._batch_dims), dtype=self.dtype)

    def _log_abs_determinant(self):
        return _tf().fill(list(self._batch_dims), _np.array(-_np.inf, dtype=self.dtype.name))

    def _diag_part(self):
        return _tf().zeros(list(self._batch_dims) + [min(self._rows, self._cols)], dtype=self.dtype)

    def _add_to_tensor(self, x):
        return x


class LinearOperatorHouseholder(LinearOperator):
    """The reflection I - 2 v v^T / (v^T v) about the hyperplane orthogonal to v = reflection_axis [..., N]:
    its own inverse and adjoint, determinant -1."""

    def __init__(self, reflection_axis, is_non_singular=None, is_self_adjoint=None, is_positive_definite=None,
                 is_square=None, name="LinearOperatorHouseholder"):
        if is_self_adjoint is False:
            raise ValueError("A Householder operator is always self adjoint.")
        if is_non_singular is False:
            raise ValueError("A Householder operator is always non-singular.")
        if is_square is False:
            raise ValueError("A Householder operator is always square.")
        if is_positive_definite is True:
            raise ValueError("A Householder operator is always non-positive definite.")
        self._v = _float_tensor(reflection_axis, "reflection_axis")
        super().__init__(self._v.dtype, None, True, True, is_positive_definite, True, name,
                         dict(reflection_axis=reflection_axis))

    @property
    def reflection_axis(self):
        return self._v

    def _shape(self):
        s = tuple(self._v.shape)
        return s + s[-1:]

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        tf = _tf()
        x = _arg(x, adjoint_arg)
        v = tf.expand_dims(self._v, -1)  # [..., N, 1]
        scale = 2.0 / tf.reduce_sum(v * v, axis=-2, keepdims=True)
        return x - v * (scale * tf.matmul(v, x, adjoint_a=True))

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return self._matmul(rhs, adjoint, adjoint_arg)

    def _determinant(self):
        return -_tf().ones(list(self._shape()[:-2]), dtype=self.dtype)

    def _log_abs_determinant(self):
        return _tf().zeros(list(self._shape()[:-2]), dtype=self.dtype)

    def _trace(self):
        return _tf().ones(list(self._shape()[:-2]), dtype=self.dtype) * float(self.domain_dimension - 2)

    def _diag_part(self):
        tf = _tf()
        return 1.0 - 2.0 * self._v * self._v / tf.reduce_sum(self._v * self._v, axis=-1, keepdims=True)

    def _inverse(self):
        return self


class LinearOperatorPermutation(LinearOperator):
    """The permutation matrix P [..., N, N] with P[i, perm[i]] = 1: (P x)[i] = x[perm[i]], solved by P^T."""

    def __init__(self, perm, dtype=None, is_non_singular=None, is_self_adjoint=None, is_positive_definite=None,
                 is_square=None, name="LinearOperatorPermutation"):
        tf = _tf()
        p = _t(perm)
        if p.dtype not in (tf.int32, tf.int64):
            raise TypeError(f"perm must be int32 or int64, got {p.dtype}")
        if len(p.shape) < 1:
            raise ValueError(f"perm must have rank >= 1, got shape {tuple(p.shape)}")
        values = _concrete(p)
        if values is not None:  # checked when known now (eagerly); a traced perm is taken as valid, as TF does
            rows = _np.sort(values.reshape(-1, p.shape[-1]), axis=-1)
            if not (rows == _np.arange(p.shape[-1])).all():
                raise tf.errors.InvalidArgumentError(None, None,
                                                     f"perm must be a vector of unique integers 0..N-1, got {p}")
        if is_non_singular is False or is_square is False:
            raise ValueError("A Permutation operator is always non-singular and square.")
        self._perm = p
        super().__init__(tf.as_dtype(dtype) if dtype is not None else tf.float32, None, True, is_self_adjoint,
                         is_positive_definite, True, name, dict(perm=perm, dtype=dtype))

    @property
    def perm(self):
        return self._perm

    def _shape(self):
        s = tuple(self._perm.shape)
        return s + s[-1:]

    def _dense_p(self):
        return _tf().one_hot(self._perm, self.domain_dimension, dtype=self.dtype)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        tf = _tf()
        x = _arg(x, adjoint_arg)
        if len(self._perm.shape) == 1:  # a row gather: (P x)[i] = x[perm[i]]; P^T gathers by the inverse
            idx = tf.math.invert_permutation(self._perm) if adjoint else self._perm
            return tf.gather(x, idx, axis=-2)
        return tf.matmul(self._dense_p(), x, adjoint_a=adjoint)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        return self._matmul(rhs, not adjoint, adjoint_arg)

    def _to_dense(self):
        return self._dense_p()

    def _determinant(self):
        tf = _tf()
        values = _concrete(self._perm)
        if values is None:  # traced: the determinant of the 0/1 matrix is exactly +-1 once rounded
            return tf.round(tf.linalg.det(self._dense_p()))
        p = values.reshape(-1, self.domain_dimension)
        signs = []
        for row in p:  # the parity: (-1)^(N - the number of cycles)
            seen, cycles = _np.zeros(len(row), bool), 0
            for i in range(len(row)):
                if not seen[i]:
                    cycles += 1
                    while not seen[i]:
                        seen[i], i = True, row[i]
            signs.append(-1.0 if (len(row) - cycles) % 2 else 1.0)
        return tf.constant(_np.array(signs, dtype=self.dtype.name).reshape(self._shape()[:-2]))

    def _log_abs_determinant(self):
        return _tf().zeros(list(self._shape()[:-2]), dtype=self.dtype)

    def _inverse(self):
        return LinearOperatorPermutation(_tf().math.invert_permutation(self._perm), dtype=self.dtype) \
            if len(self._perm.shape) == 1 else super()._inverse()


class LinearOperatorToeplitz(LinearOperator):
    """T[i, j] = col[i - j] below the diagonal and row[j - i] above it (the diagonal is col[0]).
    Without complex FFTs (TF's circulant embedding) it computes with the dense matrix."""

    def __init__(self, col, row, is_non_singular=None, is_self_adjoint=None, is_positive_definite=None,
                 is_square=None, name="LinearOperatorToeplitz"):
        self._col = _float_tensor(col, "col")
        self._row = _float_tensor(row, "row", self._col.dtype)
        if self._row.dtype != self._col.dtype:
            raise TypeError(f"col ({self._col.dtype}) and row ({self._row.dtype}) must have the same dtype")
        if len(self._col.shape) < 1 or self._col.shape[-1] != self._row.shape[-1]:
            raise ValueError(f"col {tuple(self._col.shape)} and row {tuple(self._row.shape)} must be vectors "
                             "of one length")
        if is_square is False:
            raise ValueError("Only square Toeplitz operators currently supported.")
        super().__init__(self._col.dtype, None, is_non_singular, is_self_adjoint, is_positive_definite, True, name,
                         dict(col=col, row=row))

    @property
    def col(self):
        return self._col

    @property
    def row(self):
        return self._row

    def _shape(self):
        n = self._col.shape[-1]
        return _batch(tuple(self._col.shape[:-1]), tuple(self._row.shape[:-1])) + (n, n)

    def _to_dense(self):
        tf = _tf()
        n = self._col.shape[-1]
        i, j = _np.meshgrid(_np.arange(n), _np.arange(n), indexing="ij")
        # the values [row reversed (without row[0]), col]: entry (i, j) is at n - 1 + i - j
        batch = list(self._shape()[:-2])
        col = tf.broadcast_to(self._col, batch + [n])
        row = tf.broadcast_to(self._row, batch + [n])
        values = tf.concat([tf.reverse(row[..., 1:], axis=[-1]), col], axis=-1)
        return tf.gather(values, tf.constant((n - 1 + i - j).astype(_np.int32)), axis=-1)

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        return _tf().matmul(self._to_dense(), x, adjoint_a=adjoint, adjoint_b=adjoint_arg)

    def _diag_part(self):
        tf = _tf()
        return tf.expand_dims(self._col[..., 0], -1) * tf.ones([self._col.shape[-1]], dtype=self.dtype)


class LinearOperatorTridiag(LinearOperator):
    """A tridiagonal matrix from its diagonals (TF's 'compact', 'sequence' or 'matrix' format): products
    by tf.linalg.tridiagonal_matmul, solves by tf.linalg.tridiagonal_solve."""

    def __init__(self, diagonals, diagonals_format="compact", is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name="LinearOperatorTridiag"):
        tf = _tf()
        if diagonals_format not in ("compact", "sequence", "matrix"):
            raise ValueError(f"Diagonals Format must be one of compact, matrix, sequence, got : {diagonals_format}")
        if is_square is False:
            raise ValueError("Only square tridiagonal operators supported.")
        if diagonals_format == "sequence":
            compact = tf.linalg._compact_from_sequence(diagonals, pad_short=False)
        elif diagonals_format == "matrix":
            compact = tf.linalg._compact_from_matrix(diagonals)
        else:
            compact = _float_tensor(diagonals, "diagonals")
        if len(compact.shape) < 2 or compact.shape[-2] != 3:
            raise ValueError(f"diagonals must be [..., 3, N], got shape {tuple(compact.shape)}")
        self._compact = compact
        self._diagonals = diagonals
        self._format = diagonals_format
        super().__init__(compact.dtype, None, is_non_singular, is_self_adjoint, is_positive_definite, True, name,
                         dict(diagonals=diagonals, diagonals_format=diagonals_format))

    @property
    def diagonals(self):
        return self._diagonals

    @property
    def diagonals_format(self):
        return self._format

    def _shape(self):
        s = tuple(self._compact.shape)
        return s[:-2] + (s[-1], s[-1])

    def _compact_for(self, adjoint):
        if not adjoint:
            return self._compact
        tf = _tf()
        sup, main, sub = self._compact[..., 0, :], self._compact[..., 1, :], self._compact[..., 2, :]
        nb = len(sup.shape) - 1
        return tf.stack([tf.pad(sub[..., 1:], [[0, 0]] * nb + [[0, 1]]), main,
                         tf.pad(sup[..., :-1], [[0, 0]] * nb + [[1, 0]])], axis=-2)

    def _pair(self, compact, x):
        tf = _tf()
        batch = _batch(tuple(compact.shape[:-2]), tuple(x.shape[:-2]))
        return (tf.broadcast_to(compact, list(batch) + list(compact.shape[-2:])),
                tf.broadcast_to(x, list(batch) + list(x.shape[-2:])))

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        d, x = self._pair(self._compact_for(adjoint), _arg(x, adjoint_arg))
        return _tf().linalg.tridiagonal_matmul(d, x)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        d, r = self._pair(self._compact_for(adjoint), _arg(rhs, adjoint_arg))
        return _tf().linalg.tridiagonal_solve(d, r)

    def _to_dense(self):
        tf = _tf()
        sup, main, sub = self._compact[..., 0, :], self._compact[..., 1, :], self._compact[..., 2, :]
        nb = len(main.shape) - 1
        pad = [[0, 0]] * nb
        upper = tf.pad(tf.linalg.diag(sup[..., :-1]), pad + [[0, 1], [1, 0]])
        lower = tf.pad(tf.linalg.diag(sub[..., 1:]), pad + [[1, 0], [0, 1]])
        return tf.linalg.diag(main) + upper + lower

    def _diag_part(self):
        return self._compact[..., 1, :]


class LinearOperatorBlockLowerTriangular(LinearOperator):
    """A block lower-triangular matrix: operators[i] holds row i's blocks, i + 1 of them, the last on the
    diagonal (square). Products block by block; solves by forward substitution with the diagonal blocks."""

    def __init__(self, operators, is_non_singular=None, is_self_adjoint=None, is_positive_definite=None,
                 is_square=None, name="LinearOperatorBlockLowerTriangular"):
        rows = [list(r) for r in operators]
        if not rows:
            raise ValueError(f"Expected a non-empty list of operators. Found: {operators}")
        for i, r in enumerate(rows):
            if len(r) != i + 1:
                raise ValueError(f"Argument operators[{i}] must contain {i + 1} blocks, got {len(r)}.")
        diag_ops = [r[-1] for r in rows]
        if not all(op.is_square for op in diag_ops):
            raise ValueError("The diagonal operators must be square.")
        dtype = _same_dtype([op for r in rows for op in r], "LinearOperatorBlockLowerTriangular")
        sizes = [op.domain_dimension for op in diag_ops]
        for i, r in enumerate(rows):
            for j, op in enumerate(r):
                if op.range_dimension != sizes[i] or op.domain_dimension != sizes[j]:
                    raise ValueError(f"Block ({i}, {j}) has shape {tuple(op._shape()[-2:])}, expected "
                                     f"({sizes[i]}, {sizes[j]})")
        if all(op.is_non_singular for op in diag_ops):
            is_non_singular = True if is_non_singular is None else is_non_singular
        self._rows = rows
        self._sizes = sizes
        super().__init__(dtype, None, is_non_singular, is_self_adjoint, is_positive_definite, True, name,
                         dict(operators=operators))

    @property
    def operators(self):
        return [list(r) for r in self._rows]

    def _shape(self):
        n = sum(self._sizes)
        return _batch(*[op._shape()[:-2] for r in self._rows for op in r]) + (n, n)

    def _broadcast_all(self, parts):
        tf = _tf()
        batch = _batch(self._shape()[:-2], *[tuple(p.shape[:-2]) for p in parts])
        return [tf.broadcast_to(p, list(batch) + list(p.shape[-2:])) for p in parts]

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        tf = _tf()
        xs = _split_rows(_arg(x, adjoint_arg), self._sizes)
        n = len(self._rows)
        outs = []
        for i in range(n):
            if adjoint:  # row i of the adjoint: the blocks (j, i) for j >= i, adjoint
                terms = [self._rows[j][i].matmul(xs[j], adjoint=True) for j in range(i, n)]
            else:
                terms = [self._rows[i][j].matmul(xs[j]) for j in range(i + 1)]
            terms = self._broadcast_all(terms)
            total = terms[0]
            for t in terms[1:]:
                total = total + t
            outs.append(total)
        return tf.concat(self._broadcast_all(outs), axis=-2)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        tf = _tf()
        bs = _split_rows(_arg(rhs, adjoint_arg), self._sizes)
        n = len(self._rows)
        xs = [None] * n
        order = range(n - 1, -1, -1) if adjoint else range(n)
        for i in order:  # forward substitution (backward for the adjoint, which is block upper triangular)
            r = bs[i]
            others = range(i + 1, n) if adjoint else range(i)
            for j in others:
                r = r - (self._rows[j][i].matmul(xs[j], adjoint=True) if adjoint else self._rows[i][j].matmul(xs[j]))
            xs[i] = self._rows[i][i].solve(r, adjoint=adjoint)
        return tf.concat(self._broadcast_all(xs), axis=-2)

    def _determinant(self):
        det = self._rows[0][0].determinant()
        for r in self._rows[1:]:
            det = det * r[-1].determinant()
        return det

    def _log_abs_determinant(self):
        out = self._rows[0][0].log_abs_determinant()
        for r in self._rows[1:]:
            out = out + r[-1].log_abs_determinant()
        return out

    def _diag_part(self):
        tf = _tf()
        parts = [r[-1].diag_part() for r in self._rows]
        batch = _batch(self._shape()[:-2], *[tuple(p.shape[:-1]) for p in parts])
        return tf.concat([tf.broadcast_to(p, list(batch) + [p.shape[-1]]) for p in parts], axis=-1)
