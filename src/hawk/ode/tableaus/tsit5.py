"""Tsitouras's 5(4) pair: an explicit Runge-Kutta method of the Dormand-Prince family (seven
stages, the last at the new state: first same as last; the fifth-order solution kept) whose
coefficients were chosen for a smaller error at the same cost. The coefficients are Tsitouras's
(*Runge-Kutta pairs of order 5(4) satisfying only the first column simplifying assumption*,
Comput. Math. Appl. 62, 2011), as OrdinaryDiffEq's ``Tsit5`` and diffrax's ``Tsit5`` use them.
Its free fourth-order interpolant is in another basis (products of factors in ``theta``), so it
is written out in ``hawk.ode.tsit5`` rather than given as ``dense`` weights here.
"""

from ..tableau import ButcherTableau

TSIT5 = ButcherTableau(
    name="tsit5", order=5, error_order=4,
    c=(0.161, 0.327, 0.9, 0.9800255409045097, 1.0),
    a=((0.161,),
       (-0.008480655492356989, 0.335480655492357),
       (2.8971530571054935, -6.359448489975075, 4.3622954328695815),
       (5.325864828439257, -11.748883564062828, 7.4955393428898365, -0.09249506636175525),
       (5.86145544294642, -12.92096931784711, 8.159367898576159, -0.071584973281401,
        -0.028269050394068383)),
    b=(0.09646076681806523, 0.01, 0.4798896504144996, 1.379008574103742, -3.290069515436081,
       2.324710524099774),
    e=(0.0017800110522257773, 0.0008164344596567463, -0.007880878010261994, 0.1447110071732629,
       -0.5823571654525552, 0.45808210592918686, -0.015151515151515152),
)
