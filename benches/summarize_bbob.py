"""Tables of benches/bbob.sh's results.jsonl: per (dimension, budget), per function the median over
instances (and seeds) of each method's best f - f_opt, then for each propulate-rs method against
each other method the functions on which its median was at most the other's, the median of the
ratios, and the runs (same function, instance and seed) on which it was at most the other: with
one seed per instance a function's median moves by a factor of a few between seeds, and the count
of runs says how close to a coin flip a difference is: its two-sided sign test's p (exact ties,
such as both at an optimum, left out) is the chance of a split at least that uneven between two
methods equal in distribution. (Two seeds of Optuna's own TPE, per function over instances 1-3,
were at most each other on 7 to 14 of 24 functions: counts of functions move by several.)

    python benches/summarize_bbob.py bench-results/bbob/results.jsonl

Infinite bests (benches/spaces.sh's constrained runs without a feasible point) count as worse
than any finite one, equal to each other. A geometric mean over functions is printed too, but compare per function: a method that hits one
optimum exactly dominates any mean of logarithms. Values below FLOOR count as FLOOR in ratios.
"""
import json
import math
import re
import statistics
import sys
from collections import defaultdict

FLOOR = 1e-8


def seed_of(row: dict) -> int:
    """The run's seed: its field, or (lines written before it existed) the key's `sN`."""
    if "seed" in row:
        return row["seed"]
    found = re.search(r" s(\d+)$", row["key"])
    return int(found.group(1)) if found else 1


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact binomial p of `wins` against `losses` under a fair coin."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(wins, losses) + 1)) / 2**n
    return min(1.0, 2 * tail)


def ratio(ours: float, other: float) -> float:
    """ours / other with both floored at FLOOR; 1 when both are infinite (no feasible point)."""
    if math.isinf(ours) and math.isinf(other):
        return 1.0
    return max(ours, FLOOR) / max(other, FLOOR)


def main() -> None:
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    groups = defaultdict(list)
    for r in rows:
        groups[(r["dim"], r["budget"])].append(r)
    for (dim, budget), group in sorted(groups.items()):
        run = defaultdict(dict)  # method -> (fid, instance, seed) -> best
        seconds = defaultdict(list)
        for r in group:
            run[r["method"]][(r["fid"], r["instance"], seed_of(r))] = r["best"]
            seconds[r["method"]].append(r["seconds"])
        per = defaultdict(lambda: defaultdict(list))  # method -> fid -> [best per instance and seed]
        for method, bests in run.items():
            for (fid, _, _), best in bests.items():
                per[method][fid].append(best)
        methods = sorted(per, key=lambda m: (not m.startswith("propulate"), m))
        fids = sorted(set.intersection(*(set(per[m]) for m in methods)))
        med = {m: {f: statistics.median(per[m][f]) for f in fids} for m in methods}
        runs_per_function = {m: sorted({len(per[m][f]) for f in fids}) for m in methods}
        # benches/spaces.sh names its parts (conditional, mixint, ..., ddp: a validation loss).
        kind = f"{dim}-D" if str(dim).isdigit() else dim
        what = "best validation loss" if dim == "ddp" else "best f - f_opt"
        print(f"\n## {kind}, {budget} evaluations: median over instances (and seeds) of {what}")
        print("| f | " + " | ".join(methods) + " |")
        print("|---|" + "---|" * len(methods))
        for f in fids:
            print(f"| f{f} | " + " | ".join(f"{med[m][f]:.3g}" for m in methods) + " |")
        geo = [math.exp(statistics.mean(math.log(max(med[m][f], FLOOR)) for f in fids)) for m in methods]
        print("| geometric mean | " + " | ".join(f"{g:.3g}" for g in geo) + " |")
        print("| runs per function | " + " | ".join(",".join(map(str, runs_per_function[m])) for m in methods) + " |")
        print("| median seconds per run | " + " | ".join(f"{statistics.median(seconds[m]):.1f}" for m in methods) + " |")
        print()
        for ours in (m for m in methods if m.startswith("propulate")):
            for other in (m for m in methods if m != ours):
                at_most = sum(med[ours][f] <= med[other][f] for f in fids)
                ratios = [ratio(med[ours][f], med[other][f]) for f in fids]
                both = [k for k in run[ours] if k in run[other]]
                runs_at_most = sum(run[ours][k] <= run[other][k] for k in both)
                wins = sum(run[ours][k] < run[other][k] for k in both)
                losses = sum(run[ours][k] > run[other][k] for k in both)
                print(
                    f"{ours} <= {other} on {at_most} of {len(fids)} functions; "
                    f"median ratio {statistics.median(ratios):.3g}; runs: {runs_at_most} of {len(both)} "
                    f"(sign test p = {sign_test(wins, losses):.2g})"
                )
            # The goal of benches/spaces.sh: at most the better of the anchors, function by function.
            anchors = [m for m in methods if not m.startswith("propulate")]
            if len(anchors) >= 2:
                better = {f: min(med[m][f] for m in anchors) for f in fids}
                at_most = sum(med[ours][f] <= better[f] for f in fids)
                ratios = [ratio(med[ours][f], better[f]) for f in fids]
                print(
                    f"{ours} <= the better of {', '.join(anchors)} on {at_most} of {len(fids)} functions; "
                    f"median ratio {statistics.median(ratios):.3g}"
                )


if __name__ == "__main__":
    main()
