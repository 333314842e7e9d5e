"""Keras 3's MaxNumBoundingBoxes: a batch's bounding boxes cut or padded to a fixed count."""
from .. import _core
from . import _prep_image as pi


class MaxNumBoundingBoxes(pi._ImageLayer):
    """Keras' MaxNumBoundingBoxes(max_number, fill_value=-1): given {"images", "bounding_boxes":
    {"boxes": [B, N, 4], "labels": [B, N]}}, keeps the first max_number boxes and labels and pads
    with fill_value up to it (boxes as float32, as Keras'); the images pass unchanged. A dict with
    boxes needs bounding_box_format, as in Keras."""

    def __init__(self, max_number, fill_value=-1, bounding_box_format=None, name=None, **kwargs):
        super().__init__(kwargs.pop("data_format", None), name, **kwargs)
        self.max_number = int(max_number)
        self.fill_value = int(fill_value)
        self.bounding_box_format = bounding_box_format

    def __call__(self, inputs, training=None, **kwargs):
        if isinstance(inputs, dict):
            return self.call(inputs)
        return super().__call__(inputs, training=training, **kwargs)

    def _fit(self, t, rank):
        import eagerflow as ef
        t = t[:, :self.max_number]
        known = t._shape_tuple[1]
        if known is not None:
            if self.max_number > known:
                t = _core.pad(t, [[0, 0], [0, self.max_number - known]] + [[0, 0]] * (rank - 2),
                              constant_values=self.fill_value)
            return t
        # a box count known only when the graph runs (a padded Dataset batch)
        tail = [4] if rank == 3 else []
        # a [B, max_number, ...] block of fill_value (B from t, even with no boxes), then the first max_number
        block = ef.tile(ef.reduce_sum(t, axis=1, keepdims=True) * 0, [1, self.max_number] + [1] * (rank - 2))
        t = ef.concat([t, block + ef.cast(self.fill_value, t.dtype)], 1)[:, :self.max_number]
        return ef.reshape(t, [-1, self.max_number] + tail)

    def call(self, inputs):
        if not isinstance(inputs, dict):
            return inputs
        out = dict(inputs)
        if "bounding_boxes" in inputs:
            if not self.bounding_box_format:
                raise ValueError(f"You passed an input with a 'bounding_boxes' key, but you didn't specify a bounding "
                                 f"box format. Pass a `bounding_box_format` argument to your {type(self).__name__} "
                                 "layer, e.g. `bounding_box_format='xyxy'`.")
            boxes = dict(inputs["bounding_boxes"])
            extra = set(boxes) - {"boxes", "labels"}
            if extra:
                raise KeyError(f"There are unsupported keys in `bounding_boxes`: {sorted(extra)}. "
                               "Only `boxes` and `labels` are supported.")
            b = _core.cast(_core.convert_to_tensor(boxes["boxes"]), "float32")
            labels = _core.convert_to_tensor(boxes["labels"])
            boxes["boxes"] = self._fit(b, 3)
            boxes["labels"] = self._fit(labels, 2)
            out["bounding_boxes"] = boxes
        return out

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        c = super().get_config()
        # Keras 3.15 writes max_number only; fill_value and the format too, so from_config rebuilds it
        c.update({"max_number": self.max_number, "fill_value": self.fill_value,
                  "bounding_box_format": self.bounding_box_format})
        return c


__all__ = ["MaxNumBoundingBoxes"]
