"""``optimize(loss, space, **options)``: the asynchronous islands with a Python loss, on the
ranks of ``mpirun -np N python -m mpi4py script.py`` (or alone in one process).

The options are the run flags of the ``propulate-rs`` command line, named with underscores
(``migration_probability=0.9`` is ``--migration-probability 0.9``): the engine parses them as the
command line does, so the defaults, checks, checkpoint and result files are the command line's."""

import difflib
import functools
import inspect
import json
import math
import numbers
import os
import socket
import sys
import tempfile

from . import _native
from ._result import Result
from ._space import plain_value, space_json

__all__ = ["optimize", "options"]


def options():
    """The options ``optimize`` takes, as a dict of name to its help."""
    return {name: help for name, _flag, _switch, help in _native.options()}


# Options whose flag is given once per value (a list repeats it).
_REPEATED = {"warm_start"}


def _words(opts):
    """The command line's words for ``opts``; ``TypeError`` for an option it does not have."""
    table = {name: (flag, switch) for name, flag, switch, _help in _native.options()}
    words = []
    for name, value in opts.items():
        if name not in table:
            close = difflib.get_close_matches(name, table, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else f"; options: {', '.join(sorted(table))}"
            raise TypeError(f"optimize() got an unknown option '{name}'{hint}")
        flag, switch = table[name]
        if value is None:
            continue
        if switch:
            if not isinstance(value, bool):
                raise ValueError(f"option {name} is True or False, not {value!r}")
            if value:
                words.append(flag)
            continue
        if isinstance(value, bool):
            raise ValueError(f"option {name} takes a value ({flag} VALUE), not {value!r}")
        # FLAG=VALUE, so that a negative number is read as the flag's value, not as a flag.
        if isinstance(value, (list, tuple)) and name in _REPEATED:
            for v in value:
                words.append(f"{flag}={os.fspath(v) if isinstance(v, os.PathLike) else v}")
            continue
        if isinstance(value, (list, tuple)):
            value = ",".join(str(v) for v in value)
        elif isinstance(value, os.PathLike):
            value = os.fspath(value)
        words.append(f"{flag}={value}")
    return words


def _objective_names(value):
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else list(value)
    return [str(item).split(":")[0].strip() for item in items]


def _takes_context(loss):
    """Whether ``loss`` takes ``(params, ctx)`` rather than ``(params)``."""
    try:
        signature = inspect.signature(loss)
    except (TypeError, ValueError):
        return True
    positional = [p for p in signature.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    if any(p.kind == p.VAR_POSITIONAL for p in positional):
        return True
    if len(positional) < 1:
        raise TypeError(f"the loss {loss!r} must take the candidate's params: loss(params) or loss(params, ctx)")
    return len(positional) >= 2


def _is_bool(value):
    """A Python or numpy bool: ``float()`` would take it as 0 or 1."""
    return isinstance(value, bool) or (type(value).__module__ == "numpy" and type(value).__name__.startswith("bool"))


def _as_number(what, value):
    if isinstance(value, (str, bytes)) or _is_bool(value) or value is None:
        raise TypeError(f"{what} is {value!r} ({type(value).__name__}), not a number")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{what} is {value!r} ({type(value).__name__}), not a number") from None


def _evaluation(loss, with_context, comm, objectives):
    """The function the engine calls per candidate and rank: the user's loss, its value as a float
    and the objectives of a dict recorded as metrics (the engine takes each by name)."""

    def evaluate(params, ctx):
        ctx.comm = comm
        value = loss(params, ctx) if with_context else loss(params)
        if isinstance(value, dict):
            if "constraints" in value:
                ctx.set_constraints(_constraints(value["constraints"]))
            for name, x in _named_numbers(value, objectives).items():
                ctx.record(name, x)
            if "loss" in value:
                return _as_number("the loss's 'loss'", value["loss"])
            if not objectives or "loss" in objectives:
                raise ValueError(f"the loss returned a dict without 'loss' ({', '.join(map(str, value))}): "
                                 "return a number, a dict with 'loss', or declare objectives=[...] without it")
            return 0.0  # not an objective of this run: the engine reads the metrics
        # A number is the loss; the other objectives are what ctx.record gave (the engine takes
        # each by name, and fails the evaluation, naming it, where one is missing).
        return _as_number("the loss", value)

    return evaluate


def _named_numbers(value, objectives=()):
    """A loss's dict's values other than ``loss`` and ``constraints``, by name: each objective a
    number (else an error), the others as metrics where they are numbers (``_metric``)."""
    named = {}
    for name, x in value.items():
        name = str(name)
        if name in ("loss", "constraints"):
            continue
        if name in objectives:
            x = _as_number(f"the loss's '{name}'", x)
            if math.isnan(x):
                raise ValueError(f"the loss's '{name}' is NaN")
            named[name] = x
        elif (metric := _metric(x)) is not None:
            named[name] = metric
    return named


def _metric(x):
    """Another value of a loss's dict as a metric, as the command line's result file keeps them:
    a finite number (a bool as 0 or 1), else ``None``: left out (a path, a list, a NaN), which
    does not fail the evaluation."""
    if isinstance(x, bool):
        return float(x)
    if isinstance(x, (str, bytes)) or x is None or getattr(x, "ndim", 0) != 0:
        return None
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _constraints(values):
    """The constraint values of a loss's dict (feasible when each is at most 0): a list of finite
    numbers, or one number (a numpy or torch scalar included)."""
    if values is None:
        raise TypeError("the loss's 'constraints' is None: give a list of numbers, or leave the key out")
    if isinstance(values, (str, bytes)) or getattr(values, "ndim", None) == 0 or not hasattr(values, "__iter__"):
        values = [values]
    numbers = [_as_number("a constraint of the loss's 'constraints'", c) for c in values]
    if not all(math.isfinite(c) for c in numbers):
        raise ValueError(f"the loss's 'constraints' must be finite numbers, not {numbers!r}")
    return numbers


def _library_check(MPI):
    ours, theirs = _native.mpi_library_version(), MPI.Get_library_version().strip()
    if ours.split(",")[0] != theirs.split(",")[0]:
        raise RuntimeError(
            f"propulate_rs was built against '{ours.splitlines()[0]}', but mpi4py loaded "
            f"'{theirs.splitlines()[0]}': two MPI libraries in one process crash it. Build mpi4py against "
            "the same MPI (pip install --no-binary mpi4py mpi4py) or set MPI4PY_LIBMPI"
        )


def _loss_source(loss):
    """Where ``loss`` is defined, as its checkpoint records it: ``train.py:loss`` (the file's name
    and the function's qualified name; a partial's function, a callable object's class), so that
    a copy of the script with another loss of the same name does not resume this run. Just the
    qualified name where the file says nothing lasting (a notebook's cell, the interactive prompt)."""
    while isinstance(loss, functools.partial):
        loss = loss.func
    code = getattr(loss, "__code__", None)
    if code is None:
        loss = type(loss)
        path = getattr(sys.modules.get(loss.__module__), "__file__", None)
    else:
        path = code.co_filename
    qualname = getattr(loss, "__qualname__", None) or type(loss).__qualname__
    if not path or path.startswith("<") or "ipykernel" in path:
        return qualname
    return f"{os.path.basename(path)}:{qualname}"


def _free_port():
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _torch_environment(worker_comm):
    """torch.distributed's variables for this rank's worker (``init_process_group()`` reads
    ``MASTER_ADDR``, ``MASTER_PORT``, ``RANK``, ``WORLD_SIZE``): the worker's first rank is the
    master, on a port it found free; ``LOCAL_RANK`` counts the worker's ranks on this host.
    Written to ``os.environ``, which Python's and C's readers both see."""
    from mpi4py import MPI

    host = socket.gethostname()
    hosts = worker_comm.allgather(host)
    master = "127.0.0.1" if len(set(hosts)) == 1 else hosts[0]
    port = worker_comm.bcast(_free_port() if worker_comm.rank == 0 else None, root=0)
    local = worker_comm.Split_type(MPI.COMM_TYPE_SHARED, key=worker_comm.rank)
    try:
        local_rank, local_size = local.rank, local.size
    finally:
        local.Free()
    os.environ.update(
        MASTER_ADDR=master,
        MASTER_PORT=str(port),
        RANK=str(worker_comm.rank),
        WORLD_SIZE=str(worker_comm.size),
        LOCAL_RANK=str(local_rank),
        LOCAL_WORLD_SIZE=str(local_size),
    )


def optimize(loss, space, *, comm=None, **opts):
    """Minimize ``loss`` over ``space`` with the asynchronous islands; collective over ``comm``
    (default: every rank of the job). Call it on every rank::

        result = propulate_rs.optimize(loss, {"lr": Float(1e-4, 1e-1, log=True)},
                                       generations=50, islands=2)

    ``loss(params)`` or ``loss(params, ctx)`` returns a number, or with ``objectives=`` a dict of
    them by name; raising an ``Exception``, NaN or a non-number fails that evaluation (its message
    kept) and the run goes on. Options: the command line's run flags with underscores (see
    ``propulate_rs.options()``). The run resumes from its checkpoint (``checkpoint=DIR``, default
    ``checkpoints/<loss name>-seed<seed>``) when started again. Returns a ``Result``, the same on
    every rank."""
    from mpi4py import MPI

    if not callable(loss):
        raise TypeError(f"the loss must be callable, not {loss!r}")
    _library_check(MPI)
    comm = MPI.COMM_WORLD if comm is None else comm
    # torchrun (or srun without its MPI plugin) starts copies that each see a world of one: each
    # would search on its own, all on one checkpoint. A communicator chosen by hand is the user's.
    if comm == MPI.COMM_WORLD and comm.size == 1:
        why = _native.copy_outside_the_mpi_world()
        if why is not None:
            raise RuntimeError(why)
    enqueue_file = _enqueue_file(opts)
    try:
        return _optimize(MPI, loss, space, comm, opts)
    finally:
        if enqueue_file is not None:
            os.unlink(enqueue_file)


def _enqueue_file(opts):
    """``enqueue=[{...}, ...]``: the configurations as a JSON-lines file for ``--enqueue`` (its
    path replaces the list in ``opts``); a path is taken as it is."""
    known = opts.get("enqueue")
    if known is None or isinstance(known, (str, os.PathLike)):
        return None
    if isinstance(known, (list, tuple)) and not known:
        opts["enqueue"] = None  # nothing known in advance
        return None
    if not isinstance(known, (list, tuple)) or not all(isinstance(c, dict) for c in known):
        raise ValueError("option enqueue is a list of dicts (parameter name to value) or a file's path")
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for configuration in known:
            f.write(json.dumps({str(k): plain_value(v) for k, v in configuration.items()}) + "\n")
    opts["enqueue"] = f.name
    return f.name


def _optimize(MPI, loss, space, comm, opts):
    words = _words(opts)
    engine_space = space_json(space)
    with_context = _takes_context(loss)
    ranks_per_worker = opts.get("ranks_per_worker") or 1
    if isinstance(ranks_per_worker, bool) or not isinstance(ranks_per_worker, numbers.Integral) or ranks_per_worker < 1:
        raise ValueError(f"option ranks_per_worker must be a positive integer, not {ranks_per_worker!r}")
    name = getattr(loss, "__name__", None) or type(loss).__name__
    if not name.isidentifier():
        name = "loss"
    source = _loss_source(loss)
    worker_comm = comm.Split(color=comm.rank // ranks_per_worker, key=comm.rank)
    try:
        _torch_environment(worker_comm)
        evaluate = _evaluation(loss, with_context, worker_comm, _objective_names(opts.get("objectives")))
        data = json.loads(_native.run(evaluate, engine_space, words, MPI._addressof(comm), name, source))
        # World rank 0 holds every trial, and the Pareto front of them all (the other ranks' front
        # is of the islands' members, which pollination leaves apart): every rank gets rank 0's.
        for key in ("trials", "front"):
            data[key] = comm.bcast(data[key] if comm.rank == 0 else None, root=0)
        return Result(data, order=list(space))
    finally:
        worker_comm.Free()
