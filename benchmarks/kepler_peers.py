"""The Kepler ensemble of ``kepler_ensemble.py``: the model, its peers and its references.

The 2-body problem in 3D with ``mu = 1``: the state is ``(x, y, z, vx, vy, vz)`` and

    r' = v,   v' = -mu r / |r|^3,   |r| = sqrt(x x + y y + z z)

(written ``d = mu / (|r| |r| |r|)``, ``v' = (-d) r``, in that order in every arm, so that the
arms do the same arithmetic). Every orbit has semi-major axis ``a = 1``, so its period is
``2 pi`` whatever its eccentricity, and its energy is ``-mu / (2 a) = -1/2``.

What is here, every piece built on ``ode_peers``' generic ones (no integrator is written twice):

* ``kepler_ensemble``: ``n`` orbits with eccentricity ``e ~ U(0, 0.7)``, inclination ``i``
  with ``cos i ~ U(-1, 1)`` (orientations uniform on the sphere), node and argument of
  periapsis ``~ U(0, 2 pi)``, each starting at periapsis: ``r = a (1 - e)``, speed
  ``sqrt(mu (1 + e) / (a (1 - e)))`` perpendicular to it, both rotated by ``Rz(node) Rx(i)
  Rz(argp)``; ``p`` is ``mu`` per orbit (``(1, n)``, all 1);
* ``kepler_numba``: ``ode_peers.make_dopri5_numba`` of the right-hand side ``kepler_rhs``
  (6 states, 1 parameter): a ``prange`` over orbits, scalar locals, eagle's step rules;
* ``kepler_field``: the right-hand side for ``ode_peers.make_diffrax`` (jax.numpy);
* ``kepler_ivp``: the right-hand side for scipy (``ode_peers.reference_dop853(..., rhs=)``);
* ``energy`` and ``closure``: the specific orbital energy of states ``(6, n)`` and how far an
  orbit ends from where it started after one period (position and velocity).
"""

from __future__ import annotations

import math

import numpy as np
import ode_peers
from numba import njit

MU = 1.0
PERIOD = 2.0 * math.pi  # a = 1: sqrt(a^3 / mu) 2 pi
ENERGY = -0.5 * MU  # -mu / (2 a)
E_MAX = 0.7


def kepler_ensemble(n: int, seed: int = 2024, e_max: float = E_MAX) -> ode_peers.Ensemble:
    """``n`` orbits as the module's docstring says: ``u0`` ``(6, n)``, ``p`` ``(1, n)``."""
    if not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n: expected a positive integer, got {n!r}")
    if not 0.0 <= e_max < 1.0:
        raise ValueError(f"e_max: expected an eccentricity in [0, 1), got {e_max!r}")
    rng = np.random.default_rng(seed)
    e = rng.uniform(0.0, e_max, n)
    inc = np.arccos(rng.uniform(-1.0, 1.0, n))
    node, argp = rng.uniform(0.0, 2 * math.pi, (2, n))
    r = 1.0 - e  # a = 1
    speed = np.sqrt(MU * (1.0 + e) / r)
    zero = np.zeros(n)
    pos = rotate(np.stack([r, zero, zero]), inc, node, argp)
    vel = rotate(np.stack([zero, speed, zero]), inc, node, argp)
    return ode_peers.Ensemble(np.ascontiguousarray(np.vstack([pos, vel])),
                              np.full((1, n), MU))


def rotate(v: np.ndarray, inc, node, argp) -> np.ndarray:
    """``Rz(node) Rx(inc) Rz(argp) v`` for vectors ``v`` (3, n): from the orbit's plane
    (periapsis on x) to space."""
    c, s = np.cos(argp), np.sin(argp)
    x, y, z = c * v[0] - s * v[1], s * v[0] + c * v[1], v[2]
    c, s = np.cos(inc), np.sin(inc)
    x, y, z = x, c * y - s * z, s * y + c * z
    c, s = np.cos(node), np.sin(node)
    return np.stack([c * x - s * y, s * x + c * y, z])


@njit(inline="always")
def kepler_rhs(t, x, y, z, vx, vy, vz, mu):
    """The right-hand side, as scalars (``t`` unused)."""
    r = math.sqrt(x * x + y * y + z * z)
    d = mu / (r * r * r)
    return vx, vy, vz, -d * x, -d * y, -d * z


kepler_numba = ode_peers.make_dopri5_numba(kepler_rhs, 6, 1, name="kepler_numba")


def kepler_field(t, u, p):
    """The right-hand side for ``ode_peers.make_diffrax``: ``u`` (6,), ``p`` (1,)."""
    import jax.numpy as jnp

    r = jnp.sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2])
    d = p[0] / (r * r * r)
    return jnp.stack([u[3], u[4], u[5], -d * u[0], -d * u[1], -d * u[2]])


def kepler_ivp(t, u, mu):
    """The right-hand side for ``scipy.integrate.solve_ivp`` (``args=(mu,)``)."""
    r = math.sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2])
    d = mu / (r * r * r)
    return [u[3], u[4], u[5], -d * u[0], -d * u[1], -d * u[2]]


def energy(u: np.ndarray, mu: float = MU) -> np.ndarray:
    """The specific orbital energy ``|v|^2 / 2 - mu / |r|`` of states ``(6, n)``."""
    return 0.5 * (u[3:] ** 2).sum(axis=0) - mu / np.sqrt((u[:3] ** 2).sum(axis=0))


def closure(u: np.ndarray, u0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """After one period: ``(|r - r0|, |v - v0|)`` per orbit."""
    return (np.sqrt(((u[:3] - u0[:3]) ** 2).sum(axis=0)),
            np.sqrt(((u[3:] - u0[3:]) ** 2).sum(axis=0)))
