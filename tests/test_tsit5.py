"""Tsitouras's 5(4) pair (issue 29): ``method="tsit5"`` in ``eagle.ode.solve`` and
``dopri5_kernel(method="tsit5")``. Its coefficients are checked against their defining order
conditions, its global error falls at order 5 on fixed steps, its interpolant at order 4,
it agrees with SciPy on Lorenz and Kepler, takes events and ``saveat`` as Dormand-Prince does,
and every backend equals the reference executor."""

from __future__ import annotations

import math

import numpy as np
import pytest

import eagle
import eagle.ode
import hawk
from backends import target  # noqa: F401  (the fixture)
from differential import adaptive_bindings, assert_adaptive_run_matches_reference
from hawk.ode.tableaus import TSIT5
from hawk.ode.tsit5 import tsit5_attempt, tsit5_value
from ode_models import G, bounce, free_fall, height, kepler, lorenz

scipy_integrate = pytest.importorskip("scipy.integrate")

A, C = TSIT5.full()  # stage 7 is f(u_new, t + h): its row is B
B = np.array((*TSIT5.b, 0.0))
E = np.array(TSIT5.e)


def test_the_coefficients_meet_the_order_conditions():
    """Row sums are the nodes; the weights satisfy the order conditions up to 5 that a
    7-stage pair is built on (the quadrature ones and two tree conditions); the embedded
    weights B - E are of order 4."""
    np.testing.assert_allclose(A.sum(axis=1), C, atol=1e-15)
    for q in range(1, 6):  # sum b_i c_i^(q-1) = 1/q
        assert abs(B @ C ** (q - 1) - 1.0 / q) < 1e-14
    assert abs(B @ (A @ C) - 1 / 6) < 1e-14 and abs(B @ (A @ C**2) - 1 / 12) < 1e-14
    embedded = B - E
    for q in range(1, 5):
        assert abs(embedded @ C ** (q - 1) - 1.0 / q) < 1e-13
    assert abs(embedded @ C**4 - 1 / 5) > 1e-4  # and not of order 5: a real estimate


@hawk.func
def oscillator(u, t, p):
    return hawk.vec2(u[1], -u[0])


@hawk.kernel
def fixed_tsit5(h: hawk.Param, t_end: hawk.Param, terminated: hawk.Terminated,
                u: hawk.Mutable[hawk.Vec2], k1: hawk.Mutable[hawk.Vec2],
                t: hawk.Mutable[hawk.Scalar], mid: hawk.Out[hawk.Vec2]):
    u_new, _, q, k_next = tsit5_attempt(oscillator, u, k1, t, h, 0.0)
    mid = tsit5_value(u, h, q, 0.37)
    u, k1 = u_new, k_next
    t += h
    terminated = t >= t_end - 0.5 * h


def test_the_solution_falls_at_order_5():
    """Fixed steps on u'' = -u: the error at t = 4 has a fitted slope of 5 within 0.5
    against h."""
    sizes = np.array([0.2, 0.1, 0.05, 0.025])
    errors = []
    for h in sizes:
        state = dict(u=np.array([[1.0], [0.0]]), k1=np.array([[0.0], [-1.0]]),
                     t=np.zeros(1), mid=np.zeros((2, 1)))
        eagle.until_done(eagle.deploy(fixed_tsit5, "cpu"), max_steps=1000, h=h, t_end=4.0,
                         **state).run()
        errors.append(abs(state["u"][0, 0] - math.cos(state["t"][0])))
    slope = np.polyfit(np.log(sizes), np.log(errors), 1)[0]
    assert 4.5 < slope < 5.5, (slope, errors)


def test_saved_values_come_from_the_interpolant_to_the_tolerance():
    """u'' = -u saved at 41 times inside long steps: within a few tolerances of cos t."""
    sol = eagle.ode.solve(oscillator, np.array([[1.0], [0.0]]), (0.0, 10.0), p=0.0,
                          method="tsit5", rtol=1e-8, atol=1e-8, saveat=(0.0, 10.0, 41))
    assert sol.accepted[0] < 100  # about two steps per saved time: most fall inside a step
    ts = np.linspace(0.0, 10.0, 41)
    assert np.abs(sol.saved[:, 0, 0] - np.cos(ts)).max() < 1e-6


