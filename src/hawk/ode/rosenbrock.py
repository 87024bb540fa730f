"""Rosenbrock23: a linearly implicit, L-stable method of order 2 (with a third-order error
estimate) for stiff problems, written in hawk.

The method is Shampine and Reichelt's (*The MATLAB ODE Suite*, SIAM J. Sci. Comput. 18, 1997,
section 3; MATLAB's ``ode23s``, OrdinaryDiffEq's ``Rosenbrock23``), with
``d = 1 / (2 + sqrt(2))``, ``e32 = 6 + sqrt(2)``, ``W = I - h d J`` and ``T = df/dt``::

    k1 = W \\ (F0 + h d T)                          F0 = f(u, t)
    F1 = f(u + h k1 / 2, t + h / 2)
    k2 = W \\ (F1 - k1) + k1
    u_new = u + h k2                                F2 = f(u_new, t + h)
    k3 = W \\ (F2 - e32 (k2 - F1) - 2 (k1 - F0) + h d T)
    err = h (k1 - 2 k2 + k3) / 6

The Jacobian ``J = df/du`` and ``T`` come from ``hawk.jacobian`` (forward mode, exact), the
solves from ``hawk.solve`` (a vector state) or a division (a scalar one). ``F2`` is the next
step's ``F0`` (first same as last). Values inside a step come from the method's own
interpolant, ``u(t + s h) = u + h (s (1 - s) k1 + s (s - 2 d) k2) / (1 - 2 d)``.

Error norm: ``hawk.ode.error_norm`` (the RMS of ``err / (atol + rtol max(|u|, |u_new|))``).
Step-size control: ``hawk.ode.control.i_control`` for the error's order, ``h_new = h *
clip(0.9 err**(-1/3), 0.2, 5)``, and no growth right after a rejected step.
"""

from __future__ import annotations

import math

import hawk

from .control import controller

__all__ = ["automatic_jacobian", "rosenbrock23_attempt", "rosenbrock23_control",
           "rosenbrock23_value", "rosenbrock23_method_attempt", "rosenbrock23_method_value", "D",
           "E32"]

D = 1.0 / (2.0 + math.sqrt(2.0))
E32 = 6.0 + math.sqrt(2.0)
#: the most a step may grow by (``hawk.ode.control.i_control``'s ``fac_max``)
FAC_MAX = 5.0
#: the I-controller for the error estimate's order 2 (``err**(-1/3)``)
rosenbrock23_control = controller("i", 2, FAC_MAX)


@hawk.func
def _swapped(t, u, f, p):
    """``f`` with the time first, for ``df/dt`` by ``hawk.jacobian``."""
    return f(u, t, p)


@hawk.func
def automatic_jacobian(f, u, t, p):
    """``df/du`` at ``(u, t)`` by ``hawk.jacobian`` (forward mode, exact): the Rosenbrock
    methods' Jacobian unless the user gives one.

    Args:
        f: the right-hand side, a func ``f(u, t, p)``.
        u: the state (a number or a vector).
        t: the time.
        p: the model's parameters, passed on to ``f``.
    """
    return hawk.jacobian(f, u, t, p)


@hawk.func
def _solve(w, b):
    """``w \\ b``: a division for a scalar state, ``hawk.solve`` for a vector one."""
    if hawk.width(b) == 1:
        return b / w
    return hawk.solve(w, b)


@hawk.func
def _iteration_matrix(jac, h, u):
    """``W = I - h d J`` (a number for a scalar state ``u``)."""
    if hawk.width(u) == 1:
        return 1.0 - (h * D) * jac
    return hawk.identity(hawk.width(u)) - (h * D) * jac


@hawk.func
def rosenbrock23_attempt(f, u, f0, t, h, p, jac=automatic_jacobian, linsolve=_solve):
    """One attempted step of size ``h`` from ``u`` at ``t``, given ``f0 = f(u, t, p)``.

    Returns ``(u_new, err, k1, k2, f2)``: the second-order solution at ``t + h``, the error
    estimate (state-shaped, before scaling), the stages the interpolant needs, and
    ``f(u_new, t + h, p)`` (the next step's ``f0``).

    Args:
        f: the right-hand side, a func ``f(u, t, p)``.
        u: the state at ``t`` (a number or a vector).
        f0: ``f(u, t, p)``.
        t: the time.
        h: the step to attempt.
        p: the model's parameters, passed on to ``f``.
        jac: a func ``(f, u, t, p) -> df/du`` (``automatic_jacobian`` by default).
        linsolve: a func ``(W, b) -> W \\ b`` (``hawk.ode.linsolve.LINSOLVES``; plain
            elimination by default).
    """
    w = _iteration_matrix(jac(f, u, t, p), h, u)
    dt_term = (h * D) * hawk.jacobian(_swapped, t, u, f, p)
    k1 = linsolve(w, f0 + dt_term)
    f1 = f(u + (0.5 * h) * k1, t + 0.5 * h, p)
    k2 = linsolve(w, f1 - k1) + k1
    u_new = u + h * k2
    f2 = f(u_new, t + h, p)
    k3 = linsolve(w, f2 - E32 * (k2 - f1) - 2.0 * (k1 - f0) + dt_term)
    err = (h / 6.0) * (k1 - 2.0 * k2 + k3)
    return u_new, err, k1, k2, f2


@hawk.func
def rosenbrock23_value(u, h, k1, k2, theta):
    """The interpolant at ``t + theta h`` (``theta`` in ``[0, 1]``).

    Args:
        u: the state at the step's start.
        h: the step's size.
        k1, k2: the step's stages (``rosenbrock23_attempt``).
        theta: the fraction of the step.
    """
    scale = (h * theta) / (1.0 - 2.0 * D)
    return u + scale * ((1.0 - theta) * k1 + (theta - 2.0 * D) * k2)


@hawk.func
def rosenbrock23_method_attempt(f, u, k1, t, h, p, jac=automatic_jacobian, linsolve=_solve):
    """``rosenbrock23_attempt`` (the same arguments, ``k1`` its ``f0``) as the adaptive
    kernel takes a method's step: ``(u_new, err, q, f_new)``, ``q`` its two stages for
    ``rosenbrock23_method_value``."""
    u_new, err, s1, s2, f_new = rosenbrock23_attempt(f, u, k1, t, h, p, jac, linsolve)
    return u_new, err, (s1, s2), f_new


@hawk.func
def rosenbrock23_method_value(u, h, q, theta):
    """``rosenbrock23_value(u, h, q[0], q[1], theta)``: the interpolant with the stages as
    one ``q``, as the adaptive kernel calls a method's."""
    return rosenbrock23_value(u, h, q[0], q[1], theta)
