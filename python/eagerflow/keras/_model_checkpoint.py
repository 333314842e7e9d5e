"""keras.callbacks.ModelCheckpoint: the C++ callback, whose file's folder is created as Keras
creates it (Keras makes the folder of filepath before writing; the C++ writer expects it).

The folder is made when the callback is built, where its name holds no format field (a folder
named by `{epoch}` is left to exist already); Keras makes it at the first save."""
import os

from .. import _core


class ModelCheckpoint(_core._train.ModelCheckpoint):
    __doc__ = _core._train.ModelCheckpoint.__doc__

    def __init__(self, filepath, *args, **kwargs):
        filepath = os.fspath(filepath)
        super().__init__(filepath, *args, **kwargs)
        folder = os.path.dirname(filepath)
        if folder and "{" not in folder:
            os.makedirs(folder, exist_ok=True)
