#!/usr/bin/env bash
# The whole CNN hyperparameter search of propulate-rs against the reference program itself:
# Propulate 1.2.2's tutorials/torch_ddp_example.py (PyTorch DDP over gloo on CPUs), both under
# `mpirun -np $NP` with 2 ranks per worker, one island, the same Fashion-MNIST subset, epochs,
# batch (8 per rank) and generations. Prints per run the wall time, evaluations finished,
# evaluations per hour and best validation loss, then the ratio of the median evaluations per hour
# (ours / reference) and the median best losses over the seeds.
#
#   bash benches/ddp_search.sh
#   SEEDS=0 GENERATIONS=2 TRAIN_IMAGES=500 VALID_IMAGES=200 EPOCHS=1 bash benches/ddp_search.sh
#
# With the defaults, one pair (reference, then ours) for one seed took about 4 min on the
# 2-core development machine (2026-11-23: the reference 174 s, ours 70 s, set-up a few s), so the
# three seeds take about 12-13 min. The small line above is a smoke test of under half a minute.
#
# Knobs (defaults in brackets):
#   SEEDS ["0 1 2"]     one reference run then one of ours per seed, interleaved so that drifting
#                       load on the machine hits both alike
#   GENERATIONS [14]    evaluations per worker (the reference's --generations, our --generations)
#   TRAIN_IMAGES [2000] the first N training images; VALID_IMAGES [500] the first M test images
#   EPOCHS [3]          epochs per evaluation (the reference: its `epochs = 20`, replaced)
#   NP [4]              MPI ranks; workers = NP / 2
#   WORK [bench-results/ddp-search]  work dir (runs, adapted tutorial, MNIST-layout data)
#   TIMEOUT [1200]      seconds per run; a run past it is killed and its finished evaluations
#                       still counted (the reference has been seen to hang at the end)
#   DATA [/usr/share/datasets/fashion-mnist]  idx files, plain or .gz (Debian's dataset-fashion-mnist)
#   REFERENCE_DDP       path to the original torch_ddp_example.py of Propulate 1.2.2; default:
#                       from REFERENCE_MIRROR (the git directory of a clone of
#                       Helmholtz-AI-Energy/propulate, if given) at tag v1.2.2, else downloaded
#                       from GitHub at that tag
#   OURS_BIN            our binary; default: `cargo build --release --features cnn,tch` and
#                       target/release/propulate-rs
#   OURS_ARGS [""]      more flags for ours (e.g. "--propagator ga --reference-genetic" for the
#                       reference's breeding)
#   OURS_VARIANTS       several of ours per seed, each after the reference: "label=flags;label=flags"
#                       [ours=$OURS_ARGS], e.g. "ours=;ours-linear=--lr-scale linear" (the
#                       reference's linear learning-rate scale); one table row and summary each;
#                       a variant with its own --generations replaces GENERATIONS (e.g.
#                       "ours-3x=--generations 42": three times the evaluations); set but empty: none
#                       of them (only the reference and the command runs)
#   COMMAND [1]         1: per seed also a run labelled `command`: the same PyTorch training as a
#                       stand-alone DDP script (tutorials/pytorch_ddp/train.py: the reference's
#                       network, Adadelta, StepLR, batch 8 per rank, DistributedSampler) tuned by
#                       our binary as a command trial (`--space tutorials/pytorch_ddp/space.toml --
#                       python train.py ...`), on the same subset, epochs and generations; 0: not
#   COMMAND_VARIANTS ["command="]  the command runs per seed, "label=flags;label=flags", each
#                       label starting with `command`, e.g.
#                       "command=;command-halving=--early-stop halving" (the same program, its
#                       hopeless trainings stopped by successive halving on the epochs it reports)
#   PYTHON_PACKAGE [0]  1: per seed also a run labelled `python`: the same PyTorch training in-process,
#                       tutorials/python/torch_ddp_example.py on the Python package (.venv-python, made by
#                       scripts/install-python.sh), on the same subset, epochs, batch and generations
#   SKIP_SETUP [0]      1: do not run benches/reference/setup_torch.sh (torch in .venv-ref)
#   SKIP_REFERENCE [0]  1: run only ours (to screen settings on other seeds; no ratio then); with
#                       COMMAND=0 nothing of the reference's is needed (no tutorial, no .venv-ref)
#
# The reference runs as published, adapted only as the issue allows. The tutorial is not part of
# this repository: it is taken at run time and a copy in $WORK/reference is changed by exact string
# replacements (each must match exactly once, or the script stops), and the unified diff is printed
# and saved as $WORK/reference/adaptation.diff. The replacements:
#   - data path: torchvision's MNIST(root=...) points at $WORK/data, which holds MNIST/raw/ with
#     the decompressed Fashion-MNIST idx files (the same file names as MNIST's). With them present,
#     the download=True calls at the top of __main__ download nothing (torchvision checks the raw
#     files first; checked below before any run);
#   - subset: torch.utils.data.Subset of the first TRAIN_IMAGES training and VALID_IMAGES test
#     images, the images ours trains and validates on (`--train-images`, `--valid-images`);
#   - budget: `epochs = 20` becomes EPOCHS; generations come from its own --generations flag;
#   - seed: its propagator's random.Random(comm.rank) becomes random.Random(seed + comm.rank), the
#     seeding of the reference's other tutorials, with its own --seed flag (so that seeds differ);
#   - paths: none changed. Each run starts in its own directory ($WORK/reference-seed<S>), where
#     its relative log_path (torch_ckpts/) lands; its checkpoint goes to its --checkpoint flag,
#     also there.
# Everything else is the tutorial's: batch 8 for training, its validation loop (batch 1, each rank
# its DistributedSampler shard), its 2 dataloader workers per loader, gloo (it falls back to gloo
# by itself without CUDA), ranks_per_worker=2, its propagator (get_default_propagator, pop size
# 2 x ranks = 8 with NP=4), its early stopping (5 epochs without improvement, counted in total;
# ours: 5 in a row; neither can trigger within 3 epochs). It gets --num_islands 1 (its parser's default
# is 2), as ours gets --islands 1, and --migration_probability 0: with one island, Propulate 1.2.2
# still tries to send emigrants and fails ("Propagator has to sire more than 0 offspring") on the
# root, while the other ranks wait for it until the timeout; with one island there is nowhere to
# migrate to anyway. Ours runs with its defaults (its own breeding; OURS_ARGS to change it) and
# checkpoints, as the reference does.
#
# Threads: both get OMP_NUM_THREADS=1 (4 ranks on 2 cores), so each PyTorch rank computes on one
# thread; ours pins its libtorch to cores / ranks on the node (at least 1), i.e. 1 thread per rank
# here, whatever OMP_NUM_THREADS says. Both run with `--bind-to none`.
#
# Loss: ours is the mean NLL per validation image (summed over the worker's ranks). The reference's
# root rank returns its own shard's summed NLL divided by the whole validation set's size, about
# the mean per image / ranks per worker; the table shows it raw and x ranks per worker (2), and
# compares the latter. That correction is exact in scale but not in noise: the reference's loss
# covers only its root's shard (VALID_IMAGES / 2 images), so its best over a search is the
# minimum of noisier estimates than ours and leans low. Evaluations per hour: evaluations finished / time from the launch of mpirun
# to the end of the last one (start-up counted, a hang after the search not). The reference's
# evaluations are read from its checkpoint pickle, which a run killed by TIMEOUT may have last
# written one evaluation or so per worker before the kill (ours: its journal, complete). See
# benches/summarize_ddp_search.py.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO_ROOT=$PWD
source scripts/mpi-env.sh
source scripts/libtorch-env.sh