def test_tsit5_matches_scipy_on_lorenz_and_kepler_with_fewer_steps_than_its_tolerance_asks():
    u0 = np.vstack([np.ones(4), np.linspace(0.5, 1.5, 4), np.ones(4)])
    p = np.array([10.0, 28.0, 8.0 / 3.0])
    sol = eagle.ode.solve(lorenz, u0, (0.0, 2.0), p=p, method="tsit5", rtol=1e-9, atol=1e-9)
    dp5 = eagle.ode.solve(lorenz, u0, (0.0, 2.0), p=p, rtol=1e-9, atol=1e-9)
    for i in range(4):
        ref = scipy_integrate.solve_ivp(
            lambda t, y: [10 * (y[1] - y[0]), y[0] * (28 - y[2]) - y[1],
                          y[0] * y[1] - 8 / 3 * y[2]],
            (0.0, 2.0), u0[:, i], method="DOP853", rtol=1e-13, atol=1e-13)
        assert np.abs(sol.u[:, i] - ref.y[:, -1]).max() < 1e-6
    assert sol.accepted.sum() < 1.2 * dp5.accepted.sum()
    e = np.linspace(0.0, 0.6, 5)
    start = np.vstack([1 - e, np.zeros(5), np.zeros(5), np.sqrt((1 + e) / (1 - e))])
    orbit = eagle.ode.solve(kepler, start, (0.0, 2 * math.pi), p=1.0, method="tsit5",
                            rtol=1e-10, atol=1e-10)
    assert np.abs(orbit.u - start).max() < 1e-6


def test_events_and_saveat_work_with_tsit5():
    """A bouncing ball: the bounces located on Tsitouras's interpolant, and saved heights,
    against the exact parabolas."""
    u0 = np.vstack([np.full(3, 1.0), np.zeros(3)])
    sol = eagle.ode.solve(free_fall, u0, (0.0, 0.5), p=0.9, method="tsit5", rtol=1e-10,
                          atol=1e-12, event=height, saveat=(0.0, 0.4, 5))
    fall = math.sqrt(2.0 / G)
    assert (sol.status == 2).all()
    np.testing.assert_allclose(sol.t, fall, rtol=1e-9)
    ts = np.linspace(0.0, 0.4, 5)
    np.testing.assert_allclose(sol.saved[:, 0, 0], 1.0 - 0.5 * G * ts**2, atol=1e-9)
    bounced = eagle.ode.solve(free_fall, u0, (0.0, 1.0), p=0.9, method="tsit5", rtol=1e-10,
                              atol=1e-12, event=height, on_event=bounce)
    assert (bounced.events == 1).all()


def test_tsit5_kernels_equal_the_reference_on_every_backend(target):  # noqa: F811
    n = 150
    kernel = hawk.ode.dopri5_kernel(lorenz, hawk.Vec3, hawk.Vec3, saveat=True, method="tsit5")
    rng = np.random.default_rng(4)
    u0 = rng.uniform(0.5, 1.5, (3, n))
    p = np.vstack([np.full(n, 10.0), rng.uniform(20.0, 30.0, n), np.full(n, 8 / 3)])
    k1 = np.vstack([p[0] * (u0[1] - u0[0]), u0[0] * (p[1] - u0[2]) - u0[1],
                    u0[0] * u0[1] - p[2] * u0[2]])
    bindings = adaptive_bindings(p, u0, k1, t_end=1.0, rtol=1e-8, atol=1e-8, h=1e-3,
                                 save_every=0.25, save_count=5)
    assert_adaptive_run_matches_reference(target, kernel, bindings, 3000)


def test_tsit5_kernels_compile_for_the_gpu_with_nvrtc():
    nvrtc = pytest.importorskip("eagle.cuda.nvrtc")
    from eagle.cuda.emit import emit_cuda

    kernel = hawk.ode.dopri5_kernel(lorenz, hawk.Vec3, hawk.Vec3, saveat=True, method="tsit5",
                                    event=height, terminal=(True,), record_events=True)
    assert nvrtc.compile_source(emit_cuda(kernel.specialize({})), "sm_90")[:4] == b"\x7fELF"
