"""The Optuna side of benches/pareto_vs_optuna.sh, and the one hypervolume both sides are measured by.

  pareto_vs_optuna.py optuna PROBLEM SEED TRIALS   Optuna's NSGA-II sampler (its defaults) for
                                                   TRIALS trials: prints {"hv", "wall_s", "front"}
  pareto_vs_optuna.py hv PROBLEM FRONT_CSV         the hypervolume of propulate-rs's front.csv
  pareto_vs_optuna.py table RESULTS_JSONL          the markdown table of a results file

The problems are those of propulate-rs's --function (crates/core/src/multi_functions.rs): ZDT1-3
with 30 parameters, DTLZ2 with 12 parameters and 3 objectives, all minimized, each with its
reference point. The hypervolume is exact (a sweep in 2-D, slices in 3-D).
"""
import csv
import json
import math
import statistics
import sys
import time

REFERENCE = {"zdt1": (1.1, 1.1), "zdt2": (1.1, 1.1), "zdt3": (1.1, 1.1), "dtlz2": (1.1, 1.1, 1.1)}
DIMENSIONS = {"zdt1": 30, "zdt2": 30, "zdt3": 30, "dtlz2": 12}


def zdt(x, shape):
    f1 = x[0]
    g = 1.0 + 9.0 * sum(x[1:]) / (len(x) - 1)
    r = f1 / g
    h = {"zdt1": 1.0 - math.sqrt(r), "zdt2": 1.0 - r * r,
         "zdt3": 1.0 - math.sqrt(r) - r * math.sin(10.0 * math.pi * f1)}[shape]
    return [f1, g * h]


def dtlz2(x):
    g = sum((xi - 0.5) ** 2 for xi in x[2:])
    a, b = x[0] * math.pi / 2, x[1] * math.pi / 2
    return [(1 + g) * math.cos(a) * math.cos(b), (1 + g) * math.cos(a) * math.sin(b), (1 + g) * math.sin(a)]


def evaluate(problem, x):
    return dtlz2(x) if problem == "dtlz2" else zdt(x, problem)


def hypervolume(points, reference):
    inside = [p for p in points if all(v < r for v, r in zip(p, reference))]
    return slices(inside, list(reference))


def slices(points, reference):
    if not points:
        return 0.0
    d = len(reference)
    if d == 1:
        return reference[0] - min(p[0] for p in points)
    points = sorted(points, key=lambda p: p[-1])
    volume = 0.0
    for k, p in enumerate(points):
        top = points[k + 1][-1] if k + 1 < len(points) else reference[-1]
        if top > p[-1]:
            volume += (top - p[-1]) * slices([q[:-1] for q in points[: k + 1]], reference[:-1])
    return volume


def run_optuna(problem, seed, trials):
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    m = len(REFERENCE[problem])
    study = optuna.create_study(directions=["minimize"] * m, sampler=optuna.samplers.NSGAIISampler(seed=seed))

    def objective(trial):
        x = [trial.suggest_float(f"x{i}", 0.0, 1.0) for i in range(DIMENSIONS[problem])]
        return evaluate(problem, x)

    start = time.perf_counter()
    study.optimize(objective, n_trials=trials)
    wall = time.perf_counter() - start
    front = [list(t.values) for t in study.best_trials]
    return {"hv": hypervolume(front, REFERENCE[problem]), "wall_s": wall, "front": len(front)}


def front_hv(problem, path):
    m = len(REFERENCE[problem])
    with open(path) as f:
        rows = list(csv.DictReader(f))
    points = [[float(r[f"f{k + 1}"]) for k in range(m)] for r in rows]
    return hypervolume(points, REFERENCE[problem])


def table(path):
    runs = [json.loads(line) for line in open(path)]
    problems = sorted({r["problem"] for r in runs}, key=list(REFERENCE).index)
    print("| problem | evaluations | seeds | propulate-rs hypervolume, median (min-max) | Optuna NSGA-II "
          "hypervolume, median (min-max) | ours at least Optuna's median | wall time, ours / Optuna (median) |")
    print("|---|---|---|---|---|---|---|")
    for p in problems:
        ours = [r for r in runs if r["problem"] == p and r["who"] == "ours"]
        theirs = [r for r in runs if r["problem"] == p and r["who"] == "optuna"]
        hv = lambda rs: statistics.median(r["hv"] for r in rs)
        span = lambda rs: f"{hv(rs):.4f} ({min(r['hv'] for r in rs):.4f}-{max(r['hv'] for r in rs):.4f})"
        wall = lambda rs: statistics.median(r["wall_s"] for r in rs)
        verdict = "yes" if hv(ours) >= hv(theirs) else "no"
        ratio = wall(ours) / wall(theirs)
        print(f"| {p} | {ours[0]['evaluations']} | {len(ours)} | {span(ours)} | {span(theirs)} | {verdict} | "
              f"{wall(ours):.2f} s / {wall(theirs):.1f} s = {ratio:.3f} |")


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "optuna":
        print(json.dumps(run_optuna(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))))
    elif command == "hv":
        print(front_hv(sys.argv[2], sys.argv[3]))
    elif command == "table":
        table(sys.argv[2])
    else:
        sys.exit(f"unknown command {command}")
