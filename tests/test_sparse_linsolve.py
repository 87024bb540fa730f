"""``linsolve="sparse"`` (issue 42): the Rosenbrock stages solved by ``hawk.sparse_solve``, a
static sparse LU over ``W``'s structural nonzeros and their fill, in a Markowitz order fixed at
trace time, without pivoting (``hawk.sparse_lu``).

What is checked: the Markowitz order keeps an arrowhead matrix from filling in (the natural
order fills it completely); a kernel's sparse solve equals the reference executor's bits on
every backend and the host ``hawk.sparse_solve``'s (the same expressions); the pattern a kernel
finds is the Jacobian's structural one, carried through ``scale * I - J``; a matrix with no
structural zero is solved as ``hawk.solve`` solves it; ``rodas5p`` on the Bari test set's POLL
(20 species) lands within a few tolerance units of the published reference; the refusals name
``linsolve`` and ``hawk.sparse_solve``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import eagle
import eagle.ode
import hawk
from backends import target  # noqa: F401  (the fixture)
from differential import (
    adaptive_bindings,
    assert_adaptive_run_matches_reference,
    assert_bitwise_equal,
    load_kernel,
    reference_run,
)
from hawk.ir import DType, Op, OpKind
from hawk.matrix_calls import structural_pattern
from hawk.sparse_lu import SparsePlan, markowitz_order, plan_for
from hawk.values import S

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import stiff_poll  # noqa: E402

SIDE = 7


def _arrowhead(size: int) -> set[tuple[int, int]]:
    """A dense first row and column and the diagonal: the classic pattern that the natural
    order fills completely (eliminating the first pivot touches every other row)."""
    return ({(0, j) for j in range(size)} | {(i, 0) for i in range(size)}
            | {(k, k) for k in range(size)})


def test_the_markowitz_order_keeps_an_arrowhead_from_filling_in():
    size = 12
    natural = SparsePlan.of(_arrowhead(size), size, tuple(range(size)))
    ordered = SparsePlan.of(_arrowhead(size), size)
    assert len(natural.filled) == size * size
    assert len(ordered.filled) == 3 * size - 2  # no fill at all
    assert ordered.order[-2:] == (0, size - 1) or ordered.order[-1] == 0
    assert ordered.multiply_adds == size - 1 < natural.multiply_adds
    assert markowitz_order(frozenset(_arrowhead(size)), size) == ordered.order  # deterministic


def test_zero_by_construction_is_a_constant_zero_and_what_finite_arithmetic_keeps_zero():
    """``structural_pattern``'s rules on a hand-made op list: a product with a zero factor, a
    quotient of a zero, a sum, difference, negation, cast or select of zeros are zero; a
    difference of equal values (zero by value, not by construction) and ``0 / x``'s divisor
    are not, nor is anything loaded."""
    f = DType.FLOAT64
    ops = [Op(OpKind.LOAD, f, (), ("x", None)), Op(OpKind.CONST, f, (), 0.0),  # %0 x, %1 0
           Op(OpKind.CONST, f, (), -0.0), Op(OpKind.CONST, f, (), 2.0),  # %2 -0, %3 2
           Op(OpKind.MUL, f, (0, 1)), Op(OpKind.DIV, f, (1, 0)),  # %4 x*0, %5 0/x
           Op(OpKind.DIV, f, (0, 1)), Op(OpKind.SUB, f, (4, 2)),  # %6 x/0, %7 x*0 - -0
           Op(OpKind.SUB, f, (0, 0)), Op(OpKind.NEG, f, (5,)),  # %8 x-x, %9 -(0/x)
           Op(OpKind.ADD, f, (3, 1)), Op(OpKind.LT, DType.BOOL, (0, 3)),  # %10 2+0, %11 x<2
           Op(OpKind.SELECT, f, (11, 4, 1)), Op(OpKind.SELECT, f, (11, 0, 1))]  # %12, %13
    lowering = type("FakeLowering", (), {"ops": ops})()
    rows = [[S(i, f) for i in (0, 1, 2, 3)], [S(i, f) for i in (4, 5, 6, 7)],
            [S(i, f) for i in (8, 9, 10, 12)], [S(13, f)] * 4]
    zeros = {(0, 1), (0, 2), (1, 0), (1, 1), (1, 3), (2, 1), (2, 3)}
    assert structural_pattern(lowering, rows) == {
        (i, j) for i in range(4) for j in range(4)} - zeros


def test_a_pattern_too_dense_to_pay_is_left_to_the_dense_solve():
    """``plan_for``: None (``hawk.solve``) for a full pattern and for one whose Markowitz
    elimination still makes more than ``DENSE_SHARE`` of the dense multiply-subtracts; the
    arrowhead's plan otherwise."""
    size = 10
    full = {(i, j) for i in range(size) for j in range(size)}
    assert plan_for(full, size) is None
    assert plan_for(full - {(size - 1, 0)}, size) is None
    assert plan_for(_arrowhead(size), size).multiply_adds == size - 1
    rng = np.random.default_rng(5)
    a = rng.normal(size=(4, 4, 3)) + 4.0 * np.eye(4)[:, :, None]
    a[3, 2] = 0.0
    b = rng.normal(size=(4, 3))
    assert_bitwise_equal({"x": hawk.sparse_solve(a, b)}, {"x": hawk.solve(a, b)})


