"""Solves above ``hawk.linalg.UNROLLED_SIDE`` run as the IR's whole-matrix ops (``LU``,
``LU_SOLVE``, ``PART``), which the backends render as loops: the same bits as the algorithm
written out op by op (``hawk.solve`` on NumPy arrays, and a kernel compiled with the limit
raised), on the reference executor, the CPU and the generated CUDA; code that grows with n * n;
derivatives through them; and the IR checker's rules for them."""

from __future__ import annotations

import re

import numpy as np
import pytest

import eagle
import hawk
from backends import target  # noqa: F401  (the fixture)
from differential import assert_bitwise_equal, load_kernel, reference_run
from hawk import linalg
from hawk.ir import AGGREGATES, Op, OpKind, Program

SIZES = [linalg.UNROLLED_SIDE + 1, 12]


def _source(size: int, columns: int = 0) -> str:
    right = f"Matrix[{size}, {columns}]" if columns else f"hawk.Vector[{size}]"
    return f"""\
import hawk
from hawk import Matrix, Mutable, Out, Terminated

@hawk.kernel
def solver(a: Matrix[{size}, {size}], b: {right}, y: Mutable[hawk.Vector[{size}]],
           terminated: Terminated, x: Out[{right}], inv: Out[Matrix[{size}, {size}]]):
    x = hawk.solve(a, b)
    inv = hawk.inverse(a)
    w = a + hawk.outer(y, y) * 1e-3
    y = hawk.solve(w, y) + hawk.solve(w, y * 2.0)  # one factorisation, two solves
    terminated = y[0] != y[0]
"""


def _bindings(size: int, n: int, columns: int = 0, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(size, size, n)) + size * np.eye(size)[:, :, None]
    b = rng.normal(size=(size, columns, n) if columns else (size, n))
    return dict(a=a, b=b, y=rng.normal(size=(size, n)), terminated=np.zeros(n, bool),
                x=np.zeros_like(b), inv=np.zeros((size, size, n)))


def _kinds(kernel) -> dict[str, int]:
    program = kernel.specialize({})
    return {k.value: sum(op.kind is k for op in program.ops)
            for k in (OpKind.LU, OpKind.LU_SOLVE, OpKind.PART, OpKind.SELECT)}


@pytest.mark.parametrize("size", SIZES)
def test_loops_give_the_bits_of_the_written_out_elimination(tmp_path, size):
    kernel = load_kernel(_source(size, 3), tmp_path, "solver")
    counts = _kinds(kernel)
    # x and inv share a's factorisation; the two solves of y share w's: 2 LU, 4 LU_SOLVE
    assert counts["lu"] == 2 and counts["lu_solve"] == 4 and counts["select"] == 0
    bindings = _bindings(size, 40, columns=3)
    expected, _ = reference_run(kernel, bindings, 3)
    a, b = bindings["a"], bindings["b"]
    assert_bitwise_equal({"x": expected["x"], "inv": expected["inv"]},
                         {"x": hawk.solve(a, b), "inv": hawk.inverse(a)})
    (tmp_path / "unrolled").mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(linalg, "UNROLLED_SIDE", 64)
        unrolled = load_kernel(_source(size, 3), tmp_path / "unrolled", "solver")
        assert _kinds(unrolled)["lu"] == 0
        written_out, _ = reference_run(unrolled, bindings, 3)
    assert_bitwise_equal(expected, written_out)


@pytest.mark.filterwarnings("ignore::eagle.TruncationWarning")  # 5 steps of a longer run
@pytest.mark.parametrize("size", SIZES)
def test_every_backend_equals_the_reference(target, tmp_path, size):  # noqa: F811
    kernel = load_kernel(_source(size), tmp_path, "solver")
    bindings = _bindings(size, 70, seed=size)
    expected, steps = reference_run(kernel, bindings, 5)
    arrays = target.put(bindings)
    report = eagle.until_done(eagle.deploy(kernel, target.target.device), max_steps=5,
                              **arrays).run()
    assert_bitwise_equal(target.get(arrays), expected)
    assert report.steps == steps == 5


