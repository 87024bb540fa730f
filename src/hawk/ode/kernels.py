"""Ready-made kernels: an ensemble integrator from a right-hand side, in one call.

Each factory writes nothing new: its kernel is ordinary hawk code that calls the integrators of
``hawk.ode`` with the model func ``f`` (and the event, noise or stop funcs) it closes over, so
every backend compiles it and the reference executor defines it like any other kernel. Features
a call does not ask for are switched off by compile-time flags, so they cost nothing.

One eagle step is one attempted integrator step: ``until_done``, ``max_steps``, checkpoints,
progress, Dask and the GPU graph work as for any kernel. ``eagle.ode.solve`` binds these kernels
to arrays and runs them; use the kernels directly to keep the arrays (and a runner) yourself.

The kernels are split by job: this module writes the adaptive ones (``dopri5_kernel`` and its
first step); ``fixed_kernels`` the fixed-step and SDE ones; ``adaptive_step`` holds the parts of
an adaptive step, which the adjoint's recording kernel and ``recorded.event_location_kernel``
take too (the same ops, so the same steps); ``event_components`` the vector-valued events;
``kernel_args`` the checks and wrappers of the caller's funcs, types and tables. Every name
this module had stays importable from it.
"""

# ruff: noqa: F841 -- a kernel body assigns its parameters: they are written back, not unused

# No `from __future__ import annotations` here: the kernels' annotations name the factory's
# arguments (``state``, ``params``), which must be evaluated when each kernel is defined.
import functools

import hawk
from hawk import Mutable, Param, Scalar, Series, Terminated, Vec3, Vector
from hawk.inline import Func

from .adaptive_step import (
    SMALLEST_STEP,
    STATUS_DONE,
    STATUS_EVENT,
    STATUS_FAILED,
    STATUS_LOCATING,
    STATUS_RUNNING,
    controlled_attempt,
    event_end,
    saves_passed,
    step_size,
    tally,
    terminal_crossing,
)
from .event_components import (
    MAX_EVENTS,
    _component_crossing,
    _component_event,
    _crossing_of,
    _event_codes,
    carries_event,
    event_width,
    recorded_row_width,
)
from .fixed_kernels import FIXED_METHODS, LANDING_SLACK, fixed_step_kernel, sde_kernel
from .kernel_args import (
    MAX_TABLES,
    _check_func,
    _check_types,
    _given_jacobian,
    _never,
    _save_times,
    _table_types,
    _takes_index,
    _unchanged,
    _with_index,
    _with_tables,
)
from .linsolve import with_linsolve
from .methods import METHODS
from .start import initial_step

# the fixed-step kernels, the event components' names and the step's constants are re-exported
__all__ = ["dopri5_kernel", "dopri5_start_kernel", "rosenbrock23_kernel", "fixed_step_kernel",
           "sde_kernel", "locates_after",
           "STATUS_RUNNING", "STATUS_DONE", "STATUS_EVENT", "STATUS_FAILED", "STATUS_LOCATING",
           "FIXED_METHODS",
           "MAX_TABLES", "MAX_EVENTS", "LANDING_SLACK", "SMALLEST_STEP", "recorded_row_width",
           "carries_event", "event_width"]

_COUNTS = ("accepted", "rejected", "status", "events", "stops", "saves")


def locates_after(event, on_event, record_events) -> bool:
    """Whether ``dopri5_kernel`` with these event options may take ``locate_after=True``: an
    event that only ends samples (no ``on_event``, nothing recorded), so the crossing of a
    terminal component ends the sample and nothing after it in the run depends on where."""
    return event is not None and on_event is None and not record_events


#: the adaptive methods ``dopri5_kernel`` runs (``METHODS``' adaptive ones)
ADAPTIVE_METHODS = {name: m for name, m in METHODS.items() if m.adaptive}
#: the methods that take a Jacobian (``dopri5_kernel``'s ``jac=``)
IMPLICIT_METHODS = tuple(name for name, m in METHODS.items() if m.implicit)


