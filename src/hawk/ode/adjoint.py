"""The adjoint of an adaptive solve: a forward kernel that records each sample's accepted steps,
and a backward kernel that walks them in reverse (issue 44, the solve's part).

Forward (``recording_kernel``): the adaptive kernel of ``hawk.ode.kernels`` for an adaptive
method (explicit, or Rosenbrock with ``hawk.jacobian``'s Jacobian) without events or stops,
``saveat`` included (the same ops in the same order, so the same end state and saved states
bit for bit), which also writes, at each accepted step ``k``, the state at the step's start
``u_k``, its time ``t_k`` and its size ``h_k`` into the ``Series`` ``steps_u``, ``steps_t``
and ``steps_h`` (row ``k``). A sample that would take more
accepted steps than the rows hold (``budget``) stops there with ``status`` still running, for
the caller to refuse.

Backward (``backward_kernel``): one eagle step per recorded step, last first. The accepted step
is the map ``u_{k+1} = Phi(u_k, p; t_k, h_k)``: ``k1 = f(u_k, t_k, p)`` and the method's attempt
from there (``Method.attempt``'s ``u_new``). From the cotangent ``lam`` of ``u_{k+1}`` it takes
``hawk.grad`` of ``<lam, Phi>`` in ``(u_k, p)``: one reverse sweep over the step recomputed once
from the recorded ``u_k`` gives the new ``lam`` and the share of ``p`` added to ``mu``; with
``saveat`` the number differentiated is ``<lam, Phi> + sum_j <dsaved_j, s_j>`` over the states
``s_j`` the step saved (its interpolant at their ``theta``, or ``u_{k+1}`` for one at the step's
end, as the forward chose), found again from the recorded times (a countdown of ``saves``). What
comes out is the gradient of the computed solution as a function of ``u0`` and ``p`` with the
accepted steps' sizes held fixed: the controller's dependence on ``p`` is left out, as discrete
adjoints with fixed accepted steps do (its effect is of the order of the tolerances). A
Rosenbrock step's Jacobian (``hawk.jacobian``, forward mode) and linear solves (``hawk.solve``'s
LU) are differentiated in reverse through the ops they lower to.

The recorded rows are read back as tables (``Table[3]`` for a vector state, ``Table[2]`` for a
number and for the times and sizes) at the sample's own column, ``hawk.sample_index()``.
"""

# ruff: noqa: F841 -- a kernel body assigns its parameters: they are written back, not unused

# No `from __future__ import annotations` here: the kernels' annotations name the factory's
# arguments (``state``, ``params``), which must be evaluated when each kernel is defined.
import functools

import hawk
from hawk import Mutable, Param, Scalar, Series, Table, Terminated
from hawk.inline import Func
from hawk.ir import MAX_WIDTH, Role

from . import adaptive_step as adaptive
from . import kernel_args
from .kernel_args import (
    MAX_TABLES,
    _check_func,
    _check_types,
    _never,
    _save_times,
    _table_types,
    _with_tables,
)
from .linsolve import with_linsolve
from .methods import METHODS

__all__ = ["ADJOINT_METHODS", "SAVES_PER_STEP", "MAX_TABLE_GRADIENT_ELEMENTS", "recording_kernel",
           "backward_kernel", "step_map", "step_objective", "gradient_type"]

#: the most recorded times one step of the recording kernel passes (its ``saves_per_step``
#: default): a step is shortened to end at the last of them
SAVES_PER_STEP = 4
#: the methods the adjoint takes: every adaptive one (the Rosenbrock methods' Jacobian and
#: linear solves differentiated through ``hawk.jacobian`` and ``hawk.solve``'s algorithm)
ADJOINT_METHODS = tuple(name for name, m in METHODS.items() if m.adaptive)


def _check_method(method: str) -> None:
    if method not in ADJOINT_METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, ADJOINT_METHODS))} for "
                         f"the adjoint, got {method!r}")


def _attempt(method: str, jac: Func | None, linsolve: str, count: int):
    """``method``'s attempt as the adjoint's kernels call it, ``(f, u, k1, t, h, args)``:
    solving its stages by ``linsolve`` and, given a user's ``jac`` (``count`` tables after
    ``p``), with that Jacobian. The method's own attempt where neither is asked for, so those
    kernels lower exactly as before."""
    attempt = with_linsolve(METHODS[method], linsolve)
    if jac is None:
        return attempt
    return _with_jacobian(attempt, kernel_args._given_jacobian(jac, count))


