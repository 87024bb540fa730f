"""Forward sensitivities in ``eagle.ode.solve`` (issue 29): ``sensitivity="p"`` gives
``Solution.du_dp`` and ``"u0"`` gives ``du_du0``, the tangent system integrated with the state
(``hawk.ode.forward_sensitivity``, one ``hawk.jvp`` per column). Checked exactly on
exponential decay, against central finite differences of tightly solved runs on Lorenz and on
a stiff problem (with ``rosenbrock23``), at the ``saveat`` times too."""

from __future__ import annotations

import numpy as np
import pytest

import eagle
import eagle.ode
import hawk


@hawk.func
def decay(u, t, p):
    return -p * u


@hawk.func
def lorenz(u, t, p):
    return hawk.vec3(p[0] * (u.y - u.x), u.x * (p[1] - u.z) - u.y, u.x * u.y - p[2] * u.z)


@hawk.func
def robertson(u, t, k):
    r1, r2, r3 = k[0] * u[0], k[1] * u[1] * u[1], k[2] * u[1] * u[2]
    return hawk.vec3(-r1 + r3, r1 - r2 - r3, r2)


def _central(solve_at, p, h):
    """d solve / d p by central differences, column by column: (k, m, n)."""
    p = np.asarray(p, dtype=float)
    columns = []
    for j in range(p.shape[0]):
        step = np.zeros_like(p)
        step[j] = h * np.maximum(np.abs(p[j]), 1.0)
        columns.append((solve_at(p + step) - solve_at(p - step)) / (2 * step[j]))
    return np.stack(columns, axis=1)


def test_exponential_decay_has_its_exact_sensitivity_at_every_saved_time():
    n = 8
    p = np.linspace(0.5, 2.0, n)
    sol = eagle.ode.solve(decay, np.ones(n), (0.0, 2.0), p=p, rtol=1e-10, atol=1e-12,
                          sensitivity="p", saveat=(0.0, 2.0, 5))
    assert sol.u.shape == (n,) and sol.du_dp.shape == (1, 1, n) and sol.du_du0 is None
    np.testing.assert_allclose(sol.u, np.exp(-2.0 * p), rtol=1e-9)
    np.testing.assert_allclose(sol.du_dp[0, 0], -2.0 * np.exp(-2.0 * p), rtol=1e-8)
    ts = np.linspace(0.0, 2.0, 5)[:, None]
    assert sol.saved.shape == (5, n) and sol.saved_sensitivity.shape == (5, 1, 1, n)
    np.testing.assert_allclose(sol.saved_sensitivity[:, 0, 0], -ts * np.exp(-ts * p),
                               rtol=1e-8, atol=1e-14)


