#!/usr/bin/env python3
"""Check that propulate-rs's benchmark functions agree with the reference's.

Re-evaluates every trial that propulate-rs recorded in a ``trials.jsonl`` with the function of
the same name from ``propulate.utils.benchmark_functions`` (Propulate 1.2.2) and reports the
largest discrepancy. Run with the reference venv's interpreter::

    .venv-ref/bin/python benches/reference/check_functions.py sphere=out/sphere/trials.jsonl ...

or let it run our binary itself (small runs, no checkpoint) for the given functions::

    .venv-ref/bin/python benches/reference/check_functions.py --run sphere rosenbrock ...

Our parameters are named x0, x1, ...; x<i> is mapped to the reference's i-th search-space key
(a, b, c, ... in insertion order). ``quartic`` adds unseeded Gaussian noise in the reference and
is only checked for its search space. Exit status 1 if any function disagrees beyond
``--rtol``/``--atol`` or its search space differs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import warnings

NOISY = {"quartic"}


def check(name: str, trials_path: str, rtol: float, atol: float) -> bool:
    from propulate.utils.benchmark_functions import get_function_search_space

    function, limits = get_function_search_space(name)
    keys = list(limits)
    n = worst = 0
    worst_row = None
    space_ok = True
    with open(trials_path) as f:
        for line in f:
            t = json.loads(line)
            if t.get("loss") is None:
                continue
            params = t["params"]
            if len(params) != len(keys):
                print(f"{name}: dimension {len(params)} vs reference {len(keys)}")
                return False
            x = {k: params[f"x{i}"] for i, k in enumerate(keys)}
            for i, k in enumerate(keys):
                lo, hi = limits[k]
                if not (lo <= x[k] <= hi):
                    space_ok = False
            n += 1
            if name in NOISY:
                continue
            ref = float(function(x))
            ours = float(t["loss"])
            err = abs(ref - ours)
            tol = atol + rtol * abs(ref)
            excess = err / tol if tol > 0 else (math.inf if err > 0 else 0.0)
            if excess > worst:
                worst, worst_row = excess, (ref, ours, t.get("island"), t.get("generation"))
    ok = worst <= 1.0 and space_ok
    detail = "noise: values not compared" if name in NOISY else (
        f"max |ref-ours| / tol = {worst:.3g}" + (f" (ref {worst_row[0]!r}, ours {worst_row[1]!r})" if worst_row else "")
    )
    print(f"{'ok  ' if ok else 'FAIL'} {name:12s} {n:6d} trials, dims {len(keys)}, "
          f"params within reference limits: {space_ok}; {detail}")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("items", nargs="+", help="NAME=trials.jsonl, or function names with --run")
    ap.add_argument("--run", action="store_true", help="run target/release/propulate-rs to make the trials")
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "..", "target", "release", "propulate-rs"))
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--generations", type=int, default=200)
    ap.add_argument("--rtol", type=float, default=1e-9)
    ap.add_argument("--atol", type=float, default=1e-9)
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    os.environ.setdefault("MPLBACKEND", "Agg")

    pairs = []
    tmp = tempfile.mkdtemp(prefix="check-functions-") if a.run else None
    for item in a.items:
        if a.run:
            out = os.path.join(tmp, item)
            env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                       OMPI_MCA_rmaps_base_oversubscribe="1")
            cmd = ["mpirun", "-np", str(a.ranks), a.bin, "--function", item, "--generations", str(a.generations),
                   "--no-checkpoint", "--quiet", "--out", out]
            subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
            pairs.append((item, os.path.join(out, "trials.jsonl")))
        else:
            name, _, path = item.partition("=")
            pairs.append((name, path))
    ok = all([check(name, path, a.rtol, a.atol) for name, path in pairs])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
