"""Matrices and shared vectors (issue 28): ``hawk.Matrix[R, C]`` as a per-sample input,
``Mutable``, ``Out`` and ``Series``; ``Param[Vector[K]]`` and ``Param[Matrix[R, C]]`` shared by
every sample; matrix values built, indexed by constants and loop indices, passed through funcs,
multiplied with ``@``; ``hawk.solve``, ``inverse``, ``det`` (one branch-free LU, the same
expressions in a kernel and on NumPy), ``transpose``, ``outer``, ``trace``. Every backend equal
to the reference executor bit for bit (the emulated GPU and NVRTC included), hypothesis
choosing the shapes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eagle
import hawk
from backends import target  # noqa: F401  (the fixture)
from differential import assert_bitwise_equal, load_kernel, reference_run, resumed_run
from hawk import Matrix, Mutable, Out, Param, Scalar, Series, Terminated, Vec3

N = 1001  # a partial last block on every backend


@hawk.func
def rotate_z(angle):
    """A small rotation about z (to second order): a func building and returning a matrix."""
    c, s = 1.0 - angle * angle / 2.0, angle
    return hawk.matrix((c, -s, 0.0), (s, c, 0.0), (0.0, 0.0, 1.0))


@hawk.kernel
def linear(a: Matrix[3, 3], b: Vec3, gain: Param[Vec3], mix: Param[Matrix[2, 3]],
           terminated: Terminated, m: Mutable[Matrix[3, 3]], x: Out[Vec3], d: Out[Scalar],
           k: Mutable[Scalar], hist: Series[Matrix[2, 2]]):
    x = hawk.solve(a, b) * gain
    d = hawk.det(a) + hawk.trace(a) + a[1, 2] + a[0] @ b + mix[1, 2]
    m = hawk.inverse(a) @ m.T * 0.5 + hawk.outer(b, gain) - hawk.identity(3) \
        + hawk.transpose(mix) @ mix + rotate_z(0.01 * k)
    if d > 0.0:
        m = m * 0.5
    total = 0.0
    for i in range(3):
        for j in range(3):
            total += m[i, j] * a[j, i]
    m[0, 0] = total * 1e-3
    m[2] = b @ a
    hist[hawk.step()] = hawk.matrix((k, d), (x[0], hawk.det(a @ a)))
    k += 1.0
    terminated = k >= 3.0 + b[0] * b[0]


def linear_bindings(n: int) -> dict:
    rng = np.random.default_rng(7)
    return dict(a=rng.normal(size=(3, 3, n)) + 3.0 * np.eye(3)[:, :, None],
                b=rng.normal(size=(3, n)), gain=[1.0, -2.0, 0.5],
                mix=[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], terminated=np.zeros(n, bool),
                m=rng.normal(size=(3, 3, n)), x=np.zeros((3, n)), d=np.zeros(n),
                k=np.zeros(n), hist=np.full((6, 2, 2, n), np.nan))


def test_matrix_types_and_shared_types_are_named_as_declared():
    assert Matrix[3, 3] is Matrix[3, 3] and Matrix[2, 3].width == 6
    assert Matrix[2, 3].columns == 3 and repr(Mutable[Matrix[2, 3]]) == "Mutable[Matrix[2, 3]]"
    assert repr(Param[hawk.Vector[6]]) == "Param[Vector[6]]" and repr(Param) == "Param"
    assert repr(Param[Matrix[4, 4]]) == "Param[Matrix[4, 4]]"
    for bad in ((1, 1), (0, 2), (17, 2), (2,), 3, (2.0, 2), (True, 2)):
        with pytest.raises(TypeError, match=r"Matrix\[R, C\] takes two ints R and C from 1 to 16"):
            Matrix[bad]
    with pytest.raises(TypeError, match=r"Param\[\.\.\.\] takes Scalar, Vec2"):
        Param[Param]
    assert Matrix[2, 2](1, 2, 3, 4).tolist() == [[1, 2], [3, 4]]
    assert linear.param("mix").shape(5) == (2, 3) and linear.param("m").shape(5) == (3, 3, 5)
    assert linear.param("hist").shape(5, 6) == (6, 2, 2, 5)


@pytest.mark.parametrize("steps_per_launch", [2, None])
def test_matrices_equal_the_reference_on_every_backend(target, steps_per_launch):  # noqa: F811
    bindings = linear_bindings(N)
    expected, expected_steps = reference_run(linear, bindings, 50)
    arrays = target.put({k: v for k, v in bindings.items()})
    report = eagle.until_done(eagle.deploy(linear, target.target.device), max_steps=50,
                              steps_per_launch=steps_per_launch, **arrays).run()
    actual = target.get(arrays)
    names = ("m", "x", "d", "k", "hist", "terminated")
    assert_bitwise_equal({k: actual[k] for k in names}, {k: expected[k] for k in names})
    assert report.steps == expected_steps and report.done == N


def test_the_kernel_solves_what_numpy_solves():
    """The CPU's x against numpy.linalg.solve, per sample (a well-conditioned a)."""
    bindings = linear_bindings(200)
    a, b = bindings["a"], bindings["b"]
    with pytest.warns(eagle.TruncationWarning):
        eagle.until_done(eagle.deploy(linear, "cpu"), max_steps=1, **bindings).run()
    want = np.stack([np.linalg.solve(a[:, :, i], b[:, i]) for i in range(200)], axis=1)
    np.testing.assert_allclose(bindings["x"], want * np.array([1.0, -2.0, 0.5])[:, None],
                               rtol=1e-12, atol=1e-12)
    dets = np.array([np.linalg.det(a[:, :, i]) for i in range(200)])
    traces = np.einsum("iin->n", a)
    extra = a[1, 2] + np.einsum("jn,jn->n", a[0], b) + 6.0
    np.testing.assert_allclose(bindings["d"], dets + traces + extra, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("size", range(2, 13))
def test_solve_inverse_and_det_match_numpy_linalg(size):
    """Random well-conditioned systems (condition number below 1e3), K = 2..12: within
    1e-11 relative of LAPACK, whose pivoting is the same up to the order of non-pivot rows."""
    rng = np.random.default_rng(size)
    n = 50
    a = rng.normal(size=(size, size, n))
    a += size * np.eye(size)[:, :, None]
    b = rng.normal(size=(size, n))
    per = [a[:, :, i] for i in range(n)]
    assert max(np.linalg.cond(m) for m in per) < 1e3
    x = hawk.solve(a, b)
    want = np.stack([np.linalg.solve(m, b[:, i]) for i, m in enumerate(per)], axis=1)
    np.testing.assert_allclose(x, want, rtol=1e-11, atol=1e-12)
    inv = hawk.inverse(a)
    np.testing.assert_allclose(inv, np.stack([np.linalg.inv(m) for m in per], axis=2),
                               rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(hawk.det(a), [np.linalg.det(m) for m in per], rtol=1e-11)
    rhs = rng.normal(size=(size, 3))  # a matrix right-hand side, one shared system
    np.testing.assert_allclose(hawk.solve(per[0], rhs), np.linalg.solve(per[0], rhs),
                               rtol=1e-11, atol=1e-12)




def _square_source(size: int) -> str:
    return f"""\
import hawk
from hawk import Matrix, Out, Scalar, Terminated

@hawk.kernel
def square(a: Matrix[{size}, {size}], b: hawk.Vector[{size}], terminated: Terminated,
           x: Out[hawk.Vector[{size}]], inv: Out[Matrix[{size}, {size}]], d: Out[Scalar]):
    x = hawk.solve(a, b)
    inv = hawk.inverse(a)
    d = hawk.det(a)
    terminated = d == d
"""


@pytest.mark.parametrize("size", [2, 5, 9])
def test_the_kernel_and_numpy_compute_the_same_bits(tmp_path, size):
    """One definition in hawk.linalg: the CPU kernel's solve, inverse and det are the bits
    hawk.solve/inverse/det give on NumPy arrays."""
    kernel = load_kernel(_square_source(size), tmp_path, "square")
    rng = np.random.default_rng(size)
    n = 300
    a = rng.normal(size=(size, size, n))
    b = rng.normal(size=(size, n))
    out = dict(x=np.zeros((size, n)), inv=np.zeros((size, size, n)), d=np.zeros(n))
    eagle.until_done(eagle.deploy(kernel, "cpu"), max_steps=1, a=a, b=b,
                     terminated=np.zeros(n, bool), **out).run()
    assert_bitwise_equal(out, dict(x=hawk.solve(a, b), inv=hawk.inverse(a), d=hawk.det(a)))


def test_a_singular_matrix_gives_inf_or_nan_not_an_error(tmp_path):
    kernel = load_kernel(_square_source(3), tmp_path, "square")
    a = np.repeat(np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 1.0]])[:, :, None],
                  4, axis=2)
    a[:, :, 3] = 0.0  # the zero matrix
    out = dict(x=np.zeros((3, 4)), inv=np.zeros((3, 3, 4)), d=np.zeros(4))
    eagle.until_done(eagle.deploy(kernel, "cpu"), max_steps=1, a=a, b=np.ones((3, 4)),
                     terminated=np.zeros(4, bool), **out).run()
    assert (out["d"] == 0.0).all()  # as numpy.linalg.det: the zero pivot is not divided by
    assert (~np.isfinite(out["x"])).any(axis=0).all()
    assert (~np.isfinite(out["inv"])).any(axis=(0, 1)).all()
    with np.errstate(all="ignore"):
        assert_bitwise_equal(out, dict(x=hawk.solve(a, np.ones((3, 4))), inv=hawk.inverse(a),
                                       d=hawk.det(a)))


