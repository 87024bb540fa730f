"""The Dormand-Prince 5(4) pair with per-sample error control, written in hawk.

The method is the one of Dormand and Prince (1980) as Hairer, Norsett and Wanner give it
(*Solving Ordinary Differential Equations I*, II.5; their code DOPRI5), and as SciPy's ``RK45``
uses it: seven stages, the last one evaluated at the new state (FSAL: "first same as last", so an
accepted step costs six new evaluations of the right-hand side), the fifth-order solution kept
(local extrapolation), the difference to the embedded fourth-order one as the error estimate,
and a quartic interpolant ("dense output", Shampine 1986, SciPy's coefficients) for values
inside a step. The coefficients below are the published ones, as exact fractions.

Error norm, per sample: the root-mean-square over the state's components of
``err_i / (atol + rtol * max(|u_i|, |u_new_i|))`` (Hairer's, and SciPy's). A step is accepted
when the norm is at most 1.

Step-size control: Hairer's PI controller of DOPRI5 (II.4, "stabilized step size control"),
with its constants: ``h_new = h / fac``, ``fac = err**(0.2 - 0.75 beta) / err_old**beta / SAFE``
clipped to ``[1 / FAC_MAX, 1 / FAC_MIN]``, ``beta = 0.04``, ``SAFE = 0.9``, ``FAC_MIN = 0.2``,
``FAC_MAX = 10``; after a rejected step the step may not grow; a rejected step is retried with
``h / min(1 / FAC_MIN, err**(0.2 - 0.75 beta) / SAFE)``. ``err_old`` (the norm of the last
accepted step, at least 1e-4) is the controller's memory ``c``, carried from step to step by the
caller; it is stored negated after a rejection (that is how the next step knows). Start it at
``C_START``.
"""

from __future__ import annotations

import math

import hawk

from .pi_control import C_START, FAC_MAX, FAC_MIN, SAFE, pi_control

__all__ = ["dopri5_attempt", "dopri5_control", "dopri5_step", "dopri5_start", "dense_coefficients",
           "dense_value", "error_norm", "rms", "C_START", "BETA", "SAFE", "FAC_MIN", "FAC_MAX"]

# nodes
C2, C3, C4, C5 = 1 / 5, 3 / 10, 4 / 5, 8 / 9
# the stages
A21 = 1 / 5
A31, A32 = 3 / 40, 9 / 40
A41, A42, A43 = 44 / 45, -56 / 15, 32 / 9
A51, A52, A53, A54 = 19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729
A61, A62, A63, A64, A65 = 9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656
# the fifth-order solution (also the last stage's row: FSAL)
B1, B3, B4, B5, B6 = 35 / 384, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84
# fifth- minus fourth-order weights: the error estimate
E1, E3, E4, E5, E6, E7 = -71 / 57600, 71 / 16695, -71 / 1920, 17253 / 339200, -22 / 525, 1 / 40
# the quartic interpolant: u(t + theta h) = u + h * sum_j Q_j theta**j, Q_j = sum_i P_ij k_i
P11, P12, P13, P14 = 1.0, -8048581381 / 2820520608, 8663915743 / 2820520608, \
    -12715105075 / 11282082432
P32, P33, P34 = 131558114200 / 32700410799, -68118460800 / 10900136933, \
    87487479700 / 32700410799
P42, P43, P44 = -1754552775 / 470086768, 14199869525 / 1410260304, -10690763975 / 1880347072
P52, P53, P54 = 127303824393 / 49829197408, -318862633887 / 49829197408, \
    701980252875 / 199316789632
P62, P63, P64 = -282668133 / 205662961, 2019193451 / 616988883, -1453857185 / 822651844
P72, P73, P74 = 40617522 / 29380423, -110615467 / 29380423, 69997945 / 29380423

# the controller (Hairer's DOPRI5 defaults; SAFE, FAC_MIN, FAC_MAX, C_START: pi_control's)
BETA = 0.04
EXPO = 0.2 - 0.75 * BETA


@hawk.func
def rms(e):
    """The root-mean-square of the components of ``e`` (``abs(e)`` for a number).

    Args:
        e: a number or a vector.
    """
    return math.sqrt(hawk.total(e * e) / hawk.width(e))


