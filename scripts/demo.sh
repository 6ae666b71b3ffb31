#!/usr/bin/env bash
# Set up, build, and run the main job under mpirun: 8 ranks, 2 islands, the reference tutorial's CNN
# on Fashion-MNIST, each candidate trained data-parallel by the 2 ranks of its worker (libtorch
# through burn-tch). Extra arguments go to propulate-rs (e.g. --generations 5, or --function
# rastrigin for a benchmark function instead).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
source scripts/mpi-env.sh
source scripts/libtorch-env.sh
cargo build --release --features cnn,tch
# A fresh run each time: out/demo holds this demo's results and its checkpoint only.
rm -rf out/demo
mpirun -np 8 --bind-to none target/release/propulate-rs --islands 2 \
    --out out/demo --checkpoint out/demo/checkpoint "$@"
