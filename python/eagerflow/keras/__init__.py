"""ef.keras: layers, Model/Sequential with compile/fit/evaluate/predict, optimizers, losses,
metrics and callbacks, with Keras' names (README.md, "Python")."""
from .. import _training
from . import callbacks, config, initializers, layers, losses, metrics, mixed_precision, models, optimizers, saving
from . import datasets, preprocessing, utils
from .mixed_precision import DTypePolicy
from .layers import Input
from .._training import History, Model, Sequential
from . import backend, ops, random  # issue 33: keras.ops, keras.random, keras.backend
from ._variable import Variable  # issue 33: Keras 3 names

__all__ = ["Input", "History", "Model", "Sequential", "callbacks", "config", "initializers", "layers", "losses", "metrics", "models",
           "optimizers", "saving", "mixed_precision", "DTypePolicy", "datasets", "preprocessing", "utils", "backend", "ops",
           "random", "Variable"]
