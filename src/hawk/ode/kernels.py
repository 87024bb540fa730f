"""Ready-made kernels: an ensemble integrator from a right-hand side, in one call.

Each factory writes nothing new: its kernel is ordinary hawk code that calls the integrators of
``hawk.ode`` with the model func ``f`` (and the event, noise or stop funcs) it closes over, so
every backend compiles it and the reference executor defines it like any other kernel. Features
a call does not ask for are switched off by compile-time flags, so they cost nothing.

One eagle step is one attempted integrator step: ``until_done``, ``max_steps``, checkpoints,
progress, Dask and the GPU graph work as for any kernel. ``eagle.ode.solve`` binds these kernels
to arrays and runs them; use the kernels directly to keep the arrays (and a runner) yourself.
"""

# ruff: noqa: F841 -- a kernel body assigns its parameters: they are written back, not unused

# No `from __future__ import annotations` here: the kernels' annotations name the factory's
# arguments (``state``, ``params``), which must be evaluated when each kernel is defined.
import functools

import hawk
from hawk import Mutable, Param, Scalar, Terminated, Vec2, Vec3, Vec4
from hawk.inline import Func

from .dopri5 import (
    dense_coefficients,
    dense_value,
    dopri5_attempt,
    dopri5_control,
    dopri5_start,
    error_norm,
)
from .events import first_crossing, locate
from .fixed import euler, euler_maruyama, rk4

__all__ = ["dopri5_kernel", "dopri5_start_kernel", "fixed_step_kernel", "sde_kernel",
           "STATUS_RUNNING", "STATUS_DONE", "STATUS_EVENT", "STATUS_FAILED", "FIXED_METHODS"]

#: ``status`` values of an adaptive run, per sample
STATUS_RUNNING, STATUS_DONE, STATUS_EVENT, STATUS_FAILED = 0, 1, 2, -1
#: the fixed-step methods ``fixed_step_kernel`` knows, by name
FIXED_METHODS = {"euler": euler, "rk4": rk4}
#: a fixed step lands on ``t_end`` when it is this much (relative) short of it or longer
LANDING_SLACK = 1e-9
#: the smallest step, relative to ``|t|``, before a sample is given up (Hairer's test)
SMALLEST_STEP = 10 * 2.0**-52
_COUNTS = ("accepted", "rejected", "status", "events", "stops")


@hawk.func
def _never(u, t, p):
    return 1.0


@hawk.func
def _unchanged(u, t, p):
    return u


def _check_types(state, params) -> None:
    if state not in (Scalar, Vec2, Vec3, Vec4):
        raise TypeError(f"state must be hawk.Scalar, Vec2, Vec3 or Vec4 (the shape of u), "
                        f"got {state!r}")
    if params not in (Scalar, Param, Vec2, Vec3, Vec4):
        raise TypeError(f"params must be hawk.Scalar, Param, Vec2, Vec3 or Vec4 (how p is "
                        f"bound: per sample, one for all, or a vector per sample), got {params!r}")


def _check_func(name: str, value, required: bool = True) -> None:
    if value is None and not required:
        return
    if not isinstance(value, Func):
        raise TypeError(f"{name} must be a @hawk.func taking (u, t, p), got {value!r}")