def _shapes_source(rows: int, columns: int, inner: int) -> str:
    """Products, transposes, elementwise ops, loops and a func on random shapes."""
    return f"""\
import hawk
from hawk import Matrix, Mutable, Param, Scalar, Terminated

@hawk.func
def scaled(m, s):
    return m * s + hawk.transpose(m.T)

@hawk.kernel
def shapes(a: Matrix[{rows}, {inner}], b: Param[Matrix[{inner}, {columns}]],
           v: hawk.Vector[{columns}], terminated: Terminated,
           m: Mutable[Matrix[{rows}, {columns}]], k: Mutable[Scalar]):
    p = a @ b
    m = scaled(m, 0.5) + p * 0.25 - hawk.maximum(p, 0.0) * 0.125
    w = m @ v
    acc = 0.0
    for i in range({rows}):
        for j in range({columns}):
            acc += m[i, j] * w[i] if {rows} > 1 else m[i, j]
    m[{rows} - 1, {columns} - 1] = acc * 1e-3
    k += 1.0
    terminated = k >= 4.0 + abs(v[0])
"""


def _shapes_bindings(rows: int, columns: int, inner: int, n: int) -> dict:
    rng = np.random.default_rng(rows * 100 + columns * 10 + inner)
    return dict(a=rng.normal(size=(rows, inner, n)), b=rng.normal(size=(inner, columns)),
                v=rng.normal(size=(columns, n)), terminated=np.zeros(n, bool),
                m=rng.normal(size=(rows, columns, n)), k=np.zeros(n))


