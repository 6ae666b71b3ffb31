#!/usr/bin/env bash
# Several objectives: propulate-rs's genetic propagator against Optuna's NSGA-II sampler (Optuna
# 5.0.0, its defaults: population 50), side by side in one run, on ZDT1, ZDT2, ZDT3 (30
# parameters, 2 objectives) and DTLZ2 (12 parameters, 3 objectives), several seeds, the same
# number of evaluations. Reports the hypervolume of each final front (the same reference point
# and the same exact computation for both: benches/pareto_vs_optuna.py) and the wall time.
#
#   benches/pareto_vs_optuna.sh             EVALUATIONS=2000, SEEDS="0 1 2 3 4", ~15 min on 2 cores
#   QUICK=1 benches/pareto_vs_optuna.sh     200 evaluations, one seed (~1 min)
#
# Ours: `mpirun -np RANKS propulate-rs --function P --generations EVALUATIONS/RANKS --seed S
# --no-checkpoint` (RANKS [4] workers on one island; ISLANDS [1]); its wall time is the whole
# command, MPI start-up included. Optuna's: study.optimize alone (imports not counted), one
# process, in-memory storage.
# Output: $RESULTS_DIR/pareto-<timestamp>/results.jsonl and summary.md (the table), printed.
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"
source scripts/mpi-env.sh
QUICK="${QUICK:-0}"
EVALUATIONS="${EVALUATIONS:-$([ "$QUICK" = 1 ] && echo 200 || echo 2000)}"
SEEDS="${SEEDS:-$([ "$QUICK" = 1 ] && echo 0 || echo "0 1 2 3 4")}"
PROBLEMS="${PROBLEMS:-zdt1 zdt2 zdt3 dtlz2}"
RANKS="${RANKS:-4}"
ISLANDS="${ISLANDS:-1}"
RESULTS_DIR="${RESULTS_DIR:-bench-results}"
out="$RESULTS_DIR/pareto-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out"
python=$(scripts/install-optuna.sh)
cargo build --release --quiet --bin propulate-rs
bin="${CARGO_TARGET_DIR:-target}/release/propulate-rs"
generations=$((EVALUATIONS / RANKS))
for problem in $PROBLEMS; do
    for seed in $SEEDS; do
        dir="$out/$problem-seed$seed"
        start=$(date +%s.%N)
        mpirun --bind-to none -np "$RANKS" "$bin" --function "$problem" --generations "$generations" \
            --islands "$ISLANDS" --seed "$seed" --no-checkpoint --quiet --out "$dir" > "$dir.log"
        wall=$(printf '%.3f' "$(echo "$(date +%s.%N) - $start" | bc)")
        hv=$("$python" benches/pareto_vs_optuna.py hv "$problem" "$dir/front.csv")
        front=$(($(wc -l < "$dir/front.csv") - 1))
        echo "{\"who\": \"ours\", \"problem\": \"$problem\", \"seed\": $seed, \"evaluations\": $((generations * RANKS)), \"hv\": $hv, \"wall_s\": $wall, \"front\": $front}" >> "$out/results.jsonl"
        theirs=$("$python" benches/pareto_vs_optuna.py optuna "$problem" "$seed" "$((generations * RANKS))")
        echo "{\"who\": \"optuna\", \"problem\": \"$problem\", \"seed\": $seed, \"evaluations\": $((generations * RANKS)), ${theirs:1}" >> "$out/results.jsonl"
        tail -n 2 "$out/results.jsonl" >&2
    done
done
"$python" benches/pareto_vs_optuna.py table "$out/results.jsonl" | tee "$out/summary.md"
