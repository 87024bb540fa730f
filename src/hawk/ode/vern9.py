"""Verner's 9(8) pair by its old names: ``vern9_attempt``, ``vern9_value`` and
``vern9_control``, the generic step, interpolant and PI controller of ``hawk.ode.explicit`` and
``hawk.ode.control`` on ``hawk.ode.tableaus.VERN9`` (where the coefficients and their sources
are).

Error norm: ``hawk.ode.error_norm``. Initial step: ``hawk.ode.dopri5_start``, Hairer's HINIT
with a fifth order's exponent: at tight tolerances it guesses smaller than HINIT with this
pair's order would, and the controller grows the step up to tenfold at a time, so the
difference costs a step or two.
"""

from __future__ import annotations

from .control import controller, pi_exponents
from .explicit import explicit_attempt, polynomial_value
from .tableaus import VERN9

__all__ = ["vern9_attempt", "vern9_value", "vern9_control", "EXPO", "BETA"]

#: one attempted step: ``(f, u, k1, t, h, p) -> (u_new, err, q, k_next)``, ``q`` every stage
#: (the interpolant's extra ones included: free unless read)
vern9_attempt = explicit_attempt(VERN9)
#: the interpolant at ``t + theta h``: ``(u, h, q, theta)``
vern9_value = polynomial_value(VERN9)
#: Hairer's PI controller with the exponents of an order-8 estimate
vern9_control = controller("pi", VERN9.error_order)
EXPO, BETA = pi_exponents(VERN9.error_order)
