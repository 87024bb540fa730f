"""Helper functions (``@hawk.func``) and fixed loops (``for i in range(K)``) compute what Python
would, and cost nothing: a kernel that calls a func, or loops, lowers to the very program (and
emits the very code) of the same kernel written out by hand.

Values are checked bit for bit against the same funcs run as plain Python (a func called from
Python is the function it decorates) on floats, or on NumPy arrays for vectors, whose
elementwise ``+ - * /`` round exactly as the kernel's ops do.
"""

# ruff: noqa: F841

from __future__ import annotations

import math

import numpy as np
import pytest

import hawk
from eagle.cpu.emit import emit_launch
from eagle.cuda.emit import emit_cuda
from hawk import Mutable, Out, Param, Scalar, Terminated, Vec2, Vec3
from hawk.ir import DType, OpKind
from hawk.source import import_file
from test_hawk_language import RNG, A, B, N, P, assert_same, step_once

MU = 1.5
SUBSTEPS = 4

# -- funcs: an RK4 stepper written once, given each model's right-hand side -----------------------


@hawk.func
def rk4(f, y, t, dt):
    """One classic Runge-Kutta step of y' = f(y, t)."""
    k1 = f(y, t)
    k2 = f(y + 0.5 * dt * k1, t + 0.5 * dt)
    k3 = f(y + 0.5 * dt * k2, t + 0.5 * dt)
    k4 = f(y + dt * k3, t + dt)
    return y + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


@hawk.func
def van_der_pol(y, t):
    return hawk.vec2(y.y, MU * (1.0 - y.x * y.x) * y.y - y.x)


@hawk.func
def pendulum(y, t):
    return hawk.vec2(y.y, -math.sin(y.x))


@hawk.kernel
def vdp_rk4(y: Mutable[Vec2], t: Mutable[Scalar], dt: Param):
    y = rk4(van_der_pol, y, t, dt)
    t += dt


@hawk.kernel
def pendulum_rk4(y: Mutable[Vec2], t: Mutable[Scalar], dt: Param):
    y = rk4(pendulum, y, t, dt)
    t += dt


@pytest.mark.parametrize("kernel, rhs", [(vdp_rk4, van_der_pol), (pendulum_rk4, pendulum)])
def test_one_rk4_func_serves_two_models_as_python_would(kernel, rhs):
    y0, t0, dt = RNG.normal(size=(2, N)), RNG.uniform(size=N), 0.01
    result = step_once(kernel, y=y0, t=t0, dt=dt)
    # rk4 is a plain function from Python: the same step on NumPy arrays, given the model's
    # right-hand side written for arrays (math.sin per sample, as the reference computes it)
    def on_arrays(y, t):
        if rhs is pendulum:
            return np.stack([y[1], -np.array([math.sin(v) for v in y[0]])])
        return np.stack([y[1], MU * (1.0 - y[0] * y[0]) * y[1] - y[0]])

    assert_same(result["y"], rk4(on_arrays, y0, t0, dt))
    assert_same(result["t"], t0 + dt)
    assert kernel.program.ops  # each model's own copy of the stepper, typed for it


# -- no cost: a func lowers to what the same code written out by hand does ------------------------


@hawk.func
def kick(v, a, dt):
    return v + dt * a


@hawk.func
def gravity(p, mu):
    r = hawk.length(p)
    return -mu * p / (r * r * r)


@hawk.kernel
def orbit_with_funcs(mu: Param, dt: Param, p: Mutable[Vec3], v: Mutable[Vec3]):
    v = kick(v, gravity(p, mu), dt)
    p = p + dt * v


@hawk.kernel
def orbit_by_hand(mu: Param, dt: Param, p: Mutable[Vec3], v: Mutable[Vec3]):
    r = hawk.length(p)
    v = v + dt * (-mu * p / (r * r * r))
    p = p + dt * v


@hawk.kernel
def loop_kernel(p: Mutable[Vec3], total: Out[Scalar]):
    acc = 0.0
    for i in range(3):
        acc += p[i] * p[i]
        p[i] = p[i] * 0.5
    total = acc


@hawk.kernel
def unrolled_by_hand(p: Mutable[Vec3], total: Out[Scalar]):
    acc = 0.0
    acc += p[0] * p[0]
    p[0] = p[0] * 0.5
    acc += p[1] * p[1]
    p[1] = p[1] * 0.5
    acc += p[2] * p[2]
    p[2] = p[2] * 0.5
    total = acc


