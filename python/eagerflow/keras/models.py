"""ef.keras.models: Model and Sequential (load a saved model with ef.saved_model.load)."""
from .._training import Model, Sequential  # noqa: F401

__all__ = ["Model", "Sequential"]
