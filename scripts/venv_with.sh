#!/usr/bin/env bash
# A virtualenv at VENV whose Python imports MODULES, made with pip from PyPI if it does not yet.
#   scripts/venv_with.sh VENV "import a, b" PACKAGE...
# Prints that Python; exits 3 (the reason on stderr) when it cannot be made here (no network to
# PyPI), so callers can skip what needs it and say why.
set -uo pipefail
VENV=$1 CHECK=$2
shift 2
PY="$VENV/bin/python"
if [ -x "$PY" ] && "$PY" -c "$CHECK" 2>/dev/null; then
  echo "$PY"; exit 0
fi
python3 -m venv "$VENV" >&2 || { echo "cannot create the virtualenv $VENV" >&2; exit 3; }
if ! "$PY" -m pip install -q --disable-pip-version-check "$@" >&2; then
  echo "cannot install $* into $VENV (no access to PyPI?)" >&2; exit 3
fi
echo "$PY"
