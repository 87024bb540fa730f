"""Verner's 7(6) and 9(8) pairs: ``method="vern7"`` and ``method="vern9"`` in
``eagle.ode.solve`` and ``dopri5_kernel``. Their tableaus are checked against the order
conditions (and their interpolants' weights too), their global error falls at orders 7 and 9 on
fixed steps and their interpolants' at least at theirs, the interpolant's extra stages cost
nothing when nothing interpolates, vern9 agrees with SciPy's DOP853 on Lorenz and Kepler at
tight tolerances in far fewer steps than dopri5, events and ``saveat`` work, and every backend
equals the reference executor."""

from __future__ import annotations

import math

import numpy as np
import pytest

import eagle
import eagle.ode
import hawk
from backends import target  # noqa: F401  (the fixture)
from differential import adaptive_bindings, assert_adaptive_run_matches_reference
from hawk.ir import OpKind
from hawk.ode import dopri5, pi_control, verner
from hawk.ode.control import pi_exponents
from hawk.ode.tableaus import VERN7, VERN9
from ode_models import G, bounce, free_fall, height, kepler, lorenz

scipy_integrate = pytest.importorskip("scipy.integrate")

#: each method's tableau, order and attempt/value funcs
METHODS = {"vern7": (VERN7, 7, verner.vern7_attempt, verner.vern7_value),
           "vern9": (VERN9, 9, verner.vern9_attempt, verner.vern9_value)}


def tableau(tab):
    """``(A, c, b, e, R)`` of a ``ButcherTableau`` over every stage (``f(u_new, t + h)``
    and the interpolant's extra ones included; ``R[i, j]`` the weight of stage ``i`` at
    ``theta**j``, ``j`` from 0)."""
    A, c = tab.full()
    count = len(c)
    b, e = np.zeros(count), np.zeros(count)
    b[:len(tab.b)], e[:len(tab.e)] = tab.b, tab.e
    R = np.zeros((count, 10))
    R[:, 1:len(tab.dense) + 1] = np.array(tab.dense).T
    return A, c, b, e, R


def trees(A, c, order):
    """``(phi, gamma)`` for rooted trees up to ``order``, ``sum_i b_i phi_i = 1 / gamma``: all
    of them up to order 4, and up to ``order`` the bushy ones (``c**(k-1)``, the quadrature
    conditions), ``c**m * (A c**n)`` and ``A A c**n``."""
    out = [(c ** (k - 1), k) for k in range(1, order + 1)]
    for m in range(order):
        for n in range(1, order):
            if m + n + 2 <= order:
                out.append((c**m * (A @ c**n), (n + 1) * (m + n + 2)))
    for n in range(1, order):
        if n + 3 <= order:
            out.append((A @ (A @ c**n), (n + 1) * (n + 2) * (n + 3)))
    return out


@pytest.mark.parametrize("method", METHODS)
def test_the_tableaus_meet_the_order_conditions(method):
    """Row sums are the nodes (the interpolant's extra stages too); the weights meet the
    order conditions up to the method's order (every tree up to order 4, the quadrature
    conditions and two families of taller trees up to 7 or 9); the embedded weights ``b - e``
    up to one less, and not beyond; the interpolant's weights meet the quadrature conditions
    at every ``theta`` (to the rounding of their large terms) and are ``b`` at ``theta = 1``."""
    tab, order, *_ = METHODS[method]
    A, c, b, e, R = tableau(tab)
    scale = np.abs(A).sum(axis=1)  # a row's rounding grows with its coefficients
    assert (np.abs(A.sum(axis=1) - c) <= 1e-15 * np.maximum(scale, 1.0) * 4).all()
    for phi, gamma in trees(A, c, order):
        assert abs(b @ phi - 1.0 / gamma) < 1e-14, gamma
    embedded = b - e
    for k in range(1, order):
        assert abs(embedded @ c ** (k - 1) - 1.0 / k) < 1e-14
    assert abs(embedded @ c ** (order - 1) - 1.0 / order) > 1e-6  # a real estimate
    assert abs(b @ c**order - 1.0 / (order + 1)) > 1e-7  # and order, not more
    for theta in (0.25, 0.6, 1.0):  # the weights are large (up to 1e3, 1e4): so is rounding
        powers = theta ** np.arange(10)
        for k in range(1, order + 1):
            rounding = 1e-15 * (np.abs(R) @ powers) @ c ** (k - 1)
            assert abs((R @ powers) @ c ** (k - 1) - theta**k / k) < rounding, (theta, k)
    np.testing.assert_allclose(R.sum(axis=1), b, atol=1e-15 * np.abs(R).sum())


