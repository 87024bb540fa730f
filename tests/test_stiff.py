"""Stiff problems (issue 29): ``method="rosenbrock23"`` of ``eagle.ode.solve``, a linearly
implicit L-stable method whose Jacobian comes from ``hawk.jacobian``, against SciPy's ``Radau``
at a tight tolerance on Robertson's problem and Van der Pol at mu = 1000, its order on a
problem with a known solution, and every backend equal to the reference executor; DP5 on the
same problem shown running out of steps, for contrast."""

from __future__ import annotations

import math

import numpy as np
import pytest

import eagle
import eagle.ode
import hawk
from backends import target  # noqa: F401  (the fixture)
from differential import adaptive_bindings, assert_adaptive_run_matches_reference
from hawk.ode import rosenbrock23_attempt

scipy_integrate = pytest.importorskip("scipy.integrate")


@hawk.func
def robertson(u, t, k):
    r1 = k[0] * u[0]
    r2 = k[1] * u[1] * u[1]
    r3 = k[2] * u[1] * u[2]
    return hawk.vec3(-r1 + r3, r1 - r2 - r3, r2)


@hawk.func
def van_der_pol(u, t, mu):
    return hawk.vec2(u[1], mu * (1.0 - u[0] * u[0]) * u[1] - u[0])


@hawk.func
def relaxation(u, t, lam):
    """u' = lam (u - cos t) - sin t: u = cos t from u(0) = 1, stiff for lam << -1."""
    return lam * (u - math.cos(t)) - math.sin(t)


def _robertson_rates(n: int) -> np.ndarray:
    rng = np.random.default_rng(29)
    return np.stack([0.04 * rng.uniform(0.5, 2.0, n), 3e7 * rng.uniform(0.5, 2.0, n),
                     1e4 * rng.uniform(0.5, 2.0, n)])


def test_robertson_to_1e5_matches_radau_and_keeps_its_mass():
    n = 40
    k = _robertson_rates(n)
    u0 = np.vstack([np.ones(n), np.zeros(n), np.zeros(n)])
    rtol, atol = 1e-6, 1e-10
    sol = eagle.ode.solve(robertson, u0, (0.0, 1e5), p=k, method="rosenbrock23", rtol=rtol,
                          atol=atol, saveat=(0.0, 1e5, 6))
    assert (sol.status == 1).all() and sol.accepted.max() < 2000
    np.testing.assert_allclose(sol.u.sum(axis=0), 1.0, rtol=0, atol=1e-12)  # linear invariant
    for i in (0, 17, 39):
        ref = scipy_integrate.solve_ivp(
            lambda t, y, k=k[:, i]: [-k[0] * y[0] + k[2] * y[1] * y[2],
                                     k[0] * y[0] - k[1] * y[1] ** 2 - k[2] * y[1] * y[2],
                                     k[1] * y[1] ** 2],
            (0.0, 1e5), u0[:, i], method="Radau", rtol=1e-10, atol=1e-14,
            t_eval=np.linspace(0.0, 1e5, 6))
        scale = atol + rtol * np.abs(ref.y.T)
        assert (np.abs(sol.saved[:, :, i] - ref.y.T) / scale).max() < 100.0


def test_dp5_on_the_same_problem_runs_out_of_steps():
    k = _robertson_rates(4)
    u0 = np.vstack([np.ones(4), np.zeros(4), np.zeros(4)])
    with pytest.warns(eagle.TruncationWarning):
        explicit = eagle.ode.solve(robertson, u0, (0.0, 1e5), p=k, rtol=1e-6, atol=1e-10,
                                   max_steps=20_000)
    assert (explicit.status == 0).all() and (explicit.t < 1e3).all()


def test_van_der_pol_at_mu_1000_over_a_cycle_matches_radau():
    mu = np.array([1000.0, 800.0, 1200.0])
    u0 = np.vstack([np.full(3, 2.0), np.zeros(3)])
    sol = eagle.ode.solve(van_der_pol, u0, (0.0, 1700.0), p=mu, method="rosenbrock23",
                          rtol=1e-6, atol=1e-8)
    assert (sol.status == 1).all()
    for i in range(3):
        ref = scipy_integrate.solve_ivp(
            lambda t, y, m=mu[i]: [y[1], m * (1 - y[0] ** 2) * y[1] - y[0]], (0.0, 1700.0),
            u0[:, i], method="Radau", rtol=1e-10, atol=1e-12)
        assert abs(sol.u[0, i] - ref.y[0, -1]) < 1e-3


