#!/usr/bin/env bash
# Set up and run the whole test suite: formatting, lints, unit, property and doc tests, and the
# driver tests under mpirun (2 to 8 ranks, oversubscribed) and with in-process ranks.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
source scripts/mpi-env.sh
cargo fmt --check
# One feature set for the main build: MPI and the CNN task (Burn, flex backend).
cargo clippy --features cnn --all-targets -- -D warnings
cargo test --features cnn
# Without MPI (in-process transport only) the library must pass its unit tests and the binary and
# examples must build.
cargo test --no-default-features --lib
cargo check --no-default-features --bins --examples
# The NCCL gradient sync builds without CUDA (the libraries are loaded at run time); its test checks
# the clear error on a machine without a GPU, and a one-rank average where there is one.
cargo clippy --features nccl --lib -- -D warnings
cargo test --features nccl --lib ddp::nccl
