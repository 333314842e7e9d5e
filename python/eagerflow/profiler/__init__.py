"""ef.profiler, as tf.profiler: tf.profiler.experimental's start/stop, Profile and Trace."""
from . import experimental  # noqa: F401

__all__ = ["experimental"]
