"""Elementwise math on vectors and matrices (issue 43, item 2): every function of hawk's math
table (``hawk.ir.MATH_FUNCTIONS``), ``abs``, ``min``/``max`` and ``hawk.maximum``/``minimum``
applied to a ``Vec3`` and a ``Matrix[2, 2]`` give a value of that shape, component by
component, a number argument broadcast, as NumPy's ufuncs do.

Checked: against the C library's function per component (bit for bit, what the reference
executor and the CPU backend call) and NumPy's ufunc (within a few ulps); on every backend
against the reference executor; through NVRTC in float64 and float32; derivatives
(``hawk.jvp``, ``hawk.jacobian``) equal to the scalar rule per component, bit for bit; and a
neural right-hand side ``W2 @ tanh(W1 @ u + b1) + b2`` written with ``math.tanh`` of a vector,
bit-identical to a hand-written component loop. Before this, ``math.tanh(v)`` was a
``CompileError`` ("expected a scalar here").
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special

import eagle
import hawk
from backends import target  # noqa: F401  (the fixture)
from differential import assert_matches_reference, load_kernel, reference_run
from hawk.ir import MATH_FUNCTIONS
from hawk.reference import step

#: the function a case calls and its arguments: ``{v}`` positive components (in (0.05, 0.95)),
#: ``{x}`` signed ones (in (-1.8, 1.8)), ``{w}`` a second positive value of the same shape,
#: ``{s}`` a number (broadcast)
_POSITIVE = {"sqrt", "log", "log10", "log1p", "asin", "acos"}
CASES = {name: (f"math.{name}", "{v}" if name in _POSITIVE else "{x}")
         for name, arity in MATH_FUNCTIONS.items() if arity == 1}
CASES.update({
    "pow": ("math.pow", "{v}, {w}"),
    "pow_number": ("math.pow", "{v}, 2.5"),
    "atan2": ("math.atan2", "{x}, {w}"),
    "hypot": ("math.hypot", "{x}, {s}"),
    "abs": ("abs", "{x}"),
    "min": ("min", "{x}, {w}, {s}"),
    "max": ("max", "{x}, 0.0"),
    "maximum": ("hawk.maximum", "{x}, {w}"),
    "minimum": ("hawk.minimum", "{s}, {x}"),
})

VECTOR = {"v": "v", "x": "(4.0 * v - 2.0)", "w": "w", "s": "s"}
MATRIX = {"v": "m", "x": "(4.0 * m - 2.0)", "w": "mw", "s": "s"}

_UFUNC_NAMES = {"fabs": "abs", "asin": "arcsin", "acos": "arccos", "atan": "arctan",
                "atan2": "arctan2", "pow": "power"}


def _call(case: str, names: dict) -> str:
    function, arguments = CASES[case]
    return f"{function}({arguments.format(**names)})"


def _source() -> str:
    outputs = ", ".join(f"o_{case}: Out[Vector[7]]" for case in CASES)
    body = "\n".join(f"    o_{case} = hawk.concat({_call(case, VECTOR)}, {_call(case, MATRIX)})"
                     for case in CASES)
    return f"""\
import math

import hawk
from hawk import Matrix, Out, Scalar, Vec3, Vector


