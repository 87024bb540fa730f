"""The Rosenbrock methods' linear solves, chosen by name (``eagle.ode.solve(linsolve=...)``).

- ``"lu"`` (the default): ``hawk.solve``, Gaussian elimination with partial pivoting (a division
  for a scalar state).
- ``"refined"``: the same solve plus one step of iterative refinement, ``x + W \\ r`` with the
  residual ``r = b - W x`` summed in doubled precision (Ogita, Rump and Oishi's Dot2: Dekker's
  exact product and Knuth's exact sum, no FMA needed) and rounded once; the correction reuses
  the factorisation.
- ``"sparse"``: ``hawk.sparse_solve``, a static sparse LU (``hawk.sparse_lu``): elimination
  over ``W``'s structural nonzeros (the Jacobian's pattern, as ``hawk.jacobian`` or the user's
  ``jac`` builds it, plus the diagonal) and their fill only, the pivots in a fill-reducing
  Markowitz order chosen at trace time, written out straight-line. No partial pivoting, as
  the chemistry solvers KPP generates and the pyJac-based GPU integrators do: ``W = I / (h
  gamma) - J``'s diagonal dominates for the small ``h gamma`` of a stiff solve, and a step too
  large for it is rejected by its error estimate as any bad step is. So the bits differ from
  ``"lu"``'s. A ``W`` too dense for it to pay (no structural zero, or an ordered elimination
  still above half the dense one's work: ``hawk.sparse_lu.DENSE_SHARE``) is solved as ``"lu"``
  solves it (falling back, rather than refusing: how sparse a model's Jacobian is is the
  model's business, and the dense solve with pivoting is the right one for a dense ``W``).

Why a second solve exists: a Rosenbrock stage solves ``W k = rhs`` with ``W = I / (h gamma) -
J``. Along a linear invariant of the model ``J`` has a zero eigenvalue, so ``W``'s is
``1 / (h gamma)`` and the solve multiplies the rounding of its own elimination by ``h gamma``
(about 1e3 on the Bari test set's E5). The invariant then drifts, and on E5 the end state,
which hangs on it, misses the reference by thousands of tolerance units at every tolerance
(``benchmarks/e5_invariant.py``). An exact residual removes the elimination's rounding; what
is left is the model's own rounding at the stage points. The refinement costs about
``25 n**2`` more ops per solve, written out, so it is offered for up to ``REFINED_MAX_STATES``
states and is not the default.
"""

from __future__ import annotations

import functools

import hawk

from .rosenbrock import _solve, automatic_jacobian

__all__ = ["LINSOLVES", "REFINED_MAX_STATES", "refined_solve", "sparse_stage_solve",
           "two_product", "two_sum", "with_linsolve"]

#: the most states ``"refined"`` takes (its residual is written out, about 25 n**2 ops a solve)
REFINED_MAX_STATES = 8
_SPLITTER = 134217729.0  # 2**27 + 1, Veltkamp's


@hawk.func
def two_sum(a, b):
    """``(s, e)``: ``s = fl(a + b)`` and ``a + b == s + e`` exactly (Knuth)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@hawk.func
def two_product(a, b):
    """``(p, e)``: ``p = fl(a b)`` and ``a b == p + e`` exactly (Dekker), barring overflow."""
    p = a * b
    ca = _SPLITTER * a
    a_hi = ca - (ca - a)
    a_lo = a - a_hi
    cb = _SPLITTER * b
    b_hi = cb - (cb - b)
    b_lo = b - b_hi
    return p, ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo


@hawk.func
def refined_solve(w, b):
    """``w \\ b`` corrected once by ``w \\ r``, ``r = b - w x`` summed in doubled precision.

    Args:
        w: the matrix (a ``Matrix[k, k]``; a number for a scalar ``b``).
        b: the right-hand side (a ``Vector[k]`` or a number).
    """
    x = _solve(w, b)
    if hawk.width(b) == 1:
        product, product_error = two_product(w, x)
        s, sum_error = two_sum(b, -product)
        return x + (s + (sum_error - product_error)) / w
    residual = ()
    for i in range(hawk.width(b)):
        products, errors = two_product(w[i], x)
        s = b[i]
        carried = 0.0
        for j in range(hawk.width(b)):
            s, sum_error = two_sum(s, -products[j])
            carried = carried + (sum_error - errors[j])
        residual = residual + (s + carried,)
    return x + hawk.solve(w, hawk.vector(*residual))


@hawk.func
def sparse_stage_solve(w, b):
    """``w \\ b`` by ``hawk.sparse_solve`` (a division for a scalar state): ``"sparse"``.

    Args:
        w: the matrix (a ``Matrix[k, k]``; a number for a scalar ``b``).
        b: the right-hand side (a ``Vector[k]`` or a number).
    """
    if hawk.width(b) == 1:
        return b / w
    return hawk.sparse_solve(w, b)


#: ``linsolve=`` names and the solve each one picks
LINSOLVES = {"lu": _solve, "refined": refined_solve, "sparse": sparse_stage_solve}


def with_linsolve(method, name: str):
    """``method``'s attempt (a ``hawk.ode.Method``) solving its stages with
    ``LINSOLVES[name]``: the attempt itself for ``"lu"``, so its kernels lower exactly as
    before; another name is for the Rosenbrock methods only."""
    if name not in LINSOLVES:
        raise ValueError(f"linsolve must be one of {', '.join(map(repr, LINSOLVES))}, "
                         f"got {name!r}")
    if name == "lu":
        return method.attempt
    if not method.implicit:
        raise ValueError(f"linsolve is for the Rosenbrock methods, not method={method.name!r}")
    return _solving(method.attempt, LINSOLVES[name])


@functools.cache
def _solving(attempt, linsolve):
    @hawk.func
    def solving(f, u, k1, t, h, p, jac=automatic_jacobian):
        return attempt(f, u, k1, t, h, p, jac, linsolve)

    return solving
