"""tf.TensorShape: a shape whose rank or dims may be unknown, with TF's API (dims, rank, as_list,
merge_with, concatenate, is_compatible_with, most_specific_compatible_shape, ...).

It stays a tuple of ints and None (what Keras' build() and eagerflow's C++ take), so code that
indexes or unpacks a shape keeps working. A shape of unknown rank, TensorShape(None), is an empty
tuple marked unknown: len() and iteration raise TF's ValueError, indexing gives None."""


def _dim(value):
    """One dim as an int or None, validated as TF's Dimension (negative: ValueError; a str or
    float: TypeError)."""
    if value is None:
        return None
    if hasattr(value, "value") and type(value).__name__ == "Dimension":
        return value.value
    if isinstance(value, (bytes, str)) or not hasattr(value, "__index__"):
        raise TypeError("Dimension value must be integer or None or have an __index__ method, "
                        f"got value '{value!r}' with type '{type(value)}'")
    value = int(value.__index__())
    if value < 0:
        raise ValueError(f"Dimension {value} must be >= 0")
    return value


class TensorShape(tuple):
    """A shape: a tuple of ints (None for an unknown dim), or TensorShape(None) of unknown rank."""

    _unknown_rank = False

    def __new__(cls, dims=None):
        if dims is None:
            shape = super().__new__(cls, ())
            shape._unknown_rank = True
            return shape
        if isinstance(dims, TensorShape):
            return dims if type(dims) is cls else (cls(None) if dims._unknown_rank else super().__new__(cls, dims))
        if isinstance(dims, (bytes, str)) or not hasattr(dims, "__iter__"):
            return super().__new__(cls, (_dim(dims),))  # TensorShape(3) is TensorShape([3]), as TF's
        return super().__new__(cls, tuple(_dim(d) for d in dims))

    def __init__(self, dims=None):
        super().__init__()

    # -- rank and dims ------------------------------------------------------------------------
    @property
    def rank(self):
        return None if self._unknown_rank else tuple.__len__(self)

    ndims = rank

    @property
    def dims(self):
        """The dims as TF 1's Dimension objects (None for an unknown rank), as TF's."""
        if self._unknown_rank:
            return None
        from .compat import Dimension
        return [Dimension(d) for d in tuple.__iter__(self)]

    def __len__(self):
        if self._unknown_rank:
            raise ValueError("Cannot take the length of shape with unknown rank.")
        return tuple.__len__(self)

    def __iter__(self):
        if self._unknown_rank:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return tuple.__iter__(self)

    def __bool__(self):
        # TF's: a scalar's shape is true; only an unknown rank is false.
        return not self._unknown_rank

    def __getitem__(self, key):
        if not self._unknown_rank:
            item = tuple.__getitem__(self, key)
            return TensorShape(item) if isinstance(key, slice) else item
        if not isinstance(key, slice):
            return None
        start, stop, step = key.start, key.stop, key.step
        if (step is None or step == 1) and stop is not None and stop >= 0 and (start is None or start >= 0):
            return TensorShape([None] * max(0, stop - (start or 0)))
        return TensorShape(None)

    def as_list(self):
        if self._unknown_rank:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(tuple.__iter__(self))

    def is_fully_defined(self):
        return not self._unknown_rank and all(d is not None for d in tuple.__iter__(self))

    def num_elements(self):
        if not self.is_fully_defined():
            return None
        n = 1
        for d in tuple.__iter__(self):
            n *= d
        return n

    # -- comparisons --------------------------------------------------------------------------
    def is_compatible_with(self, other):
        other = as_shape(other)
        if self._unknown_rank or other._unknown_rank:
            return True
        return self.rank == other.rank and all(
            a is None or b is None or a == b for a, b in zip(tuple.__iter__(self), tuple.__iter__(other)))

    def assert_is_compatible_with(self, other):
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are incompatible")

    def merge_with(self, other):
        other = as_shape(other)
        if self._unknown_rank:
            return other
        if other._unknown_rank:
            return self
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        return TensorShape([a if a is not None else b for a, b in zip(tuple.__iter__(self), tuple.__iter__(other))])

    def most_specific_compatible_shape(self, other):
        """The most specific shape both are compatible with: unknown where they differ."""
        other = as_shape(other)
        if self._unknown_rank or other._unknown_rank or self.rank != other.rank:
            return TensorShape(None)
        return TensorShape([a if a == b else None for a, b in zip(tuple.__iter__(self), tuple.__iter__(other))])

    def most_specific_common_supertype(self, others):
        result = self
        for other in others:
            if not isinstance(other, TensorShape):
                return None
            result = result.most_specific_compatible_shape(other)
        return result

    def is_subtype_of(self, other):
        if not isinstance(other, TensorShape):
            return False
        if other._unknown_rank:
            return True
        if self._unknown_rank or self.rank != other.rank:
            return False
        return all(b is None or a == b for a, b in zip(tuple.__iter__(self), tuple.__iter__(other)))

    def __eq__(self, other):
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        if self._unknown_rank or other._unknown_rank:
            return self._unknown_rank and other._unknown_rank
        return tuple.__eq__(self, other)

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self):
        return hash(None) if self._unknown_rank else tuple.__hash__(self)

    # -- building shapes ----------------------------------------------------------------------
    def concatenate(self, other):
        other = as_shape(other)
        if self._unknown_rank or other._unknown_rank:
            return TensorShape(None)
        return TensorShape(tuple(tuple.__iter__(self)) + tuple(tuple.__iter__(other)))

    def __add__(self, other):
        return self.concatenate(other)

    def __radd__(self, other):
        return as_shape(other).concatenate(self)

    def with_rank(self, rank):
        if self.rank is None:
            return TensorShape([None] * rank)
        if self.rank != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")
        return self

    def with_rank_at_least(self, rank):
        if self.rank is not None and self.rank < rank:
            raise ValueError(f"Shape {self} must have rank at least {rank}")
        return self

    def with_rank_at_most(self, rank):
        if self.rank is not None and self.rank > rank:
            raise ValueError(f"Shape {self} must have rank at most {rank}")
        return self

    def assert_has_rank(self, rank):
        if self.rank not in (None, rank):
            raise ValueError(f"Shape {self} must have rank {rank}")

    def assert_same_rank(self, other):
        other = as_shape(other)
        if self.rank is not None and other.rank is not None and self.rank != other.rank:
            raise ValueError(f"Shapes {self} and {other} must have the same rank")

    def assert_is_fully_defined(self):
        if not self.is_fully_defined():
            raise ValueError(f"Shape {self} is not fully defined")

    # -- text and pickling --------------------------------------------------------------------
    def __repr__(self):
        return "TensorShape(None)" if self._unknown_rank else f"TensorShape({self.as_list()})"

    def __str__(self):
        return "<unknown>" if self._unknown_rank else tuple.__repr__(self)

    def __reduce__(self):
        return (TensorShape, (None if self._unknown_rank else self.as_list(),))


def as_shape(shape):
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)
