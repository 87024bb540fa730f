"""A solve's per-sample arrays, made from its samples' own values: ``Layout`` and ``make``.

Every array a solve's kernels bind is a function of each sample's own inputs (its ``u0``,
``p``, ``t0``, ``t_end``, tolerances, step) and of numbers every sample shares (the ``saveat``
grid, the stops, what is recorded): sample ``i``'s entries do not depend on any other sample.
So the same code makes them for the whole ensemble (``eagle.ode.solve`` on one machine) and for
one chunk of it on a Dask worker (``eagle.ode.cluster`` with dask-array inputs, which never
exist whole on the client); that both run this one function is what makes a chunk's arrays the
local solve's, bit for bit. ``Layout`` holds the shared numbers, decided once by ``solve``;
``make`` makes the arrays; ``first_step_bindings`` binds the adaptive methods' first-step kernel
to them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hawk import ode as hawk_ode

from . import arguments

__all__ = ["Layout", "start_state", "augmented", "first_saves", "make", "first_step_bindings"]


@dataclass(frozen=True)
class Layout:
    """What a solve's per-sample arrays share, decided by ``solve`` from its arguments.

    Attributes:
        dtype: the state's dtype (float32 or float64).
        adaptive: an adaptive method (tolerances, first step, events, stops).
        save_first, save_every, save_count: the ``saveat`` grid ``(first, spacing, count)``
            (0, 1, 0 without ``saveat``), or ``(0, times, T)`` for an array of times.
        saveat: whether anything is recorded (``saveat`` was given).
        record_events: the events recorded per sample (0 for none).
        row_width: a recorded event's row (0: the state as it is; see
            ``hawk.ode.kernels.recorded_row_width``).
        stop_first, stop_every: the ``tstops`` grid, ``(0, 1)`` without one.
        backward: integrated in ``s = -t`` (``t_span`` backward): ``t0`` and ``t_end`` are
            negated before the arrays are made.
        column: ``u0`` was ``(1, n)``, solved as ``(n,)``.
        sensitivity: ``"p"``, ``"u0"`` or None; with ``states`` and ``columns``, how the
            state is augmented with its sensitivities.
    """

    dtype: np.dtype
    adaptive: bool
    save_first: float
    save_every: object
    save_count: int
    saveat: bool
    record_events: int = 0
    row_width: int = 0
    stop_first: float = 0.0
    stop_every: float = 1.0
    backward: bool = False
    column: bool = False
    sensitivity: str | None = None
    states: int = 1
    columns: int = 0


def start_state(layout: Layout, u0, xp, n: int):
    """The integrated state's start: ``u0`` (a ``(1, n)`` one as ``(n,)``), and with a
    ``sensitivity`` the augmented state ``(u0, S(0))`` (``S(0)`` zero, or the identity for
    ``sensitivity="u0"``)."""
    if layout.column:
        u0 = u0[0]
    if layout.sensitivity is None:
        return u0
    return augmented(u0, xp, n, layout.states, layout.columns, layout.sensitivity)


def augmented(u0, xp, n: int, states: int, columns: int, sensitivity: str):
    """``(u0, S(0))``: the state and its ``states x columns`` sensitivities, ``S(0)`` zero, or
    the identity for ``sensitivity="u0"``."""
    start = xp.zeros((states + states * columns, n), dtype=u0.dtype)
    start[:states] = u0.reshape(states, n)
    if sensitivity == "u0":
        for j in range(states):
            start[states + j * states + j] = 1.0
    return start


def first_saves(layout: Layout, xp, t):
    """Each sample's first recorded time's index (int64 ``(n,)``): the first ``saveat`` time
    not before its ``t`` (``t0`` in the integration's variable)."""
    save_first, save_every, save_count = layout.save_first, layout.save_every, layout.save_count
    if isinstance(save_every, float):
        return xp.clip(xp.ceil((t - save_first) / save_every), 0, save_count).astype(np.int64)
    listed = save_every  # the kernels read time k from the Table bound as save_every
    return (listed < t).sum(axis=0).astype(np.int64) if listed.ndim == 2 \
        else xp.searchsorted(listed, t, side="left").astype(np.int64)


def make(layout: Layout, xp, n: int, *, u0, p, t, t_end, rtol=None, atol=None, max_step=None,
         dt=None) -> dict:
    """Every array the solve's main kernel binds, for ``n`` samples, by parameter name.

    ``u0`` is ``start_state``'s; ``p`` as bound (a per-sample array or a shared value); ``t``,
    ``t_end`` and, for the adaptive methods, ``rtol``, ``atol``, ``max_step``, or for the
    fixed-step ones ``dt``, arrays ``(n,)`` already checked (``arguments.per_sample``) and, in
    backward time, negated. The arrays are new; ``t`` is taken as it is (the kernels write it).
    """
    dtype = layout.dtype
    save_first, save_every, save_count = layout.save_first, layout.save_every, layout.save_count
    first_save = first_saves(layout, xp, t)
    saved = arguments.allocate("saveat", xp, (save_count, *u0.shape), dtype, np.nan)
    u = xp.array(u0, dtype=dtype, copy=True, order="C")
    arrays = dict(p=p, t_end=t_end, u=u, t=t, save_first=save_first, save_every=save_every,
                  save_count=float(save_count), saves=first_save, saved=saved)
    if layout.adaptive:
        if layout.record_events > 0:
            rows = (layout.row_width, n) if layout.row_width else u.shape
            count = layout.record_events
            arrays.update(
                t_events=arguments.allocate("record_events", xp, (count, n), dtype, np.nan),
                u_events=arguments.allocate("record_events", xp, (count, *rows), dtype,
                                            np.nan),
                which_events=arguments.allocate("record_events", xp, (count, n), np.int64,
                                                -1))
        arrays.update(rtol=rtol, atol=atol, max_step=max_step, k1=xp.empty_like(u),
                      h=xp.zeros(n, dtype=dtype), c=xp.full(n, hawk_ode.C_START, dtype=dtype),
                      accepted=_zeros(xp, n), rejected=_zeros(xp, n), status=_zeros(xp, n))
        first_stop = xp.maximum(xp.ceil((t - layout.stop_first) / layout.stop_every),
                                0).astype(np.int64)
        arrays.update(stop_first=layout.stop_first, stop_every=layout.stop_every,
                      events=_zeros(xp, n), stops=first_stop)
        return arrays
    at_start = first_save < save_count
    if layout.saveat and bool(at_start.any()):  # a recorded time at t0 itself
        listed = save_every if not isinstance(save_every, float) else None
        if listed is None:
            first_time = save_first + first_save * save_every
        else:
            last = xp.minimum(first_save, save_count - 1)
            first_time = listed[last, xp.arange(n)] if listed.ndim == 2 else listed[last]
        index = xp.flatnonzero(at_start & (first_time == t))
        saved[first_save[index], ..., index] = u[..., index].T if u.ndim == 2 else u[index]
        first_save[index] += 1
    arrays.update(dt=dt, steps=_zeros(xp, n))
    return arrays


def first_step_bindings(arrays: dict, xp, n: int) -> dict:
    """The bindings of the adaptive methods' first-step kernel
    (``hawk.ode.dopri5_start_kernel``, run once with ``simulate(prepare, max_steps=1, ...)``
    and the tables): it writes each sample's first step size and first stage into ``arrays``
    (``u``, ``t``, ``k1``, ``h``)."""
    return dict(p=arrays["p"], t_end=arrays["t_end"], rtol=arrays["rtol"],
                atol=arrays["atol"], terminated=xp.zeros(n, dtype=bool), u=arrays["u"],
                t=arrays["t"], k1=arrays["k1"], h=arrays["h"])


def _zeros(xp, n: int):
    return xp.zeros(n, dtype=np.int64)
