"""The pollution problem POLL (20 species, 25 reactions) of the Bari IVP test set, as data, and
the model's functions for eagle, NumPy/SciPy, Numba and JAX generated from it (issue 42).

The problem is Verwer's air-pollution model (J. G. Verwer, *Gauss-Seidel iteration for stiff
ODEs from chemical kinetics*, SIAM J. Sci. Comput. 15, 1994; problem POLL of Mazzia and
Magherini's *Test Set for IVP Solvers*, release 2.4, with its reference solution at t = 60).
Each reaction ``j`` runs at ``r_j = k_j y_a`` or ``k_j y_a y_b`` (``REACTIONS``: the rate
constant and the reacting species, numbered from 1 as in the test set) and changes species by
``STOICHIOMETRY[j]`` (species: count); ``y' = sum_j STOICHIOMETRY[j] r_j``. The start
``START`` and the reference ``REFERENCE_T60`` are the test set's.

A member's one parameter ``s`` scales the photolysis rate ``k_1`` (sunlight): ``s = 1`` is the
test set's problem.

Generated from the data, in one arithmetic order (each species' terms in reaction order,
losses and gains as they come, ``r_j`` the product left to right):

- ``poll_source(name)``: the model as a ``@hawk.func name(u, t, s)``, and ``load(folder)`` it;
- ``poll_numpy(t, y, s)`` and ``poll_jacobian(t, y, s)`` for ``solve_ivp``;
- ``poll_rhs`` and ``poll_jac``: ``@njit`` ``(y, p, out)`` functions for ``stiff_numba``
  (the Jacobian's nonzero entries only), and ``PEERS`` their integrators;
- ``poll_field(t, y, p)``: jax.numpy, for diffrax.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

__all__ = ["REACTIONS", "STOICHIOMETRY", "START", "REFERENCE_T60", "T1", "poll_source", "load",
           "poll_numpy", "poll_jacobian", "poll_field", "poll_start"]

SPECIES = 20
T1 = 60.0
#: (k_j, reacting species) for j = 1 .. 25
REACTIONS = (
    (0.35, (1,)), (0.266e2, (2, 4)), (0.123e5, (5, 2)), (0.86e-3, (7,)), (0.82e-3, (7,)),
    (0.15e5, (7, 6)), (0.13e-3, (9,)), (0.24e5, (9, 6)), (0.165e5, (11, 2)),
    (0.9e4, (11, 1)), (0.22e-1, (13,)), (0.12e5, (10, 2)), (0.188e1, (14,)),
    (0.163e5, (1, 6)), (0.48e7, (3,)), (0.35e-3, (4,)), (0.175e-1, (4,)), (0.1e9, (16,)),
    (0.444e12, (16,)), (0.124e4, (17, 6)), (0.21e1, (19,)), (0.578e1, (19,)),
    (0.474e-1, (1, 4)), (0.178e4, (19, 1)), (0.312e1, (20,)))
#: per reaction, {species: change}
STOICHIOMETRY = (
    {1: -1, 2: 1, 3: 1}, {2: -1, 4: -1, 1: 1}, {5: -1, 2: -1, 1: 1, 6: 1},
    {7: -1, 5: 2, 8: 1}, {7: -1, 8: 1}, {7: -1, 6: -1, 5: 1, 8: 1},
    {9: -1, 5: 1, 8: 1, 10: 1}, {9: -1, 6: -1, 11: 1}, {11: -1, 2: -1, 1: 1, 10: 1, 12: 1},
    {11: -1, 1: -1, 13: 1}, {13: -1, 1: 1, 11: 1}, {10: -1, 2: -1, 1: 1, 14: 1},
    {14: -1, 5: 1, 7: 1}, {1: -1, 6: -1, 15: 1}, {3: -1, 4: 1}, {4: -1, 16: 1},
    {4: -1, 3: 1}, {16: -1, 6: 2}, {16: -1, 3: 1}, {17: -1, 6: -1, 5: 1, 18: 1},
    {19: -1, 2: 1}, {19: -1, 1: 1, 3: 1}, {1: -1, 4: -1, 19: 1}, {19: -1, 1: -1, 20: 1},
    {20: -1, 1: 1, 19: 1})
START = {2: 0.2, 4: 0.04, 7: 0.1, 8: 0.3, 9: 0.01, 17: 0.007}
REFERENCE_T60 = (
    0.5646255480022769e-01, 0.1342484130422339e+00, 0.4139734331099427e-08,
    0.5523140207484359e-02, 0.2018977262302196e-06, 0.1464541863493966e-06,
    0.7784249118997964e-01, 0.3245075353396018e+00, 0.7494013383880406e-02,
    0.1622293157301561e-07, 0.1135863833257075e-07, 0.2230505975721359e-02,
    0.2087162882798630e-03, 0.1396921016840158e-04, 0.8964884856898295e-02,
    0.4352846369330103e-17, 0.6899219696263405e-02, 0.1007803037365946e-03,
    0.1772146513969984e-05, 0.5682943292316392e-04)


def poll_start() -> np.ndarray:
    """The test set's start (20,)."""
    y = np.zeros(SPECIES)
    for species, value in START.items():
        y[species - 1] = value
    return y