_SIDES = st.integers(2, 9)


@settings(max_examples=10, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=_SIDES, columns=_SIDES, inner=st.integers(1, 9))
def test_random_shapes_equal_the_reference_on_the_cpu(tmp_path, rows, columns, inner):
    kernel = load_kernel(_shapes_source(rows, columns, inner), tmp_path, "shapes")
    bindings = _shapes_bindings(rows, columns, inner, 257)
    expected, steps = reference_run(kernel, bindings, 20)
    actual = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in bindings.items()}
    report = eagle.until_done(eagle.deploy(kernel, "cpu"), max_steps=20, **actual).run()
    assert_bitwise_equal({k: actual[k] for k in ("m", "k")}, {k: expected[k] for k in ("m", "k")})
    assert report.steps == steps


@settings(max_examples=5, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=_SIDES, columns=_SIDES, inner=st.integers(1, 9))
def test_random_shapes_equal_the_reference_in_the_generated_cuda(tmp_path, rows, columns,
                                                                 inner):
    from host_cuda import HostKernel, compiler

    if compiler() is None:
        pytest.skip("no host C++ compiler to run the generated CUDA with")
    from eagle.bindings import bind

    kernel = load_kernel(_shapes_source(rows, columns, inner), tmp_path, "shapes")
    bindings = _shapes_bindings(rows, columns, inner, 300)
    expected, _ = reference_run(kernel, bindings, 20)
    bound = bind(kernel, {k: v.copy() if isinstance(v, np.ndarray) else v
                          for k, v in bindings.items()}, "cpu")
    host = HostKernel(kernel.specialize(bound.dtypes), tmp_path)
    host.run(bound.arrays, bound.uniforms, bound.flags, 20, 4)
    assert_bitwise_equal({k: bound.arrays[k] for k in ("m", "k")},
                         {k: expected[k] for k in ("m", "k")})


