"""Forward-mode derivatives in a kernel (issue 29, its first part): ``hawk.jvp`` and
``hawk.jacobian``, an IR pass whose rules (``hawk.derivatives.RULES``/``CALL_RULES``) cover
every float op and math function. Each rule is checked op by op against central finite
differences and against JAX's ``grad``; the pass's output is plain IR, equal to the reference
executor on every backend; errors for what has no derivative."""

from __future__ import annotations

import math

import numpy as np
import pytest

import eagle
import hawk
from backends import target  # noqa: F401  (the fixture)
from differential import assert_bitwise_equal, assert_matches_reference, load_kernel, reference_run
from hawk import Matrix, Out, Scalar, Vec3
from hawk.derivatives import CALL_RULES, RULES
from hawk.ir import MATH_FUNCTIONS, OpKind

#: name -> (hawk expression in x and y, JAX expression, x range, y range)
CASES = {
    "neg": ("-x * y", "-x * y", (-2, 2), (-2, 2)),
    "add_sub": ("x + y - 3.0 * x", "x + y - 3.0 * x", (-2, 2), (-2, 2)),
    "mul": ("x * y * x", "x * y * x", (-2, 2), (-2, 2)),
    "div": ("x / y", "x / y", (-2, 2), (0.5, 2)),
    "mod": ("x % y", "jnp.mod(x, y)", (0.1, 5), (0.7, 1.3)),
    "floordiv": ("(x // y) * x", "jnp.floor_divide(x, y) * x", (0.1, 5), (0.7, 1.3)),
    "abs": ("abs(x) * y", "jnp.abs(x) * y", (-2, 2), (-2, 2)),
    "min": ("min(x, y * y)", "jnp.minimum(x, y * y)", (-2, 2), (-2, 2)),
    "max": ("max(x, y * y)", "jnp.maximum(x, y * y)", (-2, 2), (-2, 2)),
    "select": ("x * x if x > y else y * x", "jnp.where(x > y, x * x, y * x)", (-2, 2), (-2, 2)),
    "power_int": ("x ** 3 * y", "x ** 3 * y", (-2, 2), (-2, 2)),
    "sqrt": ("math.sqrt(x) * y", "jnp.sqrt(x) * y", (0.1, 3), (-2, 2)),
    "exp": ("math.exp(x * y)", "jnp.exp(x * y)", (-1, 1), (-1, 1)),
    "log": ("math.log(x) + y", "jnp.log(x) + y", (0.1, 3), (-2, 2)),
    "log10": ("math.log10(x * y)", "jnp.log10(x * y)", (0.1, 3), (0.1, 3)),
    "log1p": ("math.log1p(x) * y", "jnp.log1p(x) * y", (-0.5, 3), (-2, 2)),
    "expm1": ("math.expm1(x * y)", "jnp.expm1(x * y)", (-1, 1), (-1, 1)),
    "sin": ("math.sin(x) * y", "jnp.sin(x) * y", (-3, 3), (-2, 2)),
    "cos": ("math.cos(x * y)", "jnp.cos(x * y)", (-2, 2), (-2, 2)),
    "tan": ("math.tan(x) + y", "jnp.tan(x) + y", (-1.2, 1.2), (-2, 2)),
    "tanh": ("math.tanh(x * y)", "jnp.tanh(x * y)", (-2, 2), (-2, 2)),
    "sinh": ("math.sinh(x) * y", "jnp.sinh(x) * y", (-2, 2), (-2, 2)),
    "cosh": ("math.cosh(x) * y", "jnp.cosh(x) * y", (-2, 2), (-2, 2)),
    "asin": ("math.asin(x) * y", "jnp.arcsin(x) * y", (-0.9, 0.9), (-2, 2)),
    "acos": ("math.acos(x) * y", "jnp.arccos(x) * y", (-0.9, 0.9), (-2, 2)),
    "atan": ("math.atan(x * y)", "jnp.arctan(x * y)", (-2, 2), (-2, 2)),
    "erf": ("math.erf(x) * y", "jax.scipy.special.erf(x) * y", (-2, 2), (-2, 2)),
    "cbrt": ("math.cbrt(x) * y", "jnp.cbrt(x) * y", (0.2, 3), (-2, 2)),
    "fabs": ("math.fabs(x) * y", "jnp.abs(x) * y", (-2, 2), (-2, 2)),
    "floor": ("math.floor(x) * y + x", "jnp.floor(x) * y + x", (-2, 2), (-2, 2)),
    "ceil": ("math.ceil(x) * y + x", "jnp.ceil(x) * y + x", (-2, 2), (-2, 2)),
    "pow": ("math.pow(x, y)", "jnp.power(x, y)", (0.2, 3), (-2, 2)),
    "atan2": ("math.atan2(x, y)", "jnp.arctan2(x, y)", (-2, 2), (-2, 2)),
    "hypot": ("math.hypot(x, y)", "jnp.hypot(x, y)", (-2, 2), (-2, 2)),
    "cast": ("float(x) * y", "x * y", (-2, 2), (-2, 2)),
}




