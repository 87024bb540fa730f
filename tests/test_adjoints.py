"""Reverse-mode derivatives in a kernel (issue 44, its language part): ``hawk.vjp`` and
``hawk.grad``, one reverse sweep over the inlined IR whose per-op cotangents are the forward
rules transposed (``hawk.adjoints``). Checked op by op and function by function against JAX's
``grad`` (x64) and against ``hawk.jvp`` by the transpose identity; equal to the reference
executor on every backend; errors for what has no cotangent."""

from __future__ import annotations

import numpy as np
import pytest

import eagle
import hawk
from backends import target  # noqa: F401  (the fixture)
from differential import assert_matches_reference, load_kernel, reference_run
from test_derivatives import CASES, _points

DIRECTION = (0.3, -0.7)


def _adjoint_kernel(expression: str) -> str:
    return f"""\
import math

import hawk
from hawk import Out, Scalar, Terminated, Vec2


@hawk.func
def f(v):
    x, y = v[0], v[1]
    return {expression}


@hawk.kernel
def adjoint(x: Scalar, y: Scalar, ct: Scalar, terminated: Terminated, value: Out[Scalar],
            g: Out[Vec2], x_bar: Out[Vec2], tangent: Out[Scalar]):
    value, x_bar = hawk.vjp(f, hawk.vec2(x, y), ct)
    g = hawk.grad(f, hawk.vec2(x, y))
    same, tangent = hawk.jvp(f, hawk.vec2(x, y), hawk.vec2{DIRECTION})
    terminated = True
"""


def _run(kernel, x, y, ct):
    out = dict(value=np.zeros(x.size), g=np.zeros((2, x.size)), x_bar=np.zeros((2, x.size)),
               tangent=np.zeros(x.size))
    eagle.until_done(eagle.deploy(kernel, "cpu"), max_steps=1, x=x, y=y, ct=ct, **out).run()
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_cotangent_matches_jax_grad_and_the_transpose_of_jvp(tmp_path, case):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import jax.scipy.special  # noqa: F401  (erf)

    kernel = load_kernel(_adjoint_kernel(CASES[case][0]), tmp_path, "adjoint")
    x, y = _points(case)
    ct = np.random.default_rng(7).uniform(-2.0, 2.0, x.size)
    out = _run(kernel, x, y, ct)
    function = eval(f"lambda x, y: {CASES[case][1]}", {"jnp": jnp, "jax": jax})  # noqa: S307
    gx, gy = jax.vmap(jax.grad(function, argnums=(0, 1)))(jnp.asarray(x), jnp.asarray(y))
    np.testing.assert_allclose(out["g"][0], np.asarray(gx), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out["g"][1], np.asarray(gy), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out["x_bar"], ct * out["g"], rtol=1e-13, atol=1e-13)
    # <vjp(ct), dx> == <ct, jvp(dx)>
    left = out["x_bar"][0] * DIRECTION[0] + out["x_bar"][1] * DIRECTION[1]
    scale = np.abs(out["x_bar"]).sum(axis=0) + np.abs(ct * out["tangent"]) + 1e-300
    assert np.max(np.abs(left - ct * out["tangent"]) / scale) < 1e-12


SOURCE = """\
import math

import hawk
from hawk import Matrix, Out, Param, Scalar, Terminated, Vec3


@hawk.func
def lorenz(u, p):
    return hawk.vec3(p[0] * (u[1] - u[0]), u[0] * (p[1] - u[2]) - u[1],
                     u[0] * u[1] - p[2] * u[2])


@hawk.func
def energy(m):
    return hawk.det(m) + hawk.trace(m @ m) * math.exp(0.1 * m[0, 1])


@hawk.func
def first_only(u, p):
    return math.sin(u[0]) * p[0]


@hawk.kernel
def reverse(u: Vec3, p: Vec3, ct: Vec3, m: Matrix[3, 3], terminated: Terminated,
            f: Out[Vec3], u_bar: Out[Vec3], jac: Out[Matrix[3, 3]], m_bar: Out[Matrix[3, 3]],
            sparse: Out[Vec3]):
    f, u_bar = hawk.vjp(lorenz, u, ct, p)
    jac = hawk.jacobian(lorenz, u, p)
    m_bar = hawk.grad(energy, m)
    sparse = hawk.grad(first_only, u, p)
    terminated = True
"""


def _bindings(n: int) -> dict:
    rng = np.random.default_rng(3)
    return dict(u=rng.normal(size=(3, n)), p=rng.uniform(1, 3, (3, n)), ct=rng.normal(size=(3, n)),
                m=rng.normal(size=(3, 3, n)), f=np.zeros((3, n)), u_bar=np.zeros((3, n)),
                jac=np.zeros((3, 3, n)), m_bar=np.zeros((3, 3, n)), sparse=np.zeros((3, n)))


@pytest.fixture(scope="module")
def reverse(tmp_path_factory):
    return load_kernel(SOURCE, tmp_path_factory.mktemp("reverse"), "reverse")


def test_vjp_of_a_vector_function_is_the_transposed_jacobian(reverse):
    b = _bindings(200)
    eagle.simulate(reverse, max_steps=1, **b)
    expected = np.einsum("ijn,in->jn", b["jac"], b["ct"])  # J^T ct
    np.testing.assert_allclose(b["u_bar"], expected, rtol=1e-13, atol=1e-13)
    assert (b["sparse"][1:] == 0.0).all()  # what does not depend on u is an exact zero
    np.testing.assert_array_equal(b["sparse"][0], np.cos(b["u"][0]) * b["p"][0])