def test_matrix_kernels_compile_for_the_gpu_with_nvrtc(tmp_path):
    nvrtc = pytest.importorskip("eagle.cuda.nvrtc")
    from eagle.cuda.emit import STEP_KERNEL, emit_cuda

    for kernel in (linear, load_kernel(_square_source(8), tmp_path, "square")):
        cubin = nvrtc.compile_source(emit_cuda(kernel.specialize({})), "sm_90")
        assert cubin[:4] == b"\x7fELF" and STEP_KERNEL.encode() in cubin


# -- errors ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("body, message", [
    ("m = m * hawk.vector(1.0, 2.0)", r"\* needs matrices of one shape, got Matrix\[2, 2\] "
                                      r"of float64 and Vec2 of float64"),
    ("m = m @ hawk.vector(1.0, 2.0, 3.0)", r"@ needs the inner sizes equal"),
    ("m = m * m[2, 0]", r"a Matrix\[2, 2\] row index must be a constant 0 or 1"),
    ("m = m * m.x", r"a Matrix\[2, 2\] is read as m\[i, j\]"),
    ("m = m * hawk.dot(m, m)", r"hawk.dot\(\) takes vector arguments"),
    ("m = hawk.solve(m, m[0] + 1.0) + hawk.det(hawk.zeros(2, 3))",
     r"hawk.det\(\) takes a square matrix, not a Matrix\[2, 3\]"),
    ("m = m + hawk.matrix((1.0, 2.0), (3.0,))", r"hawk.matrix\(\) takes rows of one length"),
    ("m = m * hawk.width(m)", r"hawk.width\(\) takes a number or a vector"),
    ("m = hawk.vector(1.0, 2.0)", r"'m' is Mutable\[Matrix\[2, 2\]\] and must be assigned a "
                                  r"Matrix\[2, 2\], not Vec2 of float64"),
])
def test_matrix_misuse_is_a_compile_error_at_the_line(tmp_path, body, message):
    source = ("import hawk\nfrom hawk import Matrix, Mutable, Terminated\n\n@hawk.kernel\n"
              "def bad(terminated: Terminated, m: Mutable[Matrix[2, 2]]):\n"
              f"    {body}\n    terminated = m[0, 0] > 1.0\n")
    with pytest.raises(hawk.CompileError, match=message):
        load_kernel(source, tmp_path, "bad")