@hawk.func
def growth(u, t, p):
    """``u' = 2 u cos t``: ``u = exp(2 sin t)``."""
    return 2.0 * u * math.cos(t)


def kepler_python(u, t, mu):
    r3 = (u[0] ** 2 + u[1] ** 2) ** 1.5
    return np.array([u[2], u[3], -mu * u[0] / r3, -mu * u[1] / r3])


def fixed_steps(attempt, f, u, t_end, n):
    """``u`` after ``n`` steps of ``t_end / n`` (the funcs called from Python on NumPy
    values)."""
    h, t = t_end / n, 0.0
    k1 = f(u, t, 1.0)
    for _ in range(n):
        u, _, _, k1 = attempt(f, u, k1, t, h, 1.0)
        t += h
    return u


def slope(sizes, errors):
    return np.polyfit(np.log(sizes), np.log(errors), 1)[0]


def test_the_solutions_fall_at_orders_7_and_9():
    """Fixed steps: vern7 on ``u' = 2 u cos t`` to t = 8 (24 to 96 steps; fitted slope 6.93),
    vern9 on one Kepler orbit of eccentricity 0.5 (32 to 128 steps; 9.47: a pair chosen for a
    small principal error still shows some of its order-10 terms), each within 0.5 of its
    order, the errors from 1e-6 down to 1e-12, well above roundoff."""
    steps = np.array([24, 32, 48, 64, 96])
    errors = [abs(fixed_steps(verner.vern7_attempt, growth, 1.0, 8.0, n)
                  - math.exp(2.0 * math.sin(8.0))) for n in steps]
    assert abs(slope(8.0 / steps, errors) - 7.0) < 0.5, errors
    e = 0.5
    start = np.array([1 - e, 0.0, 0.0, math.sqrt((1 + e) / (1 - e))])
    steps = np.array([32, 48, 64, 96, 128])
    errors = [np.abs(fixed_steps(verner.vern9_attempt, kepler_python, start, 2 * math.pi, n)
                     - start).max() for n in steps]
    assert min(errors) > 1e-13
    assert abs(slope(2 * math.pi / steps, errors) - 9.0) < 0.5, errors


@pytest.mark.parametrize("method", METHODS)
def test_the_interpolants_are_of_the_methods_order(method):
    """One step of ``u' = 2 u cos t`` from the exact value at 25 starting times, the
    interpolant at theta = 0.25, 0.5, 0.75: the largest error falls at least as
    ``h**(order + 0.5)`` (the local error of an interpolant of order p falls as ``h**(p + 1)``;
    measured 8.5 for vern7, 11.2 for vern9, whose order-10 terms still weigh at these steps,
    and whose large weights leave a floor near 1e-12 below them); at theta = 1 it is the
    step's solution (to the rounding of those weights)."""
    tab, order, attempt, value = METHODS[method]
    weights = np.abs(tableau(tab)[4]).sum()
    sizes = np.array([0.8, 0.6, 0.45, 0.3])
    worst = []
    for h in sizes:
        errors = [0.0]
        for t0 in np.linspace(0.0, 6.0, 25):
            u = math.exp(2.0 * math.sin(t0))
            u_new, _, q, _ = attempt(growth, u, growth(u, t0, 0.0), t0, h, 0.0)
            errors += [abs(value(u, h, q, theta) - math.exp(2.0 * math.sin(t0 + theta * h)))
                       for theta in (0.25, 0.5, 0.75)]
            rounding = 1e-15 * h * weights * max(abs(k) for k in q)
            assert abs(value(u, h, q, 1.0) - u_new) < rounding
        worst.append(max(errors))
    assert min(worst) > 1e-11
    assert slope(sizes, worst) > order + 0.5, worst


