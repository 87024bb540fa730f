"""The Dormand-Prince 5(4) pair with per-sample error control, for your own kernels:
``dopri5_step`` (one adaptive step), ``dopri5_start`` (the first step's size),
``dopri5_attempt``, ``dopri5_control``, ``dense_coefficients`` and ``dense_value``.

The method is its tableau, ``hawk.ode.tableaus.DOPRI5`` (Dormand and Prince 1980, as Hairer's
DOPRI5 and SciPy's ``RK45`` use it), run by the generic step of ``hawk.ode.explicit``; the
names here are that step and interpolant in the shapes this module has always given them.

Error norm, per sample: the root-mean-square over the state's components of
``err_i / (atol + rtol * max(|u_i|, |u_new_i|))`` (Hairer's, and SciPy's). A step is accepted
when the norm is at most 1. Step-size control: Hairer's PI controller (``hawk.ode.control``)
with DOPRI5's constants, ``beta = 0.04``, ``SAFE = 0.9``, ``FAC_MIN = 0.2``, ``FAC_MAX = 10``;
its memory ``c`` starts at ``C_START``.
"""

from __future__ import annotations

import hawk

from .control import C_START, FAC_MAX, FAC_MIN, SAFE, controller, pi_exponents
from .explicit import (
    dense_coefficients_of,
    error_norm,
    explicit_stages,
    polynomial_value,
    rms,
)
from .start import initial_step
from .tableaus import DOPRI5

__all__ = ["dopri5_attempt", "dopri5_control", "dopri5_step", "dopri5_start", "dense_coefficients",
           "dense_value", "error_norm", "rms", "C_START", "BETA", "EXPO", "SAFE", "FAC_MIN",
           "FAC_MAX"]

#: the PI controller's exponents for DOPRI5's fourth-order estimate (0.17 and 0.04)
EXPO, BETA = pi_exponents(DOPRI5.error_order)
#: the PI controller for DOPRI5 (and Tsit5, with the same orders)
dopri5_control = controller("pi", DOPRI5.error_order)
#: the interpolant at ``t + theta h``: ``(u, h, q, theta)``, ``q`` from ``dense_coefficients``
dense_value = polynomial_value(DOPRI5)
_stages = explicit_stages(DOPRI5)
_coefficients = dense_coefficients_of(DOPRI5)


@hawk.func
def dopri5_attempt(f, u, k1, t, h, p):
    """One attempted step of size ``h`` from ``u`` at ``t``, given ``k1 = f(u, t, p)``.

    Returns ``(u_new, err, k2, k3, k4, k5, k6, k7)``: the fifth-order solution at ``t + h``, the
    error estimate (a state-shaped difference, before scaling) and the stages (``k7`` is
    ``f(u_new, t + h, p)``, the next step's ``k1``), which ``dense_coefficients`` needs.

    Args:
        f: the right-hand side, a func ``f(u, t, p)``.
        u: the state at ``t``.
        k1: ``f(u, t, p)`` (the last step's ``k7``).
        t: the time.
        h: the step to attempt.
        p: the model's parameters, passed on to ``f``.
    """
    u_new, err, ks = _stages(f, u, k1, t, h, p)
    return u_new, err, ks[1], ks[2], ks[3], ks[4], ks[5], ks[6]


@hawk.func
def dense_coefficients(k1, k3, k4, k5, k6, k7):
    """The interpolant's coefficients ``(q1, q2, q3, q4)`` for a step's stages (``k2`` has
    weight 0): ``u(t + theta h) = u + h * (q1 theta + q2 theta**2 + q3 theta**3 + q4 theta**4)``.

    Args:
        k1, k3, k4, k5, k6, k7: the stages of the step (``k1`` its start's derivative,
            the others as ``dopri5_attempt`` returns them).
    """
    return _coefficients((k1, k1, k3, k4, k5, k6, k7))  # k2's place unread: its weights are 0


@hawk.func
def dopri5_start(f, u, t, t_end, p, rtol, atol):
    """What a first step needs: ``(k1, h)``, with ``k1 = f(u, t, p)`` and the initial step
    size chosen as Hairer's HINIT (and SciPy's ``select_initial_step``) chooses it for an error
    exponent of 1/5 (``hawk.ode.start.initial_step`` for an estimate of order 4), never more
    than ``t_end - t``. Costs two evaluations of ``f``. The arguments are ``initial_step``'s
    but its exponent: the right-hand side ``f``, the initial state ``u`` at the time ``t``,
    ``t_end`` where the integration ends, the model's parameters ``p`` and the tolerances
    ``rtol`` and ``atol`` the steps will be controlled to.
    """
    return initial_step(f, u, t, t_end, p, rtol, atol, 0.2)


@hawk.func
def dopri5_step(f, u, k1, t, h, c, t_end, p, rtol, atol):
    """One attempted adaptive step towards ``t_end``; returns ``(u, k1, t, h, c, accepted)``
    after it: on acceptance the new state, its derivative and time; on rejection the same state
    and time with a smaller ``h``. The step is shortened to land on ``t_end`` exactly.

    Carry ``k1``, ``h`` and ``c`` from step to step; start them with ``dopri5_start`` (``k1``
    and ``h``) and ``C_START`` (``c``).

    Args:
        f: the right-hand side, a func ``f(u, t, p)``.
        u: the state at ``t``.
        k1: ``f(u, t, p)``.
        t: the time.
        h: the step to try.
        c: the controller's memory (``dopri5_control``).
        t_end: where the integration ends.
        p: the model's parameters, passed on to ``f``.
        rtol, atol: the relative and absolute tolerances (numbers).
    """
    last = h >= t_end - t
    h_step = t_end - t if last else h
    u_new, err, k2, k3, k4, k5, k6, k7 = dopri5_attempt(f, u, k1, t, h_step, p)
    accepted, h_next, c_next = dopri5_control(error_norm(err, u, u_new, rtol, atol), h_step, c)
    if accepted:
        return u_new, k7, t_end if last else t + h_step, h_next, c_next, accepted
    return u, k1, t, h_next, c_next, accepted
