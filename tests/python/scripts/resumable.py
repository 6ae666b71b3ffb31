"""A run the tests kill and start again: `python -m mpi4py resumable.py CHECKPOINT CALLS [SLEEP]`.
Every call of the loss appends a line to CALLS.<rank>; rank 0 prints the result as JSON."""

import json
import sys
import time

from mpi4py import MPI

import propulate_rs as pr

checkpoint, calls = sys.argv[1], sys.argv[2]
sleep = float(sys.argv[3]) if len(sys.argv) > 3 else 0.05


def loss(params):
    with open(f"{calls}.{MPI.COMM_WORLD.rank}", "a") as log:
        log.write(f"{params['x']!r}\n")
    time.sleep(sleep)
    return params["x"] ** 2


result = pr.optimize(loss, {"x": pr.Float(-1, 1)}, generations=30, propagator="ga", checkpoint=checkpoint,
                     quiet=True)
if MPI.COMM_WORLD.rank == 0:
    ids = [[t.island, t.worker, t.generation] for t in result.trials]
    print(json.dumps({"evaluations": result.evaluations, "resumed": result.resumed, "ids": ids}))
