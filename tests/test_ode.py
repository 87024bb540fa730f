"""The integrators of ``hawk.ode`` and ``eagle.ode.solve``: accuracy on problems with known
solutions (the error falls at each method's order), agreement with SciPy (end states against
DOP853 at rtol 1e-13; accepted steps against RK45, the same Dormand-Prince pair, within 20%),
events located in time, fixed stops, SDE statistics, bit-exactness against the reference
executor on every backend, and errors for bad input.

Every test here fails on the code before ``hawk.ode`` existed (there was nothing to import).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import eagle
import eagle.ode
import hawk
from backends import target  # noqa: F401  (the fixture)
from differential import assert_bitwise_equal, reference_run
from hawk import ode
from ode_models import (
    G,
    bounce,
    decay,
    falling_with_drag,
    free_fall,
    harmonic,
    height,
    kepler,
    kick,
    lorenz,
    ornstein_uhlenbeck_drift,
    ornstein_uhlenbeck_noise,
    square,
    still,
    van_der_pol,
)

integrate = pytest.importorskip("scipy.integrate")

#: DOP853 at this tolerance is the reference solution
REFERENCE_TOL = 1e-13
#: an end state agrees with the reference within this many times its own tolerance
#: (atol + rtol |u|): the global error of a step-by-step error control grows with the number of
#: steps and with the problem's sensitivity; 10 covers Lorenz to t = 2 and Van der Pol (mu = 10)
#: over one cycle, where SciPy's RK45 needs the same factor (measured: both within 5)
TOLERANCE_FACTOR = 10.0


def reference(fun, u0, t_end, **options):
    return integrate.solve_ivp(fun, (0.0, t_end), u0, method="DOP853", rtol=REFERENCE_TOL,
                               atol=REFERENCE_TOL, **options)


def observed_order(errors, sizes):
    """The slope of log(error) against log(size), fitted."""
    return np.polyfit(np.log(sizes), np.log(errors), 1)[0]


# -- fixed steps ---------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("method, order", [("euler", 1), ("rk4", 4)])
def test_fixed_step_error_falls_at_the_methods_order(method, order):
    omega = np.array([1.0, 1.5, 2.0])
    u0 = np.stack([np.ones(3), np.zeros(3)])
    steps = np.array([0.02, 0.01, 0.005])
    errors = []
    for dt in steps:
        sol = eagle.ode.solve(harmonic, u0, (0.0, 2.0), p=omega, method=method, dt=dt)
        assert np.all(sol.t == 2.0) and np.all(sol.status == 1)
        assert np.all(sol.accepted == round(2.0 / dt))
        exact = np.stack([np.cos(2.0 * omega), -omega * np.sin(2.0 * omega)])
        errors.append(np.abs(sol.u - exact).max())
    assert observed_order(errors, steps) == pytest.approx(order, abs=0.15)


def test_a_fixed_step_that_does_not_divide_the_span_lands_on_t_end():
    sol = eagle.ode.solve(decay, np.ones(2), (0.0, 1.0), p=1.0, method="rk4",
                          dt=np.array([0.3, 0.1]))
    assert np.all(sol.t == 1.0)
    assert sol.accepted.tolist() == [4, 10]  # 0.3 * 3 + 0.1, and ten steps of 0.1
    assert np.allclose(sol.u, math.exp(-1.0), rtol=1e-4)


# -- the adaptive pair ---------------------------------------------------------------------------


@pytest.mark.slow
def test_dopri5_global_error_falls_at_fifth_order_in_the_steps_it_takes():
    omega = np.array([1.0, 2.0, 3.0])
    u0 = np.stack([np.ones(3), np.zeros(3)])
    exact = np.stack([np.cos(10.0 * omega), -omega * np.sin(10.0 * omega)])
    errors, steps = [], []
    for tol in (1e-5, 1e-7, 1e-9, 1e-11):
        sol = eagle.ode.solve(harmonic, u0, (0.0, 10.0), p=omega, rtol=tol, atol=tol)
        assert np.all(sol.status == ode.STATUS_DONE) and np.all(sol.t == 10.0)
        errors.append(np.abs(sol.u - exact).max())
        steps.append(sol.accepted.mean())
    assert observed_order(errors, steps) == pytest.approx(-5.0, abs=0.6)
    assert errors[-1] < 1e-9 < errors[0]


def test_dopri5_scalar_state_decays_within_its_tolerance():
    k = np.linspace(0.5, 3.0, 6)
    for tol in (1e-6, 1e-10):
        sol = eagle.ode.solve(decay, np.ones(6), (0.0, 3.0), p=k, rtol=tol, atol=tol)
        exact = np.exp(-3.0 * k)
        assert np.all(np.abs(sol.u - exact) <= TOLERANCE_FACTOR * tol * (1.0 + exact))


@pytest.mark.slow
def test_kepler_orbit_closes_and_keeps_its_energy_better_at_a_finer_tolerance():
    e = np.array([0.0, 0.3, 0.6])  # eccentricities; a = 1, mu = 1: period 2 pi
    u0 = np.stack([1.0 - e, np.zeros(3), np.zeros(3), np.sqrt((1.0 + e) / (1.0 - e))])

    def energy(u):
        return 0.5 * (u[2] ** 2 + u[3] ** 2) - 1.0 / np.hypot(u[0], u[1])

    drifts, misses = [], []
    for tol in (1e-7, 1e-10):
        sol = eagle.ode.solve(kepler, u0, (0.0, 2.0 * math.pi), p=1.0, rtol=tol, atol=tol)
        drifts.append(np.abs(energy(sol.u) - energy(u0)).max())
        misses.append(np.abs(sol.u - u0).max())  # back where it started after one period
    assert misses[1] < 1e-7 and drifts[1] < 1e-8
    assert misses[1] < misses[0] / 100 and drifts[1] < drifts[0] / 100


def lorenz_case(n=6, seed=7):
    rng = np.random.default_rng(seed)
    p = np.stack([rng.uniform(9, 11, n), rng.uniform(20, 30, n), rng.uniform(2.5, 3, n)])
    u0 = 1.0 + 0.1 * rng.normal(size=(3, n))
    return p, u0


def lorenz_rhs(q):
    return lambda t, y: [q[0] * (y[1] - y[0]), y[0] * (q[1] - y[2]) - y[1],
                         y[0] * y[1] - q[2] * y[2]]


def van_der_pol_rhs(mu):
    return lambda t, y: [y[1], mu * (1.0 - y[0] ** 2) * y[1] - y[0]]


CASES = {
    # name: (f, u0, p, t_end, the SciPy right-hand side of sample i)
    "lorenz": (lorenz, *reversed(lorenz_case()), 2.0, lambda p, i: lorenz_rhs(p[:, i])),
    "van-der-pol-mu-10": (van_der_pol, np.array([[2.0, 1.0, -0.5], [0.0, 0.5, 1.0]]),
                          np.full(3, 10.0), 20.0, lambda p, i: van_der_pol_rhs(p[i])),
}


@pytest.mark.slow
@pytest.mark.parametrize("tol", [1e-6, 1e-9])
@pytest.mark.parametrize("case", list(CASES))
def test_end_states_and_step_counts_agree_with_scipy(case, tol):
    f, u0, p, t_end, rhs = CASES[case]
    sol = eagle.ode.solve(f, u0, (0.0, t_end), p=p, rtol=tol, atol=tol)
    assert np.all(sol.status == ode.STATUS_DONE)
    for i in range(u0.shape[1]):
        exact = reference(rhs(p, i), u0[:, i], t_end).y[:, -1]
        scale = tol + tol * np.abs(exact)
        assert np.all(np.abs(sol.u[:, i] - exact) <= TOLERANCE_FACTOR * scale), i
        rk45 = integrate.solve_ivp(rhs(p, i), (0.0, t_end), u0[:, i], method="RK45",
                                   rtol=tol, atol=tol)
        scipy_accepted = rk45.t.size - 1
        scipy_attempts = (rk45.nfev - 2) // 6  # 2 for the initial step, 6 per attempt (FSAL)
        assert sol.accepted[i] == pytest.approx(scipy_accepted, rel=0.2)
        assert sol.accepted[i] + sol.rejected[i] == pytest.approx(scipy_attempts, rel=0.2)


# -- events and stops ----------------------------------------------------------------------------


@pytest.mark.slow
def test_a_falling_ball_with_drag_stops_at_ground_contact():
    drag = np.array([0.0, 0.05, 0.5, 2.0])
    h0 = np.array([10.0, 20.0, 5.0, 1.0])
    u0 = np.stack([h0, np.zeros(4)])
    sol = eagle.ode.solve(falling_with_drag, u0, (0.0, 100.0), p=drag, rtol=1e-10, atol=1e-10,
                          event=height)
    assert np.all(sol.status == ode.STATUS_EVENT) and np.all(sol.events == 1)
    for i in range(4):
        def ground(t, y):
            return y[0]
        ground.terminal, ground.direction = True, -1
        fun = (lambda d: lambda t, y: [y[1], -G - d * y[1] * abs(y[1])])(drag[i])
        t_contact = reference(fun, u0[:, i], 100.0, events=ground).t_events[0][0]
        assert abs(sol.t[i] - t_contact) < 1e-9
        assert -1e-9 < sol.u[0, i] <= 0.0  # at the ground, never above it
    assert sol.t[0] == pytest.approx(math.sqrt(2.0 * 10.0 / G), rel=1e-12)


def analytic_bounces(h0, restitution, t_end):
    """Bounce times and the state at t_end of a ball dropped from h0 without drag (the bounces
    accumulate at a finite time: t_end must come before it)."""
    t, v, times = math.sqrt(2.0 * h0 / G), math.sqrt(2.0 * G * h0), []
    while t <= t_end and len(times) < 100:
        times.append(t)
        v *= restitution
        t_next = t + 2.0 * v / G
        if t_next > t_end:
            break
        t = t_next
    s = t_end - times[-1]
    return times, (v * s - 0.5 * G * s * s, v - G * s)


@pytest.mark.slow
def test_bounce_times_match_the_analytic_ones():
    h0, restitution, t_end = np.array([10.0, 5.0, 2.0]), 0.9, 6.0
    u0 = np.stack([h0, np.zeros(3)])
    expected = [analytic_bounces(h, restitution, 12.0)[0] for h in h0]
    for k in range(1, 5):  # the k-th bounce's time, from a run that ends 1 ms after it
        ends = np.array([times[k - 1] + 1e-3 for times in expected])
        sol = eagle.ode.solve(free_fall, u0, (0.0, ends), p=restitution, rtol=1e-10,
                              atol=1e-10, event=height, on_event=bounce, max_step=0.25)
        assert sol.events.tolist() == [k] * 3
        y, v = sol.u
        since = (-v + np.sqrt(v * v + 2.0 * G * y)) / G  # y = v s + G s**2 / 2 since it
        bounced_at = ends - since
        assert np.all(np.abs(bounced_at - [times[k - 1] for times in expected]) < 1e-8)
    sol = eagle.ode.solve(free_fall, u0, (0.0, t_end), p=restitution, rtol=1e-10, atol=1e-10,
                          event=height, on_event=bounce, max_step=0.25)
    for i, h in enumerate(h0):
        times, (y, v) = analytic_bounces(h, restitution, t_end)
        assert sol.events[i] == len(times)
        assert sol.u[0, i] == pytest.approx(y, abs=1e-7)
        assert sol.u[1, i] == pytest.approx(v, abs=1e-7)


@pytest.mark.slow
def test_stops_land_exactly_and_apply_their_kick():
    sol = eagle.ode.solve(still, np.zeros((2, 3)), (0.0, np.array([1.0, 2.5, 10.0])),
                          p=np.array([1.0, 2.0, 0.5]), tstops=(0.25, 0.5), on_stop=kick)
    kicks = np.array([2, 5, 20])  # stops at 0.25, 0.75, ... up to t_end
    assert np.all(sol.u == kicks * np.array([1.0, 2.0, 0.5]))
    assert np.all(sol.t == [1.0, 2.5, 10.0])


# -- SDEs ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_euler_maruyama_ornstein_uhlenbeck_statistics():
    n, theta, mu, sigma, t_end, dt = 40_000, 1.0, 0.5, 0.5, 1.0, 2e-3
    sol = eagle.ode.solve(ornstein_uhlenbeck_drift, np.full(n, 2.0), (0.0, t_end),
                          p=(theta, mu, sigma), method="euler_maruyama", dt=dt,
                          noise=ornstein_uhlenbeck_noise, seed=12)
    decay_ = (1.0 - theta * dt) ** round(t_end / dt)  # the scheme's own mean decay
    mean = mu + (2.0 - mu) * decay_
    variance = sigma**2 * dt * (1.0 - decay_**2) / (1.0 - (1.0 - theta * dt) ** 2)
    standard_error = math.sqrt(variance / n)
    assert abs(sol.u.mean() - mean) < 4.0 * standard_error
    assert sol.u.var() == pytest.approx(variance, rel=4.0 * math.sqrt(2.0 / n))
    again = eagle.ode.solve(ornstein_uhlenbeck_drift, np.full(n, 2.0), (0.0, t_end),
                            p=(theta, mu, sigma), method="euler_maruyama", dt=dt,
                            noise=ornstein_uhlenbeck_noise, seed=12, threads=1)
    assert np.array_equal(sol.u, again.u)  # the same seed: the same paths, bit for bit


# -- bit for bit against the reference executor, on every backend -------------------------------


def dopri5_bindings(kernel_f, u0, p, t_end, tol):
    n = u0.shape[-1]
    prepare = ode.dopri5_start_kernel(kernel_f, hawk.Vec2, hawk.Scalar)
    arrays = dict(p=p, t_end=np.full(n, t_end), rtol=np.full(n, tol), atol=np.full(n, tol),
                  max_step=np.full(n, 0.25), stop_first=0.0, stop_every=1.0,
                  save_first=0.0, save_every=0.1, save_count=30.0,
                  saved=np.full((30, 2, n), np.nan),
                  u=u0.copy(),
                  k1=np.zeros_like(u0), t=np.zeros(n), h=np.zeros(n),
                  c=np.full(n, ode.C_START), **{k: np.zeros(n, np.int64) for k in
                                                ("accepted", "rejected", "status", "events",
                                                 "stops", "saves")})
    first, _ = reference_run(prepare, dict(p=p, t_end=arrays["t_end"], rtol=arrays["rtol"],
                                           atol=arrays["atol"], u=u0, t=arrays["t"],
                                           k1=arrays["k1"], h=arrays["h"]), 1)
    arrays.update(k1=first["k1"], h=first["h"])
    return arrays


@pytest.mark.slow
@pytest.mark.parametrize("steps_per_launch", [3, None])
def test_the_bouncing_kernel_equals_the_reference(target, steps_per_launch):  # noqa: F811
    if not target.target.exact_math:
        pytest.skip(f"{target.target.name}'s pow differs from the C library's by ulps: the "
                    "step sizes follow")
    n = 37
    rng = np.random.default_rng(3)
    kernel = ode.dopri5_kernel(free_fall, hawk.Vec2, hawk.Scalar, event=height,
                               on_event=bounce, saveat=True)
    bindings = dopri5_bindings(free_fall, np.stack([rng.uniform(1, 10, n), np.zeros(n)]),
                               rng.uniform(0.5, 0.95, n), 4.0, 1e-8)
    expected, expected_steps = reference_run(kernel, bindings, 400)
    arrays = target.put(bindings)
    report = eagle.until_done(eagle.deploy(kernel, target.target.device), max_steps=400,
                              steps_per_launch=steps_per_launch, **arrays).run()
    actual = target.get(arrays)
    assert report.steps == expected_steps
    assert_bitwise_equal({k: actual[k] for k in expected if k in actual},
                         {k: expected[k] for k in expected if k in actual})
    assert np.all(expected["events"] >= 1) and np.all(expected["saves"] == 30)


def test_the_ode_kernels_compile_to_cuda():
    nvrtc = pytest.importorskip("eagle.cuda.nvrtc")
    from eagle.cuda.emit import emit_cuda

    for kernel in (ode.dopri5_kernel(lorenz, hawk.Vec3, hawk.Vec3, saveat=True),
                   ode.dopri5_kernel(free_fall, hawk.Vec2, hawk.Scalar, event=height,
                                     on_event=bounce, tstops=True, on_stop=bounce),
                   ode.sde_kernel(ornstein_uhlenbeck_drift, ornstein_uhlenbeck_noise,
                                  hawk.Scalar, hawk.Vec3)):
        try:
            cubin = nvrtc.compile_source(emit_cuda(kernel.program), "sm_90")
        except eagle.BackendUnavailable as exc:  # no NVRTC library here
            pytest.skip(str(exc))
        assert len(cubin) > 1000


# -- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize("change, error, message", [
    (dict(f=len), TypeError, "f must be a @hawk.func"),
    (dict(u0=[1.0, 2.0]), TypeError, "u0 must be a NumPy or CuPy array"),
    (dict(u0=np.ones((129, 3))), ValueError, r"u0 must have shape \(n,\)"),
    (dict(t_span=(1.0,)), ValueError, "t_span must be a pair"),
    (dict(t_span=(1.0, 1.0)), ValueError, "t_end must differ from t0"),
    (dict(p=np.ones((2, 2, 2, 3))), ValueError, r"p must be a number; per sample an array "
                                                r"\(3,\)"),
    (dict(p=np.ones(129)), ValueError, r"shared by every sample an array \(m,\) with m in "
                                       r"2\.\.128"),
    (dict(method="rk45"), ValueError, "method must be one of"),
    (dict(method="rk4"), ValueError, "takes fixed steps: pass dt"),
    (dict(dt=0.1), ValueError, "dt is for the fixed-step methods"),
    (dict(rtol=-1.0), ValueError, "rtol must be positive"),
    (dict(atol=np.zeros(3)), ValueError, "atol must be positive for every sample"),
    (dict(event=height, method="rk4", dt=0.1), ValueError, "event needs an adaptive method"),
    (dict(on_event=bounce), TypeError, "on_event needs an event"),
    (dict(tstops=(0.0, -1.0)), ValueError, r"every must go the integration.s way \(positive "
                                           r"forward"),
    (dict(on_stop=kick), ValueError, "on_stop needs tstops"),
    (dict(method="euler_maruyama", dt=0.1), ValueError, "noise"),
    (dict(max_steps=0), ValueError, "max_steps must be an int >= 1"),
    # Non-finite times, steps and tolerances, named (an infinite t_end ran to max_steps).
    (dict(t_span=(0.0, math.inf)), ValueError, r"t_span\[1\] must be a finite number, got inf"),
    (dict(t_span=(-math.inf, 1.0)), ValueError, r"t_span\[0\] must be a finite number"),
    (dict(t_span=(math.nan, 1.0)), ValueError, r"t_span\[0\] must be a finite number, got nan"),
    (dict(t_span=(0.0, np.array([1.0, np.nan, 2.0]))), ValueError,
     r"t_span\[1\] must be a finite number for every sample, got .*nan.* at sample 1"),
    (dict(method="rk4", dt=math.nan), ValueError, "dt must be a finite number, got nan"),
    (dict(method="rk4", dt=math.inf), ValueError, "dt must be a finite number, got inf"),
    (dict(method="rk4", dt=np.array([0.1, np.inf, 0.1])), ValueError,
     "dt must be a finite number for every sample"),
    (dict(rtol=math.nan), ValueError, "rtol must be a finite number, got nan"),
    (dict(atol=math.inf), ValueError, "atol must be a finite number, got inf"),
    (dict(max_step=math.nan), ValueError, r"max_step must be a number \(inf for none\), got nan"),
    (dict(max_step=-math.inf), ValueError, r"max_step must be a number \(inf for none\)"),
    (dict(saveat=(0.0, math.inf, 3)), ValueError, "saveat: first and last must be finite"),
    (dict(tstops=(math.nan, 0.1)), ValueError, "tstops .* must be finite numbers"),
    (dict(tstops=(0.0, math.inf)), ValueError, "tstops .* must be finite numbers"),
])
def test_bad_input_is_refused_before_anything_runs(change, error, message):
    u0 = np.ones((2, 3))
    args = dict(f=harmonic, u0=u0, t_span=(0.0, 1.0), p=1.0)
    args.update(change)
    before = np.array(args["u0"], copy=True) if isinstance(args["u0"], np.ndarray) else None
    with pytest.raises(error, match=message):
        eagle.ode.solve(args.pop("f"), args.pop("u0"), args.pop("t_span"), **args)
    if before is not None:
        assert np.array_equal(u0, np.ones((2, 3)))


@pytest.mark.slow
def test_max_steps_reached_is_reported_not_hidden():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sol = eagle.ode.solve(harmonic, np.stack([np.ones(2), np.zeros(2)]), (0.0, 100.0),
                              p=1.0, rtol=1e-10, atol=1e-10, max_steps=20)
    assert np.all(sol.status == ode.STATUS_RUNNING) and not sol.done.any()
    assert np.all(sol.accepted + sol.rejected == 20) and np.all(sol.t < 100.0)
    assert any(issubclass(w.category, eagle.TruncationWarning) for w in caught)


@pytest.mark.slow
def test_a_sample_that_blows_up_is_marked_failed():
    sol = eagle.ode.solve(square, np.array([1.0, -1.0]), (0.0, 2.0), rtol=1e-8, atol=1e-8)
    assert sol.status.tolist() == [ode.STATUS_FAILED, ode.STATUS_DONE]
    assert abs(sol.t[0] - 1.0) < 1e-6  # it stopped at the singularity
    assert sol.u[1] == pytest.approx(-1.0 / 3.0, rel=1e-7)  # u = -1 / (1 + t)


# -- saveat --------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("saves_in_a_step", ["few", "many"])
def test_saveat_records_the_trajectory_to_the_tolerance(saves_in_a_step):
    omega = np.array([0.5, 1.0, 3.0])
    u0 = np.stack([np.ones(3), np.zeros(3)])
    count = 41 if saves_in_a_step == "few" else 2001  # many: several recorded times per step
    tol = 1e-9
    sol = eagle.ode.solve(harmonic, u0, (0.0, 8.0), p=omega, rtol=tol, atol=tol,
                          saveat=(0.0, 8.0, count))
    assert sol.saved.shape == (count, 2, 3) and np.array_equal(sol.ts, np.linspace(0, 8, count))
    exact = np.stack([np.cos(np.outer(sol.ts, omega)),
                      -omega * np.sin(np.outer(sol.ts, omega))], axis=1)
    assert np.abs(sol.saved - exact).max() < 100 * tol  # interpolated: fourth order, not fifth
    assert np.array_equal(sol.saved[0], u0)  # the first time is the start itself
    assert np.array_equal(sol.saved[-1], sol.u)  # and the last the end
    plain = eagle.ode.solve(harmonic, u0, (0.0, 8.0), p=omega, rtol=tol, atol=tol)
    if saves_in_a_step == "few":  # recording does not change the steps when it needs no cut
        assert np.all(sol.accepted <= plain.accepted + count)


@pytest.mark.slow
def test_saveat_stops_at_a_terminating_event_and_skips_times_before_t0():
    sol = eagle.ode.solve(falling_with_drag, np.stack([np.full(2, 10.0), np.zeros(2)]),
                          (np.array([0.0, 0.5]), 100.0), p=0.0, rtol=1e-10, atol=1e-10,
                          event=height, saveat=(0.0, 3.0, 31))
    contact = math.sqrt(2.0 * 10.0 / G)
    for i, t0 in enumerate([0.0, 0.5]):
        recorded = ~np.isnan(sol.saved[:, 0, i])
        assert np.array_equal(recorded, (sol.ts >= t0 - 1e-12) & (sol.ts <= sol.t[i]))
        shifted = sol.ts[recorded] - t0
        assert np.allclose(sol.saved[recorded, 0, i], 10.0 - 0.5 * G * shifted**2, atol=1e-8)
    assert sol.t[0] == pytest.approx(contact, abs=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["rk4", "euler_maruyama"])
def test_fixed_steps_land_on_recorded_times(method):
    noise = dict(noise=ornstein_uhlenbeck_noise, seed=5) if method == "euler_maruyama" else {}
    f = ornstein_uhlenbeck_drift
    p = (1.0, 0.0, 0.0 if method == "rk4" else 0.2)
    sol = eagle.ode.solve(f, np.ones(4), (0.0, 1.0), p=p, method=method, dt=0.03,
                          saveat=(0.0, 1.0, 11), **noise)
    assert sol.saved.shape == (11, 4) and sol.saved[0].tolist() == [1.0] * 4
    assert np.array_equal(sol.saved[-1], sol.u)
    assert np.all(sol.accepted == 40)  # each 0.1 between recorded times: 3 x 0.03 + 0.01
    if method == "rk4":
        assert np.allclose(sol.saved, np.exp(-sol.ts)[:, None], rtol=1e-6)


@hawk.func
def _x_coordinate(u, t, p):
    return u.x


@hawk.func
def _forced_oscillator(u, t, p):
    return hawk.vec2(u.y, -p * u.x + math.sin(2.0 * t))


def test_integration_backward_in_time_matches_scipy_and_retraces_the_forward_run():
    """t_end < t0 for every sample (solve_ivp's backward integration, refused before): the
    end states and the saveat rows (times in the integration's order) against DOP853, an event
    located in t, and a forward run undone by the backward one."""
    from scipy.integrate import solve_ivp

    n = 16
    omega2 = np.linspace(0.5, 4.0, n)
    u0 = np.vstack([np.linspace(-1.0, 1.0, n), np.ones(n)])
    back = eagle.ode.solve(_forced_oscillator, u0, (3.0, -1.0), p=omega2, rtol=1e-10,
                           atol=1e-12, saveat=(3.0, -1.0, 5))
    assert (back.status == 1).all() and np.array_equal(back.t, np.full(n, -1.0))
    np.testing.assert_array_equal(back.ts, [3.0, 2.0, 1.0, 0.0, -1.0])
    for i in (0, 9, 15):
        ref = solve_ivp(lambda t, y, w=omega2[i]: [y[1], -w * y[0] + math.sin(2.0 * t)],
                        (3.0, -1.0), u0[:, i], method="DOP853", rtol=1e-13, atol=1e-13,
                        t_eval=[3.0, 2.0, 1.0, 0.0, -1.0])
        np.testing.assert_allclose(back.saved[:, :, i], ref.y.T, rtol=1e-7, atol=1e-8)
        np.testing.assert_allclose(back.u[:, i], ref.y[:, -1], rtol=1e-7, atol=1e-8)
    forward = eagle.ode.solve(_forced_oscillator, back.u, (-1.0, 3.0), p=omega2, rtol=1e-10,
                              atol=1e-12)
    np.testing.assert_allclose(forward.u, u0, rtol=1e-7, atol=1e-8)


def test_an_event_backward_in_time_keeps_its_direction_in_t():
    """x falls through 0 as t grows: going backward from t = 0 it is met where x rises in t."""
    u0 = np.vstack([np.full(4, 0.5), np.zeros(4)])
    falling = eagle.ode.solve(_forced_oscillator, u0, (0.0, -10.0), p=1.0, rtol=1e-10,
                              atol=1e-12, event=_x_coordinate, direction=-1)
    rising = eagle.ode.solve(_forced_oscillator, u0, (0.0, -10.0), p=1.0, rtol=1e-10,
                             atol=1e-12, event=_x_coordinate, direction=1)
    assert (falling.status == 2).all() and (rising.status == 2).all()
    assert (falling.t != rising.t).all()
    h = 1e-6  # at each event x crosses 0 in the named direction of t
    for sol, sign in ((falling, -1), (rising, 1)):
        late = eagle.ode.solve(_forced_oscillator, sol.u, (sol.t[0], sol.t[0] + h), p=1.0,
                               rtol=1e-12, atol=1e-14)
        assert np.sign(late.u[0, 0]) == sign


def test_a_span_that_goes_both_ways_is_refused():
    with pytest.raises(ValueError, match="on the same side for every sample"):
        eagle.ode.solve(_forced_oscillator, np.ones((2, 2)), (0.0, np.array([1.0, -1.0])),
                        p=1.0)


@hawk.func
def _projectile(u, t, p, mach, cd):
    """u = (x, y, vx, vy), p = (k, speed of sound, g): the drag k Cd(M) |v| v, Cd tabulated."""
    speed = math.sqrt(u[2] * u[2] + u[3] * u[3])
    drag = p[0] * hawk.interp(speed / p[1], mach, cd) * speed
    return hawk.vector(u[2], u[3], -drag * u[2], -drag * u[3] - p[2])


@hawk.func
def _ground(u, t, p, mach, cd):
    return u[1]


MACH = np.array([0.0, 0.5, 0.8, 0.9, 1.0, 1.1, 1.2, 1.5, 2.0, 3.0])
CD = np.array([0.20, 0.20, 0.22, 0.30, 0.42, 0.44, 0.42, 0.37, 0.32, 0.27])


def test_tables_reach_the_model_and_its_event_and_match_scipy_with_numpy_interp():
    """A projectile with a tabulated drag coefficient Cd(Mach) (hawk.interp on two tables
    passed with tables=) to the ground (an event reading the tables too), against SciPy's
    DOP853 with numpy.interp in the right-hand side; the fixed-step kernel takes them too."""
    from scipy.integrate import solve_ivp

    n = 40
    angle = np.radians(np.linspace(15.0, 75.0, n))
    u0 = np.vstack([np.zeros(n), np.zeros(n), 800.0 * np.cos(angle), 800.0 * np.sin(angle)])
    p = np.array([2e-4, 340.0, 9.81])
    sol = eagle.ode.solve(_projectile, u0, (0.0, 200.0), p=p, tables=(MACH, CD), rtol=1e-10,
                          atol=1e-8, event=_ground)
    assert (sol.status == 2).all()

    def rhs(t, u):
        speed = math.hypot(u[2], u[3])
        drag = 2e-4 * np.interp(speed / 340.0, MACH, CD) * speed
        return [u[2], u[3], -drag * u[2], -drag * u[3] - 9.81]

    def ground(t, u):
        return u[1]

    ground.terminal, ground.direction = True, -1
    for i in (0, 20, 39):
        ref = solve_ivp(rhs, (0.0, 200.0), u0[:, i], method="DOP853", rtol=1e-12, atol=1e-10,
                        events=ground)
        assert abs(sol.t[i] - ref.t[-1]) < 1e-6 * ref.t[-1]
        assert abs(sol.u[0, i] - ref.y[0, -1]) < 1e-6 * ref.y[0, -1]
    fixed = eagle.ode.solve(_projectile, u0, (0.0, 1.0), p=p, tables=(MACH, CD), method="rk4",
                            dt=1e-3)
    expected = np.stack([solve_ivp(rhs, (0.0, 1.0), u0[:, i], method="DOP853", rtol=1e-12,
                                   atol=1e-10).y[:, -1] for i in (0, 39)], axis=1)
    np.testing.assert_allclose(fixed.u[:, [0, 39]], expected, rtol=1e-7)


def test_bad_tables_are_refused_by_name():
    u0 = np.ones((4, 3))
    with pytest.raises(ValueError, match=r"tables\[1\] must be an array of 1, 2 or 3 "):
        eagle.ode.solve(_projectile, u0, (0.0, 1.0), p=np.ones(3), tables=(MACH, 2.0))
    with pytest.raises(ValueError, match="at most 3 arrays"):
        eagle.ode.solve(_projectile, u0, (0.0, 1.0), p=np.ones(3), tables=(MACH,) * 4)


def test_a_shared_value_the_body_never_reads_needs_no_binding():
    """A Param or Table a kernel factory switched off is not read, so it may be left unbound;
    one the body reads is still required by name."""
    kernel = hawk.ode.fixed_step_kernel(harmonic, "rk4", hawk.Vec2, hawk.Scalar)
    assert kernel.param("table0").annotation == "Table"
    n = 4
    state = dict(u=np.ones((2, n)), t=np.zeros(n), steps=np.zeros(n, np.int64),
                 saves=np.zeros(n, np.int64), saved=np.zeros((0, 2, n)))
    eagle.until_done(eagle.deploy(kernel, "cpu"), max_steps=10, p=np.ones(n), dt=0.1,
                     t_end=0.5, **state).run()  # no save_*, no table0..2: never read
    assert (state["t"] == 0.5).all()
    with pytest.raises(eagle.BindingTypeError, match="missing a binding for 'dt'"):
        eagle.until_done(eagle.deploy(kernel, "cpu"), max_steps=10, p=np.ones(n), t_end=0.5,
                         **state)


@hawk.func
def _unit_oscillator(u, t, p):
    return hawk.vec2(u.y, -u.x)


@hawk.func
def _two_events(u, t, p):
    """Two event functions at once: x = 0, and v = p."""
    return hawk.vec2(u.x, u.y - p)


@pytest.mark.parametrize("method", ["dopri5", "tsit5"])
def test_several_events_are_recorded_as_scipy_records_them(method):
    """SciPy's events=[g1, g2] with their directions, none terminal: the same times, each
    component's in order, and the states there; then the second made terminal ends each
    sample at its first crossing, recorded too."""
    from scipy.integrate import solve_ivp

    u0 = np.array([[1.0, 2.0], [0.0, 0.0]])
    options = dict(p=0.5, method=method, rtol=1e-10, atol=1e-12, event=_two_events,
                   direction=(0, 1))
    sol = eagle.ode.solve(_unit_oscillator, u0, (0.0, 10.0), terminal=(False, False),
                          record_events=12, **options)
    assert (sol.status == 1).all() and sol.t_events.shape == (12, 2)
    for i in range(2):
        g1 = lambda t, y: y[0]  # noqa: E731
        g2 = lambda t, y: y[1] - 0.5  # noqa: E731
        g2.direction = 1
        ref = solve_ivp(lambda t, y: [y[1], -y[0]], (0.0, 10.0), u0[:, i], method="DOP853",
                        rtol=1e-12, atol=1e-12, events=[g1, g2])
        count = sum(len(e) for e in ref.t_events)
        assert sol.events[i] == count
        for which in (0, 1):
            mine = np.sort(sol.t_events[:count, i][sol.which_events[:count, i] == which])
            np.testing.assert_allclose(mine, ref.t_events[which], rtol=1e-8)
        times = sol.t_events[:count, i]
        np.testing.assert_allclose(sol.u_events[:count, 0, i],
                                   u0[0, i] * np.cos(times), atol=1e-8)
        assert np.isnan(sol.t_events[count:, i]).all() and (sol.which_events[count:, i] == -1).all()
    ended = eagle.ode.solve(_unit_oscillator, u0, (0.0, 10.0), terminal=(False, True),
                            record_events=4, **options)
    first = 7 * math.pi / 6  # -sin t = 0.5 rising, for both amplitudes above 0.5
    np.testing.assert_allclose(ended.t[0], first, rtol=1e-9)
    assert ended.status[0] == 2 and ended.which_events[ended.events[0] - 1, 0] == 1
    np.testing.assert_allclose(ended.t[1], math.pi + math.asin(0.25), rtol=1e-9)


@hawk.func
def _drift(u, t, p):
    """u = (x, v, hits on the wall at 0, hits on the wall at 1): free flight."""
    return hawk.vector(u[1], 0.0, 0.0, 0.0)


@hawk.func
def _walls(u, t, p):
    return hawk.vec2(u[0], 1.0 - u[0])  # both fall through 0 as the particle reaches a wall


@hawk.func
def _reflect(u, t, p, i):
    """The velocity reversed, and the wall that was hit counted: component ``i``."""
    if i == 0:
        return hawk.vector(u[0], -p * u[1], u[2] + 1.0, u[3])
    return hawk.vector(u[0], -u[1], u[2], u[3] + 1.0)


@pytest.mark.parametrize("method", ["dopri5", "tsit5", "rosenbrock23"])
def test_on_event_is_told_which_component_of_a_vector_event_fired(method):
    """A particle between walls at 0 and 1 (DifferentialEquations.jl's
    VectorContinuousCallback case): on_event(u, t, p, i) reverses it and counts the wall; the
    wall at 0 also scales the speed by p. From x = 0.5 moving right at 1: wall 1 at t = 0.5,
    wall 0 at 1.5, wall 1 at 1.5 + 1/p..., exactly."""
    p = np.array([1.0, 0.5])
    u0 = np.vstack([np.full(2, 0.5), np.ones(2), np.zeros(2), np.zeros(2)])
    sol = eagle.ode.solve(_drift, u0, (0.0, 3.2), p=p, method=method, rtol=1e-10,
                          atol=1e-12, event=_walls, on_event=_reflect, record_events=6)
    assert (sol.status == 1).all()
    # p = 1: walls at 0.5 (1), 1.5 (0), 2.5 (1); at 3.2 it is at 1 - 0.7, moving left
    np.testing.assert_allclose(sol.u[:, 0], [0.3, -1.0, 1.0, 2.0], atol=1e-9)
    # p = 0.5: walls at 0.5 (1), 1.5 (0), then at speed 0.5 the wall 1 at 3.5: not reached
    np.testing.assert_allclose(sol.u[:, 1], [0.85, 0.5, 1.0, 1.0], atol=1e-9)
    np.testing.assert_allclose(sol.t_events[:3, 0], [0.5, 1.5, 2.5], atol=1e-9)
    assert list(sol.which_events[:3, 0]) == [1, 0, 1] and sol.events[1] == 2
    unrecorded = eagle.ode.solve(_drift, u0, (0.0, 3.2), p=p, method=method, rtol=1e-10,
                                 atol=1e-12, event=_walls, on_event=_reflect)
    assert np.array_equal(unrecorded.u, sol.u) and list(unrecorded.events) == [3, 2]
    ended = eagle.ode.solve(_drift, u0, (0.0, 3.2), p=p, method=method, rtol=1e-10,
                            atol=1e-12, event=_walls, on_event=_reflect, terminal=(False, True))
    # the wall at 1 is terminal now: each sample ends there, on_event never called for it
    np.testing.assert_allclose(ended.t, [0.5, 0.5], atol=1e-9)
    assert (ended.status == 2).all() and (ended.u[3] == 0.0).all()
    start_left = u0 * np.array([[1.0], [-1.0], [1.0], [1.0]])
    bounced = eagle.ode.solve(_drift, start_left, (0.0, 3.2), p=p, method=method, rtol=1e-10,
                              atol=1e-12, event=_walls, on_event=_reflect,
                              terminal=(False, True))
    # left first: wall 0 at 0.5 (updated), then wall 1 at 1.5 (p = 1) or 2.5 (p = 0.5): ends
    np.testing.assert_allclose(bounced.t, [1.5, 2.5], atol=1e-9)
    assert (bounced.status == 2).all() and (bounced.u[2] == 1.0).all()


@hawk.func
def _tabulated_rate(u, t, p, times, rates):
    """u' = c(t) u with c tabulated over t."""
    return hawk.interp(t, times, rates) * u


def test_a_model_with_tables_runs_backward_in_time():
    """Backward from t = 1 the tables still reach the model (the reversed model passes its
    arguments on): the forward run's end state goes back to where it started, and the end
    state forward is exp of the integral of the piecewise-linear rate."""
    times, rates = np.array([0.0, 0.5, 1.0]), np.array([1.0, -2.0, 0.5])
    u0 = np.array([1.0, 2.0])
    forward = eagle.ode.solve(_tabulated_rate, u0, (0.0, 1.0), tables=(times, rates),
                              rtol=1e-12, atol=1e-14, max_step=0.05)
    integral = 0.5 * (1.0 - 2.0) / 2 + 0.5 * (-2.0 + 0.5) / 2
    np.testing.assert_allclose(forward.u, u0 * math.exp(integral), rtol=1e-9)
    back = eagle.ode.solve(_tabulated_rate, forward.u, (1.0, 0.0), tables=(times, rates),
                           rtol=1e-12, atol=1e-14, max_step=0.05)
    np.testing.assert_allclose(back.u, u0, rtol=1e-9)
    assert (back.t == 0.0).all()


def test_several_events_are_refused_where_they_cannot_work():
    u0 = np.array([[1.0], [0.0]])
    with pytest.raises(ValueError, match="need an event"):
        eagle.ode.solve(_unit_oscillator, u0, (0.0, 1.0), p=0.5, record_events=2)
    with pytest.raises(ValueError, match=r"direction must be one of \(-1, 0, 1\) or a tuple"):
        eagle.ode.solve(_unit_oscillator, u0, (0.0, 1.0), p=0.5, event=_two_events,
                        direction=(2, 0))
