#!/usr/bin/env bash
# The cost of ranking an island by several objectives: two builds of propulate-rs side by side on
# cheap multi-objective functions, one island of 2 in-process workers (ISLANDS and RANKS change
# that: ISLANDS=2 RANKS=4 adds migration), interleaved rounds; prints
# each run's wall time (the run's own, from its summary line), the medians and their ratio.
#
#   BEFORE=/path/to/old/propulate-rs AFTER=target/release/propulate-rs bash benches/pareto_ranking.sh
#
# Knobs: ROUNDS [3]; CASES ["zdt1:10000 zdt1:20000 dtlz2:5000 dtlz2:10000"] (function:evaluations
# in all); ISLANDS [1]; RANKS [2] in-process workers in all.
set -euo pipefail
: "${BEFORE:?BEFORE=path of the build to compare against}"
AFTER="${AFTER:-target/release/propulate-rs}"
ROUNDS="${ROUNDS:-3}"
CASES="${CASES:-zdt1:10000 zdt1:20000 dtlz2:5000 dtlz2:10000}"
ISLANDS="${ISLANDS:-1}"
RANKS="${RANKS:-2}"
results=$(mktemp)
for round in $(seq "$ROUNDS"); do
    for case in $CASES; do
        f=${case%%:*} n=${case##*:}
        for which in before after; do
            bin=$BEFORE
            [ "$which" = after ] && bin=$AFTER
            s=$("$bin" --function "$f" --local-ranks "$RANKS" --islands "$ISLANDS" --generations $((n / RANKS)) \
                --no-checkpoint --quiet |
                sed -n 's/.* in \([0-9.]*\) s = .*/\1/p')
            echo "$case $which $round $s" | tee -a "$results" >&2
        done
    done
done
python3 - "$results" << 'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    case, which, _, s = line.split()
    runs[(case, which)].append(float(s))
print("| function:evaluations | before, median s (min-max) | after, median s (min-max) | after / before |")
print("|---|---|---|---|")
for case in dict.fromkeys(k[0] for k in runs):
    b, a = runs[(case, "before")], runs[(case, "after")]
    span = lambda v: f"{statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})"
    print(f"| {case} | {span(b)} | {span(a)} | {statistics.median(a) / statistics.median(b):.3f} |")
PY
