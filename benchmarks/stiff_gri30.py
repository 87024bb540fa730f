"""GRI-Mech 3.0 as a 53-species isothermal mass-action model (issue 42), from the data
``gri30_make.py`` wrote once with Cantera (``gri30_isothermal.json``: stoichiometric methane in
air at 1500 K and 1 atm, every rate constant fixed at the start; see there), and the model's
functions for eagle and NumPy/SciPy generated from it. No Cantera needed here.

The state ``x`` is the concentrations over the start's total (mole fractions at the start); each
reaction ``j`` runs at ``r_j = kf_j prod_a x_a - kr_j prod_b x_b`` over its reactants and
products (a species twice for a coefficient of 2), and ``x' = sum_j (products_j -
reactants_j) r_j``. A member's one parameter ``s`` scales reaction ``scaled`` (``H + O2 <=> O +
OH``, the chain branching) both ways.

- ``gri30_source(name)``: the model as a ``@hawk.func name(u, t, s)``, each rate once as a
  local and each species' terms in reaction order, and ``load(folder)`` it;
- ``gri30_numpy(t, y, s)`` and ``gri30_jacobian(t, y, s)`` for ``solve_ivp``;
- ``gri30_rhs`` and ``gri30_jac``: ``@njit`` ``(y, p, out)`` functions for ``stiff_numba``
  (the Jacobian's nonzero entries only), generated on first use (``numba_functions``), and
  ``peers()`` their integrators (a dense LU with partial pivoting per step);
- ``model()``: a ``stiff_size_peers.Model`` of it (the Numba peers, no diffrax field).
"""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path

import numpy as np

__all__ = ["DATA", "SPECIES", "T1", "gri30_source", "load", "gri30_numpy", "gri30_jacobian",
           "gri30_start", "model"]

DATA = json.loads((Path(__file__).resolve().parent / "gri30_isothermal.json").read_text())
SPECIES = len(DATA["species"])
#: the end of the span (seconds): past ignition, well into the slow approach to equilibrium
T1 = 2e-3
_REACTIONS = [(r["kf"], r["kr"], {int(k): v for k, v in r["reactants"].items()},
               {int(k): v for k, v in r["products"].items()}) for r in DATA["reactions"]]


def gri30_start() -> np.ndarray:
    return np.array(DATA["x0"])


def _product(constant: str, species: dict, y: str) -> str:
    return " * ".join([constant] + [f"{y}[{k}]" for k, v in species.items() for _ in range(v)])


def _rates(y: str, scale: str) -> list[str]:
    out = []
    for j, (kf, kr, a, b) in enumerate(_REACTIONS):
        factor = f" * {scale}" if j == DATA["scaled"] else ""
        forward = _product(f"{kf!r}{factor}", a, y)
        out.append(forward if kr == 0.0 else f"{forward} - {_product(f'{kr!r}{factor}', b, y)}")
    return out


def _derivatives(rate: str) -> list[str]:
    """Species by species, the net changes times the rates, in reaction order."""
    out = []
    for i in range(SPECIES):
        terms = ""
        for j, (_, _, a, b) in enumerate(_REACTIONS):
            c = b.get(i, 0) - a.get(i, 0)
            if c:
                term = f"{rate}{j}" if abs(c) == 1 else f"{float(abs(c))!r} * {rate}{j}"
                terms += (" - " if c < 0 else " + ") + term if terms else (
                    f"-{term}" if c < 0 else term)
        out.append(terms or "0.0")
    return out


def gri30_source(name: str = "gri30") -> str:
    """The model as a ``@hawk.func name(u, t, s)``."""
    rates = "".join(f"    r{j} = {e}\n" for j, e in enumerate(_rates("u", "s")))
    body = ",\n        ".join(_derivatives("r"))
    return (f"import hawk\n\n\n@hawk.func\ndef {name}(u, t, s):\n{rates}"
            f"    return hawk.vector(\n        {body})\n")


