"""``solve(..., adjoint=True)`` and ``Solution.vjp``: reverse-mode gradients of an ensemble solve.

The forward solve runs ``hawk.ode.adjoint.recording_kernel`` in place of the adaptive kernel
(the same steps, the same end state bit for bit) and keeps each sample's accepted steps: the
state at the step's start, its time and its size, ``adjoint_steps`` rows per sample at most,
``(k + 2) * 8`` bytes a row for ``k`` states (float64). ``vjp`` then runs
``hawk.ode.adjoint.backward_kernel`` over those rows, last first, from the cotangent of the end
state and/or of the ``saveat`` states (through the interpolant that made them).

The gradient is that of the computed solution's step map at its accepted steps: each step's
size is held fixed, the controller's dependence on ``p`` and ``u0`` left out (as discrete
adjoints with fixed accepted steps do; that part is of the order of the tolerances). It agrees
with ``sensitivity="p"`` contracted with the same cotangent to the tolerances' scale, and with
finite differences of the same steps replayed to rounding.

A terminal event's time moves with ``p`` and ``u0``: the last step of a sample it ended is
differentiated through ``g(u(t*), t*) = 0`` on the step's interpolant (implicit
differentiation, as ``Solution.dt_dp`` is by forward sensitivities).

With ``table_gradients=True`` the backward pass also gives the cotangents of the tables'
values (``Gradients.tables``): each step's share (``hawk.table_values``: a read's cotangent to
the element it read, ``interp``'s two neighbours weighted as it interpolates) is added to a
per-sample vector of every table element together, ``MAX_TABLE_GRADIENT_ELEMENTS`` (64) at most
(``8 * elements`` bytes per sample in float64); the per-sample vectors are then summed over the
samples left to right on the host, as a shared ``p``'s are, so the sum is the same bit for bit
whatever the threads or chunking. Asking costs a backward kernel compiled for those sizes and,
per step, one ``SELECT`` per read of a table and element: so it is asked for, not always on.

Everything the adjoint cannot take is refused here by name, before anything is compiled or run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from hawk import ode as hawk_ode
from hawk.ode.adjoint import (
    ADJOINT_METHODS,
    MAX_TABLE_GRADIENT_ELEMENTS,
    SAVES_PER_STEP,
    backward_kernel,
    gradient_type,
    recording_kernel,
)

from ..runner import until_done
from . import arguments as args

__all__ = ["Record", "Gradients", "check", "check_tables", "scratch", "kernel",
           "check_least_steps", "check_budget", "refuse_budget", "check_request", "backward_pass",
           "run_backward", "per_table", "vjp", "DEFAULT_STEPS"]

#: the accepted steps kept per sample unless ``adjoint_steps=`` says otherwise
DEFAULT_STEPS = 1024


class Gradients(NamedTuple):
    """What ``Solution.vjp`` returns: the cotangents of the solve's inputs.

    Attributes:
        p: shaped as the ``p`` the solve bound: per sample ``(n,)``, ``(m, n)`` or
            ``(r, c, n)``; for a ``p`` shared by every sample (a number, ``(m,)`` or
            ``(r, c)``), the per-sample cotangents summed over the samples left to right (on
            the host), so the sum is the same bit for bit on every run.
        u0: shaped as ``u0``.
        args: for a solve given ``args=`` (then ``p`` is None), one cotangent per argument,
            shaped as it: per sample with the samples as the last axis, or, for an argument
            shared by every sample, summed over the samples as ``p`` is; None otherwise.
        tables: for a solve given ``table_gradients=True``, the cotangents of the tables'
            values, one array per table shaped as it (the tables are shared by every sample:
            summed over the samples as a shared ``p`` is); None otherwise.
    """

    p: object
    u0: object
    args: tuple | None = None
    tables: tuple | None = None


@dataclass(frozen=True)
class Record:
    """What the backward pass needs of a solve made with ``adjoint=True``.

    Attributes:
        f: the right-hand side the kernel integrated (in ``s = -t`` for a backward solve).
        state, params: the kernel's types of ``u`` and ``p``.
        table_dims: the dimensions of the model's tables.
        method: the method's name.
        shared: whether ``p`` is one for every sample.
        column: ``u0`` was given as ``(1, n)``.
        tables: the model's tables as bound (``table0``...).
        first_save: with ``saveat``, each sample's first recorded time's index (int64);
            else None.
        event: the terminal event (in the kernel's time), or None.
        direction: its direction.
        event_samples: the points a step is looked at for it (``solve``'s).
        saving: how the kernels read the recorded times (``dopri5_kernel``'s ``saveat``:
            True for the grid, ``"times"`` or ``"sample_times"`` for listed times).
        arguments: with ``args=``, ``(layout, per_sample)``: the packed ``p``'s layout
            (``model_args.pack``) and whether each argument has a value per sample; else
            None.
        table_sizes: with ``table_gradients=True``, each table's elements (``check_tables``);
            else None.
        jac: the user's Jacobian (``solve``'s ``jac=``, in the kernel's time), or None.
        linsolve: the Rosenbrock stages' solve (``solve``'s ``linsolve=``).
        cluster: for a solve with dask inputs, the ``dask_chunks.LazyRun`` whose chunks hold
            the recorded steps on the workers (``first_save`` is then a dask array); else
            None.
    """

    f: object
    state: object
    params: object
    table_dims: tuple
    method: str
    shared: bool
    column: bool
    tables: dict
    first_save: object = None
    event: object = None
    direction: int = -1
    event_samples: int = 4
    saving: object = True
    arguments: object = None
    table_sizes: tuple | None = None
    jac: object = None
    linsolve: str = "lu"
    cluster: object = field(default=None, repr=False, compare=False)

    def travelling(self) -> Record:
        """What a worker's backward pass needs of this record: without the user's funcs
        (the backward kernel, sent as its IR, holds them) or the cluster's objects."""
        return replace(self, f=None, event=None, jac=None, first_save=None, cluster=None)

    @property
    def solving(self) -> dict:
        """The kernels' ``jac``/``linsolve`` where the solve set them (else nothing: the
        kernels' defaults)."""
        return {**({} if self.jac is None else {"jac": self.jac}),
                **({} if self.linsolve == "lu" else {"linsolve": self.linsolve})}


def check(method: str, steps, refused: dict) -> int:
    """``adjoint_steps`` as an int, after refusing what the adjoint cannot take: ``method``
    outside ``ADJOINT_METHODS`` and every option in ``refused`` (name -> value) that is set
    (an ``event`` is taken: one terminal event function, checked by ``check_event``)."""
    if method not in ADJOINT_METHODS:
        raise ValueError(f"adjoint=True takes method= one of "
                         f"{', '.join(map(repr, ADJOINT_METHODS))}, got method={method!r}")
    for name, value in refused.items():
        if value is not None and value is not False and value != 0:
            raise ValueError(f"adjoint=True does not go with {name} yet")
    if isinstance(steps, bool) or not (isinstance(steps, int | np.integer) and steps >= 1):
        raise ValueError(f"adjoint_steps must be an int >= 1 (the accepted steps kept per "
                         f"sample), got {steps!r}")
    return int(steps)


def check_event(event, direction, terminal, record_events) -> None:
    """Refuse, by name, an event the adjoint cannot take: several (a vector-valued event, or
    per-component directions or terminal flags), one that is not terminal, or recorded
    events."""
    if event is None:
        return
    if isinstance(direction, tuple) or isinstance(terminal, tuple):
        raise ValueError("adjoint=True takes one terminal event function, not several "
                         "(event, direction, terminal)")
    if terminal is False:
        raise ValueError("adjoint=True takes a terminal event only (terminal=False)")
    if record_events:
        raise ValueError("adjoint=True does not go with record_events yet")


def check_tables(table_gradients, adjoint: bool, tables: dict, dtype) -> tuple | None:
    """Each table's elements for ``table_gradients=True`` (None for False), after refusing by
    name: a ``table_gradients`` that is not a bool, one without ``adjoint=True`` or without
    ``tables``, a table not of the solve's float type (``tables[i]``), and tables holding more
    than ``MAX_TABLE_GRADIENT_ELEMENTS`` elements together (their per-sample cotangent is one
    vector of them)."""
    if not isinstance(table_gradients, bool):
        raise ValueError(f"table_gradients must be True or False, got {table_gradients!r}")
    if not table_gradients:
        return None
    if not adjoint:
        raise ValueError("table_gradients=True needs adjoint=True (the tables' cotangents "
                         "come from its backward pass, Solution.vjp)")
    if not tables:
        raise ValueError("table_gradients=True needs tables=: this solve reads none")
    sizes = []
    for i, table in enumerate(tables.values()):
        if np.dtype(table.dtype) != np.dtype(dtype):
            raise ValueError(f"table_gradients=True takes tables of the solve's float type "
                             f"({np.dtype(dtype).name}); tables[{i}] is "
                             f"{np.dtype(table.dtype).name}")
        sizes.append(int(table.size))
    if sum(sizes) > MAX_TABLE_GRADIENT_ELEMENTS:
        raise ValueError(f"table_gradients=True takes tables of at most "
                         f"{MAX_TABLE_GRADIENT_ELEMENTS} elements together (each sample "
                         f"carries a cotangent of every element); these hold {sum(sizes)} "
                         f"({', '.join(f'tables[{i}]: {s}' for i, s in enumerate(sizes))})")
    return tuple(sizes)


def scratch(xp, steps: int, shape: tuple, dtype) -> dict:
    """The rows the forward kernel records into, refused by the name ``adjoint_steps`` where
    they would not fit. Left unfilled: a row past a sample's accepted steps is never read (and
    filling ``adjoint_steps`` rows would cost more than the solve when few are used)."""
    n = shape[-1]
    rows = {"steps_u": (steps, *shape), "steps_t": (steps, n), "steps_h": (steps, n)}
    nbytes = sum(int(np.prod(s)) for s in rows.values()) * np.dtype(dtype).itemsize
    args._fits("adjoint_steps", xp, nbytes, f"{steps} rows of each sample's accepted steps")
    try:
        return dict(budget=float(steps), theta_end=xp.zeros(n, dtype=dtype),
                    **{name: xp.empty(s, dtype=dtype) for name, s in rows.items()})
    except MemoryError:  # CuPy's OutOfMemoryError is one too
        raise ValueError(f"adjoint_steps: {steps} rows of each sample's accepted steps "
                         f"({nbytes} bytes) cannot be allocated now") from None


def kernel(record: Record):
    """The recording forward kernel for ``record``'s model and method."""
    return recording_kernel(record.f, record.state, record.params, tables=record.table_dims,
                            method=record.method,
                            saveat=record.saving if record.first_save is not None else False,
                            event=record.event, direction=record.direction,
                            event_samples=record.event_samples, **record.solving)


#: the forward kernel's parameters that the plain adaptive kernel's arrays also hold
PARAMETERS = ("p", "t_end", "rtol", "atol", "max_step", "budget", "u", "k1", "t", "h", "c",
              "accepted", "rejected", "status", "steps_u", "steps_t", "steps_h",
              "save_first", "save_every", "save_count", "saves", "saved", "events",
              "theta_end")


def check_least_steps(steps: int, xp, t, t_end, max_step, saves_ahead) -> None:
    """``ValueError`` naming ``adjoint_steps``, before the run, where a sample must take more
    accepted steps than ``steps`` whatever the error control does: its span over ``max_step``
    (rounded up), or its recorded times ahead (``saves_ahead``, None without ``saveat``) over
    the most one step passes (``SAVES_PER_STEP``, rounded up), for samples that run to their
    end (without a terminal event)."""
    least = xp.ceil((t_end - t) / max_step)  # 0 for an unbounded step
    if saves_ahead is not None:
        least = xp.maximum(least, -(-saves_ahead // SAVES_PER_STEP))
    over = least > steps
    if bool(over.any()):
        first = int(xp.argmax(over))
        raise ValueError(
            f"adjoint_steps={steps}: sample {first} must take at least {int(least[first])} "
            f"accepted steps (its span over max_step, or its saveat times {SAVES_PER_STEP} "
            f"to a step), and {int(over.sum())} of {over.size} samples more than "
            f"adjoint_steps; raise it to {int(least.max())} or more")


def check_budget(arrays: dict, steps: int, xp) -> None:
    """``ValueError`` naming ``adjoint_steps`` where a sample used every row before it was
    done (the forward kernel stopped it there), with how many rows would do at the rate the
    shortest-reaching such sample went (its span over the part it covered, times ``steps``).

    This cannot be known before the run (the accepted steps are the error control's choice),
    so it is found after it; nothing given to ``solve`` has been written (its arrays are
    copies), and no ``Solution`` is returned, so no half-recorded steps can be differentiated.
    """
    short = (arrays["status"] == hawk_ode.STATUS_RUNNING) & (arrays["accepted"] >= steps)
    count = int(short.sum())
    if count:
        states = arrays["u"].shape[0] if arrays["u"].ndim == 2 else 1
        which = xp.flatnonzero(short)
        start = arrays["steps_t"][0, which]  # their t0: the first step's start
        least = float(((arrays["t"][which] - start) / (arrays["t_end"][which] - start)).min())
        refuse_budget(steps, count, int(short.size), int(xp.argmax(short)), least,
                      (states + 2) * arrays["u"].dtype.itemsize)


def refuse_budget(steps: int, count: int, n: int, first: int, least: float,
                  step_bytes: int) -> None:
    """``check_budget``'s refusal, where ``count`` of the ``n`` samples (the first: sample
    ``first``) used every row, the shortest-reaching of them having covered the part
    ``least`` of its span; nothing where ``count`` is 0."""
    if count:
        would_do = math.ceil(steps / least) if least > 0 else None
        rate = f" (about {would_do} would do at the rate they went)" if would_do else ""
        raise ValueError(
            f"adjoint_steps={steps}: {count} of {n} samples (the first: sample "
            f"{first}) need more accepted steps than that; raise adjoint_steps{rate}; each "
            f"step kept costs {step_bytes} bytes per sample")


def _cotangent(name: str, value, expected: tuple, like, xp):
    """``value`` as a new array of ``like``'s dtype, refused naming ``name`` unless it is real
    numbers shaped ``expected``."""
    args.numeric(name, value)
    shape = tuple(getattr(value, "shape", np.shape(value)))
    if shape != expected:
        what = "Solution.u" if name == "du" else "Solution.saved"
        raise ValueError(f"{name} must be shaped as {what}, {expected}, got {shape}")
    return xp.array(xp.asarray(value), dtype=like.dtype, copy=True, order="C")


def check_request(solution, du, dsaved) -> None:
    """Refuse, by name, a ``vjp`` that cannot run: on a solution made without
    ``adjoint=True``, with neither cotangent, or ``dsaved`` for a solve without ``saveat``."""
    if solution.adjoint is None:
        raise ValueError("vjp needs a solution made with eagle.ode.solve(..., adjoint=True): "
                         "this one kept no steps")
    if du is None and dsaved is None:
        raise ValueError("vjp needs du (the cotangent of Solution.u), dsaved (of "
                         "Solution.saved) or both")
    if dsaved is not None and solution.adjoint.first_save is None:
        raise ValueError("dsaved needs a solve with saveat=: this one saved no states")


def backward_pass(record: Record, dsaved_given: bool):
    """The backward kernel for ``record``'s model and method (reading the ``saveat`` states'
    cotangents only where ``dsaved`` was given)."""
    return backward_kernel(record.f, record.state, record.params, tables=record.table_dims,
                           method=record.method, event=record.event,
                           saveat=record.saving if dsaved_given else False,
                           **({} if record.table_sizes is None
                              else {"table_sizes": record.table_sizes}), **record.solving)


def run_backward(back, record: Record, arrays: dict, lam, rows, first_save, xp) -> tuple:
    """Run ``back`` (``backward_pass``) over the recorded steps in ``arrays`` (the forward
    kernel's, by parameter name, ``p`` as bound), from ``lam`` (the end state's cotangent,
    shaped as ``arrays["u"]``, written) and ``rows`` (the ``saveat`` states' cotangents,
    ``(T, *u.shape)``, or zeros ``(1, *u.shape)``); ``first_save`` each sample's first
    recorded time's index (None without ``saveat``). The kernel reads the recorded steps and
    ``saveat`` times per sample by ``hawk.sample_index()``: a chunk's are bound cut to its
    samples (its times' columns too). Returns ``(lam, mu, mu_tables)``: the cotangents of
    ``u0`` and of the bound ``p``, per sample, and of every table element together per sample
    (None without ``table_gradients``)."""
    u = arrays["u"]
    n = u.shape[-1]
    gradient = gradient_type(record.params)
    columns = gradient.columns
    mu_shape = (n,) if gradient.width == 1 else \
        ((gradient.width // columns, columns, n) if columns else (gradient.width, n))
    mu = xp.zeros(mu_shape, dtype=u.dtype)
    extra = {}
    if record.table_sizes is not None:
        elements = sum(record.table_sizes)
        extra["mu_tables"] = xp.zeros((elements, n) if elements > 1 else (n,), dtype=u.dtype)
    row = xp.array(arrays["accepted"], dtype=np.int64, copy=True)
    if first_save is None:
        first_save, saves = xp.zeros(n, dtype=np.int64), xp.zeros(n, dtype=np.int64)
    else:
        saves = xp.array(arrays["saves"], copy=True)
    until_done(back, max_steps=int(row.max()) + 1, p=arrays["p"], steps_u=arrays["steps_u"],
               steps_t=arrays["steps_t"], steps_h=arrays["steps_h"], dsaved=rows,
               save_first=arrays["save_first"], save_every=arrays["save_every"],
               first_save=first_save, row=row, lam=lam, mu=mu,
               t_next=xp.array(arrays["t"], copy=True), saves=saves, status=arrays["status"],
               accepted=arrays["accepted"], theta_end=arrays["theta_end"], **record.tables,
               **extra).run()
    return lam, mu, extra.get("mu_tables")


def vjp(solution, du=None, dsaved=None) -> Gradients:
    """The cotangents of ``p`` and ``u0`` (and of the tables' values for a solve given
    ``table_gradients=True``) for the cotangents ``du`` of ``solution.u`` and ``dsaved`` of
    ``solution.saved`` (``Solution.vjp``; either may be None, not both)."""
    check_request(solution, du, dsaved)
    record = solution.adjoint
    arrays = solution.arrays
    u = arrays["u"]
    xp = args.array_module(u)
    lam = xp.zeros_like(u) if du is None else \
        _cotangent("du", du, tuple(solution.u.shape), u, xp).reshape(u.shape)
    if dsaved is None:
        rows = xp.zeros((1, *u.shape), dtype=u.dtype)
    else:
        rows = _cotangent("dsaved", dsaved, tuple(solution.saved.shape), u, xp)
        rows = rows.reshape(arrays["saved"].shape)
    lam, mu, mu_tables = run_backward(backward_pass(record, dsaved is not None), record,
                                      arrays, lam, rows, record.first_save, xp)
    u0_bar = lam[None] if record.column else lam
    tables = None if mu_tables is None else _per_table(mu_tables, record, xp)
    if record.arguments is not None:
        return Gradients(p=None, u0=u0_bar, args=_per_argument(mu, record, xp), tables=tables)
    p_bar = _summed(mu, xp) if record.shared else mu
    return Gradients(p=p_bar, u0=u0_bar, tables=tables)


def _summed(per_sample, xp):
    """The per-sample cotangents ``(..., n)`` summed over the samples left to right, on the
    host (the same bits on every run): a float for one number."""
    host = per_sample.get() if hasattr(per_sample, "get") else per_sample
    summed = np.cumsum(host, axis=-1)[..., -1]
    return float(summed) if summed.ndim == 0 else xp.asarray(summed)


def _per_argument(mu, record: Record, xp) -> tuple:
    """The cotangent of the packed ``p`` (``mu``, per sample) cut into one per argument of
    ``args=``, each shaped as it: per sample with the samples last, or, for an argument shared
    by every sample, summed over them (``_summed``)."""
    (positions, _, width), per_sample = record.arguments
    n = mu.shape[-1]
    flat = mu.reshape(width, n)
    out = []
    for (offset, shape), samples in zip(positions, per_sample, strict=True):
        block = flat[offset:offset + math.prod(shape)]
        if samples:
            out.append(block.reshape(*shape, n))
        else:
            summed = _summed(block, xp)
            out.append(float(summed[0]) if not shape else summed.reshape(shape))
    return tuple(out)


def _per_table(mu_tables, record: Record, xp) -> tuple:
    """The per-sample cotangent of every table element together (``mu_tables``, ``(elements,
    n)`` or ``(n,)`` for one) summed over the samples (``_summed``) and cut into one array per
    table, shaped as it."""
    return per_table(_summed(mu_tables.reshape(-1, mu_tables.shape[-1]), xp), record)


def per_table(summed, record: Record) -> tuple:
    """Every table element's summed cotangent (``summed``, 1-D, the tables in order) cut into
    one array per table, shaped as it."""
    out, offset = [], 0
    for table, size in zip(record.tables.values(), record.table_sizes, strict=True):
        out.append(summed[offset:offset + size].reshape(table.shape))
        offset += size
    return tuple(out)
