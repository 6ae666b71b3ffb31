#!/usr/bin/env bash
# Search spaces as researchers write them, measured against Optuna 5.0.0 run sequentially
# (issue 51). PART picks the problems:
#   conditional: a categorical `branch` picks one of three 3-D BBOB functions, each with parameters
#     of its own active only in its branch (benches/spaces_problems.py; problem K holds f(3K-2),
#     f(3K-1), f(3K), so PROBLEMS 1..8 cover all 24), against Optuna's TPESampler(multivariate=True,
#     group=True) with the space defined by run (benches/spaces_optuna.py).
#   mixint: COCO's bbob-mixint 5-D (x0..x3 integers with 2, 4, 8, 16 values, x4 a float), PROBLEMS
#     its functions [1..24]; constrained: COCO's bbob-constrained 5-D, PROBLEMS its functions
#     [1..54], the constraints reported with the loss (benches/spaces_problems.py). Both against
#     Optuna's TPESampler and GPSampler (default settings; integers as suggest_int, constraints
#     through Trial.set_constraint); seed k runs instance k; the best is the best feasible loss.
#   ddp: the PyTorch DDP tutorial (tutorials/pytorch_ddp/train.py: its CNN on 2,000 Fashion-MNIST
#     images, 3 epochs) over tutorials/pytorch_ddp/space-conditional.toml: `optimizer` among
#     adadelta, sgd (with `momentum`) and adam (with `beta1`, `beta2`), the best validation loss
#     after BUDGET [64] evaluations, against Optuna's TPESampler(multivariate=True, group=True)
#     running the same script per trial (benches/spaces_optuna.py). One problem; seeds are the
#     searches' (the training's own seed stays 0, so both search the same function).
#   warm: BBOB 5-D (benches/bbob_trial.py), per function a cold run on instance 1, a cold run on
#     instance 2, and a run on instance 2 warm-started from the first (--warm-start its checkpoint):
#     the evaluations each needs to reach the cold instance-2 run's final best
#     (benches/summarize_warm.py). FUNCTIONS [1..24] instead of PROBLEMS; OURS and OPTUNA unused.
# Our runs are command trials (benches/spaces_trial.py) with NP asynchronous workers. Prints, per
# problem, the median over seeds of each method's best loss, then per pair how often one was at
# most the other (benches/summarize_bbob.py, problems in the place of functions).
#
#   bash benches/spaces.sh                         # 8 problems, seeds 1-3, 200 evaluations
#   PROBLEMS="1 2" SEED=1 bash benches/spaces.sh
#
# Knobs: PART [conditional]; PROBLEMS [1..8, 1..24, 1..54]; INSTANCE [1; the seed for mixint and
# constrained]; SEED ["1 2 3"]; BY [seed]: `problem` runs every seed of a problem before the next; BUDGET [200]; NP [8]; OURS ["default tpe"; "default" for mixint and
# constrained and ddp]: propagators (default: no flag, what `auto` picks); OPTUNA ["tpe"; "tpe gp"]; empty:
# none; FLAGS [""]: more flags for our runs, LABEL [""] appended to their method's name (e.g.
# FLAGS="--gp-trust-region 0" LABEL=-tr0); EVAL_SECONDS [0.5]: each of our evaluations lasts 0.5-1.5x this (benches/bbob_trial.py says
# why); OURS_BIN [target/release/propulate-rs, built]: our binary, e.g. a variant built elsewhere;
# WORK [bench-results/spaces]: results.jsonl there gains a line per run, and a run already in
# it is not run again. Uses .venv-bbob/ (ioh, Optuna 5.0.0), made by benches/bbob.sh when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/mpi-env.sh
PART=${PART:-conditional}
case "$PART" in
    conditional) problems=8 ours="default tpe" optuna=tpe ;;
    mixint) problems=24 ours=default optuna="tpe gp" ;;
    constrained) problems=54 ours=default optuna="tpe gp" ;;
    ddp) problems=1 ours=default optuna=tpe ;;
    warm) problems=0 ours="" optuna="" ;;
    *) echo "spaces: unknown PART '$PART' (conditional, mixint, constrained, ddp, warm)" >&2; exit 1 ;;
