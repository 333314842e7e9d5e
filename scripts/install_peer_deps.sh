#!/usr/bin/env bash
# The peers the benchmarks in bench/peers/ compare with: PyTorch, JAX, TensorFlow + Keras 3 and
# onnxruntime, in a virtualenv of their own (about 6 GB: PyPI's torch wheel brings its CUDA
# libraries along; on a CPU they are loaded and unused). Never needed by the build or the tests.
# Prints the Python of that virtualenv; exits 3 with the reason when it cannot be made here.
#   bench/peers/*.py take it as --peer-python (default ~/.cache/eagerflow/peers/bin/python).
exec bash "$(dirname "$0")/venv_with.sh" "${EF_PEER_VENV:-$HOME/.cache/eagerflow/peers}" \
  "import torch, jax, tensorflow, keras, onnxruntime" \
  torch jax jaxlib tensorflow-cpu keras onnx onnxruntime numpy threadpoolctl
