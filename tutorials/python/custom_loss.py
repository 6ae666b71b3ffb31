"""Your own loss over a mixed search space, under MPI: the Python version of
tutorials/custom_loss.rs.

    mpirun -np 4 python -m mpi4py tutorials/python/custom_loss.py

The loss stands in for "train a model with these hyperparameters and return its validation
loss". It fails on purpose for some inputs, to show that exceptions, NaNs and non-numbers are
recorded as failed evaluations (with their reasons) while the run goes on.
"""

import math
import sys

from mpi4py import MPI

import propulate_rs as pr


def loss(params):
    lr, layers, activation = params["lr"], params["layers"], params["activation"]
    if layers == 8 and activation == "sigmoid":
        raise ValueError("diverged: 8 sigmoid layers")  # a failed evaluation
    if lr > 0.05:
        return float("nan")  # a failed evaluation too
    # A made-up validation loss: best near lr = 1e-3 with 4 layers of relu.
    penalty = {"relu": 0.0, "tanh": 0.05, "sigmoid": 0.2}[activation]
    return (math.log10(lr) + 3) ** 2 + 0.05 * abs(layers - 4) + penalty


def main():
    checkpoint = sys.argv[1] if len(sys.argv) > 1 else "checkpoints/custom-loss-tutorial"
    space = {
        "lr": pr.Float(1e-5, 1e-1, log=True),
        "layers": pr.Int(1, 8),
        "activation": pr.Categorical(["relu", "tanh", "sigmoid"]),
    }
    # Configurations known in advance are evaluated first (as `--enqueue` does): one that worked
    # before and two known to fail, so that both kinds of failure show in every run.
    known = [
        {"lr": 1e-3, "layers": 4, "activation": "tanh"},
        {"lr": 0.08, "layers": 2, "activation": "relu"},
        {"lr": 1e-3, "layers": 8, "activation": "sigmoid"},
    ]
    result = pr.optimize(loss, space, generations=50, islands=2, seed=42, top_n=3, checkpoint=checkpoint,
                         enqueue=known, quiet=True)
    if MPI.COMM_WORLD.rank == 0:
        reasons = sorted({t.failure for t in result.trials if t.failed})
        print(f"{result.evaluations} evaluations, {result.failed} failed: {'; '.join(reasons)}")
        print(f"best: {result.best.params} with loss {result.best.loss:.4f}")


if __name__ == "__main__":
    main()
