#!/usr/bin/env bash
# The engine's own cost per command trial: spawn on every rank of the worker, rendezvous (the
# worker's store, the trial's port), the shared events, the result, the clean-up. The trial is a
# program that reports its loss at once (`sh -c 'echo "propulate: loss=$1"' sh {x}`); the overhead
# per evaluation is the median time the engine spent on an evaluation (`duration_s` in
# trials.jsonl: from the loss call to its result, on the worker's root) minus the median time the
# same program takes when started directly (from Python's subprocess, N times in a row).
#
#   bash benches/command_overhead.sh
#   EVALS=50 bash benches/command_overhead.sh      # a quicker look
#
# Knobs: EVALS [200] evaluations per worker; LAYOUTS ["1 2"] ranks per worker for the runs (one
# worker each: np = ranks per worker); BIN [target/release/propulate-rs, built without the CNN].
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/mpi-env.sh
EVALS=${EVALS:-200}
LAYOUTS=${LAYOUTS:-"1 2"}
source benches/command_bench_setup.sh
program=(sh -c 'echo "propulate: loss=$1"' sh)
for rpw in $LAYOUTS; do
    mpirun -np "$rpw" --bind-to none "$BIN" --ranks-per-worker "$rpw" --generations "$EVALS" \
        --propagator ga --space "$work/space.toml" --checkpoint "$work/ck-$rpw" --out "$work/out-$rpw" -q \
        -- "${program[@]}" '{x}' > "$work/stdout-$rpw.log"
done
python3 - "$work" "$EVALS" "$LAYOUTS" "${program[@]}" <<'PY'
import json, statistics, subprocess, sys, time
work, evals, layouts, program = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4:]
direct = []
for _ in range(evals):
    t0 = time.perf_counter()
    subprocess.run(program + ["0.5"], stdout=subprocess.DEVNULL, check=True)
    direct.append(time.perf_counter() - t0)
base = statistics.median(direct)
print(f"the program started directly: median {base * 1e3:.2f} ms over {evals} runs")
print(f"{'ranks/worker':>12} {'evaluations':>11} {'median ms':>10} {'p90 ms':>8} {'overhead ms':>11}")
for rpw in layouts:
    trials = [json.loads(l) for l in open(f"{work}/out-{rpw}/trials.jsonl")]
    assert all(t["failure"] is None for t in trials), "a trial failed"
    d = sorted(t["duration_s"] for t in trials)
    med, p90 = statistics.median(d), d[int(0.9 * (len(d) - 1))]
    print(f"{rpw:>12} {len(d):>11} {med * 1e3:>10.2f} {p90 * 1e3:>8.2f} {(med - base) * 1e3:>11.2f}")
PY
