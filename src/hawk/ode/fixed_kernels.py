"""The fixed-step ensemble kernels: ``fixed_step_kernel`` (Euler, RK4) and ``sde_kernel``
(Euler-Maruyama). Each step advances ``t`` by ``dt`` and lands exactly on ``t_end`` and, with
``saveat``, on the recorded times (``_fixed_step``); the state there is the method's own, nothing
is interpolated. As for the adaptive kernels (``hawk.ode.kernels``), the kernel is ordinary hawk
code closing over the user's funcs, and one eagle step is one integrator step.
"""

# ruff: noqa: F841 -- a kernel body assigns its parameters: they are written back, not unused

# No `from __future__ import annotations` here: the kernels' annotations name the factory's
# arguments (``state``, ``params``), which must be evaluated when each kernel is defined.
import functools

import hawk
from hawk import Mutable, Param, Scalar, Series, Terminated, Vec3
from hawk.inline import Func

from .kernel_args import _check_func, _check_types, _never, _save_times, _table_types, _with_tables
from .methods import METHODS

__all__ = ["fixed_step_kernel", "sde_kernel", "FIXED_METHODS", "LANDING_SLACK"]

#: the fixed-step methods ``fixed_step_kernel`` knows, by name (``METHODS``' fixed ones)
FIXED_METHODS = {name: m.step for name, m in METHODS.items() if m.kind == "fixed"}
#: a fixed step lands on ``t_end`` when it is this much (relative) short of it or longer
LANDING_SLACK = 1e-9


@hawk.func
def _fixed_step(t, dt, t_end, save_first, save_every, save_count, saves, has_saves,
                save_time):
    """A fixed step's size and where it ends: ``dt``, or shorter (or up to ``LANDING_SLACK``
    longer) to land exactly on ``t_end`` or on the next recorded time; ``(h, t_new, ends,
    at_save)``."""
    ends = t_end - t <= dt * (1.0 + LANDING_SLACK)
    h_step = t_end - t if ends else dt
    t_new = t_end if ends else t + h_step
    at_save = False
    if has_saves:
        t_save = save_time(save_first, save_every, saves)
        at_save = saves < save_count and t_save - t <= h_step * (1.0 + LANDING_SLACK)
        if at_save:
            h_step, t_new = t_save - t, t_save
            ends = t_save >= t_end
    return h_step, t_new, ends, at_save


def _fixed_kernel(f, g, method: str, state, params, saveat: bool,
                  tables: tuple) -> hawk.Kernel:
    """A fixed-step kernel: ``method`` ("euler", "rk4" or "euler_maruyama" with noise ``g``)."""
    stepper = METHODS[method].step
    stochastic = METHODS[method].stochastic
    has_saves = bool(saveat)
    save_time, SaveTimes = _save_times(saveat)
    T0, T1, T2 = _table_types(tables)
    model = _with_tables(f, len(tables))
    noise = _with_tables(g, len(tables)) if g is not None else _never
    State = state

    @hawk.kernel(dtypes={"steps": "int64", "saves": "int64"})
    def fixed_step(p: params, dt: Scalar, t_end: Scalar, save_first: Param,
                   save_every: SaveTimes,
                   save_count: Param, terminated: Terminated, u: Mutable[State],
                   t: Mutable[Scalar], steps: Mutable[Scalar], saves: Mutable[Scalar],
                   saved: Series[State], table0: T0, table1: T1, table2: T2):
        args = (p, table0, table1, table2)
        h_step, t_new, ends, at_save = _fixed_step(t, dt, t_end, save_first, save_every,
                                                   save_count, saves, has_saves, save_time)
        if stochastic:
            u = stepper(model, noise, u, t, h_step, args)
        else:
            u = stepper(model, u, t, h_step, args)
        if at_save:
            saved[saves] = u
            saves += 1
        t = t_new
        steps += 1
        terminated = ends

    return fixed_step


@functools.cache
def fixed_step_kernel(f: Func, method: str = "rk4", state=Vec3, params=Scalar, *,
                      saveat: bool = False, tables: tuple = ()) -> hawk.Kernel:
    """The fixed-step ensemble kernel of ``u' = f(u, t, p)`` with ``method`` (``"euler"`` or
    ``"rk4"``): each step advances ``t`` by ``dt``; the last lands on ``t_end`` exactly (it is
    shortened, or lengthened by at most ``LANDING_SLACK`` relative, rather than leave a
    sliver). With ``saveat``, steps also land on the recorded times, and the state there is
    written to ``saved`` (the method's own values: nothing is interpolated).

    Kernel parameters: ``p``, ``dt``, ``t_end`` (``Scalar``); ``save_first``, ``save_every``,
    ``save_count`` (``Param``) and ``saved`` (``Series``), read only with ``saveat``; the
    state ``u``, ``t``; the int64 counts ``steps`` and ``saves`` (as for ``dopri5_kernel``).

    Args:
        f: the right-hand side, a ``@hawk.func`` ``f(u, t, p)`` shaped as ``u``.
        method: ``"euler"`` or ``"rk4"``.
        state: ``u``'s type: ``hawk.Scalar`` or a vector type (``hawk.Vec2`` ...
            ``hawk.Vector[K]``).
        params: how ``p`` is bound: ``hawk.Scalar``, ``hawk.Param`` or a vector type (as for
            ``dopri5_kernel``).
        saveat: land on and record the times ``save_first + k * save_every`` (``"times"``:
            those listed in the ``Table`` ``save_every``, as for ``dopri5_kernel``).
        tables: the dimensions of the tables the model reads (as for ``dopri5_kernel``).
    """
    _check_func("f", f)
    _check_types(state, params)
    if method not in FIXED_METHODS:
        raise ValueError(f"method must be one of {sorted(FIXED_METHODS)}, got {method!r}")
    return _fixed_kernel(f, None, method, state, params, saveat, tables)


@functools.cache
def sde_kernel(f: Func, g: Func, state=Vec3, params=Scalar, *,
               saveat: bool = False, tables: tuple = ()) -> hawk.Kernel:
    """The Euler-Maruyama ensemble kernel of the Ito SDE ``du = f(u, t, p) dt + g(u, t, p) dW``
    (diagonal noise: ``g`` is shaped as ``u``), with fixed steps and ``saveat`` as
    ``fixed_step_kernel``'s (same parameters). Its draws need a seed. The arguments are
    ``fixed_step_kernel``'s, the drift ``f`` and the diffusion ``g`` (a ``@hawk.func`` ``g(u, t,
    p)`` shaped as ``u``) in place of its ``method``: ``state``, ``params``, ``saveat`` (the
    grid, or ``"times"``) and ``tables`` as there.
    """
    _check_func("f", f)
    _check_func("g", g)
    _check_types(state, params)
    return _fixed_kernel(f, g, "euler_maruyama", state, params, saveat, tables)
