"""Verner's "most efficient" 7(6) pair, written in hawk: an explicit Runge-Kutta method of order
7 with an embedded order-6 error estimate, for smooth problems at tight tolerances (where its
order beats a 5(4) pair's cheaper steps), with a seventh-order interpolant.

The coefficients are Verner's (*Numerically optimal Runge-Kutta pairs with interpolants*,
Numer. Algorithms 53, 2010), as OrdinaryDiffEq.jl's ``Vern7`` uses them: read by a script from
SciML/OrdinaryDiffEq.jl, ``lib/OrdinaryDiffEqVerner/src/verner_tableaus.jl`` (commit b211787f),
the exact rationals and 40-digit decimals of its generic constructors (``Vern7Tableau``,
``Vern7ExtraStages``, ``Vern7InterpolationCoefficients``), each rounded to the nearest double
(a few differ in the last bit from that file's own Float64 literals). The names follow the
file's: ``Aij`` (stage ``i`` from stage ``j``), ``Ci``, ``Bi``, ``Ei`` (its ``btilde``: seventh-
minus sixth-order weights), ``Rij`` (the interpolant's weight of stage ``i`` at ``theta**j``).

A step costs ten evaluations of ``f``: stages 2 to 10 (stage 10 only serves the error estimate)
and ``f(u_new, t + h)``, which is stage 11 of the interpolant and the next step's ``k1``. The pair
is not first-same-as-last: stage 10 is not at the new state.

The interpolant needs five more stages (12 to 16). ``vern7_attempt`` computes them and returns
them in ``q``: hawk removes values nothing reads, so a kernel that never interpolates (no
``saveat``, no event) compiles without them and pays nothing (``tests/test_verner.py`` checks
the op count); with ``saveat`` or an event, an accepted or rejected step costs 15 evaluations.

Error norm: ``hawk.ode.error_norm``. Step-size control: ``vern7_control``, Hairer's PI
controller (``hawk.ode.pi_control``) with the exponents of a sixth-order estimate. Initial step:
``hawk.ode.dopri5_start``, Hairer's HINIT with a fifth order's exponent: at tight tolerances it
guesses smaller than HINIT with this pair's order would (the exponent 1/5 in place of 1/7 of a
number far below 1), and the controller grows the step up to tenfold at a time, so the
difference costs a step or two.
"""

from __future__ import annotations

import hawk

from .pi_control import pi_control

__all__ = ["vern7_attempt", "vern7_value", "vern7_control", "EXPO", "BETA"]