esac
PROBLEMS=${PROBLEMS:-$(seq -s ' ' 1 "$problems")}
INSTANCE=${INSTANCE:-1}
SEED=${SEED:-"1 2 3"}
BUDGET=${BUDGET:-$([ "$PART" = ddp ] && echo 64 || echo 200)}
NP=${NP:-8}
OURS=${OURS-$ours}
OPTUNA=${OPTUNA-$optuna}
WORK=${WORK:-bench-results/spaces}
export BBOB_EVAL_SECONDS=${EVAL_SECONDS:-0.5}
((BUDGET % NP == 0)) || { echo "spaces: BUDGET ($BUDGET) must be a multiple of NP ($NP)" >&2; exit 1; }
PY=$PWD/.venv-bbob/bin/python
if ! "$PY" -c "import ioh, optuna, sys; sys.exit(optuna.__version__ != '5.0.0')" 2>/dev/null; then
    FUNCTIONS=1 INSTANCES=1 OURS="" OPTUNA="" bash benches/bbob.sh >/dev/null
fi
if [ "$PART" = mixint ] || [ "$PART" = constrained ]; then
    "$PY" -c "import cocoex" 2>/dev/null || "$PWD/.venv-bbob/bin/pip" install -q coco-experiment==2.8.2
fi
if [ -n "${OURS_BIN:-}" ]; then
    BIN=$OURS_BIN
else
    cargo build --release --bin propulate-rs >&2
    BIN=$PWD/target/release/propulate-rs
fi
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
results=$WORK/results.jsonl
touch "$results"
export OMP_NUM_THREADS=1 PYTHONPATH=$PWD/benches

if [ "$PART" = warm ]; then
    FUNCTIONS=${FUNCTIONS:-$(seq -s ' ' 1 24)}
    space=$WORK/bbob-5.toml
    { echo "[params]"; for ((i = 0; i < 5; i++)); do echo "x$i = { type = \"float\", low = -5.0, high = 5.0 }"; done; } > "$space"
    # One run: NAME INSTANCE SEED FID FLAGS...; skipped when its results are there.
    warm_run() {
        local name=$1 inst=$2 seed=$3 fid=$4 run
        shift 4
        run=$WORK/runs/$name-f$fid-s$seed
        [ -f "$run/trials.jsonl" ] && return 0
        rm -rf "$run" && mkdir -p "$run"
        mpirun -np "$NP" --bind-to none "$BIN" --generations $((BUDGET / NP)) --seed "$seed" --space "$space" \
            --preload ioh --checkpoint "$run/ck" --out "$run" --quiet "$@" \
            -- "$PY" "$PWD/benches/bbob_trial.py" "$fid" "$inst" 5 > "$run/run.log" 2>&1 ||
            { echo "spaces: $name f$fid s$seed failed; see $run/run.log" >&2; exit 1; }
        echo "$name f$fid s$seed: $("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['loss'])" "$run/best.json")" >&2
    }
    for seed in $SEED; do
        for fid in $FUNCTIONS; do
            warm_run cold-i1 1 "$seed" "$fid"
            warm_run cold-i2 2 "$seed" "$fid"
            warm_run warm-i2 2 "$seed" "$fid" --warm-start "$WORK/runs/cold-i1-f$fid-s$seed/ck"
        done
    done
    "$PY" benches/summarize_warm.py "$WORK"
    exit 0
fi

if [ "$PART" = ddp ]; then
    [ -x .torch/bin/python ] || { echo "spaces: PART=ddp needs torch in .torch/ (bash scripts/install-libtorch.sh)" >&2; exit 1; }
    space=$PWD/tutorials/pytorch_ddp/space-conditional.toml
