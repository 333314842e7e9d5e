"""ef.version, as tf.version. VERSION (and ef.__version__) is the TensorFlow release whose API
eagerflow follows, so that TF programs that test the version (`tf.__version__ >= "2."`,
`int(tf.__version__.split(".")[1]) >= 16`) take their TF 2 paths; eagerflow's own release is
EAGERFLOW_VERSION."""
VERSION = "2.21.0"
EAGERFLOW_VERSION = "0.1.0"
