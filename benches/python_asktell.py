"""Ask and tell on BBOB (benches/python.sh): propulate_rs.Study with its default (auto) over the
[-5, 5]^DIM box of one BBOB problem (COCO's functions through `ioh`), BUDGET trials asked and told
one at a time in this process.

    python benches/python_asktell.py FID INSTANCE DIM BUDGET SEED

Prints one JSON line: the best f - f_opt, the seconds the whole loop took and the seconds spent
in ask (the part that is ours; Optuna's runs report the whole loop, whose evaluations cost
microseconds here).
"""

import json
import sys
import time

import ioh

import propulate_rs as pr


def main():
    fid, instance, dim, budget, seed = (int(a) for a in sys.argv[1:6])
    problem = ioh.get_problem(fid, instance=instance, dimension=dim)
    f_opt = problem.optimum.y
    study = pr.Study({f"x{i}": pr.Float(-5.0, 5.0) for i in range(dim)}, seed=seed, budget=budget)
    asking = 0.0
    start = time.monotonic()
    best = float("inf")
    for _ in range(budget):
        t0 = time.monotonic()
        trial = study.ask()
        asking += time.monotonic() - t0
        value = problem([trial.params[f"x{i}"] for i in range(dim)]) - f_opt
        best = min(best, value)
        study.tell(trial, value)
    print(json.dumps({"best": best, "seconds": time.monotonic() - start, "ask_seconds": asking,
                      "propagator": study.propagator["name"]}))


if __name__ == "__main__":
    main()
