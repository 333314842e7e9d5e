"""tf.TensorArray on eagerflow's tensors, with no op of its own.

Two representations, chosen by what the indices are:
  - a Python list of element tensors (None: not written), eagerly and inside a trace while the
    indices are Python ints (or eager tensors): writes at any index, dynamic size, any shapes of
    the same element shape;
  - a buffer: one tensor [size, *element_shape], once an index is a symbolic tensor or the array
    is a loop variable of ef.while_loop inside ef.function (python/eagerflow/_control_flow.py).
    write is a tensor_scatter_nd_update, read a gather: every op differentiable, and a loop
    variable keeps its shape (eagerflow's traced loops need fixed shapes at run time). A buffer
    whose rows only the graph run knows (a symbolic size, or a dynamic array AutoGraph grew by a
    loop's trip count: _tensor_array_dynamic.py) carries its length as `_size`, an int32 tensor.
Unwritten elements read as zeros (as TF's eager TensorArray). With clear_after_read (the default),
an eager read forgets the element, as TF's eager arrays do; traced arrays keep their elements, as
TF's graph arrays (TensorLists) do.
"""
from . import _core
from . import _tensor_array_dynamic as _dynamic
from . import errors

__all__ = ["TensorArray"]
_CLEARED = object()  # an element read with clear_after_read, eagerly


def _in_trace():
    return _core._in_trace()


def _symbolic(t):
    return isinstance(t, _core.Tensor) and _in_trace() and not _has_value(t)


def _has_value(t):
    try:
        t.numpy()
        return True
    except Exception:  # noqa: BLE001 - a symbolic tensor has no value
        return False


def _static_int(x, what):
    """A Python int of x, or None when x is a symbolic tensor."""
    if isinstance(x, _core.Tensor):
        if _in_trace() and not _has_value(x):
            return None
        return int(x.numpy())
    if hasattr(x, "numpy"):
        return int(x.numpy())
    try:
        return int(x)
    except TypeError:
        raise TypeError(f"TensorArray: {what} must be an integer or an integer tensor, got {x!r}") from None


def _shape_of(t):
    return tuple(t._shape_tuple)


def _merge_shape(known, new, what="value"):
    """The element shape known so far merged with a new element's (ValueError if they differ)."""
    if known is None:
        return tuple(new)
    if len(known) != len(new) or any(a is not None and b is not None and a != b for a, b in zip(known, new)):
        raise ValueError(f"Incompatible shape for {what} ({tuple(new)}), expected ({tuple(known)})")
    return tuple(a if a is not None else b for a, b in zip(known, new))


