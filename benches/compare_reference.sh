#!/usr/bin/env bash
# Side-by-side benchmark of propulate-rs against the Python reference (Propulate 1.2.2).
#
#   benches/compare_reference.sh            full run, ~25-30 min on 2 cores: the reference's
#                                           G=1000 throughput run alone takes ~3 min, each of its 27
#                                           quality runs ~30 s (10-15 s of that is MPI + imports)
#   QUICK=1 benches/compare_reference.sh    smoke test (~1-2 min)
#
# Steps: (a) benches/reference/setup_venv.sh, (b) `cargo build --release` unless the binary
# exists, (c) the runs, (d) a markdown table on stdout (also saved as summary.md), (e) a check
# that our benchmark functions give the reference's values (check_functions.py).
# Exit status: 0 all fine, 1 a run failed, 3 a function differs from the reference's.
#
# Both implementations get the same ranks, islands, generations (evaluations per worker), seed,
# migration probability 0.9 and real migration (POLLINATION=1 for pollination). The reference
# breeds with its genetic propagator (pop size 2 x ranks, crossover 0.7, mutation 0.4, random init
# 0.1, sigma 0.05), ours with its defaults (a smaller pool, multi-scale steps, differential
# children); OURS_EXTRA_ARGS="--quiet --reference-genetic" gives ours the reference's algorithm and
# settings instead (a like-for-like run).
#
# Runs:
#   throughput: sphere, RANKS ranks, ISLANDS islands, seed 0, at THROUGHPUT_GENERATIONS for both,
#               and at BIG_GENERATIONS for ours only (how throughput holds up as populations grow).
#   quality:    each of FUNCTIONS at RANKS ranks x QUALITY_GENERATIONS, for each of SEEDS, both;
#               the table shows the median best loss per function.
#
# Environment knobs (defaults in brackets; QUICK=1 changes the ones marked *):
#   RANKS [8]  ISLANDS [2]  THROUGHPUT_GENERATIONS* [1000; quick 50]  BIG_GENERATIONS* [10000; quick 500]
#   QUALITY_GENERATIONS* [256; quick 16]  SEEDS* ["0 1 2"; quick "0"]
#   FUNCTIONS* [ga: the reference's 14 benchmark functions; pso/cmaes/nm: the paper's 9
#               (sphere rosenbrock step quartic rastrigin griewank schwefel bisphere birastrigin);
#               quick "sphere rastrigin"]
#   POLLINATION [0]  MIGRATION_PROBABILITY [0.9]
#   PROPAGATOR [ga]  pso, cmaes or nm: both sides use that optimizer instead of the genetic one
#                    (ours: --propagator pso, cmaes-basic, nm; the reference: its pso/cmaes/nm
#                    tutorials' propagators, BasicPSO, CMAPropagator(BasicCMA), ParallelNelderMead),
#                    on one island (the reference's PSO needs world rank = island rank, issue #82);
#                    the throughput runs, which measure the genetic propagator, are skipped
#   REFERENCE_FROM [unset]  a results.jsonl of an earlier run with the same settings: its
#                  reference quality runs are taken into this run's table instead of running
#                  the reference again (they take ~20 s each; ours well under one)
#   SKIP_REFERENCE [0]  SKIP_OURS [0]  SKIP_THROUGHPUT [0]  SKIP_QUALITY [0]  SKIP_SETUP [0]
#   SKIP_FUNCTION_CHECK [0]  1: skip re-evaluating our trials with the reference's functions
#   REBUILD [0]     1: run `cargo build --release` even if the binary exists
#   RUN_TIMEOUT [1800] seconds per mpirun (the reference's blocking sends can deadlock, issue #159)
#   MPIRUN ["mpirun"]  MPIRUN_ARGS ["--bind-to none"]  OURS_EXTRA_ARGS ["--quiet"]
#   OURS_CHECKPOINT [1]  1: ours checkpoints into a fresh directory per run (like the reference,
#                        which always writes pickles); 0: --no-checkpoint. No run ever resumes.
#   RESULTS_DIR [bench-results]  RUN_NAME [timestamp]
#   KEEP_TRIALS [0]      1: keep ours' trials.* files and checkpoint directories
#
# Output: $RESULTS_DIR/$RUN_NAME/results.jsonl (one JSON line per run, both implementations,
# same keys), raw reference stdout/stderr and ours' best.json per run, summary.md;
# $RESULTS_DIR/latest points at the newest run.
set -uo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"

QUICK="${QUICK:-0}"
if [[ "$QUICK" == "1" ]]; then
    : "${THROUGHPUT_GENERATIONS:=50}" "${BIG_GENERATIONS:=500}" "${QUALITY_GENERATIONS:=16}"
    : "${SEEDS:=0}" "${FUNCTIONS:=sphere rastrigin}"