def test_the_host_solve_is_right_on_a_diagonally_dominant_sparse_matrix():
    rng = np.random.default_rng(3)
    a, b = _arrowhead_values(rng, 5), rng.normal(size=(SIDE, 5))
    x = hawk.sparse_solve(a, b)
    for s in range(5):
        np.testing.assert_allclose(x[:, s], np.linalg.solve(a[:, :, s], b[:, s]), rtol=1e-13)


def _arrowhead_values(rng, samples: int) -> np.ndarray:
    a = np.zeros((SIDE, SIDE, samples))
    for i, j in _arrowhead(SIDE):
        a[i, j] = rng.normal(size=samples)
    return a + 8.0 * np.eye(SIDE)[:, :, None]


SOURCE = f"""\
import hawk
from hawk import Matrix, Out, Terminated, Vector


@hawk.kernel
def solver(d: Vector[{SIDE}], top: Vector[{SIDE}], left: Vector[{SIDE}], b: Vector[{SIDE}],
           dense: Matrix[4, 4], terminated: Terminated, x: Out[Vector[{SIDE}]],
           sparse_dense: Out[Vector[4]], solved_dense: Out[Vector[4]],
           sparse_one_zero: Out[Vector[4]], solved_one_zero: Out[Vector[4]]):
    rows = (top,)
    for i in range(1, {SIDE}):
        row = ()
        for j in range({SIDE}):
            row = row + ((left[i] if j == 0 else (d[i] if j == i else 0.0)),)
        rows = rows + (hawk.vector(*row),)
    w = hawk.matrix(*rows)
    x = hawk.sparse_solve(w, b)
    sparse_dense = hawk.sparse_solve(dense, b[0:4])
    solved_dense = hawk.solve(dense, b[0:4])
    one_zero = hawk.matrix(dense[0], dense[1], dense[2],
                           hawk.vector(dense[3, 0], dense[3, 1], 0.0, dense[3, 3]))
    sparse_one_zero = hawk.sparse_solve(one_zero, b[0:4])
    solved_one_zero = hawk.solve(one_zero, b[0:4])
    terminated = True
"""


def _bindings(samples: int) -> tuple[dict, np.ndarray]:
    rng = np.random.default_rng(11)
    a = _arrowhead_values(rng, samples)
    dense = rng.normal(size=(4, 4, samples)) + 4.0 * np.eye(4)[:, :, None]
    bindings = dict(d=np.stack([a[k, k] for k in range(SIDE)]), top=a[0], left=a[:, 0],
                    b=rng.normal(size=(SIDE, samples)), dense=dense,
                    terminated=np.zeros(samples, bool), x=np.zeros((SIDE, samples)),
                    sparse_dense=np.zeros((4, samples)), solved_dense=np.zeros((4, samples)),
                    sparse_one_zero=np.zeros((4, samples)),
                    solved_one_zero=np.zeros((4, samples)))
    return bindings, a


