#!/usr/bin/env bash
# Memory per rank as the world grows, islands of a fixed size (8 workers), so that what a rank
# holds should grow with its island and the run's history only, not with the number of ranks:
#  - in-process ranks (`--local-ranks N`, a thread each): the process's peak resident memory
#    divided by N, for N in LOCAL [256 512 1024];
#  - MPI ranks (`mpirun -np N`, oversubscribed): each rank's peak resident memory (GNU time around
#    each rank), median and largest, beside `propulate-rs env`'s (MPI's start and end alone), and
#    each rank's resident memory halfway through a run (its anonymous part too), for N in MPI
#    [16 64 128 256].
# The sphere with evaluations of DELAY_MS [1000] ms, GENERATIONS [10] per worker, no checkpoint.
# BIN: another build to measure (default: this tree's release build). Prints one line per run and appends JSON lines to WORK/results.jsonl [bench-results/scale].
#
#   bash benches/scale.sh
#   LOCAL="256 1024" MPI="" bash benches/scale.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/mpi-env.sh
LOCAL=${LOCAL-"256 512 1024"}
MPI=${MPI-"16 64 128 256"}
DELAY_MS=${DELAY_MS:-1000}
GENERATIONS=${GENERATIONS:-10}
WORK=${WORK:-bench-results/scale}
mkdir -p "$WORK"
[ -n "${BIN:-}" ] || cargo build --release -q --bin propulate-rs
BIN=${BIN:-$PWD/target/release/propulate-rs}
[ -x /usr/bin/time ] || { echo "scale.sh: needs GNU time (Debian's time package)" >&2; exit 1; }
search=(--function sphere --eval-delay-ms "$DELAY_MS" --generations "$GENERATIONS" --no-checkpoint --quiet)
longer=(--function sphere --eval-delay-ms "$DELAY_MS" --generations $((2 * GENERATIONS)) --no-checkpoint --quiet)

for n in $LOCAL; do
    kb=$(/usr/bin/time -f "%M" "$BIN" --local-ranks "$n" --islands $((n / 8)) "${search[@]}" 2>&1 >/dev/null | tail -1)
    python3 - "$n" "$kb" "$WORK/results.jsonl" <<'PY'
import json, sys
n, kb, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
row = {"transport": "local", "ranks": n, "islands": n // 8, "peak_mb": kb / 1024, "per_rank_mb": kb / 1024 / n}
print(f"{n} in-process ranks: {row['peak_mb']:.0f} MB in all, {row['per_rank_mb']:.2f} MB per rank")
open(path, "a").write(json.dumps(row) + "\n")
PY
done

# One rank's peak resident memory, into DIR/rank-R (GNU time's own file: lines of ranks writing to
# one stream interleave).
export SCALE_RANK_DIR
per_rank() { /usr/bin/time -f "%M" -o "$SCALE_RANK_DIR/rank-$OMPI_COMM_WORLD_RANK" "$@"; }
export -f per_rank
for n in $MPI; do
    row=""
    # The search, then `propulate-rs env` (MPI's start and end, no search): the floor the
    # binary and Open MPI's own memory set at this many ranks.
    for what in search env; do
        SCALE_RANK_DIR=$(mktemp -d)
        if [ "$what" = search ]; then
            mpirun -np "$n" --bind-to none bash -c 'per_rank "$@"' _ "$BIN" --islands $((n / 8)) "${search[@]}" >/dev/null
        else
            mpirun -np "$n" --bind-to none bash -c 'per_rank "$@"' _ "$BIN" env >/dev/null
        fi
        row+="$(python3 - "$n" "$SCALE_RANK_DIR" <<'PY'
import os, statistics, sys
n, d = int(sys.argv[1]), sys.argv[2]
kb = [int(open(os.path.join(d, f)).read().split()[-1]) for f in os.listdir(d)]
assert len(kb) == n, f"{len(kb)} of {n} ranks reported their memory"
print(f"{statistics.median(kb) / 1024:.2f} {max(kb) / 1024:.2f}", end=" ")
PY
)"
        rm -rf "$SCALE_RANK_DIR"
    done
    # Mid-run: every rank's resident memory (and its anonymous part: the heap, not the binary's and
    # the libraries' pages) sampled once, halfway through a search twice as long, all ranks running.
    mpirun -np "$n" --bind-to none "$BIN" --islands $((n / 8)) "${longer[@]}" >/dev/null 2>&1 &
    job=$!
    until [ "$(pgrep -c -f -- "$BIN --islands $((n / 8))")" -ge "$n" ]; do sleep 0.2; done
    sleep "$(python3 -c "print($GENERATIONS * $DELAY_MS / 1000)")"
    row+="$(for pid in $(pgrep -f -- "$BIN --islands $((n / 8))"); do
        awk '/^VmRSS/ {r = $2} /^RssAnon/ {a = $2} END {print r, a}' "/proc/$pid/status" 2>/dev/null
    done | python3 -c '
import statistics, sys
rows = [tuple(map(int, l.split())) for l in sys.stdin if len(l.split()) == 2]
print(f"{statistics.median(r for r, _ in rows) / 1024:.2f} {statistics.median(a for _, a in rows) / 1024:.2f}")')"
    wait "$job"
    python3 - "$n" "$row" "$WORK/results.jsonl" <<'PY'
import json, sys
n, values, results = int(sys.argv[1]), [float(v) for v in sys.argv[2].split()], sys.argv[3]
row = {"transport": "mpi", "ranks": n, "islands": n // 8, "median_rank_mb": values[0], "max_rank_mb": values[1],
       "env_median_rank_mb": values[2], "env_max_rank_mb": values[3], "midrun_median_rank_mb": values[4],
       "midrun_median_anon_mb": values[5]}
print(f"{n} MPI ranks: peak per rank median {values[0]:.1f} MB, largest {values[1]:.1f} MB; "
      f"`env` alone (MPI's start and end) median {values[2]:.1f} MB; mid-run median {values[4]:.1f} MB, "
      f"of it anonymous {values[5]:.1f} MB")
open(results, "a").write(json.dumps(row) + "\n")
PY
done
