"""The events of the adaptive kernels, component by component: a vector-valued event
``g(u, t, p)`` has up to ``MAX_EVENTS`` components, each with its own direction and terminal
flag (``_event_codes`` packs them into two compile-time ints), each crossing found and located
on its own (``_component_event``, ``_component_crossing``, ``_crossing_of``).

Also what decides how ``dopri5_kernel`` records them: a pure recording (nothing acts) writes
each crossing's step, located after the run (``recorded_row_width``, and
``hawk.ode.recorded.event_location_kernel``), and carries ``g`` from one step to the next
(``carries_event``, ``event_width``).
"""

# ruff: noqa: F841 -- a kernel body assigns its parameters: they are written back, not unused

# No `from __future__ import annotations` here: event_width's kernel's annotations name its
# arguments, which must be evaluated when it is defined.
import functools

import hawk
from hawk import Out, Scalar
from hawk.inline import Func
from hawk.ir import MAX_WIDTH

from .events import first_crossing, locate
from .kernel_args import _table_types, _with_tables

__all__ = ["MAX_EVENTS", "recorded_row_width", "carries_event", "event_width"]

#: the most components a vector-valued event has (each with its direction and terminal flag)
MAX_EVENTS = 16


@functools.cache
def _component_event(event: Func) -> Func:
    """Component ``pick[1]`` (a compile-time int) of the event ``event(u, t, pick[0])``: one
    of a vector-valued event's functions, as ``first_crossing`` and ``locate`` take one."""
    @hawk.func
    def component(u, t, pick):
        g = event(u, t, pick[0])
        if hawk.width(g) == 1:
            return g
        return g[pick[1]]

    return component


def _event_codes(direction, terminal) -> tuple[int, int]:
    """Per-component directions and terminal flags as two compile-time ints (base 3 and base
    2 digits, component 0 first), so a kernel body reads component ``i``'s with integer
    arithmetic that folds when it is compiled; one value given stands for every component."""
    directions = direction if isinstance(direction, tuple) else (direction,) * MAX_EVENTS
    terminals = terminal if isinstance(terminal, tuple) else (terminal,) * MAX_EVENTS
    for name, values, allowed in (("direction", directions, (-1, 0, 1)),
                                  ("terminal", terminals, (True, False))):
        if not 1 <= len(values) <= MAX_EVENTS or any(
                v not in allowed or type(v) not in (int, bool) for v in values):
            raise ValueError(f"{name} must be one of {allowed} or a tuple of 1 to "
                             f"{MAX_EVENTS} of them (one per event component), got "
                             f"{direction if name == 'direction' else terminal!r}")
    return (sum((d + 1) * 3**i for i, d in enumerate(directions)),
            sum(int(bool(v)) << i for i, v in enumerate(terminals)))


@hawk.func
def _component_crossing(g, u, t, h, q, pick, g_old, g_new, direction, samples, value):
    """``first_crossing`` of component ``pick[1]`` of a vector-valued event (of the event
    itself for a number) during the step: ``(hit, sign, lo, hi, f_lo, f_hi)``."""
    if hawk.width(g_old) == 1:
        old, new = g_old, g_new
    else:
        old, new = g_old[pick[1]], g_new[pick[1]]
    return first_crossing(g, u, t, h, q, pick, old, new, direction, samples, value)


def recorded_row_width(state, on_event, terminal, record_events, tstops: bool = False) -> int:
    """The width of a recorded event's row in ``u_events`` where ``dopri5_kernel`` leaves its
    location to ``event_location_kernel``, else 0. That is a pure recording (a Poincaré
    section): ``record_events`` with no component that acts (``terminal`` False for every
    one, no ``on_event``). Nothing in the step then needs the crossing's time, so the step
    only finds which components crossed and writes its start and size in the row ``(u, h)``
    (``t_events``: its start time); the location, twelve evaluations of the event on the
    interpolant, is paid once per event afterwards instead of on every step of every sample
    (a branch-free step computes it whether or not anything crossed). The step's ``k1`` is
    ``f(u, t, p)`` (the last step's ``f(u_new, t + h, p)``, every method's) and its end
    ``t + h``, or ``t_end`` where it lands there, so both are computed again; with
    ``tstops`` (a step that lands on a stop ends at it, not at ``t + h``) the row is
    ``(u, k1, t_new, h)``. The same computation on the same numbers: the same bits. Each
    component is a (masked) store on every step: the row is kept short. 0 where it would be
    wider than ``MAX_WIDTH``."""
    if not record_events or on_event is not None or terminal is None:
        return 0
    if any(terminal if isinstance(terminal, tuple) else (terminal,)):
        return 0
    k = 1 if state is Scalar else state.width
    width = 2 * k + 2 if tstops else k + 1
    return width if width <= MAX_WIDTH else 0


def carries_event(state, on_event, on_stop, terminal, record_events) -> bool:
    """Whether ``dopri5_kernel`` carries the event's value from one step to the next: in a
    pure recording (``recorded_row_width``) without ``on_stop``. A step's start is where the
    last accepted step ended (or where a rejected one started), nothing moves ``u`` in
    between, so the step evaluates ``g`` at its end and inside only; the kernel's ``c`` (the
    controller's memory, a number in every other kernel) is a ``Vector[1 + w]`` for an event
    of ``w`` components (``event_width``): the memory, then ``g`` at ``(u, t)``, started with
    ``C_START`` and ``g(u0, t0, p)`` (``hawk.ode.recorded.event_value_kernel``). The same
    operations on the same numbers: the same bits, one evaluation of ``g`` fewer per step."""
    return on_stop is None and recorded_row_width(state, on_event, terminal, record_events) > 0


@functools.cache
def event_width(event: Func, state, params, tables: tuple = ()) -> int:
    """The number of components ``event(u, t, p)`` returns (``tables``: the dimensions of
    the tables it takes after ``p``), from typing it in a kernel (nothing compiled or run)."""
    T0, T1, T2 = _table_types(tables)
    State = state
    event = _with_tables(event, len(tables))

    @hawk.kernel
    def width_of(p: params, u: State, t: Scalar, returned: Out[Scalar], table0: T0,
                 table1: T1, table2: T2):
        returned = hawk.width(event(u, t, (p, table0, table1, table2))) * 1.0

    program = width_of.specialize({})
    (store,) = program.stores
    return int(program.ops[store.value].attr)


@hawk.func
def _crossing_of(g, u, t, h, q, pick, g_old, g_new, direction, samples, tol, iterations,
                 value):
    """Whether component ``pick[1]`` of a vector-valued event crosses zero in ``direction``
    during the step, and where (a fraction of the step)."""
    hit, sign, lo, hi, f_lo, f_hi = _component_crossing(g, u, t, h, q, pick, g_old, g_new,
                                                        direction, samples, value)
    return hit, locate(g, u, t, h, q, pick, sign, lo, hi, f_lo, f_hi, tol, iterations, value)
