"""The Dormand-Prince 5(4) pair: Dormand and Prince (1980) as Hairer, Norsett and Wanner give it
(*Solving Ordinary Differential Equations I*, II.5; their code DOPRI5) and as SciPy's ``RK45``
uses it: seven stages, the last one at the new state (first same as last: an accepted step
costs six new evaluations of the right-hand side), the fifth-order solution kept (local
extrapolation), the difference to the embedded fourth-order one as the error estimate, and a
quartic interpolant (Shampine 1986, SciPy's coefficients). The published exact fractions.
"""

from ..tableau import ButcherTableau

DOPRI5 = ButcherTableau(
    name="dopri5", order=5, error_order=4,
    c=(1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0),
    a=((1 / 5,),
       (3 / 40, 9 / 40),
       (44 / 45, -56 / 15, 32 / 9),
       (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
       (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656)),
    b=(35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
    e=(-71 / 57600, 0.0, 71 / 16695, -71 / 1920, 17253 / 339200, -22 / 525, 1 / 40),
    dense=((1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),
           (-8048581381 / 2820520608, 0.0, 131558114200 / 32700410799,
            -1754552775 / 470086768, 127303824393 / 49829197408, -282668133 / 205662961,
            40617522 / 29380423),
           (8663915743 / 2820520608, 0.0, -68118460800 / 10900136933,
            14199869525 / 1410260304, -318862633887 / 49829197408, 2019193451 / 616988883,
            -110615467 / 29380423),
           (-12715105075 / 11282082432, 0.0, 87487479700 / 32700410799,
            -10690763975 / 1880347072, 701980252875 / 199316789632, -1453857185 / 822651844,
            69997945 / 29380423)),
    dense_order=4,
    dense_in_attempt=True,  # the kernels' interpolations read the coefficients the step forms
)
