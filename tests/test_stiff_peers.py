"""The stiff benchmark's Numba peer (``benchmarks/stiff_peers.py``: a hand-written Rosenbrock23
of Robertson's problem, analytic Jacobian, one 3 x 3 LU per step) is correct: eagle's
``method="rosenbrock23"`` step for step, and accurate against SciPy's Radau at a tight
tolerance. Correctness only, never speed; no JAX or diffrax here.

* Against eagle (``eagle.ode.solve`` of the same right-hand side as a ``@hawk.func``), the peer
  takes the same accepted and rejected steps, member by member, and ends on the same state up
  to rounding (bit for bit on the machines checked so far: the same operations in the same
  order; ``pow`` in the controller is the one function whose last bit eagle and libm may round
  differently, which would show as a count differing on a rare member first).
* Against ``solve_ivp(method="Radau", rtol=1e-10, atol=1e-14)``, the end state is within
  ``BOUND`` tolerances (``atol + rtol |u_ref|``; Rosenbrock23 lands about 40 away on this
  ensemble at rtol 1e-6) and keeps its mass ``u0 + u1 + u2 = 1``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
pytest.importorskip("numba")
pytest.importorskip("scipy")
import ode_peers  # noqa: E402
import stiff_peers as sp  # noqa: E402

import eagle.ode  # noqa: E402

N = 8
RTOL, ATOL = 1e-6, 1e-10
BOUND = 200.0  # tolerances


@pytest.fixture(scope="module")
def ens():
    return sp.robertson_ensemble(N, seed=11)


@pytest.fixture(scope="module")
def peer(ens):
    return ode_peers.solve_numba(ens, sp.T1, RTOL, ATOL, integrator=sp.rosenbrock23_numba)


def test_numba_peer_takes_eagles_steps_on_every_member(ens, peer):
    from stiff_ensemble import robertson

    ref = eagle.ode.solve(robertson, ens.u0, (0.0, sp.T1), p=ens.p, method="rosenbrock23",
                          rtol=RTOL, atol=ATOL, threads=1)
    assert peer.done.all() and (ref.status == 1).all()
    assert (peer.t == sp.T1).all()
    assert np.array_equal(peer.accepted, ref.accepted)
    assert np.array_equal(peer.rejected, ref.rejected)
    assert peer.accepted.min() > 300  # a real integration, hundreds of steps each
    assert peer.rejected.sum() > 0  # the controller's rejection branch was exercised
    np.testing.assert_allclose(peer.u, ref.u, rtol=1e-13, atol=1e-18)


def test_numba_peer_matches_radau_at_a_tight_tolerance(ens, peer):
    indices = [0, 3, N - 1]
    ref = sp.reference_radau(ens, sp.T1, indices)
    err = np.abs(peer.u[:, indices] - ref) / (ATOL + RTOL * np.abs(ref))
    assert err.max() < BOUND
    assert ref[2].min() > 0.9 and ref[1].max() < 1e-5  # the state Robertson ends in at 1e5
    np.testing.assert_allclose(peer.u.sum(axis=0), 1.0, rtol=0, atol=1e-12)


def test_numba_peer_on_a_short_span_stops_on_t1_and_counts_rejections_as_eagle(ens):
    """A span of 1: a few dozen steps through the initial transient, where a step is rejected
    now and then; the last step lands on t1 exactly."""
    from stiff_ensemble import robertson

    sol = ode_peers.solve_numba(ens, 1.0, 1e-8, 1e-12, integrator=sp.rosenbrock23_numba)
    ref = eagle.ode.solve(robertson, ens.u0, (0.0, 1.0), p=ens.p, method="rosenbrock23",
                          rtol=1e-8, atol=1e-12, threads=1)
    assert (sol.t == 1.0).all() and sol.done.all()
    assert np.array_equal(sol.accepted, ref.accepted)
    assert np.array_equal(sol.rejected, ref.rejected)
    np.testing.assert_allclose(sol.u, ref.u, rtol=1e-13, atol=1e-20)


def test_the_peers_3x3_lu_is_hawk_solve_bit_for_bit_with_pivoting():
    """On Robertson ``W = I - h d J`` is column-diagonally dominant, so no row is ever swapped
    there: the pivoting is checked here, on matrices that need it (and on one with a zero
    first pivot), against ``hawk.solve`` (the same operations, on NumPy)."""
    import hawk

    rng = np.random.default_rng(3)
    matrices = [rng.standard_normal((3, 3)) for _ in range(200)]
    matrices += [np.array([[0.0, 2.0, 1.0], [3.0, 1.0, 0.5], [1.0, 4.0, 3.0]]),  # swap 0-1
                 np.array([[1e-3, 1.0, 0.0], [1.0, 1e-3, 0.0], [0.0, 5.0, 1.0]])]
    swapped = 0
    for a in matrices:
        b = rng.standard_normal(3)
        x = sp.solve3(np.ascontiguousarray(a), b)
        assert np.array_equal(x, hawk.solve(a, b))
        np.testing.assert_allclose(a @ x, b, rtol=0, atol=1e-9 * np.abs(a).sum() * np.abs(x).max())
        swapped += abs(a[1, 0]) > abs(a[0, 0]) or abs(a[2, 0]) > abs(a[0, 0])
    assert swapped > 100  # most of them needed a row swap