@pytest.mark.parametrize("ours, by_hand", [(orbit_with_funcs, orbit_by_hand),
                                           (loop_kernel, unrolled_by_hand)],
                         ids=["func", "loop"])
def test_funcs_and_loops_emit_the_hand_written_kernels_code(ours, by_hand):
    for dtypes in ({}, {name: np.float32 for name in ("p", "v", "total")}):
        a, b = ours.specialize(dtypes), by_hand.specialize(dtypes)
        assert str(a).split("\n", 1)[1] == str(b).split("\n", 1)[1]  # all but the name
        assert a.ops == b.ops and a.stores == b.stores
        for emit in (emit_launch, emit_cuda):
            assert emit(a).replace(ours.name, by_hand.name) == emit(b)


# -- funcs take and return scalars, vectors, tuples and funcs; typed per call site ----------------


@hawk.func
def twice(x):
    return x + x


@hawk.kernel
def per_call_site(x32: Scalar, x64: Scalar, n: Scalar, a: Out[Scalar], b: Out[Scalar],
                  c: Out[Scalar]):
    a = twice(x32)
    b = twice(x64)
    c = twice(n)


def test_a_func_is_typed_per_call_site():
    program = per_call_site.specialize({"x32": np.float32, "n": np.int64, "a": np.float32,
                                        "c": np.int64})
    adds = [op.dtype for op in program.ops if op.kind is OpKind.ADD]
    assert adds == [DType.FLOAT32, DType.FLOAT64, DType.INT64]
    assert not any(op.kind is OpKind.CAST for op in program.ops)
    result = step_once(per_call_site, {"x32": np.float32, "n": np.int64, "a": np.float32,
                                       "c": np.int64},
                       x32=A.astype(np.float32), x64=B, n=np.arange(N), a=np.zeros(N, np.float32),
                       b=np.zeros(N), c=np.zeros(N, np.int64))
    assert_same(result["a"], A.astype(np.float32) * np.float32(2))
    assert_same(result["c"], 2 * np.arange(N))


@hawk.func
def polar(x, y):
    """A tuple out."""
    return math.hypot(x, y), math.atan2(y, x)


@hawk.func
def from_polar(rt, scale=1.0):
    """A tuple in, a default argument."""
    r, theta = rt
    return hawk.vec2(scale * r * math.cos(theta), scale * r * math.sin(theta))


@hawk.func
def clamp(x, lo, hi):
    """Early returns: each `if` that returns has the rest of the body as its else."""
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


@hawk.func
def apply_twice(f, x):
    return f(f(x))


@hawk.kernel
def tuples_and_returns(a: Scalar, b: Scalar, r: Out[Scalar], theta: Out[Scalar],
                       back: Out[Vec2], c: Out[Scalar], s: Out[Scalar], q: Out[Scalar]):
    r, theta = polar(a, b)
    both = polar(b, a)  # a tuple is a value: named, indexed, passed on
    back = from_polar(both, scale=2.0) + from_polar(polar(a, b))
    c = clamp(a, -1.0, hi=1.0)
    s = apply_twice(math.sin, a) + apply_twice(twice, b)
    q = both[0] - polar(a, b)[-1]


def _tuples_and_returns(a, b):
    r, theta = math.hypot(a, b), math.atan2(b, a)
    r2, t2 = math.hypot(b, a), math.atan2(a, b)
    back = [2.0 * r2 * math.cos(t2) + 1.0 * r * math.cos(theta),
            2.0 * r2 * math.sin(t2) + 1.0 * r * math.sin(theta)]
    c = -1.0 if a < -1.0 else (1.0 if a > 1.0 else a)
    s = math.sin(math.sin(a)) + ((b + b) + (b + b))
    return [r, theta, *back, c, s, r2 - theta]


