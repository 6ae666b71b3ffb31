"""The warm-start table of benches/spaces.sh (PART=warm): per function, the evaluations the cold
run on instance 2 needed to reach its own final best, and the evaluations the run warm-started from
instance 1 needed to reach that same value (counted over this run's own evaluations in the order
they started; BUDGET + 1 where it never did), then on how many functions the warm run needed at
most half the cold one's.

    python benches/summarize_warm.py WORK_DIR
"""
import json
import statistics
import sys
from pathlib import Path


def own_losses(run: Path) -> list:
    """The run's evaluations' losses in the order they started (failed ones as infinity)."""
    trials = [json.loads(line) for line in open(run / "trials.jsonl") if line.strip()]
    trials.sort(key=lambda t: (t["start"], t["worker"], t["generation"]))
    return [t["loss"] if t["loss"] is not None else float("inf") for t in trials]


def needed(losses: list, target: float) -> int:
    """Evaluations until the best so far is at most `target` (len + 1 if never)."""
    best = float("inf")
    for k, loss in enumerate(losses, 1):
        best = min(best, loss)
        if best <= target:
            return k
    return len(losses) + 1


def main() -> None:
    work = Path(sys.argv[1])
    rows = []
    for cold in sorted(work.glob("runs/cold-i2-f*-s*"), key=lambda p: (int(p.name.split("-f")[1].split("-")[0]), p.name)):
        warm = work / "runs" / cold.name.replace("cold-i2", "warm-i2")
        if not (cold / "trials.jsonl").exists() or not (warm / "trials.jsonl").exists():
            continue
        cold_losses = own_losses(cold)
        target = min(cold_losses)
        rows.append((cold.name.split("-", 2)[2], needed(cold_losses, target), needed(own_losses(warm), target), target))
    print("| function, seed | cold: evaluations to its final best | warm: evaluations to the same | ratio | the best |")
    print("|---|---|---|---|---|")
    for name, c, w, target in rows:
        print(f"| {name} | {c} | {w} | {w / c:.2f} | {target:.3g} |")
    half = sum(w * 2 <= c for _, c, w, _ in rows)
    ratios = [w / c for _, c, w, _ in rows]
    if rows:
        print(f"\nwarm at most half the cold run's evaluations on {half} of {len(rows)}; "
              f"median ratio {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