fi
RANKS="${RANKS:-8}"
ISLANDS="${ISLANDS:-2}"
THROUGHPUT_GENERATIONS="${THROUGHPUT_GENERATIONS:-1000}"
BIG_GENERATIONS="${BIG_GENERATIONS:-10000}"
QUALITY_GENERATIONS="${QUALITY_GENERATIONS:-256}"
SEEDS="${SEEDS:-0 1 2}"
PAPER_FUNCTIONS="sphere rosenbrock step quartic rastrigin griewank schwefel bisphere birastrigin"
ALL_FUNCTIONS="$PAPER_FUNCTIONS bukin eggcrate himmelblau keane leon"
POLLINATION="${POLLINATION:-0}"
PROPAGATOR="${PROPAGATOR:-ga}"
case "$PROPAGATOR" in
    ga) OURS_PROPAGATOR=ga ;;
    pso) OURS_PROPAGATOR=pso ;;
    cmaes) OURS_PROPAGATOR=cmaes-basic ;;
    nm) OURS_PROPAGATOR=nm ;;
    *) echo "PROPAGATOR must be ga, pso, cmaes or nm, not '$PROPAGATOR'" >&2; exit 2 ;;
esac
if [[ "$PROPAGATOR" == "ga" ]]; then FUNCTIONS="${FUNCTIONS:-$ALL_FUNCTIONS}"; else FUNCTIONS="${FUNCTIONS:-$PAPER_FUNCTIONS}"; fi
if [[ "$PROPAGATOR" != "ga" ]]; then
    ISLANDS=1
    SKIP_THROUGHPUT=1
fi
MIGRATION_PROBABILITY="${MIGRATION_PROBABILITY:-0.9}"
POP_SIZE="${POP_SIZE:-$((2 * RANKS))}"
RUN_TIMEOUT="${RUN_TIMEOUT:-1800}"
MPIRUN="${MPIRUN:-mpirun}"
MPIRUN_ARGS="${MPIRUN_ARGS:---bind-to none}"
OURS_EXTRA_ARGS="${OURS_EXTRA_ARGS:---quiet}"
RESULTS_DIR="${RESULTS_DIR:-bench-results}"
RUN_NAME="${RUN_NAME:-compare-$(date +%Y%m%d-%H%M%S)}"
VENV="${VENV:-$REPO_ROOT/.venv-ref}"
OURS_BIN="${OURS_BIN:-$REPO_ROOT/target/release/propulate-rs}"
# 1: ours checkpoints into a fresh per-run directory (the reference always writes pickle
# checkpoints, so this is the like-for-like setting); 0: --no-checkpoint.
OURS_CHECKPOINT="${OURS_CHECKPOINT:-1}"
OURS_HAS_CHECKPOINT=0

# Running as root in containers, and more ranks than cores.
export OMPI_ALLOW_RUN_AS_ROOT="${OMPI_ALLOW_RUN_AS_ROOT:-1}"
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}"
export OMPI_MCA_rmaps_base_oversubscribe="${OMPI_MCA_rmaps_base_oversubscribe:-1}"

OUT="$RESULTS_DIR/$RUN_NAME"
mkdir -p "$OUT/reference" "$OUT/ours"
ln -sfn "$RUN_NAME" "$RESULTS_DIR/latest"
RESULTS="$OUT/results.jsonl"
: > "$RESULTS"

log() { echo "[compare $(date +%H:%M:%S)] $*" >&2; }

describe() { # one results.jsonl line -> "wall ... s, ... evals/s, best ..."
    python3 -c '
import json, sys
r = json.loads(sys.argv[1])
print("wall %.3f s, %d evaluations, %.1f evals/s, best %.6g" % (r["wall_s"], r["evaluations"], r["evals_per_s"], r["best_loss"]))
' "$1"
}

common_args=(--islands "$ISLANDS" --migration-probability "$MIGRATION_PROBABILITY")
[[ "$POLLINATION" == "1" ]] && common_args+=(--pollination)
reference_ga_args=(--pop-size "$POP_SIZE" --crossover-prob 0.7 --mutation-prob 0.4 --random-init-prob 0.1
                   --sigma-factor 0.05)
# Ours runs its own defaults, or with --reference-genetic the reference's settings (POP_SIZE too).
ours_ga_args=()
[[ " $OURS_EXTRA_ARGS " == *" --reference-genetic "* ]] && ours_ga_args=("${reference_ga_args[@]}")


# ---------------------------------------------------------------- (a) reference venv
if [[ "${SKIP_REFERENCE:-0}" != "1" && "${SKIP_SETUP:-0}" != "1" ]]; then
    log "setting up the reference venv"
    bash "$REPO_ROOT/benches/reference/setup_venv.sh" > "$OUT/setup_venv.log" 2>&1 || {
        cat "$OUT/setup_venv.log" >&2; log "error: setup_venv.sh failed"; exit 1; }
    sed 's/^/    /' "$OUT/setup_venv.log" >&2
