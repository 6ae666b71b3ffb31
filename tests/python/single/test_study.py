"""Ask and tell in one process."""

import math

import pytest

import propulate_rs as pr

SPACE = {"x": pr.Float(-5, 5), "y": pr.Float(-5, 5)}


def sphere(params):
    return params["x"] ** 2 + params["y"] ** 2


def test_several_trials_asked_at_once_count_as_running_and_are_told_in_any_order(tmp_path):
    study = pr.Study(SPACE, "gp", seed=1)
    asked = [study.ask() for _ in range(4)]
    assert study.running == [0, 1, 2, 3]
    assert len({(t.params["x"], t.params["y"]) for t in asked}) == 4
    for trial in reversed(asked):
        study.tell(trial, sphere(trial.params))
    assert study.running == [] and len(study.trials) == 4
    with pytest.raises(KeyError, match="told already"):
        study.tell(asked[0], 1.0)
    with pytest.raises(KeyError, match="never asked"):
        study.tell(99, 1.0)


def test_a_study_saved_and_loaded_goes_on_where_it_was(tmp_path):
    path = tmp_path / "study.json"
    study = pr.Study(SPACE, "tpe", seed=2, gamma=0.2)
    assert study.propagator["name"] == "tpe" and study.propagator["gamma"] == 0.2
    study.optimize(sphere, 10)
    waiting = study.ask()
    study.save(path)
    again = pr.Study.load(path)
    assert again.running == [waiting.number] and len(again.trials) == 10
    # The trial in flight at the save, to run again after the load.
    [in_flight] = again.running_trials
    assert (in_flight.number, in_flight.params) == (waiting.number, waiting.params)
    # The same seed and trials breed the same next child in both.
    assert again.ask().params == study.ask().params
    again.tell(waiting, sphere(waiting.params))
    assert len(again.trials) == 11


def test_the_default_finds_the_spheres_minimum_and_failures_are_recorded():
    study = pr.Study(SPACE, seed=3, budget=40)
    assert study.propagator["name"] == "gp"
    best = study.optimize(sphere, 40)
    assert best.loss < 0.5
    trial = study.ask()
    study.tell(trial, float("nan"))
    trial = study.ask()
    study.tell(trial, ValueError("diverged"))
    trial = study.ask()
    study.tell(trial, "text")
    failures = [t.failure for t in study.trials[-3:]]
    assert failures[0] == "the loss is NaN" and failures[1] == "ValueError: diverged" and "str" in failures[2]
    assert all(math.isinf(t.loss) for t in study.trials[-3:])
    # Unreadable constraints fail the trial as optimize does; it does not stay running.
    trial = study.ask()
    study.tell(trial, 1.0, constraints=[float("nan")])
    assert "'constraints' must be finite numbers" in study.trials[-1].failure, study.trials[-1].failure
    trial = study.ask()
    study.tell(trial, {"loss": 1.0, "constraints": None})
    assert "the loss's 'constraints' is None" in study.trials[-1].failure, study.trials[-1].failure
    assert not study.running
    # A loss's dict whose constraints are None says so.
    result = pr.optimize(lambda p: {"loss": 1.0, "constraints": None}, SPACE, generations=1, no_checkpoint=True,
                         quiet=True)
    assert "the loss's 'constraints' is None" in result.trials[0].failure, result.trials[0].failure


def test_bad_studies_are_refused():
    with pytest.raises(ValueError, match="simplex-annealing"):
        pr.Study(SPACE, "simplex-annealing")
    with pytest.raises(ValueError, match="tpe.*high"):
        pr.Study(SPACE, "tpe", gamma="high")
    with pytest.raises(ValueError, match="tpe has no setting 'gama'; its settings: .*gamma"):
        pr.Study(SPACE, "tpe", gama=0.1)
    for bad in ({"seed": -1}, {"seed": 1.7}, {"budget": 0}, {"workers": True}):
        with pytest.raises(ValueError, match=f"{next(iter(bad))} must be an integer of at least"):
            pr.Study(SPACE, **bad)
    with pytest.raises(KeyError, match="trial -1 was never asked"):
        pr.Study(SPACE).tell(-1, 0.5)
    with pytest.raises(ValueError, match="'x'"):
        pr.Study({"x": pr.Float(2, 1)})
    with pytest.raises(OSError):
        pr.Study.load("/nonexistent/study.json")


def test_enqueued_configurations_are_asked_first_and_survive_a_save(tmp_path):
    study = pr.Study(SPACE, "gp", seed=4)
    study.enqueue({"x": 1.0, "y": -2.0})
    study.enqueue({"x": 0.5, "y": 0.25})
    first = study.ask()
    assert first.params == {"x": 1.0, "y": -2.0}
    study.save(tmp_path / "s.json")
    again = pr.Study.load(tmp_path / "s.json")
    assert again.ask().params == {"x": 0.5, "y": 0.25}
    assert again.ask().params not in ({"x": 1.0, "y": -2.0}, {"x": 0.5, "y": 0.25})
    with pytest.raises(ValueError, match="parameter 'y' has 9"):
        study.enqueue({"x": 0.0, "y": 9.0})
    with pytest.raises(ValueError, match="parameter 'y' is not given"):
        study.enqueue({"x": 0.0})
    with pytest.raises(ValueError, match="parameter 'y' is not given"):
        study.enqueue({"x": 0.0, "y": float("nan")})  # pandas' empty cell
    # A misspelt keyword (Optuna's n_trials) is named, not taken for a propagator's setting.
    with pytest.raises(ValueError, match="Study\\(\\) got n_trials: Study takes space, propagator"):
        pr.Study(SPACE, n_trials=5)
    # Population-based training continues training states, which ask/tell has none of.
    with pytest.raises(ValueError, match="run it with optimize"):
        pr.Study(SPACE, "pbt")


def test_a_told_dicts_other_numbers_are_the_trials_metrics():
    study = pr.Study(SPACE, "random", seed=1)
    study.tell(study.ask(), {"loss": 0.5, "accuracy": 0.9, "path": "/m.pt"})
    assert study.trials[-1].loss == 0.5 and study.trials[-1].metrics == {"accuracy": 0.9}
    import numpy

    study.tell(study.ask(), numpy.bool_(True))
    assert "bool" in study.trials[-1].failure, "a bool is no loss, numpy's neither"