@hawk.func
def sine(u, t, p):
    return math.sin(p * u) + 0.0 * t


@pytest.mark.parametrize("method, per_step, with_interpolant",
                         [("vern7", 10, 15), ("vern9", 16, 25)])
def test_the_interpolants_extra_stages_cost_nothing_when_unread(method, per_step,
                                                                with_interpolant):
    """A kernel without saveat or an event evaluates the model only for the step (vern7: 9
    stages and ``f(u_new)``, vern9: 15 and ``f(u_new)``): hawk drops the interpolant's extra
    stages that ``attempt`` computes; with saveat they are there (5 and 9 more)."""
    def calls(kernel):
        ops = kernel.program.ops
        return sum(1 for op in ops if op.kind is OpKind.CALL and op.attr == "sin"), len(ops)

    bare, bare_ops = calls(hawk.ode.dopri5_kernel(sine, hawk.Scalar, hawk.Scalar,
                                                  method=method))
    saving, saving_ops = calls(hawk.ode.dopri5_kernel(sine, hawk.Scalar, hawk.Scalar,
                                                      method=method, saveat=True))
    assert (bare, saving) == (per_step, with_interpolant)
    assert bare_ops < saving_ops


def test_the_controllers_are_dopri5s_with_their_orders_exponents():
    """``pi_control`` with DOPRI5's exponents is ``dopri5_control``; Verner's use 1/7 and 1/9
    (with the same share of proportional control)."""
    for err, h, c in ((0.3, 0.1, 1e-4), (2.5, 0.1, 0.5), (0.7, 0.2, -0.3), (1e-9, 0.1, 1e-4)):
        assert pi_control(err, h, c, dopri5.EXPO, dopri5.BETA) == \
            dopri5.dopri5_control(err, h, c)
    for order in (6, 8):
        expo, beta = pi_exponents(order)
        assert expo + 0.75 * beta == pytest.approx(1 / (order + 1))
    assert verner.vern9_control(0.5, 0.1, 1e-4)[0]
    assert not verner.vern9_control(1.5, 0.1, 1e-4)[0]
    assert verner.vern7_control(0.3, 0.1, 1e-4) == pi_control(0.3, 0.1, 1e-4, *pi_exponents(6))


def lorenz_python(t, y):
    return [10 * (y[1] - y[0]), y[0] * (28 - y[2]) - y[1], y[0] * y[1] - 8 / 3 * y[2]]


def test_vern9_matches_scipy_on_lorenz_and_kepler_in_far_fewer_steps_than_dopri5():
    """At rtol = atol = 1e-12: Lorenz to t = 2 within 1e-8 of DOP853 at 1e-13, in under a
    tenth of dopri5's steps (measured: 428 against 4957 over four samples; vern7: 1143); a
    Kepler orbit of eccentricity up to 0.6 back at its start within 1e-9."""
    u0 = np.vstack([np.ones(4), np.linspace(0.5, 1.5, 4), np.ones(4)])
    p = np.array([10.0, 28.0, 8.0 / 3.0])
    sol = eagle.ode.solve(lorenz, u0, (0.0, 2.0), p=p, method="vern9", rtol=1e-12,
                          atol=1e-12)
    seven = eagle.ode.solve(lorenz, u0, (0.0, 2.0), p=p, method="vern7", rtol=1e-12,
                            atol=1e-12)
    dp5 = eagle.ode.solve(lorenz, u0, (0.0, 2.0), p=p, rtol=1e-12, atol=1e-12)
    for i in range(4):
        ref = scipy_integrate.solve_ivp(lorenz_python, (0.0, 2.0), u0[:, i], method="DOP853",
                                        rtol=1e-13, atol=1e-13)
        assert np.abs(sol.u[:, i] - ref.y[:, -1]).max() < 1e-8
        assert np.abs(seven.u[:, i] - ref.y[:, -1]).max() < 1e-8
    assert (sol.status == 1).all() and (seven.status == 1).all()
    assert sol.accepted.sum() < 0.1 * dp5.accepted.sum()
    assert sol.accepted.sum() < seven.accepted.sum() < dp5.accepted.sum()
    e = np.linspace(0.0, 0.6, 5)
    start = np.vstack([1 - e, np.zeros(5), np.zeros(5), np.sqrt((1 + e) / (1 - e))])
    orbit = eagle.ode.solve(kepler, start, (0.0, 2 * math.pi), p=1.0, method="vern9",
                            rtol=1e-12, atol=1e-12)
    assert np.abs(orbit.u - start).max() < 1e-9


