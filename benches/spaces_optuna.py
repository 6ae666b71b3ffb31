"""Optuna 5.0.0 on a benches/spaces.sh problem, run sequentially.

    python spaces_optuna.py conditional PROBLEM INSTANCE BUDGET SEED [tpe]
    python spaces_optuna.py mixint|constrained FID INSTANCE BUDGET SEED tpe|gp|cmaes
    python spaces_optuna.py ddp 1 1 BUDGET SEED [tpe]

conditional: as Optuna's documentation recommends for conditional spaces,
`TPESampler(multivariate=True, group=True)`, the space defined by run (the branch, then its own
coordinates). mixint: TPESampler or GPSampler with default settings, or CmaEsSampler with
`with_margin=True` (CMA-ES with margin, its documented handling of integers), the integers as
`suggest_int`. constrained: the same samplers given COCO's constraints (`Trial.set_constraint`,
Optuna 5's way), the best counted over feasible trials only (infinity when none was).

ddp: the PyTorch DDP tutorial (tutorials/pytorch_ddp/train.py, as a process of its own per trial
with PROPULATE_RESULT set, as propulate-rs runs it) over its conditional space
(tutorials/pytorch_ddp/space-conditional.toml, read from the file) defined by run: the optimizer,
then SGD's momentum or Adam's betas; TPESampler(multivariate=True, group=True).

Prints one JSON line: the best loss after BUDGET evaluations and the seconds the run took.
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import tomllib
import warnings
from pathlib import Path

import optuna

import spaces_problems


def conditional_study(problem: int, instance: int, seed: int):
    functions = spaces_problems.conditional_functions(problem, instance)
    sampler = optuna.samplers.TPESampler(multivariate=True, group=True, seed=seed)

    def objective(trial: optuna.Trial) -> float:
        branch = trial.suggest_categorical("branch", list(spaces_problems.BRANCHES))
        params = {"branch": branch}
        for i in range(spaces_problems.DIM):
            params[f"{branch}{i}"] = trial.suggest_float(f"{branch}{i}", -5.0, 5.0)
        return spaces_problems.conditional_loss(functions, params)

    return optuna.create_study(sampler=sampler), objective


def suggest_from_file(trial: optuna.Trial, space: dict) -> dict:
    """A propulate-rs space file's parameters suggested by run, in the file's order: one with
    `when` only where the categoricals it names (defined before it) hold one of its values."""
    params = {}
    for name, p in space["params"].items():
        when = p.get("when", {})
        if any(params.get(on) not in (v if isinstance(v, list) else [v]) for on, v in when.items()):
            continue
        if p["type"] == "categorical":
            params[name] = trial.suggest_categorical(name, p["choices"])
        elif p["type"] == "int":
            params[name] = trial.suggest_int(name, p["low"], p["high"], log=p.get("log", False))
        else:
            params[name] = trial.suggest_float(name, p["low"], p["high"], log=p.get("log", False))
    return params


def ddp_study(seed: int):
    root = Path(__file__).resolve().parent.parent
    with open(root / "tutorials/pytorch_ddp/space-conditional.toml", "rb") as f:
        space = tomllib.load(f)
    sampler = optuna.samplers.TPESampler(multivariate=True, group=True, seed=seed)

    def objective(trial: optuna.Trial) -> float:
        params = suggest_from_file(trial, space)
        with tempfile.TemporaryDirectory() as tmp:
            result = os.path.join(tmp, "result.json")
            command = [str(root / ".torch/bin/python"), str(root / "tutorials/pytorch_ddp/train.py")]
            command += [f"--{k}={v}" for k, v in params.items()]
            subprocess.run(command, env={**os.environ, "PROPULATE_RESULT": result}, check=True,
                           stdout=subprocess.DEVNULL)
            with open(result) as f:
                return json.load(f)["loss"]

    return optuna.create_study(sampler=sampler), objective


def coco_study(kind: str, fid: int, instance: int, seed: int, sampler_name: str):
    coco = spaces_problems.CocoProblem(kind, fid, instance)
    integers = coco.problem.number_of_integer_variables
    bounds = list(zip(coco.problem.lower_bounds, coco.problem.upper_bounds))
    constrained = coco.problem.number_of_constraints > 0
    samplers = {
        "tpe": optuna.samplers.TPESampler,
        "gp": optuna.samplers.GPSampler,
        "cmaes": lambda seed: optuna.samplers.CmaEsSampler(seed=seed, with_margin=True),
    }

    def objective(trial: optuna.Trial) -> float:
        params = {}
        for i, (low, high) in enumerate(bounds):
            name = f"x{i}"
            if i < integers:
                params[name] = trial.suggest_int(name, int(low), int(high))
            else:
                params[name] = trial.suggest_float(name, float(low), float(high))
        if constrained:
            constraints = coco.constraints(params)
            trial.set_user_attr("constraints", constraints)
            for k, g in enumerate(constraints):
                trial.set_constraint(f"g{k}", g)
        return coco.loss(params)

    return optuna.create_study(sampler=samplers[sampler_name](seed=seed)), objective


def best_feasible(study: optuna.Study) -> float:
    """The lowest loss among trials whose constraints (if any) all hold."""
    feasible = [
        t.value
        for t in study.trials
        if t.value is not None and all(g <= 0 for g in t.user_attrs.get("constraints", []))
    ]
    return min(feasible, default=math.inf)


def main() -> None:
    kind, problem, instance, budget, seed = sys.argv[1], *(int(a) for a in sys.argv[2:6])
    sampler_name = sys.argv[6] if len(sys.argv) > 6 else "tpe"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
    if kind == "conditional":
        study, objective = conditional_study(problem, instance, seed)
    elif kind == "ddp":
        study, objective = ddp_study(seed)
    elif kind in spaces_problems.COCO_SUITES:
        study, objective = coco_study(kind, problem, instance, seed, sampler_name)
    else:
        raise SystemExit(f"unknown problem kind {kind}")
    start = time.monotonic()
    study.optimize(objective, n_trials=budget)
    seconds = time.monotonic() - start
    best = best_feasible(study)
    # The best trial's parameters too, where one is feasible (the ddp tables name what was found).
    params = study.best_trial.params if math.isfinite(best) and kind != "constrained" else None
    print(json.dumps({"best": best, "seconds": seconds, "params": params}))


if __name__ == "__main__":
    main()