def _gradient_kernel(expression: str) -> str:
    return f"""\
import math

import hawk
from hawk import Out, Scalar, Vec2


@hawk.func
def f(v):
    x, y = v[0], v[1]
    return {expression}


@hawk.kernel
def grad(x: Scalar, y: Scalar, value: Out[Scalar], g: Out[Vec2]):
    value = f(hawk.vec2(x, y))
    g = hawk.jacobian(f, hawk.vec2(x, y))
"""


def _points(case: str, n: int = 64):
    _, _, (x_lo, x_hi), (y_lo, y_hi) = CASES[case]
    rng = np.random.default_rng(len(case))
    x, y = rng.uniform(x_lo, x_hi, n), rng.uniform(y_lo, y_hi, n)
    return x, y


def _run(kernel, x, y):
    out = dict(value=np.zeros(x.size), g=np.zeros((2, x.size)))
    eagle.until_done(eagle.deploy(kernel, "cpu"), max_steps=1, x=x, y=y, **out).run()
    return out


def test_every_float_op_and_math_function_has_a_rule():
    assert set(CALL_RULES) == set(MATH_FUNCTIONS)
    arithmetic = {OpKind.NEG, OpKind.ADD, OpKind.SUB, OpKind.MUL, OpKind.DIV, OpKind.FLOORDIV,
                  OpKind.MOD, OpKind.ABS, OpKind.MIN, OpKind.MAX, OpKind.SELECT, OpKind.CAST}
    whole_matrix = {OpKind.LU, OpKind.LU_SOLVE, OpKind.PART}  # tests/test_linalg_loops.py
    assert set(RULES) == arithmetic | whole_matrix


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_rule_matches_central_differences(tmp_path, case):
    kernel = load_kernel(_gradient_kernel(CASES[case][0]), tmp_path, "grad")
    x, y = _points(case)
    out = _run(kernel, x, y)
    h = 1e-6
    for k, (dx, dy) in enumerate(((h, 0.0), (0.0, h))):
        plus, minus = _run(kernel, x + dx, y + dy)["value"], _run(kernel, x - dx, y - dy)["value"]
        smooth = np.abs(plus - minus) < 1e-3  # away from floor's and mod's jumps
        assert smooth.sum() > 40
        np.testing.assert_allclose(out["g"][k][smooth], ((plus - minus) / (2 * h))[smooth],
                                   rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_rule_matches_jax_grad(tmp_path, case):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import jax.scipy.special  # noqa: F401  (erf)

    kernel = load_kernel(_gradient_kernel(CASES[case][0]), tmp_path, "grad")
    x, y = _points(case)
    out = _run(kernel, x, y)
    function = eval(f"lambda x, y: {CASES[case][1]}", {"jnp": jnp, "jax": jax})  # noqa: S307
    gx, gy = jax.vmap(jax.grad(function, argnums=(0, 1)))(jnp.asarray(x), jnp.asarray(y))
    np.testing.assert_allclose(out["g"][0], np.asarray(gx), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out["g"][1], np.asarray(gy), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out["value"], np.asarray(jax.vmap(function)(x, y)), rtol=1e-13)


@hawk.func
def lorenz(u, t, p):
    return hawk.vec3(p[0] * (u.y - u.x), u.x * (p[1] - u.z) - u.y, u.x * u.y - p[2] * u.z)


@hawk.func
def rotate(m, angle):
    c, s = math.cos(angle), math.sin(angle)
    return hawk.matrix((c, -s), (s, c)) @ m @ m


@hawk.kernel
def derivatives(u: Vec3, angle: Scalar, jac: Out[Matrix[3, 3]], tangent: Out[Vec3],
                value: Out[Vec3], dm: Out[Matrix[2, 2]], unrelated: Out[Vec3]):
    p = hawk.vec3(10.0, 28.0, 8.0 / 3.0)
    jac = hawk.jacobian(lorenz, u, 0.0, p)
    value, tangent = hawk.jvp(lorenz, u, hawk.vec3(1.0, 0.5, -1.0), 0.0, p)
    m = hawk.matrix((1.0, angle), (angle * angle, 2.0))
    _, dm = hawk.jvp(rotate, m, hawk.matrix((1.0, 0.0), (0.0, 1.0)), angle)
    unrelated = hawk.jacobian(lorenz, u, 1.0, u) @ u  # p is u's values, held constant


def _bindings(n: int) -> dict:
    rng = np.random.default_rng(11)
    return dict(u=rng.normal(size=(3, n)), angle=rng.uniform(-1, 1, n),
                jac=np.zeros((3, 3, n)), tangent=np.zeros((3, n)), value=np.zeros((3, n)),
                dm=np.zeros((2, 2, n)), unrelated=np.zeros((3, n)))


def test_jacobians_and_jvps_of_vectors_and_matrices_are_exact():
    n = 50
    b = _bindings(n)
    eagle.until_done(eagle.deploy(derivatives, "cpu"), max_steps=1, **b).run()
    s, r, beta = 10.0, 28.0, 8.0 / 3.0
    for i in range(n):
        x, y, z = b["u"][:, i]
        jac = np.array([[-s, s, 0.0], [r - z, -1.0, -x], [y, x, -beta]])
        np.testing.assert_allclose(b["jac"][:, :, i], jac, rtol=0, atol=1e-14)
        np.testing.assert_allclose(b["tangent"][:, i], jac @ [1.0, 0.5, -1.0], atol=1e-13)
        a = b["angle"][i]
        rot = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
        m = np.array([[1.0, a], [a * a, 2.0]])
        np.testing.assert_allclose(b["dm"][:, :, i], rot @ (m + m), rtol=1e-13, atol=1e-13)
        held = np.array([[-x, x, 0.0], [y - z, -1.0, -x], [y, x, -z]])  # p = u, not seeded
        np.testing.assert_allclose(b["unrelated"][:, i], held @ [x, y, z], rtol=1e-13)


def test_derivative_kernels_equal_the_reference_on_every_backend(target):  # noqa: F811
    bindings = _bindings(300)
    expected, _ = reference_run(derivatives, bindings, 1)
    arrays = target.put(bindings)
    eagle.until_done(eagle.deploy(derivatives, target.target.device), max_steps=1,
                     **arrays).run()
    actual = target.get(arrays)
    names = ("jac", "tangent", "value", "dm", "unrelated")
    assert_matches_reference({k: actual[k] for k in names}, {k: expected[k] for k in names},
                             target.target.exact_math, rtol=1e-13)


def test_a_column_that_does_not_depend_on_x_costs_nothing(tmp_path):
    """Structural zeros: the Jacobian of a diagonal map emits one tangent op per input, not a
    full matrix's worth, and the zeros are exact."""
    source = """\
import math

import hawk
from hawk import Out


@hawk.func
def diagonal(v):
    return hawk.vector(math.sin(v[0]), math.sin(v[1]), math.sin(v[2]), math.sin(v[3]))


@hawk.kernel
def sparse(v: hawk.Vec4, j: Out[hawk.Matrix[4, 4]]):
    j = hawk.jacobian(diagonal, v)
"""
    kernel = load_kernel(source, tmp_path, "sparse")
    calls = [op.attr for op in kernel.program.ops if op.kind is OpKind.CALL]
    assert calls.count("cos") == 4 and calls.count("sin") == 0  # the primal is dead code
    j = np.zeros((4, 4, 3))
    v = np.random.default_rng(0).normal(size=(4, 3))
    eagle.until_done(eagle.deploy(kernel, "cpu"), max_steps=1, v=v, j=j).run()
    for i in range(3):
        assert_bitwise_equal({"j": j[:, :, i]}, {"j": np.diag(np.cos(v[:, i]))})


@pytest.mark.parametrize("body, message", [
    ("out = hawk.jacobian(f, k)", r"derivatives are taken in float values only"),
    ("out = hawk.jacobian(g, x)", r"only a float result has a derivative"),
    ("out = hawk.jacobian(math.sin, x)", r"takes a @hawk.func as its first argument"),
    ("out, d = hawk.jvp(f, x, hawk.vec2(1.0, 2.0))", r"dx is Vec2 of float64, not shaped as x"),
    ("out = hawk.jacobian(f)", r"hawk.jacobian\(\) takes 2 or more arguments"),
])
def test_what_has_no_derivative_is_a_compile_error(tmp_path, body, message):
    source = f"""\
import math

import hawk
from hawk import Out, Scalar


@hawk.func
def f(x):
    return x * x


@hawk.func
def g(x):
    return x > 1.0


@hawk.kernel(dtypes={{"k": "int64"}})
def bad(x: Scalar, k: Scalar, out: Out[Scalar], d: Out[Scalar]):
    {body}
    d = x
"""
    with pytest.raises(hawk.CompileError, match=message):
        load_kernel(source, tmp_path, "bad")


def test_jvp_and_jacobian_outside_a_kernel_say_where_they_work():
    with pytest.raises(TypeError, match="inside a @hawk.kernel body"):
        hawk.jacobian(lorenz, np.zeros(3))
    with pytest.raises(TypeError, match="inside a @hawk.kernel body"):
        hawk.jvp(lorenz, np.zeros(3), np.ones(3))


def test_derivative_kernels_compile_for_the_gpu_with_nvrtc():
    nvrtc = pytest.importorskip("eagle.cuda.nvrtc")
    from eagle.cuda.emit import emit_cuda

    assert nvrtc.compile_source(emit_cuda(derivatives.specialize({})), "sm_90")[:4] == b"\x7fELF"