def test_shapes_and_shared_values_are_checked_by_name_before_anything_runs():
    plan = eagle.deploy(linear, "cpu")
    cases = [
        ("m", lambda n: np.zeros((3, 2, n)), eagle.BindingValueError,
         r"'m' \(Mutable\[Matrix\[3, 3\]\]\) must have shape \(3, 3, n\), got \(3, 2, 20\)"),
        ("a", lambda n: np.zeros((n, 3, 3)), eagle.BindingValueError,
         r"matrices are stored SoA as \(3, 3, n\): pass "
         r"np.ascontiguousarray\(np.moveaxis\(a, 0, -1\)\)"),
        ("gain", lambda n: [1.0, 2.0], eagle.BindingValueError,
         r"'gain' \(Param\[Vec3\]\) must have shape \(3,\), got \(2,\)"),
        ("mix", lambda n: np.ones((3, 2)), eagle.BindingValueError,
         r"'mix' \(Param\[Matrix\[2, 3\]\]\) must have shape \(2, 3\), got \(3, 2\)"),
        ("gain", lambda n: np.array([True, False, True]), eagle.BindingTypeError,
         r"'gain' \(Param\[Vec3\]\) has dtype bool"),
        ("gain", lambda n: 1.0, eagle.BindingValueError,
         r"'gain' \(Param\[Vec3\]\) must have shape \(3,\), got \(\)"),
        ("hist", lambda n: np.zeros((6, 4, n)), eagle.BindingValueError,
         r"'hist' \(Series\[Matrix\[2, 2\]\]\) must have shape \(T, 2, 2, n\)"),
    ]
    for name, make, error, message in cases:
        bindings = linear_bindings(20)
        before = {k: v.copy() for k, v in bindings.items() if isinstance(v, np.ndarray)}
        bindings[name] = make(20)
        with pytest.raises(error, match=message):
            eagle.until_done(plan, max_steps=5, **bindings)
        for k, v in before.items():
            if k != name:
                assert np.array_equal(bindings[k], v, equal_nan=True), k


def test_a_shared_vector_is_read_once_when_bound():
    """A Param vector is passed by value: changing the caller's array after binding does not
    reach the run, and a float32 run takes a list of Python floats as float32."""
    bindings = linear_bindings(30)
    gain = np.array([1.0, -2.0, 0.5])
    bindings["gain"] = gain
    runner = eagle.until_done(eagle.deploy(linear, "cpu"), max_steps=50, **bindings)
    gain[:] = 0.0
    runner.run()
    expected, _ = reference_run(linear, linear_bindings(30), 50)
    assert_bitwise_equal({"x": bindings["x"]}, {"x": expected["x"]})


def test_a_checkpoint_keeps_shared_vectors_and_matrix_state(tmp_path):
    bindings = linear_bindings(40)
    expected, _ = reference_run(linear, bindings, 50)
    restored = resumed_run(linear, bindings, 2, 50, tmp_path / "linear.npz")
    names = ("m", "x", "d", "k", "hist")
    assert_bitwise_equal({k: restored[k] for k in names}, {k: expected[k] for k in names})


# -- eagle.ode.solve with shared parameters ------------------------------------------------------

@hawk.func
def network(u, t, rates):
    """First-order reactions between species: du/dt = rates @ u (a shared rate matrix)."""
    return rates @ u


@hawk.func
def decay(u, t, p):
    return -p[0] * u + p[1]


def test_a_reaction_network_with_a_shared_rate_matrix_matches_scipy():
    """Ten species, a 10 x 10 rate matrix shared by every sample (100 values passed by value),
    against SciPy's Radau with the same matrix in the right-hand side."""
    from scipy.integrate import solve_ivp

    species, n = 10, 64
    rng = np.random.default_rng(5)
    k = rng.uniform(0.0, 1.0, (species, species)) * (rng.uniform(size=(species, species)) < 0.4)
    np.fill_diagonal(k, 0.0)
    rates = k.T - np.diag(k.sum(axis=1))  # column sums are zero: mass is conserved
    u0 = np.ascontiguousarray(rng.dirichlet(np.ones(species), n).T)
    solution = eagle.ode.solve(network, u0, (0.0, 5.0), p=rates, rtol=1e-10, atol=1e-12,
                               saveat=(0.0, 5.0, 6))
    assert solution.plan.kernel.param("p").annotation == "Param[Matrix[10, 10]]"
    np.testing.assert_allclose(solution.u.sum(axis=0), 1.0, rtol=1e-9)
    for i in (0, 41):
        ref = solve_ivp(lambda t, y: rates @ y, (0.0, 5.0), u0[:, i], method="Radau",
                        rtol=1e-12, atol=1e-14, t_eval=np.linspace(0.0, 5.0, 6))
        np.testing.assert_allclose(solution.saved[:, :, i], ref.y.T, rtol=1e-7, atol=1e-10)


