"""Which BBOB functions' instance 2 is instance 1 moved: the warm-start benchmark's premise.

A warm start from instance 1 can halve the evaluations on instance 2 only where what was learnt
there holds here. BBOB draws each instance's optimum anew, and for most functions its rotations
and signs too (COCO seeds them with the function and the instance). Per function (5-D, through
`ioh` as the benchmark uses it), this compares f - f_opt of the two instances at equal offsets
from each one's optimum: equal at every offset (to rounding) means instance 2 is instance 1
moved, so a search that knew instance 1's landscape would only have to find the shift; anything
else means the landscape around the optimum differs too.

    .venv-bbob/bin/python benches/warm_instances.py [DIM] [OFFSETS]
"""

import sys

import ioh
import numpy as np


def moved(fid, dim, offsets, rng):
    """The median relative difference of f - f_opt at equal offsets from the two optima."""
    first, second = ioh.get_problem(fid, 1, dim), ioh.get_problem(fid, 2, dim)
    errors = []
    for _ in range(offsets):
        offset = rng.uniform(-1.0, 1.0, dim)
        a = first(list(np.array(first.optimum.x) + offset)) - first.optimum.y
        b = second(list(np.array(second.optimum.x) + offset)) - second.optimum.y
        errors.append(abs(a - b) / max(abs(a), abs(b), 1e-12))
    return max(errors), float(np.median(errors))


def main():
    dim = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    offsets = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    rng = np.random.default_rng(0)
    same = []
    for fid in range(1, 25):
        worst, median = moved(fid, dim, offsets, rng)
        if worst < 1e-9:
            same.append(fid)
        print(f"f{fid}: {'moved' if worst < 1e-9 else 'differs'} (median relative difference {median:.2g})")
    print(f"instance 2 is instance 1 moved on {len(same)} of 24: {', '.join(f'f{f}' for f in same)}")


if __name__ == "__main__":
    main()