def test_a_singular_matrix_gives_inf_or_nan_on_every_backend_as_the_reference(tmp_path):
    """Zero, repeated and NaN columns: the CPU gives the reference's bits; every solution is
    non-finite somewhere, as the written-out elimination's is; where nothing is singular, the
    written-out bits. (The two differ inside a singular solve: a skipped zero-factor step does
    not spread ``0 * inf = nan`` into rows it would not change: ``hawk.linalg``'s "Sizes".)"""
    size = linalg.UNROLLED_SIDE + 1
    kernel = load_kernel(_source(size), tmp_path, "solver")
    bindings = _bindings(size, 4)
    bindings["a"][:, :, 1] = 0.0
    bindings["a"][3, :, 2] = bindings["a"][5, :, 2]  # two equal rows
    bindings["a"][:, 0, 3] = np.nan
    with np.errstate(all="ignore"):
        expected, _ = reference_run(kernel, bindings, 1)
        arrays = {k: v.copy() for k, v in bindings.items()}
        eagle.until_done(eagle.deploy(kernel, "cpu"), max_steps=1, **arrays).run()
        assert_bitwise_equal(arrays, expected)
        written_out = hawk.solve(bindings["a"], bindings["b"])
    assert_bitwise_equal({"x": arrays["x"][:, :1]}, {"x": written_out[:, :1]})
    assert not np.isfinite(arrays["x"][:, 1:]).all(axis=0).any()
    assert not np.isfinite(written_out[:, 1:]).all(axis=0).any()


def _banded_source(size: int) -> str:
    return f"""\
import hawk
from hawk import Matrix, Mutable, Terminated

@hawk.kernel
def banded(a: Matrix[{size}, {size}], y: Mutable[hawk.Vector[{size}]], terminated: Terminated):
    y = hawk.solve(a, y)
    terminated = y[0] != y[0]
"""


@pytest.mark.filterwarnings("ignore::eagle.TruncationWarning")
def test_a_banded_matrix_skips_its_zeros_and_keeps_the_bits(target, tmp_path):  # noqa: F811
    """A tridiagonal system, whose factors and eliminated elements are mostly exact zeros:
    the skipped subtractions change no bit (every backend against the reference, and the
    reference against the written-out elimination), and the block of mostly one value is
    filled by a loop."""
    size = 12
    kernel = load_kernel(_banded_source(size), tmp_path, "banded")
    rng = np.random.default_rng(3)
    n = 20
    a = np.zeros((size, size, n))
    for i in range(size):
        a[i, i] = 4.0 + rng.uniform(size=n)
        if i:
            a[i, i - 1], a[i - 1, i] = rng.normal(size=n), rng.normal(size=n)
    bindings = dict(a=a, y=rng.normal(size=(size, n)), terminated=np.zeros(n, bool))
    expected, _ = reference_run(kernel, bindings, 3)
    written_out = bindings["y"]
    for _ in range(3):
        written_out = hawk.solve(a, written_out)
    assert_bitwise_equal({"y": expected["y"]}, {"y": written_out})
    arrays = target.put(bindings)
    eagle.until_done(eagle.deploy(kernel, target.target.device), max_steps=3, **arrays).run()
    assert_bitwise_equal(target.get(arrays), expected)


def test_code_grows_with_the_square_of_the_size_not_the_cube(tmp_path):
    ops = {}
    for size in (16, 32, 64):
        source = f"""\
import hawk
from hawk import Mutable, Terminated

@hawk.func
def tridiagonal(u):
    return hawk.concat(u[0] * 2.0 - u[1], hawk.zeros({size - 2}) + u[1], u[{size - 1}] * 2.0)

@hawk.kernel
def big(u: Mutable[hawk.Vector[{size}]], terminated: Terminated):
    w = hawk.identity({size}) * 4.0 - hawk.jacobian(tridiagonal, u)
    u = hawk.solve(w, u)
    terminated = u[0] != u[0]
"""
        (tmp_path / str(size)).mkdir()
        ops[size] = len(load_kernel(source, tmp_path / str(size), "big").specialize({}).ops)
    # n * n elements of w, not n**3 / 3 multiply-adds: doubling n at most quadruples the ops
    assert ops[64] < 4.5 * ops[32] < 4.5 * 4.5 * ops[16]
    assert ops[64] < 3 * 64 * 64


@hawk.func
def _solved(a, b):
    return hawk.solve(a, b)


