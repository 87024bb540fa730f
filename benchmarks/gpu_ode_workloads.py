"""The workloads of ``gpu_ode_peers.py``: each model as eagle integrates it (a ``@hawk.func``
whose arithmetic is the ``cuda_peers/models.cu`` struct's, operation for operation, so the two
take the same steps), its ensemble (``u0`` ``(N, n)``, ``p`` ``(P, n)``, float64, drawn from a
seeded generator) and its right-hand side for diffrax (``jax.numpy``, ``u`` ``(N,)``).

- ``lorenz``: ``ode_peers.lorenz_ensemble``'s draws, Tsit5 at rtol = atol = 1e-8 over [0, 1];
- ``kepler``: ``kepler_peers.kepler_ensemble``'s orbits, DOPRI5 at 1e-8 over one period;
- ``robertson``: ``stiff_peers.robertson_ensemble``'s rates, Rodas5P at rtol 1e-6, atol 1e-10
  over [0, 1e5] (diffrax: Kvaerno5);
- ``fpu16``: an FPU-beta chain of 8 masses (16 states), Tsit5 at 1e-8 over [0, 10].

The ensembles are written out here (not imported from those modules) so that this benchmark
needs neither Numba nor SciPy: the device machine may have neither.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import handwritten_cuda as hc
import numpy as np

import hawk

SAVES = 11  # recorded times with saveat, equally spaced over the span


# -- the models, as eagle integrates them -------------------------------------------------------


@hawk.func
def lorenz(u, t, p):
    """Lorenz: ``p = (sigma, rho, beta)``; models.cu's ``Lorenz``."""
    return hawk.vec3(p.x * (u.y - u.x), u.x * (p.y - u.z) - u.y, u.x * u.y - p.z * u.z)


@hawk.func
def kepler(u, t, p):
    """The two-body problem, ``u = (x, y, z, vx, vy, vz)``, ``p = mu``; models.cu's
    ``Kepler`` (and ``kepler_ensemble.kepler``)."""
    r = math.sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2])
    d = p / (r * r * r)
    return hawk.vector(u[3], u[4], u[5], -d * u[0], -d * u[1], -d * u[2])


@hawk.func
def fpu_force(a, b, c, beta):
    l = b - a  # noqa: E741
    r = c - b
    return (r - l) + beta * (r * r * r - l * l * l)


@hawk.func
def fpu16(u, t, p):
    """An FPU-beta chain of 8 masses, fixed ends: ``u = (x0..x7, v0..v7)``, ``p = beta``;
    models.cu's ``Fpu16``."""
    return hawk.vector(
        u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15],
        fpu_force(0.0, u[0], u[1], p), fpu_force(u[0], u[1], u[2], p),
        fpu_force(u[1], u[2], u[3], p), fpu_force(u[2], u[3], u[4], p),
        fpu_force(u[3], u[4], u[5], p), fpu_force(u[4], u[5], u[6], p),
        fpu_force(u[5], u[6], u[7], p), fpu_force(u[6], u[7], 0.0, p))


@hawk.func
def robertson(u, t, k):
    """Robertson's kinetics, ``k`` the three rates; models.cu's ``Robertson`` (and
    ``stiff_ensemble.robertson``)."""
    r1 = k[0] * u[0]
    r2 = k[1] * u[1] * u[1]
    r3 = k[2] * u[1] * u[2]
    return hawk.vec3(-r1 + r3, r1 - r2 - r3, r2)


# -- the ensembles: (u0 (N, n), p (P, n)), float64 ------------------------------------------------


def lorenz_ensemble(n: int, seed: int = 2024):
    """``ode_peers.lorenz_ensemble``'s draws."""
    rng = np.random.default_rng(seed)
    p = np.stack([rng.uniform(9.0, 11.0, n), rng.uniform(20.0, 30.0, n),
                  rng.uniform(2.5, 3.0, n)])
    u0 = 1.0 + rng.uniform(-0.1, 0.1, (3, n))
    return np.ascontiguousarray(u0), np.ascontiguousarray(p)