@functools.cache
def dopri5_kernel(f: Func, state=Vec3, params=Scalar, *, event: Func | None = None,
                  on_event: Func | None = None, direction: int = -1, event_tol: float = 1e-12,
                  event_iterations: int = 12, event_samples: int = 4, tstops: bool = False,
                  on_stop: Func | None = None) -> hawk.Kernel:
    """The adaptive Dormand-Prince 5(4) ensemble kernel of ``u' = f(u, t, p)``.

    Args:
        f: the right-hand side, a ``@hawk.func`` ``f(u, t, p)`` returning ``du/dt`` shaped as
            ``u``.
        state: ``u``'s type: ``hawk.Scalar`` or ``hawk.Vec2``/``Vec3``/``Vec4``.
        params: how ``p`` is bound: ``hawk.Scalar`` (an array ``(n,)`` or a number),
            ``hawk.Param`` (one number), or ``hawk.Vec2``/``Vec3``/``Vec4`` (``(k, n)``).
        event: a ``@hawk.func`` ``g(u, t, p)``: the sample has an event where ``g`` crosses
            zero in ``direction``; None (default) for none.
        on_event: a ``@hawk.func`` ``(u, t, p) -> u`` applied at the event (a bounce), after
            which integration goes on; None (default): the event ends the sample there.
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

    The kernel's parameters, to bind (``eagle.ode.solve`` does it): ``p``; ``t_end``, ``rtol``,
    ``atol``, ``max_step`` (``Scalar``: per sample or one number; ``max_step`` bounds every
    step, ``inf`` for no bound); ``stop_first``, ``stop_every`` (``Param``,
    read only with ``tstops``); the state ``u`` and ``k1`` (``f(u, t, p)``), ``t``, ``h`` (the
    next step's size), ``c`` (the controller's memory): all set by ``dopri5_start_kernel`` and
    ``C_START``; and the int64 counts ``accepted``, ``rejected``, ``status``
    (``STATUS_RUNNING``...), ``events`` and ``stops`` (start them at 0; ``stops`` at the index
    of the first stop not before ``t``).
    """
    _check_func("f", f)
    _check_types(state, params)
    _check_func("event", event, required=False)
    _check_func("on_event", on_event, required=False)
    _check_func("on_stop", on_stop, required=False)
    if on_event is not None and event is None:
        raise TypeError("on_event needs an event: pass event=g, the func whose zero it is")
    if direction not in (-1, 0, 1):
        raise ValueError(f"direction must be -1, 0 or 1, got {direction!r}")
    if not (isinstance(event_iterations, int) and 1 <= event_iterations <= 64):
        raise ValueError(f"event_iterations must be an int in [1, 64], got {event_iterations!r}")
    if not (isinstance(event_samples, int) and 1 <= event_samples <= 64):
        raise ValueError(f"event_samples must be an int in [1, 64], got {event_samples!r}")
    if not event_tol > 0.0:
        raise ValueError(f"event_tol must be a positive time, got {event_tol!r}")
    has_event = event is not None
    ends_at_event = on_event is None
    has_stops = bool(tstops) or on_stop is not None
    kicks_at_stop = on_stop is not None
    event = event or _never
    on_event = on_event or _unchanged
    on_stop = on_stop or _unchanged
    State = state

    @hawk.kernel(dtypes=dict.fromkeys(_COUNTS, "int64"))
    def dopri5(p: params, t_end: Scalar, rtol: Scalar, atol: Scalar, max_step: Scalar,
               stop_first: Param,
               stop_every: Param, terminated: Terminated, u: Mutable[State], k1: Mutable[State],
               t: Mutable[Scalar], h: Mutable[Scalar], c: Mutable[Scalar],
               accepted: Mutable[Scalar], rejected: Mutable[Scalar], status: Mutable[Scalar],
               events: Mutable[Scalar], stops: Mutable[Scalar]):
        # the step: h, or shorter to land on t_end or on the next stop exactly
        h_step = hawk.minimum(hawk.minimum(h, max_step), t_end - t)
        at_stop = False
        if has_stops:
            t_stop = stop_first + stops * stop_every
            h_step = hawk.minimum(h_step, t_stop - t)
            at_stop = h_step == t_stop - t
        t_new = t + h_step
        if at_stop:
            t_new = t_stop
        if h_step == t_end - t:
            t_new = t_end
        u_new, err, k2, k3, k4, k5, k6, k7 = dopri5_attempt(f, u, k1, t, h_step, p)
        ok, h_next, c_next = dopri5_control(error_norm(err, u, u_new, rtol, atol), h_step, c)
        if ok and h_step < h:  # a shortened step does not shrink the next one
            h_next = hawk.maximum(h_next, h)
        h_next = hawk.minimum(h_next, max_step)
        hit = False
        if has_event:
            q = dense_coefficients(k1, k3, k4, k5, k6, k7)
            hit, sign, lo, hi, f_lo, f_hi = first_crossing(
                event, u, t, h_step, q, p, event(u, t, p), event(u_new, t_new, p), direction,
                event_samples)
            hit = hit and ok
            theta = locate(event, u, t, h_step, q, p, sign, lo, hi, f_lo, f_hi, event_tol,
                           event_iterations)
            t_event = t + theta * h_step
            u_event = dense_value(u, h_step, q, theta)
        failed = not h_next > SMALLEST_STEP * abs(t)
        if hit:
            events += 1
            if ends_at_event:
                u, t = u_event, t_event
                status = STATUS_EVENT
            else:
                u = on_event(u_event, t_event, p)
                t = t_event
                k1 = f(u, t, p)
        elif ok:
            u, k1, t = u_new, k7, t_new
            if at_stop:
                stops += 1
                if kicks_at_stop:
                    u = on_stop(u, t, p)
                    k1 = f(u, t, p)
        if ok:
            accepted += 1
        else:
            rejected += 1
        h, c = h_next, c_next
        if t >= t_end:
            status = STATUS_DONE
        if failed:
            status = STATUS_FAILED
        terminated = status != STATUS_RUNNING

    return dopri5