def test_funcs_take_and_return_tuples_vectors_and_funcs():
    outs = {name: np.zeros(N) for name in ("r", "theta", "c", "s", "q")}
    result = step_once(tuples_and_returns, a=A, b=B, back=np.zeros((2, N)), **outs)
    got = np.stack([result["r"], result["theta"], *result["back"], result["c"], result["s"],
                    result["q"]])
    expected = np.array([_tuples_and_returns(a, b) for a, b in zip(A, B, strict=True)]).T
    # the C library's hypot, as the reference uses (CPython's own may differ in the last bit)
    expected[0] = np.hypot(A, B)
    r2, t2 = np.hypot(B, A), np.array([math.atan2(a, b) for a, b in zip(A, B, strict=True)])
    theta = np.array([math.atan2(b, a) for a, b in zip(A, B, strict=True)])
    expected[6] = r2 - theta
    cos, sin = np.vectorize(math.cos), np.vectorize(math.sin)
    expected[2] = 2.0 * r2 * cos(t2) + 1.0 * np.hypot(A, B) * cos(theta)
    expected[3] = 2.0 * r2 * sin(t2) + 1.0 * np.hypot(A, B) * sin(theta)
    assert_same(got, expected)


def test_funcs_from_another_module_by_attribute(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "integrators_14a.py").write_text(
        "import hawk\n\nDT = 0.25\n\n\n@hawk.func\ndef euler(f, y):\n    return y + DT * f(y)\n")
    (tmp_path / "model_14a.py").write_text(
        "import hawk\nimport integrators_14a\nfrom hawk import Mutable, Scalar\n\n\n"
        "@hawk.func\ndef decay(y):\n    return -y\n\n\n@hawk.kernel\n"
        "def k(y: Mutable[Scalar]):\n"
        "    y = integrators_14a.euler(decay, y) * integrators_14a.DT\n")
    k = import_file(tmp_path / "model_14a.py", "model_14a", keep=False).k
    assert_same(step_once(k, y=A)["y"], (A + 0.25 * -A) * 0.25)


def test_star_parameters_spread_arguments_and_tuple_slices_work_as_in_python(tmp_path,
                                                                         monkeypatch):
    """``def g(x, *rest)`` takes the remaining arguments as a tuple, ``g(*t)`` spreads a tuple
    (a slice of one too) into a call: how a wrapper passes on what it does not read (the ODE
    kernels' tables, an event's index)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "spread_29.py").write_text(
        "import hawk\nfrom hawk import Mutable, Scalar\n\n\n"
        "@hawk.func\ndef weigh(a, b, c):\n    return a + 10.0 * b + 100.0 * c\n\n\n"
        "@hawk.func\ndef passes_on(x, *rest):\n    return weigh(x, *rest)\n\n\n"
        "@hawk.func\ndef nothing(*rest):\n    return 7.0\n\n\n"
        "@hawk.kernel\ndef k(x: Mutable[Scalar], y: Scalar):\n"
        "    t = (y, 2.0, 3.0, 4.0)\n"
        "    x = passes_on(x, *t[1:3]) + weigh(*t[::2], x) + nothing() + passes_on(*(y, y), 1.0)\n")
    k = import_file(tmp_path / "spread_29.py", "spread_29", keep=False).k
    expected = (A + 20.0 + 300.0) + (B + 30.0 + 100.0 * A) + 7.0 + (B + 10.0 * B + 100.0)
    assert_same(step_once(k, x=A, y=B)["x"], expected)


def test_global_tuples_of_numbers_and_tuple_concatenation_work_as_in_python(tmp_path,
                                                                          monkeypatch):
    """A method's coefficients as a global tuple (nested, indexed by loop variables, a zero
    weight skipped at compile time) and stages gathered with ``ks = ks + (k,)``."""
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "tuples_29.py").write_text(
        "import hawk\nfrom hawk import Mutable, Scalar\n\n"
        "WEIGHTS = ((), (0.5,), (0.25, 0.0))\n\n\n"
        "@hawk.func\ndef spread(t):\n    return t[1] - t[0]\n\n\n"
        "@hawk.kernel\ndef k(x: Mutable[Scalar]):\n"
        "    ks = (x,)\n"
        "    for s in range(1, 3):\n"
        "        total = x\n"
        "        for i in range(s):\n"
        "            if WEIGHTS[s][i] != 0.0:\n"
        "                total = total + WEIGHTS[s][i] * ks[i]\n"
        "        ks = ks + (total,)\n"
        "    x = ks[2] + 10.0 * spread(ks)\n")
    k = import_file(tmp_path / "tuples_29.py", "tuples_29", keep=False).k
    second = A + 0.5 * A
    third = A + 0.25 * A
    assert_same(step_once(k, x=A)["x"], third + 10.0 * (second - A))


# -- loops ----------------------------------------------------------------------------------------


@hawk.kernel
def loops(n: Scalar, p: Mutable[Vec3], x: Mutable[Scalar], k: Out[Scalar], last: Out[Scalar]):
    for i in range(SUBSTEPS):  # a global int constant
        x = x + 0.125 * i
        if x > 2.0:
            x = x - 1.0
    total = 0.0
    for i in range(2, -1, -1):  # start, stop, negative step
        for j in range(i):  # nested: the outer variable bounds the inner loop
            total += p[i] * p[j]
    p[i] = total  # the loop variable keeps its last value (0) after the loop
    k = n + i + SUBSTEPS * 2  # an int, like any literal: int64 beside an int64
    last = float(i)


def _loops(n, p, x):
    p = list(p)
    for i in range(SUBSTEPS):
        x = x + 0.125 * i
        if x > 2.0:
            x = x - 1.0
    total = 0.0
    for i in range(2, -1, -1):
        for j in range(i):
            total += p[i] * p[j]
    p[i] = total
    return [*p, x]


def test_loops_unroll_to_what_python_computes():
    n = np.arange(N, dtype=np.int64)
    x = RNG.uniform(0.0, 3.0, N)
    result = step_once(loops, {"n": np.int64, "k": np.int64}, n=n, p=P, x=x,
                       k=np.zeros(N, np.int64), last=np.zeros(N))
    expected = np.array([_loops(ni, pi, xi) for ni, pi, xi in zip(n, P.T, x, strict=True)]).T
    assert_same(np.concatenate([result["p"], result["x"][None]]), expected)
    assert_same(result["k"], n + 8)
    assert_same(result["last"], np.zeros(N))


@hawk.func
def substeps(f, y, dt, n):
    """n steps of size dt / n: a loop whose bound is the func's argument."""
    h = dt / n
    for _ in range(n):
        y = y + h * f(y)
    return y


