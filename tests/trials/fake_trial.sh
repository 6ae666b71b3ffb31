#!/bin/bash
# A stand-in for a user's training program in the command-trial tests, cheap to start (no torch):
#   fake_trial.sh MODE MARKER X
# MODE picks what the trial does; MARKER (unique per test) is in the command line of every process
# it starts, so that the test can look for leftovers with `pgrep -f MARKER`; X is the parameter.
mode=$1 marker=$2 x=$3
# What the trial saw, for the tests to check.
env | grep -E '^(RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|GROUP_RANK|MASTER_ADDR|MASTER_PORT|PROPULATE_[A-Z_]+|OMP_NUM_THREADS|OMPI_COMM_WORLD_RANK|PMIX_RANK|OMPI_ALLOW_RUN_AS_ROOT)=' \
    | sort > "$PROPULATE_TRIAL_DIR/env-rank$RANK.txt"
# A process that stands for a training blocked in a collective: it only ends when it is stopped.
block() { python3 -c 'import time; time.sleep(600)' "$marker"; }
square() { python3 -c "import sys; x = float(sys.argv[1]); print(x * x)" "$x"; }
case "$mode" in
    ok)
        if [ "$RANK" = 0 ]; then
            echo "{\"loss\": $(square), \"accuracy\": 0.75, \"note\": \"kept out\"}" > "$PROPULATE_RESULT"
        fi ;;
    stdout)
        # The loss line ends a progress bar's line, as after tqdm's carriage returns.
        echo "some output of rank $RANK"
        if [ "$RANK" = 0 ]; then printf '\r 50%%|##  |\r100%%|####|\rpropulate: loss=%s\n' "$(square)"; fi ;;
    slow)
        python3 -c 'import time, sys; time.sleep(0.4)' "$marker"
        if [ "$RANK" = 0 ]; then echo "propulate: loss=$(square)"; fi ;;
    curve)
        # A learning curve whose level is set by x: the early stopper can tell bad trials early.
        if [ "$RANK" = 0 ]; then
            for step in 1 2 3 4 5 6; do
                echo "propulate: step=$step loss=$(python3 -c "import sys; x = float(sys.argv[1]); print((x * x + 0.1) * (1 + 1 / $step))" "$x")"
                python3 -c 'import time, sys; time.sleep(0.05)' "$marker"
            done
            echo "propulate: loss=$(square)"
        else
            python3 -c 'import time, sys; time.sleep(0.5)' "$marker"
        fi ;;
    exit1)
        if [ "$RANK" = 1 ]; then echo "Traceback: boom on rank 1" >&2; exit 1; fi
        block ;;
    killed)
        if [ "$RANK" = 1 ]; then kill -9 $$; fi
        block ;;
    hang)
        if [ "$RANK" = 1 ]; then echo "waiting in all_reduce on rank 1" >&2; fi
        block ;;
    garbage)
        if [ "$RANK" = 0 ]; then echo "not json" > "$PROPULATE_RESULT"; fi ;;
    silent)
        ;;
    stderr)
        if [ "$RANK" = 0 ]; then echo "propulate: loss=$(square)" >&2; fi ;;
    steps)
        if [ "$RANK" = 0 ]; then echo "propulate: step=1 loss=$(square)"; fi ;;
    *)
        echo "fake_trial.sh: unknown mode $mode" >&2
        exit 2 ;;
esac
