"""Search spaces in Python: ``Float``, ``Int`` and ``Categorical`` in a dict by name, or
Propulate's ``limits`` dict as it is. Both become the engine's space (JSON); every error names
the parameter. ``when={"optimizer": "sgd"}`` makes a parameter conditional: active only while
that categorical has that choice (or one of a list); an inactive parameter is absent from the
dict the loss gets."""

import json
import math
import numbers
import operator

__all__ = ["Float", "Int", "Categorical"]


class Float:
    """A real number in ``[low, high]``; with ``log=True`` searched evenly in its logarithm
    (``low`` must then be positive)."""

    def __init__(self, low, high, log=False, when=None):
        self.low, self.high, self.log, self.when = low, high, log, when

    def __repr__(self):
        return f"Float({self.low!r}, {self.high!r}{', log=True' if self.log else ''}{_when_repr(self.when)})"

    def _to_engine(self, name):
        low, high = _real(name, "low", self.low), _real(name, "high", self.high)
        if not isinstance(self.log, bool):
            raise ValueError(f"parameter '{name}': log must be True or False, not {self.log!r}")
        return _with_when(name, self.when, {"name": name, "type": "float", "lo": low, "hi": high, "log": self.log})


class Int:
    """An integer in ``[low, high]``, both ends included."""

    def __init__(self, low, high, when=None):
        self.low, self.high, self.when = low, high, when

    def __repr__(self):
        return f"Int({self.low!r}, {self.high!r}{_when_repr(self.when)})"

    def _to_engine(self, name):
        engine = {"name": name, "type": "int", "lo": _integer(name, "low", self.low), "hi": _integer(name, "high", self.high)}
        return _with_when(name, self.when, engine)


class Categorical:
    """One of a list of strings (other values are refused: a parameter's value is what the
    loss gets, the trial tables show and a checkpoint keeps)."""

    def __init__(self, choices, when=None):
        self.choices, self.when = choices, when

    def __repr__(self):
        return f"Categorical({self.choices!r}{_when_repr(self.when)})"

    def _to_engine(self, name):
        # A set has no order that holds from one process to the next (strings hash differently per
        # process): the ranks and a resumed run would number its choices differently.
        if isinstance(self.choices, (str, bytes, set, frozenset, dict)) or not hasattr(self.choices, "__iter__"):
            raise ValueError(f"parameter '{name}': choices must be a list of strings, not {self.choices!r}")
        choices = list(self.choices)
        bad = [c for c in choices if not isinstance(c, str)]
        if bad:
            raise ValueError(f"parameter '{name}': choices must be strings; {bad[0]!r} is not")
        return _with_when(name, self.when, {"name": name, "type": "categorical", "choices": choices})


def _when_repr(when):
    return "" if when is None else f", when={when!r}"


def _with_when(name, when, engine):
    """``engine`` with the conditions of ``when``, a dict of categorical name to the choice (or
    list of choices) under which the parameter is active; all must hold. The engine checks that
    each names a categorical of the space and one of its choices."""
    if when is None:
        return engine
    if not isinstance(when, dict) or not when:
        raise ValueError(
            f"parameter '{name}': when must be a dict such as {{'optimizer': 'sgd'}} or "
            f"{{'optimizer': ['sgd', 'adam']}}, not {when!r}"
        )
    conditions = []
    for param, values in when.items():
        if isinstance(values, str):
            values = [values]
        if not isinstance(param, str) or not isinstance(values, (list, tuple)) or not all(isinstance(v, str) for v in values):
            raise ValueError(
                f"parameter '{name}': when maps a categorical's name to a choice or a list of choices, "
                f"not {param!r}: {values!r}"
            )
        conditions.append({"param": param, "values": list(values)})
    engine["when"] = conditions
    return engine


def _real(name, what, x):
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise ValueError(f"parameter '{name}': {what} must be a number, not {x!r}")
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"parameter '{name}': {what} must be finite, not {x!r}")
    return x


def _integer(name, what, x):
    if isinstance(x, bool):
        raise ValueError(f"parameter '{name}': {what} must be an integer, not {x!r}")
    try:
        x = operator.index(x)  # int, numpy's integers
    except TypeError:
        raise ValueError(f"parameter '{name}': {what} must be an integer, not {x!r}") from None
    if not -(2**63) <= x < 2**63:
        raise ValueError(f"parameter '{name}': {what} must fit in 64 bits, not {x}")
    return x


def _from_limits(name, limits):
    """Propulate's ``limits`` entry: two floats (a float), two ints (an int), strings (a
    categorical)."""
    if not isinstance(limits, (tuple, list)) or len(limits) == 0:
        raise ValueError(
            f"parameter '{name}': {limits!r} is not a space; use Float(low, high), Int(low, high), "
            "Categorical([...]) or Propulate's tuples (0.0, 1.0), (1, 8), ('relu', 'tanh')"
        )
    if all(isinstance(v, str) for v in limits):
        return Categorical(limits)
    if len(limits) != 2:
        raise ValueError(
            f"parameter '{name}': {limits!r}: a numeric range has two values (low, high); "
            "strings make a categorical"
        )
    low, high = limits
    ints = all(not isinstance(v, bool) and isinstance(v, numbers.Integral) for v in limits)
    return Int(low, high) if ints else Float(low, high)


def plain_value(value):
    """A parameter's value as JSON takes it: numpy's scalars as plain numbers, NaN as None (not
    given: what pandas' ``to_dict("records")`` holds for an inactive conditional parameter)."""
    if isinstance(value, (str, bool)) or value is None:
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return None if math.isnan(value) else float(value)
    return value


def space_json(space):
    """The engine's space (JSON) of ``space``, a dict of name to parameter; ``ValueError`` naming
    the parameter for anything wrong in it."""
    if not isinstance(space, dict) or not space:
        raise ValueError(f"the search space must be a non-empty dict of name to parameter, not {space!r}")
    params = []
    for name, param in space.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"parameter names must be non-empty strings, not {name!r}")
        if not isinstance(param, (Float, Int, Categorical)):
            param = _from_limits(name, param)
        params.append(param._to_engine(name))
    return json.dumps(params)
