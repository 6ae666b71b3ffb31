"""Search spaces and options, in one process (mpi4py's singleton world)."""

import pytest

import propulate_rs as pr


def quadratic(params):
    return (params["x"] - 1) ** 2


@pytest.mark.parametrize(
    "space, named",
    [
        ({"lr": pr.Float(1.0, 1.0)}, "'lr'"),
        ({"lr": pr.Float(0.0, 1.0, log=True)}, "'lr'"),
        ({"lr": pr.Float("a", 1.0)}, "'lr'"),
        ({"lr": pr.Float(float("nan"), 1.0)}, "'lr'"),
        ({"n": pr.Int(3, 2)}, "'n'"),
        ({"n": pr.Int(1.5, 2)}, "'n'"),
        ({"n": pr.Int(0, 2**63)}, "'n': high must fit in 64 bits"),
        ({"act": pr.Categorical([])}, "'act'"),
        ({"act": pr.Categorical(["relu", 3])}, "'act'"),
        ({"act": pr.Categorical("relu")}, "'act'"),
        ({"act": pr.Categorical({"relu", "tanh"})}, "'act'"),
        ({"x": (1.0, 2.0, 3.0)}, "'x'"),
        ({"x": "nothing"}, "'x'"),
        ({"x": ()}, "'x'"),
    ],
)
def test_bad_spaces_raise_value_error_naming_the_parameter(space, named):
    with pytest.raises(ValueError, match=named):
        pr.optimize(quadratic, space, generations=1, no_checkpoint=True, quiet=True)


def test_an_empty_or_non_dict_space_is_refused():
    for space in ({}, [("x", (0.0, 1.0))], None):
        with pytest.raises(ValueError, match="non-empty dict"):
            pr.optimize(quadratic, space, no_checkpoint=True)


def test_propulates_limits_are_accepted_as_they_are():
    seen = {}

    def loss(params):
        seen.update({k: type(v) for k, v in params.items()})
        return (params["x"] - 1) ** 2 + params["n"] + (params["act"] != "relu")

    result = pr.optimize(loss, {"x": (-2.0, 2.0), "n": (0, 3), "act": ("relu", "tanh")}, generations=40,
                         propagator="ga", no_checkpoint=True, quiet=True)
    assert seen == {"x": float, "n": int, "act": str}
    assert result.evaluations == 40
    assert 0 <= result.best.params["n"] <= 3 and result.best.params["act"] in ("relu", "tanh")


def test_unknown_and_bad_options_are_errors_naming_them():
    space = {"x": pr.Float(-2, 2)}
    with pytest.raises(TypeError, match="unknown option 'generation'.*generations"):
        pr.optimize(quadratic, space, generation=3)
    with pytest.raises(ValueError, match="many"):
        pr.optimize(quadratic, space, generations="many", no_checkpoint=True)
    with pytest.raises(ValueError, match="propagator"):
        pr.optimize(quadratic, space, propagator="simulated-annealing", no_checkpoint=True, quiet=True)
    with pytest.raises(ValueError, match="True or False"):
        pr.optimize(quadratic, space, pollination="yes", no_checkpoint=True)
    with pytest.raises(ValueError, match="early.stop"):
        pr.optimize(quadratic, space, early_stop="sometimes", no_checkpoint=True, quiet=True)
    with pytest.raises(TypeError, match="unknown option 'function'"):
        pr.optimize(quadratic, space, function="sphere")
    with pytest.raises(TypeError, match="callable"):
        pr.optimize("loss", space)
    # A negative value is the option's, not a flag of its own.
    with pytest.raises(ValueError, match=r"migration probability must be in \[0, 1\], got -0.1"):
        pr.optimize(quadratic, space, migration_probability=-0.1, no_checkpoint=True, quiet=True)


def test_a_dicts_other_values_are_metrics_where_they_are_numbers_and_left_out_where_not():
    def loss(params):
        return {"loss": quadratic(params), "acc": 0.5, "best": True, "path": "/tmp/m.pt", "history": [1, 2],
                "missing": None, "undefined": float("nan")}

    result = pr.optimize(loss, {"x": pr.Float(-2, 2)}, generations=2, no_checkpoint=True, quiet=True)
    assert result.failed == 0
    assert all(t.metrics == {"acc": 0.5, "best": 1.0} for t in result.trials), result.trials[0].metrics


def test_options_are_the_command_lines_run_flags():
    options = pr.options()
    for name in ("generations", "islands", "ranks_per_worker", "propagator", "migration_probability",
                 "pollination", "early_stop", "objectives", "checkpoint", "seed", "out", "tpe_gamma"):
        assert name in options, name
    assert "function" not in options and "local_ranks" not in options