@hawk.func
def spring(y):
    return hawk.vec2(y.y, -y.x)


@hawk.kernel
def substepped(y: Mutable[Vec2], dt: Param, terminated: Terminated, t: Mutable[Scalar]):
    y = substeps(spring, y, dt, 3)
    t += dt
    terminated = t >= 1.0


def test_a_loop_bound_given_to_a_func_as_a_constant():
    y0 = RNG.normal(size=(2, N))
    result = step_once(substepped, y=y0, dt=0.3, t=np.zeros(N), terminated=np.zeros(N, bool))
    expected = y0
    for _ in range(3):
        expected = expected + (0.3 / 3) * np.stack([expected[1], -expected[0]])
    assert_same(result["y"], expected)


def test_plain_python_semantics_of_the_loop_variable_in_the_ir():
    # i is a compile-time constant: no op is emitted for it, and p[i] is a plain load
    assert all(op.kind is not OpKind.CAST for op in loop_kernel.program.ops)
    assert [op.attr for op in loop_kernel.program.ops if op.kind is OpKind.LOAD] == [
        ("p", 0), ("p", 1), ("p", 2)]


def test_a_vector_is_built_from_a_tuple_spread_into_vector(tmp_path, monkeypatch):
    """``hawk.vector(*components)``: components gathered in a loop (``r = r + (x,)``) become a
    vector, as a refined solve builds its residual; a tuple not spread is refused by name."""
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "spread_vector.py").write_text(
        "import hawk\nfrom hawk import Mutable, Scalar\n\n\n"
        "@hawk.kernel\ndef k(x: Mutable[Scalar], y: Scalar):\n"
        "    parts = ()\n"
        "    for i in range(3):\n"
        "        parts = parts + (x + float(i) * y,)\n"
        "    v = hawk.vector(*parts, y)\n"
        "    x = v[0] + 10.0 * v[2] + 100.0 * v[3]\n")
    k = import_file(tmp_path / "spread_vector.py", "spread_vector", keep=False).k
    assert_same(step_once(k, x=A, y=B)["x"], A + 10.0 * (A + 2.0 * B) + 100.0 * B)
    (tmp_path / "unspread_vector.py").write_text(
        "import hawk\nfrom hawk import Mutable, Scalar\n\n\n"
        "@hawk.kernel\ndef k(x: Mutable[Scalar]):\n"
        "    v = hawk.vector((x, x))\n"
        "    x = v[0]\n")
    with pytest.raises(hawk.CompileError, match=r"spread one with hawk.vector\(\*components\)"):
        import_file(tmp_path / "unspread_vector.py", "unspread_vector", keep=False).k.specialize({})
