"""The warm-start benchmark's question asked of Optuna (docs/benchmarks/spaces.md#warm-start):
does a study on BBOB instance 2 that starts with the 200 trials of a study on instance 1 (added
with `Study.add_trials`, Optuna's way of reusing an earlier run) reach the cold instance-2 study's
final best in at most half its trials?

    python warm_optuna.py SAMPLER SEED [FID ...]

SAMPLER is tpe or gp (default settings, seeded with SEED); FIDs default to 1..24; 5-D, 200 trials
each, [-5, 5] per coordinate as benches/bbob_optuna.py. Per function: a cold study on instance 1,
a cold one on instance 2, and one on instance 2 with the first's trials added; the count is the
warm study's own trials until its best is at most the cold instance-2 study's final best (201:
never), as benches/summarize_warm.py counts ours. Prints the table and the summary line.
"""
import statistics
import sys

import ioh
import optuna

from summarize_warm import needed  # the count ours gets, from the same function

DIM = 5
BUDGET = 200


def study_of(sampler: str, seed: int) -> optuna.Study:
    samplers = {"tpe": optuna.samplers.TPESampler, "gp": optuna.samplers.GPSampler}
    return optuna.create_study(sampler=samplers[sampler](seed=seed))


def optimize(study: optuna.Study, fid: int, instance: int) -> list:
    """BUDGET trials of f - f_opt on the instance; the losses of the study's own trials."""
    problem = ioh.get_problem(fid, instance=instance, dimension=DIM)
    f_opt = problem.optimum.y
    before = len(study.trials)

    def objective(trial: optuna.Trial) -> float:
        return problem([trial.suggest_float(f"x{i}", -5.0, 5.0) for i in range(DIM)]) - f_opt

    study.optimize(objective, n_trials=BUDGET)
    return [t.value for t in study.trials[before:]]


def main() -> None:
    sampler, seed = sys.argv[1], int(sys.argv[2])
    fids = [int(a) for a in sys.argv[3:]] or list(range(1, 25))
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    print("| function | cold: trials to its final best | warm: trials to the same | ratio |")
    print("|---|---|---|---|")
    ratios = []
    for fid in fids:
        earlier = study_of(sampler, seed)
        optimize(earlier, fid, 1)
        cold = optimize(study_of(sampler, seed), fid, 2)
        warm_study = study_of(sampler, seed)
        warm_study.add_trials(earlier.trials)
        warm = optimize(warm_study, fid, 2)
        target = min(cold)
        c, w = needed(cold, target), needed(warm, target)
        ratios.append(w / c)
        print(f"| f{fid} | {c} | {w} | {w / c:.2f} |", flush=True)
    half = sum(r <= 0.5 for r in ratios)
    print(f"\noptuna-{sampler} warm at most half the cold study's trials on {half} of {len(ratios)}; "
          f"median ratio {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
