"""Keras 3's OrthogonalRegularizer: a penalty on the cosine similarity between the rows (or the
columns) of a rank-2 weight, written from ef ops so it differentiates and traces."""
import eagerflow as _ef

from .regularizers import Regularizer, _factor


class OrthogonalRegularizer(Regularizer):
    """factor * mean over pairs i < j of |cos(w_i, w_j)| (rows of w for mode="rows", columns for
    "columns"): 0 for orthogonal rows, up to factor for parallel ones."""

    def __init__(self, factor=0.01, mode="rows"):
        self.factor = _factor(factor, "factor")
        if mode not in ("rows", "columns"):
            raise ValueError(f'Invalid value for argument `mode`. Expected one of {{"rows", "columns"}}. '
                             f"Received: mode={mode}")
        self.mode = mode

    def __call__(self, inputs):
        from .ops.nn import normalize
        x = inputs if isinstance(inputs, (_ef.Tensor, _ef.Variable)) else _ef.convert_to_tensor(inputs)
        if len(x.shape) != 2:
            raise ValueError(f"Inputs to OrthogonalRegularizer must have rank 2. Received: inputs.shape={x.shape}")
        if self.mode == "rows":
            x = normalize(x, axis=1)
            product = _ef.matmul(x, x, transpose_b=True)
            size = x.shape[0]
        else:
            x = normalize(x, axis=0)
            product = _ef.matmul(x, x, transpose_a=True)
            size = x.shape[1]
        off_diagonal = product * (1.0 - _ef.eye(size, dtype=x.dtype))
        pairs = size * (size - 1.0) / 2.0
        return self.factor * 0.5 * _ef.reduce_sum(_ef.abs(off_diagonal)) / pairs

    def get_config(self):
        return {"factor": self.factor, "mode": self.mode}

    def __repr__(self):
        return f"OrthogonalRegularizer(factor={self.factor}, mode={self.mode!r})"


orthogonal_regularizer = OrthogonalRegularizer
