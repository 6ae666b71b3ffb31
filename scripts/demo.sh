#!/usr/bin/env bash
# Set up, build, and run a real optimization under mpirun: 8 ranks, 2 islands, rastrigin in 20-D.
# Extra arguments go to propulate-rs (e.g. --function sphere --generations 2000).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
source scripts/mpi-env.sh
cargo build --release
# A fresh run each time: out/demo holds this demo's results and its checkpoint only.
rm -rf out/demo
mpirun -np 8 --bind-to none target/release/propulate-rs --islands 2 --function rastrigin \
    --generations 1000 --top-n 2 --out out/demo --checkpoint out/demo/checkpoint "$@"
