"""Keras 3's Pipeline: layers applied in order, as one layer (e.g. an augmentation chain for a
Dataset.map), with the training flag passed on and the layers in its config."""
from ._catalogue_base import CatalogueLayer, register
from ._layers_wrappers import deserialize, serialize


class Pipeline(CatalogueLayer):
    """Pipeline(layers): layers[-1](... layers[0](inputs)); unlike Sequential it is not a model (no
    fit), and a direct call trains (training=True), as Keras' Pipeline."""

    def __init__(self, layers, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self._pipeline_layers = list(layers)

    @property
    def layers(self):
        return self._pipeline_layers

    def __call__(self, inputs, training=None, **kwargs):
        if isinstance(inputs, dict):  # {"images", "labels"}: passed on to layers that take it (MixUp)
            return self.call(inputs, training=True if training is None else training)
        return super().__call__(inputs, training=True if training is None else training, **kwargs)

    def call(self, inputs, training=True):
        for layer in self._pipeline_layers:
            inputs = layer(inputs, training=training) if training is not None else layer(inputs)
        return inputs

    def compute_output_shape(self, input_shape):
        for layer in self._pipeline_layers:
            input_shape = layer.compute_output_shape(input_shape)
        return input_shape

    def get_config(self):
        return {"layers": [serialize(layer) for layer in self._pipeline_layers], "name": self.name}

    @classmethod
    def from_config(cls, config):
        layers = config.get("layers")
        if not isinstance(layers, (list, tuple)):
            raise ValueError(f"`Pipeline` config must contain a `layers` key mapping to a list of serialized "
                             f"layers. Received config with layers={layers}.")
        return cls([deserialize(c) if isinstance(c, dict) else c for c in layers],
                   **{k: v for k, v in config.items() if k != "layers"})


register(Pipeline)