SEEDS=${SEEDS:-"0 1 2"}
GENERATIONS=${GENERATIONS:-14}
TRAIN_IMAGES=${TRAIN_IMAGES:-2000}
VALID_IMAGES=${VALID_IMAGES:-500}
EPOCHS=${EPOCHS:-3}
NP=${NP:-4}
WORK=${WORK:-bench-results/ddp-search}
TIMEOUT=${TIMEOUT:-1200}
DATA=${DATA:-/usr/share/datasets/fashion-mnist}
REFERENCE_MIRROR=${REFERENCE_MIRROR:-}
REFERENCE_URL=https://raw.githubusercontent.com/Helmholtz-AI-Energy/propulate/v1.2.2/tutorials/torch_ddp_example.py
OURS_ARGS=${OURS_ARGS:-}
OURS_VARIANTS=${OURS_VARIANTS-"ours=$OURS_ARGS"}
RANKS_PER_WORKER=2 # the tutorial's ranks_per_worker, not a knob: changing it would be a third adaptation
VENV=$REPO_ROOT/.venv-ref
PY=$VENV/bin/python

log() { echo "[ddp_search] $*" >&2; }
die() { log "error: $*"; exit 1; }

(( NP % RANKS_PER_WORKER == 0 )) || die "NP=$NP is not a multiple of $RANKS_PER_WORKER ranks per worker"
mkdir -p "$WORK/reference"
WORK=$(cd "$WORK" && pwd) # absolute: the runs start in their own directories