def test_shared_vectors_per_sample_matrices_and_a_column_state_are_bound_as_such():
    n = 40
    u0 = np.linspace(1.0, 2.0, n)[None, :]  # (1, n): solved as (n,), given back as (1, n)
    shared = eagle.ode.solve(decay, u0, (0.0, 1.0), p=np.array([0.5, 0.1]), rtol=1e-10,
                             atol=1e-12, saveat=(0.0, 1.0, 3))
    assert shared.plan.kernel.param("p").annotation == "Param[Vec2]"
    assert shared.u.shape == (1, n) and shared.saved.shape == (3, 1, n)
    exact = 0.2 + (u0[0] - 0.2) * np.exp(-0.5)
    np.testing.assert_allclose(shared.u[0], exact, rtol=1e-9)
    per_sample = eagle.ode.solve(decay, u0[0], (0.0, 1.0), p=[0.5, 0.1], rtol=1e-10,
                                 atol=1e-12)
    assert per_sample.plan.kernel.param("p").annotation == "Vec2"
    assert_bitwise_equal({"u": per_sample.u}, {"u": shared.u[0]})  # the same numbers

    @hawk.func
    def rotating(u, t, m):
        return m @ u

    m = np.zeros((2, 2, n))
    m[0, 1], m[1, 0] = 1.0, -1.0  # u'' = -u, per sample
    matrix = eagle.ode.solve(rotating, np.vstack([np.zeros(n), np.ones(n)]), (0.0, 1.0), p=m,
                             rtol=1e-10, atol=1e-12)
    assert matrix.plan.kernel.param("p").annotation == "Matrix[2, 2]"
    np.testing.assert_allclose(matrix.u[0], np.sin(1.0), rtol=1e-8)


@hawk.kernel(dtypes={"k": "int64"})
def rotated(a: Matrix[3, 3], gain: Param[Vec3], mix: Param[Matrix[2, 3]],
            terminated: Terminated, k: Mutable[Scalar], hist: Series[Matrix[2, 2]]):
    hist[k] = hawk.matrix((a[1, 1], a[0, 0]), (gain[2], mix[1, 2]))
    k += 1
    terminated = k >= 3


def test_an_artifact_sidecar_keeps_matrix_shapes_and_shared_vectors(tmp_path):
    """The sidecar records a matrix's columns and each layout; reading it back gives the
    kernel's own parameters, so LoadedVector binds (R, C, n) and (K,) arrays as eagle does."""
    pytest.importorskip("eagle.cuda.nvrtc")
    from eagle.cuda.artifact import read_artifact, write_artifact

    program = rotated.specialize({})
    path, _ = write_artifact(program, "cubin", tmp_path / "rotated.cubin")
    artifact = read_artifact(path)
    assert artifact.params == program.params
    layouts = {p["name"]: p["layout"] for p in artifact.meta["parameters"]}
    assert layouts["a"] == "(3, 3, n) SoA" and layouts["gain"] == "(3) by value, row-major"
    assert layouts["mix"] == "(2, 3) by value, row-major"
    assert layouts["hist"] == "(T, 2, 2, n) rows, the sample axis contiguous"
    slots = [a["name"] for a in artifact.meta["arguments"]]
    assert slots[3:9] == ["p_a_0", "p_a_1", "p_a_2", "p_a_3", "p_a_4", "p_a_5"]
    assert "p_mix_5" in slots and "p_gain_2" in slots
