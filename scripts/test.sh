#!/usr/bin/env bash
# Set up and run the whole test suite: formatting, lints, unit, property and doc tests of every
# crate of the workspace, and the driver tests under mpirun (2 to 8 ranks, oversubscribed) and with
# in-process ranks.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
source scripts/mpi-env.sh
source scripts/libtorch-env.sh
# Optuna from PyPI, for the test that opens our Optuna journal export (tests/optuna_journal.rs).
PROPULATE_OPTUNA_PYTHON=$(bash scripts/install-optuna.sh)
export PROPULATE_OPTUNA_PYTHON
# Debian's Chromium, for the test that opens report.html headless (tests/report_in_browser.rs).
PROPULATE_CHROMIUM=$(bash scripts/install-chromium.sh)
export PROPULATE_CHROMIUM
# A full run rebuilds most of the workspace anyway; incremental state would add about 6 GB to the
# build's 8 (a CI machine ran out of disk installing torch after such a build had filled it).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
cargo fmt --all --check
# One feature set for the whole workspace, so that every crate (Burn above all) is built once:
# MPI, the CNN task with both Burn backends (flex, and libtorch 2.9.0 through burn-tch), and NCCL
# (CUDA and NCCL are loaded at run time, so it builds without them; its test checks the clear error
# without a GPU, and a one-rank average where there is one).
features=cnn,tch,nccl
cargo clippy --workspace --features "$features" --all-targets -- -D warnings
cargo test --workspace --features "$features"
# Without MPI (in-process transport only) the engine must pass its unit tests, and the binary and
# examples must build. Neither builds Burn.
cargo test -p propulate-engine --no-default-features --lib
cargo check -p propulate-rs --no-default-features --bins --examples
# The Python package: `pip install .` into .venv-python (scripts/install-python.sh, with the torch
# of .torch on its path), then its tests with pytest: in one process (spaces, options, ask/tell,
# Ctrl-C, kill -9 of an mpirun job and the resume, the tutorials under mpirun), and under
# `mpirun -np 4` (islands and migration, workers of two ranks, torch DDP over gloo, PBT).
PROPULATE_PYTHON=$(bash scripts/install-python.sh)
"$PROPULATE_PYTHON" -m pytest -q -p no:cacheprovider tests/python/single
timeout 900 mpirun -np 4 "$PROPULATE_PYTHON" -m pytest -q -p no:cacheprovider tests/python/mpi
