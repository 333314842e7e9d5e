#!/usr/bin/env bash
# Installs the Debian packages eagerflow needs; quiet and quick when all are present.
set -euo pipefail
# ocl-icd-opencl-dev is only a Recommends of libdnnl-dev, but its CMake config needs OpenCL.
# graphviz: a test checks that exported DOT parses. libsleef-dev: vectorized math.
needed=(cmake ninja-build g++ make libdnnl-dev ocl-icd-opencl-dev libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev graphviz libsleef-dev)
missing=()
for p in "${needed[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "Installing: ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
