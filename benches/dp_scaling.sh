#!/usr/bin/env bash
# Data-parallel scaling on this machine: images per second of one training, 1 rank x 1 thread
# against 2 ranks x 1 thread (one worker, gradients averaged every step), ROUNDS interleaved rounds.
# Each round also runs two independent 1-rank trainings at once and adds their rates: what the
# machine's two cores give two trainings that never wait for each other, the ceiling of the
# 2-rank speed-up here.
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
train() {
    OMP_NUM_THREADS=1 RAYON_NUM_THREADS=1 mpirun -np "$1" --bind-to none "$bench" "$IMAGES" "$EPOCHS" "$BACKEND"
}
for round in $(seq "$ROUNDS"); do
    for np in 1 2; do
        train "$np" | tee -a "$results"
    done
    pair=$(mktemp -d)
    train 1 > "$pair/a" & train 1 > "$pair/b"; wait
    cat "$pair/a" "$pair/b" | sed "s/ranks 1 /ranks 1-pair-$round /" | tee -a "$results"
    rm -rf "$pair"
done
python3 - "$results" <<'PY'
import collections, statistics, sys
rate = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    rate[f[3]].append(float(f[9]))
one, two = statistics.median(rate["1"]), statistics.median(rate["2"])
pairs = statistics.median(sum(v) for k, v in rate.items() if k.startswith("1-pair"))
print(f"median images/s: 1 rank {one:.1f}, 2 ranks {two:.1f}; speed-up {two / one:.2f}x")
print(f"two independent 1-rank trainings at once: {pairs:.1f} images/s together, {pairs / one:.2f}x one alone "
      f"(the machine's ceiling); the 2-rank worker reaches {two / pairs:.0%} of it")
PY