def load(folder: Path, name: str = "gri30"):
    """The ``@hawk.func`` of ``gri30_source()``, written to ``folder`` and imported."""
    path = Path(folder) / f"{name}.py"
    path.write_text(gri30_source(name))
    spec = importlib.util.spec_from_file_location(f"stiff_gri30_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


@functools.cache
def _arrays():
    """Per reaction: constants, and the reactant and product species as index arrays padded
    with the index ``SPECIES`` (a component fixed at 1)."""
    width = max(sum(s.values()) for r in _REACTIONS for s in r[2:])

    def padded(species):
        flat = [k for k, v in species.items() for _ in range(v)]
        return flat + [SPECIES] * (width - len(flat))

    kf = np.array([r[0] for r in _REACTIONS])
    kr = np.array([r[1] for r in _REACTIONS])
    a = np.array([padded(r[2]) for r in _REACTIONS])
    b = np.array([padded(r[3]) for r in _REACTIONS])
    nu = np.zeros((SPECIES, len(_REACTIONS)))
    for j, (_, _, ra, rb) in enumerate(_REACTIONS):
        for k, v in rb.items():
            nu[k, j] += v
        for k, v in ra.items():
            nu[k, j] -= v
    return kf, kr, a, b, nu


def _scaled(s: float):
    kf, kr, a, b, nu = _arrays()
    scale = np.ones(len(kf))
    scale[DATA["scaled"]] = s
    return kf * scale, kr * scale, a, b, nu


def gri30_numpy(t: float, y: np.ndarray, s: float) -> np.ndarray:
    kf, kr, a, b, nu = _scaled(s)
    x = np.append(y, 1.0)
    return nu @ (kf * np.prod(x[a], axis=1) - kr * np.prod(x[b], axis=1))


def gri30_jacobian(t: float, y: np.ndarray, s: float) -> np.ndarray:
    """``df/dy``: each reaction's rate differentiated in each of its species occurrences."""
    kf, kr, a, b, nu = _scaled(s)
    x = np.append(y, 1.0)
    drate = np.zeros((len(kf), SPECIES + 1))
    for species, k, sign in ((a, kf, 1.0), (b, kr, -1.0)):
        for slot in range(species.shape[1]):
            others = np.prod(np.delete(x[species], slot, axis=1), axis=1)
            np.add.at(drate, (np.arange(len(kf)), species[:, slot]), sign * k * others)
    return nu @ drate[:, :SPECIES]


def _jacobian_entries(y: str, scale: str) -> dict:
    """``{(i, m): expression}``: the nonzero ``dy_i' / dy_m``, reaction order."""
    entries: dict = {}
    for j, (kf, kr, a, b) in enumerate(_REACTIONS):
        factor = f" * {scale}" if j == DATA["scaled"] else ""
        for k, species, sign in ((kf, a, 1.0), (kr, b, -1.0)):
            if k == 0.0:
                continue
            for m, count in species.items():
                others = [f"{y}[{o}]" for o, c in species.items() for _ in range(c - (o == m))]
                partial = " * ".join([f"{sign * count * k!r}{factor}", *others])
                for i in set(a) | set(b):
                    nu = b.get(i, 0) - a.get(i, 0)
                    if nu:
                        term = f"{float(nu)!r} * {partial}"
                        entries[i, m] = f"{entries[i, m]} + {term}" if (i, m) in entries \
                            else term
    return entries


@functools.cache
def numba_functions():
    """The module of ``@njit`` ``gri30_rhs(y, p, out)`` and ``gri30_jac(y, p, jac_out)``
    (``stiff_numba``'s model functions, ``p[0]`` the scale ``s``); also bound here as
    ``gri30_rhs`` and ``gri30_jac`` for ``stiff_numba.make_peers``."""
    import peer_numba

    rates = "".join(f"    r{j} = {e}\n" for j, e in enumerate(_rates("y", "s")))
    rhs = "".join(f"    out[{i}] = {e}\n" for i, e in enumerate(_derivatives("r")))
    jac = "".join(f"    jac_out[{i}, {m}] = {e}\n"
                  for (i, m), e in sorted(_jacobian_entries("y", "s").items()))
    source = (f"@njit(nogil=True, error_model='numpy', cache=True)\n"
              f"def gri30_rhs(y, p, out):\n    s = p[0]\n{rates}{rhs}\n\n"
              f"@njit(nogil=True, error_model='numpy', cache=True)\n"
              f"def gri30_jac(y, p, jac_out):\n    s = p[0]\n{jac}")
    module = peer_numba.load_source(source, "stiff_gri30_model")
    globals().update(gri30_rhs=module.gri30_rhs, gri30_jac=module.gri30_jac)
    return module


@functools.cache
def peers() -> dict:
    """``{method: integrator}`` of ``stiff_numba`` for this model."""
    import stiff_numba

    numba_functions()
    return stiff_numba.make_peers("stiff_gri30", "gri30_rhs", "gri30_jac")


def model():
    """A ``stiff_size_peers.Model`` (``s`` per member ``U(0.8, 1.2)``)."""
    import ode_peers
    import stiff_size_peers

    def ensemble(n, seed):
        s = np.random.default_rng(seed).uniform(*stiff_size_peers.SPREAD, n)
        u0 = np.repeat(gri30_start()[:, None], n, axis=1)
        return ode_peers.Ensemble(np.ascontiguousarray(u0), np.ascontiguousarray(s[None, :]))

    return stiff_size_peers.Model("GRI-Mech 3.0 isothermal, 53 species", SPECIES, T1, ensemble,
                                  load, gri30_numpy, gri30_jacobian, peers(), None)
