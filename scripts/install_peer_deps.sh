#!/usr/bin/env bash
# The peers the benchmarks in bench/peers/ compare with: PyTorch, JAX, TensorFlow + Keras 3 and
# onnxruntime, in a virtualenv of their own (about 6 GB: PyPI's torch wheel brings its CUDA
# libraries along; on a CPU they are loaded and unused). Never needed by the build or the tests.
# Prints the Python of that virtualenv; exits 3 with the reason when it cannot be made here.
#   bench/peers/*.py take it as --peer-python (default ~/.cache/eagerflow/peers/bin/python).
set -uo pipefail
VENV="${EF_PEER_VENV:-$HOME/.cache/eagerflow/peers}"
PY="$VENV/bin/python"
want=(torch jax jaxlib tensorflow-cpu keras onnx onnxruntime numpy threadpoolctl)
if [ -x "$PY" ] && "$PY" -c "import torch, jax, tensorflow, keras, onnxruntime" 2>/dev/null; then
  echo "$PY"; exit 0
fi
python3 -m venv "$VENV" >&2 || { echo "cannot create the virtualenv $VENV" >&2; exit 3; }
if ! "$PY" -m pip install -q --disable-pip-version-check "${want[@]}" >&2; then
  echo "cannot install ${want[*]} into $VENV (no access to PyPI?)" >&2; exit 3
fi
echo "$PY"