@hawk.kernel
def elementwise(v: Vec3, w: Vec3, m: Matrix[2, 2], mw: Matrix[2, 2], s: Scalar, {outputs}):
{body}
"""


N = 129


def _bindings(n: int = N) -> dict:
    rng = np.random.default_rng(43)
    inputs = dict(v=rng.uniform(0.05, 0.95, (3, n)), w=rng.uniform(0.05, 0.95, (3, n)),
                  m=rng.uniform(0.05, 0.95, (2, 2, n)), mw=rng.uniform(0.05, 0.95, (2, 2, n)),
                  s=rng.uniform(-1.5, 1.5, n))
    return {**inputs, **{f"o_{case}": np.full((7, n), np.nan) for case in CASES}}


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    return load_kernel(_source(), tmp_path_factory.mktemp("elementwise"), "elementwise")


@pytest.fixture(scope="module")
def stepped(kernel):
    arrays = _bindings()
    step(kernel.specialize({}), arrays)
    return arrays


def _per_component(case: str):
    """The case's function on NumPy arrays, one C library call per component (what a kernel's
    ``math.NAME`` of a number calls), folded left to right for ``min``/``max``."""
    function, _ = CASES[case]
    name = function.split(".")[-1]
    if name in ("sqrt", "fabs", "floor", "ceil", "hypot", "abs"):  # exact, or np's C call
        return getattr(np, name)
    if name in ("min", "max", "minimum", "maximum"):
        fold = np.minimum if name.startswith("min") else np.maximum
        return lambda *xs: fold.reduce(np.broadcast_arrays(*xs))
    one = np.frompyfunc(getattr(math, name), MATH_FUNCTIONS[name], 1)
    return lambda *xs: np.asarray(one(*xs), dtype=np.float64)


def _ufunc(case: str):
    name = CASES[case][0].split(".")[-1]
    if name in ("min", "max"):  # folds: _per_component is NumPy's already
        return None
    if name == "erf":
        return scipy.special.erf
    return getattr(np, _UFUNC_NAMES.get(name, name), None)


def _expected(case: str, arrays: dict, function) -> np.ndarray:
    def values(names):
        x = {"v": arrays[names["v"]], "w": arrays[names["w"]], "s": arrays["s"]}
        x["x"] = 4.0 * x["v"] - 2.0
        _, arguments = CASES[case]
        return [x[a.strip()[1:-1]] if a.strip().startswith("{") else float(a)
                for a in arguments.split(",")]

    vector = function(*values(VECTOR))
    matrix = function(*values(MATRIX))
    return np.concatenate([np.broadcast_to(vector, (3, N)),
                           np.broadcast_to(matrix, (2, 2, N)).reshape(4, N)])


def test_every_function_of_the_math_table_is_a_case():
    assert {CASES[c][0] for c in CASES} >= {f"math.{name}" for name in MATH_FUNCTIONS}


@pytest.mark.parametrize("case", list(CASES))
def test_each_function_is_the_c_library_per_component_bit_for_bit(stepped, case):
    expected = _expected(case, _bindings(), _per_component(case))
    actual = stepped[f"o_{case}"]
    assert np.array_equal(actual.view(np.uint64), expected.view(np.uint64)), case
    ufunc = _ufunc(case)
    if ufunc is not None:  # NumPy's own ufunc: a different implementation, within ulps
        np.testing.assert_allclose(actual, _expected(case, _bindings(), ufunc), rtol=1e-15,
                                   atol=1e-300)


def test_every_backend_equals_the_reference(target, kernel):  # noqa: F811
    bindings = _bindings()
    expected, _ = reference_run(kernel, bindings, 1)
    arrays = target.put(bindings)
    eagle.until_done(eagle.deploy(kernel, target.target.device), max_steps=1, **arrays).run()
    actual = target.get(arrays)
    names = [f"o_{case}" for case in CASES]
    assert_matches_reference({k: actual[k] for k in names}, {k: expected[k] for k in names},
                             target.target.exact_math, rtol=1e-14)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_cuda_emitter_compiles_through_nvrtc(kernel, dtype):
    codegen = pytest.importorskip("test_cuda_codegen")
    names = ("v", "w", "m", "mw", "s", *(f"o_{case}" for case in CASES))
    program = kernel.specialize({name: dtype for name in names})
    codegen.assert_compiles(program, "sm_90")


def test_shapes_that_differ_are_a_compile_error(tmp_path):
    source = ("import math\nimport hawk\nfrom hawk import Matrix, Out, Vec3\n\n"
              "@hawk.kernel\n"
              "def bad(v: Vec3, m: Matrix[3, 1], o: Out[Vec3]):\n"
              "    o = math.atan2(v, m)\n")
    with pytest.raises(hawk.CompileError, match=r"math\.atan2\(\) needs vectors of one width "
                                                r"\(or matrices of one shape\)"):
        load_kernel(source, tmp_path, "bad")


# -- derivatives -----------------------------------------------------------------------------


def _derivative_source(case: str) -> str:
    """``f(a, w, s)``, the case's function of ``a`` (``v`` is ``a``); the kernel writes its
    tangents on a vector and a matrix and each component's scalar tangent beside them."""
    names = {"v": "a", "x": "(4.0 * a - 2.0)", "w": "w", "s": "s"}
    cells = [(i, j) for i in range(2) for j in range(2)]
    scalar_v = ", ".join(f"hawk.jvp(f, v.{c}, dv.{c}, w.{c}, s)[1]" for c in "xyz")
    scalar_m = ", ".join(f"hawk.jvp(f, m[{i}, {j}], dm[{i}, {j}], mw[{i}, {j}], s)[1]"
                         for i, j in cells)
    scalar_j = ", ".join(f"hawk.jacobian(f, v.{c}, w.{c}, s)" for c in "xyz")
    return f"""\
import math

import hawk
from hawk import Matrix, Out, Scalar, Vec3, Vector


@hawk.func
def f(a, w, s):
    return {_call(case, names)}


@hawk.kernel
def tangents(v: Vec3, dv: Vec3, w: Vec3, m: Matrix[2, 2], dm: Matrix[2, 2], mw: Matrix[2, 2],
             s: Scalar, t: Out[Vector[7]], per: Out[Vector[7]], jac: Out[Matrix[3, 3]],
             diagonal: Out[Vec3]):
    t = hawk.concat(hawk.jvp(f, v, dv, w, s)[1], hawk.jvp(f, m, dm, mw, s)[1])
    per = hawk.vector({scalar_v}, {scalar_m})
    jac = hawk.jacobian(f, v, w, s)
    diagonal = hawk.vec3({scalar_j})
"""


