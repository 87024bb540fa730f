"""The size benchmark's Numba peers (``benchmarks/stiff_numba.py``: hand-written Rosenbrock23
and Rodas5P for an n-state model, an analytic Jacobian and one dense LU per step) are correct:
on the 20-state Brusselator of ``benchmarks/stiff_models.py`` each takes eagle's accepted and
rejected steps (``method="rosenbrock23"`` and ``"rodas5p"``) on every member and ends on
eagle's state up to rounding (bit for bit on the machines checked so far: the same operations
in the same order), and its LU solves as NumPy does on matrices that need row swaps. On POLL
(``benchmarks/stiff_poll.py``, the test set's 20-species pollution problem, written as data):
the data reproduce the published solution at t = 60, and the peers take eagle's steps there too,
eagle landing within a few tolerances of the published solution. Correctness only, never speed;
no JAX or diffrax here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
pytest.importorskip("numba")
import ode_peers  # noqa: E402
import stiff_models  # noqa: E402

import eagle.ode  # noqa: E402

STATES, N, T_END = 20, 6, 10.0


@pytest.fixture(scope="module")
def ens():
    a = 0.02 * np.random.default_rng(5).uniform(0.8, 1.2, N)
    u0 = np.repeat(stiff_models.brusselator_start(STATES // 2)[:, None], N, axis=1)
    return ode_peers.Ensemble(np.ascontiguousarray(u0), np.ascontiguousarray(a[None, :]))


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return stiff_models.load(STATES // 2, tmp_path_factory.mktemp("brusselator"))


@pytest.mark.parametrize("method, tol", [("rosenbrock23", 1e-6), ("rodas5p", 1e-6),
                                         ("rodas5p", 1e-8)])
def test_numba_peer_takes_eagles_steps_on_every_member(ens, model, method, tol):
    import stiff_numba

    peer = ode_peers.solve_numba(ens, T_END, tol, tol,
                                 integrator=stiff_numba.BRUSSELATOR[method])
    ref = eagle.ode.solve(model, ens.u0, (0.0, T_END), p=ens.p[0], method=method, rtol=tol,
                          atol=tol, threads=1)
    assert peer.done.all() and (np.asarray(ref.status) == 1).all()
    assert (peer.t == T_END).all()
    assert np.array_equal(peer.accepted, ref.accepted)
    assert np.array_equal(peer.rejected, ref.rejected)
    assert peer.accepted.min() > 50  # a real integration
    if method == "rodas5p" and tol == 1e-6:
        assert peer.rejected.min() > 0  # the controller's rejection branch was exercised
    np.testing.assert_allclose(peer.u, ref.u, rtol=1e-12, atol=1e-14)


def test_the_peers_lu_solves_with_row_swaps_as_numpy():
    import stiff_numba

    rng = np.random.default_rng(3)
    swapped = 0
    for size in (1, 2, 5, 20):
        for _ in range(50):
            a = rng.standard_normal((size, size))
            b = rng.standard_normal(size)
            w, perm = a.copy(), np.empty(size, np.int64)
            stiff_numba.lu_factor(w, perm)
            x = b.copy()
            stiff_numba.lu_solve(w, perm, x)
            np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-9, atol=1e-9)
            swapped += (perm != np.arange(size)).any()
    assert swapped > 100  # most of them needed a row swap


# -- POLL, the 20-species pollution problem ------------------------------------------------------


def test_poll_as_written_reaches_the_test_sets_reference_at_t60():
    """The rates and stoichiometry of ``benchmarks/stiff_poll.py`` are the test set's: Radau at
    a tight tolerance ends within 1e-8 (relative, every species) of the published solution."""
    import stiff_poll
    from scipy.integrate import solve_ivp

    sol = solve_ivp(stiff_poll.poll_numpy, (0.0, stiff_poll.T1), stiff_poll.poll_start(),
                    method="Radau", rtol=1e-10, atol=1e-14, jac=stiff_poll.poll_jacobian,
                    args=(1.0,))
    ref = np.array(stiff_poll.REFERENCE_T60)
    assert sol.status == 0
    assert (np.abs(sol.y[:, -1] - ref) <= 1e-8 * ref).all()


@pytest.mark.parametrize("method", eagle.ode.IMPLICIT)
def test_numba_poll_peer_takes_eagles_steps_and_lands_on_the_reference(tmp_path, method):
    """Member 0 has ``s = 1`` (the test set's problem); the others scale ``k_1``."""
    import stiff_poll

    if method not in stiff_poll.PEERS:
        pytest.skip(f"no Numba peer of {method} in benchmarks/stiff_numba.py")

    n, tol = 6, 1e-8
    s = np.linspace(0.8, 1.2, n)
    s[0] = 1.0
    u0 = np.ascontiguousarray(np.repeat(stiff_poll.poll_start()[:, None], n, axis=1))
    ens = ode_peers.Ensemble(u0, np.ascontiguousarray(s[None, :]))
    peer = ode_peers.solve_numba(ens, stiff_poll.T1, tol, tol,
                                 integrator=stiff_poll.PEERS[method])
    ref = eagle.ode.solve(stiff_poll.load(tmp_path), u0, (0.0, stiff_poll.T1), p=s,
                          method=method, rtol=tol, atol=tol, threads=1)
    assert peer.done.all() and (np.asarray(ref.status) == 1).all()
    assert np.array_equal(peer.accepted, ref.accepted)
    assert np.array_equal(peer.rejected, ref.rejected)
    np.testing.assert_allclose(peer.u, ref.u, rtol=1e-12, atol=1e-20)
    published = np.array(stiff_poll.REFERENCE_T60)
    units = np.abs(np.asarray(ref.u)[:, 0] - published) / (tol + tol * published)
    print(f"{method}: {units.max():.3g} tolerances from the published solution")
    assert units.max() < 20.0
