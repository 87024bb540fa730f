"""Verner's 7(6) and 9(8) pairs by their old names: ``vern7_attempt``, ``vern7_value``,
``vern7_control`` and the same for ``vern9``: the generic step, interpolant and PI controller
of ``hawk.ode.explicit`` and ``hawk.ode.control`` on ``hawk.ode.tableaus.VERN7`` and ``VERN9``
(where the coefficients and their sources are).

Error norm: ``hawk.ode.error_norm``. Initial step: ``hawk.ode.dopri5_start``, Hairer's HINIT
with a fifth order's exponent: at tight tolerances it guesses smaller than HINIT with these
pairs' orders would, and the controller grows the step up to tenfold at a time, so the
difference costs a step or two.
"""

from __future__ import annotations

from .control import controller
from .explicit import explicit_attempt, polynomial_value
from .tableaus import VERN7, VERN9

__all__ = ["vern7_attempt", "vern7_value", "vern7_control", "vern9_attempt", "vern9_value",
           "vern9_control"]

#: one attempted step, ``(f, u, k1, t, h, p) -> (u_new, err, q, k_next)``, ``q`` every stage
#: (the interpolant's extra ones included: free unless read), and the interpolant
#: ``(u, h, q, theta)``
vern7_attempt, vern7_value = explicit_attempt(VERN7), polynomial_value(VERN7)
vern9_attempt, vern9_value = explicit_attempt(VERN9), polynomial_value(VERN9)
#: Hairer's PI controller with the exponents of an order-6 and an order-8 estimate
vern7_control = controller("pi", VERN7.error_order)
vern9_control = controller("pi", VERN9.error_order)
