"""Verner's "most efficient" 9(8) pair: order 9 with an embedded order-8 error estimate, for
smooth problems at very tight tolerances, and a ninth-order interpolant with nine extra stages.

The coefficients are Verner's (*Numerically optimal Runge-Kutta pairs with interpolants*, Numer.
Algorithms 53, 2010), as OrdinaryDiffEq.jl's ``Vern9`` uses them: read by a script from
SciML/OrdinaryDiffEq.jl, ``lib/OrdinaryDiffEqVerner/src/verner_tableaus.jl`` (commit b211787f),
the exact rationals (some with ``sqrt(6)``) and 40-digit decimals of its generic constructors
(``Vern9Tableau``, ``Vern9ExtraStages``, ``Vern9InterpolationCoefficients``), evaluated to 100
digits and rounded to the nearest double. ``e`` is that file's ``btilde``. They are kept in
``vern9.json`` beside this file (``ButcherTableau``'s fields, each double as Python writes it, so
read back bit for bit): 26 stages' rows of up to 26 weights are data, not code.

A step costs sixteen evaluations of ``f``: stages 2 to 16 (stage 16 only serves the error
estimate) and ``f(u_new, t + h)``, stage 17. The interpolant's nine extra stages (18 to 26;
Verner's 17 to 21 give order 8, 22 to 26 raise it to 9) are computed only where a kernel
interpolates. Its weights reach 1e4 in size, so its values carry a rounding error near 1e-15
times that (OrdinaryDiffEq's has the same weights).
"""

from importlib.resources import files

from ..tableau import ButcherTableau

#: the coefficients are data, in ``vern9.json`` beside this file (shipped as package data)
VERN9 = ButcherTableau.from_json(files(__package__).joinpath("vern9.json").read_text())
