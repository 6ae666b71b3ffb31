#!/usr/bin/env bash
# Population-based training against the default search and against Ray Tune's PBT, on the same
# PyTorch program (tutorials/pytorch_ddp/train.py: the reference tutorial's CNN on Fashion-MNIST),
# per seed, one method after the other on this machine:
#
#   propulate-pbt      mpirun -np MEMBERS propulate-rs --propagator pbt --pbt-interval INTERVAL
#                      --pbt-steps STEPS --pbt-fixed conv_layers,activation (one island)
#   propulate-pb2      the same with --pbt-explore pb2 (PB2's model picks the explored values)
#   propulate-default  mpirun -np MEMBERS propulate-rs --generations GENERATIONS, no propagator
#                      flag (what a --space command trial gets), every training STEPS epochs from
#                      scratch (train.py --epochs STEPS)
#   ray-pbt            Ray Tune 2.60.0's PopulationBasedTraining (benches/pbt_ray.py): MEMBERS
#                      trials at once on a local Ray, the same program started per interval with
#                      the same PROPULATE_* variables, the same interval, quantile (0.25),
#                      resample probability (0.25) and fixed parameters, its members starting from
#                      propulate-pbt's first hyperparameters of the same seed
#
# and prints, per seed, each method's wall time and best validation loss, when each of
# propulate-rs's PBTs reached the default search's final best (and that time's share of the
# default's wall time), and its best loss and Ray's at the wall time the first of the two finished (benches/summarize_pbt.py, which also
# draws the best loss by wall time into WORK/pbt.png).
#
#   bash benches/pbt.sh
#   SEEDS=1 STEPS=4 GENERATIONS=1 bash benches/pbt.sh      # a quick look
#
# Knobs: SEEDS ["1 2 3"]; MEMBERS [4] (MPI ranks, one worker and member each; Ray trials at once);
# STEPS [8] epochs per member (PBT) and per training (default search); INTERVAL [1] epochs per
# evaluation; GENERATIONS [3] trainings per worker in the default search; TRAIN_FLAGS
# ["--train-images 2000 --valid-images 500"]; WORK [bench-results/pbt] (a method and seed already
# done there is not run again); BIN [target/release/propulate-rs, built here]. Each training
# process runs one thread (OMP_NUM_THREADS=1). Installs Ray 2.60.0 and matplotlib 3.11.2 into
# .venv-pbt/; the trainings run with the torch of the README's set-up (.torch/).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/mpi-env.sh
SEEDS=${SEEDS:-"1 2 3"}
MEMBERS=${MEMBERS:-4}
STEPS=${STEPS:-8}
INTERVAL=${INTERVAL:-1}
GENERATIONS=${GENERATIONS:-3}
TRAIN_FLAGS=${TRAIN_FLAGS:-"--train-images 2000 --valid-images 500"}
WORK=${WORK:-bench-results/pbt}
if [ -z "${BIN:-}" ]; then
    cargo build --release --bin propulate-rs >&2
    BIN=$PWD/target/release/propulate-rs
fi
TORCH_PY=$PWD/.torch/bin/python
if ! "$TORCH_PY" -c "import torch" 2>/dev/null; then
    echo "pbt: no torch in .torch/: run the README's set-up (scripts/install-libtorch.sh) first" >&2
    exit 1
fi
venv=.venv-pbt
if ! "$venv/bin/python" -c "import matplotlib, ray, sys; sys.exit(ray.__version__ != '2.60.0')" 2>/dev/null; then
    echo "pbt: installing ray[tune] 2.60.0 and matplotlib 3.11.2 into $venv" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "ray[tune]==2.60.0" "matplotlib==3.11.2"
fi
PY=$PWD/$venv/bin/python

mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
read -ra train_flags <<< "$TRAIN_FLAGS"
program=("$TORCH_PY" "$PWD/tutorials/pytorch_ddp/train.py" "${train_flags[@]}")
space=$PWD/tutorials/pytorch_ddp/space.toml

# run METHOD SEED COMMAND...: runs it once into WORK/METHOD-sSEED, recording its start (Unix time).
run() {
    local method=$1 seed=$2
    shift 2
    local dir=$WORK/$method-s$seed
    if [ -f "$dir/done" ]; then return; fi
    rm -rf "$dir"
    mkdir -p "$dir"
    date +%s.%N > "$dir/start"
    "$@" > "$dir/run.log" 2>&1 || { echo "pbt: $method seed $seed failed; see $dir/run.log" >&2; exit 1; }
    date +%s.%N > "$dir/end"
    touch "$dir/done"
    echo "pbt: $method seed $seed done in $("$PY" -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1])))" \
        "$(cat "$dir/start")" "$(cat "$dir/end")") s" >&2
}

for seed in $SEEDS; do
    for explore in perturb pb2; do
        method=propulate-pbt
        [ "$explore" = perturb ] || method=propulate-$explore
        dir=$WORK/$method-s$seed
        run "$method" "$seed" mpirun -np "$MEMBERS" "$BIN" --islands 1 --propagator pbt --pbt-explore "$explore" \
            --pbt-interval "$INTERVAL" --pbt-steps "$STEPS" --pbt-fixed conv_layers,activation --seed "$seed" \
            --space "$space" --checkpoint "$dir/ck" --out "$dir" --quiet -- "${program[@]}" --seed "$seed"
    done
    dir=$WORK/propulate-default-s$seed
    run propulate-default "$seed" mpirun -np "$MEMBERS" "$BIN" --islands 1 --generations "$GENERATIONS" \
        --seed "$seed" --space "$space" --checkpoint "$dir/ck" --out "$dir" --quiet \
        -- "${program[@]}" --seed "$seed" --epochs "$STEPS"
    # Ray's members start where propulate-rs's did (each worker's first evaluation), so that the
    # two PBTs differ in what they do with the same population, not in its first draws.
    start=$WORK/propulate-pbt-s$seed/start.json
    "$PY" -c 'import json, sys
first = [json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["generation"] == 0]
json.dump([t["params"] for t in sorted(first, key=lambda t: t["worker"])], open(sys.argv[2], "w"))' \
        "$WORK/propulate-pbt-s$seed/trials.jsonl" "$start"
    dir=$WORK/ray-pbt-s$seed
    run ray-pbt "$seed" "$PY" benches/pbt_ray.py --members "$MEMBERS" --steps "$STEPS" --interval "$INTERVAL" \
        --seed "$seed" --start "$start" --work "$dir" -- "${program[@]}" --seed "$seed"
done
"$PY" benches/summarize_pbt.py "$WORK" $SEEDS