@functools.cache
def dopri5_kernel(f: Func, state=Vec3, params=Scalar, *, event: Func | None = None,
                  on_event: Func | None = None, direction: int = -1, event_tol: float = 1e-12,
                  event_iterations: int = 12, event_samples: int = 4, tstops: bool = False,
                  on_stop: Func | None = None, saveat: bool = False,
                  saves_per_step: int = 4, tables: tuple = (),
                  method: str = "dopri5", terminal=None, record_events: bool = False,
                  jac: Func | None = None, linsolve: str = "lu",
                  locate_after: bool = False) -> hawk.Kernel:
    """The adaptive Dormand-Prince 5(4) ensemble kernel of ``u' = f(u, t, p)`` (or with
    ``method="tsit5"``, Tsitouras's 5(4) pair with the same controller, events and saveat).

    Args:
        f: the right-hand side, a ``@hawk.func`` ``f(u, t, p)`` returning ``du/dt`` shaped as
            ``u``.
        state: ``u``'s type: ``hawk.Scalar`` or a vector type (``hawk.Vec2`` ...
            ``hawk.Vector[K]``).
        params: how ``p`` is bound: ``hawk.Scalar`` (an array ``(n,)`` or a number),
            ``hawk.Param`` (one number), a vector or matrix type (``(k, n)``, ``(r, c, n)``),
            or ``Param[Vector[K]]``/``Param[Matrix[R, C]]`` (one ``(K,)`` or ``(R, C)`` array
            shared by every sample).
        event: a ``@hawk.func`` ``g(u, t, p)``: the sample has an event where ``g`` crosses
            zero in ``direction``; None (default) for none.
        on_event: a ``@hawk.func`` ``(u, t, p) -> u`` applied at the event (a bounce), after
            which integration goes on; None (default): the event ends the sample there. With
            one more parameter, ``(u, t, p, i) -> u``, it is given the index of the event's
            component that fired (0 for a number), for a vector-valued ``event``.
        direction: ``-1`` (default) for ``g`` falling through zero, ``1`` rising, ``0`` both.
        event_tol: how closely the event's time is located (absolute, in time).
        event_iterations: at most this many evaluations of ``g`` to locate an event.
        event_samples: the step is cut into this many parts, and ``g`` is looked at on the
            interpolant at their ends, so that two crossings within one step are seen (a step
            longer than the time between them can still miss both: bound it with
            ``max_step``).
        tstops: steps land exactly on the times ``stop_first + k * stop_every``.
        on_stop: a ``@hawk.func`` ``(u, t, p) -> u`` applied at each of those times (a kick);
            implies ``tstops``.
        saveat: record the state at the times ``save_first + k * save_every``, ``k`` from 0 to
            ``save_count - 1``, into the ``Series`` ``saved`` (row ``k``), from the step's
            interpolant (its order is the method's ``dense_order``: fourth for ``dopri5``,
            seventh and ninth for ``vern7`` and ``vern9``). With
            ``saveat="times"``, at the times listed in ``save_every``, then a ``Table`` (1-D,
            sorted, ``save_count`` of them; ``save_first`` unread): ``save_time``; with
            ``"sample_times"``, a ``Table[2]`` ``(save_count, n)``, column ``j`` sample
            ``j``'s times (read at ``hawk.sample_index()``).
        saves_per_step: at most this many recorded times fall in one step (a step is shortened
            to end at the last of them): each costs an interpolation per step.
        method: an adaptive method of ``hawk.ode.METHODS`` (``"dopri5"``, ``"tsit5"``,
            ``"vern7"``, ``"vern9"``, ``"rk23"``, ``"dop853"``, ``"rosenbrock23"``,
            ``"rodas5p"``; the kernel is named after it).
        terminal: None (default: the event ends the sample unless ``on_event`` is given), or
            a bool or a tuple of bools, one per component of a vector-valued ``event`` (up
            to ``MAX_EVENTS``; ``direction`` may then be a tuple too): a terminal
            component's crossing ends the sample, the others' are only recorded (or, with
            ``on_event``, call it; ``terminal=None`` with ``on_event`` is no component
            terminal). The earliest acting crossing of a step ends the step there.
        record_events: record every event (terminal or not) into the ``Series``
            ``t_events``, ``u_events`` and ``which_events`` (the component), row ``events``,
            in time order across steps (within one step, in the components' order), up to
            their rows; else those three are not read (no binding needed). Where no
            component acts (``recorded_row_width``), the rows hold each crossing's step and
            ``event_location_kernel`` locates them after the run; an event of one component
            then leaves ``which_events`` as it was (every row's is 0: a row written is one
            whose ``t_events`` is no longer NaN), one store fewer per step.
        tables: the dimensions of the tables the model reads, at most ``MAX_TABLES``: then
            ``f``, ``event``, ``on_event`` and ``on_stop`` take them after ``p``
            (``f(u, t, p, table0, table1)``), bound as ``table0``, ``table1``... (the unread
            ones need no binding).

        jac: for ``"rosenbrock23"`` and ``"rodas5p"``, a ``@hawk.func`` ``jac(u, t, p)``
            (tables after ``p``) returning ``df/du`` (a ``Matrix[k, k]``, a number for a
            scalar state) in place of ``hawk.jacobian``'s; ``df/dt`` is still taken by
            ``hawk.jacobian``.
        linsolve: for those methods, how their stages are solved: ``"lu"``, ``"refined"``
            or ``"sparse"`` (``hawk.ode.linsolve``).
        locate_after: for an event that only ends samples (``locates_after``): a step in
            which a terminal component crosses is not taken; the sample stops at the step's
            start with ``status`` ``STATUS_LOCATING``, and the same kernel without
            ``locate_after``, run one step on those samples (``Terminated`` where ``status``
            is not ``STATUS_LOCATING``, which is set back to ``STATUS_RUNNING`` first), takes
            the step again and locates the event: the same ops on the same numbers, so the
            same bits as locating it in the run. Why: a step is branch-free, so a location in
            it costs ``event_iterations`` evaluations of ``g`` on the interpolant in every
            step of every sample, crossed or not (``benchmarks/terminal_event.py``); after
            the run it costs one step per sample.

    The kernel's parameters, to bind (``eagle.ode.solve`` does it): ``p``; ``t_end``, ``rtol``,
    ``atol``, ``max_step`` (``Scalar``: per sample or one number; ``max_step`` bounds every
    step, ``inf`` for no bound); ``stop_first``, ``stop_every`` (``Param``,
    read only with ``tstops``); the state ``u`` and ``k1`` (``f(u, t, p)``), ``t``, ``h`` (the
    next step's size), ``c`` (the controller's memory; where the kernel carries the event,
    ``carries_event``, a ``Vector[1 + w]``: the memory, then ``g`` at ``(u, t)``): all set by
    ``dopri5_start_kernel`` and ``C_START`` (and ``recorded.event_value_kernel``); and the
    int64 counts ``accepted``, ``rejected``, ``status`` (``STATUS_RUNNING``...), ``events``,
    ``stops`` and ``saves`` (start them at 0; ``stops`` and ``saves`` at the index of the first
    stop or recorded time not before ``t``); with ``saveat``, ``save_first``, ``save_every``,
    ``save_count`` (``Param``) and ``saved`` (``Series`` of ``u``'s type, rows ``(save_count,
    ...)``, filled with NaN first).
    """
    _check_func("f", f)
    _check_types(state, params)
    _check_func("event", event, required=False)
    _check_func("on_event", on_event, required=False)
    _check_func("on_stop", on_stop, required=False)
    if on_event is not None and event is None:
        raise TypeError("on_event needs an event: pass event=g, the func whose zero it is")
    T0, T1, T2 = _table_types(tables)
    count = len(tables)
    indexed = on_event is not None and _takes_index(on_event, count)
    multi = terminal is not None or bool(record_events) or isinstance(direction, tuple) \
        or indexed
    if multi and event is None:
        raise TypeError("terminal=, record_events= and per-component directions need an "
                        "event: pass event=g")
    if not multi and direction not in (-1, 0, 1):
        raise ValueError(f"direction must be -1, 0 or 1, got {direction!r}")
    directions, terminals = _event_codes(direction, (on_event is None) if terminal is None
                                         else terminal)
    if not (isinstance(event_iterations, int) and 1 <= event_iterations <= 64):
        raise ValueError(f"event_iterations must be an int in [1, 64], got {event_iterations!r}")
    if not (isinstance(event_samples, int) and 1 <= event_samples <= 64):
        raise ValueError(f"event_samples must be an int in [1, 64], got {event_samples!r}")
    if not event_tol > 0.0:
        raise ValueError(f"event_tol must be a positive time, got {event_tol!r}")
    if not (isinstance(saves_per_step, int) and 1 <= saves_per_step <= 64):
        raise ValueError(f"saves_per_step must be an int in [1, 64], got {saves_per_step!r}")
    if method not in ADAPTIVE_METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, ADAPTIVE_METHODS))}, "
                         f"got {method!r}")
    chosen = ADAPTIVE_METHODS[method]
    attempt, value, control, norm = chosen.attempt, chosen.value, chosen.control, chosen.norm
    attempt = with_linsolve(chosen, linsolve)
    _check_func("jac", jac, required=False)
    if jac is not None and method not in IMPLICIT_METHODS:
        raise ValueError(f"jac is for the Rosenbrock methods ({', '.join(IMPLICIT_METHODS)}), "
                         f"not method={method!r}")
    has_jacobian = jac is not None
    given = _given_jacobian(jac, count) if has_jacobian else _never
    stepper = (attempt, has_jacobian, given, control, norm)
    has_saves = bool(saveat)
    save_time, SaveTimes = _save_times(saveat)
    has_event = event is not None
    ends_at_event = on_event is None
    if locate_after and not locates_after(event, on_event, record_events):
        raise ValueError("locate_after is for an event without on_event or record_events")
    has_stops = bool(tstops) or on_stop is not None
    kicks_at_stop = on_stop is not None
    model = _with_tables(f, count)
    # a pure recording without kicks carries g at (u, t) from one step to the next in c
    carried = event_width(event, state, params, tables) if carries_event(
        state, on_event, on_stop, terminal, record_events) else 0
    event = _with_tables(event, count) if event is not None else _never
    if indexed:
        on_event = _with_index(on_event, count)
    else:
        on_event = _with_tables(on_event, count) if on_event is not None else _unchanged
    on_stop = _with_tables(on_stop, count) if on_stop is not None else _unchanged
    picked = _component_event(event)
    records = bool(record_events)
    State = state
    TimeRows, StateRows = (Series[Scalar], Series[State]) if records else (Param, Param)
    # a pure recording (no component acts) writes each crossing's step, located afterwards
    row_width = recorded_row_width(state, None if ends_at_event else on_event, terminal,
                                   records, has_stops)
    if row_width:
        StateRows = Series[Vector[row_width]]
    Memory = Vector[1 + carried] if carried else Scalar

    def adaptive(p: params, t_end: Scalar, rtol: Scalar, atol: Scalar, max_step: Scalar,
               stop_first: Param, stop_every: Param, save_first: Param, save_every: SaveTimes,
               save_count: Param, terminated: Terminated, u: Mutable[State],
               k1: Mutable[State], t: Mutable[Scalar], h: Mutable[Scalar], c: Mutable[Memory],
               accepted: Mutable[Scalar], rejected: Mutable[Scalar], status: Mutable[Scalar],
               events: Mutable[Scalar], stops: Mutable[Scalar], saves: Mutable[Scalar],
               saved: Series[State], table0: T0, table1: T1, table2: T2,
               t_events: TimeRows, u_events: StateRows, which_events: TimeRows):
        args = (p, table0, table1, table2)  # what the model's funcs take after (u, t)
        start = (u, k1, t, h, c, accepted, rejected, events, stops, saves)
        stopping = (has_stops, stop_first, stop_every, stops)
        saving = (has_saves, saves, saves_per_step, save_count, save_time, save_first,
                  save_every)
        memory = c
        if carried == 1:  # the controller's memory, then g at (u, t)
            memory, g_start = c[0], c[1]
        elif carried > 1:
            memory, g_start = c[0], c[1:1 + carried]
        # the step: h, or shorter to end on t_end, on the next stop, or on the last recorded
        # time it may pass
        h_step, t_new, at_stop = step_size(h, max_step, t, t_end, stopping, saving)
        u_new, q, k_next, ok, h_next, c_next = controlled_attempt(
            stepper, model, u, k1, t, h_step, h, max_step, args, rtol, atol, memory)
        hit = False
        leaving = False  # the step crossed the event, and is left for the locating kernel
        t_reached = t_new
        if has_event and not multi:
            hit, theta = terminal_crossing(event, u, t, h_step, q, args, u_new, t_new, ok,
                                           direction, event_samples, event_tol,
                                           event_iterations, value)
            if locate_after:  # whether, not where: theta is left unread (never computed)
                leaving, hit = hit, False
        if has_event and multi:  # the earliest terminal crossing of the step, and records
            if carried > 0:
                g_old, g_new = g_start, event(u_new, t_new, args)
            else:
                g_old, g_new = event(u, t, args), event(u_new, t_new, args)
            hit, theta, which = False, 2.0, 0
            for i in range(hawk.width(g_old)):
                crossed_i, theta_i = _crossing_of(picked, u, t, h_step, q, (args, i), g_old,
                                                  g_new, (directions // 3**i) % 3 - 1,
                                                  event_samples, event_tol,
                                                  event_iterations, value)
                # a terminal component ends the sample; with on_event every one acts
                acts = not ends_at_event or (terminals >> i) & 1 == 1
                if locate_after:  # whether, not where: theta_i is left unread
                    if ok and crossed_i and acts:
                        leaving = True
                elif ok and crossed_i and acts and theta_i < theta:
                    hit, theta, which = True, theta_i, i
            if records and row_width > 0:  # the step of each crossing, for after the run
                for i in range(hawk.width(g_old)):
                    crossing = _component_crossing(picked, u, t, h_step, q, (args, i), g_old,
                                                   g_new, (directions // 3**i) % 3 - 1,
                                                   event_samples, value)
                    if ok and crossing[0]:  # located after the run
                        t_events[events] = t
                        if has_stops:
                            u_events[events] = hawk.concat(u, k1, t_new, h_step)
                        else:
                            u_events[events] = hawk.concat(u, h_step)
                        if hawk.width(g_old) > 1:  # one component's rows: 0, filled after
                            which_events[events] = i
                        events += 1
            elif records:
                for i in range(hawk.width(g_old)):
                    crossed_i, theta_i = _crossing_of(picked, u, t, h_step, q, (args, i),
                                                      g_old, g_new,
                                                      (directions // 3**i) % 3 - 1,
                                                      event_samples, event_tol,
                                                      event_iterations, value)
                    if ok and crossed_i and (not hit or theta_i <= theta):
                        t_events[events] = t + theta_i * h_step
                        u_events[events] = value(u, h_step, q, theta_i)
                        which_events[events] = i
                        events += 1
        kept = ok  # the step is kept: accepted, and not left for the locating kernel
        if locate_after:
            kept = ok and not leaving
        if has_event and not locate_after:
            t_event, u_event, t_reached = event_end(u, t, h_step, q, theta, value, hit, t_new)
        due, states, saves_next = saves_passed(saving, kept, t, t_new, t_reached, u, u_new,
                                               h_step, q, value)
        failed = not h_next > SMALLEST_STEP * abs(t)
        if hit:
            if not records:
                events += 1
            ending = ends_at_event
            if multi and not ends_at_event:  # a terminal component ends, the others update
                ending = (terminals >> which) & 1 == 1
            if ending:
                u, t = u_event, t_event
                status = STATUS_EVENT
            else:
                if indexed:
                    u = on_event(u_event, t_event, args, which if multi else 0)
                else:
                    u = on_event(u_event, t_event, args)
                t = t_event
                k1 = model(u, t, args)
        elif ok:
            u, k1, t = u_new, k_next, t_new
            if at_stop:
                stops += 1
                if kicks_at_stop:
                    u = on_stop(u, t, args)
                    k1 = model(u, t, args)
        if has_saves:  # the recorded times this step passed, up to where it ended
            for j in range(saves_per_step):
                if due[j]:
                    saved[saves + j] = states[j]
            saves = saves_next
        accepted, rejected, status = tally(ok, accepted, rejected, status, t, t_end, failed)
        if carried > 0:  # g at the next step's start: where this one ended, or its start again
            h, c = h_next, hawk.concat(c_next, g_new if ok else g_old)
        else:
            h, c = h_next, c_next
        if locate_after and leaving:
            u, k1, t, h, c, accepted, rejected, events, stops, saves = start
            status = STATUS_LOCATING
        terminated = status != STATUS_RUNNING

    adaptive.__name__ = adaptive.__qualname__ = method  # the kernel's (and reports') name
    return hawk.kernel(adaptive, dtypes={**dict.fromkeys(_COUNTS, "int64"),
                                         "which_events": "int64"})


def rosenbrock23_kernel(f: Func, state=Vec3, params=Scalar, *, saveat: bool = False,
                        saves_per_step: int = 4, tables: tuple = (), **events) -> hawk.Kernel:
    """The adaptive Rosenbrock23 ensemble kernel of a stiff ``u' = f(u, t, p)``
    (``hawk.ode.rosenbrock``: linearly implicit, L-stable, the Jacobian from
    ``hawk.jacobian``): ``dopri5_kernel(..., method="rosenbrock23")``, with the same
    parameters, events, stops and ``saveat`` (from the method's own interpolant).

    Args:
        f: the right-hand side, a ``@hawk.func`` ``f(u, t, p)`` shaped as ``u``.
        state: ``u``'s type: ``hawk.Scalar`` or a vector type.
        params: how ``p`` is bound (as for ``dopri5_kernel``).
        saveat: record the state at ``save_first + k * save_every`` into ``saved``.
        saves_per_step: at most this many recorded times fall in one step.
        tables: the dimensions of the tables the model reads (as for ``dopri5_kernel``).
        events: ``dopri5_kernel``'s event and stop options (``event=``, ``on_event=``...).
    """
    return dopri5_kernel(f, state, params, saveat=saveat, saves_per_step=saves_per_step,
                         tables=tables, method="rosenbrock23", **events)


@functools.cache
def dopri5_start_kernel(f: Func, state=Vec3, params=Scalar, *, tables: tuple = (),
                        method: str = "dopri5") -> hawk.Kernel:
    """The kernel that prepares ``dopri5_kernel``'s first step: one step sets ``k1 = f(u, t,
    p)`` and the initial step size ``h`` (``hawk.ode.start.initial_step``, with the exponent
    of ``method``'s ``start_order``) and ends the sample (bind ``terminated`` to a scratch
    array, not to the main kernel's flags).

    Args:
        f: the right-hand side, a ``@hawk.func`` ``f(u, t, p)`` shaped as ``u``.
        state: ``u``'s type: ``hawk.Scalar`` or a vector type (``hawk.Vec2`` ...
            ``hawk.Vector[K]``).
        params: how ``p`` is bound: ``hawk.Scalar``, ``hawk.Param`` or a vector type (as for
            ``dopri5_kernel``).
        tables: the dimensions of the tables the model reads (as for ``dopri5_kernel``).
        method: the adaptive method the first step is for (``METHODS``).
    """
    _check_func("f", f)
    _check_types(state, params)
    if method not in ADAPTIVE_METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, ADAPTIVE_METHODS))}, "
                         f"got {method!r}")
    exponent = 1.0 / (ADAPTIVE_METHODS[method].start_order + 1)
    T0, T1, T2 = _table_types(tables)
    model = _with_tables(f, len(tables))
    State = state

    @hawk.kernel
    def dopri5_prepare(p: params, t_end: Scalar, rtol: Scalar, atol: Scalar,
                     terminated: Terminated, u: State, t: Scalar, k1: Mutable[State],
                     h: Mutable[Scalar], table0: T0, table1: T1, table2: T2):
        args = (p, table0, table1, table2)
        k1, h = initial_step(model, u, t, t_end, args, rtol, atol, exponent)
        terminated = True

    return dopri5_prepare


