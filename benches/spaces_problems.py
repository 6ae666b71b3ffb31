"""The problems of benches/spaces.sh, shared by our trials (benches/spaces_trial.py) and Optuna's
runs (benches/spaces_optuna.py).

conditional K INSTANCE: a categorical `branch` picks one of three BBOB functions (through `ioh`),
f(3K-2), f(3K-1) and f(3K) for K in 1..8 (so the eight problems cover all 24), each 3-D with
parameters of its own: `a0..a2` for branch a, `b0..b2` for b, `c0..c2` for c, each in [-5, 5]
(BBOB's domain), active only in their branch. The loss is the chosen function's f(x) - f_opt: 0 at
its optimum, whichever branch holds it.
"""
import ioh

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


if __name__ == "__main__":
    print(conditional_space_toml(), end="")