@functools.cache
def _with_jacobian(attempt, given):
    @hawk.func
    def jacobian_given(f, u, k1, t, h, p):
        return attempt(f, u, k1, t, h, p, given)

    return jacobian_given


@functools.cache
def recording_kernel(f: Func, state, params, *, tables: tuple = (), method: str = "dopri5",
                     saveat=False, saves_per_step: int = SAVES_PER_STEP, event: Func | None = None,
                     direction: int = -1, event_tol: float = 1e-12,
                     event_iterations: int = 12, event_samples: int = 4,
                     jac: Func | None = None, linsolve: str = "lu") -> hawk.Kernel:
    """The adaptive ensemble kernel of ``u' = f(u, t, p)`` (``dopri5_kernel``'s parameters,
    without events and stops) that also records each accepted step.

    Args:
        f: the right-hand side, a ``@hawk.func`` ``f(u, t, p)`` (tables after ``p``).
        state: ``u``'s type: ``hawk.Scalar`` or a vector type.
        params: how ``p`` is bound (as for ``dopri5_kernel``).
        tables: the dimensions of the tables the model reads.
        method: an adaptive method (``ADJOINT_METHODS``).
        saveat: record the state at ``save_first + k * save_every`` into ``saved`` (True;
            ``"times"``: at the times listed in the ``Table`` ``save_every``,
            ``"sample_times"``: each sample's column of a ``Table[2]``), as ``dopri5_kernel``
            does (the same steps, shortened the same way).
        saves_per_step: at most this many recorded times fall in one step.
        event: a terminal event ``g(u, t, p)`` (a number; tables after ``p``), located as
            ``dopri5_kernel`` locates it (``direction``, ``event_tol``, ``event_iterations``,
            ``event_samples`` as there); the sample ends there, its step recorded like any
            other and the fraction of it where the event is in ``theta_end``.

    Its parameters beyond ``dopri5_kernel``'s: ``budget`` (``Param``, the rows of the three
    ``Series``) and ``steps_u`` (``Series`` of ``u``'s type), ``steps_t``, ``steps_h``
    (``Series[Scalar]``), rows ``(budget, ...)``. A sample whose accepted steps reach
    ``budget`` before it is done stops with ``status`` ``STATUS_RUNNING``.
    """
    _check_func("f", f)
    _check_types(state, params)
    _check_method(method)
    chosen = METHODS[method]
    _check_func("jac", jac, required=False)
    stepper = (_attempt(method, jac, linsolve, len(tables)), False, _never, chosen.control,
               chosen.norm)
    value = chosen.value
    T0, T1, T2 = _table_types(tables)
    model = _with_tables(f, len(tables))
    State = state
    has_saves = bool(saveat)
    save_time, SaveTimes = _save_times(saveat)
    _check_func("event", event, required=False)
    has_event = event is not None
    event = _with_tables(event, len(tables)) if has_event else _never

    def recording(p: params, t_end: Scalar, rtol: Scalar, atol: Scalar, max_step: Scalar,
                  save_first: Param, save_every: SaveTimes, save_count: Param,
                  saves: Mutable[Scalar], saved: Series[State],
                  budget: Param, terminated: Terminated, u: Mutable[State],
                  k1: Mutable[State], t: Mutable[Scalar], h: Mutable[Scalar],
                  c: Mutable[Scalar], accepted: Mutable[Scalar], rejected: Mutable[Scalar],
                  status: Mutable[Scalar], steps_u: Series[State], steps_t: Series[Scalar],
                  steps_h: Series[Scalar], events: Mutable[Scalar],
                  theta_end: Mutable[Scalar], table0: T0, table1: T1, table2: T2):
        args = (p, table0, table1, table2)
        # the step, exactly as dopri5_kernel takes it without stops
        saving = (has_saves, saves, saves_per_step, save_count, save_time, save_first,
                  save_every)
        h_step, t_new, at_stop = adaptive.step_size(h, max_step, t, t_end, adaptive.NO_STOPS,
                                                    saving)
        u_new, q, k_next, ok, h_next, c_next = adaptive.controlled_attempt(
            stepper, model, u, k1, t, h_step, h, max_step, args, rtol, atol, c)
        hit = False
        t_reached = t_new
        if has_event:  # as dopri5_kernel locates a single terminal event
            hit, theta = adaptive.terminal_crossing(event, u, t, h_step, q, args, u_new, t_new,
                                                    ok, direction, event_samples, event_tol,
                                                    event_iterations, value)
            t_event, u_event, t_reached = adaptive.event_end(u, t, h_step, q, theta, value, hit,
                                                             t_new)
        due, states, saves_next = adaptive.saves_passed(saving, ok, t, t_new, t_reached, u,
                                                        u_new, h_step, q, value)
        failed = not h_next > adaptive.SMALLEST_STEP * abs(t)
        if has_saves:  # the recorded times this step passed, up to where it ended
            for j in range(saves_per_step):
                if due[j]:
                    saved[saves + j] = states[j]
        if ok:
            steps_u[accepted] = u
            steps_t[accepted] = t
            steps_h[accepted] = h_step
        if hit:
            events += 1
            u, t = u_event, t_event
            status = adaptive.STATUS_EVENT
            theta_end = theta
        elif ok:
            u, k1, t = u_new, k_next, t_new
        accepted, rejected, status = adaptive.tally(ok, accepted, rejected, status, t, t_end,
                                                    failed)
        h, c, saves = h_next, c_next, saves_next
        terminated = status != adaptive.STATUS_RUNNING or accepted >= budget

    recording.__name__ = recording.__qualname__ = f"{method}_recording"
    return hawk.kernel(recording, dtypes={"accepted": "int64", "rejected": "int64",
                                          "status": "int64", "saves": "int64",
                                          "events": "int64"})


