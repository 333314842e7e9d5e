"""Keras 3's RandomPerspective (channels_last): a projective warp of each image on _prep_image's
sampling, its homography from Keras' corner rule."""
from .. import _core
from . import _prep_image as pi

_r = _core.random


class RandomPerspective(pi._RandomLayer):
    """Keras' RandomPerspective: with probability p (drawn from factor's range, [0, f] for a
    number f) each image is warped so that its corners (0, 0), (w-1, 0), (0, h-1), (w-1, h-1) move
    to corner * (1 + d), d uniform in [-scale / 2, scale / 2] per coordinate; constant fill."""
    _FACTOR_BOUNDS = (0, 1)

    def __init__(self, factor=1.0, scale=1.0, interpolation="bilinear", fill_value=0.0, seed=None, data_format=None,
                 name=None, **kwargs):
        super().__init__(seed, data_format, name, **kwargs)
        self.factor = self._set_factor(factor)
        if scale < 0.0 or scale > 1.0:
            raise ValueError(f"The `scale` argument should be a number in the range [0,1]. Received: scale={scale}")
        if interpolation not in ("nearest", "bilinear"):
            raise NotImplementedError(f"Unknown `interpolation` {interpolation}. Expected of one "
                                      "('nearest', 'bilinear').")
        self.scale, self.interpolation, self.fill_value = scale, interpolation, fill_value

    def _augment(self, x):
        from .ops.image import _homography
        x = pi._float(x)
        h, w = x._shape_tuple[1], x._shape_tuple[2]
        probability = self._uniform(x, self.factor[0], self.factor[1])
        apply = self._uniform(x, 0.0, 1.0) < probability
        like = _core.tile(_core.reshape(pi._float(x[:, 0, 0, 0]), [-1, 1]), [1, 8])
        d = like * 0.0 if self.scale == 0 else _r.uniform_like(like, -0.5 * self.scale, 0.5 * self.scale,
                                                               seed=self._generator)
        start = _core.reshape(like * 0.0, [-1, 4, 2]) + _core.convert_to_tensor(
            [[0.0, 0.0], [w - 1.0, 0.0], [0.0, h - 1.0], [w - 1.0, h - 1.0]])
        end = start + start * _core.reshape(d, [-1, 4, 2])
        m = _core.cast(_homography(_core.cast(start, "float64"), _core.cast(end, "float64")), "float32")
        col = [_core.reshape(m[:, i], [-1, 1, 1]) for i in range(8)]
        y = pi._transform(x, col[0:3], col[3:6], "constant", self.interpolation, self.fill_value, col[6:8])
        return _core.where(apply, y, x)

    def get_config(self):
        c = super().get_config()
        c.update({"factor": self.factor, "scale": self.scale, "interpolation": self.interpolation,
                  "fill_value": self.fill_value})
        return c


__all__ = ["RandomPerspective"]
