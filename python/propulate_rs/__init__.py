"""propulate-rs from Python: asynchronous island-model hyperparameter optimization on MPI.

Under ``mpirun -np 8 python -m mpi4py script.py`` (in one process, leave ``islands`` out)::

    import propulate_rs as pr

    def loss(params):
        return (params["x"] - 1) ** 2 + (params["act"] != "relu")

    space = {"x": pr.Float(-5, 5), "n": pr.Int(1, 8), "act": pr.Categorical(["relu", "tanh"])}
    result = pr.optimize(loss, space, generations=100, islands=2)
    print(result.best.params, result.best.loss)

and ask/tell for any executor: ``study = pr.Study(space)``, ``trial = study.ask()``,
``study.tell(trial, loss(trial.params))``. Guide: docs/guide/python.md.
"""

from ._native import Context
from ._optimize import optimize, options
from ._result import Result, Trial
from ._space import Categorical, Float, Int
from ._study import AskedTrial, Study

__all__ = [
    "AskedTrial", "Categorical", "Context", "Float", "Int", "Result", "Study", "Trial", "optimize", "options",
]