@functools.cache
def step_map(method: str, jac: Func | None = None, linsolve: str = "lu", count: int = 0):
    """The ``@hawk.func`` ``in_u(u, p, t, h, model, tables)`` of ``method``'s accepted step
    ``Phi(u, p; t, h)``, ``k1 = model(u, t, args)`` recomputed inside (``jac``, ``linsolve``
    and ``count``: ``_attempt``'s)."""
    _check_method(method)
    attempt = _attempt(method, jac, linsolve, count)

    @hawk.func
    def in_u(u, p, t, h, model, tables):
        args = (p, tables[0], tables[1], tables[2])
        k1 = model(u, t, args)
        return attempt(model, u, k1, t, h, args)[0]

    return in_u


@functools.cache
def step_objective(method: str, saves_per_step: int, has_event: bool = False,
                   jac: Func | None = None, linsolve: str = "lu", count: int = 0):
    """The ``@hawk.func`` of the number a backward step differentiates, in ``(u, p)`` at once
    (one ``hawk.grad`` sweep gives both cotangents, the step recomputed once):
    ``<lam, Phi(u, p; t, h)>`` plus ``<cts[j], s_j>`` over the step's recorded times ``j``,
    ``s_j`` the state saved there (``u_new`` where ``ends[j]`` is 1, else the interpolant at
    ``thetas[j]``; a ``cts[j]`` of zeros for a slot the step has no time in).
    ``objective(up, t, h, model, tables, lam, cts, thetas, ends, event, ev)`` with ``up`` the
    tuple ``(u, p)``. With ``has_event``, ``ev = (e, theta, c)``: where ``e`` is 1 (the step a
    terminal event ended) ``<lam, Phi>`` is replaced by ``<lam, s(theta)> - c g(s(theta),
    t + theta h)``, ``s`` the interpolant and ``c`` the multiplier that moves ``theta`` with
    ``u`` and ``p`` (``event_multiplier``). ``jac``, ``linsolve``, ``count``: ``_attempt``'s."""
    _check_method(method)
    attempt, value = _attempt(method, jac, linsolve, count), METHODS[method].value
    saves = saves_per_step

    @hawk.func
    def objective(up, t, h, model, tables, lam, cts, thetas, ends, event, ev):
        u, p = up[0], up[1]
        args = (p, tables[0], tables[1], tables[2])
        k1 = model(u, t, args)
        u_new, err, q, k_next = attempt(model, u, k1, t, h, args)
        total = hawk.total(lam * u_new)
        if has_event:
            at = value(u, h, q, ev[1])
            ended = hawk.total(lam * at) - ev[2] * event(at, t + ev[1] * h, args)
            total = (1.0 - ev[0]) * total + ev[0] * ended
        for j in range(saves):
            inside = value(u, h, q, thetas[j])
            total = total + hawk.total(cts[j] * (ends[j] * u_new + (1.0 - ends[j]) * inside))
        return total

    return objective