def test_grad_of_a_matrix_function_matches_jax(reverse):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    b = _bindings(50)
    eagle.simulate(reverse, max_steps=1, **b)

    def energy(m):
        return jnp.linalg.det(m) + jnp.trace(m @ m) * jnp.exp(0.1 * m[0, 1])

    expected = jax.vmap(jax.grad(energy))(jnp.asarray(np.moveaxis(b["m"], -1, 0)))
    np.testing.assert_allclose(b["m_bar"], np.moveaxis(np.asarray(expected), 0, -1),
                               rtol=1e-11, atol=1e-12)


def test_reverse_kernels_equal_the_reference_on_every_backend(reverse, target):  # noqa: F811
    bindings = _bindings(300)
    expected, _ = reference_run(reverse, bindings, 1)
    arrays = target.put(bindings)
    eagle.until_done(eagle.deploy(reverse, target.target.device), max_steps=1, **arrays).run()
    actual = target.get(arrays)
    names = ("f", "u_bar", "m_bar", "sparse")
    assert_matches_reference({k: actual[k] for k in names}, {k: expected[k] for k in names},
                             target.target.exact_math, rtol=1e-13)


TUPLE_SOURCE = """\
import hawk
from hawk import Out, Scalar, Terminated, Vec3


@hawk.func
def weighted(ups, ct):
    u, p, s = ups[0], ups[1], ups[2]
    f = hawk.vec3(p[0] * (u[1] - u[0]), u[0] * (p[1] - u[2]) - u[1], u[0] * u[1] - p[2] * u[2])
    return hawk.total(ct * f) + s * s * u[0]


@hawk.func
def in_u(u, p, s, ct):
    return weighted((u, p, s), ct)


@hawk.func
def in_p(p, u, s, ct):
    return weighted((u, p, s), ct)


@hawk.func
def in_s(s, u, p, ct):
    return weighted((u, p, s), ct)


@hawk.kernel
def several(u: Vec3, p: Vec3, s: Scalar, ct: Vec3, terminated: Terminated, u_bar: Out[Vec3],
            p_bar: Out[Vec3], s_bar: Out[Scalar], u_one: Out[Vec3], p_one: Out[Vec3],
            s_one: Out[Scalar], value: Out[Scalar], u_vjp: Out[Vec3], s_vjp: Out[Scalar]):
    u_bar, p_bar, s_bar = hawk.grad(weighted, (u, p, s), ct)
    u_one = hawk.grad(in_u, u, p, s, ct)
    p_one = hawk.grad(in_p, p, u, s, ct)
    s_one = hawk.grad(in_s, s, u, p, ct)
    value, bars = hawk.vjp(weighted, (u, p, s), 2.0, ct)
    u_vjp, s_vjp = bars[0], bars[2]
    terminated = True
"""


def test_grad_in_a_tuple_gives_each_values_gradient_from_one_sweep(tmp_path):
    """``hawk.grad(f, (u, p, s))``: the tuple of the gradients ``hawk.grad`` gives in ``u``,
    ``p`` and ``s`` one at a time, bit for bit (the same cotangents, summed in the same
    order); ``hawk.vjp`` in a tuple too."""
    kernel = load_kernel(TUPLE_SOURCE, tmp_path, "several")
    rng = np.random.default_rng(11)
    n = 64
    b = dict(u=rng.normal(size=(3, n)), p=rng.uniform(1, 3, (3, n)), s=rng.normal(size=n),
             ct=rng.normal(size=(3, n)))
    out = {name: np.zeros((3, n)) for name in ("u_bar", "p_bar", "u_one", "p_one", "u_vjp")}
    out.update({name: np.zeros(n) for name in ("s_bar", "s_one", "value", "s_vjp")})
    eagle.simulate(kernel, max_steps=1, **b, **out)
    for name in ("u", "p", "s"):
        np.testing.assert_array_equal(out[f"{name}_bar"], out[f"{name}_one"])
    u, p, s = b["u"], b["p"], b["s"]
    assert np.abs(out["s_bar"] - 2.0 * s * u[0]).max() < 1e-14 * np.abs(s * u[0]).max()
    np.testing.assert_array_equal(out["u_vjp"], 2.0 * out["u_bar"])
    np.testing.assert_array_equal(out["s_vjp"], 2.0 * out["s_bar"])


@pytest.mark.parametrize("body, message", [
    ("out = hawk.grad(scalar, ())", r"x is an empty tuple"),
    ("out = hawk.grad(scalar, ((x, x), x))[1]", r"differentiates in a number, vector or matrix"),
    ("out = hawk.grad(vec, x)", r"grad takes an f returning a number"),
    ("out = hawk.vjp(scalar, x, hawk.vec2(1.0, 2.0))[1]", r"ct is Vec2 of float64, not shaped"),
    ("out = hawk.grad(3.0, x)", r"takes a @hawk.func as its first argument"),
    ("out = hawk.vjp(scalar, x)", r"takes 3 or more arguments"),
])
def test_what_has_no_cotangent_is_a_compile_error(tmp_path, body, message):
    source = f"""\
import hawk
from hawk import Out, Scalar


@hawk.func
def scalar(x):
    return x * x


@hawk.func
def vec(x):
    return hawk.vec2(x, x)


@hawk.kernel
def k(x: Scalar, out: Out[Scalar]):
    {body}
"""
    with pytest.raises(hawk.CompileError, match=message):
        load_kernel(source, tmp_path, "k")


def test_outside_a_kernel_they_say_where_they_work():
    with pytest.raises(TypeError, match="inside a @hawk.kernel body"):
        hawk.grad(None, 1.0)
    with pytest.raises(TypeError, match="inside a @hawk.kernel body"):
        hawk.vjp(None, 1.0, 1.0)
