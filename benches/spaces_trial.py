"""One evaluation of a benches/spaces.sh problem for propulate-rs's command trials.

    python spaces_trial.py conditional PROBLEM INSTANCE --branch=b --b0=... --b1=... --b2=...
    python spaces_trial.py mixint|constrained FID INSTANCE --x0=... --x4=...

Prints `propulate: loss=<f(x) - f_opt>`, and for constrained problems `propulate: constraints=<g(x)>`. BBOB_EVAL_SECONDS=T makes the evaluation last 0.5 T to
1.5 T (spread by the point), as benches/bbob_trial.py does, so that workers fall out of step.
"""
import os
import sys
import time
import zlib

import spaces_problems


def main() -> None:
    kind, problem, instance = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    params = {}
    for arg in sys.argv[4:]:
        name, _, value = arg.removeprefix("--").partition("=")
        params[name] = value
    constraints = []
    if kind == "conditional":
        loss = spaces_problems.conditional_loss(spaces_problems.conditional_functions(problem, instance), params)
    elif kind in spaces_problems.COCO_SUITES:
        coco = spaces_problems.CocoProblem(kind, problem, instance)
        loss, constraints = coco.loss(params), coco.constraints(params)
    else:
        raise SystemExit(f"unknown problem kind {kind}")
    seconds = float(os.environ.get("BBOB_EVAL_SECONDS", "0"))
    if seconds > 0:
        time.sleep(seconds * (0.5 + zlib.crc32(repr(sorted(params.items())).encode()) / 2**32))
    if constraints:
        print("propulate: constraints=" + ",".join(repr(g) for g in constraints), flush=True)
    print(f"propulate: loss={loss!r}", flush=True)


if __name__ == "__main__":
    main()
