#!/usr/bin/env bash
# The Python package (propulate_rs) side by side with what its users would otherwise run, each part
# in one script on one machine (docs/benchmarks/python.md has the results and the commands).
#
#   bash benches/python.sh                        # every part
#   PARTS="engine binding" bash benches/python.sh # some of them
#
# Parts (PARTS ["engine binding asktell ddp"]):
#   engine   the sphere (2-D) as a Python loss, mpirun -np 8, 2 islands, 1000 generations, the
#            genetic propagator: Propulate 1.2.2 (benches/reference/run_reference.py in .venv-ref,
#            benches/reference/setup_venv.sh) against propulate_rs (benches/python_sphere.py),
#            REPEATS [3] pairs interleaved; both the whole mpirun (start-up and imports included)
#            and the run from barrier to barrier. Goal: at least 100x faster.
#   binding  microseconds per evaluation with the loss in Python against the engine's own Rust
#            sphere, one process (benches/python_binding.py). Goal: under 20 us more.
#   asktell  BBOB 5-D, 200 trials, one process: propulate_rs.Study (its default) asked and told one
#            trial at a time (benches/python_asktell.py, ioh 0.3.22 in .venv-python) against Optuna
#            5.0.0's GPSampler and TPESampler (benches/bbob_optuna.py through benches/bbob.sh,
#            .venv-bbob), FUNCTIONS [1..24], INSTANCE [1], SEED [1]: the best f - f_opt and the
#            time per ask. Goal: at most GPSampler's best on 2/3 of the functions, under a fifth of
#            its time per ask.
#   ddp      the PyTorch DDP tutorial: Propulate 1.2.2's torch_ddp_example against our command
#            trial with --preload torch and the package's in-process tutorial
#            (tutorials/python/torch_ddp_example.py), 3 seeds, through benches/ddp_search.sh
#            (its knobs apply: SEEDS, GENERATIONS, EPOCHS, ...). Goal: at least 2.5x the
#            evaluations per hour at a median best loss no worse.
#
# WORK [bench-results/python]: results.jsonl of the engine, binding and asktell parts, the ddp
# part's runs under WORK/ddp. The package is installed by scripts/install-python.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO_ROOT=$PWD
source scripts/mpi-env.sh
PARTS=${PARTS:-"engine binding asktell ddp"}
WORK=${WORK:-bench-results/python}
REPEATS=${REPEATS:-3}
FUNCTIONS=${FUNCTIONS:-$(seq -s ' ' 1 24)}
INSTANCE=${INSTANCE:-1}
SEED=${SEED:-1}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
results=$WORK/results.jsonl
log() { echo "[python-bench] $*" >&2; }
has() { [[ " $PARTS " == *" $1 "* ]]; }

PY=$(bash scripts/install-python.sh)
cargo build --release --bin propulate-rs >&2
BIN=$REPO_ROOT/target/release/propulate-rs
export OMP_NUM_THREADS=1

if has engine; then
    bash benches/reference/setup_venv.sh >&2
    for ((i = 0; i < REPEATS; i++)); do
        for impl in reference ours; do
            log "engine: $impl, repeat $i"
            t0=$(date +%s.%N)
            if [ "$impl" = reference ]; then
                line=$(mpirun -np 8 --bind-to none .venv-ref/bin/python benches/reference/run_reference.py \
                    --function sphere --islands 2 --generations 1000 --seed "$i" 2>/dev/null | grep '^{"impl"')
            else
                line=$(mpirun -np 8 --bind-to none "$PY" -m mpi4py benches/python_sphere.py --generations 1000 \
                    --islands 2 --seed "$i" 2>/dev/null | grep '^{"impl"')
            fi
            process=$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$t0" "$(date +%s.%N)")
            python3 -c 'import json, sys; d = json.loads(sys.argv[1]); d.update(part="engine", repeat=int(sys.argv[2]), process_s=float(sys.argv[3])); print(json.dumps(d))' \
                "$line" "$i" "$process" | tee -a "$results"
        done
    done
fi

if has binding; then
    log "binding"
    "$PY" benches/python_binding.py "$BIN" 20000 5 | tail -1 |
        python3 -c 'import json, sys; d = json.loads(sys.stdin.read()); d["part"] = "binding"; print(json.dumps(d))' |
        tee -a "$results"
fi

if has asktell; then
    "$PY" -m pip install -q --disable-pip-version-check "ioh==0.3.22" >&2
    # Optuna's samplers, sequential, through the BBOB script (its .venv-bbob; nothing of ours).
    OURS="" OPTUNA="gp tpe" FUNCTIONS="$FUNCTIONS" INSTANCES="$INSTANCE" DIMS=5 BUDGET=200 SEED="$SEED" \
        EVAL_SECONDS=0 WORK="$WORK/bbob" BIN="$BIN" bash benches/bbob.sh >&2
    for fid in $FUNCTIONS; do
        log "asktell: f$fid"
        "$PY" benches/python_asktell.py "$fid" "$INSTANCE" 5 200 "$SEED" |
            python3 -c 'import json, sys; d = json.loads(sys.stdin.read()); d.update(part="asktell", fid=int(sys.argv[1]), instance=int(sys.argv[2]), seed=int(sys.argv[3])); print(json.dumps(d))' \
                "$fid" "$INSTANCE" "$SEED" | tee -a "$results"
    done
fi

if has ddp; then
    OURS_VARIANTS="" COMMAND_VARIANTS="command-preload=--preload torch" PYTHON_PACKAGE=1 OURS_BIN="$BIN" \
        WORK="$WORK/ddp" bash benches/ddp_search.sh
fi

python3 benches/summarize_python.py "$WORK"
