"""``eagle.ode.solve(..., saveat=times)`` (issue 43, item 5): any sorted 1-D array of times
(SciPy's ``t_eval``, diffrax's ``SaveAt(ts=...)``), read by the kernels from a ``Table`` bound
in place of the grid's spacing (``saveat="times"`` in ``hawk.ode``'s factories), recorded with
the same interpolation as ``(first, last, count)``.

Each test fails on the code before: an array ``saveat`` was refused ("saveat must be (first,
last, count)").
"""

from __future__ import annotations

import numpy as np
import pytest

import eagle.ode
import hawk

integrate = pytest.importorskip("scipy.integrate")


@hawk.func
def lotka_volterra(u, t, p):
    return hawk.vec2(p[0] * u[0] - p[1] * u[0] * u[1], -p[2] * u[1] + p[3] * u[0] * u[1])


@hawk.func
def decay(u, t, p):
    return -p * u


def test_irregular_times_agree_with_scipys_t_eval():
    """Observation times of real data (irregular) on Lotka-Volterra: each sample's rows
    within 1e-7 of ``solve_ivp(t_eval=...)`` at a tight tolerance."""
    times = np.sort(np.random.default_rng(3).uniform(0.0, 12.0, 37))
    starts = np.array([[1.0, 2.0, 0.5], [0.5, 1.0, 1.5]])
    p = np.array([1.1, 0.4, 0.4, 0.1])
    sol = eagle.ode.solve(lotka_volterra, starts, (0.0, 12.0), p, rtol=1e-11, atol=1e-11,
                          saveat=times)
    np.testing.assert_array_equal(sol.ts, times)
    assert sol.saved.shape == (37, 2, 3)
    for i in range(3):
        ref = integrate.solve_ivp(lambda t, u: [p[0] * u[0] - p[1] * u[0] * u[1],
                                                -p[2] * u[1] + p[3] * u[0] * u[1]],
                                  (0.0, 12.0), starts[:, i], method="DOP853", rtol=1e-13,
                                  atol=1e-13, t_eval=times)
        np.testing.assert_allclose(sol.saved[:, :, i], ref.y.T, atol=1e-7)


@pytest.mark.parametrize("method, span, grid", [
    ("dopri5", (0.0, 8.0), (0.5, 7.5, 15)),
    ("vern9", (0.0, 8.0), (0.0, 8.0, 9)),
    ("rk4", (0.0, 8.0), (0.5, 7.5, 15)),
    ("dopri5", (8.0, 0.0), (7.5, 0.5, 15)),
])
def test_an_array_equal_to_the_grid_gives_the_grids_bits(method, span, grid):
    first, last, count = grid
    every = (last - first) / (count - 1)
    times = first + np.arange(count) * every
    starts = np.array([[1.0, 2.0, 0.5, 1.5, 3.0], [0.5, 1.0, 1.5, 0.25, 2.0]])
    p = np.array([1.1, 0.4, 0.4, 0.1])
    options = dict(dt=0.05) if method == "rk4" else {}
    by_grid = eagle.ode.solve(lotka_volterra, starts, span, p, method=method, saveat=grid,
                              **options)
    by_times = eagle.ode.solve(lotka_volterra, starts, span, p, method=method, saveat=times,
                               **options)
    np.testing.assert_array_equal(by_times.saved, by_grid.saved)
    np.testing.assert_array_equal(by_times.u, by_grid.u)
    np.testing.assert_array_equal(by_times.ts, by_grid.ts)
    np.testing.assert_array_equal(by_times.accepted, by_grid.accepted)


def test_sensitivities_at_listed_times_and_times_before_t0():
    """``d u(t_k) / d p`` of ``u' = -p u`` is ``-t_k u0 exp(-p t_k)``; a sample starting after
    some times records NaN there (as with the grid)."""
    times = np.array([0.1, 0.35, 0.8, 1.7, 2.0])
    t0 = np.array([0.0, 0.0, 0.5])
    p, u0 = np.array([0.5, 1.0, 2.0]), np.array([1.0, 2.0, 3.0])
    sol = eagle.ode.solve(decay, u0, (t0, 2.0), p, rtol=1e-10, atol=1e-12, saveat=times,
                          sensitivity="p")
    elapsed = times[:, None] - t0
    exact = u0 * np.exp(-p * elapsed)
    reached = elapsed >= 0
    np.testing.assert_allclose(sol.saved[reached], exact[reached], rtol=1e-8)
    assert np.isnan(sol.saved[~reached]).all()
    np.testing.assert_allclose(sol.saved_sensitivity[:, 0, 0][reached],
                               (-elapsed * exact)[reached], rtol=1e-6)


