"""Locating a pure recording's events after the run: ``event_location_kernel``.

Where no event component acts (``kernels.recorded_row_width``: nothing terminal, no
``on_event``, say a Poincaré section), ``dopri5_kernel`` only finds which components crossed
during a step and writes the step into the event's row: its start ``t`` (``t_events``) and
``(u, h)`` (``u_events``; ``(u, k1, t_new, h)`` with ``tstops``: ``recorded_row_width``). This
kernel takes one such row per sample, takes the same step again (``k1 = f(u, t, p)`` and the
step's end computed as the step did; the method's attempt on the same numbers gives the same
interpolant, bit for bit)
and locates the crossing on it exactly as the step would have (``first_crossing`` and
``locate``, the same tolerance and iterations): the event's time ``t + theta h`` and state.

Why after: a step is branch-free, so a location in it is computed on every step of every
sample, crossed or not: twelve evaluations of the event on the interpolant, more than the
step itself costs for a cheap model. After the run it is computed once per recorded event.
"""

# ruff: noqa: F841 -- a kernel body assigns its parameters: they are written back, not unused

# No `from __future__ import annotations` here: the kernel's annotations name the factory's
# arguments, which must be evaluated when it is defined.
import functools

import hawk
from hawk import Mutable, Out, Scalar, Terminated, Vector
from hawk.inline import Func

from .adaptive_step import attempt_with
from .event_components import (
    _component_event,
    _crossing_of,
    _event_codes,
    event_width,
    recorded_row_width,
)
from .kernel_args import _given_jacobian, _never, _table_types, _with_tables
from .kernels import ADAPTIVE_METHODS
from .linsolve import with_linsolve

__all__ = ["event_location_kernel", "event_value_kernel"]


@functools.cache
def event_location_kernel(f: Func, state, params, *, event: Func, direction=-1,
                          event_tol: float = 1e-12, event_iterations: int = 12,
                          event_samples: int = 4, tables: tuple = (),
                          method: str = "dopri5", jac: Func | None = None,
                          tstops: bool = False, linsolve: str = "lu") -> hawk.Kernel:
    """The one-step kernel that locates the events a pure recording of ``dopri5_kernel``
    (the same ``f``, ``state``, ``params``, ``event``, ``direction``, event options, tables,
    method, ``jac``, ``linsolve`` and whether it had ``tstops``) wrote as steps.

    Its parameters, one recorded event per sample: ``p`` (that sample's), ``row`` (the
    ``u_events`` row, ``Vector[recorded_row_width(state, ...)]``), ``which`` (int64, the
    component that crossed), ``t`` (the ``t_events`` row: the step's start), ``t_end``
    (that sample's, where the step may have landed), the tables; it
    writes ``t_event`` and ``u_event`` (shaped as ``state``). Bind ``terminated`` to a scratch
    array. ``row`` and ``t`` are ``Mutable`` though only read: a value computed from read-only
    inputs alone is a per-sample invariant, which the CPU backend computes once per sample
    outside the vectorised step; read as state, the location is the step (1.8x faster on the
    driven pendulum's 40,000 events, the same bits).
    """
    width = recorded_row_width(state, None, False, True, tstops)
    if not width:
        raise ValueError(f"event_location_kernel: a state of {state!r} has no recorded row "
                         "(wider than hawk.ir.MAX_WIDTH)")
    k = (width - 2) // 2 if tstops else width - 1
    chosen = ADAPTIVE_METHODS[method]
    attempt, value = with_linsolve(chosen, linsolve), chosen.value
    count = len(tables)
    T0, T1, T2 = _table_types(tables)
    has_jacobian = jac is not None
    given = _given_jacobian(jac, count) if has_jacobian else _never
    model = _with_tables(f, count)
    event = _with_tables(event, count)
    picked = _component_event(event)
    directions, _ = _event_codes(direction, False)
    Row, State = Vector[width], state

    def locate_recorded(p: params, row: Mutable[Row], which: Scalar, t: Mutable[Scalar],
                        t_end: Scalar, t_event: Out[Scalar], u_event: Out[State],
                        terminated: Terminated, table0: T0, table1: T1, table2: T2):
        args = (p, table0, table1, table2)
        if tstops:
            if k == 1:
                u, k1 = row[0], row[1]
            else:
                u, k1 = row[0:k], row[k:2 * k]
            t_new, h = row[2 * k], row[2 * k + 1]
        else:  # the step's k1 and end, as dopri5_kernel computed them (recorded_row_width)
            if k == 1:
                u, h = row[0], row[1]
            else:
                u, h = row[0:k], row[k]
            k1 = model(u, t, args)
            t_new = t + h
            if h == t_end - t:
                t_new = t_end
        u_new, err, q, k_next = attempt_with(attempt, has_jacobian, given, model, u, k1, t, h,
                                             args)
        g_old, g_new = event(u, t, args), event(u_new, t_new, args)
        theta = 1.0
        for i in range(hawk.width(g_old)):
            crossed_i, theta_i = _crossing_of(picked, u, t, h, q, (args, i), g_old, g_new,
                                              (directions // 3**i) % 3 - 1, event_samples,
                                              event_tol, event_iterations, value)
            if which == i:
                theta = theta_i
        t_event = t + theta * h
        u_event = value(u, h, q, theta)
        terminated = True

    locate_recorded.__name__ = locate_recorded.__qualname__ = f"{method}_locate_recorded"
    return hawk.kernel(locate_recorded, dtypes={"which": "int64"})


@functools.cache
def event_value_kernel(event: Func, state, params, *, tables: tuple = ()) -> hawk.Kernel:
    """The one-step kernel that writes ``event(u, t, p)`` (tables after ``p``) into ``value``
    (a number or a vector, as the event returns): the start of the value a pure recording of
    ``dopri5_kernel`` carries in ``c`` (``kernels.carries_event``), by the same operations as
    the step's own evaluation of ``g``, so the same bits.

    Its parameters: ``p``, ``u``, ``t``, the tables; ``value`` (``Out``); bind ``terminated``
    to a scratch array.
    """
    width = event_width(event, state, params, tables)
    T0, T1, T2 = _table_types(tables)
    event = _with_tables(event, len(tables))
    Value, State = (Vector[width] if width > 1 else Scalar), state

    def event_value(p: params, u: State, t: Scalar, value: Out[Value], terminated: Terminated,
                    table0: T0, table1: T1, table2: T2):
        value = event(u, t, (p, table0, table1, table2))
        terminated = True

    return hawk.kernel(event_value)
