"""Keras 3's Masking written from ef ops: the steps whose features all equal mask_value are zeroed
and masked, and the mask travels with the output (as Embedding(mask_zero=True)'s), so the C++ RNN
layers and GlobalAveragePooling1D skip them."""
import eagerflow as _ef

from .. import _core
from ._catalogue_base import CatalogueLayer, register


class Masking(CatalogueLayer):
    """Masks the timesteps (axis 1 entries) whose every feature equals mask_value."""

    _config = ("mask_value",)

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        self.mask_value = mask_value

    def call(self, inputs):
        mask = _ef.reduce_any(_ef.not_equal(inputs, _ef.cast(self.mask_value, inputs.dtype)), axis=-1)
        outputs = inputs * _ef.cast(_ef.expand_dims(mask, -1), inputs.dtype)
        _core._set_mask(outputs, mask)
        return outputs


register(Masking)