# --- the reference's environment: Propulate 1.2.2 + mpi4py + torch 2.9.0 + torchvision 0.24.0 ---
if [ "${SKIP_SETUP:-0}" != 1 ] && [ "${SKIP_REFERENCE:-0}" != 1 ]; then
    bash benches/reference/setup_torch.sh >&2
fi

# --- our binary ---
if [ -n "${OURS_BIN:-}" ]; then
    BIN=$OURS_BIN
else
    cargo build --release --features cnn,tch --bins >&2
    BIN=$REPO_ROOT/target/release/propulate-rs
fi
[ -x "$BIN" ] || die "no binary at $BIN"

# --- the original tutorial, taken at run time (it is not copied into this repository) ---
# The reference (its tutorial, adapted; its data in torchvision's layout): not needed without it.
if [ "${SKIP_REFERENCE:-0}" != 1 ]; then
orig=$WORK/reference/torch_ddp_example.orig.py
if [ -n "${REFERENCE_DDP:-}" ]; then
    cp "$REFERENCE_DDP" "$orig" || die "cannot read REFERENCE_DDP=$REFERENCE_DDP"
    log "reference tutorial: $REFERENCE_DDP"
elif [ -n "$REFERENCE_MIRROR" ] && git --git-dir="$REFERENCE_MIRROR" show v1.2.2:tutorials/torch_ddp_example.py > "$orig.tmp" 2>/dev/null; then
    mv "$orig.tmp" "$orig"
    log "reference tutorial: $REFERENCE_MIRROR at v1.2.2"
elif curl -fsSL --max-time 60 "$REFERENCE_URL" -o "$orig.tmp"; then
    mv "$orig.tmp" "$orig"
    log "reference tutorial: $REFERENCE_URL"
else
    rm -f "$orig.tmp"
    die "cannot get Propulate 1.2.2's tutorials/torch_ddp_example.py. Set REFERENCE_DDP to a copy, e.g.
  git clone --branch v1.2.2 https://github.com/Helmholtz-AI-Energy/propulate && REFERENCE_DDP=propulate/tutorials/torch_ddp_example.py
or download $REFERENCE_URL"
fi
log "sha256 $(sha256sum "$orig" | cut -d' ' -f1)"

# --- the data, laid out as torchvision's MNIST class reads it: <root>/MNIST/raw/<idx file> ---
data_root=$WORK/data
raw=$data_root/MNIST/raw
mkdir -p "$raw"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
    [ -s "$raw/$f" ] && continue
    if [ -f "$DATA/$f" ]; then
        cp "$DATA/$f" "$raw/$f.tmp"
    elif [ -f "$DATA/$f.gz" ]; then
        gunzip -c "$DATA/$f.gz" > "$raw/$f.tmp"
    else
        die "no $f(.gz) in DATA=$DATA (Debian: apt-get install dataset-fashion-mnist)"
    fi
    mv "$raw/$f.tmp" "$raw/$f"
done

# --- the adaptation: exact replacements, each asserted to match once ---
adapted=$WORK/reference/torch_ddp_example.py # same file name: its log file is named after it
python3 - "$orig" "$adapted" "$data_root" "$TRAIN_IMAGES" "$VALID_IMAGES" "$EPOCHS" <<'PY'
import sys
orig, adapted, data_root, n_train, n_valid, epochs = sys.argv[1:]
text = open(orig).read()
replacements = [
    # data path, subset and budget as constants at the top, after the tutorial's own constants
    # (its log_path, relative, stays: each run starts in its own directory)
    ('log_path = "torch_ckpts"\n',
     'log_path = "torch_ckpts"\n'
     f'DATA_ROOT = {data_root!r}  # adapted: holds MNIST/raw/ with the Fashion-MNIST idx files\n'
     f'TRAIN_IMAGES, VALID_IMAGES = {int(n_train)}, {int(n_valid)}  # adapted: subset\n'
     f'EPOCHS = {int(epochs)}  # adapted: budget\n'),
    # data path of the training set in the loss function's loaders
    ('download=False, root=".", transform=data_transform, train=True',
     'download=False, root=DATA_ROOT, transform=data_transform, train=True'),
    # data path of the validation set, and both sets cut to their first images
    ('val_dataset = MNIST(download=False, root=".", transform=data_transform, train=False)',
     'val_dataset = MNIST(download=False, root=DATA_ROOT, transform=data_transform, train=False)\n'
     '    train_dataset = torch.utils.data.Subset(train_dataset, range(TRAIN_IMAGES))  # adapted: subset\n'
     '    val_dataset = torch.utils.data.Subset(val_dataset, range(VALID_IMAGES))  # adapted: subset'),
    ('epochs = 20', 'epochs = EPOCHS  # adapted: budget'),
    # data path of the (no-op) download calls at the top of __main__
    ('MNIST(download=True, root=".", transform=None, train=True)',
     'MNIST(download=True, root=DATA_ROOT, transform=None, train=True)'),
    ('MNIST(download=True, root=".", transform=None, train=False)',
     'MNIST(download=True, root=DATA_ROOT, transform=None, train=False)'),
    # the propagator's seed: the run's --seed plus the rank, as the reference's other tutorials
    ('random.Random(\n        comm.rank\n    )',
     'random.Random(\n        config.seed + comm.rank  # adapted: seeded by --seed\n    )'),
]
for old, new in replacements:
    n = text.count(old)
    if n != 1:
        sys.exit(f"adaptation: {old!r} matches {n} times in {orig}, expected exactly once "
                 "(not Propulate 1.2.2's torch_ddp_example.py?)")
    text = text.replace(old, new)