def test_several_objectives_from_a_dict(tmp_path, capfd):
    def loss(params):
        return {"loss": params["x"] ** 2, "size": (params["x"] - 1) ** 2}

    result = pr.optimize(loss, {"x": pr.Float(-1, 2)}, generations=40, objectives=["loss:min", "size:min"],
                         no_checkpoint=True, quiet=True, out=str(tmp_path))
    assert result.failed == 0 and len(result.front) >= 2
    assert all(set(t.objectives) == {"loss", "size"} for t in result.front)
    assert (tmp_path / "front.csv").exists()

    def missing(params):
        return {"size": 1.0}

    result = pr.optimize(missing, {"x": pr.Float(-1, 2)}, generations=3, objectives="loss:min,size:min",
                         no_checkpoint=True, quiet=True)
    assert result.failed == 3
    # The run returns its result: no "error:" (the command line's, which exits with status 3).
    err = capfd.readouterr().err
    assert "propulate-rs: all 3 evaluations failed; there is no best configuration" in err, err

    # A number is the loss, and ctx.record gives the other objective (python.md).
    def recorded(params, ctx):
        ctx.record("accuracy", 1 - params["x"] ** 2)
        return params["x"]

    result = pr.optimize(recorded, {"x": pr.Float(0, 1)}, generations=4, objectives=["loss:min", "accuracy:max"],
                         no_checkpoint=True, quiet=True)
    assert result.failed == 0, [t.failure for t in result.trials]
    assert all(t.objectives["accuracy"] == 1 - t.params["x"] ** 2 for t in result.trials)
    # Neither returned nor recorded: the evaluation fails, naming it.
    result = pr.optimize(lambda params: params["x"], {"x": pr.Float(0, 1)}, generations=2,
                         objectives="accuracy:max", no_checkpoint=True, quiet=True)
    assert result.failed == 2 and "'accuracy'" in result.trials[0].failure


def test_early_stopping_ends_hopeless_trainings_through_ctx_report():
    def loss(params, ctx):
        value = None
        for epoch in range(10):
            value = params["x"] + 1.0 / (epoch + 1)
            if not ctx.report(epoch, value):
                break
        return value

    result = pr.optimize(loss, {"x": pr.Float(0, 10)}, generations=40, early_stop="median", propagator="random",
                         no_checkpoint=True, quiet=True)
    assert result.pruned > 0
    assert all(t.curve for t in result.trials)
    pruned = [t for t in result.trials if t.pruned]
    assert all(len(t.curve) < 10 for t in pruned)


def test_a_ctx_kept_after_its_evaluation_refuses_to_report():
    kept = []

    def loss(params, ctx):
        kept.append(ctx)
        assert ctx.rank == 0 and ctx.size == 1 and ctx.device == "cpu" and ctx.comm.size == 1
        return params["x"]

    pr.optimize(loss, {"x": pr.Float(0, 1)}, generations=2, no_checkpoint=True, quiet=True)
    with pytest.raises(RuntimeError, match="has returned"):
        kept[0].report(1, 0.5)


def test_results_convert_to_pandas():
    pandas = pytest.importorskip("pandas")
    result = pr.optimize(quadratic, {"x": pr.Float(-2, 2)}, generations=5, no_checkpoint=True, quiet=True)
    frame = result.to_pandas()
    assert isinstance(frame, pandas.DataFrame) and len(frame) == 5
    assert {"x", "loss", "island", "worker", "generation"} <= set(frame.columns)


def test_a_parameter_named_as_a_column_keeps_its_value_under_a_prefix():
    space = {"loss": pr.Float(1.0, 2.0), "island": pr.Int(5, 9), "param_loss": pr.Float(3.0, 4.0)}
    result = pr.optimize(lambda p: p["loss"], space, generations=2, no_checkpoint=True, quiet=True)
    row = result.trials[0].to_dict()
    assert row["loss"] == result.trials[0].loss and row["param_param_loss"] == result.trials[0].params["loss"]
    assert 5 <= row["param_island"] <= 9 and row["island"] == 0 and 3.0 <= row["param_loss"] <= 4.0
    # A metric named as a column or a parameter is metric_<name>, as in trials.csv.
    result = pr.optimize(lambda p: {"loss": p["x"], "island": 7, "x": 3, "acc": 0.5}, {"x": pr.Float(0, 1)},
                         generations=1, no_checkpoint=True, quiet=True)
    row = result.trials[0].to_dict()
    assert (row["metric_island"], row["metric_x"], row["acc"], row["island"]) == (7, 3, 0.5, 0), row


