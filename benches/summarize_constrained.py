"""The bbob-constrained goal's count (issue 51): on the functions that all of instances 1-3 have
for ours and both of Optuna's samplers, each method's median over the instances of the best
feasible f - f_opt; ours at most the better of Optuna's GP and TPE on how many, and the median of
the ratios. Also the count per instance.

    python3 benches/summarize_constrained.py bench-results/spaces-constrained/results.jsonl propulate-default-faces
"""

import json
import statistics
import sys


def ratio(a, c):
    if c == 0:
        return 1.0 if a == 0 else float("inf")
    return a / c


def main(path, ours):
    best = {}
    for line in open(path):
        if line.strip():
            r = json.loads(line)
            best.setdefault((r["instance"], r["method"]), {})[r["fid"]] = r["best"]
    methods = (ours, "optuna-tpe", "optuna-gp")
    for inst in (1, 2, 3):
        o, t, g = (best.get((inst, m), {}) for m in methods)
        fids = sorted(f for f in o if f in t and f in g)
        if not fids:
            continue
        behind = [f for f in fids if o[f] > min(t[f], g[f])]
        med = statistics.median(ratio(o[f], min(t[f], g[f])) for f in fids)
        print(f"instance {inst}: f{fids[0]}-f{fids[-1]} ({len(fids)}): at most the better on "
              f"{len(fids) - len(behind)}; median ratio {med:.2g}; behind on {behind}")
    rows = []
    for f in range(1, 55):
        values = [[best.get((i, m), {}).get(f) for i in (1, 2, 3)] for m in methods]
        if all(v is not None for vs in values for v in vs):
            o, t, g = (statistics.median(vs) for vs in values)
            rows.append((f, ratio(o, min(t, g))))
    if rows:
        behind = [f for f, r in rows if r > 1]
        print(f"median over instances 1-3, {len(rows)} functions: at most the better on {len(rows) - len(behind)}; "
              f"median ratio {statistics.median(r for _, r in rows):.2g}; behind on {behind}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "propulate-default-faces")