def test_a_kernels_sparse_solve_is_the_hosts_and_a_dense_matrix_is_solved_as_hawk_solve(
        tmp_path):
    """On the reference executor: the arrowhead's solve is the host ``hawk.sparse_solve``'s,
    bit for bit (its pattern, from the values, is the kernel's structural one), and a matrix
    with no structural zero (a ``Matrix`` argument), or with one zero (an ordered elimination
    as costly as the dense one: ``DENSE_SHARE``), gets ``hawk.solve``'s bits."""
    kernel = load_kernel(SOURCE, tmp_path, "solver")
    bindings, a = _bindings(24)
    out, _ = reference_run(kernel, bindings, 1)
    assert_bitwise_equal({"x": out["x"]}, {"x": hawk.sparse_solve(a, bindings["b"])})
    assert_bitwise_equal({"x": out["sparse_dense"]}, {"x": out["solved_dense"]})
    assert_bitwise_equal({"x": out["sparse_one_zero"]}, {"x": out["solved_one_zero"]})
    for s in range(24):
        np.testing.assert_allclose(out["x"][:, s], np.linalg.solve(a[:, :, s],
                                                                   bindings["b"][:, s]),
                                   rtol=1e-13)


def test_every_backend_gives_the_reference_executors_bits(tmp_path, target):  # noqa: F811
    kernel = load_kernel(SOURCE, tmp_path, "solver")
    bindings, _ = _bindings(64)
    expected, _ = reference_run(kernel, bindings, 1)
    arrays = target.put(bindings)
    eagle.until_done(eagle.deploy(kernel, target.target.device), max_steps=1, **arrays).run()
    assert_bitwise_equal(target.get(arrays), expected)


STAGE = """

@hawk.kernel
def stage(u: hawk.Vector[20], s: hawk.Scalar, scale: hawk.Scalar, b: hawk.Vector[20],
          terminated: hawk.Terminated, x: hawk.Out[hawk.Vector[20]]):
    w = scale * hawk.identity(20) - hawk.jacobian(poll, u, 0.0, s)
    x = hawk.sparse_solve(w, b)
    terminated = True
"""


def test_the_pattern_is_the_jacobians_structural_one(tmp_path):
    """A POLL stage's ``W = scale I - J`` solved in a kernel: no whole-matrix op, and at most
    the divisions the plan of POLL's Jacobian pattern makes (one per factor, one per
    component), far fewer than the dense elimination's ``n (n - 1) / 2 + n``: the structural
    zeros of ``hawk.jacobian`` survived ``scale * I - J``. And the solution is right."""
    n, samples = stiff_poll.SPECIES, 6
    kernel = load_kernel(stiff_poll.poll_source("poll") + STAGE, tmp_path, "stage")
    kinds = [op.kind for op in kernel.specialize({}).ops]
    rng = np.random.default_rng(1)
    u = rng.uniform(0.1, 1.0, (n, samples))
    jacs = [stiff_poll.poll_jacobian(0.0, u[:, i], 1.0) for i in range(samples)]
    pattern = {(int(i), int(j)) for i, j in zip(*np.nonzero(jacs[0]), strict=True)}
    plan = SparsePlan.of(pattern, n)
    assert hawk.ir.OpKind.LU not in kinds
    # at most: factors of equal elements (two species made by one reaction) are merged
    assert n < kinds.count(hawk.ir.OpKind.DIV) <= plan.divisions + n < n * (n - 1) // 2 + n
    scale, b = 1e4, rng.normal(size=(n, samples))
    out, _ = reference_run(kernel, dict(u=u, s=np.ones(samples), scale=scale, b=b,
                                        terminated=np.zeros(samples, bool),
                                        x=np.zeros((n, samples))), 1)
    for i in range(samples):
        np.testing.assert_allclose(out["x"][:, i],
                                   np.linalg.solve(scale * np.eye(n) - jacs[i], b[:, i]),
                                   rtol=1e-12)


def test_the_poll_step_kernel_on_every_backend(target, tmp_path):  # noqa: F811
    """POLL's ``rodas5p`` step with ``"sparse"`` on the CPU and the generated CUDA: the same
    steps as the reference executor."""
    f = stiff_poll.load(tmp_path)
    n, members = stiff_poll.SPECIES, 4
    kernel = hawk.ode.dopri5_kernel(f, hawk.Vector[n], hawk.Scalar, saveat=True,
                                    method="rodas5p", linsolve="sparse")
    s = np.linspace(0.8, 1.2, members)
    u0 = np.repeat(stiff_poll.poll_start()[:, None], members, axis=1)
    k1 = np.stack([stiff_poll.poll_numpy(0.0, u0[:, i], s[i]) for i in range(members)], axis=1)
    bindings = adaptive_bindings(s, u0, k1, t_end=1.0, rtol=1e-6, atol=1e-6, h=1e-6,
                                 save_every=0.5, save_count=3)
    assert_adaptive_run_matches_reference(target, kernel, bindings, 2000)


