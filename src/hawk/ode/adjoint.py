"""The adjoint of an adaptive solve: a forward kernel that records each sample's accepted steps,
and a backward kernel that walks them in reverse (issue 44, the solve's part).

Forward (``recording_kernel``): the adaptive kernel of ``hawk.ode.kernels`` for an explicit
method without events, stops or ``saveat`` (the same ops in the same order, so the same end
state bit for bit), which also writes, at each accepted step ``k``, the state at the step's
start ``u_k``, its time ``t_k`` and its size ``h_k`` into the ``Series`` ``steps_u``,
``steps_t`` and ``steps_h`` (row ``k``). A sample that would take more accepted steps than the
rows hold (``budget``) stops there with ``status`` still running, for the caller to refuse.

Backward (``backward_kernel``): one eagle step per recorded step, last first. The accepted step
is the map ``u_{k+1} = Phi(u_k, p; t_k, h_k)``: ``k1 = f(u_k, t_k, p)`` and the method's attempt
from there (``Method.attempt``'s ``u_new``). From the cotangent ``lam`` of ``u_{k+1}`` it takes
``hawk.vjp`` of ``Phi`` in ``u_k`` (the new ``lam``) and in ``p`` (added to ``mu``), both
recomputed from the recorded ``u_k``. What comes out is the gradient of the computed solution
as a function of ``u0`` and ``p`` with the accepted steps' sizes held fixed: the controller's
dependence on ``p`` is left out, as discrete adjoints with fixed accepted steps do (its effect is
of the order of the tolerances).

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
from hawk.ir import Role

from .kernels import (
    SMALLEST_STEP,
    STATUS_RUNNING,
    _check_func,
    _check_types,
    _table_types,
    _tally,
    _with_tables,
)
from .methods import METHODS

__all__ = ["ADJOINT_METHODS", "recording_kernel", "backward_kernel", "step_map",
           "gradient_type"]

#: the methods the adjoint takes: the explicit adaptive ones (a tableau, no Jacobian)
ADJOINT_METHODS = tuple(name for name, m in METHODS.items()
                        if m.adaptive and not m.implicit and m.tableau is not None)


def _check_method(method: str) -> None:
    if method not in ADJOINT_METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, ADJOINT_METHODS))} for "
                         f"the adjoint, got {method!r}")


@functools.cache
def recording_kernel(f: Func, state, params, *, tables: tuple = (),
                     method: str = "dopri5") -> hawk.Kernel:
    """The adaptive ensemble kernel of ``u' = f(u, t, p)`` (``dopri5_kernel``'s parameters,
    without events, stops and ``saveat``) that also records each accepted step.

    Args:
        f: the right-hand side, a ``@hawk.func`` ``f(u, t, p)`` (tables after ``p``).
        state: ``u``'s type: ``hawk.Scalar`` or a vector type.
        params: how ``p`` is bound (as for ``dopri5_kernel``).
        tables: the dimensions of the tables the model reads.
        method: an explicit adaptive method (``ADJOINT_METHODS``).

    Its parameters beyond ``dopri5_kernel``'s: ``budget`` (``Param``, the rows of the three
    ``Series``) and ``steps_u`` (``Series`` of ``u``'s type), ``steps_t``, ``steps_h``
    (``Series[Scalar]``), rows ``(budget, ...)``. A sample whose accepted steps reach
    ``budget`` before it is done stops with ``status`` ``STATUS_RUNNING``.
    """
    _check_func("f", f)
    _check_types(state, params)
    _check_method(method)
    chosen = METHODS[method]
    attempt, control, norm = chosen.attempt, chosen.control, chosen.norm
    T0, T1, T2 = _table_types(tables)
    model = _with_tables(f, len(tables))
    State = state

    def recording(p: params, t_end: Scalar, rtol: Scalar, atol: Scalar, max_step: Scalar,
                  budget: Param, terminated: Terminated, u: Mutable[State],
                  k1: Mutable[State], t: Mutable[Scalar], h: Mutable[Scalar],
                  c: Mutable[Scalar], accepted: Mutable[Scalar], rejected: Mutable[Scalar],
                  status: Mutable[Scalar], steps_u: Series[State], steps_t: Series[Scalar],
                  steps_h: Series[Scalar], table0: T0, table1: T1, table2: T2):
        args = (p, table0, table1, table2)
        # the step, exactly as dopri5_kernel takes it without stops or saves
        h_step = hawk.minimum(hawk.minimum(h, max_step), t_end - t)
        t_new = t + h_step
        if h_step == t_end - t:
            t_new = t_end
        u_new, err, q, k_next = attempt(model, u, k1, t, h_step, args)
        ok, h_next, c_next = control(norm(err, u, u_new, rtol, atol), h_step, c)
        if ok and h_step < h:  # a shortened step does not shrink the next one
            h_next = hawk.maximum(h_next, h)
        h_next = hawk.minimum(h_next, max_step)
        failed = not h_next > SMALLEST_STEP * abs(t)
        if ok:
            steps_u[accepted] = u
            steps_t[accepted] = t
            steps_h[accepted] = h_step
            u, k1, t = u_new, k_next, t_new
        accepted, rejected, status = _tally(ok, accepted, rejected, status, t, t_end, failed)
        h, c = h_next, c_next
        terminated = status != STATUS_RUNNING or accepted >= budget

    recording.__name__ = recording.__qualname__ = f"{method}_recording"
    return hawk.kernel(recording, dtypes={"accepted": "int64", "rejected": "int64",
                                          "status": "int64"})


@functools.cache
def step_map(method: str):
    """The ``@hawk.func`` pair ``(in_u, in_p)`` of ``method``'s accepted step
    ``Phi(u, p; t, h)``: ``in_u(u, p, t, h, model, tables)`` and ``in_p(p, u, t, h, model,
    tables)`` (the differentiated argument first, for ``hawk.vjp``), ``k1 = model(u, t, args)``
    recomputed inside."""
    _check_method(method)
    attempt = METHODS[method].attempt

    @hawk.func
    def in_u(u, p, t, h, model, tables):
        args = (p, tables[0], tables[1], tables[2])
        k1 = model(u, t, args)
        return attempt(model, u, k1, t, h, args)[0]

    @hawk.func
    def in_p(p, u, t, h, model, tables):
        return in_u(u, p, t, h, model, tables)

    return in_u, in_p


def gradient_type(params):
    """The per-sample type of the cotangent of ``p`` bound as ``params``: ``Scalar`` for a
    number (shared or per sample), else the vector or matrix type itself, per sample."""
    if params.width == 1:
        return Scalar
    if params.columns:
        return hawk.Matrix[params.width // params.columns, params.columns]
    return hawk.Vector[params.width]


@hawk.func
def _row_of(steps_u, row, sample, width):
    """Row ``row`` of sample ``sample`` of the recorded states, a number or a vector."""
    if width == 1:
        return steps_u[row, sample]
    u = hawk.zeros(width)
    for j in range(width):
        u[j] = steps_u[row, j, sample]
    return u


@functools.cache
def backward_kernel(f: Func, state, params, *, tables: tuple = (),
                    method: str = "dopri5") -> hawk.Kernel:
    """The kernel that walks a sample's recorded steps backward: each eagle step takes row
    ``row - 1``, sets ``lam`` to ``lam^T dPhi/du`` there and adds ``lam^T dPhi/dp`` to ``mu``;
    the sample ends when ``row`` reaches 0.

    Args:
        f: the right-hand side the forward solve integrated (tables after ``p``).
        state: ``u``'s type.
        params: how ``p`` is bound.
        tables: the dimensions of the tables the model reads.
        method: the explicit adaptive method the forward solve took.

    Its parameters: ``p`` and ``table0..2`` as the forward kernel's; ``steps_u``, ``steps_t``,
    ``steps_h``: the forward kernel's ``Series`` bound as tables; ``row`` (int64, start at
    each sample's accepted steps), ``lam`` (start at the end state's cotangent) and ``mu``
    (``gradient_type(params)``, start at 0).
    """
    _check_func("f", f)
    _check_types(state, params)
    in_u, in_p = step_map(method)
    T0, T1, T2 = _table_types(tables)
    model = _with_tables(f, len(tables))
    State, Gradient = state, gradient_type(params)
    width = 1 if state.role is Role.SCALAR and state.width == 1 else state.width
    Rows = Table[2] if width == 1 else Table[3]

    def backward(p: params, steps_u: Rows, steps_t: Table[2], steps_h: Table[2],
                 terminated: Terminated, row: Mutable[Scalar], lam: Mutable[State],
                 mu: Mutable[Gradient], table0: T0, table1: T1, table2: T2):
        if row > 0:
            row -= 1
            sample = hawk.sample_index()
            u = _row_of(steps_u, row, sample, width)
            t, h = steps_t[row, sample], steps_h[row, sample]
            tabs = (table0, table1, table2)
            p_bar = hawk.vjp(in_p, p, lam, u, t, h, model, tabs)[1]
            lam = hawk.vjp(in_u, u, lam, p, t, h, model, tabs)[1]
            mu = mu + p_bar
        terminated = row <= 0

    backward.__name__ = backward.__qualname__ = f"{method}_backward"
    return hawk.kernel(backward, dtypes={"row": "int64"})