def kepler_ensemble(n: int, seed: int = 2024, e_max: float = 0.7):
    """``kepler_peers.kepler_ensemble``'s orbits: a = 1, e ~ U(0, e_max), random orientation,
    starting at periapsis; mu = 1."""
    rng = np.random.default_rng(seed)
    e = rng.uniform(0.0, e_max, n)
    inc = np.arccos(rng.uniform(-1.0, 1.0, n))
    node, argp = rng.uniform(0.0, 2 * math.pi, (2, n))
    r = 1.0 - e
    speed = np.sqrt((1.0 + e) / r)
    zero = np.zeros(n)

    def rotate(v):
        c, s = np.cos(argp), np.sin(argp)
        x, y, z = c * v[0] - s * v[1], s * v[0] + c * v[1], v[2]
        c, s = np.cos(inc), np.sin(inc)
        x, y, z = x, c * y - s * z, s * y + c * z
        c, s = np.cos(node), np.sin(node)
        return np.stack([c * x - s * y, s * x + c * y, z])

    u0 = np.vstack([rotate(np.stack([r, zero, zero])), rotate(np.stack([zero, speed, zero]))])
    return np.ascontiguousarray(u0), np.ones((1, n))


def fpu16_ensemble(n: int, seed: int = 2024):
    """Displacements ~ U(-0.5, 0.5), at rest; beta ~ U(0.5, 1.5)."""
    rng = np.random.default_rng(seed)
    u0 = np.vstack([rng.uniform(-0.5, 0.5, (8, n)), np.zeros((8, n))])
    return np.ascontiguousarray(u0), rng.uniform(0.5, 1.5, (1, n))


def robertson_ensemble(n: int, seed: int = 2024):
    """``stiff_peers.robertson_ensemble``: u0 = (1, 0, 0), each rate times U(0.5, 2)."""
    rng = np.random.default_rng(seed)
    p = np.stack([r * rng.uniform(0.5, 2.0, n) for r in (0.04, 3e7, 1e4)])
    u0 = np.vstack([np.ones(n), np.zeros(n), np.zeros(n)])
    return np.ascontiguousarray(u0), np.ascontiguousarray(p)


# -- diffrax's right-hand sides (u (N,), p (P,), jax.numpy) ------------------------------------


def _jnp():
    import jax.numpy as jnp

    return jnp


def lorenz_field(t, u, p):
    return _jnp().stack([p[0] * (u[1] - u[0]), u[0] * (p[1] - u[2]) - u[1],
                         u[0] * u[1] - p[2] * u[2]])


def kepler_field(t, u, p):
    jnp = _jnp()
    r = jnp.sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2])
    d = p[0] / (r * r * r)
    return jnp.stack([u[3], u[4], u[5], -d * u[0], -d * u[1], -d * u[2]])


def fpu16_field(t, u, p):
    jnp = _jnp()
    x = jnp.concatenate([jnp.zeros(1, u.dtype), u[:8], jnp.zeros(1, u.dtype)])
    left, right = x[1:-1] - x[:-2], x[2:] - x[1:-1]
    return jnp.concatenate([u[8:], (right - left) + p[0] * (right ** 3 - left ** 3)])


def robertson_field(t, u, p):
    r1 = p[0] * u[0]
    r2 = p[1] * u[1] * u[1]
    r3 = p[2] * u[1] * u[2]
    return _jnp().stack([-r1 + r3, r1 - r2 - r3, r2])


@dataclass(frozen=True)
class Workload:
    name: str
    method: str  # eagle's
    f: object
    ensemble: object
    t1: float
    rtol: float
    atol: float
    field: object
    solver: str  # diffrax's

    @property
    def kernel(self) -> str:
        return hc.ODE_KERNELS[self.name]


WORKLOADS = {
    "lorenz": Workload("lorenz", "tsit5", lorenz, lorenz_ensemble, 1.0, 1e-8, 1e-8,
                       lorenz_field, "Tsit5"),
    "kepler": Workload("kepler", "dopri5", kepler, kepler_ensemble, 2 * math.pi, 1e-8, 1e-8,
                       kepler_field, "Dopri5"),
    "robertson": Workload("robertson", "rodas5p", robertson, robertson_ensemble, 1e5, 1e-6,
                          1e-10, robertson_field, "Kvaerno5"),
    "fpu16": Workload("fpu16", "tsit5", fpu16, fpu16_ensemble, 10.0, 1e-8, 1e-8, fpu16_field,
                      "Tsit5"),
}