# nodes (the last two stages are at t + h)
C02, C03, C04, C05 = 0.005, 0.10888888888888888, 0.16333333333333333, 0.4555
C06, C07, C08 = 0.6095094489978381, 0.884, 0.925
# the stages (zero entries left out)
A0201 = 0.005
A0301, A0302 = -1.07679012345679, 1.185679012345679
A0401, A0403 = 0.04083333333333333, 0.1225
A0501, A0503, A0504 = 0.6389139236255726, -2.455672638223657, 2.272258714598084
A0601, A0603, A0604 = -2.6615773750187572, 10.804513886456137, -8.3539146573962
A0605 = 0.820487594956657
A0701, A0703, A0704 = 6.067741434696771, -24.711273635911084, 20.427517930788895
A0705, A0706 = -1.9061579788166472, 1.006172249242068
A0801, A0803, A0804 = 12.054670076253203, -49.75478495046899, 41.142888638604674
A0805, A0806, A0807 = -4.461760149974004, 2.042334822239175, -0.09834843665406108
A0901, A0903, A0904 = 10.138146522881808, -42.6411360317175, 35.76384003992257
A0905, A0906, A0907 = -4.3480228403929075, 2.0098622683770357, 0.3487490460338272
A0908 = -0.27143900510483127
A1001, A1003, A1004 = -45.030072034298676, 187.3272437654589, -154.02882369350186
A1005, A1006, A1007 = 18.56465306347536, -7.141809679295079, 1.3088085781613785
# the solution of order 7
B01, B04, B05 = 0.04715561848627222, 0.25750564298434153, 0.2621665397741262
B06, B07, B08 = 0.15216092656738558, 0.49399691700324844, -0.29430311714032503
B09 = 0.0813174723249511
# order-7 minus order-6 weights: the error estimate
E01, E04, E05 = 0.0025470118799310456, -0.00965839487279575, 0.0420647097563969
E06, E07, E08 = -0.0666822437469301, 0.26500974646212816, -0.29430311714032503
E09, E10 = 0.0813174723249511, -0.020295184663356284
# the interpolant's extra stages (stage 11, f(u_new, t + h), comes first: its row is B)
C12, C13, C14, C15, C16 = 0.29, 0.125, 0.25, 0.53, 0.79
A1201, A1204, A1205 = 0.0523222769159969, 0.22495861826705715, 0.017443709248776376
A1206, A1207, A1208 = -0.007669379876829393, 0.03435896044073285, -0.0410209723009395
A1209, A1211 = 0.025651133005205617, -0.0160443457
A1301, A1304, A1305 = 0.053053341257859085, 0.12195301011401886, 0.017746840737602496
A1306, A1307, A1308 = -0.0005928372667681495, 0.008381833970853752, -0.01293369259698612
A1309, A1311, A1312 = 0.009412056815253861, -0.005353253107275676, -0.06666729992455811
A1401, A1404, A1405 = 0.03887903257436304, -0.0024403203308301317, -0.0013928917214672623
A1406, A1407, A1408 = -0.00047446291558680135, 0.00039207932413159514, -0.00040554733285128004
A1409, A1411, A1412 = 0.00019897093147716726, -0.00010278198793179169, 0.03385661513870267
A1413 = 0.1814893063199928
A1501, A1504, A1505 = 0.05723681204690013, 0.22265948066761182, 0.12344864200186899
A1506, A1507, A1508 = 0.04006332526666491, -0.05269894848581452, 0.04765971214244523
A1509, A1511, A1512 = -0.02138895885042213, 0.015193891064036402, 0.12060546716289655
A1513 = -0.022779423016187374
A1601, A1604, A1605 = 0.051372038802756814, 0.5414214473439406, 0.350399806692184
A1606, A1607, A1608 = 0.14193112269692182, 0.10527377478429423, -0.031081847805874016
A1609, A1611, A1612 = -0.007401883149519145, -0.006377932504865363, -0.17325495908361865
A1613 = -0.18228156777622026
# the interpolant's weights: b_i(theta) = sum_j R_ij theta**j
R011, R012, R013, R014 = 1.0, -8.413387198332767, 33.675508884490895, -70.80159089484886
R015, R016, R017 = 80.64695108301298, -47.19413969837522, 11.133813442539243
R042, R043, R044, R045 = 8.754921980674396, -88.4596828699771, 346.9017638429916, -629.2580030059837
R046, R047 = 529.6773755604193, -167.35886986514018
R052, R053, R054 = 8.913387586637922, -90.06081846893218, 353.1807459217058
R055, R056, R057 = -640.6476819744374, 539.2646279047156, -170.38809442991547
R062, R063, R064, R065 = 5.1733120298478, -52.271115900055385, 204.9853867374073, -371.8306118563603
R066, R067 = 312.9880934374529, -98.89290352172495
R072, R073, R074 = 16.79537744079696, -169.70040000059728, 665.4937727009246
R075, R076, R077 = -1207.1638892336007, 1016.1291515818546, -321.06001557237494
R082, R083, R084 = -10.005997536098665, 101.1005433052275, -396.47391512378437
R085, R086, R087 = 719.1787707014183, -605.3681033918824, 191.27439892797935
R092, R093, R094 = 2.764708833638599, -27.934602637390462, 109.54779186137893
R095, R096, R097 = -198.7128113064482, 167.26633571640318, -52.85010499525706
R112, R113, R114 = -2.1696320280163506, 22.016696037569876, -86.90152427798948
R115, R116, R117 = 159.22388973861476, -135.9618306534588, 43.792401183280006
R122, R123, R124 = -4.890070188793804, 22.75407737425176, -30.78034218537731
R125, R126, R127 = -2.797194317207249, 31.369456637508403, -15.655927320381801
R132, R133, R134 = 10.862170929551967, -50.542971417827104, 68.37148040407511
R135, R136, R137 = 6.213326521632409, -69.68006323194157, 34.776056794509195
R142, R143, R144 = -11.37286691922923, 130.79058078246717, -488.65113677785604
R145, R146, R147 = 832.2148793276441, -664.7743368554426, 201.79288044241662
R152, R153, R154, R155 = -5.919778732715007, 63.27679965889219, -265.432682088738, 520.1009254140611
R156, R157 = -467.412109533902, 155.3868452824017
R162, R163, R164 = -10.492146197961823, 105.35538525188011, -409.43975011988937
R165, R166, R167 = 732.831448907654, -606.3044574733512, 188.0495196316683

