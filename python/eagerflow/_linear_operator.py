"""tf.linalg.LinearOperator: a matrix [..., M, N] known by what it does (matmul, solve, determinant, ...), so that
a structured operator (diagonal, triangular, a product, ...) never needs its dense matrix. The concrete operators
are in _linear_operators.py; each overrides the methods its structure makes cheap, the rest fall back to the
dense matrix here. Pure Python over eagerflow ops, as TF's (they trace and differentiate like the ops do).
"""
import numpy as _np


def _tf():
    import eagerflow  # the package, imported late: this module loads while eagerflow.linalg does
    return eagerflow


def _t(x, dtype=None):
    tf = _tf()
    if isinstance(x, tf.Tensor):
        return x
    return tf.convert_to_tensor(x, dtype=dtype)


def _swap_last(x):
    return _tf().linalg.adjoint(x)


class LinearOperator:
    """Base class of TF's linear operators; subclasses give _shape() and _matmul() at least."""

    def __init__(self, dtype, graph_parents=None, is_non_singular=None, is_self_adjoint=None,
                 is_positive_definite=None, is_square=None, name=None, parameters=None):
        if is_positive_definite:
            if is_non_singular is False:
                raise ValueError("A positive definite matrix is always non-singular.")
            is_non_singular = True
        if is_non_singular and is_square is False:
            raise ValueError("A non-singular matrix is always square.")
        if is_non_singular:
            is_square = True
        if is_self_adjoint:
            if is_square is False:
                raise ValueError("A self-adjoint matrix is always square.")
            is_square = True
        self._dtype = dtype
        self._is_non_singular = is_non_singular
        self._is_self_adjoint = is_self_adjoint
        self._is_positive_definite = is_positive_definite
        self._is_square_set = is_square
        self._name = name or type(self).__name__
        self._parameters = dict(parameters or {})
        self._graph_parents = list(graph_parents or [])

    # ---- description
    @property
    def dtype(self):
        return self._dtype

    @property
    def name(self):
        return self._name

    @property
    def parameters(self):
        return dict(self._parameters)

    @property
    def graph_parents(self):
        return list(self._graph_parents)

    @property
    def is_non_singular(self):
        return self._is_non_singular

    @property
    def is_self_adjoint(self):
        return self._is_self_adjoint

    @property
    def is_positive_definite(self):
        return self._is_positive_definite

    @property
    def is_square(self):
        if self._is_square_set is not None:
            return self._is_square_set
        m, n = self.range_dimension, self.domain_dimension
        return None if m is None or n is None else m == n

    @property
    def shape(self):
        return _tf().TensorShape(list(self._shape()))

    def shape_tensor(self, name="shape_tensor"):
        return _t(list(self._shape()), _tf().int32)

    @property
    def batch_shape(self):
        return _tf().TensorShape(list(self._shape()[:-2]))

    def batch_shape_tensor(self, name="batch_shape_tensor"):
        return _t(list(self._shape()[:-2]), _tf().int32)

    @property
    def tensor_rank(self):
        return len(self._shape())

    def tensor_rank_tensor(self, name="tensor_rank_tensor"):
        return _t(self.tensor_rank, _tf().int32)

    @property
    def domain_dimension(self):
        return self._shape()[-1]

    def domain_dimension_tensor(self, name="domain_dimension_tensor"):
        return _t(self.domain_dimension, _tf().int32)

    @property
    def range_dimension(self):
        return self._shape()[-2]

    def range_dimension_tensor(self, name="range_dimension_tensor"):
        return _t(self.range_dimension, _tf().int32)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name} shape={tuple(self._shape())} dtype={self.dtype}>"

    # ---- checks TF makes before computing
    def _check_input_dtype(self, x):
        if x.dtype != self.dtype:
            raise TypeError(f"{self.name}: expected argument to have dtype {self.dtype}, found {x.dtype} in tensor {x}")

    def _check_square(self, what):
        if self.is_square is False:
            raise NotImplementedError(f"{what} not implemented for an operator that is expected to not be square.")

    def _check_solvable(self):
        if self.is_non_singular is False:
            raise NotImplementedError("Exact solve not implemented for an operator that is expected to be singular.")
        if self.is_square is False:
            raise NotImplementedError("Exact solve not implemented for an operator that is expected to not be square.")

    def _check_rows(self, x, adjoint, adjoint_arg, solve):
        rows = x.shape[-1] if adjoint_arg else x.shape[-2]
        want = self.range_dimension if adjoint != solve else self.domain_dimension
        if rows is not None and want is not None and rows != want:
            raise ValueError(f"{self.name}: the argument's {'columns' if adjoint_arg else 'rows'} ({rows}) must match "
                             f"the operator's {'range' if adjoint != solve else 'domain'} dimension ({want}); "
                             f"operator shape {tuple(self._shape())}, argument shape {tuple(x.shape)}")

    # ---- the public methods (TF's names and arguments)
    def matmul(self, x, adjoint=False, adjoint_arg=False, name="matmul"):
        if isinstance(x, LinearOperator):
            return (self.adjoint() if adjoint else self)._compose(x.adjoint() if adjoint_arg else x)
        x = _t(x, self.dtype)
        self._check_input_dtype(x)
        if len(x.shape) < 2:
            raise ValueError(f"{self.name}.matmul: the argument must be a matrix (rank >= 2), "
                             f"got shape {tuple(x.shape)}")
        self._check_rows(x, adjoint, adjoint_arg, solve=False)
        return self._matmul(x, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def __matmul__(self, other):
        return self.matmul(other)

    def matvec(self, x, adjoint=False, name="matvec"):
        x = _t(x, self.dtype)
        self._check_input_dtype(x)
        return _tf().squeeze(self.matmul(_tf().expand_dims(x, -1), adjoint=adjoint), -1)

    def to_dense(self, name="to_dense"):
        return self._to_dense()

    def solve(self, rhs, adjoint=False, adjoint_arg=False, name="solve"):
        self._check_solvable()
        if isinstance(rhs, LinearOperator):
            return (self.adjoint() if adjoint else self).inverse()._compose(rhs.adjoint() if adjoint_arg else rhs)
        rhs = _t(rhs, self.dtype)
        self._check_input_dtype(rhs)
        if len(rhs.shape) < 2:
            raise ValueError(f"{self.name}.solve: rhs must be a matrix (rank >= 2), got shape {tuple(rhs.shape)}")
        self._check_rows(rhs, adjoint, adjoint_arg, solve=True)
        return self._solve(rhs, adjoint=adjoint, adjoint_arg=adjoint_arg)

    def solvevec(self, rhs, adjoint=False, name="solve"):
        rhs = _t(rhs, self.dtype)
        self._check_input_dtype(rhs)
        return _tf().squeeze(self.solve(_tf().expand_dims(rhs, -1), adjoint=adjoint), -1)

    def determinant(self, name="det"):
        self._check_square("Determinant")
        return self._determinant()

    def log_abs_determinant(self, name="log_abs_det"):
        self._check_square("Determinant")
        return self._log_abs_determinant()

    def diag_part(self, name="diag_part"):
        return self._diag_part()

    def trace(self, name="trace"):
        return self._trace()

    def add_to_tensor(self, x, name="add_to_tensor"):
        x = _t(x, self.dtype)
        self._check_input_dtype(x)
        return self._add_to_tensor(x)

    def adjoint(self, name="adjoint"):
        if self.is_self_adjoint is True:
            return self
        return self._adjoint()

    H = property(adjoint, None)

    def inverse(self, name="inverse"):
        self._check_solvable()
        return self._inverse()

    def cholesky(self, name="cholesky"):
        if not (self.is_self_adjoint and self.is_positive_definite):
            raise ValueError("Cholesky decomposition is only defined for an operator that is positive definite "
                             "and self-adjoint.")
        return self._cholesky()

    def eigvals(self, name="eigvals"):
        if not self.is_self_adjoint:
            raise NotImplementedError("Only self-adjoint matrices are supported.")
        return _tf().linalg.eigvalsh(self.to_dense())

    # ---- defaults from the dense matrix; subclasses override what their structure makes cheap
    def _shape(self):
        raise NotImplementedError(f"{type(self).__name__} must define _shape")

    def _matmul(self, x, adjoint=False, adjoint_arg=False):
        raise NotImplementedError(f"{type(self).__name__} must define _matmul")

    def _to_dense(self):
        tf = _tf()
        n = self.domain_dimension
        eye = tf.eye(n, batch_shape=list(self._shape()[:-2]), dtype=self.dtype)
        return self._matmul(eye)

    def _solve(self, rhs, adjoint=False, adjoint_arg=False):
        tf = _tf()
        if adjoint_arg:
            rhs = _swap_last(rhs)
        return tf.linalg.solve(self._batched_dense(rhs), self._batched_rhs(rhs), adjoint=adjoint)

    def _batched_dense(self, rhs):
        """The dense matrix broadcast to rhs's batch (LAPACK solves take equal batch dims)."""
        tf = _tf()
        dense = self.to_dense()
        batch = tuple(_np.broadcast_shapes(tuple(dense.shape[:-2]), tuple(rhs.shape[:-2])))
        return tf.broadcast_to(dense, list(batch) + list(dense.shape[-2:]))

    def _batched_rhs(self, rhs):
        tf = _tf()
        batch = tuple(_np.broadcast_shapes(tuple(self._shape()[:-2]), tuple(rhs.shape[:-2])))
        return tf.broadcast_to(rhs, list(batch) + list(rhs.shape[-2:]))

    def _determinant(self):
        return _tf().linalg.det(self.to_dense())

    def _log_abs_determinant(self):
        return _tf().linalg.slogdet(self.to_dense())[1]

    def _diag_part(self):
        return _tf().linalg.diag_part(self.to_dense())

    def _trace(self):
        return _tf().reduce_sum(self.diag_part(), axis=-1)

    def _add_to_tensor(self, x):
        return self.to_dense() + x

    def _adjoint(self):
        from ._linear_operators import LinearOperatorAdjoint
        return LinearOperatorAdjoint(self)

    def _inverse(self):
        from ._linear_operators import LinearOperatorInversion
        return LinearOperatorInversion(self)

    def _cholesky(self):
        from ._linear_operators import LinearOperatorLowerTriangular
        return LinearOperatorLowerTriangular(_tf().linalg.cholesky(self.to_dense()), is_non_singular=True)

    def _compose(self, other):
        from ._linear_operators import LinearOperatorComposition
        return LinearOperatorComposition([self, other])
