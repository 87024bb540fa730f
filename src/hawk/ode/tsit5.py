"""Tsitouras' 5(4) pair, written in hawk: an explicit Runge-Kutta method of the Dormand-Prince
family (seven stages, the last at the new state: first same as last; the fifth-order solution
kept) whose coefficients were chosen for a smaller error at the same cost, with a free
fourth-order interpolant.

The coefficients are Tsitouras's (*Runge-Kutta pairs of order 5(4) satisfying only the first
column simplifying assumption*, Comput. Math. Appl. 62, 2011), as OrdinaryDiffEq's ``Tsit5``
and diffrax's ``Tsit5`` use them (the interpolant's polynomials too). Error norm, step-size
control and initial step are Dormand-Prince's (``hawk.ode.dopri5``): the same orders, so the
same exponents.
"""

from __future__ import annotations

import hawk

__all__ = ["tsit5_attempt", "tsit5_value"]

C2, C3, C4, C5 = 0.161, 0.327, 0.9, 0.9800255409045097
A21 = 0.161
A31, A32 = -0.008480655492356989, 0.335480655492357
A41, A42, A43 = 2.8971530571054935, -6.359448489975075, 4.3622954328695815
A51, A52, A53, A54 = 5.325864828439257, -11.748883564062828, 7.4955393428898365, \
    -0.09249506636175525
A61, A62, A63, A64, A65 = 5.86145544294642, -12.92096931784711, 8.159367898576159, \
    -0.071584973281401, -0.028269050394068383
# the fifth-order solution (the last stage's row: FSAL)
B1, B2, B3, B4, B5, B6 = 0.09646076681806523, 0.01, 0.4798896504144996, 1.379008574103742, \
    -3.290069515436081, 2.324710524099774
# fifth- minus fourth-order weights: the error estimate
E1, E2, E3, E4, E5, E6, E7 = 0.0017800110522257773, 0.0008164344596567463, \
    -0.007880878010261994, 0.1447110071732629, -0.5823571654525552, 0.45808210592918686, \
    -1.0 / 66.0


@hawk.func
def tsit5_attempt(f, u, k1, t, h, p):
    """One attempted step of size ``h`` from ``u`` at ``t``, given ``k1 = f(u, t, p)``:
    ``(u_new, err, q, k7)``, the fifth-order solution, the error estimate (state-shaped,
    before scaling), the interpolant's data ``q`` (the stages) and ``k7 = f(u_new, t + h, p)``
    (the next step's ``k1``).

    Args:
        f: the right-hand side, a func ``f(u, t, p)``.
        u: the state at ``t``.
        k1: ``f(u, t, p)``.
        t: the time.
        h: the step to attempt.
        p: the model's parameters, passed on to ``f``.
    """
    k2 = f(u + h * (A21 * k1), t + C2 * h, p)
    k3 = f(u + h * (A31 * k1 + A32 * k2), t + C3 * h, p)
    k4 = f(u + h * (A41 * k1 + A42 * k2 + A43 * k3), t + C4 * h, p)
    k5 = f(u + h * (A51 * k1 + A52 * k2 + A53 * k3 + A54 * k4), t + C5 * h, p)
    k6 = f(u + h * (A61 * k1 + A62 * k2 + A63 * k3 + A64 * k4 + A65 * k5), t + h, p)
    u_new = u + h * (B1 * k1 + B2 * k2 + B3 * k3 + B4 * k4 + B5 * k5 + B6 * k6)
    k7 = f(u_new, t + h, p)
    err = h * (E1 * k1 + E2 * k2 + E3 * k3 + E4 * k4 + E5 * k5 + E6 * k6 + E7 * k7)
    return u_new, err, (k1, k2, k3, k4, k5, k6, k7), k7


@hawk.func
def tsit5_value(u, h, q, theta):
    """The interpolant at ``t + theta h`` (``theta`` in ``[0, 1]``; fourth order):
    ``u + h * (b1(theta) k1 + ... + b7(theta) k7)`` with Tsitouras's polynomials.

    Args:
        u: the state at the step's start.
        h: the step's size.
        q: the stages ``(k1, ..., k7)`` from ``tsit5_attempt``.
        theta: the fraction of the step.
    """
    k1, k2, k3, k4, k5, k6, k7 = q
    s = theta
    s2 = s * s
    b1 = -1.0530884977290216 * s * (s - 1.3299890189751412) * (
        s2 - 1.4364028541716351 * s + 0.7139816917074209)
    b2 = 0.1017 * s2 * (s2 - 2.1966568338249754 * s + 1.2949852507374631)
    b3 = 2.490627285651252793 * s2 * (s2 - 2.38535645472061657 * s + 1.57803468208092486)
    b4 = -16.54810288924490272 * (s - 1.21712927295533244) * (s - 0.61620406037800089) * s2
    b5 = 47.37952196281928122 * (s - 1.203071208372362603) * (s - 0.658047292653547382) * s2
    b6 = -34.87065786149660974 * (s - 1.2) * (s - 0.666666666666666667) * s2
    b7 = 2.5 * (s - 1.0) * (s - 0.6) * s2
    return u + h * (b1 * k1 + b2 * k2 + b3 * k3 + b4 * k4 + b5 * k5 + b6 * k6 + b7 * k7)