# the controller: the error estimate is of order 6, so it falls as h**7
BETA = 0.2 / 7.0
EXPO = 1.0 / 7.0 - 0.75 * BETA


@hawk.func
def vern7_attempt(f, u, k1, t, h, p):
    """One attempted step of size ``h`` from ``u`` at ``t``, given ``k1 = f(u, t, p)``:
    ``(u_new, err, q, k11)``, the seventh-order solution, the error estimate (state-shaped,
    before scaling), the interpolant's data ``q`` (the stages it weighs, the five extra ones
    included: free unless read) and ``k11 = f(u_new, t + h, p)`` (the next step's ``k1``).

    Args:
        f: the right-hand side, a func ``f(u, t, p)``.
        u: the state at ``t``.
        k1: ``f(u, t, p)``.
        t: the time.
        h: the step to attempt.
        p: the model's parameters, passed on to ``f``.
    """
    k2 = f(u + h * (A0201 * k1), t + C02 * h, p)
    k3 = f(u + h * (A0301 * k1 + A0302 * k2), t + C03 * h, p)
    k4 = f(u + h * (A0401 * k1 + A0403 * k3), t + C04 * h, p)
    k5 = f(u + h * (A0501 * k1 + A0503 * k3 + A0504 * k4), t + C05 * h, p)
    k6 = f(u + h * (A0601 * k1 + A0603 * k3 + A0604 * k4 + A0605 * k5), t + C06 * h, p)
    k7 = f(u + h * (A0701 * k1 + A0703 * k3 + A0704 * k4 + A0705 * k5 + A0706 * k6), t + C07 * h, p)
    k8 = f(u + h * (A0801 * k1 + A0803 * k3 + A0804 * k4 + A0805 * k5 + A0806 * k6 +
        A0807 * k7), t + C08 * h, p)
    k9 = f(u + h * (A0901 * k1 + A0903 * k3 + A0904 * k4 + A0905 * k5 + A0906 * k6 + A0907 * k7 +
        A0908 * k8), t + h, p)
    k10 = f(u + h * (A1001 * k1 + A1003 * k3 + A1004 * k4 + A1005 * k5 + A1006 * k6 +
        A1007 * k7), t + h, p)
    u_new = u + h * (B01 * k1 + B04 * k4 + B05 * k5 + B06 * k6 + B07 * k7 + B08 * k8 + B09 * k9)
    k11 = f(u_new, t + h, p)
    err = h * (E01 * k1 + E04 * k4 + E05 * k5 + E06 * k6 + E07 * k7 + E08 * k8 + E09 * k9 +
        E10 * k10)
    # the interpolant's extra stages
    k12 = f(u + h * (A1201 * k1 + A1204 * k4 + A1205 * k5 + A1206 * k6 + A1207 * k7 + A1208 * k8 +
        A1209 * k9 + A1211 * k11), t + C12 * h, p)
    k13 = f(u + h * (A1301 * k1 + A1304 * k4 + A1305 * k5 + A1306 * k6 + A1307 * k7 + A1308 * k8 +
        A1309 * k9 + A1311 * k11 + A1312 * k12), t + C13 * h, p)
    k14 = f(u + h * (A1401 * k1 + A1404 * k4 + A1405 * k5 + A1406 * k6 + A1407 * k7 + A1408 * k8 +
        A1409 * k9 + A1411 * k11 + A1412 * k12 + A1413 * k13), t + C14 * h, p)
    k15 = f(u + h * (A1501 * k1 + A1504 * k4 + A1505 * k5 + A1506 * k6 + A1507 * k7 + A1508 * k8 +
        A1509 * k9 + A1511 * k11 + A1512 * k12 + A1513 * k13), t + C15 * h, p)
    k16 = f(u + h * (A1601 * k1 + A1604 * k4 + A1605 * k5 + A1606 * k6 + A1607 * k7 + A1608 * k8 +
        A1609 * k9 + A1611 * k11 + A1612 * k12 + A1613 * k13), t + C16 * h, p)
    return u_new, err, (k1, k4, k5, k6, k7, k8, k9, k11, k12, k13, k14, k15, k16), k11