@hawk.func
def error_norm(err, u, u_new, rtol, atol):
    """The root-mean-square of ``err / (atol + rtol * max(|u|, |u_new|))`` over components:
    at most 1 for a step to be accepted.

    Args:
        err: the error estimate of a step (``dopri5_attempt``), shaped as the state.
        u, u_new: the state before and after the step.
        rtol, atol: the relative and absolute tolerances.
    """
    return rms(err / (atol + rtol * hawk.maximum(abs(u), abs(u_new))))


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
    k2 = f(u + h * (A21 * k1), t + C2 * h, p)
    k3 = f(u + h * (A31 * k1 + A32 * k2), t + C3 * h, p)
    k4 = f(u + h * (A41 * k1 + A42 * k2 + A43 * k3), t + C4 * h, p)
    k5 = f(u + h * (A51 * k1 + A52 * k2 + A53 * k3 + A54 * k4), t + C5 * h, p)
    k6 = f(u + h * (A61 * k1 + A62 * k2 + A63 * k3 + A64 * k4 + A65 * k5), t + h, p)
    u_new = u + h * (B1 * k1 + B3 * k3 + B4 * k4 + B5 * k5 + B6 * k6)
    k7 = f(u_new, t + h, p)
    err = h * (E1 * k1 + E3 * k3 + E4 * k4 + E5 * k5 + E6 * k6 + E7 * k7)
    return u_new, err, k2, k3, k4, k5, k6, k7


@hawk.func
def dopri5_control(err_norm, h, c):
    """The PI controller: ``(accepted, h_next, c_next)`` after a step of size ``h`` whose error
    norm is ``err_norm``, with the controller's memory ``c`` (see the module's docstring).

    Args:
        err_norm: the step's ``error_norm``.
        h: the step's size.
        c: the controller's memory: the last accepted step's error norm (at least ``C_START``),
            negated after a rejection.
    """
    return pi_control(err_norm, h, c, EXPO, BETA)


@hawk.func
def dense_coefficients(k1, k3, k4, k5, k6, k7):
    """The interpolant's coefficients ``(q1, q2, q3, q4)`` for a step's stages (``k2`` has
    weight 0): ``u(t + theta h) = u + h * (q1 theta + q2 theta**2 + q3 theta**3 + q4 theta**4)``.

    Args:
        k1, k3, k4, k5, k6, k7: the stages of the step (``k1`` its start's derivative,
            the others as ``dopri5_attempt`` returns them).
    """
    q1 = P11 * k1
    q2 = P12 * k1 + P32 * k3 + P42 * k4 + P52 * k5 + P62 * k6 + P72 * k7
    q3 = P13 * k1 + P33 * k3 + P43 * k4 + P53 * k5 + P63 * k6 + P73 * k7
    q4 = P14 * k1 + P34 * k3 + P44 * k4 + P54 * k5 + P64 * k6 + P74 * k7
    return q1, q2, q3, q4


@hawk.func
def dense_value(u, h, q, theta):
    """The interpolant at ``t + theta h`` (``theta`` in ``[0, 1]``; fourth order): Horner's rule
    on ``u + h * theta * (q1 + theta * (q2 + theta * (q3 + theta * q4)))``.

    Args:
        u: the state at the step's start.
        h: the step's size.
        q: the coefficients ``(q1, q2, q3, q4)`` from ``dense_coefficients``.
        theta: the fraction of the step.
    """
    q1, q2, q3, q4 = q
    return u + (h * theta) * (q1 + theta * (q2 + theta * (q3 + theta * q4)))


@hawk.func
def dopri5_start(f, u, t, t_end, p, rtol, atol):
    """What a first step needs: ``(k1, h)``, with ``k1 = f(u, t, p)`` and the initial step
    size chosen as Hairer's HINIT (and SciPy's ``select_initial_step``) chooses it: from the
    sizes of ``u``, ``f`` and a difference estimate of ``f``'s derivative, for an error
    exponent of 1/5, never more than ``t_end - t``. Costs two evaluations of ``f``.

    Args:
        f: the right-hand side, a func ``f(u, t, p)``.
        u: the initial state.
        t: the initial time.
        t_end: where the integration ends.
        p: the model's parameters, passed on to ``f``.
        rtol, atol: the tolerances the steps will be controlled to.
    """
    k1 = f(u, t, p)
    scale = atol + abs(u) * rtol
    d0 = rms(u / scale)
    d1 = rms(k1 / scale)
    span = t_end - t
    h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
    h0 = hawk.minimum(h0, span)
    k_probe = f(u + h0 * k1, t + h0, p)
    d2 = rms((k_probe - k1) / scale) / h0
    if d1 <= 1e-15 and d2 <= 1e-15:
        h1 = hawk.maximum(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / hawk.maximum(d1, d2)) ** 0.2
    return k1, hawk.minimum(hawk.minimum(100.0 * h0, h1), span)


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