@functools.cache
def dopri5_start_kernel(f: Func, state=Vec3, params=Scalar) -> hawk.Kernel:
    """The kernel that prepares ``dopri5_kernel``'s first step: one step sets ``k1 = f(u, t,
    p)`` and the initial step size ``h`` (``hawk.ode.dopri5_start``) and ends the sample (bind
    ``terminated`` to a scratch array, not to the main kernel's flags)."""
    _check_func("f", f)
    _check_types(state, params)
    State = state

    @hawk.kernel
    def dopri5_prepare(p: params, t_end: Scalar, rtol: Scalar, atol: Scalar,
                     terminated: Terminated, u: State, t: Scalar, k1: Mutable[State],
                     h: Mutable[Scalar]):
        k1, h = dopri5_start(f, u, t, t_end, p, rtol, atol)
        terminated = True

    return dopri5_prepare


@functools.cache
def fixed_step_kernel(f: Func, method: str = "rk4", state=Vec3, params=Scalar) -> hawk.Kernel:
    """The fixed-step ensemble kernel of ``u' = f(u, t, p)`` with ``method`` (``"euler"`` or
    ``"rk4"``): each step advances ``t`` by ``dt``; the last lands on ``t_end`` exactly (it is
    shortened, or lengthened by at most ``LANDING_SLACK`` relative, rather than leave a sliver).

    Kernel parameters: ``p``, ``dt``, ``t_end`` (``Scalar``), the state ``u``, ``t``, and
    ``steps`` (int64, counts the steps taken).
    """
    _check_func("f", f)
    _check_types(state, params)
    if method not in FIXED_METHODS:
        raise ValueError(f"method must be one of {sorted(FIXED_METHODS)}, got {method!r}")
    stepper = FIXED_METHODS[method]
    State = state

    @hawk.kernel(dtypes={"steps": "int64"})
    def fixed_step(p: params, dt: Scalar, t_end: Scalar, terminated: Terminated,
                   u: Mutable[State], t: Mutable[Scalar], steps: Mutable[Scalar]):
        last = t_end - t <= dt * (1.0 + LANDING_SLACK)
        h_step = t_end - t if last else dt
        u = stepper(f, u, t, h_step, p)
        t = t_end if last else t + h_step
        steps += 1
        terminated = last

    return fixed_step


@functools.cache
def sde_kernel(f: Func, g: Func, state=Vec3, params=Scalar) -> hawk.Kernel:
    """The Euler-Maruyama ensemble kernel of the Ito SDE ``du = f(u, t, p) dt + g(u, t, p) dW``
    (diagonal noise: ``g`` is shaped as ``u``), with fixed steps as ``fixed_step_kernel``'s.
    Its draws need a seed."""
    _check_func("f", f)
    _check_func("g", g)
    _check_types(state, params)
    State = state

    @hawk.kernel(dtypes={"steps": "int64"})
    def euler_maruyama_step(p: params, dt: Scalar, t_end: Scalar, terminated: Terminated,
                            u: Mutable[State], t: Mutable[Scalar], steps: Mutable[Scalar]):
        last = t_end - t <= dt * (1.0 + LANDING_SLACK)
        h_step = t_end - t if last else dt
        u = euler_maruyama(f, g, u, t, h_step, p)
        t = t_end if last else t + h_step
        steps += 1
        terminated = last

    return euler_maruyama_step
