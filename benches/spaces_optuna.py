"""Optuna 5.0.0's TPE on a benches/spaces.sh problem, run sequentially, as its documentation
recommends for conditional spaces: `TPESampler(multivariate=True, group=True)`, the space defined
by run (the branch, then its own coordinates).

    python spaces_optuna.py conditional PROBLEM INSTANCE BUDGET SEED

Prints one JSON line: the best loss after BUDGET evaluations and the seconds the run took.
"""
import json
import sys
import time
import warnings

import optuna

import spaces_problems


def main() -> None:
    kind, problem, instance, budget, seed = sys.argv[1], *(int(a) for a in sys.argv[2:6])
    if kind != "conditional":
        raise SystemExit(f"unknown problem kind {kind}")
    functions = spaces_problems.conditional_functions(problem, instance)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
    sampler = optuna.samplers.TPESampler(multivariate=True, group=True, seed=seed)
    study = optuna.create_study(sampler=sampler)

    def objective(trial: optuna.Trial) -> float:
        branch = trial.suggest_categorical("branch", list(spaces_problems.BRANCHES))
        params = {"branch": branch}
        for i in range(spaces_problems.DIM):
            params[f"{branch}{i}"] = trial.suggest_float(f"{branch}{i}", -5.0, 5.0)
        return spaces_problems.conditional_loss(functions, params)

    start = time.monotonic()
    study.optimize(objective, n_trials=budget)
    print(json.dumps({"best": study.best_value, "seconds": time.monotonic() - start}))


if __name__ == "__main__":
    main()
