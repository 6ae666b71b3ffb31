#!/usr/bin/env bash
# Search quality per evaluation on COCO's BBOB functions (through the `ioh` package): propulate-rs
# as command trials (benches/bbob_trial.py, `--preload ioh`) with asynchronous workers, against
# Optuna 5.0.0's samplers run sequentially (benches/bbob_optuna.py), on the same problems. Prints
# per problem the best f - f_opt each method reached within the budget, then per pair of methods
# on how many problems one was at most the other and the median ratio (benches/summarize_bbob.py).
#
#   bash benches/bbob.sh                                    # 24 functions, 5-D, 200 evaluations
#   DIMS=2 BUDGET=50 bash benches/bbob.sh
#   DIMS=10 BUDGET=1000 OPTUNA="tpe cmaes" bash benches/bbob.sh
#   NP=32 ISLANDS=4 DIMS=10 BUDGET=1000 bash benches/bbob.sh
#
# Knobs: FUNCTIONS [1..24]; INSTANCES [1 2 3 4 5]; DIMS [5]; BUDGET [200] evaluations per run;
# NP [8] MPI ranks, one worker each; ISLANDS [1]; OURS ["default"]: the propulate-rs variants to
# run, separated by `;`: a propagator's name (--propagator NAME), `default` (no flag: what a
# `--space` command trial gets) or `LABEL=FLAGS` (e.g. `whole=--gp-trust-region 0`); empty:
# none; OPTUNA ["tpe gp"]: tpe, gp, cmaes (default settings each; empty:
# none); SEED [1]: the run seed, or several ("1 2 3": each problem once per seed); EVAL_SECONDS [1]: each of our evaluations lasts 0.5-1.5x this (see
# benches/bbob_trial.py; Optuna's sequential runs do not wait, waiting changes nothing for them);
# WORK [bench-results/bbob]: results.jsonl there gains a line per run, and a run already in it is
# not run again (rerun with another WORK, or delete lines); BIN [target/release/propulate-rs,
# built here]. Installs ioh 0.3.22, Optuna 5.0.0, SciPy 1.17.1, greenlet 3.5.6 (its GPSampler needs SciPy, and
# runs its L-BFGS-B batched with greenlet) and cmaes 0.13.1 (its CmaEsSampler's) into .venv-bbob/, with the torch of the
# README's set-up (.torch/, for Optuna's GPSampler).
# On a machine of many cores: JOBS [1] runs of ours at once (each NP ranks; Optuna's stay one at a
# time), and PY: a Python with ioh to run our trials with instead of .venv-bbob/ (nothing is
# installed then; OPTUNA must be empty), e.g. on a lent machine without network:
#   JOBS=6 PY=/tmp/py OPTUNA="" DIMS=10 BUDGET=1000 INSTANCES=2 BIN=... bash benches/bbob.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/mpi-env.sh
FUNCTIONS=${FUNCTIONS:-$(seq -s ' ' 1 24)}
INSTANCES=${INSTANCES:-"1 2 3 4 5"}
DIMS=${DIMS:-5}
BUDGET=${BUDGET:-200}
NP=${NP:-8}
ISLANDS=${ISLANDS:-1}
OURS=${OURS-default}
OPTUNA=${OPTUNA-"tpe gp"}
SEED=${SEED:-1}
WORK=${WORK:-bench-results/bbob}
EVAL_SECONDS=${EVAL_SECONDS:-1}
JOBS=${JOBS:-1}
export BBOB_EVAL_SECONDS=$EVAL_SECONDS
if [ -z "${BIN:-}" ]; then
    cargo build --release --bin propulate-rs >&2
    BIN=$PWD/target/release/propulate-rs
fi
if ((BUDGET % NP)); then
    echo "bbob: BUDGET ($BUDGET) must be a multiple of NP ($NP): each worker runs BUDGET/NP evaluations" >&2
    exit 1
fi

if [ -n "${PY:-}" ]; then
    [ -z "$OPTUNA" ] || { echo "bbob: PY runs only our trials; set OPTUNA=\"\" (Optuna's runs need .venv-bbob)" >&2; exit 1; }
    "$PY" -c "import ioh" || { echo "bbob: PY=$PY cannot import ioh" >&2; exit 1; }
else
    venv=.venv-bbob
    if ! "$venv/bin/python" -c "import cmaes, greenlet, ioh, optuna, scipy, torch, sys; sys.exit(optuna.__version__ != '5.0.0')" 2>/dev/null; then
        echo "bbob: installing ioh 0.3.22 and optuna 5.0.0 into $venv" >&2
        python3 -m venv "$venv"
        "$venv/bin/pip" install --quiet --disable-pip-version-check "ioh==0.3.22" "optuna==5.0.0" "scipy==1.17.1" "greenlet==3.5.6" "cmaes==0.13.1"
        # Optuna's GPSampler needs torch: the one the set-up installed (scripts/install-libtorch.sh).
        torch_site=$(ls -d "$PWD"/.torch/lib/python3*/site-packages)
        echo "$torch_site" > "$(ls -d "$venv"/lib/python3*/site-packages)/propulate-torch.pth"
        "$venv/bin/python" -c "import ioh, optuna, torch"
    fi
    PY=$PWD/$venv/bin/python
