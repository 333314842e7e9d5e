"""ef.keras.preprocessing.sequence: pad_sequences, as keras.utils'."""
from ..utils import pad_sequences

__all__ = ["pad_sequences"]
