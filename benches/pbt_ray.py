"""Ray Tune's PopulationBasedTraining on the program propulate-rs runs (benches/pbt.sh).

    python benches/pbt_ray.py --members 4 --steps 8 --interval 1 --seed 1 --work DIR -- PYTHON train.py ARGS...

Each trial is one member. Every interval starts the program once, as propulate-rs does for a
command trial under --propagator pbt, with the same variables: PROPULATE_RESTORE_FROM (the
directory of the checkpoint Ray hands the trial: its own last one, or the one it exploited),
PROPULATE_SAVE_TO, PROPULATE_STEP, PROPULATE_STEPS and PROPULATE_RESULT; the directory it saved
into becomes the Ray checkpoint of the report. With --start, the members start from the given
hyperparameters (benches/pbt.sh passes propulate-rs's first members of the same seed); otherwise
Ray draws them. The hyperparameters are those of
tutorials/pytorch_ddp/space.toml; conv_layers and activation stay fixed under exploitation (a
saved network of another shape cannot be loaded), as --pbt-fixed does for propulate-rs.

Every finished interval appends `{"end": its end as Unix time, "loss": ..., "step": ...}` to
WORK/evaluations.jsonl, which the summary reads as the best loss reached by wall time.
"""

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time

START = time.time()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--members", type=int, default=4)
    p.add_argument("--steps", type=int, default=8, help="steps (epochs) per member in all")
    p.add_argument("--interval", type=int, default=1, help="steps per evaluation")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--cpus", type=int, default=os.cpu_count())
    p.add_argument("--work", required=True)
    p.add_argument("--start", help="a JSON list of the members' first hyperparameters (else drawn by Ray)")
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    work = os.path.abspath(args.work)
    os.makedirs(work, exist_ok=True)
    log = os.path.join(work, "evaluations.jsonl")

    import numpy as np
    import ray
    from ray import tune
    from ray.tune.schedulers import PopulationBasedTraining
    from ray.tune.search.basic_variant import BasicVariantGenerator

    # Ray's initial samples and PBT's explore draw from Python's and NumPy's generators.
    random.seed(args.seed)
    np.random.seed(args.seed)
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)

    interval, steps = args.interval, args.steps

    def member(config):
        step, restore = 0, None
        checkpoint = tune.get_checkpoint()
        if checkpoint is not None:
            restore = checkpoint.to_directory()
            with open(os.path.join(restore, "step.json")) as f:
                step = json.load(f)["step"]
        while step < steps:
            save_to = tempfile.mkdtemp(prefix="state-", dir=work)
            env = dict(os.environ, PROPULATE_SAVE_TO=save_to, PROPULATE_STEP=str(step),
                       PROPULATE_STEPS=str(min(interval, steps - step)),
                       PROPULATE_RESULT=os.path.join(save_to, "result.json"))
            env.pop("PROPULATE_RESTORE_FROM", None)
            env["MASTER_PORT"] = str(free_port())  # a process group of one per training, as propulate-rs gives
            if restore:
                env["PROPULATE_RESTORE_FROM"] = restore
            flags = [f"--{k}={v}" for k, v in sorted(config.items())]
            subprocess.run(command + flags, env=env, check=True, stdout=subprocess.DEVNULL)
            with open(os.path.join(save_to, "result.json")) as f:
                loss = json.load(f)["loss"]
            step += min(interval, steps - step)
            with open(os.path.join(save_to, "step.json"), "w") as f:
                json.dump({"step": step}, f)
            with open(log, "a") as f:  # one short line per append: whole lines from every trial
                f.write(json.dumps({"end": time.time(), "loss": loss, "step": step}) + "\n")
            tune.report({"loss": loss, "step": step}, checkpoint=tune.Checkpoint.from_directory(save_to))
            restore = save_to

    mutations = {"lr": tune.loguniform(1e-4, 1e-2), "gamma": tune.uniform(0.5, 0.999)}
    space = dict(mutations, conv_layers=tune.randint(2, 11), activation=tune.choice(["relu", "sigmoid", "tanh"]))
    scheduler = PopulationBasedTraining(time_attr="training_iteration", perturbation_interval=1,
                                        hyperparam_mutations=mutations, quantile_fraction=0.25,
                                        resample_probability=0.25)
    # The same first members as propulate-rs's run: what differs is then what PBT does with them.
    start = json.load(open(args.start)) if args.start else None
    tuner = tune.Tuner(
        tune.with_resources(member, {"cpu": args.cpus / args.members}),
        param_space=space,
        tune_config=tune.TuneConfig(scheduler=scheduler, metric="loss", mode="min", num_samples=args.members,
                                    max_concurrent_trials=args.members,
                                    search_alg=BasicVariantGenerator(points_to_evaluate=start, random_state=args.seed)),
        run_config=tune.RunConfig(name="pbt", storage_path=os.path.join(work, "ray"), verbose=0,
                                  stop={"step": steps}),
    )
    results = tuner.fit()
    best = results.get_best_result(metric="loss", mode="min", scope="all")
    print(json.dumps({"best": best.metrics["loss"], "seconds": round(time.time() - START, 1)}))
    sys.stdout.flush()
    ray.shutdown()


if __name__ == "__main__":
    main()