def test_lorenz_sensitivities_to_p_and_u0_match_central_differences():
    u0 = np.vstack([np.ones(3), np.linspace(0.5, 1.5, 3), np.ones(3)])
    p = np.array([[10.0, 10.5, 9.5], [28.0, 27.0, 26.0], [8 / 3, 2.5, 2.7]])

    def end(p_, u_=u0):
        return eagle.ode.solve(lorenz, u_, (0.0, 1.0), p=p_, rtol=1e-12, atol=1e-12).u

    sol = eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=p, rtol=1e-10, atol=1e-10,
                          sensitivity="p")
    assert sol.du_dp.shape == (3, 3, 3)
    np.testing.assert_allclose(sol.du_dp, _central(end, p, 1e-6), rtol=1e-5, atol=1e-6)
    by_u0 = eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=p, rtol=1e-10, atol=1e-10,
                            sensitivity="u0")
    fd = _central(lambda v: end(p, v), u0, 1e-6)
    np.testing.assert_allclose(by_u0.du_du0, fd, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(by_u0.u, end(p), rtol=1e-8)  # and the state as without


def test_a_stiff_problems_sensitivity_with_rosenbrock23_matches_central_differences():
    """Robertson to t = 100 with rate constants shared by every sample (a Param vector): the
    augmented system's Jacobian differentiates through the jvps (forward over forward)."""
    k = np.array([0.04, 3e7, 1e4])
    u0 = np.vstack([np.ones(2), np.zeros(2), np.zeros(2)])
    u0[:, 1] = [0.9, 0.0, 0.1]
    options = dict(method="rosenbrock23", rtol=1e-8, atol=1e-12)
    sol = eagle.ode.solve(robertson, u0, (0.0, 100.0), p=k, sensitivity="p", **options)
    assert sol.plan.kernel.param("p").annotation == "Param[Vec3]"

    def end(k_):
        return eagle.ode.solve(robertson, u0, (0.0, 100.0), p=k_, method="rosenbrock23",
                               rtol=1e-11, atol=1e-15).u

    fd = _central(end, k, 1e-5)  # (3 states, 3 rates, 2 samples)
    scale = np.abs(fd).max(axis=1, keepdims=True)  # per state and sample
    assert (np.abs(sol.du_dp - fd) / scale).max() < 1e-3


def test_sensitivities_reach_through_a_models_tables():
    """A projectile whose drag coefficient is tabulated against Mach (piecewise linear, with
    kinks the trajectory crosses): du/dp through hawk.interp against central differences. The
    differences' own noise grows as their step shrinks across the kinks (1.8e-5 at a relative
    step of 1e-6, 7e-8 at 1e-4), so they take 1e-4."""
    from test_ode import CD, MACH, _projectile

    n = 4
    angle = np.radians(np.array([20.0, 35.0, 50.0, 70.0]))
    u0 = np.vstack([np.zeros(n), np.zeros(n), 800.0 * np.cos(angle), 800.0 * np.sin(angle)])
    p = np.array([2e-4, 340.0, 9.81])
    sol = eagle.ode.solve(_projectile, u0, (0.0, 5.0), p=p, sensitivity="p",
                          tables=(MACH, CD), rtol=1e-10, atol=1e-10)
    assert sol.du_dp.shape == (4, 3, n)
    tight = dict(tables=(MACH, CD), rtol=1e-13, atol=1e-13)  # the differences' runs
    for j in range(3):
        step = 1e-4 * p[j] * np.eye(3)[j]
        hi = eagle.ode.solve(_projectile, u0, (0.0, 5.0), p=p + step, **tight).u
        lo = eagle.ode.solve(_projectile, u0, (0.0, 5.0), p=p - step, **tight).u
        differences = (hi - lo) / (2e-4 * p[j])
        assert np.abs(sol.du_dp[:, j] - differences).max() < 1e-6 * np.abs(differences).max()


@hawk.func
def _fall(u, t, g):
    return hawk.vec2(u[1], -g)


@hawk.func
def _height(u, t, g):
    return u[0]


def test_a_terminal_events_time_and_end_state_have_their_exact_sensitivities():
    """A ball dropped from h0 under gravity g lands at t* = sqrt(2 h0 / g) with speed
    -sqrt(2 h0 g): dt*/dg = -t*/(2g), dv*/dg = -sqrt(2 h0)/(2 sqrt g), dh*/dg = 0 (the end
    moves along the flow with t*; without that correction it would be -t*^2/2), and to u0
    dt*/dh0 = 1/(g t*), dv*/dh0 = -1/t*. A sample that does not land by t_end keeps the
    plain sensitivity, and NaN for the time's."""
    h0, g = np.array([1.0, 5.0, 10.0, 100.0]), np.array([9.81, 3.7, 1.6, 9.81])
    u0 = np.vstack([h0, np.zeros(4)])
    t_end = np.array([100.0, 100.0, 100.0, 1.0])  # the last one is still falling at t = 1
    lands = np.sqrt(2 * h0[:3] / g[:3])
    by_g = eagle.ode.solve(_fall, u0, (0.0, t_end), p=g, rtol=1e-10, atol=1e-12,
                           event=_height, sensitivity="p")
    assert list(by_g.status) == [2, 2, 2, 1]
    np.testing.assert_allclose(by_g.dt_dp[:3], -lands / (2 * g[:3]), rtol=1e-12)
    np.testing.assert_allclose(by_g.du_dp[1, 0, :3], -np.sqrt(2 * h0[:3]) / (2 * np.sqrt(g[:3])),
                               rtol=1e-12)
    assert np.abs(by_g.du_dp[0, 0, :3]).max() < 1e-14
    assert np.isnan(by_g.dt_dp[3]) and np.allclose(by_g.du_dp[:, 0, 3], [-0.5, -1.0])
    by_u0 = eagle.ode.solve(_fall, u0, (0.0, t_end), p=g, rtol=1e-10, atol=1e-12,
                            event=_height, sensitivity="u0")
    assert by_u0.dt_du0.shape == (2, 4)
    np.testing.assert_allclose(by_u0.dt_du0[0, :3], 1 / (g[:3] * lands), rtol=1e-12)
    np.testing.assert_allclose(by_u0.du_du0[1, 0, :3], -1 / lands, rtol=1e-12)


def test_a_terminal_events_sensitivities_through_tables_match_central_differences():
    """The projectile with its tabulated Cd(Mach) to the ground: the impact time's and the
    impact point's derivatives in (k, speed of sound, g) against central differences of the
    solves (measured 1.7e-7 to 1.9e-6 apart, the differences' noise)."""
    from test_ode import CD, MACH, _ground, _projectile

    n = 4
    angle = np.radians(np.array([20.0, 35.0, 50.0, 70.0]))
    u0 = np.vstack([np.zeros(n), np.zeros(n), 800.0 * np.cos(angle), 800.0 * np.sin(angle)])
    p = np.array([2e-4, 340.0, 9.81])
    sol = eagle.ode.solve(_projectile, u0, (0.0, 200.0), p=p, tables=(MACH, CD), rtol=1e-10,
                          atol=1e-10, event=_ground, sensitivity="p")
    assert (sol.status == 2).all() and sol.dt_dp.shape == (3, n)
    tight = dict(tables=(MACH, CD), rtol=1e-13, atol=1e-13, event=_ground)
    for j in range(3):
        step = 1e-4 * p[j] * np.eye(3)[j]
        hi = eagle.ode.solve(_projectile, u0, (0.0, 200.0), p=p + step, **tight)
        lo = eagle.ode.solve(_projectile, u0, (0.0, 200.0), p=p - step, **tight)
        dt, du = (hi.t - lo.t) / (2e-4 * p[j]), (hi.u - lo.u) / (2e-4 * p[j])
        assert np.abs(sol.dt_dp[j] - dt).max() < 1e-5 * np.abs(dt).max()
        assert np.abs(sol.du_dp[:, j] - du).max() < 1e-5 * np.abs(du).max()


def test_sensitivity_requests_it_cannot_serve_are_refused_by_name():
    u0 = np.ones((3, 2))
    with pytest.raises(ValueError, match="sensitivity must be 'p', 'u0' or None"):
        eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=[1.0, 2.0, 3.0], sensitivity="t")
    with pytest.raises(ValueError, match="sensitivity='p' does not go with on_event yet"):
        eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=[1.0, 2.0, 3.0], sensitivity="p",
                        event=_height, on_event=lorenz)
    with pytest.raises(ValueError, match="does not go with several events yet"):
        eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=[1.0, 2.0, 3.0], sensitivity="p",
                        event=_height, record_events=3)
    with pytest.raises(ValueError, match=r"3 \+ 3 x 50 = 153 components, more than 128"):
        eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=np.ones(50), sensitivity="p")
    with pytest.raises(ValueError, match="not a matrix"):
        eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=np.ones((3, 3)), sensitivity="p")
