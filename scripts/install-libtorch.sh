#!/usr/bin/env bash
# Installs libtorch 2.9.0 for the CNN task's libtorch backend (burn-tch): PyPI's torch 2.9.0 wheel
# with its CUDA libraries, in a virtual environment in .torch/ (git ignores it; about 6.7 GB, 2-3
# minutes). The CUDA libraries are needed even on CPUs: tch's C++ shim links libtorch_cuda.so,
# whose dependencies (cuBLAS, cuDNN, NCCL, ...) must then load, and PyTorch itself (the step
# benchmark) imports only with them. Idempotent. Prints the LIBTORCH directory on its last line.
#
# Override the place with PROPULATE_TORCH_VENV. A machine that already has a libtorch 2.9.0 can
# skip this and export LIBTORCH itself.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${PROPULATE_TORCH_VENV:-$PWD/.torch}"
libtorch() { "$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' | sed 's|$|/torch|'; }
if [ -f "$venv/.complete" ] && [ -d "$(libtorch)/lib" ]; then
    libtorch
    exit 0
fi
echo "install-libtorch: installing torch 2.9.0 into $venv" >&2
if ! python3 -m venv "$venv" >/dev/null 2>&1; then
    # Debian's python3 keeps venv in a package of its own.
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-venv >/dev/null
    rm -rf "$venv"
    python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q torch==2.9.0 numpy >&2
touch "$venv/.complete"
libtorch