@pytest.mark.parametrize("method", METHODS)
def test_events_and_saveat_work_with_verners_pairs(method):
    """A bouncing ball: the bounce located on the method's interpolant, and saved heights,
    against the exact parabolas; with ``on_event``, one bounce."""
    u0 = np.vstack([np.full(3, 1.0), np.zeros(3)])
    sol = eagle.ode.solve(free_fall, u0, (0.0, 0.5), p=0.9, method=method, rtol=1e-10,
                          atol=1e-12, event=height, saveat=(0.0, 0.4, 5))
    fall = math.sqrt(2.0 / G)
    assert (sol.status == 2).all()
    np.testing.assert_allclose(sol.t, fall, rtol=1e-10)
    ts = np.linspace(0.0, 0.4, 5)
    np.testing.assert_allclose(sol.saved[:, 0, 0], 1.0 - 0.5 * G * ts**2, atol=1e-10)
    bounced = eagle.ode.solve(free_fall, u0, (0.0, 1.0), p=0.9, method=method, rtol=1e-10,
                              atol=1e-12, event=height, on_event=bounce)
    assert (bounced.events == 1).all()


@hawk.func
def oscillator(u, t, p):
    return hawk.vec2(u[1], -u[0])


@pytest.mark.parametrize("method", METHODS)
def test_saved_values_come_from_the_interpolant_to_the_tolerance(method):
    """u'' = -u saved at 41 times inside long steps at rtol 1e-10: within 1e-8 of cos t."""
    sol = eagle.ode.solve(oscillator, np.array([[1.0], [0.0]]), (0.0, 10.0), p=0.0,
                          method=method, rtol=1e-10, atol=1e-10, saveat=(0.0, 10.0, 41))
    assert sol.accepted[0] < 100
    ts = np.linspace(0.0, 10.0, 41)
    assert np.abs(sol.saved[:, 0, 0] - np.cos(ts)).max() < 1e-8


@pytest.mark.parametrize("method", METHODS)
def test_verner_kernels_equal_the_reference_on_every_backend(target, method):  # noqa: F811
    n = 100
    kernel = hawk.ode.dopri5_kernel(lorenz, hawk.Vec3, hawk.Vec3, saveat=True, method=method)
    rng = np.random.default_rng(5)
    u0 = rng.uniform(0.5, 1.5, (3, n))
    p = np.vstack([np.full(n, 10.0), rng.uniform(20.0, 30.0, n), np.full(n, 8 / 3)])
    k1 = np.vstack([p[0] * (u0[1] - u0[0]), u0[0] * (p[1] - u0[2]) - u0[1],
                    u0[0] * u0[1] - p[2] * u0[2]])
    bindings = adaptive_bindings(p, u0, k1, t_end=1.0, rtol=1e-10, atol=1e-10, h=1e-3,
                                 save_every=0.25, save_count=5)
    assert_adaptive_run_matches_reference(target, kernel, bindings, 2000)


def test_vern9_kernels_compile_for_the_gpu_with_nvrtc():
    nvrtc = pytest.importorskip("eagle.cuda.nvrtc")
    from eagle.cuda.emit import emit_cuda

    kernel = hawk.ode.dopri5_kernel(lorenz, hawk.Vec3, hawk.Vec3, saveat=True, method="vern9",
                                    event=height, terminal=(True,), record_events=True)
    assert nvrtc.compile_source(emit_cuda(kernel.specialize({})), "sm_90")[:4] == b"\x7fELF"
