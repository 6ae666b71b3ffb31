"""Summary of benches/python.sh: ratios of the engine part (Propulate 1.2.2 against propulate_rs),
the binding's cost, and the ask/tell part against Optuna's samplers (results of bbob.sh in
WORK/bbob/results.jsonl).

    python3 benches/summarize_python.py WORK
"""

import json
import os
import statistics
import sys


def lines(path):
    if not os.path.exists(path):
        return []
    return [json.loads(line) for line in open(path) if line.strip()]


def main():
    work = sys.argv[1]
    rows = lines(os.path.join(work, "results.jsonl"))
    engine = [r for r in rows if r.get("part") == "engine"]
    if engine:
        ref = [r for r in engine if r["impl"] == "reference"]
        ours = [r for r in engine if r["impl"] == "propulate_rs"]
        for what in ("wall_s", "process_s"):
            ratios = [a[what] / b[what] for a, b in zip(ref, ours)]
            print(f"engine, {what}: reference {statistics.median(r[what] for r in ref):.2f} s, propulate_rs "
                  f"{statistics.median(r[what] for r in ours):.2f} s; ratio per pair "
                  f"{', '.join(f'{x:.0f}x' for x in ratios)} (median {statistics.median(ratios):.0f}x; goal 100x)")
        print(f"engine, best loss: reference median {statistics.median(r['best_loss'] for r in ref):.3g}, "
              f"propulate_rs median {statistics.median(r['best_loss'] for r in ours):.3g}")
    for r in (r for r in rows if r.get("part") == "binding"):
        print(f"binding: {r['python_us']:.2f} us per evaluation with the Python loss, {r['rust_us']:.2f} us with the "
              f"Rust function: {r['binding_us']:.2f} us more (the Python loss alone {r['python_loss_alone_us']:.2f} us; "
              f"goal under 20 us)")
    asktell = {r["fid"]: r for r in rows if r.get("part") == "asktell"}
    optuna = {}
    for r in lines(os.path.join(work, "bbob", "results.jsonl")):
        if r["dim"] == 5 and r["budget"] == 200:
            optuna[(r["method"], r["fid"])] = r
    for sampler in ("gp", "tpe"):
        pairs = [(asktell[f], optuna[(f"optuna-{sampler}", f)]) for f in sorted(asktell) if (f"optuna-{sampler}", f) in optuna]
        if not pairs:
            continue
        wins = sum(ours["best"] <= theirs["best"] for ours, theirs in pairs)
        ratios = [(ours["best"] + 1e-12) / (theirs["best"] + 1e-12) for ours, theirs in pairs]
        ask = statistics.median(ours["ask_seconds"] / 200 for ours, _ in pairs)
        theirs = statistics.median(t["seconds"] / 200 for _, t in pairs)
        print(f"ask/tell vs Optuna {sampler}: at most its best on {wins} of {len(pairs)} functions, median ratio "
              f"{statistics.median(ratios):.2f}; time per ask: ours {ask * 1e3:.1f} ms, Optuna's per trial "
              f"{theirs * 1e3:.1f} ms ({ask / theirs:.2f}x)")


if __name__ == "__main__":
    main()
