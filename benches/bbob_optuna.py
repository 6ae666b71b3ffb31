"""Optuna's samplers on BBOB problems, run sequentially (benches/bbob.sh).

    python bbob_optuna.py SAMPLER FID INSTANCE DIM BUDGET SEED

SAMPLER is tpe (TPESampler, default settings), gp (GPSampler, default settings) or cmaes
(CmaEsSampler, default settings). Prints one JSON line: the best f - f_opt after BUDGET
evaluations and the seconds the run took. The domain is BBOB's, [-5, 5] per coordinate; the line
also counts the trials with a coordinate within 0.01 of a bound (`at_bound`, by
benches/at_bounds.py's rule, which counts ours).
"""
import json
import sys
import time

import ioh
import optuna
from at_bounds import on_a_face


def main() -> None:
    sampler_name = sys.argv[1]
    fid, instance, dim, budget, seed = (int(a) for a in sys.argv[2:7])
    problem = ioh.get_problem(fid, instance=instance, dimension=dim)
    f_opt = problem.optimum.y
    samplers = {
        "tpe": lambda: optuna.samplers.TPESampler(seed=seed),
        "gp": lambda: optuna.samplers.GPSampler(seed=seed),
        "cmaes": lambda: optuna.samplers.CmaEsSampler(seed=seed),
    }
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(sampler=samplers[sampler_name]())

    def objective(trial: optuna.Trial) -> float:
        x = [trial.suggest_float(f"x{i}", -5.0, 5.0) for i in range(dim)]
        return problem(x) - f_opt

    start = time.monotonic()
    study.optimize(objective, n_trials=budget)
    seconds = time.monotonic() - start
    ranges = {f"x{i}": (-5.0, 5.0, False) for i in range(dim)}
    at_bound = sum(on_a_face(t.params, ranges) for t in study.trials)
    print(json.dumps({"best": study.best_value, "seconds": seconds, "at_bound": at_bound}))


if __name__ == "__main__":
    main()