fi

mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
results=$WORK/results.jsonl
touch "$results"
done_already() { grep -qF "\"key\": \"$1\"" "$results"; }
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

# A finished run's line in results.jsonl: KEY METHOD FID INSTANCE DIM SEED BEST SECONDS.
record() {
    echo "{\"key\": \"$1\", \"method\": \"$2\", \"fid\": $3, \"instance\": $4, \"dim\": $5, \"budget\": $BUDGET, \"seed\": $6, \"best\": $7, \"seconds\": $8}" >> "$results"
    echo "$1: $7 (${8%.*} s)" >&2
}

# One run of ours: KEY METHOD FID INSTANCE DIM RUN_DIR FLAGS...; its line goes to results.jsonl.
run_ours() {
    local key=$1 method=$2 fid=$3 inst=$4 dim=$5 run=$6 seed=$7 start seconds best
    shift 7
    start=$(date +%s.%N)
    mpirun -np "$NP" --bind-to none "$BIN" --islands "$ISLANDS" --generations $((BUDGET / NP)) --seed "$seed" \
        --space "$WORK/space-$dim.toml" --preload ioh --checkpoint "$run/ck" --out "$run" --quiet "$@" \
        -- "$PY" "$PWD/benches/bbob_trial.py" "$fid" "$inst" "$dim" > "$run/run.log" 2>&1 ||
        { echo "bbob: $key failed; see $run/run.log" >&2; return 1; }
    seconds=$("$PY" -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 1))" "$start" "$(date +%s.%N)")
    best=$("$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['loss'])" "$run/best.json")
    record "$key" "$method" "$fid" "$inst" "$dim" "$seed" "$best" "$seconds"
}

for dim in $DIMS; do
    space=$WORK/space-$dim.toml
    { echo "[params]"; for ((i = 0; i < dim; i++)); do echo "x$i = { type = \"float\", low = -5.0, high = 5.0 }"; done; } > "$space"
    # Seed by seed, instance by instance: a run stopped early leaves whole instances.
    for seed in $SEED; do
        for inst in $INSTANCES; do
            for fid in $FUNCTIONS; do
                IFS=';' read -ra variants <<< "$OURS"
                for variant in "${variants[@]}"; do
                    ours=${variant%%=*}
                    [ -n "$ours" ] || continue
                    method="propulate-$ours"
                    # Runs with and without evaluation time are told apart wherever they meet.
                    [ "$EVAL_SECONDS" = 0 ] || method="$method-t$EVAL_SECONDS"
                    key="$method f$fid i$inst d$dim b$BUDGET np$NP islands$ISLANDS s$seed"
                    done_already "$key" && continue
                    run=$WORK/runs/${key// /-}
                    rm -rf "$run"
                    mkdir -p "$run"
                    if [[ "$variant" == *=* ]]; then
                        read -ra flags <<< "${variant#*=}"
                    elif [ "$ours" = default ]; then
                        flags=()
                    else
                        flags=(--propagator "$ours")
                    fi
                    # JOBS > 1: in the background, at most JOBS at once; a failed run is reported and the
                    # others go on (the summary then lacks it).
                    while (($(jobs -rp | wc -l) >= JOBS)); do wait -n || true; done
                    if ((JOBS > 1)); then
                        run_ours "$key" "$method" "$fid" "$inst" "$dim" "$run" "$seed" "${flags[@]}" &
                    else
                        run_ours "$key" "$method" "$fid" "$inst" "$dim" "$run" "$seed" "${flags[@]}" || exit 1
                    fi
                done
                for sampler in $OPTUNA; do
                    method="optuna-$sampler"
                    key="$method f$fid i$inst d$dim b$BUDGET s$seed"
                    done_already "$key" && continue
                    out=$("$PY" benches/bbob_optuna.py "$sampler" "$fid" "$inst" "$dim" "$BUDGET" "$seed")
                    best=$(echo "$out" | "$PY" -c "import json,sys; print(json.load(sys.stdin)['best'])")
                    seconds=$(echo "$out" | "$PY" -c "import json,sys; print(json.load(sys.stdin)['seconds'])")
                    record "$key" "$method" "$fid" "$inst" "$dim" "$seed" "$best" "$seconds"
                done
            done
        done
    done
done
wait
"$PY" benches/summarize_bbob.py "$results"
