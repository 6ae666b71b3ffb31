#!/usr/bin/env bash
# Installs what propulate-rs needs on Debian/Ubuntu when it is missing: OpenMPI (runtime and headers),
# procps (pgrep, used by the crash tests), iproute2 (scripts/cluster.sh, the multi-host tests),
# libclang (bindgen in mpi-sys), pkg-config, and Fashion-MNIST (dataset-fashion-mnist, 31 MB: the CNN
# task's default data, in /usr/share/datasets/fashion-mnist). Idempotent; uses sudo when not root.
set -euo pipefail
packages=(libopenmpi-dev openmpi-bin libclang-dev clang pkg-config procps iproute2)
missing=()
for p in "${packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "install-deps: installing ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The data set is a convenience, not a requirement: without it the CNN tests use synthetic
# MNIST-format data, and the tutorial asks for a data directory.
if ! dpkg -s dataset-fashion-mnist >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    echo "install-deps: installing dataset-fashion-mnist"
    { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq dataset-fashion-mnist >/dev/null; } ||
        echo "install-deps: warning: dataset-fashion-mnist could not be installed; the CNN tests use synthetic data" >&2
fi
if ! command -v cargo >/dev/null; then
    echo "install-deps: cargo not found; install Rust 1.95 or newer from https://rustup.rs" >&2
    exit 1
fi
echo "install-deps: $(mpirun --version | head -1); $(cargo --version)"
