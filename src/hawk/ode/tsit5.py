"""Tsitouras's 5(4) pair: its step (the generic one of ``hawk.ode.explicit`` on
``hawk.ode.tableaus.TSIT5``) and its interpolant, written out here.

The interpolant is Tsitouras's free fourth-order one, as OrdinaryDiffEq's and diffrax's
``Tsit5`` use it: each stage's weight a polynomial in ``theta`` given in factored form, which
is another basis (and other roundings) than the monomial weights of ``polynomial_value``, so it
stays written out rather than turned into ``dense`` weights. Error norm, step-size control and
initial step are Dormand-Prince's (``hawk.ode.dopri5``): the same orders, so the same exponents.
"""

from __future__ import annotations

import hawk

from .explicit import explicit_attempt
from .tableaus import TSIT5

__all__ = ["tsit5_attempt", "tsit5_value"]

#: one attempted step: ``(f, u, k1, t, h, p) -> (u_new, err, q, k7)``, ``q`` the seven stages
tsit5_attempt = explicit_attempt(TSIT5)


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