@pytest.mark.parametrize("times, span, message", [
    (np.array([0.0, 2.0, 1.0]), (0.0, 3.0), r"saveat must be sorted, strictly increasing: "
                                            r"index 2 is 1.0 after 2.0"),
    (np.array([3.0, 1.0, 2.0]), (3.0, 0.0), r"saveat must be sorted, strictly decreasing"),
    (np.array([0.0, np.nan]), (0.0, 3.0), r"saveat must be finite times, got nan at index 1"),
    (np.zeros((3, 5)), (0.0, 3.0), r"saveat as an array of times must be \(T,\)"),
    (np.zeros((3, 4, 4)), (0.0, 3.0), r"saveat as an array of times must be \(T,\)"),
    (np.array([[0.0, 1.0, 1.0, 1.0], [1.0, 2.0, 0.5, 2.0]]), (0.0, 3.0),
     r"saveat must be sorted, strictly increasing: row 1 of column 2 is 0.5 after 1.0"),
    (np.array([[0.0, 1.0, 1.0, 1.0], [1.0, 2.0, np.inf, 2.0]]), (0.0, 3.0),
     r"saveat must be finite times, got inf at row 1 of column 2"),
    (np.array([]), (0.0, 3.0), r"saveat as an array of times must be \(T,\)"),
    (np.array([1 + 1j]), (0.0, 3.0), r"saveat must be real numbers"),
    ([0.0, 1.0, 2.0, 3.0], (0.0, 3.0), r"saveat must be \(first, last, count\) or an array"),
])
def test_bad_times_are_refused_by_name(times, span, message):
    with pytest.raises((ValueError, TypeError), match=message):
        eagle.ode.solve(decay, np.ones(4), span, 1.0, saveat=times)


def test_the_grid_kernels_keep_their_code_and_the_listed_ones_read_a_table():
    grid = hawk.ode.dopri5_kernel(decay, hawk.Scalar, hawk.Scalar, saveat=True)
    listed = hawk.ode.dopri5_kernel(decay, hawk.Scalar, hawk.Scalar, saveat="times")
    assert "save_every: Param" in str(grid.specialize({}))
    assert "save_every: Table" in str(listed.specialize({}))
    with pytest.raises(ValueError, match="saveat must be True"):
        hawk.ode.dopri5_kernel(decay, hawk.Scalar, hawk.Scalar, saveat="grid")


def test_the_times_are_copied_not_written():
    times = np.array([0.25, 0.5, 1.0])
    times.flags.writeable = False
    sol = eagle.ode.solve(decay, np.ones(3), (1.5, 0.0), 1.0, saveat=times[::-1].copy())
    again = eagle.ode.solve(decay, np.ones(3), (0.0, 1.5), 1.0, saveat=times)
    np.testing.assert_array_equal(times, [0.25, 0.5, 1.0])
    assert sol.ts is not times and again.ts is not times
    np.testing.assert_array_equal(sol.ts, [1.0, 0.5, 0.25])
    np.testing.assert_allclose(sol.saved[:, 0], np.exp(-(sol.ts - 1.5)), rtol=1e-5)


@pytest.mark.parametrize("method, span", [("dopri5", (0.0, 6.0)), ("rk4", (0.0, 6.0)),
                                          ("tsit5", (6.0, 0.0))])
def test_times_per_sample_are_each_samples_own(method, span):
    """``saveat`` of shape ``(T, n)``: column ``j`` is sample ``j``'s times (its observation
    times), read at ``hawk.sample_index()``; each sample's rows are the bits of a solve of that
    sample alone with its column as ``(T,)``."""
    rng = np.random.default_rng(11)
    n = 4
    times = np.sort(rng.uniform(0.5, 5.5, (9, n)), axis=0)
    if span[0] > span[1]:
        times = times[::-1].copy()
    starts = np.array([[1.0, 2.0, 0.5, 1.5], [0.5, 1.0, 1.5, 0.25]])
    p = (1.1, 0.4, 0.4, 0.1)
    options = dict(dt=0.05) if method == "rk4" else {}
    sol = eagle.ode.solve(lotka_volterra, starts, span, p, method=method, saveat=times,
                          **options)
    assert sol.saved.shape == (9, 2, n) and sol.ts.shape == (9, n)
    np.testing.assert_array_equal(sol.ts, times)
    for j in range(n):
        alone = eagle.ode.solve(lotka_volterra, starts[:, j:j + 1], span, p, method=method,
                                saveat=times[:, j], **options)
        np.testing.assert_array_equal(sol.saved[:, :, j], alone.saved[:, :, 0])
        np.testing.assert_array_equal(sol.u[:, j], alone.u[:, 0])