open(adapted, "w").write(text)
PY
diff -u --label torch_ddp_example.py --label "torch_ddp_example.py (adapted)" "$orig" "$adapted" \
    > "$WORK/reference/adaptation.diff" || true
echo "=== the reference's adaptation ($WORK/reference/adaptation.diff) ==="
cat "$WORK/reference/adaptation.diff"
echo

# The download=True calls must be no-ops: torchvision skips downloading when the raw files are
# there. Checked here with the reference's own torchvision, so that no run can reach the network.
"$PY" - "$data_root" "$TRAIN_IMAGES" "$VALID_IMAGES" <<'PY'
import sys
from torchvision.datasets import MNIST
root, n_train, n_valid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for train, n in ((True, n_train), (False, n_valid)):
    ds = MNIST(root=root, train=train, download=False)
    assert ds._check_exists(), f"torchvision would download into {ds.raw_folder}"
    assert len(ds) >= n, f"{len(ds)} images, {n} asked for"
print(f"data: {root}/MNIST/raw present, torchvision will not download", file=sys.stderr)
PY
fi

export OMP_NUM_THREADS=1
now() { date +%s.%N; }
# run.json: what the summary needs besides the program's own records.
meta() { # program seed dir launch end rc
    printf '{"program": "%s", "seed": %s, "launch": %s, "end": %s, "rc": %s, "ranks_per_worker": %s}\n' \
        "$1" "$2" "$4" "$5" "$6" "$RANKS_PER_WORKER" > "$3/run.json"
}

# After one of our runs: its record, and its finished evaluations from the checkpoint if it failed.
finished() { # label seed dir launch rc
    meta "$1" "$2" "$3" "$4" "$(now)" "$5"
    if [ "$5" != 0 ]; then
        log "$1, seed $2: exit status $5, see $3/stdout.log; its finished evaluations from the checkpoint"
        "$BIN" report "$3/ckpt" --out "$3" >> "$3/stdout.log" 2>&1 || log "report failed too"
    fi
}