fi

# ---------------------------------------------------------------- (b) our binary
if [[ "${SKIP_OURS:-0}" != "1" ]]; then
    if [[ ! -x "$OURS_BIN" || "${REBUILD:-0}" == "1" ]]; then
        log "building propulate-rs (cargo build --release)"
        cargo build --release >&2 || { log "error: cargo build failed"; exit 1; }
    fi
    [[ -x "$OURS_BIN" ]] || { log "error: $OURS_BIN not found"; exit 1; }
    if "$OURS_BIN" --help 2>/dev/null | grep -q -- '--no-checkpoint'; then OURS_HAS_CHECKPOINT=1; fi
fi

# ---------------------------------------------------------------- (c) runs
# Append a "failed" record so that the summary shows the gap instead of silently dropping it.
record_failure() { # impl phase function generations seed rc log
    python3 - "$@" >> "$RESULTS" <<'EOF'
import json, sys
impl, phase, fn, g, seed, rc, logf = sys.argv[1:8]
print(json.dumps({"impl": impl, "phase": phase, "function": fn, "generations": int(g), "seed": int(seed),
                  "status": "failed", "rc": int(rc), "log": logf}))
EOF
}

run_reference() { # phase function generations seed
    local phase=$1 fn=$2 g=$3 seed=$4
    local tag="${phase}-${fn}-g${g}-s${seed}"
    local so="$OUT/reference/$tag.out" se="$OUT/reference/$tag.err"
    local load; load="$(cut -d' ' -f1 /proc/loadavg)"
    log "reference: $fn ranks=$RANKS islands=$ISLANDS G=$g seed=$seed"
    # shellcheck disable=SC2086
    timeout --kill-after=15 "$RUN_TIMEOUT" "$MPIRUN" -np "$RANKS" $MPIRUN_ARGS \
        "$VENV/bin/python" "$REPO_ROOT/benches/reference/run_reference.py" \
        --function "$fn" --generations "$g" --seed "$seed" --propagator "$PROPAGATOR" "${common_args[@]}" \
        "${reference_ga_args[@]}" \
        > "$so" 2> "$se"
    local rc=$?
    local line
    line="$(grep -m1 '^{"impl": "reference"' "$so")"
    if [[ $rc -ne 0 || -z "$line" ]]; then
        log "  FAILED (rc=$rc), see $se"; tail -n 5 "$se" >&2
        record_failure reference "$phase" "$fn" "$g" "$seed" "$rc" "$se"; return
    fi
    python3 - "$phase" "$line" "$load" >> "$RESULTS" <<'EOF'
import json, sys
rec = json.loads(sys.argv[2]); rec["phase"] = sys.argv[1]; rec["status"] = "ok"
rec["loadavg_before"] = float(sys.argv[3])
print(json.dumps(rec))
EOF
    log "  $(describe "$(tail -n1 "$RESULTS")")"
}

run_ours() { # phase function generations seed
    local phase=$1 fn=$2 g=$3 seed=$4
    local tag="${phase}-${fn}-g${g}-s${seed}"
    local dir="$OUT/ours/$tag" se="$OUT/ours/$tag.log"
    local load; load="$(cut -d' ' -f1 /proc/loadavg)"
    rm -rf "$dir"
    # Never let a run resume from an earlier one: the binary's default checkpoint directory
    # (checkpoints/<function>-seed<seed>) is shared by every run with the same function and seed.
    local ckpt_args=()
    if [[ "$OURS_HAS_CHECKPOINT" == "1" ]]; then
        if [[ "$OURS_CHECKPOINT" == "1" ]]; then ckpt_args=(--checkpoint "$dir/checkpoint")
        else ckpt_args=(--no-checkpoint); fi
    fi
    log "ours:      $fn ranks=$RANKS islands=$ISLANDS G=$g seed=$seed"
    # shellcheck disable=SC2086
    timeout --kill-after=15 "$RUN_TIMEOUT" "$MPIRUN" -np "$RANKS" $MPIRUN_ARGS \
        "$OURS_BIN" --function "$fn" --generations "$g" --seed "$seed" --propagator "$OURS_PROPAGATOR" \
        "${common_args[@]}" ${ours_ga_args[@]+"${ours_ga_args[@]}"} \
        "${ckpt_args[@]}" --out "$dir" $OURS_EXTRA_ARGS > "$se" 2>&1
    local rc=$?
    if [[ $rc -ne 0 || ! -s "$dir/best.json" ]]; then
        log "  FAILED (rc=$rc), see $se"; tail -n 5 "$se" >&2
        record_failure ours "$phase" "$fn" "$g" "$seed" "$rc" "$se"; return
    fi
    [[ "${KEEP_TRIALS:-0}" == "1" ]] || rm -rf "$dir"/trials.* "$dir/checkpoint"
    python3 - "$dir/best.json" "$phase" "$fn" "$RANKS" "$ISLANDS" "$g" "$seed" "$load" >> "$RESULTS" <<'EOF'
import json, sys
path, phase, fn, ranks, islands, g, seed, load = sys.argv[1:9]
best = json.load(open(path))
evals, wall = best["evaluations"], best["wall_s"]
loss = best.get("loss")
print(json.dumps({
    "impl": "ours", "function": fn, "ranks": int(ranks), "islands": int(islands),
    "generations": int(g), "seed": int(seed), "evaluations": evals, "wall_s": wall,
    "evals_per_s": evals / wall if wall else None,
    "best_loss": float(loss) if loss is not None else None,
    "phase": phase, "status": "ok", "best_json": path, "loadavg_before": float(load),
}))
EOF
    log "  $(describe "$(tail -n1 "$RESULTS")")"
}

