#!/usr/bin/env bash
# The interoperability tests (make test-interop) compare files with the real clients: Keras 3 on
# TensorFlow's backend, h5py, TensorFlow's checkpoints. They are large (about 1.5 GB installed),
# so they live in a virtualenv of their own, never in the test virtualenv.
# Prints the Python of that virtualenv; exits 3 (with the reason on stderr) when it cannot be
# made here (no network to PyPI): the tests then skip with that message.
set -uo pipefail
VENV="${EF_INTEROP_VENV:-$HOME/.cache/eagerflow/interop-venv}"
PY="$VENV/bin/python"
want=(tensorflow-cpu==2.21.* keras==3.15.* h5py)
if [ -x "$PY" ] && "$PY" -c "import tensorflow, keras, h5py" 2>/dev/null; then
  echo "$PY"; exit 0
fi
python3 -m venv "$VENV" >&2 || { echo "cannot create the virtualenv $VENV" >&2; exit 3; }
if ! "$PY" -m pip install -q --disable-pip-version-check "${want[@]}" >&2; then
  echo "cannot install ${want[*]} into $VENV (no access to PyPI?)" >&2; exit 3
fi
echo "$PY"
