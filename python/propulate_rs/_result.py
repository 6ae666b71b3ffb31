"""What a run or a study gives back: ``Trial`` records and the ``Result`` of a run."""

import math

from ._native import OWN_COLUMNS

__all__ = ["Trial", "Result"]


def _is_constraint_column(key):
    """Whether ``key`` is one of to_dict's ``constraint_<k>``."""
    return key.startswith("constraint_") and key[len("constraint_"):].isdigit()


class Trial:
    """One evaluation: ``params`` (a dict), ``loss`` (``inf`` when it failed), ``failure`` (the
    reason, or None), where it was bred (``island``, ``worker``, ``generation``), and what it
    recorded: ``objectives``, ``metrics``, ``curve`` (its reports), ``pruned``, ``duration_s``;
    with constraints, ``constraints`` (the values, feasible when each is at most 0) and
    ``feasible`` (``None`` without constraints). ``imported`` is True for an evaluation of an
    earlier run that ``warm_start`` brought in (its ``worker`` is None: none of this run's)."""

    __slots__ = (
        "params", "loss", "failure", "island", "worker", "generation", "number",
        "objectives", "metrics", "curve", "pruned", "duration_s", "lineage", "constraints", "feasible",
        "imported",
    )

    def __init__(self, record, order=None):
        loss = record.get("loss")
        params = record["params"]
        # The search space's order (the engine's JSON sorts the names).
        self.params = {name: params[name] for name in order if name in params} if order else params
        self.loss = math.inf if loss is None else loss
        self.failure = record.get("failure")
        self.island = record.get("island", 0)
        self.imported = record.get("imported", False)
        self.worker = None if self.imported else record.get("worker", 0)
        self.generation = record.get("generation", 0)
        self.number = record.get("number")
        self.objectives = record.get("objectives")
        self.metrics = record.get("metrics") or {}
        self.curve = [tuple(p) for p in record.get("curve", [])]
        self.pruned = record.get("pruned", False)
        self.duration_s = record.get("duration_s")
        self.lineage = record.get("lineage")
        self.constraints = record.get("constraints")
        self.feasible = record.get("feasible")

    @property
    def failed(self):
        """Whether the evaluation failed (raised, returned NaN or no number)."""
        return self.failure is not None

    def to_dict(self):
        """The record as a flat dict: the params by name, then loss, failure, identity, metrics
        and objectives (a row of ``Result.to_pandas()``). A parameter named as one of the other
        keys (``loss``, ``island``, an objective, ...) is ``param_<name>``, as in trials.csv."""
        # trials.csv's own columns and this dict's.
        own = {*OWN_COLUMNS, "number", *(self.objectives or {})}
        row = {}
        for name, value in self.params.items():
            key = name
            while key in own or (key != name and key in self.params) or _is_constraint_column(key):
                key = "param_" + key
            row[key] = value
        row.update(loss=self.loss, failure=self.failure, island=self.island, worker=self.worker,
                   generation=self.generation, duration_s=self.duration_s, pruned=self.pruned)
        if self.number is not None:
            row["number"] = self.number
        if self.constraints is not None:
            row["feasible"] = self.feasible
            row.update({f"constraint_{k + 1}": c for k, c in enumerate(self.constraints)})
        # A metric named as another key is metric_<name>, as in trials.csv.
        for name, value in (self.metrics or {}).items():
            row["metric_" + name if name in row or name in (self.objectives or {}) else name] = value
        for name, value in (self.objectives or {}).items():
            row[name] = value
        return row

    def __repr__(self):
        where = f"island {self.island}, worker {self.worker}, generation {self.generation}"
        if self.imported:
            where = "imported from an earlier run"
        what = f"failed: {self.failure}" if self.failed else f"loss {self.loss:.6g}"
        return f"Trial({self.params}, {what}, {where})"


class Result:
    """A run's outcome, the same on every rank: ``best`` (the best trial), ``islands`` (each
    island's best), ``trials`` (every evaluation, by island, worker and generation), ``front``
    (the Pareto front with several objectives), ``evaluations``, ``failed``, ``pruned``,
    ``resumed`` (evaluations an earlier start of the run made), ``emigrated``, ``wall_s``,
    ``propagator`` (the one it bred with, every setting)."""

    def __init__(self, data, order=None):
        self.best = Trial(data["best"][0], order) if data["best"] else None
        self.islands = [Trial(island[0], order) for island in data["islands"] if island]
        trials = (Trial(t, order) for t in data["trials"])
        self.trials = sorted(trials, key=lambda t: (t.island, -1 if t.worker is None else t.worker, t.generation))
        self.front = [Trial(t, order) for t in data["front"]]
        self.objectives = data["objectives"]
        self.evaluations = data["evaluations"]
        self.failed = data["failed"]
        self.pruned = data["pruned"]
        self.resumed = data["resumed"]
        self.emigrated = data["emigrated"]
        self.wall_s = data["wall_s"]
        self.consistent = data["consistent"]
        self.propagator = data["propagator"]

    def to_pandas(self):
        """Every trial as a ``pandas.DataFrame``, one row each (needs pandas)."""
        try:
            import pandas
        except ImportError:
            raise ImportError("Result.to_pandas() needs pandas: pip install pandas") from None
        return pandas.DataFrame([t.to_dict() for t in self.trials])

    def __repr__(self):
        return (f"Result(best={self.best!r}, evaluations={self.evaluations}, failed={self.failed}, "
                f"islands={len(self.islands)})")
