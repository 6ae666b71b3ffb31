#!/usr/bin/env bash
# Data-parallel scaling on this machine: images per second of one training, 1 rank x 1 thread
# against 2 ranks x 1 thread (one worker, gradients averaged every step), ROUNDS interleaved rounds.
#
#   bash benches/dp_scaling.sh                 # IMAGES=4000 EPOCHS=2 BACKEND=tch ROUNDS=3
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/mpi-env.sh
source scripts/libtorch-env.sh
IMAGES=${IMAGES:-4000}; EPOCHS=${EPOCHS:-2}; BACKEND=${BACKEND:-tch}; ROUNDS=${ROUNDS:-3}
cargo build --release --features cnn,tch --bench dp_scaling
bench=$(ls -t target/release/deps/dp_scaling-* | grep -v '\.d$' | head -1)
results=$(mktemp)
for round in $(seq "$ROUNDS"); do
    for np in 1 2; do
        OMP_NUM_THREADS=1 RAYON_NUM_THREADS=1 mpirun -np "$np" --bind-to none "$bench" "$IMAGES" "$EPOCHS" "$BACKEND" | tee -a "$results"
    done
done
python3 - "$results" <<'PY'
import statistics, sys
rate = {1: [], 2: []}
for line in open(sys.argv[1]):
    f = line.split()
    rate[int(f[3])].append(float(f[9]))
one, two = statistics.median(rate[1]), statistics.median(rate[2])
print(f"median images/s: 1 rank {one:.1f}, 2 ranks {two:.1f}; speed-up {two / one:.2f}x")
PY
