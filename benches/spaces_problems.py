"""The problems of benches/spaces.sh, shared by our trials (benches/spaces_trial.py) and Optuna's
runs (benches/spaces_optuna.py).

conditional K INSTANCE: a categorical `branch` picks one of three BBOB functions (through `ioh`),
f(3K-2), f(3K-1) and f(3K) for K in 1..8 (so the eight problems cover all 24), each 3-D with
parameters of its own: `a0..a2` for branch a, `b0..b2` for b, `c0..c2` for c, each in [-5, 5]
(BBOB's domain), active only in their branch. The loss is the chosen function's f(x) - f_opt: 0 at
its optimum, whichever branch holds it.

mixint FID INSTANCE: COCO's bbob-mixint (coco-experiment 2.8.2) function FID, 5-D: `x0..x3`
integers with 2, 4, 8 and 16 values (0..l-1), `x4` a float in [-5, 5]. The loss is f(x) - f_opt.

constrained FID INSTANCE: COCO's bbob-constrained function FID (1..54), 5-D, each coordinate in
[-5, 5]: the loss is f(x) - f_opt, the constraints COCO's g(x) (feasible when all are at most 0).

COCO does not give f_opt to Python: it is f at the x_opt that `_best_parameter("print")` writes
(to a fixed file name in the current directory, hence a directory of its own).
"""
import os
import sys
import tempfile

import ioh
import numpy as np

BRANCHES = ("a", "b", "c")
DIM = 3


def conditional_functions(problem: int, instance: int):
    """The three (function, f_opt) of conditional problem `problem`, by branch."""
    fids = (3 * problem - 2, 3 * problem - 1, 3 * problem)
    functions = [ioh.get_problem(fid, instance=instance, dimension=DIM) for fid in fids]
    return {b: (f, f.optimum.y) for b, f in zip(BRANCHES, functions)}


def conditional_loss(functions, params: dict) -> float:
    """The loss of `params` (the branch and its own coordinates only: anything else is an error,
    so that a run that passed an inactive parameter fails loudly)."""
    branch = params["branch"]
    names = {f"{branch}{i}" for i in range(DIM)}
    extra = set(params) - names - {"branch"}
    if extra or not names <= set(params):
        raise ValueError(f"branch {branch} got the parameters {sorted(params)}")
    f, f_opt = functions[branch]
    return f([float(params[f"{branch}{i}"]) for i in range(DIM)]) - f_opt


def conditional_space_toml() -> str:
    """The space file of our runs."""
    lines = ["[params]", 'branch = { type = "categorical", choices = ["a", "b", "c"] }']
    for b in BRANCHES:
        for i in range(DIM):
            lines.append(f'{b}{i} = {{ type = "float", low = -5.0, high = 5.0, when = {{ branch = "{b}" }} }}')
    return "\n".join(lines) + "\n"


COCO_SUITES = {"mixint": "bbob-mixint", "constrained": "bbob-constrained"}
COCO_DIM = 5


class CocoProblem:
    """One COCO problem of benches/spaces.sh: its suite kept alive beside it, and its f_opt."""

    def __init__(self, kind: str, fid: int, instance: int):
        import cocoex

        options = f"dimensions:{COCO_DIM} function_indices:{fid} instance_indices:{instance}"
        self.suite = cocoex.Suite(COCO_SUITES[kind], "", options)
        self.problem = self.suite.get_problem(0)
        here = os.getcwd()
        with tempfile.TemporaryDirectory() as scratch:
            os.chdir(scratch)
            try:
                self.problem._best_parameter("print")
                x_opt = np.loadtxt("._bbob_problem_best_parameter.txt")
            finally:
                os.chdir(here)
        self.f_opt = float(self.problem(x_opt))

    def names(self) -> list:
        return [f"x{i}" for i in range(COCO_DIM)]

    def point(self, params: dict) -> list:
        """The point of `params` (by name; integers as COCO's integer coordinates)."""
        return [float(params[name]) for name in self.names()]

    def loss(self, params: dict) -> float:
        return float(self.problem(self.point(params))) - self.f_opt

    def constraints(self, params: dict) -> list:
        """COCO's g(x) for a constrained problem (empty for any other)."""
        if self.problem.number_of_constraints == 0:
            return []
        return [float(g) for g in self.problem.constraint(self.point(params))]

    def space_toml(self) -> str:
        """The space file of our runs: the first `number_of_integer_variables` coordinates integers."""
        lines = ["[params]"]
        integers = self.problem.number_of_integer_variables
        for i, (low, high) in enumerate(zip(self.problem.lower_bounds, self.problem.upper_bounds)):
            if i < integers:
                lines.append(f'x{i} = {{ type = "int", low = {int(low)}, high = {int(high)} }}')
            else:
                lines.append(f'x{i} = {{ type = "float", low = {float(low)}, high = {float(high)} }}')
        return "\n".join(lines) + "\n"


if __name__ == "__main__":
    kind = sys.argv[1] if len(sys.argv) > 1 else "conditional"
    if kind == "conditional":
        print(conditional_space_toml(), end="")
    else:
        print(CocoProblem(kind, 1, 1).space_toml(), end="")