def _rate(j: int, y: str) -> str:
    """``r_j`` as an expression of ``y[...]`` (0-based), ``s`` scaling ``k_1``."""
    k, species = REACTIONS[j]
    factors = [f"({k!r} * s)" if j == 0 else repr(k)] + [f"{y}[{i - 1}]" for i in species]
    return " * ".join(factors)


def _derivatives(y: str) -> list[str]:
    """Species by species, ``sum_j STOICHIOMETRY[j][i] r_j`` (reaction order)."""
    out = []
    for i in range(1, SPECIES + 1):
        terms = ""
        for j, change in enumerate(STOICHIOMETRY):
            c = change.get(i, 0)
            if c:
                term = _rate(j, y) if abs(c) == 1 else f"{float(abs(c))!r} * {_rate(j, y)}"
                terms += (" - " if c < 0 else " + ") + term if terms else (
                    f"-({term})" if c < 0 else term)
        out.append(terms or "0.0")
    return out


def _jacobian(y: str) -> dict:
    """``{(i, m): expression}``: the nonzero ``dy_i' / dy_m`` (0-based), reaction order."""
    entries: dict = {}
    for j, ((k, species), change) in enumerate(zip(REACTIONS, STOICHIOMETRY, strict=True)):
        scale = f"({k!r} * s)" if j == 0 else repr(k)
        for m in species:
            others = [f"{y}[{o - 1}]" for o in species if o != m]
            partial = " * ".join([scale, *others])
            for i, c in change.items():
                term = f"{float(c)!r} * {partial}"
                key = (i - 1, m - 1)
                entries[key] = f"{entries[key]} + {term}" if key in entries else term
    return entries


def poll_source(name: str = "poll") -> str:
    """The model as a ``@hawk.func name(u, t, s)``, one expression per species."""
    body = ",\n        ".join(_derivatives("u"))
    return f"import hawk\n\n\n@hawk.func\ndef {name}(u, t, s):\n    return hawk.vector(\n" \
           f"        {body})\n"


def load(folder: Path, name: str = "poll"):
    """The ``@hawk.func`` of ``poll_source()``, written to ``folder`` and imported."""
    path = Path(folder) / f"{name}.py"
    path.write_text(poll_source(name))
    spec = importlib.util.spec_from_file_location(f"stiff_poll_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def _generated() -> str:
    """The NumPy, Numba and JAX functions' source (the functions are named in
    ``__all__``)."""
    rhs = "".join(f"    out[{i}] = {e}\n" for i, e in enumerate(_derivatives("y")))
    jac = "".join(f"    jac_out[{i}, {m}] = {e}\n" for (i, m), e in sorted(_jacobian("y").items()))
    return (f"@njit(nogil=True, error_model='numpy', cache=True)\ndef poll_rhs(y, p, out):\n"
            f"    s = p[0]\n{rhs}\n\n"
            f"@njit(nogil=True, error_model='numpy', cache=True)\ndef poll_jac(y, p, jac_out):\n"
            f"    s = p[0]\n{jac}\n\n"
            f"def poll_numpy(t, y, s):\n    out = np.empty({SPECIES})\n{rhs}    return out\n\n\n"
            f"def poll_jacobian(t, y, s):\n    jac_out = np.zeros(({SPECIES}, {SPECIES}))\n"
            f"{jac}    return jac_out\n\n\n"
            f"def poll_field(t, y, p):\n    import jax.numpy as jnp\n\n    s = p[0]\n"
            f"    return jnp.stack([\n" +
            "".join(f"        {e},\n" for e in _derivatives("y")) + "    ])\n")


def _functions():
    import peer_numba

    return peer_numba.load_source(_generated(), "stiff_poll_model")


_module = _functions()
poll_rhs, poll_jac = _module.poll_rhs, _module.poll_jac
poll_numpy, poll_jacobian, poll_field = _module.poll_numpy, _module.poll_jacobian, \
    _module.poll_field


def _peers():
    import stiff_numba

    return stiff_numba.make_peers("stiff_poll", "poll_rhs", "poll_jac")


PEERS = _peers()
