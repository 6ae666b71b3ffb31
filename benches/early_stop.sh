#!/usr/bin/env bash
# The CNN search with and without early stopping, same budget: by default the README's main job
# (`mpirun -np 8 propulate-rs --islands 2`, 4 workers of 2 ranks, 4 generations each, 2,000
# Fashion-MNIST images, at most 20 epochs), once per stopper and seed, interleaved. Prints, per run,
# the wall time of the search, the training time (the evaluations' durations added up), the epochs
# trained, the evaluations pruned and the best validation loss; then, per stopper, the medians
# over seeds and their ratios to no stopping.
#
#   bash benches/early_stop.sh
#   SEEDS="0 1 2" STOPPERS="none static median" PROFILE=release bash benches/early_stop.sh
#   NP=4 RUN_ARGS="--islands 1 --generations 12 --train-images 1000 --epochs 10" bash benches/early_stop.sh
#
# NP (8) ranks run `propulate-rs $RUN_ARGS` ("--islands 2": the main job).
#
# PROFILE=dev (the default) uses the test build (dependencies optimized, our crates not): the
# training is libtorch's and Burn's, and the ratios compare like with like.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/mpi-env.sh
source scripts/libtorch-env.sh
SEEDS=${SEEDS:-"0 1"}
STOPPERS=${STOPPERS:-"none static"}
PROFILE=${PROFILE:-dev}
NP=${NP:-8}
RUN_ARGS=${RUN_ARGS:-"--islands 2"}
if [ "$PROFILE" = release ]; then
    cargo build --release --features cnn,tch --bins
    bin=target/release/propulate-rs
else
    # The test suite's build (scripts/test.sh): nothing is rebuilt after the tests.
    cargo build --workspace --features cnn,tch,nccl --all-targets
    bin=target/debug/propulate-rs
fi
work=${WORK:-bench-results/early-stop-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$work"
for seed in $SEEDS; do
    for stopper in $STOPPERS; do
        out="$work/$stopper-seed$seed"
        echo "early-stop: $stopper, seed $seed" >&2
        # shellcheck disable=SC2086
        mpirun -np "$NP" --bind-to none "$bin" $RUN_ARGS --seed "$seed" --early-stop "$stopper" \
            --no-checkpoint -q --out "$out" > "$out.log" 2>&1
    done
done
python3 - "$work" $STOPPERS <<'PY'
import csv, json, os, statistics, sys
work, stoppers = sys.argv[1], sys.argv[2:]
rows = {}
print(f"{'stopper':<11} {'seed':>4} {'wall s':>8} {'train s':>8} {'epochs':>6} {'pruned':>6} {'best loss':>9}")
for name in sorted(os.listdir(work)):
    if not os.path.isdir(os.path.join(work, name)):
        continue
    stopper, seed = name.rsplit("-seed", 1)
    best = json.load(open(os.path.join(work, name, "best.json")))
    trials = list(csv.DictReader(open(os.path.join(work, name, "trials.csv"))))
    train_s = sum(float(t["duration_s"]) for t in trials)
    epochs = sum(int(float(t["epochs"])) for t in trials if t["epochs"])
    pruned = sum(t["pruned"] == "true" for t in trials)
    r = (best["wall_s"], train_s, epochs, pruned, best["loss"])
    rows.setdefault(stopper, []).append(r)
    print(f"{stopper:<11} {seed:>4} {r[0]:>8.1f} {r[1]:>8.1f} {r[2]:>6} {r[3]:>6} {r[4]:>9.4f}")
print()
base = rows.get("none")
print(f"{'stopper':<11} {'median wall s':>13} {'median train s':>14} {'median best':>11} {'train / none':>12} {'best / none':>11}")
for stopper in stoppers:
    if stopper not in rows:
        continue
    med = [statistics.median(r[i] for r in rows[stopper]) for i in (0, 1, 4)]
    ratio = lambda i, j: med[i] / statistics.median(r[j] for r in base) if base else float("nan")
    print(f"{stopper:<11} {med[0]:>13.1f} {med[1]:>14.1f} {med[2]:>11.4f} {ratio(1, 1):>12.2f} {ratio(2, 4):>11.3f}")
PY