def test_forward_and_reverse_derivatives_through_the_loops(tmp_path):
    size = linalg.UNROLLED_SIDE + 2
    source = f"""\
import hawk
from hawk import Matrix, Out, Terminated

@hawk.func
def solved(b, a):
    return hawk.solve(a * (1.0 + b[0] * b[1]), b * b)

@hawk.func
def loss(b, a):
    x = solved(b, a)
    return hawk.dot(x, x)

@hawk.kernel
def derivatives(a: Matrix[{size}, {size}], b: hawk.Vector[{size}], db: hawk.Vector[{size}],
                terminated: Terminated, x: Out[hawk.Vector[{size}]],
                dx: Out[hawk.Vector[{size}]], g: Out[hawk.Vector[{size}]]):
    x, dx = hawk.jvp(solved, b, db, a)
    g = hawk.grad(loss, b, a)
    terminated = True
"""
    kernel = load_kernel(source, tmp_path, "derivatives")
    assert _kinds(kernel)["lu"] >= 1
    rng = np.random.default_rng(5)
    n = 6
    a = rng.normal(size=(size, size, n)) + size * np.eye(size)[:, :, None]
    b, db = rng.normal(size=(size, n)), rng.normal(size=(size, n))
    arrays = dict(a=a, b=b, db=db, terminated=np.zeros(n, bool), x=np.zeros((size, n)),
                  dx=np.zeros((size, n)), g=np.zeros((size, n)))
    expected, _ = reference_run(kernel, arrays, 1)
    eagle.until_done(eagle.deploy(kernel, "cpu"), max_steps=1, **arrays).run()
    assert_bitwise_equal(arrays, expected)

    def solved(bb, k):
        return np.linalg.solve(a[:, :, k] * (1.0 + bb[0] * bb[1]), bb * bb)

    for k in range(n):
        step = 1e-6
        central = (solved(b[:, k] + step * db[:, k], k) - solved(b[:, k] - step * db[:, k], k))
        np.testing.assert_allclose(arrays["dx"][:, k], central / (2 * step), rtol=1e-7,
                                   atol=1e-9)
        gradient = np.array([(np.sum(solved(b[:, k] + step * e, k) ** 2)
                              - np.sum(solved(b[:, k] - step * e, k) ** 2)) / (2 * step)
                             for e in np.eye(size)])
        np.testing.assert_allclose(arrays["g"][:, k], gradient, rtol=1e-6, atol=1e-8)


def test_the_checker_names_what_a_block_may_not_be():
    f64 = hawk.ir.DType.FLOAT64
    one = Op(OpKind.CONST, f64, attr=1.0)
    lu = Op(OpKind.LU, f64, (0, 0, 0, 0), 2)
    solve = Op(OpKind.LU_SOLVE, f64, (1, 0, 0), (2, 1))
    cases = {
        "an lu's attr is its size": [one, Op(OpKind.LU, f64, (0,), 0)],
        "lu takes 4 argument(s), got 3": [one, Op(OpKind.LU, f64, (0, 0, 0), 2)],
        "an lu_solve's first argument is an lu of size 3": [
            one, lu, Op(OpKind.LU_SOLVE, f64, (1, 0, 0, 0), (3, 1))],
        "a part's argument is an lu_solve": [one, lu, Op(OpKind.PART, f64, (1,), 0)],
        "a part's attr is an element index below 2": [one, lu, solve,
                                                      Op(OpKind.PART, f64, (2,), 2)],
        "only lu_solve and part read": [one, lu, solve, Op(OpKind.ADD, f64, (2, 0))],
    }
    for rule, ops in cases.items():
        program = Program(name="blocks", params=(), ops=tuple(ops), stores=(), terminated=None)
        with pytest.raises(hawk.IRError, match=re.escape(rule)):
            hawk.passes.check(program)
    assert AGGREGATES == {OpKind.LU, OpKind.LU_SOLVE}


def test_hawk_ir_stats_counts_the_ops_and_the_blocks(tmp_path, capsys):
    from hawk.__main__ import main

    (tmp_path / "solver.py").write_text(_source(12))
    assert main(["ir", f"{tmp_path / 'solver.py'}:solver", "--stats"]) == 0
    out = capsys.readouterr().out
    total = len(load_kernel(_source(12), tmp_path, "solver").specialize({}).ops)
    assert out.startswith(f"solver: {total} ops\n")
    assert "  block lu 12: 2\n" in out and "  block lu_solve (12, 1): 3" in out
