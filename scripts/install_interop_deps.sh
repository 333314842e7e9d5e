#!/usr/bin/env bash
# The interoperability tests (make test-interop) compare files with the real clients: Keras 3 on
# TensorFlow's backend, h5py, TensorFlow's checkpoints. They are large (about 1.5 GB installed),
# so they live in a virtualenv of their own, never in the test virtualenv.
# Prints the Python of that virtualenv; exits 3 (with the reason on stderr) when it cannot be
# made here (no network to PyPI): the tests then skip with that message.
exec bash "$(dirname "$0")/venv_with.sh" "${EF_INTEROP_VENV:-$HOME/.cache/eagerflow/interop-venv}" \
  "import tensorflow, keras, h5py" "tensorflow-cpu==2.21.*" "keras==3.15.*" h5py
