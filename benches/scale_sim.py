#!/usr/bin/env python3
"""A discrete-event simulation of a propulate-rs run at scale, driven by measured costs.

Every worker is simulated event by event: it breeds a child (CPU: the propagator's breed on an island
whose history has grown to what the island has evaluated so far), evaluates it (the evaluation's
time, drawn), publishes the result to its island peers and journals it (CPU), then handles the peers'
results that have reached it over the network since it last looked (CPU per message, the messages
counted from the island's finished evaluations and the network's latency and bandwidth), and breeds
again. A worker that has finished its generations waits for the last one; then the run ends. The job's
time is its start, the workers' time, and its end.

What drives it, all measured (docs/benchmarks/scale.md):
- the per-evaluation costs on a rank: `cargo bench --bench rank_costs` (COSTS, its JSON lines): breed
  (ga, gp, pbt) against island size and history, receive and publish per message, journal per
  evaluation with each fsync policy, the message's and the journal's bytes;
- the job's start and end, in two parts measured by `benches/utilization.py` (CALIBRATION, its JSON
  lines): what the run itself adds, fitted to its in-process runs as a + c x ranks,
  and MPI's own start and end (the launcher's), the wall time of `propulate-rs env` on as many
  ranks. The launcher's share on a cluster is not measured here: `project` leaves it out and says
  how long it may be for 95 % utilization;
- the network: latency and bandwidth of InfiniBand HDR or HPE Slingshot (NETWORKS below, published
  figures).

    python3 benches/scale_sim.py check      # the simulation against every real run it can be compared with
    python3 benches/scale_sim.py project    # 1,000 to 16,000 workers, evaluations of 1 s, 60 s and 1 h
    python3 benches/scale_sim.py one --workers 4096 --island 64 --eval-s 60 --generations 100

Knobs (environment): COSTS [benches/scale-data/rank_costs-h200.jsonl], CALIBRATION
[benches/scale-data/utilization-h200.jsonl].
"""
import argparse
import bisect
import heapq
import json
import math
import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The measurements of docs/benchmarks/scale.md (a 16-core server's): new ones are written by the
# benchmarks to bench-results/rank_costs/rank_costs.jsonl and bench-results/utilization/results.jsonl.
DATA = os.path.join(ROOT, "benches", "scale-data")
COSTS = os.environ.get("COSTS", os.path.join(DATA, "rank_costs-h200.jsonl"))
CALIBRATION = os.environ.get("CALIBRATION", os.path.join(DATA, "utilization-h200.jsonl"))

# Published figures. Bandwidth: 200 Gb/s per endpoint for both (Mellanox's HDR InfiniBand, announced
# 2016: 200 Gb/s ports; HPE Slingshot: 200 Gb/s endpoints, 64-port switches). Latency: a small MPI
# message end to end, taken on the high side of what is quoted (IB: sub-microsecond port to port;
# Slingshot: De Sensi et al., "An In-Depth Analysis of the Slingshot Interconnect", SC20, measured
# low microseconds), so that the projection does not flatter us. `check` runs on one host.
NETWORKS = {
    "hdr": {"latency_s": 1.5e-6, "bandwidth_Bps": 200e9 / 8, "name": "InfiniBand HDR (200 Gb/s, 1.5 us)"},
    "slingshot": {"latency_s": 3.0e-6, "bandwidth_Bps": 200e9 / 8, "name": "HPE Slingshot (200 Gb/s, 3 us)"},
    "host": {"latency_s": 0.5e-6, "bandwidth_Bps": 10e9, "name": "one host (shared memory)"},
}


def read_jsonl(path):
    if not os.path.exists(path):
        sys.exit(f"scale_sim.py: {path} is missing: run the benchmark that writes it first (see --help)")
    return [json.loads(line) for line in open(path) if line.strip()]


class Costs:
    """The per-evaluation costs of a rank, interpolated log-log between the measured points."""

    def __init__(self, rows, fsync):
        islands = [r for r in rows if r["what"] == "island"]
        # The latest measurement of each point.
        self.points = {(r["island"], r["history"]): r for r in islands}
        self.islands = sorted({w for w, _ in self.points})
        journal = {r["fsync"]: r for r in rows if r["what"] == "journal"}
        if fsync not in journal:
            sys.exit(f"scale_sim.py: no journal cost for fsync {fsync!r} in {COSTS} (have {sorted(journal)})")
        self.journal_s = journal[fsync]["journal_s"]
        self.journal_bytes = journal[fsync]["journal_bytes"]
        self.message_bytes = max(r["message_bytes"] for r in islands)
        self.memo = {}

    def _at_island(self, w, key, history):
        hs = sorted(h for (ww, h) in self.points if ww == w)
        h = min(max(history, hs[0]), hs[-1])
        i = max(0, min(bisect.bisect_left(hs, h) - 1, len(hs) - 2))
        lo, hi = hs[i], hs[i + 1]
        ylo, yhi = self.points[(w, lo)][key], self.points[(w, hi)][key]
        t = (math.log(h) - math.log(lo)) / (math.log(hi) - math.log(lo))
        return math.exp(math.log(max(ylo, 1e-9)) * (1 - t) + math.log(max(yhi, 1e-9)) * t)

    def get(self, key, island, history):
        """`key` at an island of `island` workers holding `history` evaluations (clamped to the
        measured range: beyond it the nearest measured point). History to 2 significant digits,
        remembered: the simulation asks millions of times."""
        h = float(f"{history:.2g}")
        found = self.memo.get((key, island, h))
        if found is None:
            found = self.memo[(key, island, h)] = self._get(key, island, h)
        return found

    def _get(self, key, island, history):
        ws = self.islands
        w = min(max(island, ws[0]), ws[-1])
        i = max(0, min(bisect.bisect_left(ws, w) - 1, len(ws) - 2)) if len(ws) > 1 else 0
        if len(ws) == 1 or w == ws[i]:
            return self._at_island(ws[i], key, history)
        lo, hi = ws[i], ws[i + 1]
        t = (math.log(w) - math.log(lo)) / (math.log(hi) - math.log(lo))
        ylo, yhi = self._at_island(lo, key, history), self._at_island(hi, key, history)
        return math.exp(math.log(max(ylo, 1e-9)) * (1 - t) + math.log(max(yhi, 1e-9)) * t)


def fit_own_start_end(rows):
    """(a, c): what a run adds to its job's start and end beyond MPI's, a + c x ranks, the
    least-squares fit to the in-process runs (no launcher: threads of one process)."""
    local = [r for r in rows if r["transport"] == "local"]
    if not local:
        sys.exit("scale_sim.py: the calibration needs an in-process run (LOCAL in utilization.py)")
    if len(local) == 1:  # one run: a constant
        return (local[0]["start_end_s"], 0.0)
    return least_squares([(1.0, r["ranks"]) for r in local], [r["start_end_s"] for r in local])


def least_squares(xs, ys):
    """Coefficients of the plain least-squares fit (normal equations, a few unknowns)."""
    k = len(xs[0])
    a = [[sum(x[i] * x[j] for x in xs) for j in range(k)] for i in range(k)]
    b = [sum(x[i] * y for x, y in zip(xs, ys)) for i in range(k)]
    for col in range(k):  # Gauss-Jordan with partial pivoting
        piv = max(range(col, k), key=lambda r: abs(a[r][col]))
        a[col], a[piv], b[col], b[piv] = a[piv], a[col], b[piv], b[col]
        if abs(a[col][col]) < 1e-12:
            return [0.0] * k
        for r in range(k):
            if r != col:
                f = a[r][col] / a[col][col]
                a[r] = [u - f * v for u, v in zip(a[r], a[col])]
                b[r] -= f * b[col]
    return [b[i] / a[i][i] for i in range(k)]


def simulate(workers, island, eval_s, spread, generations, costs, own, network, propagator="ga", launch_s=0.0,
             shared=False, seed=1):
    """One simulated run of `workers` workers in islands of `island`, `generations` evaluations each of
    `eval_s` seconds (uniform within +- `spread` of it); returns its figures. `shared`: the island's
    workers share their generations (`--shared-budget`): a worker starts another evaluation while
    the island's evaluations it knows of, plus one running on every other worker, stay under the
    island's budget (crates/engine/src/driver/root/budget.rs)."""
    rng = random.Random(seed)
    # A result reaches a peer one message later: the network's latency and the bytes at its bandwidth.
    delivery = network["latency_s"] + costs.message_bytes / network["bandwidth_Bps"]
    islands = max(1, workers // island)
    island_of = [min(w // island, islands - 1) for w in range(workers)]
    sizes = [island_of.count(i) for i in range(islands)]
    # When each island's results arrive at its peers (appended in time order: events run in time
    # order and the delivery time is the same for all), and each worker's own among them.
    arrivals = [[] for _ in range(islands)]
    own_arrivals = [[] for _ in range(workers)]
    seen, own_seen = [0] * workers, [0] * workers
    evaluated = [0] * workers
    finish = [0.0] * workers
    eval_time = cpu_time = 0.0
    messages = 0
    heap = [(0.0, w) for w in range(workers)]  # every worker breeds its first child at the start
    heapq.heapify(heap)
    while heap:
        t, w = heapq.heappop(heap)
        i = island_of[w]
        if evaluated[w] > 0:
            # An evaluation ended: journal it and send it to the island's other workers.
            cpu = costs.journal_s + costs.get("publish_s", sizes[i], 1)
            arrivals[i].append(t + delivery)
            own_arrivals[w].append(t + delivery)
            messages += sizes[i] - 1
            cpu_time += cpu
            t += cpu
        arrived = bisect.bisect_right(arrivals[i], t)
        mine = bisect.bisect_right(own_arrivals[w], t)
        if shared:
            known = arrived - mine + evaluated[w]
            done = known + sizes[i] - 1 >= sizes[i] * generations
        else:
            done = evaluated[w] == generations
        if done:
            finish[w] = t
            continue
        # Handle the peers' results that reached this worker since it last looked, then breed from
        # the island's history as it now knows it.
        handled = (arrived - seen[w]) - (mine - own_seen[w])
        seen[w], own_seen[w] = arrived, mine
        history = max(arrived, 1)
        cpu = handled * costs.get("receive_s", sizes[i], history)
        cpu += costs.get(f"breed_{propagator}_s", sizes[i], history)
        cpu_time += cpu
        t += cpu
        d = eval_s * (1 + spread * (2 * rng.random() - 1)) if spread else eval_s
        eval_time += d
        evaluated[w] += 1
        heapq.heappush(heap, (t + d, w))
    last = max(finish)
    a, c = own
    fixed = launch_s + max(0.0, a + c * workers)
    wall = last + fixed
    evaluations = sum(evaluated)
    return {
        "workers": workers, "island": island, "eval_s": eval_s, "spread": spread, "generations": generations,
        "shared_budget": shared, "evaluations": evaluations,
        "propagator": propagator, "network": network["name"],
        "utilization": eval_time / (workers * wall),
        "steady_utilization": eval_time / sum(finish),
        "end_wait_share": sum(last - f for f in finish) / (workers * wall),
        "start_end_s": fixed, "wall_s": wall,
        # The longest launcher start (beyond `fixed`) that still leaves 95 % utilization.
        "launch_budget_95_s": eval_time / (0.95 * workers) - last - fixed,
        "cpu_per_eval_ms": cpu_time / evaluations * 1e3,
        "messages_per_eval": messages / evaluations,
        "bytes_per_eval": messages / evaluations * costs.message_bytes,
        "journal_Bps": workers * costs.journal_bytes / eval_s,
        "fsyncs_per_s": workers / max(eval_s, 1.0),
    }


def check(costs, calibration, max_error):
    """Each real run against the simulation of it. The start and end are inputs measured on the same
    host (the run's own: fitted to all its in-process runs; MPI's: the `env` time measured beside
    it); what the simulation adds, the evaluations, messages, breeding, journaling and the wait for
    the last worker, is what is checked."""
    print("the simulation against the real runs (job: the evaluations' share of the job's time, measured and "
          "simulated; steady: measured, start and end left out)")
    print(f"{'host':>6} {'cores':>5} {'transport':>9} {'ranks':>6} {'G':>4} {'spread':>6} {'shared':>6} "
          f"{'steady':>7} "
          f"{'job':>6} {'sim':>6} {'error':>7}")
    worst = 0.0
    own = fit_own_start_end(calibration)
    for r in calibration:
        if r["transport"] == "mpi" and r.get("env_floor_s") is None:
            continue
        launch = r["env_floor_s"] if r["transport"] == "mpi" else 0.0
        sim = simulate(r["ranks"], r["island"], r["delay_s"], r.get("spread", 0.0), r["long"], costs, own,
                       NETWORKS["host"], launch_s=launch, shared=r.get("shared_budget", False))
        err = sim["utilization"] - r["job_utilization"]
        worst = max(worst, abs(err))
        print(f"{r['host'][:6]:>6} {r['cores']:>5} {r['transport']:>9} {r['ranks']:>6} {r['long']:>4} "
              f"{r.get('spread', 0.0):>6g} {'yes' if r.get('shared_budget') else 'no':>6} "
              f"{r['steady_utilization']:>7.3f} "
              f"{r['job_utilization']:>6.3f} {sim['utilization']:>6.3f} {err:>+7.3f}")
    print(f"largest difference in job utilization: {worst:.3f} (allowed: {max_error})")
    return worst <= max_error


def project(costs, calibration, networks, propagators):
    fit = fit_own_start_end(calibration)
    print(f"the run's own start and end: {fit[0]:.2f} s + {fit[1] * 1e3:.2f} ms x ranks (fitted to the "
          f"in-process runs); the launcher's (MPI's start on the cluster) is not in 'util': 'launch 95%' "
          f"is how long it may take for 95 % utilization")
    rows = []
    header = (f"{'network':>9} {'prop':>4} {'workers':>7} {'island':>6} {'eval':>5} {'G':>5} {'spread':>6} {'shared':>6} "
              f"{'util':>6} {'steady':>6} {'end wait':>8} {'start+end s':>11} {'launch 95%':>10} {'msg/eval':>8} "
              f"{'B/eval':>7} {'journal MB/s':>12}")
    print(header)
    # Evaluations of 1 s for 5 minutes, of 60 s for an hour, of an hour for half a day. Every
    # configuration with the genetic propagator on the first network, evaluation times equal and
    # spread +-50 %; the other networks, the GP and PBT at equal times.
    grid = []
    for eval_s, generations in ((1.0, 300), (60.0, 60), (3600.0, 12)):
        for workers in (1024, 4096, 16384):
            grid += [(networks[0], propagators[0], eval_s, generations, workers, spread, False) for spread in (0.0, 0.5)]
            grid += [(networks[0], propagators[0], eval_s, generations, workers, 0.5, True)]
            grid += [(net, propagators[0], eval_s, generations, workers, 0.0, False) for net in networks[1:]]
            grid += [(networks[0], prop, eval_s, generations, workers, 0.0, False) for prop in propagators[1:]]
    for net, prop, eval_s, generations, workers, spread, shared in grid:
        island = recommended_island(workers)
        s = simulate(workers, island, eval_s, spread, generations, costs, fit, NETWORKS[net], propagator=prop,
                     shared=shared)
        rows.append(s)
        print(f"{net:>9} {prop:>4} {workers:>7} {island:>6} {eval_s:>5g} {generations:>5} "
              f"{spread:>6g} {'yes' if shared else 'no':>6} {s['utilization']:>6.3f} {s['steady_utilization']:>6.3f} "
              f"{s['end_wait_share']:>8.3f} {s['start_end_s']:>11.1f} {s['launch_budget_95_s']:>10.1f} "
              f"{s['messages_per_eval']:>8.0f} {s['bytes_per_eval']:>7.0f} "
              f"{s['journal_Bps'] / 1e6:>12.3f}", flush=True)
    return rows


def recommended_island(workers):
    """Islands of 64 workers at any scale (docs/guide/gpus-and-clusters.md, "How many islands")."""
    return min(64, workers)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    chk = sub.add_parser("check", help="the simulation against the real runs of benches/utilization.py")
    chk.add_argument("--max-error", type=float, default=0.05,
                     help="exit 1 where a run's job utilization and its simulation differ by more")
    p = sub.add_parser("project", help="1,000 to 16,000 workers on InfiniBand HDR and Slingshot")
    p.add_argument("--networks", default="hdr,slingshot")
    p.add_argument("--propagators", default="ga,gp,pbt")
    p.add_argument("--out", help="also write the rows as JSON lines here")
    one = sub.add_parser("one", help="one configuration")
    one.add_argument("--workers", type=int, required=True)
    one.add_argument("--island", type=int, default=64)
    one.add_argument("--eval-s", type=float, default=60.0)
    one.add_argument("--spread", type=float, default=0.0)
    one.add_argument("--generations", type=int, default=100)
    one.add_argument("--propagator", default="ga", choices=["ga", "gp", "pbt"])
    one.add_argument("--network", default="hdr", choices=sorted(NETWORKS))
    one.add_argument("--launch-s", type=float, default=0.0, help="the launcher's start on the cluster, seconds")
    one.add_argument("--shared-budget", action="store_true", help="the island's workers share their generations")
    for q in (p, one):
        q.add_argument("--fsync", default="1000ms", help="the journal's fsync policy: never, 1000ms, always")
    args = parser.parse_args()
    costs = Costs(read_jsonl(COSTS), getattr(args, "fsync", "1000ms"))
    calibration = read_jsonl(CALIBRATION)
    if args.command == "check":
        sys.exit(0 if check(costs, calibration, args.max_error) else 1)
    elif args.command == "project":
        rows = project(costs, calibration, args.networks.split(","), args.propagators.split(","))
        if args.out:
            with open(args.out, "w") as f:
                f.writelines(json.dumps(r) + "\n" for r in rows)
    else:
        s = simulate(args.workers, args.island, args.eval_s, args.spread, args.generations, costs,
                     fit_own_start_end(calibration), NETWORKS[args.network], propagator=args.propagator,
                     launch_s=args.launch_s, shared=args.shared_budget)
        print(json.dumps(s, indent=1))


if __name__ == "__main__":
    main()