@pytest.mark.parametrize("method, rtol, bound", [("rodas5p", 1e-6, 3.0),
                                                 ("rodas5p", 1e-8, 3.0),
                                                 ("rosenbrock23", 1e-6, 3.0)])
def test_poll_with_sparse_solves_lands_on_the_test_sets_reference(tmp_path, method, rtol,
                                                                   bound):
    """Within a few tolerance units (``atol + rtol |u_ref|``, atol = rtol) of the published
    end state at t = 60, every member done; ``"lu"`` lands as close (0.02 and 0.2 units for
    ``rodas5p``)."""
    f = stiff_poll.load(tmp_path)
    ref = np.array(stiff_poll.REFERENCE_T60)
    u0 = np.repeat(stiff_poll.poll_start()[:, None], 2, axis=1)
    sol = eagle.ode.solve(f, u0, (0.0, stiff_poll.T1), p=np.ones(2), method=method,
                          rtol=rtol, atol=rtol, linsolve="sparse")
    assert (sol.status == 1).all()
    units = np.abs(sol.u[:, 0] - ref) / (rtol + rtol * np.abs(ref))
    assert units.max() < bound


@hawk.func
def decay(u, t, p):
    return -p * u


@pytest.mark.parametrize("kwargs, message", [
    (dict(linsolve="band"), r"linsolve must be one of 'lu', 'refined', 'sparse', got 'band'"),
    (dict(linsolve="sparse", method="tsit5"),
     r"linsolve is for the Rosenbrock methods \('rosenbrock23', 'rodas5p'\), not "
     r"method='tsit5'"),
])
def test_refusals_name_linsolve(kwargs, message):
    kwargs = {"u0": np.ones(2), "method": "rodas5p", **kwargs}
    with pytest.raises(ValueError, match=message):
        eagle.ode.solve(decay, kwargs.pop("u0"), (0.0, 1.0), p=0.5, **kwargs)


def test_a_scalar_state_is_solved_by_division():
    sol = eagle.ode.solve(decay, np.ones(2), (0.0, 2.0), p=np.array([1.0, 1e4]),
                          method="rodas5p", rtol=1e-8, atol=1e-12, linsolve="sparse")
    assert (sol.status == 1).all()
    np.testing.assert_allclose(sol.u[0], np.exp(-2.0), rtol=1e-7)


def test_sparse_solve_refusals_name_it(tmp_path):
    bad = SOURCE.replace("hawk.sparse_solve(w, b)", "hawk.sparse_solve(w, b[0:4])")
    with pytest.raises(hawk.CompileError,
                       match=r"hawk.sparse_solve\(a, b\) needs b of 7 rows for a Matrix\[7, 7\]"):
        load_kernel(bad, tmp_path, "solver")
    with pytest.raises(ValueError, match=r"sparse_solve\(\) takes a square matrix"):
        hawk.sparse_solve(np.ones((3, 2)), np.ones(3))
    with pytest.raises(ValueError, match=r"sparse_solve\(\) needs b of 3 rows, got 2"):
        hawk.sparse_solve(np.eye(3), np.ones(2))


def test_adjoint_gradients_through_sparse_solves_agree_with_lu(tmp_path):
    """``adjoint=True`` differentiates the sparse stage solves (straight-line scalar ops) as
    it does ``"lu"``'s: the same gradient on POLL over a short span, to the solve's own
    accuracy (the two solves' steps round differently, rtol 1e-8)."""
    f = stiff_poll.load(tmp_path)
    u0 = np.repeat(stiff_poll.poll_start()[:, None], 2, axis=1)
    grads = {}
    for linsolve in ("lu", "sparse"):
        sol = eagle.ode.solve(f, u0, (0.0, 1.0), p=np.array([1.0, 1.1]), method="rodas5p",
                              rtol=1e-8, atol=1e-8, linsolve=linsolve, adjoint=True)
        grads[linsolve] = sol.vjp(du=np.ones_like(sol.u))
    np.testing.assert_allclose(grads["sparse"].p, grads["lu"].p, rtol=1e-6)
    np.testing.assert_allclose(grads["sparse"].u0, grads["lu"].u0, rtol=1e-6, atol=1e-12)
