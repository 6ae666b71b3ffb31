"""How often a search's evaluations sit on a face of the search space: per run directory (its
trials.csv), the evaluations (in the order they started) with at least one float parameter within
TOLERANCE of its range of a bound, in batches of BATCH, summed over the runs given. Expected
improvement under a process fitted to few points is largest where the process knows least, at the
box's faces; on BBOB, whose optima lie within [-4, 4]^d of the [-5, 5]^d searched, an evaluation
on a face is one spent away from any optimum (docs/benchmarks/spaces.md, "Bounds").

    python3 benches/at_bounds.py SPACE.toml RUN_DIR [RUN_DIR ...]
    python3 benches/at_bounds.py bench-results/bbob/space-5.toml bench-results/bbob/runs/*

Knobs (environment): BATCH [8], TOLERANCE [0.001] (a fraction of each range).
Prints the count per batch, then in all, as `at a bound: K of N`.
"""
import csv
import math
import os
import sys
import tomllib
from collections import Counter
from pathlib import Path


def float_ranges(space: Path) -> dict:
    """The float parameters' (low, high, log) from a space file."""
    params = tomllib.loads(space.read_text())["params"]
    return {
        name: (p["low"], p["high"], p.get("log", False)) for name, p in params.items() if p.get("type") == "float"
    }


def on_a_face(row: dict, ranges: dict, tolerance: float = 0.001) -> bool:
    """Whether a trial's float parameter (an active one: an inactive one's cell is empty or absent)
    lies within `tolerance` of its range of a bound. `row` maps names to values or their text
    (trials.csv's cells; benches/bbob_optuna.py counts Optuna's trials by the same rule)."""
    for name, (low, high, log) in ranges.items():
        cell = row.get(name, "")
        if cell != "":
            v = float(cell)
            if log:  # measured on the scale the search draws on
                v, low, high = math.log(v), math.log(low), math.log(high)
            width = high - low
            if min(v - low, high - v) <= tolerance * width:
                return True
    return False


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    batch = int(os.environ.get("BATCH", "8"))
    tolerance = float(os.environ.get("TOLERANCE", "0.001"))
    ranges = float_ranges(Path(sys.argv[1]))
    hits: Counter = Counter()
    totals: Counter = Counter()
    for run in sys.argv[2:]:
        trials = Path(run) / "trials.csv"
        if not trials.exists():
            continue
        rows = sorted(csv.DictReader(trials.open()), key=lambda r: r["start"])
        for k, row in enumerate(rows):
            b = k // batch
            totals[b] += 1
            hits[b] += on_a_face(row, ranges, tolerance)
    for b in sorted(totals):
        print(f"evaluations {b * batch + 1}-{(b + 1) * batch}: {hits[b]} of {totals[b]}")
    print(f"at a bound: {sum(hits.values())} of {sum(totals.values())}")


if __name__ == "__main__":
    main()
