#!/bin/bash
# A toy training for the population-based training tests, cheap to start (no Python):
#   pbt_toy.sh LR [SLEEP]
# Its "model" is one weight w, 1 for a fresh member, multiplied by (1 - LR) per training step; the
# loss is w, so members with a larger LR do better. Its state (saved into $PROPULATE_SAVE_TO) is
# w and a history: the history it restored with one line added, "<trial> <steps done>". Into its
# trial directory it copies the history it restored (seen.txt) and the one it saved (saved.txt),
# so that a test can check that every evaluation continued exactly the state of its parent.
set -eu
lr=$1
w=1
: > "$PROPULATE_TRIAL_DIR/seen.txt"
if [ -n "${PROPULATE_RESTORE_FROM:-}" ]; then
    cp "$PROPULATE_RESTORE_FROM/history" "$PROPULATE_TRIAL_DIR/seen.txt"
    w=$(cat "$PROPULATE_RESTORE_FROM/w")
fi
if [ -n "${2:-}" ]; then sleep "$2"; fi
w=$(awk -v w="$w" -v lr="$lr" -v n="$PROPULATE_STEPS" 'BEGIN { for (i = 0; i < n; i++) w *= 1 - lr; printf "%.12g", w }')
cp "$PROPULATE_TRIAL_DIR/seen.txt" "$PROPULATE_SAVE_TO/history"
echo "$PROPULATE_TRIAL $((PROPULATE_STEP + PROPULATE_STEPS))" >> "$PROPULATE_SAVE_TO/history"
echo "$w" > "$PROPULATE_SAVE_TO/w"
cp "$PROPULATE_SAVE_TO/history" "$PROPULATE_TRIAL_DIR/saved.txt"
echo "propulate: loss=$w"