@functools.cache
def event_multiplier(method: str, jac: Func | None = None, linsolve: str = "lu",
                     count: int = 0):
    """The ``@hawk.func`` ``(lam, theta, u, p, t, h, model, tables, event) -> c``: for the
    step a terminal event ended at ``theta`` (``g(s(theta), t + theta h) = 0``, ``s`` the
    interpolant), ``c = <lam, ds/dtheta> / (dg/dtheta)``, so that ``<lam, s> - c g`` has the
    gradient of ``<lam, s(theta(u, p))>`` with ``theta`` held (implicit differentiation).
    ``jac``, ``linsolve``, ``count``: ``_attempt``'s."""
    _check_method(method)
    attempt, value = _attempt(method, jac, linsolve, count), METHODS[method].value

    @hawk.func
    def state_at(theta, u, p, t, h, model, tables):
        args = (p, tables[0], tables[1], tables[2])
        q = attempt(model, u, model(u, t, args), t, h, args)[2]
        return value(u, h, q, theta)

    @hawk.func
    def event_at(theta, u, p, t, h, model, tables, event):
        args = (p, tables[0], tables[1], tables[2])
        return event(state_at(theta, u, p, t, h, model, tables), t + theta * h, args)

    @hawk.func
    def multiplier(lam, theta, u, p, t, h, model, tables, event):
        slope = hawk.jvp(state_at, theta, 1.0, u, p, t, h, model, tables)[1]
        rate = hawk.jvp(event_at, theta, 1.0, u, p, t, h, model, tables, event)[1]
        return hawk.total(lam * slope) / rate

    return multiplier


