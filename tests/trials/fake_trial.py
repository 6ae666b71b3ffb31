"""A stand-in for a user's Python training program in the --preload tests, cheap (no torch):
    python fake_trial.py MODE MARKER X
run forked from a Python that imported `decimal` (--preload decimal). Each rank records what it
saw in $PROPULATE_TRIAL_DIR/seen-rank<RANK>.json; MODE picks what the trial does; MARKER (unique
per test) is in the command line of the preloaded Python and so of every process forked from it."""
import sys

DECIMAL_PRELOADED = "decimal" in sys.modules

import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402

mode, x = sys.argv[1], float(sys.argv[3])
rank = int(os.environ["RANK"])
seen = {
    "name": __name__,
    "argv": sys.argv,
    "decimal_preloaded": DECIMAL_PRELOADED,
    "rank": os.environ["RANK"],
    "local_rank": os.environ["LOCAL_RANK"],
    "trial": os.environ["PROPULATE_TRIAL"],
    "params": json.loads(os.environ["PROPULATE_PARAMS"]),
}
with open(os.path.join(os.environ["PROPULATE_TRIAL_DIR"], f"seen-rank{rank}.json"), "w") as f:
    json.dump(seen, f)

if mode == "ok":
    if rank == 0:
        for step in (1, 2):
            print(f"propulate: step={step} loss={x * x + 1 / step}", flush=True)
        # Not flushed: it must come out when the program ends, as it would from a fresh Python.
        print(f"propulate: loss={x * x}")
elif mode == "slow":
    time.sleep(0.4)
    if rank == 0:
        print(f"propulate: loss={x * x}")
elif mode == "exit3":
    if rank == 1:
        print("Traceback: boom on rank 1", file=sys.stderr)
        sys.exit(3)
    time.sleep(600)
elif mode == "raise":
    if rank == 1:
        raise RuntimeError("boom on rank 1")
    time.sleep(600)
elif mode == "killed":
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(600)
elif mode == "hang":
    time.sleep(600)
else:
    sys.exit(f"fake_trial.py: unknown mode {mode}")