@hawk.func
def vern7_value(u, h, q, theta):
    """The interpolant at ``t + theta h`` (``theta`` in ``[0, 1]``; seventh order):
    ``u + h * (q1 theta + ... + q7 theta**7)``, ``qj`` the stages weighed by Verner's ``R*j``.

    Args:
        u: the state at the step's start.
        h: the step's size.
        q: the stages from ``vern7_attempt``.
        theta: the fraction of the step.
    """
    (k1, k4, k5, k6, k7, k8, k9, k11, k12, k13, k14, k15, k16) = q
    q1 = R011 * k1
    q2 = (R012 * k1 + R042 * k4 + R052 * k5 + R062 * k6 + R072 * k7 + R082 * k8 + R092 * k9 +
        R112 * k11 + R122 * k12 + R132 * k13 + R142 * k14 + R152 * k15 + R162 * k16)
    q3 = (R013 * k1 + R043 * k4 + R053 * k5 + R063 * k6 + R073 * k7 + R083 * k8 + R093 * k9 +
        R113 * k11 + R123 * k12 + R133 * k13 + R143 * k14 + R153 * k15 + R163 * k16)
    q4 = (R014 * k1 + R044 * k4 + R054 * k5 + R064 * k6 + R074 * k7 + R084 * k8 + R094 * k9 +
        R114 * k11 + R124 * k12 + R134 * k13 + R144 * k14 + R154 * k15 + R164 * k16)
    q5 = (R015 * k1 + R045 * k4 + R055 * k5 + R065 * k6 + R075 * k7 + R085 * k8 + R095 * k9 +
        R115 * k11 + R125 * k12 + R135 * k13 + R145 * k14 + R155 * k15 + R165 * k16)
    q6 = (R016 * k1 + R046 * k4 + R056 * k5 + R066 * k6 + R076 * k7 + R086 * k8 + R096 * k9 +
        R116 * k11 + R126 * k12 + R136 * k13 + R146 * k14 + R156 * k15 + R166 * k16)
    q7 = (R017 * k1 + R047 * k4 + R057 * k5 + R067 * k6 + R077 * k7 + R087 * k8 + R097 * k9 +
        R117 * k11 + R127 * k12 + R137 * k13 + R147 * k14 + R157 * k15 + R167 * k16)
    # Horner: u + h * (q1 theta + q2 theta**2 + ...)
    return u + (h * theta) * (q1 + theta * (q2 + theta * (q3 + theta * (q4 + theta * (
        q5 + theta * (q6 + theta * q7))))))


@hawk.func
def vern7_control(err_norm, h, c):
    """``pi_control`` for Vern7's error estimate: ``(accepted, h_next, c_next)``.

    Args:
        err_norm: the step's ``error_norm``.
        h: the step's size.
        c: the controller's memory (as ``dopri5_control``'s; start it at ``C_START``).
    """
    return pi_control(err_norm, h, c, EXPO, BETA)