@hawk.kernel
def fixed_rosenbrock(lam: hawk.Param, h: hawk.Param, t_end: hawk.Param,
                     terminated: hawk.Terminated, u: hawk.Mutable[hawk.Scalar],
                     f0: hawk.Mutable[hawk.Scalar], t: hawk.Mutable[hawk.Scalar]):
    u, _, _, _, f0 = rosenbrock23_attempt(relaxation, u, f0, t, h, lam)
    t += h
    terminated = t >= t_end - 0.5 * h


def test_the_global_error_falls_at_second_order():
    """Fixed steps h on u = cos t (from u(0) = 1, to t = 4): the fitted slope of the error
    against h is 2 within 0.5, for a mildly (lam = -1) and a strongly (lam = -50) stiff one."""
    for lam in (-1.0, -50.0):
        sizes = np.array([0.1, 0.05, 0.025, 0.0125])
        errors = []
        for h in sizes:
            state = dict(u=np.ones(1), f0=np.array([lam * 0.0]), t=np.zeros(1))
            eagle.until_done(eagle.deploy(fixed_rosenbrock, "cpu"), max_steps=1000, lam=lam,
                             h=h, t_end=4.0, **state).run()
            errors.append(abs(state["u"][0] - math.cos(state["t"][0])))
        slope = np.polyfit(np.log(sizes), np.log(errors), 1)[0]
        assert 1.5 < slope < 2.5, (lam, slope, errors)