def test_enqueued_configurations_are_evaluated_first_in_order():
    seen = []

    def loss(params):
        seen.append(dict(params))
        return (params["x"] - 1) ** 2 + params["n"]

    known = [{"x": 0.25, "n": 2, "act": "tanh"}, {"x": -1.5, "n": 0, "act": "relu"}]
    result = pr.optimize(loss, {"x": pr.Float(-2, 2), "n": pr.Int(0, 3), "act": ["relu", "tanh"]}, generations=6,
                         enqueue=known, no_checkpoint=True, quiet=True)
    assert seen[:2] == known and result.evaluations == 6
    # As pandas' to_dict("records") gives an integer column with an empty cell: 2.0 is 2.
    seen.clear()
    pr.optimize(loss, {"x": pr.Float(-2, 2), "n": pr.Int(0, 3)}, generations=1, enqueue=[{"x": 0.5, "n": 2.0}],
                no_checkpoint=True, quiet=True)
    assert seen[0] == {"x": 0.5, "n": 2} and isinstance(seen[0]["n"], int)
    with pytest.raises(ValueError, match="enqueued configuration 1: parameter 'n' has 7, outside"):
        pr.optimize(loss, {"x": pr.Float(-2, 2), "n": pr.Int(0, 3)}, enqueue=[{"x": 0.0, "n": 7}],
                    no_checkpoint=True, quiet=True)
    with pytest.raises(ValueError, match="list of dicts"):
        pr.optimize(loss, {"x": pr.Float(-2, 2)}, enqueue=[0.5], no_checkpoint=True)
    seen.clear()
    result = pr.optimize(loss, {"x": pr.Float(-2, 2), "n": pr.Int(0, 3)}, generations=1, enqueue=[],
                         no_checkpoint=True, quiet=True)
    assert result.evaluations == 1 and result.failed == 0


CONDITIONAL = {
    "optimizer": pr.Categorical(["sgd", "adam"]),
    "lr": pr.Float(1e-3, 1.0, log=True),
    "momentum": pr.Float(0.0, 0.99, when={"optimizer": "sgd"}),
    "beta2": pr.Float(0.9, 0.9999, when={"optimizer": ["adam"]}),
    "layers": pr.Int(1, 4, when={"optimizer": "adam"}),
}


def conditional_loss(params):
    expected = {"optimizer", "lr"} | ({"momentum"} if params["optimizer"] == "sgd" else {"beta2", "layers"})
    assert set(params) == expected, params
    return params["lr"] + (1 - params["momentum"] if params["optimizer"] == "sgd" else params["layers"])


@pytest.mark.parametrize("propagator", ["ga", "tpe", "gp"])
def test_a_conditional_parameter_reaches_the_loss_only_when_its_condition_holds(propagator):
    # The enqueued configurations leave out what their branch does not use: both branches run.
    known = [{"optimizer": "sgd", "lr": 0.1, "momentum": 0.5}, {"optimizer": "adam", "lr": 0.1, "beta2": 0.99, "layers": 2}]
    result = pr.optimize(conditional_loss, CONDITIONAL, generations=16, propagator=propagator, enqueue=known,
                         no_checkpoint=True, quiet=True)
    assert result.evaluations == 16 and all(t.failure is None for t in result.trials)
    assert [t.params for t in result.trials[:2]] == known
    study = pr.Study(CONDITIONAL, propagator, seed=3)
    for _ in range(12):
        trial = study.ask()
        study.tell(trial, conditional_loss(trial.params))
    assert len(study.trials) == 12


@pytest.mark.parametrize(
    "when, message",
    [
        ("sgd", "when must be a dict"),
        ({"optimizer": 1}, "when maps a categorical's name"),
        ({"optimiser": "sgd"}, "'momentum': its condition names 'optimiser', which is not a parameter"),
        ({"lr": "sgd"}, "'lr', which is not categorical"),
        ({"optimizer": "rmsprop"}, "'rmsprop', which is not one of its choices"),
    ],
)
def test_bad_conditions_raise_value_error_naming_the_parameter(when, message):
    space = dict(CONDITIONAL, momentum=pr.Float(0.0, 0.99, when=when))
    with pytest.raises(ValueError, match=message):
        pr.optimize(conditional_loss, space, generations=1, no_checkpoint=True, quiet=True)
    with pytest.raises(ValueError, match=message):
        pr.Study(space, "tpe")


def constrained_loss(params):
    x, y = params["x"], params["y"]
    return {"loss": x * x + y * y, "constraints": [1 - x - y]}