@pytest.mark.parametrize("case", list(CASES))
def test_derivatives_are_the_scalar_rule_per_component(tmp_path, case):
    kernel = load_kernel(_derivative_source(case), tmp_path, "tangents")
    rng = np.random.default_rng(len(case))
    n = 33
    arrays = dict(v=rng.uniform(0.05, 0.95, (3, n)), dv=rng.normal(size=(3, n)),
                  w=rng.uniform(0.05, 0.95, (3, n)), m=rng.uniform(0.05, 0.95, (2, 2, n)),
                  dm=rng.normal(size=(2, 2, n)), mw=rng.uniform(0.05, 0.95, (2, 2, n)),
                  s=rng.uniform(-1.5, 1.5, n), t=np.full((7, n), np.nan),
                  per=np.full((7, n), np.nan), jac=np.full((3, 3, n), np.nan),
                  diagonal=np.full((3, n), np.nan))
    step(kernel.specialize({}), arrays)
    assert np.array_equal(arrays["t"].view(np.uint64), arrays["per"].view(np.uint64))
    jac, diagonal = arrays["jac"], arrays["diagonal"]
    assert np.array_equal(np.stack([jac[i, i] for i in range(3)]).view(np.uint64),
                          diagonal.view(np.uint64))
    off = ~np.eye(3, dtype=bool)
    assert (jac[off] == 0.0).all()  # one component's value depends on that component only
    if case not in ("floor", "ceil"):
        assert np.abs(arrays["t"]).max() > 0.0  # a tangent was taken, not only zeros


# -- a neural right-hand side ----------------------------------------------------------------

_NEURAL = """\
import math

import hawk
from hawk import Matrix, Out, Vector


@hawk.func
def rhs(u, W1, b1, W2, b2):
    return W2 @ math.tanh(W1 @ u + b1) + b2


@hawk.func
def rhs_loop(u, W1, b1, W2, b2):
    h = W1 @ u + b1
    a = hawk.vector({tanh})
    return W2 @ a + b2


@hawk.kernel
def neural(u: Vector[4], W1: Matrix[8, 4], b1: Vector[8], W2: Matrix[4, 8], b2: Vector[4],
           du: Out[Vector[4]], du_loop: Out[Vector[4]], J: Out[Matrix[4, 4]],
           J_loop: Out[Matrix[4, 4]]):
    du = rhs(u, W1, b1, W2, b2)
    du_loop = rhs_loop(u, W1, b1, W2, b2)
    J = hawk.jacobian(rhs, u, W1, b1, W2, b2)
    J_loop = hawk.jacobian(rhs_loop, u, W1, b1, W2, b2)
""".replace("{tanh}", ", ".join(f"math.tanh(h[{i}])" for i in range(8)))


def test_a_neural_right_hand_side_is_the_component_loop_bit_for_bit(tmp_path):
    kernel = load_kernel(_NEURAL, tmp_path, "neural")
    rng = np.random.default_rng(8)
    n = 65
    W1, b1 = rng.normal(size=(8, 4)) / 2, rng.normal(size=8)
    W2, b2 = rng.normal(size=(4, 8)) / 3, rng.normal(size=4)
    shared = dict(W1=W1, b1=b1, W2=W2, b2=b2)
    arrays = dict(u=rng.normal(size=(4, n)),
                  **{k: np.ascontiguousarray(np.broadcast_to(x[..., None], (*x.shape, n)))
                     for k, x in shared.items()},
                  du=np.full((4, n), np.nan), du_loop=np.full((4, n), np.nan),
                  J=np.full((4, 4, n), np.nan), J_loop=np.full((4, 4, n), np.nan))
    step(kernel.specialize({}), arrays)
    for name in ("du", "J"):
        assert np.array_equal(arrays[name].view(np.uint64),
                              arrays[f"{name}_loop"].view(np.uint64)), name
    u = arrays["u"].T
    hidden = np.tanh(u @ W1.T + b1)
    np.testing.assert_allclose(arrays["du"].T, hidden @ W2.T + b2, rtol=1e-13, atol=1e-14)
    expected_j = np.einsum("ij,nj,jk->nik", W2, 1.0 - hidden**2, W1)
    np.testing.assert_allclose(np.moveaxis(arrays["J"], -1, 0), expected_j, rtol=1e-12,
                               atol=1e-13)
    kernel_cpu = dict(arrays, du=np.full((4, n), np.nan), du_loop=np.full((4, n), np.nan),
                      J=np.full((4, 4, n), np.nan), J_loop=np.full((4, 4, n), np.nan))
    eagle.simulate(kernel, max_steps=1, device="cpu", **kernel_cpu)
    for name in ("du", "du_loop", "J", "J_loop"):
        assert np.array_equal(kernel_cpu[name].view(np.uint64), arrays[name].view(np.uint64))
