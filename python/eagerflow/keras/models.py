"""ef.keras.models: Model and Sequential, and load_model for whole-model files
(ef.keras.saving.save_model; load a saved model for inference with ef.saved_model.load)."""
from .._training import Model, Sequential  # noqa: F401
from . import saving  # noqa: F401 - ef.keras.saving; model.save(path.efmodel)
from .saving import clone_model, load_model, model_from_json  # noqa: F401

__all__ = ["Model", "Sequential", "clone_model", "load_model", "model_from_json"]