def test_a_stiff_scalar_state_follows_its_slow_manifold():
    sol = eagle.ode.solve(relaxation, np.full(3, 2.0), (0.0, 3.0), p=np.array([-1e3, -1e5, -1e7]),
                          method="rosenbrock23", rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(sol.u, math.cos(3.0), rtol=1e-5)
    # 10,000 times stiffer costs less than twice the steps (an explicit method's would grow
    # 10,000 times); the count itself is the method's at this tolerance (order 2, and the
    # reduced order of its stiff components)
    assert sol.accepted[2] < 2 * sol.accepted[0] and sol.accepted.max() < 3000


def test_rosenbrock_kernels_equal_the_reference_on_every_backend(target):  # noqa: F811
    n = 200
    k = _robertson_rates(n)
    kernel = hawk.ode.rosenbrock23_kernel(robertson, hawk.Vec3, hawk.Vec3, saveat=True)
    bindings = adaptive_bindings(k, np.vstack([np.ones(n), np.zeros(n), np.zeros(n)]),
                                 np.vstack([-k[0], k[0], np.zeros(n)]), t_end=10.0, rtol=1e-6,
                                 atol=1e-10, h=1e-4, save_every=2.0, save_count=6)
    assert_adaptive_run_matches_reference(target, kernel, bindings, 2000)


def test_the_rosenbrock_kernel_compiles_for_the_gpu_with_nvrtc():
    nvrtc = pytest.importorskip("eagle.cuda.nvrtc")
    from eagle.cuda.emit import emit_cuda

    kernel = hawk.ode.rosenbrock23_kernel(robertson, hawk.Vec3, hawk.Vec3, saveat=True)
    assert nvrtc.compile_source(emit_cuda(kernel.specialize({})), "sm_90")[:4] == b"\x7fELF"


@hawk.func
def _x(u, t, mu):
    return u[0]


def test_events_are_located_on_the_rosenbrock_interpolant():
    """Van der Pol at mu = 1000: the time x first falls through 0 (the first fast jump),
    recorded, against Radau's located event."""
    mu = np.array([1000.0, 500.0])
    u0 = np.vstack([np.full(2, 2.0), np.zeros(2)])
    sol = eagle.ode.solve(van_der_pol, u0, (0.0, 3000.0), p=mu, method="rosenbrock23",
                          rtol=1e-7, atol=1e-9, event=_x, record_events=2)
    assert (sol.status == 2).all() and (sol.events == 1).all()
    for i in range(2):
        def crossing(t, y):
            return y[0]

        crossing.terminal, crossing.direction = True, -1
        ref = scipy_integrate.solve_ivp(
            lambda t, y, m=mu[i]: [y[1], m * (1 - y[0] ** 2) * y[1] - y[0]], (0.0, 3000.0),
            u0[:, i], method="Radau", rtol=1e-10, atol=1e-12, events=crossing)
        assert abs(sol.t[i] - ref.t_events[0][0]) < 1e-3 * ref.t_events[0][0]
        assert sol.t_events[0, i] == sol.t[i] and sol.which_events[0, i] == 0


@hawk.func
def hires(y, t, p):
    """HIRES (Schäfer 1975; Hairer and Wanner's stiff test set): 8 species, light-induced
    growth in plants."""
    return hawk.vector(-1.71 * y[0] + 0.43 * y[1] + 8.32 * y[2] + 0.0007,
                       1.71 * y[0] - 8.75 * y[1],
                       -10.03 * y[2] + 0.43 * y[3] + 0.035 * y[4],
                       8.32 * y[1] + 1.71 * y[2] - 1.12 * y[3],
                       -1.745 * y[4] + 0.43 * y[5] + 0.43 * y[6],
                       -280.0 * y[5] * y[7] + 0.69 * y[3] + 1.71 * y[4] - 0.43 * y[5]
                       + 0.69 * y[6],
                       280.0 * y[5] * y[7] - 1.81 * y[6],
                       -280.0 * y[5] * y[7] + 1.81 * y[6])


#: HIRES at t = 321.8122, the test set's reference (SciPy's Radau at rtol 1e-13 agrees to 1e-13)
HIRES_END = np.array([0.7371312573325668e-3, 0.1442485726316185e-3, 0.5888729740967575e-4,
                      0.1175651343283149e-2, 0.2386356198831331e-2, 0.6238968252742796e-2,
                      0.2849998395185769e-2, 0.2850001604814231e-2])


@hawk.func
def oregonator(y, t, p):
    """The Oregonator (Field and Noyes): the Belousov-Zhabotinsky reaction's stiff limit
    cycle."""
    return hawk.vec3(77.27 * (y[1] + y[0] * (1.0 - 8.375e-6 * y[0] - y[1])),
                     (y[2] - (1.0 + y[0]) * y[1]) / 77.27, 0.161 * (y[0] - y[2]))


def test_hires_matches_the_test_sets_reference():
    y0 = np.repeat(np.array([1.0, 0, 0, 0, 0, 0, 0, 0.0057])[:, None], 2, axis=1)
    sol = eagle.ode.solve(hires, y0, (0.0, 321.8122), p=0.0, method="rosenbrock23",
                          rtol=1e-6, atol=1e-10)
    assert (sol.status == 1).all() and sol.accepted.max() < 4000
    relative = np.abs(sol.u[:, 0] - HIRES_END) / HIRES_END
    assert relative.max() < 1e-4, relative  # measured 8e-6


def test_the_oregonator_over_its_cycles_matches_radau():
    y0 = np.repeat(np.array([1.0, 2.0, 3.0])[:, None], 2, axis=1)
    sol = eagle.ode.solve(oregonator, y0, (0.0, 360.0), p=0.0, method="rosenbrock23",
                          rtol=1e-6, atol=1e-8)
    assert (sol.status == 1).all()
    ref = scipy_integrate.solve_ivp(
        lambda t, y: [77.27 * (y[1] + y[0] * (1 - 8.375e-6 * y[0] - y[1])),
                      (y[2] - (1 + y[0]) * y[1]) / 77.27, 0.161 * (y[0] - y[2])],
        (0.0, 360.0), y0[:, 0], method="Radau", rtol=1e-10, atol=1e-12)
    relative = np.abs(sol.u[:, 0] - ref.y[:, -1]) / np.abs(ref.y[:, -1])
    assert relative.max() < 2e-3, relative  # measured 4e-4 (a limit cycle's phase error)
