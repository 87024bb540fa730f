"""Rodas5P: a stiffly accurate, L-stable Rosenbrock method of order 5 with an embedded
fourth-order estimate and a third-degree interpolant, written in hawk.

The method is Steinebach's (*Construction of Rosenbrock-Wanner method Rodas5P and numerical
benchmarks within the Julia Differential Equations package*, BIT Numerical Mathematics 63, 27,
2023). The coefficients are OrdinaryDiffEq.jl's (``RODAS5PA``, ``RODAS5PC``, ``RODAS5Pc``,
``RODAS5Pd``, ``RODAS5PH`` and ``gamma`` in
``lib/OrdinaryDiffEqRosenbrock/src/rosenbrock_tableaus.jl``), and so is the formulation
(``perform_step!`` of ``RosenbrockCombinedConstantCache``), with ``W = I / (h gamma) - J``::

    k_s = W \\ (f(u + sum_i A_si k_i, t + c_s h) + h d_s T + sum_i (C_si / h) k_i)
    u_new = u + sum_i A_8i k_i + k_8        (stiffly accurate: the last stage's point, plus k_8)
    err = k_8

``J = df/du`` and ``T = df/dt`` come from ``hawk.jacobian``, the eight solves from
``hawk.solve`` (one elimination: the solves share ``W``). The interpolant is
``u(t + s h) = (1 - s) u + s (u_new + (1 - s) (g_1 + s (g_2 + s g_3)))`` with
``g_j = sum_i H_ji k_i``. Step-size control: ``hawk.ode.control.i_control`` for the estimate,
``h_new = h * clip(0.9 err**(-1/5), 0.2, 6)``, no growth right after a rejection (as
``hawk.ode.rosenbrock``'s).
"""

from __future__ import annotations

import hawk

from .control import controller
from .rosenbrock import _solve, _swapped, automatic_jacobian

__all__ = ["rodas5p_attempt", "rodas5p_value", "rodas5p_control", "GAMMA"]

GAMMA = 0.21193756319429014
A = ((),
     (3.0,),
     (2.849394379747939, 0.45842242204463923),
     (-6.954028509809101, 2.489845061869568, -10.358996098473584),
     (2.8029986275628964, 0.5072464736228206, -0.3988312541770524, -0.04721187230404641),
     (-7.502846399306121, 2.561846144803919, -11.627539656261098, -0.18268767659942256,
      0.030198172008377946),
     (-7.502846399306121, 2.561846144803919, -11.627539656261098, -0.18268767659942256,
      0.030198172008377946, 1.0),
     (-7.502846399306121, 2.561846144803919, -11.627539656261098, -0.18268767659942256,
      0.030198172008377946, 1.0, 1.0))
C = ((),
     (-14.155112264123755,),
     (-17.97296035885952, -2.859693295451294),
     (147.12150275711716, -1.41221402718213, 71.68940251302358),
     (165.43517024871676, -0.4592823456491126, 42.90938336958603, -5.961986721573306),
     (24.854864614690072, -3.0009227002832186, 47.4931110020768, 5.5814197821558125,
      -0.6610691825249471),
     (30.91273214028599, -3.1208243349937974, 77.79954646070892, 34.28646028294783,
      -19.097331116725623, -28.087943162872662),
     (37.80277123390563, -3.2571969029072276, 112.26918849496327, 66.9347231244047,
      -40.06618937091002, -54.66780262877968, -9.48861652309627))
NODES = (0.0, 0.6358126895828704, 0.4095798393397535, 0.9769306725060716, 0.4288403609558664,
         1.0, 1.0, 1.0)
D = (0.21193756319429014, -0.42387512638858027, -0.3384627126235924, 1.8046452872882734,
     2.325825639765069, 0.0, 0.0, 0.0)
H = ((25.948786856663858, -2.5579724845846235, 10.433815404888879, -2.3679251022685204,
      0.524948541321073, 1.1241088310450404, 0.4272876194431874, -0.17202221070155493),
     (-9.91568850695171, -0.9689944594115154, 3.0438037242978453, -24.495224566215796,
      20.176138334709044, 15.98066361424651, -6.789040303419874, -6.710236069923372),
     (11.419903575922262, 2.8879645146136994, 72.92137995996029, 80.12511834622643,
      -52.072871366152654, -59.78993625266729, -0.15582684282751913, 4.883087185713722))
STAGES = 8
#: the most a step may grow by (``hawk.ode.control.i_control``'s ``fac_max``)
FAC_MAX = 6.0
#: the I-controller for the error estimate's order 4 (``err**(-1/5)``)
rodas5p_control = controller("i", 4, FAC_MAX)


@hawk.func
def _scaled_identity_minus(jac, scale, u):
    """``scale I - J`` (a number for a scalar state ``u``)."""
    if hawk.width(u) == 1:
        return scale - jac
    return scale * hawk.identity(hawk.width(u)) - jac


@hawk.func
def _combination(weights, ks, count, u):
    """``sum_i weights[i] ks[i]`` over the first ``count`` stages (zero weights skipped)."""
    total = 0.0 * u
    for i in range(count):
        if weights[i] != 0.0:
            total = total + weights[i] * ks[i]
    return total


@hawk.func
def rodas5p_attempt(f, u, f0, t, h, p, jac=automatic_jacobian, linsolve=_solve):
    """One attempted step of size ``h`` from ``u`` at ``t``, given ``f0 = f(u, t, p)``.

    Returns ``(u_new, err, g, f_new)``: the fifth-order solution at ``t + h``, the error
    estimate (state-shaped, before scaling), the interpolant's three coefficient vectors and
    ``f(u_new, t + h, p)`` (the next step's ``f0``).

    The arguments are ``rosenbrock23_attempt``'s: the right-hand side ``f``, a func ``f(u, t,
    p)``; the state ``u`` (a number or a vector) at the time ``t``; ``f0``; the step ``h``;
    the model's parameters ``p``, passed on to ``f``; ``jac``, a func ``(f, u, t, p) ->
    df/du`` (``automatic_jacobian`` by default); and ``linsolve``, a func ``(W, b) -> W \\ b``
    (``hawk.ode.linsolve.LINSOLVES``; plain elimination by default).
    """
    w = _scaled_identity_minus(jac(f, u, t, p), 1.0 / (h * GAMMA), u)
    dt_term = h * hawk.jacobian(_swapped, t, u, f, p)
    ks = (linsolve(w, f0 + D[0] * dt_term),)
    for s in range(1, STAGES):
        du = f(u + _combination(A[s], ks, s, u), t + NODES[s] * h, p)
        rhs = du + D[s] * dt_term + _combination(C[s], ks, s, u) / h
        ks = ks + (linsolve(w, rhs),)
    u_new = u + _combination(A[STAGES - 1], ks, STAGES - 1, u) + ks[STAGES - 1]
    g = (_combination(H[0], ks, STAGES, u), _combination(H[1], ks, STAGES, u),
         _combination(H[2], ks, STAGES, u))
    return u_new, ks[STAGES - 1], (u_new, g), f(u_new, t + h, p)


@hawk.func
def rodas5p_value(u, h, q, theta):
    """The interpolant at ``t + theta h`` (``theta`` in ``[0, 1]``; ``q`` from the attempt).

    Args:
        u: the state at the step's start.
        h: the step's size (unused: the coefficients hold it).
        q: ``(u_new, (g1, g2, g3))`` from ``rodas5p_attempt``.
        theta: the fraction of the step.
    """
    u_new, g = q
    rest = 1.0 - theta
    return rest * u + theta * (u_new + rest * (g[0] + theta * (g[1] + theta * g[2])))
