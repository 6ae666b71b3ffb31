"""The `cmaes` package (what Optuna's CmaEsSampler drives) run directly on one BBOB problem over
several seeds, started as Optuna starts it: the centre of [-5, 5]^d mapped to the unit box, a step
size of a sixth, the box as bounds, `10 d` redraws. Prints the median and the sorted bests
(f - f_opt after BUDGET evaluations): the spread a single run of any CMA-ES has on that problem.

    .venv-bbob/bin/python benches/bbob_cmaes_seeds.py FID [INSTANCE] [DIM] [BUDGET] [SEEDS]

Defaults: instance 1, 10-D, 1,000 evaluations, seeds 0-9. Needs the venv benches/bbob.sh builds.
"""
import sys

import cmaes
import ioh
import numpy as np


def main() -> None:
    fid = int(sys.argv[1])
    given = [int(a) for a in sys.argv[2:]]
    instance, dim, budget, seeds = given + [1, 10, 1000, 10][len(given):]
    problem = ioh.get_problem(fid, instance=instance, dimension=dim)
    bests = []
    for seed in range(seeds):
        es = cmaes.CMA(mean=np.full(dim, 0.5), sigma=1 / 6, bounds=np.array([[0.0, 1.0]] * dim), seed=seed,
                       n_max_resampling=10 * dim)
        best, evaluations = np.inf, 0
        while evaluations < budget:
            told = []
            for _ in range(es.population_size):
                u = es.ask()
                loss = problem(list(u * 10 - 5)) - problem.optimum.y
                told.append((u, loss))
                best = min(best, loss)
                evaluations += 1
            es.tell(told)
        bests.append(float(best))
    print(f"f{fid} i{instance} d{dim} b{budget}: median {np.median(bests):.4g}; "
          + " ".join(f"{b:.4g}" for b in sorted(bests)))


if __name__ == "__main__":
    main()
