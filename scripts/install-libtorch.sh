#!/usr/bin/env bash
# Installs libtorch 2.9.0 for the CNN task's libtorch backend (burn-tch): PyPI's torch 2.9.0 wheel
# with its CUDA libraries, in a virtual environment in .torch/ (git ignores it; about 6.7 GB, 2-3
# minutes). The CUDA libraries are needed even on CPUs: tch's C++ shim links libtorch_cuda.so,
# whose dependencies (cuBLAS, cuDNN, NCCL, ...) must then load, and PyTorch itself (the step
# benchmark) imports only with them. Idempotent. Prints the LIBTORCH directory on its last line.
#
# Override the place with PROPULATE_TORCH_VENV.
#
# PROPULATE_LIBTORCH=DIR uses a torch that is already installed instead and downloads nothing.
# DIR is a torch directory (holding include/ and lib/libtorch_cpu.so: a wheel's site-packages/torch
# or an unpacked libtorch zip) or a virtual environment with torch in it, such as the GPU
# machine's /opt/torch/.venv (torch 2.11.0+cu130). Any version; `source scripts/libtorch-env.sh`
# then sets what a version other than 2.9.0 and a CUDA build need.
set -euo pipefail

# The torch directory in DIR: DIR itself, or the one torch package of a virtual environment.
existing_torch() {
    local dir="$1" found=()
    if [ -f "$dir/lib/libtorch_cpu.so" ] && [ -d "$dir/include" ]; then
        echo "$dir"
        return
    fi
    for t in "$dir"/lib/python3*/site-packages/torch; do
        [ -f "$t/lib/libtorch_cpu.so" ] && [ -d "$t/include" ] && found+=("$t")
    done
    if [ "${#found[@]}" -eq 1 ]; then
        echo "${found[0]}"
        return
    fi
    if [ "${#found[@]}" -gt 1 ]; then
        echo "install-libtorch: PROPULATE_LIBTORCH=$dir has several torch installs (${found[*]}); name one of them" >&2
    else
        echo "install-libtorch: PROPULATE_LIBTORCH=$dir is neither a torch directory (include/ and" \
            "lib/libtorch_cpu.so) nor a virtual environment with one (lib/python3*/site-packages/torch)" >&2
    fi
    exit 1
}

if [ -n "${PROPULATE_LIBTORCH:-}" ]; then
    # Made absolute before anything changes the directory, so that a relative DIR works.
    if ! dir="$(cd "$PROPULATE_LIBTORCH" 2>/dev/null && pwd)"; then
        echo "install-libtorch: PROPULATE_LIBTORCH=$PROPULATE_LIBTORCH is not a directory" >&2
        exit 1
    fi
    existing_torch "$dir"
    exit 0
fi

cd "$(dirname "$0")/.."
venv="${PROPULATE_TORCH_VENV:-$PWD/.torch}"
libtorch() { "$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' | sed 's|$|/torch|'; }
if [ -f "$venv/.complete" ] && [ -d "$(libtorch)/lib" ]; then
    libtorch
    exit 0
fi
# The wheels take about 6.8 GB once installed; pip's cache would hold another 3 GB of them, so it
# is not used, and a short disk stops here with what to do instead of pip's "No space left".
need_kb=$((7500 * 1024))
parent="$(dirname "$venv")"
mkdir -p "$parent"
free_kb="$(df -Pk "$parent" | awk 'NR == 2 { print $4 }')"
if [ "$free_kb" -lt "$need_kb" ]; then
    echo "install-libtorch: torch 2.9.0 with its CUDA libraries needs about 7.5 GB in $parent," \
        "which has $((free_kb / 1024)) MB free. Free some space, put it elsewhere with" \
        "PROPULATE_TORCH_VENV=DIR, or use a torch already installed with PROPULATE_LIBTORCH=DIR." >&2
    exit 1
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
if ! "$venv/bin/pip" install -q --no-cache-dir torch==2.9.0 numpy >&2; then
    # A half-installed torch is gigabytes that the next try could not use.
    rm -rf "$venv"
    echo "install-libtorch: installing torch 2.9.0 into $venv failed (pip's message above)" >&2
    exit 1
fi
touch "$venv/.complete"
libtorch
