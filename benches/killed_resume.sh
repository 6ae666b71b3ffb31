#!/usr/bin/env bash
# The first resume of a million evaluations after a kill -9, for each PROPULATE_SEGMENT_BYTES of
# SEGMENTS (default "0 16777216": segments never closed mid-run, as before 2026-11-28, against the
# default of a snapshot every 16 MiB of journal), in the order of SEGMENTS then reversed, per
# round. Each variant writes its own run: 8 ranks,
# 2 islands, sphere, --generations 125000, killed (every rank, kill -9) once its journals hold
# KILL_AT_MB; then, RESUMES times on a fresh copy of that checkpoint, its first resume with
# nothing left to evaluate (--generations 1: read, check, exchange and rebuild the islands, the
# summary; no evaluation). The variant `finished` (SEGMENTS="0 16777216 finished") runs to its
# clean end with the default instead of being killed: the restart of a finished run, the
# reference a killed one is held against. mpirun's own start with the same binary (--generations 1 without a
# checkpoint) is timed beside it, so that the resume's own time is the difference. write_s is
# the run's time until its journals held KILL_AT_MB (what closing segments costs the run shows
# there, among the machine's noise).
#
#   bash benches/killed_resume.sh       (knobs: SEGMENTS, ROUNDS [1], RESUMES [2], KILL_AT_MB [540],
#                                        WORK [bench-results/killed-resume])
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/mpi-env.sh
cargo build --release -q
BIN=$PWD/target/release/propulate-rs
SEGMENTS=${SEGMENTS:-0 16777216}
ROUNDS=${ROUNDS:-1} RESUMES=${RESUMES:-2} KILL_AT_MB=${KILL_AT_MB:-540}
WORK=${WORK:-bench-results/killed-resume}
mkdir -p "$WORK"
journal_mb() { find "$1" -name 'worker-*.jsonl' -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { printf "%d", s / 1048576 }'; }
seconds() { # wall seconds of a command that must succeed
    local TIMEFORMAT=%R s
    s=$({ time "$@" >/dev/null 2>"$WORK/err.txt"; } 2>&1) || { echo "failed: $*" >&2; cat "$WORK/err.txt" >&2; exit 1; }
    echo "$s"
}
job() { mpirun -np 8 --bind-to none "$BIN" --function sphere --islands 2 "$@" -q; }
for ((r = 0; r < ROUNDS; r++)); do
    # shellcheck disable=SC2046
    for segment in $SEGMENTS $(printf '%s\n' $SEGMENTS | tac); do
        if [ "$segment" = finished ]; then unset PROPULATE_SEGMENT_BYTES; else export PROPULATE_SEGMENT_BYTES=$segment; fi
        rm -rf "$WORK/ck" "$WORK/copy"; sync
        began=$(date +%s.%N)
        job --generations 125000 --checkpoint "$WORK/ck" >/dev/null 2>&1 &
        runner=$!
        if [ "$segment" = finished ]; then wait "$runner"; fi
        while [ "$segment" != finished ] && [ "$(journal_mb "$WORK/ck")" -lt "$KILL_AT_MB" ]; do
            kill -0 "$runner" 2>/dev/null || { echo "$segment: the run ended before its journals held $KILL_AT_MB MB" >&2; exit 1; }
            sleep 0.2
        done
        write_s=$(python3 -c "import time; print(f'{time.time() - $began:.1f}')")
        pkill -9 -f "$BIN --function sphere --islands 2 --generations 125000" || true
        wait "$runner" 2>/dev/null || true
        snapshots=$(find "$WORK/ck" -name 'worker-*.snapshot' | wc -l)
        segments=$(find "$WORK/ck" -name 'worker-*.jsonl' | wc -l)
        for ((k = 0; k < RESUMES; k++)); do
            rm -rf "$WORK/copy"; cp -r "$WORK/ck" "$WORK/copy"; sync
            resume=$(seconds job --generations 1 --checkpoint "$WORK/copy")
            start=$(seconds job --generations 1 --no-checkpoint)
            echo "segment_bytes=$segment write_s=$write_s journal_mb=$(journal_mb "$WORK/ck") segments=$segments snapshots=$snapshots resume_s=$resume mpirun_start_s=$start"
        done
    done
done
rm -rf "$WORK/ck" "$WORK/copy"
