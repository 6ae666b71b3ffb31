"""Population-based training: the Python version of tutorials/pbt.rs.

    mpirun -np 4 python -m mpi4py tutorials/python/pbt.py [CHECKPOINT]

Each worker trains one member: a linear model fitted by stochastic gradient descent, a stand-in
for a network. Each evaluation trains it `ctx.steps` steps with the evaluation's learning rate and
momentum, continuing the state `ctx.restore_from` names (its member's last, or a better member's
it took over), saves its own state into `ctx.save_to`, and returns the validation loss. The states
live under the checkpoint (default checkpoints/pbt-python-tutorial); the same command again
resumes the run.
"""

import json
import os
import sys

from mpi4py import MPI

import propulate_rs as pr


def sample(i):
    """A noisy sample of y = 3 x0 - 2 x1 + 0.5, the task the members learn."""
    u = lambda k: ((i * 2654435761 + k * 40503) % 10007) / 10007 * 2 - 1  # noqa: E731
    x = (u(1), u(2))
    return x, 3 * x[0] - 2 * x[1] + 0.5 + 0.05 * u(3)


def loss(params, ctx):
    state = {"w": [0.0, 0.0], "b": 0.0, "velocity": [0.0, 0.0, 0.0], "seen": 0}
    if ctx.restore_from is not None:
        with open(os.path.join(ctx.restore_from, "state.json")) as f:
            state = json.load(f)
    lr, momentum = params["lr"], params["momentum"]
    for _ in range(ctx.steps):
        for _ in range(32):  # one step: a pass over 32 samples
            (x0, x1), y = sample(state["seen"])
            state["seen"] += 1
            error = state["w"][0] * x0 + state["w"][1] * x1 + state["b"] - y
            grad = (error * x0, error * x1, error)
            state["velocity"] = [momentum * v + g for v, g in zip(state["velocity"], grad)]
            state["w"][0] -= lr * state["velocity"][0]
            state["w"][1] -= lr * state["velocity"][1]
            state["b"] -= lr * state["velocity"][2]
    with open(os.path.join(ctx.save_to, "state.json"), "w") as f:
        json.dump(state, f)
    validation = [sample(10**6 + i) for i in range(200)]
    return sum((state["w"][0] * x0 + state["w"][1] * x1 + state["b"] - y) ** 2 for (x0, x1), y in validation) / 200


def main():
    checkpoint = sys.argv[1] if len(sys.argv) > 1 else "checkpoints/pbt-python-tutorial"
    space = {"lr": pr.Float(1e-4, 0.5, log=True), "momentum": pr.Float(0.0, 0.99)}
    result = pr.optimize(loss, space, propagator="pbt", pbt_interval=2, pbt_steps=20, checkpoint=checkpoint,
                         seed=1, quiet=True)
    if MPI.COMM_WORLD.rank == 0:
        exploited = sum(1 for t in result.trials if t.lineage and t.lineage["exploited"])
        print(f"{result.evaluations} evaluations, {exploited} exploited a better member; "
              f"best validation loss {result.best.loss:.5f} with {result.best.params}")


if __name__ == "__main__":
    main()