def gradient_type(params):
    """The per-sample type of the cotangent of ``p`` bound as ``params``: ``Scalar`` for a
    number (shared or per sample), else the vector or matrix type itself, per sample."""
    if params.width == 1:
        return Scalar
    if params.columns:
        return hawk.Matrix[params.width // params.columns, params.columns]
    return hawk.Vector[params.width]


@hawk.func
def _row_of(rows, row, sample, width):
    """Row ``row`` of sample ``sample`` of recorded states ``rows``, a number or a vector."""
    if width == 1:
        return rows[row, sample]
    u = hawk.zeros(width)
    for j in range(width):
        u[j] = rows[row, j, sample]
    return u


@hawk.func
def _zeros(width):
    """Zero, shaped as a state of ``width`` components."""
    if width == 1:
        return 0.0
    return hawk.zeros(width)


@hawk.func
def _step_saves(dsaved, sample, width, first_step, t, h, t_new, saves, first_save,
                save_time, save_first, save_every, count):
    """The cotangents of the states a step saved (``(cts, thetas, ends, taken)``): the recorded
    times ``saves - 1``, ``saves - 2``... that lie after the step's start ``t`` (at it too for
    the first step), at most ``count``; a slot past them gets zeros. A time equal to the end
    ``t_new`` the forward step computed was saved as its ``u_new`` (``ends``). Recorded time
    ``k`` is ``save_time(save_first, save_every, k)``, as in the forward kernel."""
    cts, thetas, ends = (), (), ()
    taken = 0
    for j in range(count):
        index = saves - 1 - j
        t_save = save_time(save_first, save_every, index)
        inside = index >= first_save and (t_save > t or first_step) and taken == j
        ct = _zeros(width)
        theta = 0.0
        end = 0.0
        if inside:
            ct = _row_of(dsaved, index, sample, width)
            theta = (t_save - t) / h
            taken += 1
            if t_save == t_new:
                end = 1.0
        cts = cts + (ct,)
        thetas = thetas + (theta,)
        ends = ends + (end,)
    return cts, thetas, ends, taken


#: the most elements the tables a backward kernel differentiates in may hold together: its
#: per-sample cotangent of them is one vector (``hawk.MAX_WIDTH`` components at most)
MAX_TABLE_GRADIENT_ELEMENTS = MAX_WIDTH


def _check_table_sizes(tables: tuple, table_sizes: tuple) -> int:
    """The elements of the differentiated tables together, after a ``ValueError`` for
    ``table_sizes`` that are not one int >= 0 per table, or that sum past
    ``MAX_TABLE_GRADIENT_ELEMENTS``."""
    if not (isinstance(table_sizes, tuple) and len(table_sizes) == len(tables)
            and all(type(s) is int and s >= 0 for s in table_sizes)):
        raise ValueError(f"table_sizes must be one int >= 0 per table ({len(tables)}), the "
                         f"elements of each table differentiated in (0: not), got "
                         f"{table_sizes!r}")
    total = sum(table_sizes)
    if total > MAX_TABLE_GRADIENT_ELEMENTS:
        raise ValueError(f"table_sizes: the tables differentiated in hold {total} elements "
                         f"together, more than {MAX_TABLE_GRADIENT_ELEMENTS} (their per-sample "
                         "cotangent is one vector)")
    return total


@functools.cache
def backward_kernel(f: Func, state, params, *, tables: tuple = (), method: str = "dopri5",
                    saves_per_step: int = SAVES_PER_STEP, event: Func | None = None,
                    saveat=False, table_sizes: tuple | None = None, jac: Func | None = None,
                    linsolve: str = "lu") -> hawk.Kernel:
    """The kernel that walks a sample's recorded steps backward: each eagle step takes row
    ``row - 1``, sets ``lam`` to ``lam^T dPhi/du`` there (plus the cotangents of the states
    the step saved, through the interpolant) and adds the same in ``p`` to ``mu``; the
    sample ends when ``row`` reaches 0.

    Args:
        f: the right-hand side the forward solve integrated (tables after ``p``).
        state: ``u``'s type.
        params: how ``p`` is bound.
        tables: the dimensions of the tables the model reads.
        method: the adaptive method the forward solve took.
        saves_per_step: the forward kernel's.
        saveat: how the forward kernel read its recorded times (``True``: the grid;
            ``"times"``, ``"sample_times"``: a table bound as ``save_every``), for their
            cotangents ``dsaved``; False without them (no interpolant is differentiated then,
            and what only it reads, such as an FSAL method's last stage, is not computed).
        event: the forward kernel's terminal event, or None: then the last step of a sample
            whose ``status`` is ``STATUS_EVENT`` ends at ``theta_end`` of it, a point that
            moves with ``u`` and ``p`` (``event_multiplier``).
        table_sizes: None, or the elements of each table (one int per entry of ``tables``)
            to differentiate in, 0 for a table left out: then the kernel also adds each
            step's cotangent of those tables' values (``hawk.table_values``) to ``mu_tables``
            (``Mutable``, a vector of their elements together, table by table, row-major; a
            number for one element), ``MAX_TABLE_GRADIENT_ELEMENTS`` at most. Each must be
            bound to a float table of exactly that many elements. Without them the kernel is
            the one without ``mu_tables``, its ops unchanged.

    Its parameters: ``p`` and ``table0..2`` as the forward kernel's; ``steps_u``, ``steps_t``,
    ``steps_h``: the forward kernel's ``Series`` bound as tables; ``row`` (int64, start at
    each sample's accepted steps), ``lam`` (start at the end state's cotangent), ``mu``
    (``gradient_type(params)``, start at 0), ``t_next`` (start at the end time); for the
    ``saveat`` states, ``dsaved`` (their cotangents, a table shaped as ``saved``; one row of
    zeros without), ``save_first``, ``save_every`` (as bound forward), ``first_save`` (int64, the
    forward's first ``saves``) and ``saves`` (int64, start at the forward's last); with an
    event, ``status``, ``accepted`` (int64: the forward's) and ``theta_end``.
    """
    _check_func("f", f)
    _check_types(state, params)
    has_event = event is not None
    _check_func("jac", jac, required=False)
    solving = (jac, linsolve, len(tables))
    objective = step_objective(method, saves_per_step if saveat else 0, has_event, *solving)
    multiplier = event_multiplier(method, *solving)
    T0, T1, T2 = _table_types(tables)
    model = _with_tables(f, len(tables))
    event = _with_tables(event, len(tables)) if has_event else _never
    State, Gradient = state, gradient_type(params)
    width = 1 if state.role is Role.SCALAR and state.width == 1 else state.width
    Rows = Table[2] if width == 1 else Table[3]
    count = saves_per_step if saveat else 0
    save_time, SaveTimes = _save_times(saveat)
    sizes, TableGradient = (0, 0, 0), Scalar
    if table_sizes is not None:
        elements = _check_table_sizes(tables, table_sizes)
        sizes = (*table_sizes, 0, 0, 0)[:MAX_TABLES]
        TableGradient = Scalar if elements == 1 else hawk.Vector[elements]
    size0, size1, size2 = sizes

    @hawk.func
    def step(row, p, steps_u, steps_t, steps_h, dsaved, save_first, save_every, first_save,
             lam, mu, t_next, saves, status, accepted, theta_end, tabs):
        """Row ``row`` walked back: ``(lam, mu, table_bars, saves, t)``: ``mu`` plus the
        step's cotangent of ``p``, those of the wanted tables' values (``hawk.grad``'s of
        ``(u, p, ...)`` after the first two), the recorded times left once the step's are
        taken off, and the step's start ``t``, the next row's ``t_next``."""
        sample = hawk.sample_index()
        u = _row_of(steps_u, row, sample, width)
        t, h = steps_t[row, sample], steps_h[row, sample]
        at_event = False
        t_new = t_next  # where the forward step ended: the next step's start
        if has_event:
            at_event = status == adaptive.STATUS_EVENT and row + 1 == accepted
            if at_event:  # it ended at the event, inside the step it computed
                t_new = t + h
        cts, thetas, ends, taken = _step_saves(dsaved, sample, width, row == 0, t, h,
                                               t_new, saves, first_save, save_time,
                                               save_first, save_every, count)
        e, theta, c = 0.0, 1.0, 0.0
        if has_event:
            if at_event:
                e, theta = 1.0, theta_end
            c = e * multiplier(lam, theta, u, p, t, h, model, tabs, event)
        ev = (e, theta, c)
        x = (u, p)
        if size0 > 0:
            x = x + (hawk.table_values(tabs[0], size0),)
        if size1 > 0:
            x = x + (hawk.table_values(tabs[1], size1),)
        if size2 > 0:
            x = x + (hawk.table_values(tabs[2], size2),)
        bars = hawk.grad(objective, x, t, h, model, tabs, lam, cts, thetas, ends, event, ev)
        return bars[0], mu + bars[1], bars[2:], saves - taken, t

    def backward(p: params, steps_u: Rows, steps_t: Table[2], steps_h: Table[2],
                 dsaved: Rows, save_first: Param, save_every: SaveTimes, first_save: Scalar,
                 terminated: Terminated, row: Mutable[Scalar], lam: Mutable[State],
                 mu: Mutable[Gradient], t_next: Mutable[Scalar], saves: Mutable[Scalar],
                 status: Scalar, accepted: Scalar, theta_end: Scalar,
                 table0: T0, table1: T1, table2: T2):
        if row > 0:
            row -= 1
            lam, mu, _, saves, t_next = step(row, p, steps_u, steps_t, steps_h, dsaved,
                                             save_first, save_every, first_save, lam, mu,
                                             t_next, saves, status, accepted, theta_end,
                                             (table0, table1, table2))
        terminated = row <= 0

    def backward_tables(p: params, steps_u: Rows, steps_t: Table[2], steps_h: Table[2],
                        dsaved: Rows, save_first: Param, save_every: SaveTimes,
                        first_save: Scalar, terminated: Terminated, row: Mutable[Scalar],
                        lam: Mutable[State], mu: Mutable[Gradient], t_next: Mutable[Scalar],
                        saves: Mutable[Scalar], status: Scalar, accepted: Scalar,
                        theta_end: Scalar, table0: T0, table1: T1, table2: T2,
                        mu_tables: Mutable[TableGradient]):
        if row > 0:
            row -= 1
            lam, mu, table_bars, saves, t_next = step(
                row, p, steps_u, steps_t, steps_h, dsaved, save_first, save_every, first_save,
                lam, mu, t_next, saves, status, accepted, theta_end, (table0, table1, table2))
            mu_tables = mu_tables + hawk.concat(*table_bars)
        terminated = row <= 0

    body = backward if table_sizes is None else backward_tables
    body.__name__ = body.__qualname__ = f"{method}_backward"
    return hawk.kernel(body, dtypes={"row": "int64", "saves": "int64", "first_save": "int64",
                                     "status": "int64", "accepted": "int64"})