class TensorArray:
    """tf.TensorArray(dtype, size=None, dynamic_size=None, clear_after_read=None,
    tensor_array_name=None, handle=None, flow=None, infer_shape=True, element_shape=None,
    colocate_with_first_write_call=True, name=None)."""

    def __init__(self, dtype, size=None, dynamic_size=None, clear_after_read=None, tensor_array_name=None,
                 handle=None, flow=None, infer_shape=True, element_shape=None, colocate_with_first_write_call=True,
                 name=None):
        if handle is not None or flow is not None:
            raise NotImplementedError("TensorArray: handle and flow are graph-mode TensorFlow internals, not supported")
        self._dtype = _as_dtype(dtype)
        self._dynamic_size = bool(dynamic_size)
        self._clear_after_read = True if clear_after_read is None else bool(clear_after_read)
        self._infer_shape = infer_shape
        self._element_shape = None
        if element_shape is not None and getattr(element_shape, "rank", 0) is not None:
            dims = element_shape.as_list() if hasattr(element_shape, "as_list") else list(element_shape)
            self._element_shape = tuple(None if d is None or d == -1 else int(d) for d in dims)
        if size is None:
            size = 0
            if not self._dynamic_size:
                raise ValueError("Size must be provided if dynamic_size is False.")
        n = _static_int(size, "size")
        self._size = None  # the length (an int32 tensor) when only the graph run knows it (a buffer's rows >= it)
        self._buffer = None
        if n is None:  # a symbolic size: a buffer of that many rows, made once the element shape is known
            self._list = None
            self._size = _core.cast(size, _core.DType.int32)
            if self._element_shape is not None and all(d is not None for d in self._element_shape):
                self._buffer = _dynamic.zeros_rows(self._size, self._element_shape, self._dtype)
            return
        self._list = [None] * n

    @classmethod
    def _from_buffer(cls, like, buffer, size=None):
        ta = cls.__new__(cls)
        ta.__dict__.update(like.__dict__)
        ta._list, ta._buffer, ta._size = None, buffer, size
        ta._element_shape = _shape_of(buffer)[1:]
        return ta

    def _copy(self):
        ta = TensorArray.__new__(TensorArray)
        ta.__dict__.update(self.__dict__)
        ta._list = list(self._list) if self._list is not None else None
        return ta

    # Properties.

    @property
    def dtype(self):
        return self._dtype

    @property
    def dynamic_size(self):
        return self._dynamic_size

    @property
    def element_shape(self):
        """The elements' shape (a TensorShape), or None while unknown (eagerflow's TensorShape has no
        unknown rank)."""
        from ._layers import TensorShape
        return None if self._element_shape is None else TensorShape(self._element_shape)

    @property
    def handle(self):
        raise NotImplementedError("TensorArray.handle: eagerflow's TensorArray has no resource handle")

    def _length(self):
        """The number of elements as a Python int, or None when only the graph run knows it."""
        if self._size is not None:
            return None
        return len(self._list) if self._list is not None else _shape_of(self._buffer)[0]

    def size(self, name=None):
        """The number of elements, an int32 scalar."""
        if self._size is not None:
            return self._size
        return _core.constant(self._length(), dtype=_core.DType.int32)

    # Elements.

    def _convert(self, value, what="value"):
        if isinstance(value, _core.Tensor) or isinstance(value, _core.Variable):
            t = value.value() if isinstance(value, _core.Variable) else value
            if t.dtype != self._dtype:
                raise errors.InvalidArgumentError(None, None, f"TensorArray dtype is {self._dtype.name} but Op is "
                                                  f"trying to write dtype {t.dtype.name}")
            return t
        return _core.convert_to_tensor(value, dtype=self._dtype)

    def _zeros(self):
        if self._element_shape is None or any(d is None for d in self._element_shape):
            raise ValueError("TensorArray has an unwritten element and its element shape is not known; give "
                             "element_shape or write every element")
        return _core.zeros(list(self._element_shape), dtype=self._dtype)

    def _check_index(self, i, action):
        if i < 0:
            raise errors.InvalidArgumentError(None, None, f"Tried to {action} index {i}: indices must be non-negative")

    def _to_buffer(self):
        """This array as one tensor [size, *element_shape] (the form symbolic indices need)."""
        if self._buffer is not None:
            return self
        if self._list is None:  # a symbolic size whose element shape is now known
            ta = self._copy()
            ta._buffer = _dynamic.zeros_rows(self._size, self._zeros()._shape_tuple, self._dtype)
            return ta
        if self._list and any(e is None or e is _CLEARED for e in self._list) or not self._list:
            self._zeros()  # raises when the element shape is unknown
        rows = [e if e is not None and e is not _CLEARED else self._zeros() for e in self._list]
        buffer = _core.stack(rows, 0) if rows else _core.zeros([0] + list(self._element_shape), dtype=self._dtype)
        return TensorArray._from_buffer(self, buffer)

    def write(self, index, value, name=None):
        """Writes value at index; returns the array (use the result, as TF's graph mode needs)."""
        value = self._convert(value)
        if self._infer_shape:
            self._element_shape = _merge_shape(self._element_shape, _shape_of(value))
        i = _static_int(index, "index")
        if i is None or self._list is None:
            ta = self._to_buffer()
            if self._element_shape is not None:
                ta._element_shape = _merge_shape(ta._element_shape, _shape_of(value))
            index = _core.cast(_core.convert_to_tensor(index), _core.DType.int32)
            if ta._size is not None and ta._dynamic_size:  # a write past the length grows it (within the buffer)
                ta._size = _core.maximum(ta._size, index + 1)
            idx = _core.reshape(index, [1, 1])
            ta._buffer = _core.tensor_scatter_nd_update(ta._buffer, idx, _core.expand_dims(value, 0))
            return ta
        self._check_index(i, "write to")
        if i >= len(self._list):
            if not self._dynamic_size:
                raise errors.OutOfRangeError(None, None, f"Tried to write to index {i} but array is not resizeable and "
                                             f"size is: {len(self._list)}")
            self._list.extend([None] * (i + 1 - len(self._list)))
        self._list[i] = value
        return self  # TF's eager arrays change in place as well as returning the array

    def read(self, index, name=None):
        """The element at index (zeros when never written)."""
        i = _static_int(index, "index")
        if i is None or self._list is None:
            ta = self._to_buffer()
            return _core.gather(ta._buffer, _core.cast(_core.convert_to_tensor(index), _core.DType.int32))
        self._check_index(i, "read from")
        if i >= len(self._list):
            raise errors.OutOfRangeError(None, None, f"Tried to read from index {i} but array size is: "
                                         f"{len(self._list)}")
        e = self._list[i]
        if e is _CLEARED:
            raise errors.InvalidArgumentError(None, None, f"Could not read index {i} twice because it was cleared "
                                              "after a previous read (perhaps try setting clear_after_read = false?)")
        if e is None:
            return self._zeros()
        if self._clear_after_read and not _in_trace():
            self._list[i] = _CLEARED  # TF's eager arrays forget a read element (zeros when stacked)
        return e

    def stack(self, name=None):
        """All elements stacked on a new axis 0."""
        if self._list is None:
            ta = self._to_buffer()
            if ta._size is not None and ta._dynamic_size:  # the buffer may have rows past the length
                return _dynamic.first_rows(ta._buffer, ta._size)
            return ta._buffer
        if not self._list:
            shape = [0] + list(self._element_shape or ())
            if any(d is None for d in shape):
                shape = [0]
            return _core.zeros(shape, dtype=self._dtype)
        return self._to_buffer()._buffer

    def gather(self, indices, element_shape=None, name=None):
        """The elements at indices, stacked."""
        return _core.gather(self.stack(), _core.cast(_core.convert_to_tensor(indices), _core.DType.int32))

    def concat(self, name=None):
        """All elements concatenated along their axis 0."""
        if self._list is None:
            stacked = self.stack()
            s = _shape_of(stacked)
            if len(s) < 2:
                raise errors.InvalidArgumentError(None, None, "Concat saw a scalar shape; elements need rank >= 1")
            return _core.reshape(stacked, [-1] + list(s[2:]))
        if not self._list:
            return _core.zeros([0] + list((self._element_shape or (None,))[1:]) if self._element_shape and
                               all(d is not None for d in self._element_shape[1:]) else [0], dtype=self._dtype)
        rows = [e if e is not None and e is not _CLEARED else self._zeros() for e in self._list]
        if any(len(_shape_of(r)) == 0 for r in rows):
            raise errors.InvalidArgumentError(None, None, "Concat saw a scalar shape at index 0 but requires at least "
                                              "vectors")
        return _core.concat(rows, 0)

    def unstack(self, value, name=None):
        """The rows of value (along axis 0) as the elements."""
        value = self._convert(value)
        shape = _shape_of(value)
        if not shape:
            raise ValueError("TensorArray.unstack: the value must have rank >= 1, got a scalar")
        n = shape[0]
        ta = self._copy()
        if ta._list is None and ta._size is not None:  # a symbolic size: the rows are the elements
            return TensorArray._from_buffer(ta, value)
        if self._element_shape is not None and self._infer_shape:
            _merge_shape(self._element_shape, shape[1:])
        if n > ta._length() and not ta._dynamic_size:
            raise errors.InvalidArgumentError(None, None, f"Could not write to TensorArray: the value has {n} rows but "
                                              f"the array's size is {ta._length()} and it is not resizeable")
        if ta._buffer is not None or _in_trace():
            if n == ta._length():
                return TensorArray._from_buffer(ta, value)
        ta = ta if ta._list is not None else ta._as_list()
        if n > len(ta._list):
            ta._list.extend([None] * (n - len(ta._list)))
        for i in range(n):
            ta._list[i] = value[i]
        ta._element_shape = _merge_shape(ta._element_shape, shape[1:]) if ta._infer_shape else ta._element_shape
        return ta

    def _as_list(self):
        ta = self._copy()
        n = _shape_of(self._buffer)[0]
        ta._list, ta._buffer = [self._buffer[i] for i in range(n)], None
        return ta

    def scatter(self, indices, value, name=None):
        """value's rows written at indices."""
        value = self._convert(value)
        idx = _core.convert_to_tensor(indices)
        static = None if _symbolic(idx) else [int(i) for i in idx.numpy().reshape(-1)]
        if static is None or self._buffer is not None:
            ta = self._to_buffer()
            ta._buffer = _core.tensor_scatter_nd_update(
                ta._buffer, _core.reshape(_core.cast(idx, _core.DType.int32), [-1, 1]), value)
            return ta
        ta = self
        for k, i in enumerate(static):
            ta = ta.write(i, value[k])
        return ta

    def split(self, value, lengths, name=None):
        """value cut along axis 0 into pieces of the given lengths, as the elements."""
        value = self._convert(value)
        lens = lengths.numpy().tolist() if hasattr(lengths, "numpy") else list(lengths)
        lens = [int(n) for n in lens]
        if sum(lens) != _shape_of(value)[0]:
            raise errors.InvalidArgumentError(None, None, f"Expected sum of lengths to be equal to values.shape[0], "
                                              f"but sum of lengths is {sum(lens)} and value's shape is "
                                              f"{list(_shape_of(value))}")
        ta, start = self._copy(), 0
        if len(lens) > ta._length() and not ta._dynamic_size:
            raise errors.InvalidArgumentError(None, None, f"TensorArray's size is not equal to the size of lengths "
                                              f"({len(lens)} vs. {ta._length()}), and the TensorArray is not "
                                              "marked as dynamically resizeable")
        ta = ta if ta._list is not None else ta._as_list()
        ta._list.extend([None] * (len(lens) - len(ta._list)))
        for k, n in enumerate(lens):
            ta._list[k] = value[start:start + n]
            start += n
        return ta

    def identity(self):
        """The same elements, as a new array."""
        return self._copy()

    def close(self, name=None):
        """Nothing to release (no resource behind it)."""
        return None

    def __repr__(self):
        return (f"<TensorArray dtype={self._dtype.name} size={self._length()} "
                f"element_shape={self.element_shape}>")

    # Flattening as a loop variable (python/eagerflow/_control_flow.py).

    def _ef_loop_tensor(self):
        if self._size is not None:
            raise NotImplementedError("while_loop: a TensorArray whose size is known only when the graph runs is a "
                                      "loop variable of AutoGraph's loops (a Python for/while on tensors inside "
                                      "ef.function), not of an explicit tf.while_loop")
        ta = self._to_buffer()
        return ta._buffer

    # Flattening as a loop variable or cond output of AutoGraph (autograph/_operators.py).

    def _meta(self):
        return (self._dtype, self._dynamic_size, self._clear_after_read, self._infer_shape)

    def _ag_flatten(self):
        if self._buffer is None and not any(e is not None for e in self._list or ()) and (
                self._element_shape is None or any(d is None for d in self._element_shape)):
            # nothing to carry until a write shows the element shape (but a symbolic size)
            if self._list is not None:
                return ("unshaped", self._meta(), len(self._list)), []
            return ("unshaped", self._meta(), None), [self._size]
        ta = self._to_buffer()
        if ta._size is not None:
            return ("sized", self._meta(), ta._element_shape), [ta._buffer, ta._size]
        return ("buffer", self._meta(), ta._element_shape), [ta._buffer]

    @classmethod
    def _ag_unflatten(cls, key, tensors):
        kind, (dtype, dynamic, clear, infer) = key[0], key[1]
        ta = cls.__new__(cls)
        ta._dtype, ta._dynamic_size, ta._clear_after_read, ta._infer_shape = dtype, dynamic, clear, infer
        ta._size, ta._buffer, ta._list, ta._element_shape = None, None, None, None
        if kind == "unshaped":
            if key[2] is None:
                ta._size = tensors[0]
            else:
                ta._list = [None] * key[2]
        else:
            ta._buffer = tensors[0]
            ta._element_shape = key[2]
            if kind == "sized":
                ta._size = tensors[1]
        return ta

    def _with_element_shape(self, shape):
        ta = self._copy()
        ta._element_shape = tuple(shape)
        return ta

    def _reserve(self, count):
        """This dynamic array with room for `count` (an int32 tensor) more rows: the form it grows in
        inside a traced loop whose trip count is known when the loop starts."""
        ta = self._to_buffer()
        length = ta._size if ta._size is not None else _core.constant(ta._length(), dtype=_core.DType.int32)
        extra = _dynamic.zeros_rows(count, ta._element_shape, ta._dtype)
        return TensorArray._from_buffer(ta, _core.concat([ta._buffer, extra], 0), length)

    def _ef_from_loop_tensor(self, buffer):
        return TensorArray._from_buffer(self, buffer)


def _as_dtype(dtype):
    if isinstance(dtype, _core.DType):
        return dtype
    name = getattr(dtype, "name", dtype)
    try:
        return _core.DType.__members__[{"float": "float32", "double": "float64", "int": "int32", "long": "int64"}.get(
            name, name)]
    except (KeyError, TypeError):
        raise TypeError(f"TensorArray: {dtype!r} is not a dtype") from None
