#!/usr/bin/env bash
# The restart of a finished run of a million evaluations (8 ranks, 2 islands) by two binaries side
# by side, in the order A B B A (this VM reclaims freed memory between runs, and the first run of
# a series is often the slowest: always running one binary first biases the comparison), after
# one warm-up restart. Prints each restart's wall, user and system seconds, then per binary the
# median wall (range), the median CPU and the ratio of the medians B / A.
#
#   bash benches/resume_ab.sh OLD_BINARY NEW_BINARY
#
# Knobs: ROUNDS [4] (each runs A B B A); WORK [bench-results/resume-ab] (its ck/, the run made
# once by A if absent). Each binary restarts its own copy of it (ck-A/, ck-B/, copied once): a
# binary may leave files there that the other does not know (journal snapshots, since 2026-11-26).
# The warm-up restarts each copy once (and so writes B's snapshots, if it makes them).
# FIRST=1 deletes the journal snapshots before every timed restart: a resume that parses every
# journal, as the first after a run does (though with the journals already in the page cache).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/mpi-env.sh
A=$1 B=$2
ROUNDS=${ROUNDS:-4}
WORK=${WORK:-bench-results/resume-ab}
mkdir -p "$WORK"
restart() { mpirun -np 8 --bind-to none "$1" --function sphere --islands 2 --generations 125000 --checkpoint "$2" -q; }
[ -f "$WORK/ck/manifest.json" ] || restart "$A" "$WORK/ck" >/dev/null 2>&1
for x in A B; do
    [ -d "$WORK/ck-$x" ] || cp -r "$WORK/ck" "$WORK/ck-$x"
done
restart "$A" "$WORK/ck-A" >/dev/null 2>&1
restart "$B" "$WORK/ck-B" >/dev/null 2>&1
times=$WORK/times.txt
: > "$times"
timed() {
    [ "${FIRST:-0}" = 1 ] && rm -f "$WORK/ck-$2"/worker-*.snapshot
    /usr/bin/time -f "$2 %e %U %S" -o "$WORK/time.txt" bash -c "$(declare -f restart); restart $1 $WORK/ck-$2" >/dev/null 2>&1 || { echo "$2: the restart failed" >&2; exit 1; }
    cat "$WORK/time.txt" | tee -a "$times"
}
for ((r = 0; r < ROUNDS; r++)); do
    timed "$A" A; timed "$B" B; timed "$B" B; timed "$A" A
done
python3 - "$times" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
med = {}
for b in "AB":
    wall = [float(r[1]) for r in rows if r[0] == b]
    cpu = [float(r[2]) + float(r[3]) for r in rows if r[0] == b]
    med[b] = (st.median(wall), st.median(cpu))
    print(f"{b}: median wall {med[b][0]:.2f} s ({min(wall):.2f} to {max(wall):.2f}), median CPU {med[b][1]:.1f} s, {len(wall)} restarts")
print(f"B / A: wall {med['B'][0] / med['A'][0]:.2f}, CPU {med['B'][1] / med['A'][1]:.2f}")
PY
