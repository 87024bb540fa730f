"""Bogacki and Shampine's 3(2) pair (*A 3(2) pair of Runge-Kutta formulas*, Appl. Math. Lett. 2,
1989), as SciPy's ``RK23`` and MATLAB's ``ode23`` use it: three stages and ``f(u_new, t + h)``
(first same as last), the third-order solution kept, the second-order one for the error
estimate, and the cubic Hermite interpolant between the step's ends (SciPy's ``P``). Exact
fractions, as published.
"""

from ..tableau import ButcherTableau

RK23 = ButcherTableau(
    name="rk23", order=3, error_order=2,
    c=(1 / 2, 3 / 4),
    a=((1 / 2,),
       (0.0, 3 / 4)),
    b=(2 / 9, 1 / 3, 4 / 9),
    e=(5 / 72, -1 / 12, -1 / 9, 1 / 8),
    dense=((1.0, 0.0, 0.0, 0.0),
           (-4 / 3, 1.0, 4 / 3, -1.0),
           (5 / 9, -2 / 3, -8 / 9, 1.0)),
    dense_order=3,
)