else
    space=$WORK/$PART.toml
    "$PY" benches/spaces_problems.py "$PART" > "$space"
fi

record() { # KEY METHOD PROBLEM SEED BEST SECONDS
    echo "{\"key\": \"$1\", \"method\": \"$2\", \"fid\": $3, \"instance\": $INSTANCE, \"dim\": \"$PART\", \"budget\": $BUDGET, \"seed\": $4, \"best\": $5, \"seconds\": $6}" >> "$results"
    echo "$1: $5 (${6%.*} s)" >&2
}

# The best of a run: best.json's loss, infinity when no evaluation was feasible.
best_of() {
    "$PY" -c "import json,sys; b=json.load(open(sys.argv[1])); print(b['loss'] if b.get('feasible', True) else 'Infinity')" "$1"
}

# The runs in order: every problem of a seed, then the next seed; with BY=problem every seed of a
# problem, then the next problem (a long background job then completes problems one by one).
pairs=()
if [ "${BY:-seed}" = problem ]; then
    for problem in $PROBLEMS; do for seed in $SEED; do pairs+=("$seed:$problem"); done; done
else
    for seed in $SEED; do for problem in $PROBLEMS; do pairs+=("$seed:$problem"); done; done
fi
for pair in "${pairs[@]}"; do
    seed=${pair%%:*} problem=${pair#*:}
    case "$PART" in mixint | constrained) INSTANCE=$seed ;; esac
    {
        for ours in $OURS; do
            method="propulate-$ours${LABEL:-}"
            key="$method $PART p$problem i$INSTANCE b$BUDGET np$NP s$seed"
            grep -qF "\"key\": \"$key\"" "$results" && continue
            run=$WORK/runs/${key// /-}
            rm -rf "$run" && mkdir -p "$run"
            flags=()
            [ "$ours" = default ] || flags=(--propagator "$ours")
            read -ra more <<< "${FLAGS:-}"
            flags+=("${more[@]}")
            # What the workers run: the PyTorch tutorial from the torch the README's set-up
            # installs, torch imported once per rank, or a BBOB problem with ioh imported.
            if [ "$PART" = ddp ]; then
                trial=(--preload torch -- "$PWD/.torch/bin/python" "$PWD/tutorials/pytorch_ddp/train.py")
            else
                trial=(--preload ioh -- "$PY" "$PWD/benches/spaces_trial.py" "$PART" "$problem" "$INSTANCE")
            fi
            start=$(date +%s.%N)
            mpirun -np "$NP" --bind-to none "$BIN" --generations $((BUDGET / NP)) --seed "$seed" --space "$space" \
                --checkpoint "$run/ck" --out "$run" --quiet "${flags[@]}" "${trial[@]}" > "$run/run.log" 2>&1 ||
                { echo "spaces: $key failed; see $run/run.log" >&2; exit 1; }
            seconds=$("$PY" -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" "$start" "$(date +%s.%N)")
            best=$(best_of "$run/best.json")
            record "$key" "$method" "$problem" "$seed" "$best" "$seconds"
        done
        for sampler in $OPTUNA; do
            method="optuna-$sampler"
            key="$method $PART p$problem i$INSTANCE b$BUDGET s$seed"
            grep -qF "\"key\": \"$key\"" "$results" && continue
            out=$("$PY" benches/spaces_optuna.py "$PART" "$problem" "$INSTANCE" "$BUDGET" "$seed" "$sampler")
            mkdir -p "$WORK/optuna" && echo "$out" > "$WORK/optuna/${key// /-}.json" # with the best's parameters
            best=$(echo "$out" | "$PY" -c "import json,sys; print(json.dumps(json.load(sys.stdin)['best']))")
            seconds=$(echo "$out" | "$PY" -c "import json,sys; print(json.load(sys.stdin)['seconds'])")
            record "$key" "$method" "$problem" "$seed" "$best" "$seconds"
        done
    }
done
"$PY" benches/summarize_bbob.py "$results"
