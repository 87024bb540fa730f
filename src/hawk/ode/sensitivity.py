"""Forward sensitivities: the right-hand side of a model and of its tangent system, integrated
together, so that a solver's steps (and their error control) carry ``du/dp`` or ``du/du0``.

For ``u' = f(u, t, p)`` the sensitivity ``S_j = du/dp_j`` obeys ``S_j' = J_u S_j + df/dp_j``
(and ``S_j = du/du0_j``, ``S_j' = J_u S_j``, from ``S_j(0) = e_j``). Each product is one
forward-mode derivative, ``hawk.jvp``, so no Jacobian is formed. The augmented state is
``(u, S_0, S_1, ...)``: ``u``'s ``k`` components, then each column's ``k``; the solver's error
norm covers all of it (full error control, as CVODES's ``errconS``).

A sample that a terminal event ends stops at a time ``t*`` that moves with ``p`` (or ``u0``):
``g(u(t*), t*) = 0`` gives ``dt*/dx_j = -(dg/du S_j + dg/dx_j) / (dg/du f + dg/dt)``, and the
end state's derivative is ``S_j + f dt*/dx_j`` (``event_correction_kernel``, one step after the
solve).
"""

# ruff: noqa: F841 -- a kernel body assigns its parameters: they are written back, not unused

# No `from __future__ import annotations` here: event_correction_kernel's annotations name the
# factory's arguments, which hawk resolves from the function's closure.
import functools

import hawk
from hawk import Mutable, Out, Scalar, Terminated, Vector

from .adaptive_step import STATUS_EVENT
from .kernel_args import _table_types

__all__ = ["forward_sensitivity", "event_correction_kernel"]


@hawk.func
def _p_first(p, u, t, f, *tables):
    """``f`` with ``p`` first, for ``df/dp`` by ``hawk.jvp``."""
    return f(u, t, p, *tables)


@hawk.func
def _unit(m, j):
    """The ``j``-th of ``m`` unit vectors (a number for ``m == 1``; zeros for ``j == m``),
    built by ``concat``: ``hawk.zeros`` takes at most 16 components, ``p`` up to 128."""
    unit = 1.0 if j == 0 else 0.0
    for i in range(1, m):
        unit = hawk.concat(unit, 1.0 if i == j else 0.0)
    return unit


@hawk.func
def _along(g, u, column, t, p, j, m, by_p, *tables):
    """``g``'s change along sensitivity column ``j`` of ``m``: ``dg/du S_j``, plus ``dg/dp_j``
    where the columns are ``p``'s (``by_p``)."""
    change = hawk.jvp(g, u, column, t, p, *tables)[1]
    if by_p:
        unit = _unit(m, j)
        change = change + hawk.jvp(_p_first, p, unit, u, t, g, *tables)[1]
    return change


@functools.cache
def forward_sensitivity(f, states: int, columns: int, by_p: bool):
    """The ``@hawk.func`` ``(big, t, p, *tables) -> d big/dt`` of ``f`` and its
    sensitivities (the tables, if the model reads any, passed on to it).

    Args:
        f: the model, a ``@hawk.func`` ``f(u, t, p)``.
        states: ``k``, the components of ``u`` (1 for a number).
        columns: ``m``, the parameters (``p``'s components) with ``by_p``, else ``k``.
        by_p: sensitivities to ``p`` (``S_j' = J_u S_j + df/dp_j``) or to ``u0``
            (``S_j' = J_u S_j``).
    """
    k, m = states, columns

    @hawk.func
    def augmented(big, t, p, *tables):
        u = big[0:k]
        out = f(u, t, p, *tables)
        for j in range(m):
            column = big[k + j * k:k + (j + 1) * k]
            change = _along(f, u, column, t, p, j, m, by_p, *tables)
            out = hawk.concat(out, change)
        return out

    return augmented


@hawk.func
def _t_first(t, u, p, g, *tables):
    """``g`` with the time first, for ``dg/dt`` by ``hawk.jvp``."""
    return g(u, t, p, *tables)


@functools.cache
def _event_correction(f, event, states: int, columns: int, by_p: bool, count: int):
    """The ``@hawk.func`` ``(big, t, args) -> (big, dt)``: the augmented state at a terminal
    event with each sensitivity column moved along ``f`` by its ``dt*/dx_j``, and those
    (``args``: ``p`` and the ``count`` tables the model reads)."""
    k, m = states, columns

    @hawk.func
    def corrected(big, t, args):
        p, tables = args[0], args[1:count + 1]
        u = big[0:k]
        f_u = f(u, t, p, *tables)
        rate = hawk.jvp(event, u, f_u, t, p, *tables)[1] \
            + hawk.jvp(_t_first, t, 1.0, u, p, event, *tables)[1]
        out = u
        dts = _unit(m, m)  # zeros
        for j in range(m):
            column = big[k + j * k:k + (j + 1) * k]
            change = _along(event, u, column, t, p, j, m, by_p, *tables)
            dt = -change / rate
            out = hawk.concat(out, column + f_u * dt)
            if m == 1:
                dts = dt
            else:
                dts[j] = dt
        return out, dts

    return corrected


def event_correction_kernel(f, event, states: int, columns: int, by_p: bool, params,
                            tables: tuple = ()) -> hawk.Kernel:
    """The one-step kernel that finishes a sensitivity run whose samples a terminal event may
    have ended: where ``status`` is ``STATUS_EVENT`` it adds ``f dt*/dx_j`` to each column of
    the augmented state ``big`` and writes ``dt*/dx`` to ``dt``; elsewhere ``dt`` is NaN (bind
    ``terminated`` to a scratch array).

    Args:
        f: the model, a ``@hawk.func`` ``f(u, t, p)`` (tables after ``p``).
        event: the event ``g(u, t, p)`` (a number), its tables after ``p`` too.
        states: ``k``, ``u``'s components.
        columns: ``m``, the sensitivity's columns.
        by_p: the columns are ``du/dp_j`` (``dg/dp_j`` joins ``dg/du S_j``), else ``du/du0_j``.
        params: how ``p`` is bound (as for ``dopri5_kernel``).
        tables: the dimensions of the tables the model reads.
    """
    correct = _event_correction(f, event, states, columns, by_p, len(tables))
    T0, T1, T2 = _table_types(tables)
    Big = Vector[states + states * columns]
    Times = Scalar if columns == 1 else Vector[columns]
    nan = float("nan")

    def event_correction(p: params, t: Scalar, status: Scalar, big: Mutable[Big],
                         dt: Out[Times], terminated: Terminated, table0: T0, table1: T1,
                         table2: T2):
        if columns == 1:
            dt = nan
        else:
            dt = hawk.zeros(columns) + nan
        if status == STATUS_EVENT:
            big, dt = correct(big, t, (p, table0, table1, table2))
        terminated = True

    return hawk.kernel(event_correction, dtypes={"status": "int64"})
