"""Stiff models of any size for the stiff methods' tests and benchmarks (issue 42).

Hairer's Brusselator with diffusion (Hairer and Wanner, *Solving Ordinary Differential
Equations II*, section IV.10, problem BRUSS in one space dimension): ``cells`` grid points
``x_i = i / (cells + 1)``, two species each, ``2 cells`` states interleaved
``(u_1, v_1, u_2, v_2, ...)`` (so the Jacobian is banded, bandwidth 2)::

    u_i' = 1 + u_i^2 v_i - 4 u_i + a (cells + 1)^2 (u_{i-1} - 2 u_i + u_{i+1})
    v_i' = 3 u_i - u_i^2 v_i     + a (cells + 1)^2 (v_{i-1} - 2 v_i + v_{i+1})

with the boundary values ``u_0 = u_{cells+1} = 1``, ``v_0 = v_{cells+1} = 3``, the diffusion
``a`` the parameter (1/50 in the book; one per sample here), and the start
``u_i = 1 + sin(2 pi x_i)``, ``v_i = 3``. Stiff through the diffusion term for many cells.

``brusselator_source(cells)`` is the model as a ``@hawk.func`` written out for ``cells`` (hawk
reads a func's source from its file: ``load`` writes it to a folder and imports it);
``brusselator_numpy`` is the same right-hand side on NumPy arrays (for SciPy's ``solve_ivp``),
and ``brusselator_jacobian`` its Jacobian.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np

__all__ = ["brusselator_source", "load", "brusselator_numpy", "brusselator_jacobian",
           "brusselator_start"]


def _neighbour(cells: int, i: int, species: int) -> str:
    if i < 0 or i >= cells:
        return "1.0" if species == 0 else "3.0"
    return f"u[{2 * i + species}]"


def brusselator_source(cells: int, name: str = "brusselator") -> str:
    """The Brusselator of ``cells`` cells (``2 cells`` states) as a ``@hawk.func name(u, t,
    a)``, one expression per component."""
    scale = float((cells + 1) ** 2)
    comps = []
    for i in range(cells):
        u, v = f"u[{2 * i}]", f"u[{2 * i + 1}]"
        du = (f"1.0 + {u} * {u} * {v} - 4.0 * {u} + d * ({_neighbour(cells, i - 1, 0)} "
              f"- 2.0 * {u} + {_neighbour(cells, i + 1, 0)})")
        dv = (f"3.0 * {u} - {u} * {u} * {v} + d * ({_neighbour(cells, i - 1, 1)} "
              f"- 2.0 * {v} + {_neighbour(cells, i + 1, 1)})")
        comps += [du, dv]
    body = ",\n        ".join(comps)
    return (f"import hawk\n\n\n@hawk.func\ndef {name}(u, t, a):\n    d = a * {scale!r}\n"
            f"    return hawk.vector(\n        {body})\n")


def load(cells: int, folder: Path, name: str = "brusselator"):
    """The ``@hawk.func`` of ``brusselator_source(cells)``, written to ``folder`` and imported."""
    path = Path(folder) / f"{name}_{cells}.py"
    path.write_text(brusselator_source(cells, name))
    spec = importlib.util.spec_from_file_location(f"stiff_models_{name}_{cells}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def brusselator_start(cells: int) -> np.ndarray:
    """The start ``(u_1, v_1, ...)``: ``u_i = 1 + sin(2 pi x_i)``, ``v_i = 3``."""
    x = np.arange(1, cells + 1) / (cells + 1)
    start = np.empty(2 * cells)
    start[0::2], start[1::2] = 1.0 + np.sin(2.0 * math.pi * x), 3.0
    return start


def brusselator_numpy(t: float, y: np.ndarray, a: float) -> np.ndarray:
    """The right-hand side on a state ``y`` of ``2 cells`` components (SciPy's order)."""
    cells = len(y) // 2
    u = np.concatenate(([1.0], y[0::2], [1.0]))
    v = np.concatenate(([3.0], y[1::2], [3.0]))
    d = a * (cells + 1) ** 2
    ui, vi = u[1:-1], v[1:-1]
    out = np.empty_like(y)
    out[0::2] = 1.0 + ui * ui * vi - 4.0 * ui + d * (u[:-2] - 2.0 * ui + u[2:])
    out[1::2] = 3.0 * ui - ui * ui * vi + d * (v[:-2] - 2.0 * vi + v[2:])
    return out


def brusselator_jacobian(t: float, y: np.ndarray, a: float) -> np.ndarray:
    """``d brusselator_numpy / dy``."""
    cells = len(y) // 2
    d = a * (cells + 1) ** 2
    jac = np.zeros((2 * cells, 2 * cells))
    for i in range(cells):
        u, v = y[2 * i], y[2 * i + 1]
        iu, iv = 2 * i, 2 * i + 1
        jac[iu, iu] = 2.0 * u * v - 4.0 - 2.0 * d
        jac[iu, iv] = u * u
        jac[iv, iu] = 3.0 - 2.0 * u * v
        jac[iv, iv] = -u * u - 2.0 * d
        for j in (i - 1, i + 1):
            if 0 <= j < cells:
                jac[iu, 2 * j] = d
                jac[iv, 2 * j + 1] = d
    return jac
