"""Keras 3's ContrastLimitedAdaptiveHistogramEqualization: per-tile clipped histogram equalization,
bilinearly blended between tiles (Keras' vectorised algorithm)."""
import eagerflow as _ef

from .. import _core
from . import _prep_color as col
from . import _prep_image as pi


class ContrastLimitedAdaptiveHistogramEqualization(pi._ImageLayer):
    """Keras' CLAHE: each image cut into tile_grid_size tiles (padded symmetrically to whole
    tiles), each tile's 256-bin histogram of every channel clipped at clip_limit * pixels / 256 and
    the excess spread evenly, the normalised CDFs looked up and blended bilinearly between tile
    centres. Not random: it applies in training and inference alike; the result has the input's
    dtype, as Keras'."""

    def __init__(self, value_range=(0, 255), clip_limit=4.0, tile_grid_size=(8, 8), data_format=None, name=None,
                 **kwargs):
        if data_format not in (None, "channels_last", "channels_first"):
            raise ValueError(f"The `data_format` argument must be one of {{'channels_first', 'channels_last'}}. "
                             f"Received: data_format={data_format}")
        super().__init__(None, name, **kwargs)
        self.data_format = data_format or "channels_last"
        self.value_range, self.clip_limit, self.tile_grid_size = value_range, clip_limit, tile_grid_size

    def call(self, inputs):
        x = inputs if isinstance(inputs, _core.Tensor) else _core.convert_to_tensor(inputs)
        first = self.data_format == "channels_first"
        if first:
            x = _core.transpose(x, [0, 2, 3, 1] if x.ndim == 4 else [1, 2, 0])
        dtype = x.dtype
        y = col._rescale(pi._float(x), self.value_range, (0, 255))
        single = y.ndim == 3
        if single:
            y = _core.expand_dims(y, 0)
        y = self._clahe(y)
        if single:
            y = _core.squeeze(y, [0])
        y = _core.cast(col._rescale(y, (0, 255), self.value_range), dtype.name)
        if first:
            y = _core.transpose(y, [0, 3, 1, 2] if y.ndim == 4 else [2, 0, 1])
        return y

    def _clahe(self, images):
        h, w, c = images._shape_tuple[1], images._shape_tuple[2], images._shape_tuple[3]
        gh, gw = self.tile_grid_size
        th, tw = (h + gh - 1) // gh, (w + gw - 1) // gw
        ph, pw = th * gh - h, tw * gw - w
        if ph or pw:
            padded = _ef.pad(images, [[0, 0], [0, ph], [0, pw], [0, 0]], mode="SYMMETRIC")
        else:
            padded = images
        tiles = _core.reshape(padded, [-1, gh, th, gw, tw, c])
        tiles = _core.transpose(tiles, [0, 1, 3, 5, 2, 4])
        tiles = _core.reshape(tiles, [-1, gh, gw, c, th * tw])
        levels = _core.clip_by_value(_core.cast(tiles, "int32"), 0, 255)
        hists = _core.reduce_sum(_ef.one_hot(levels, 256), [4])
        if self.clip_limit > 0:
            limit = self.clip_limit * (th * tw) / 256.0
            clipped = _core.clip_by_value(hists, 0.0, limit)
            hists = clipped + _core.reduce_sum(hists - clipped, [-1], keepdims=True) / 256.0
        cdf = _ef.math.cumsum(hists, axis=-1)
        cdf_min = _core.reduce_min(cdf, [-1], keepdims=True)
        denominator = float(th * tw) - cdf_min
        denominator = _core.where(denominator == 0.0, _core.ones_like(denominator), denominator)
        cdf = _core.clip_by_value((cdf - cdf_min) * 255.0 / denominator, 0.0, 255.0)
        # one tile of edge on every side, so border pixels blend with their own tile
        cdf = _core.concat([cdf[:, :1], cdf, cdf[:, -1:]], 1)
        cdf = _core.concat([cdf[:, :, :1], cdf, cdf[:, :, -1:]], 2)  # [B, gh + 2, gw + 2, C, 256]

        def grid(n_pixels, tile, n_tiles):
            g = (_core.cast(_core.range(n_pixels), "float32") - tile / 2.0) / tile + 1.0
            lo = _core.floor(g)
            weight = g - lo
            return (_core.cast(_core.clip_by_value(lo, 0.0, n_tiles + 1.0), "int32"),
                    _core.cast(_core.clip_by_value(lo + 1.0, 0.0, n_tiles + 1.0), "int32"), weight)
        y0, y1, wy = grid(th * gh, th, gh)
        x0, x1, wx = grid(tw * gw, tw, gw)
        pixels = _core.clip_by_value(_core.cast(_core.clip_by_value(padded, 0.0, 255.0), "int32"), 0, 255)
        # each pixel's CDF value in a tile (ty, tx): gather along the tile axes, then the level
        table = _core.transpose(cdf, [1, 2, 0, 3, 4])  # [gh + 2, gw + 2, B, C, 256]

        def lookup(ty, tx):
            rows = _core.gather(table, ty, axis=0)  # [H, gw + 2, B, C, 256]
            cells = _core.gather(rows, tx, axis=1)  # [H, W, B, C, 256]
            cells = _core.transpose(cells, [2, 0, 1, 3, 4])  # [B, H, W, C, 256]
            return _core.squeeze(_ef.gather(cells, _core.expand_dims(pixels, -1), batch_dims=4), [-1])
        wy4 = _core.reshape(wy, [1, -1, 1, 1])
        wx4 = _core.reshape(wx, [1, 1, -1, 1])
        top = lookup(y0, x0) * (1.0 - wx4) + lookup(y0, x1) * wx4
        bottom = lookup(y1, x0) * (1.0 - wx4) + lookup(y1, x1) * wx4
        out = top * (1.0 - wy4) + bottom * wy4
        return out[:, :h, :w, :]

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def get_config(self):
        c = super().get_config()
        c.update({"value_range": self.value_range, "clip_limit": self.clip_limit,
                  "tile_grid_size": self.tile_grid_size, "data_format": self.data_format})
        return c


__all__ = ["ContrastLimitedAdaptiveHistogramEqualization"]
