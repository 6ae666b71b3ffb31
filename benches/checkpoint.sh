#!/usr/bin/env bash
# Checkpointing cost, measured side by side in one run:
#  1. evaluations/s with the journal on (default fsync policy, and fsync never) vs off, zero-cost
#     loss (sphere), 8 ranks, 2 islands; runs interleaved, REPS of each, median ratio reported;
#  2. the time to resume from a journal of one million evaluations (8 workers x 125000), i.e. a
#     restart of a finished run: read and check the journals, rebuild the islands, summarize.
# Usage: bash benches/checkpoint.sh   (GENERATIONS, REPS, JOURNAL=0 to skip part 1, MILLION=0 to skip
# part 2, RESUMES: restarts timed in part 2)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/mpi-env.sh
cargo build --release -q
BIN=target/release/propulate-rs
G=${GENERATIONS:-20000}
REPS=${REPS:-5}
WORK=$(mktemp -d /tmp/propulate-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
rate() { # prints evaluations/s of one run
    "$@" -q --out "$WORK/out" >/dev/null 2>&1
    python3 -c "import json;print(json.load(open('$WORK/out/best.json'))['evals_per_s'])"
}
run() { mpirun -np 8 --bind-to none "$BIN" --function sphere --islands 2 --generations "$G" "$@"; }
if [ "${JOURNAL:-1}" = 1 ]; then
declare -a off on never
for r in $(seq "$REPS"); do
    off+=("$(rate run --no-checkpoint)")
    rm -rf "$WORK/ck"; on+=("$(rate run --checkpoint "$WORK/ck")")
    rm -rf "$WORK/ck"; never+=("$(rate run --checkpoint "$WORK/ck" --fsync never)")
done
python3 - "${off[*]}" "${on[*]}" "${never[*]}" "$G" <<'PY'
import statistics as st, sys
off, on, never = ([float(x) for x in a.split()] for a in sys.argv[1:4])
g = sys.argv[4]
m = st.median
print(f"8 ranks, 2 islands, sphere, {g} generations per worker, {len(off)} interleaved runs each")
print(f"| journal | median evaluations/s | ratio to off |")
print(f"|---|---|---|")
print(f"| off | {m(off):.0f} | 1.00 |")
print(f"| on, fsync every 1000 ms (default) | {m(on):.0f} | {m(on)/m(off):.2f} |")
print(f"| on, fsync never | {m(never):.0f} | {m(never)/m(off):.2f} |")
PY
fi
if [ "${MILLION:-1}" = 1 ]; then
    rm -rf "$WORK/ck"
    mpirun -np 8 --bind-to none "$BIN" --function sphere --islands 2 --generations 125000 --checkpoint "$WORK/ck" -q >/dev/null 2>&1
    size=$(du -sh "$WORK/ck" | cut -f1)
    # Restart the finished run RESUMES times (the machine is noisy): the median is reported.
    times=()
    for r in $(seq "${RESUMES:-5}"); do
        start=$(date +%s.%N)
        mpirun -np 8 --bind-to none "$BIN" --function sphere --islands 2 --generations 125000 --checkpoint "$WORK/ck" -q >/dev/null 2>&1
        end=$(date +%s.%N)
        times+=("$(python3 -c "print(f'{$end-$start:.2f}')")")
    done
    start2=$(date +%s.%N)
    "$BIN" report "$WORK/ck" --out "$WORK/report" >/dev/null
    end2=$(date +%s.%N)
    python3 - "${times[*]}" "$size" "$(python3 -c "print(f'{$end2-$start2:.1f}')")" <<'PY'
import statistics as st, sys
times = [float(t) for t in sys.argv[1].split()]
print(f"resume of a finished run with 1,000,000 evaluations ({sys.argv[2]} of journals), 8 ranks: "
      f"median {st.median(times):.1f} s of {len(times)} restarts ({', '.join(f'{t:.1f}' for t in times)}); "
      f"propulate-rs report (1 process, writes both tables): {sys.argv[3]} s")
PY
fi