want_ref() { [[ "${SKIP_REFERENCE:-0}" != "1" ]]; }
want_ours() { [[ "${SKIP_OURS:-0}" != "1" ]]; }

log "results: $OUT (ranks=$RANKS islands=$ISLANDS pollination=$POLLINATION)"
if [[ "${SKIP_THROUGHPUT:-0}" != "1" ]]; then
    want_ours && run_ours throughput sphere "$THROUGHPUT_GENERATIONS" 0
    want_ours && run_ours throughput sphere "$BIG_GENERATIONS" 0
    want_ref && run_reference throughput sphere "$THROUGHPUT_GENERATIONS" 0
fi
if [[ "${SKIP_QUALITY:-0}" != "1" ]]; then
    for fn in $FUNCTIONS; do
        for seed in $SEEDS; do
            want_ours && run_ours quality "$fn" "$QUALITY_GENERATIONS" "$seed"
            want_ref && [[ -z "${REFERENCE_FROM:-}" ]] && run_reference quality "$fn" "$QUALITY_GENERATIONS" "$seed"
        done
    done
    if [[ -n "${REFERENCE_FROM:-}" ]]; then
        log "reference quality runs taken from $REFERENCE_FROM"
        python3 - "$REFERENCE_FROM" "$QUALITY_GENERATIONS" "$FUNCTIONS" "$SEEDS" "$RANKS" "$ISLANDS" >> "$RESULTS" <<'EOF'
import json, sys
path, g, functions, seeds, ranks, islands = sys.argv[1:7]
functions, seeds = functions.split(), [int(s) for s in seeds.split()]
for line in open(path):
    r = json.loads(line)
    if (r.get("impl") == "reference" and r.get("phase") == "quality" and r["generations"] == int(g)
            and r["function"] in functions and r["seed"] in seeds and r["ranks"] == int(ranks)
            and r["islands"] == int(islands)):
        r["taken_from"] = path
        print(json.dumps(r))
EOF
    fi
fi

# ---------------------------------------------------------------- (d) table
python3 "$REPO_ROOT/benches/summarize_compare.py" "$RESULTS" \
    --throughput-generations "$THROUGHPUT_GENERATIONS" --big-generations "$BIG_GENERATIONS" \
    --quality-generations "$QUALITY_GENERATIONS" | tee "$OUT/summary.md"

# ---------------------------------------------------------------- (e) same functions?
# A quality comparison only means something if both sides minimise the same function:
# re-evaluate our trials with the reference's benchmark functions.
check_rc=0
if [[ "${SKIP_FUNCTION_CHECK:-0}" != "1" && "${SKIP_REFERENCE:-0}" != "1" && "${SKIP_OURS:-0}" != "1" ]]; then
    log "checking our benchmark functions against the reference's"
    # shellcheck disable=SC2086
    check_out="$("$VENV/bin/python" "$REPO_ROOT/benches/reference/check_functions.py" --run --bin "$OURS_BIN" \
        --ranks 2 --generations 100 $FUNCTIONS 2> "$OUT/check_functions.err")"
    check_rc=$?
    { echo "### Function agreement (our trials re-evaluated by the reference, rtol/atol 1e-9)"; echo
      echo '```'; echo "$check_out"; echo '```'; echo; } | tee -a "$OUT/summary.md"
fi

log "raw results: $RESULTS"
n_failed="$(grep -c '"status": "failed"' "$RESULTS")"
if [[ "$n_failed" != "0" ]]; then log "$n_failed run(s) failed"; exit 1; fi
if [[ "$check_rc" != "0" ]]; then log "some functions differ from the reference's (see above)"; exit 3; fi
