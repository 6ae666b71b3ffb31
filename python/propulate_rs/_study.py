"""Ask and tell in one process: ``Study(space)``, ``study.ask()``, run the trial anywhere (a
notebook, Dask, Ray, a Slurm array), ``study.tell(trial, loss)``. Trials asked and not yet told
count as running, as a run's busy workers do: the GP and TPE keep the next ones away from them."""

import json
import math
import numbers

from . import _native
from ._optimize import _as_number, _constraints, _named_numbers
from ._result import Trial
from ._space import plain_value, space_json

__all__ = ["Study", "AskedTrial"]


class AskedTrial:
    """A trial to run: its ``number`` and its ``params`` (a dict)."""

    __slots__ = ("number", "params")

    def __init__(self, number, params):
        self.number, self.params = number, params

    def __repr__(self):
        return f"AskedTrial({self.number}, {self.params})"


class Study:
    """A search run by the caller, one trial at a time or several at once.

    ``propagator``: ``"auto"`` (picked for the space and ``budget`` trials, as a run's ``auto``),
    or a name (``gp``, ``tpe``, ``cmaes``, ``ga``, ``pso``, ``nm``, ``random``, ...) with its
    settings as keywords by their field names (``Study(space, "tpe", gamma=0.1)``; a name it does
    not have is a ``ValueError`` listing those it has); ``workers``:
    how many trials will run at once (the genetic propagator's pool sizes follow it)."""

    def __init__(self, space, propagator="auto", *, seed=0, budget=200, workers=1, **settings):
        if not isinstance(propagator, str):
            raise TypeError(f"propagator is a name, not {propagator!r}")
        self._order = list(space) if isinstance(space, dict) else None
        counts = {"seed": (seed, 0), "budget": (budget, 1), "workers": (workers, 1)}
        for name, (value, least) in counts.items():
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least:
                raise ValueError(f"{name} must be an integer of at least {least}, not {value!r}")
        self._native = _native._Study(space_json(space), propagator, json.dumps(settings), int(seed), int(budget),
                                      int(workers))

    @classmethod
    def load(cls, path):
        """The study saved at ``path`` (``Study.save``), with its trials running and told."""
        study = cls.__new__(cls)
        study._native = _native._Study.load(str(path))
        study._order = study._native.names()
        return study

    def save(self, path):
        """Save the study (the space, the propagator with every setting, every trial) to ``path``."""
        self._native.save(str(path))

    def enqueue(self, params):
        """Have the next ``ask`` return ``params`` (a dict of every parameter), before anything is
        bred; several are asked in the order enqueued. ``ValueError`` names a parameter that is
        missing, unknown or outside the space."""
        if not isinstance(params, dict):
            raise ValueError(f"enqueue takes a dict of parameter name to value, not {params!r}")
        self._native.enqueue(json.dumps({str(k): plain_value(v) for k, v in params.items()}))

    def ask(self):
        """The next trial to run."""
        number, params = self._native.ask()
        return AskedTrial(number, params)

    def tell(self, trial, loss, constraints=None):
        """File ``trial``'s result: a number, or the exception it raised (a failed trial); NaN, an
        infinity or a non-number is a failed trial too. ``constraints``: the values measured
        (feasible when each is at most 0), also given as a dict ``{"loss": ..., "constraints":
        [...]}``, whose other numbers are kept as the trial's ``metrics`` (as ``optimize`` keeps
        them)."""
        number = trial.number if isinstance(trial, AskedTrial) else int(trial)
        if number < 0:
            raise KeyError(f"trial {number} was never asked (trials are numbered from 0)")
        metrics = {}
        given = constraints is not None
        if isinstance(loss, dict):
            metrics = _named_numbers(loss)
            given = given or "constraints" in loss
            constraints = loss.get("constraints", constraints)
            loss = loss.get("loss")
        if given:
            # Unreadable constraints fail the trial, as optimize records them, instead of raising
            # here and leaving it running.
            try:
                constraints = _constraints(constraints)
            except (TypeError, ValueError) as e:
                self._native.tell(number, None, str(e))
                return
        if isinstance(loss, BaseException):
            self._native.tell(number, None, f"{type(loss).__name__}: {loss}")
            return
        try:
            value = _as_number("the loss", loss)
        except TypeError as e:
            self._native.tell(number, None, str(e))
            return
        if math.isnan(value):
            self._native.tell(number, None, "the loss is NaN")
            return
        self._native.tell(number, value, None, constraints, metrics)

    def optimize(self, loss, n_trials):
        """Ask, evaluate ``loss(params)`` and tell, ``n_trials`` times in this process; an
        ``Exception`` fails its trial and the study goes on."""
        for _ in range(n_trials):
            trial = self.ask()
            try:
                value = loss(trial.params)
            except Exception as e:  # noqa: BLE001 - a failed trial, recorded with its message
                value = e
            self.tell(trial, value)
        return self.best

    @property
    def trials(self):
        """Every trial told, in the order told."""
        return [Trial(t, self._order) for t in json.loads(self._native.trials())]

    @property
    def running(self):
        """The numbers of the trials asked and not told."""
        return self._native.running()

    @property
    def running_trials(self):
        """The trials asked and not told, as ``ask`` gave them (``number``, ``params``): after
        ``Study.load``, the ones to run again and tell."""
        return [AskedTrial(number, params) for number, params in self._native.running_trials()]

    @property
    def best(self):
        """The best trial told so far (None before the first success): with constraints the
        feasible one of lowest loss, or while none is feasible the one of least violation."""
        done = [t for t in self.trials if not t.failed]

        def rank(t):
            if t.feasible is not False:
                return (0, t.loss)
            return (1, sum(max(c, 0.0) for c in t.constraints))

        return min(done, key=rank) if done else None

    @property
    def propagator(self):
        """The propagator with every setting (``name`` among them)."""
        return json.loads(self._native.propagator())
