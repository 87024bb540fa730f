"""The Kepler benchmark's Numba peer (``benchmarks/kepler_peers.py``, written out by
``ode_peers.make_dopri5_numba`` for 6 states) is correct: the same method as eagle's
``dopri5``, to scipy's references and to eagle itself. Correctness only, never speed.

* Against eagle (``eagle.ode.solve`` of the same right-hand side as a ``@hawk.func`` of a
  ``Vector[6]``), the peer takes the same accepted and rejected steps, orbit by orbit, and ends
  on the same state up to rounding (bit for bit on the machines checked so far; ``pow`` is the
  one function whose last bit eagle and libm may round differently).
* Against an independent implementation of the method (``HairerRK45``: scipy's RK45 stages
  driven by Hairer's PI controller in Python), the same counts and the same state up to rounding.
* Against ``solve_ivp(method="DOP853", rtol=atol=1e-12)``, the end state is within ``BOUND``
  tolerances (a DP5 orbit's global error is a few hundred tolerances after a period at
  e = 0.7, mostly phase drift), and after one period the orbit closes and keeps its energy.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import kepler_peers as kp  # noqa: E402
import ode_peers  # noqa: E402

import eagle  # noqa: E402

N = 12
BOUND = 1e3  # tolerances


@pytest.fixture(scope="module")
def ens():
    return kp.kepler_ensemble(N, seed=7, e_max=0.9)


def numba_peer(ens, t1, tol):
    return ode_peers.solve_numba(ens, t1, tol, tol, integrator=kp.kepler_numba)


@pytest.mark.parametrize("tol", [1e-6, 1e-8])
def test_numba_peer_takes_eagles_steps_on_every_orbit(ens, tol):
    from kepler_ensemble import kepler

    sol = numba_peer(ens, kp.PERIOD, tol)
    ref = eagle.ode.solve(kepler, ens.u0, (0.0, kp.PERIOD), p=ens.p[0], rtol=tol, atol=tol,
                          threads=1)
    assert sol.done.all() and (ref.status == 1).all()
    assert np.array_equal(sol.accepted, ref.accepted)
    assert np.array_equal(sol.rejected, ref.rejected)
    assert sol.rejected.sum() > 0  # the controller's rejection branch was exercised
    np.testing.assert_allclose(sol.u, ref.u, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("tol", [1e-6, 1e-8])
def test_numba_peer_takes_the_steps_of_scipys_rk45_under_hairers_controller(ens, tol):
    sol = numba_peer(ens, kp.PERIOD, tol)
    u, acc, rej = ode_peers.reference_hairer(ens, kp.PERIOD, tol, tol, rhs=kp.kepler_ivp)
    assert np.array_equal(sol.accepted, acc) and np.array_equal(sol.rejected, rej)
    np.testing.assert_allclose(sol.u, u, rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("t1", [2.0, kp.PERIOD])
def test_numba_peer_end_state_is_within_tolerance_of_dop853_and_the_orbit_closes(t1):
    tol = 1e-8
    ens = kp.kepler_ensemble(N, seed=7)  # the benchmark's eccentricities, up to 0.7
    sol = numba_peer(ens, t1, tol)
    ref = ode_peers.reference_dop853(ens, t1, rhs=kp.kepler_ivp)
    assert (np.abs(sol.u - ref) / (tol + tol * np.abs(ref))).max() <= BOUND
    assert np.abs(kp.energy(sol.u) - kp.ENERGY).max() < 100 * tol
    dr, dv = kp.closure(sol.u, ens.u0)
    if t1 == kp.PERIOD:  # back at periapsis, as the reference is
        assert dr.max() < BOUND * tol and dv.max() < 10 * BOUND * tol
        assert kp.closure(ref, ens.u0)[0].max() < 1e-9
    else:  # an integration, not a copy: the orbits moved
        assert dr.min() > 0.1


def test_the_ensemble_is_what_it_says():
    ens = kp.kepler_ensemble(5000, seed=1)
    assert ens.u0.shape == (6, 5000) and ens.p.shape == (1, 5000)
    np.testing.assert_allclose(kp.energy(ens.u0), kp.ENERGY, rtol=1e-13)  # a = 1
    r, v = ens.u0[:3], ens.u0[3:]
    assert np.abs((r * v).sum(axis=0)).max() < 1e-13  # at periapsis: v perpendicular to r
    e = 1.0 - np.sqrt((r * r).sum(axis=0))  # r_periapsis = a (1 - e)
    assert e.min() >= 0.0 and e.max() <= kp.E_MAX and e.max() > 0.69
    h = np.cross(r.T, v.T)  # orbit normals: spread over the sphere
    cos_i = h[:, 2] / np.linalg.norm(h, axis=1)
    assert cos_i.min() < -0.99 and cos_i.max() > 0.99 and abs(cos_i.mean()) < 0.05
    with pytest.raises(ValueError, match="n"):
        kp.kepler_ensemble(0)


def test_make_dopri5_numba_refuses_bad_widths():
    for k, m in [(0, 1), (3, -1), (2.0, 1)]:
        with pytest.raises(ValueError, match="states"):
            ode_peers.make_dopri5_numba(kp.kepler_rhs, k, m)


def test_one_period_is_the_period():
    assert kp.PERIOD == 2 * math.pi and kp.ENERGY == -0.5
