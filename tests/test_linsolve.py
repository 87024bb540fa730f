"""``linsolve="refined"`` (``hawk.ode.linsolve``): the Rosenbrock methods' stage solves with
one step of iterative refinement, the residual summed in doubled precision.

E5 of the Bari test set (issue 42): its end state hangs on a linear invariant, which each
stage solve's rounding moves by ``h gamma`` times itself; plain elimination misses the
published reference by hundreds to tens of thousands of tolerance units, the refined solve
lands within 10 at rtol 1e-4, 1e-6 and 1e-8. Also: the refined solve against exact rational
arithmetic, every backend against the reference executor, and the refusals.
"""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import eagle
import eagle.ode
import hawk
from backends import target  # noqa: F401  (the fixture)
from differential import assert_bitwise_equal, load_kernel, reference_run
from hawk.ode.linsolve import REFINED_MAX_STATES

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from e5_invariant import ATOL, RATES, REFERENCE, T1, Y0, e5  # noqa: E402  (the test set's E5)


@hawk.func
def decay(u, t, p):
    return -p * u


def _e5_error(method: str, rtol: float, linsolve: str) -> float:
    sol = eagle.ode.solve(e5, np.array(Y0)[:, None], (0.0, T1), p=np.array(RATES)[:, None],
                          method=method, rtol=rtol, atol=ATOL, max_steps=200_000,
                          linsolve=linsolve)
    assert sol.status[0] == 1
    return float(np.max(np.abs(sol.u[:, 0] - REFERENCE) / (ATOL + rtol * np.abs(REFERENCE))))


@pytest.mark.parametrize("rtol", [1e-4, 1e-6, 1e-8])
def test_rodas5p_with_refined_solves_lands_on_e5s_reference(rtol):
    """Within 10 tolerance units of the published end state (plain elimination: 5.5e4, 9.4e3
    and 521 units, ``benchmarks/e5_invariant.py``)."""
    assert _e5_error("rodas5p", rtol, "refined") < 10.0


def test_plain_elimination_is_what_misses_e5():
    """The same solve with ``"lu"`` misses by far more: what ``"refined"`` is for."""
    assert _e5_error("rodas5p", 1e-6, "lu") > 100.0


def _exact_solve(a: np.ndarray, b: np.ndarray) -> list[Fraction]:
    """``a \\ b`` in rational arithmetic (Gauss-Jordan), from the doubles as given."""
    n = len(b)
    m = [[Fraction(float(a[i, j])) for j in range(n)] + [Fraction(float(b[i]))]
         for i in range(n)]
    for c in range(n):
        pivot = next(r for r in range(c, n) if m[r][c] != 0)
        m[c], m[pivot] = m[pivot], m[c]
        for r in range(n):
            if r != c and m[r][c] != 0:
                factor = m[r][c] / m[c][c]
                m[r] = [x - factor * y for x, y in zip(m[r], m[c], strict=True)]
    return [m[i][n] / m[i][i] for i in range(n)]


SOURCE = """\
import hawk
from hawk import Matrix, Out, Terminated
from hawk.ode.linsolve import refined_solve

@hawk.kernel
def solver(w: Matrix[4, 4], b: hawk.Vector[4], terminated: Terminated,
           plain: Out[hawk.Vector[4]], refined: Out[hawk.Vector[4]]):
    plain = hawk.solve(w, b)
    refined = refined_solve(w, b)
    terminated = True
"""


def _ill_conditioned(n: int, samples: int) -> tuple[np.ndarray, np.ndarray]:
    """Hilbert-like matrices (condition about 1e4-1e5) scaled per sample, random right sides."""
    rng = np.random.default_rng(7)
    i, j = np.indices((4, 4))
    hilbert = 1.0 / (i + j + 1.0)
    w = hilbert[:, :, None] * rng.uniform(0.5, 2.0, size=(1, 1, samples)) \
        + 1e-3 * rng.normal(size=(4, 4, samples))
    return w, rng.normal(size=(4, samples))


def test_the_refined_solve_is_correctly_rounded_where_elimination_is_not(tmp_path):
    """On the reference executor: the refined solution within 2 ulp of the exact one for
    every component; plain elimination off by far more on the same systems."""
    kernel = load_kernel(SOURCE, tmp_path, "solver")
    samples = 40
    w, b = _ill_conditioned(4, samples)
    out, _ = reference_run(kernel, dict(w=w, b=b, terminated=np.zeros(samples, bool),
                                        plain=np.zeros((4, samples)),
                                        refined=np.zeros((4, samples))), 1)
    worst_plain = worst_refined = 0.0
    for s in range(samples):
        exact = np.array([float(x) for x in _exact_solve(w[:, :, s], b[:, s])])
        ulp = np.spacing(np.abs(exact))
        worst_plain = max(worst_plain, float(np.max(np.abs(out["plain"][:, s] - exact) / ulp)))
        worst_refined = max(worst_refined,
                            float(np.max(np.abs(out["refined"][:, s] - exact) / ulp)))
    assert worst_refined <= 2.0
    assert worst_plain > 100.0


def test_every_backend_gives_the_reference_executors_bits(tmp_path, target):  # noqa: F811
    kernel = load_kernel(SOURCE, tmp_path, "solver")
    samples = 64
    w, b = _ill_conditioned(4, samples)
    bindings = dict(w=w, b=b, terminated=np.zeros(samples, bool),
                    plain=np.zeros((4, samples)), refined=np.zeros((4, samples)))
    expected, _ = reference_run(kernel, bindings, 1)
    arrays = target.put(bindings)
    eagle.until_done(eagle.deploy(kernel, target.target.device), max_steps=1, **arrays).run()
    assert_bitwise_equal(target.get(arrays), expected)


def test_a_scalar_state_is_refined_by_division():
    """A scalar state: ``x + (b - w x) / w``, the residual exact; the solve still converges."""
    sol = eagle.ode.solve(decay, np.ones(3), (0.0, 2.0), p=np.array([1.0, 1e3, 1e6]),
                          method="rodas5p", rtol=1e-8, atol=1e-12, linsolve="refined")
    assert (sol.status == 1).all()
    np.testing.assert_allclose(sol.u[0], np.exp(-2.0), rtol=1e-7)
    assert np.allclose(sol.u[1:], 0.0, atol=1e-11)


@pytest.mark.parametrize("kwargs, message", [
    (dict(linsolve="qr"), r"linsolve must be one of 'lu', 'refined', 'sparse', got 'qr'"),
    (dict(linsolve="refined", method="dopri5"),
     r"linsolve is for the Rosenbrock methods \('rosenbrock23', 'rodas5p'\), not "
     r"method='dopri5'"),
    (dict(linsolve="refined", u0=np.ones((REFINED_MAX_STATES + 1, 2))),
     rf"linsolve='refined' takes at most {REFINED_MAX_STATES} states .* this system has "
     rf"{REFINED_MAX_STATES + 1}"),
])
def test_refusals_name_linsolve(kwargs, message):
    kwargs = {"u0": np.ones(2), "method": "rodas5p", **kwargs}
    with pytest.raises(ValueError, match=message):
        eagle.ode.solve(decay, kwargs.pop("u0"), (0.0, 1.0), p=0.5, **kwargs)
