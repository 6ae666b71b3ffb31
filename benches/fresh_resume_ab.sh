#!/usr/bin/env bash
# A fresh million evaluations (8 ranks, 2 islands) written by each of two binaries, then its first
# resume, in the order A B B A per round (the first run of a series is often the slowest). Prints
# each run's and each first resume's wall, user and system seconds and the snapshots the run left.
# This is the case of a user who resumes a run just finished: what the run leaves behind decides
# whether its first resume parses the journals.
#
#   bash benches/fresh_resume_ab.sh OLD_BINARY NEW_BINARY
#
# Knobs: ROUNDS [1]; WORK [bench-results/fresh-resume-ab] (its ck/ is removed before each run).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/mpi-env.sh
A=$1 B=$2
ROUNDS=${ROUNDS:-1}
WORK=${WORK:-bench-results/fresh-resume-ab}
mkdir -p "$WORK"
million() { mpirun -np 8 --bind-to none "$1" --function sphere --islands 2 --generations 125000 --checkpoint "$2" -q; }
timed() { # binary label what
    /usr/bin/time -f "$2 $3 %e %U %S" -o "$WORK/time.txt" bash -c "$(declare -f million); million $1 $WORK/ck" >/dev/null 2>&1 ||
        { echo "$2: the $3 failed" >&2; exit 1; }
    cat "$WORK/time.txt"
}
for ((r = 0; r < ROUNDS; r++)); do
    for x in A B B A; do
        bin=$A; [ "$x" = B ] && bin=$B
        rm -rf "$WORK/ck"; sync
        timed "$bin" "$x" run
        echo "$x snapshots $(find "$WORK/ck" -name 'worker-*.snapshot' | wc -l)"
        timed "$bin" "$x" first-resume
    done
done