for seed in $SEEDS; do
    # The reference. It starts in its run directory, so nothing it writes lands elsewhere.
    dir=$WORK/reference-seed$seed
    if [ "${SKIP_REFERENCE:-0}" != 1 ]; then
        rm -rf "$dir" && mkdir -p "$dir/ckpt"
        log "reference, seed $seed"
        t0=$(now)
        rc=0
        (cd "$dir" && timeout -k 30 "$TIMEOUT" mpirun -np "$NP" --bind-to none -x OMP_NUM_THREADS \
            "$PY" "$adapted" --generations "$GENERATIONS" --num_islands 1 --migration_probability 0 \
            --seed "$seed" --checkpoint "$dir/ckpt") > "$dir/stdout.log" 2>&1 || rc=$?
        meta reference "$seed" "$dir" "$t0" "$(now)" "$rc"
        if grep -q "Downloading" "$dir/stdout.log"; then die "the reference downloaded data (see $dir/stdout.log)"; fi
        [ "$rc" = 0 ] || log "reference, seed $seed: exit status $rc$( ((rc == 124 || rc == 137)) && echo ' (TIMEOUT)'), see $dir/stdout.log"
    fi

    # Ours, same ranks, subset, epochs, batch and generations: each variant in turn.
    IFS=';' read -r -a variants <<< "$OURS_VARIANTS"
    for variant in "${variants[@]}"; do
        label=${variant%%=*}
        flags=${variant#*=}
        [[ "$label" =~ ^[A-Za-z0-9_-]+$ && "$label" != reference ]] || die "bad OURS_VARIANTS entry '$variant' (label=flags)"
        dir=$WORK/$label-seed$seed
        rm -rf "$dir" && mkdir -p "$dir"
        log "$label ($flags), seed $seed"
        t0=$(now)
        rc=0
        # A variant may set its own --generations (e.g. more evaluations in the reference's time).
        generations=(--generations "$GENERATIONS")
        [[ " $flags " =~ \ --generations[=\ ] ]] && generations=()
        # shellcheck disable=SC2086
        timeout -k 30 "$TIMEOUT" mpirun -np "$NP" --bind-to none -x OMP_NUM_THREADS \
            "$BIN" --islands 1 --ranks-per-worker "$RANKS_PER_WORKER" "${generations[@]}" \
            --data "$DATA" --train-images "$TRAIN_IMAGES" --valid-images "$VALID_IMAGES" \
            --epochs "$EPOCHS" --batch 8 --seed "$seed" --checkpoint "$dir/ckpt" --out "$dir" -q \
            $flags > "$dir/stdout.log" 2>&1 || rc=$?
        finished "$label" "$seed" "$dir" "$t0" "$rc"
    done

    # The same PyTorch training as the reference's, as a program of the user's tuned by ours.
    if [ "${COMMAND:-1}" = 1 ]; then
        IFS=';' read -r -a variants <<< "${COMMAND_VARIANTS:-command=}"
        for variant in "${variants[@]}"; do
            label=${variant%%=*}
            flags=${variant#*=}
            [[ "$label" =~ ^command[A-Za-z0-9_-]*$ ]] || die "bad COMMAND_VARIANTS entry '$variant' (label=flags, the label starting with command)"
            dir=$WORK/$label-seed$seed
            rm -rf "$dir" && mkdir -p "$dir"
            log "$label (tutorials/pytorch_ddp/train.py; $flags), seed $seed"
            t0=$(now)
            rc=0
            # shellcheck disable=SC2086
            timeout -k 30 "$TIMEOUT" mpirun -np "$NP" --bind-to none -x OMP_NUM_THREADS \
                "$BIN" --islands 1 --ranks-per-worker "$RANKS_PER_WORKER" --generations "$GENERATIONS" \
                --seed "$seed" --checkpoint "$dir/ckpt" --out "$dir" -q $flags \
                --space "$REPO_ROOT/tutorials/pytorch_ddp/space.toml" \
                -- "$REPO_ROOT/.torch/bin/python" "$REPO_ROOT/tutorials/pytorch_ddp/train.py" --data "$DATA" \
                --train-images "$TRAIN_IMAGES" --valid-images "$VALID_IMAGES" --epochs "$EPOCHS" --batch 8 \
                --seed "$seed" > "$dir/stdout.log" 2>&1 || rc=$?
            finished "$label" "$seed" "$dir" "$t0" "$rc"
        done
    fi

    # The same PyTorch training in the ranks' own processes: the Python package's tutorial
    # (tutorials/python/torch_ddp_example.py, propulate_rs.optimize), from .venv-python.
    if [ "${PYTHON_PACKAGE:-0}" = 1 ]; then
        dir=$WORK/python-seed$seed
        rm -rf "$dir" && mkdir -p "$dir"
        log "python (tutorials/python/torch_ddp_example.py), seed $seed"
        t0=$(now)
        rc=0
        timeout -k 30 "$TIMEOUT" mpirun -np "$NP" --bind-to none -x OMP_NUM_THREADS \
            "$REPO_ROOT/.venv-python/bin/python" -m mpi4py "$REPO_ROOT/tutorials/python/torch_ddp_example.py" \
            --ranks-per-worker "$RANKS_PER_WORKER" --generations "$GENERATIONS" --data "$DATA" \
            --train-images "$TRAIN_IMAGES" --valid-images "$VALID_IMAGES" --epochs "$EPOCHS" --batch 8 \
            --seed "$seed" --checkpoint "$dir/ckpt" --out "$dir" > "$dir/stdout.log" 2>&1 || rc=$?
        finished python "$seed" "$dir" "$t0" "$rc"
    fi
done

# Without the reference, no pickles to read: any Python 3 will do.
[ -x "$PY" ] || PY=python3
"$PY" benches/summarize_ddp_search.py "$WORK" | tee "$WORK/summary.txt"