def test_constraints_from_the_losss_dict_and_from_tell_rank_feasible_first():
    space = {"x": pr.Float(0.0, 1.0), "y": pr.Float(0.0, 1.0)}
    result = pr.optimize(constrained_loss, space, generations=20, no_checkpoint=True, quiet=True)
    feasible = [t for t in result.trials if t.feasible]
    assert feasible and all(len(t.constraints) == 1 for t in result.trials)
    assert result.best.feasible and result.best.loss == min(t.loss for t in feasible)
    assert "constraints" not in result.best.metrics and "constraint_1" in result.trials[0].to_dict()
    study = pr.Study(space, "gp", seed=2)
    for k in range(14):
        trial = study.ask()
        value = constrained_loss(trial.params)
        if k % 2:
            study.tell(trial, value)
        else:
            study.tell(trial, value["loss"], constraints=value["constraints"])
    best = study.best
    assert best.params["x"] + best.params["y"] >= 1 - 1e-12
    failed = pr.optimize(lambda p: {"loss": 1.0, "constraints": [float("nan")]}, space, generations=1,
                         no_checkpoint=True, quiet=True).trials[0]
    assert "the loss's 'constraints' must be finite numbers" in failed.failure
    import numpy

    scalar = pr.optimize(lambda p: {"loss": 1.0, "constraints": numpy.array(-0.5)}, space,
                         generations=1, no_checkpoint=True, quiet=True).trials[0]
    assert scalar.failure is None and scalar.constraints == [-0.5] and scalar.feasible


def test_a_run_warm_starts_from_an_earlier_runs_checkpoint(tmp_path):
    space = {"x": pr.Float(-2.0, 2.0)}
    earlier = pr.optimize(quadratic, space, generations=8, checkpoint=tmp_path / "a", quiet=True)
    later = pr.optimize(quadratic, space, generations=3, checkpoint=tmp_path / "b", warm_start=[tmp_path / "a"],
                        quiet=True)
    assert later.evaluations == 3 and later.best.loss <= earlier.best.loss
    # An imported best says so, with no worker of this run.
    assert later.best.imported == (later.best.loss == earlier.best.loss), later.best
    assert (later.best.worker is None) == later.best.imported
    assert ("imported from an earlier run" in repr(later.best)) == later.best.imported
    # The command line's messages name the options as given here, not its flags.
    with pytest.raises(ValueError, match="'no_checkpoint=True' cannot be used with 'warm_start='"):
        pr.optimize(quadratic, space, generations=1, no_checkpoint=True, warm_start=tmp_path / "a", quiet=True)
    with pytest.raises(ValueError, match="parameter 'y' of the search space is not in the earlier run"):
        pr.optimize(quadratic, {"x": pr.Float(-2.0, 2.0), "y": pr.Float(0.0, 1.0)}, generations=1,
                    checkpoint=tmp_path / "c", warm_start=tmp_path / "a", quiet=True)


def _defined_in(file, body):
    """The function ``loss`` compiled as if it were defined in the script ``file``."""
    namespace = {}
    exec(compile(f"def loss(params):\n    return {body}\n", file, "exec"), namespace)  # noqa: S102
    return namespace["loss"]


def test_another_scripts_loss_of_the_same_name_does_not_resume_the_run(tmp_path):
    space = {"x": pr.Float(-2.0, 2.0)}
    first = _defined_in("/jobs/train.py", "params['x'] ** 2")
    pr.optimize(first, space, generations=2, checkpoint=tmp_path / "ck", quiet=True)
    again = pr.optimize(_defined_in("/elsewhere/train.py", "params['x'] ** 2"), space, generations=3,
                        checkpoint=tmp_path / "ck", quiet=True)
    assert again.resumed == 2 and again.evaluations == 3, "the same script elsewhere resumes"
    copy = _defined_in("/jobs/train_v2.py", "(params['x'] - 1) ** 2")
    with pytest.raises(RuntimeError, match='loss_source: checkpoint has "train.py:loss", this run has "train_v2.py:loss"'):
        pr.optimize(copy, space, generations=4, checkpoint=tmp_path / "ck", quiet=True)


def test_a_copy_torchrun_started_is_refused(job_env):
    """torchrun starts copies that each see an MPI world of one: each would search on its own, on
    one checkpoint. The copies it numbered above 0 refuse, saying why."""
    import subprocess
    import sys

    script = ("import propulate_rs as pr\n"
              "pr.optimize(lambda p: p['x'], {'x': pr.Float(0, 1)}, generations=1, no_checkpoint=True, quiet=True)")
    env = dict(job_env, RANK="1", LOCAL_RANK="1", WORLD_SIZE="2", LOCAL_WORLD_SIZE="2")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0, done.stdout
    assert "RuntimeError: this process is rank 1 of the job its launcher started (RANK=1)" in done.stderr, done.stderr

