"""Every supported hawk construct compiles and computes what Python would.

Each kernel is stepped with the NumPy reference executor (``hawk.reference``) and compared,
bit for bit, against the same arithmetic done one sample at a time in plain Python (or, for
float32, in NumPy float32 scalars).
"""

# ruff: noqa: F841

from __future__ import annotations

import math
from math import atan2, sqrt

import numpy as np
import pytest

import hawk
from hawk import Mutable, Out, Param, Scalar, Terminated, Vec2, Vec3, Vec4
from hawk.ir import DType, OpKind
from hawk.reference import run, step

N = 257
RNG = np.random.default_rng(20240611)
A = RNG.normal(scale=3.0, size=N)
B = RNG.choice([-1.0, 1.0], size=N) * RNG.uniform(0.25, 4.0, size=N)  # never near zero
A[:6] = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0]  # a few exact values, incl. a signed zero
B[:6] = [1.0, -1.0, 2.0, 0.5, -2.0, 3.0]
P = RNG.normal(size=(3, N))
Q = RNG.normal(size=(3, N))


def per_sample(fn, *columns) -> np.ndarray:
    """``fn`` applied to each sample's Python floats, collected into a float64 array."""
    rows = zip(*(np.asarray(c).tolist() for c in columns), strict=True)
    return np.array([fn(*row) for row in rows], dtype=np.float64)


def per_sample_vec(fn, *columns) -> np.ndarray:
    """Like ``per_sample`` for a vector result: ``(3, n)``; vector columns are given as (3, n)."""
    cols = [np.asarray(c).T.tolist() if np.ndim(c) == 2 else np.asarray(c).tolist()
            for c in columns]
    return np.array([fn(*row) for row in zip(*cols, strict=True)], dtype=np.float64).T


def assert_same(actual, expected):
    """Equal bit for bit, with NaN equal to NaN and -0.0 distinct from 0.0."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape
    same = (actual == expected) & (np.signbit(actual) == np.signbit(expected))
    same |= np.isnan(actual) & np.isnan(expected)
    bad = np.flatnonzero(~same.ravel())
    assert bad.size == 0, f"{bad.size} mismatches, first at {bad[0]}: " \
        f"{actual.ravel()[bad[0]]!r} != {expected.ravel()[bad[0]]!r}"


def step_once(kernel, dtypes=None, **arrays):
    """One reference step of ``kernel`` on copies of ``arrays``; returns the arrays."""
    arrays = {k: np.array(v) if isinstance(v, np.ndarray) else v for k, v in arrays.items()}
    step(kernel.specialize(dtypes or {}), arrays)
    return arrays


def out_of(kernel, **inputs):
    """Step a kernel whose one output is ``out: Out[Scalar]`` and return it."""
    return step_once(kernel, out=np.full(N, np.nan), **inputs)["out"]


# -- arithmetic ----------------------------------------------------------------------------------


@hawk.kernel
def arithmetic(a: Scalar, b: Scalar, out: Out[Scalar]):
    out = (a + b) * (a - b) / b - a // b + a % b - (-a) + (+b)


@hawk.kernel
def constant_arithmetic(a: Scalar, out: Out[Scalar]):
    out = a * (1 + 2 * 3) / 4 - 7 // 2 + 7 % 3 + 2**-1 + 2**10


@hawk.kernel
def powers(a: Scalar, b: Scalar, out: Out[Scalar]):
    out = a**2 + b**3 - a**4 + abs(b) ** 0.5 + math.pow(abs(a) + 0.5, b) + math.pow(abs(b), a)


def test_arithmetic():
    expected = per_sample(lambda a, b: (a + b) * (a - b) / b - a // b + a % b - (-a) + (+b),
                          A, B)
    assert_same(out_of(arithmetic, a=A, b=B), expected)


def test_constant_expressions_fold_like_python():
    expected = per_sample(lambda a: a * (1 + 2 * 3) / 4 - 7 // 2 + 7 % 3 + 2**-1 + 2**10, A)
    assert_same(out_of(constant_arithmetic, a=A), expected)
    ops = constant_arithmetic.program.ops
    assert not any(op.kind is OpKind.CALL for op in ops)  # 2**-1 and 2**10 folded
    assert {op.attr for op in ops if op.kind is OpKind.CONST} == {7.0, 4.0, 3.0, 1.0, 0.5,
                                                                  1024.0}


def test_powers_small_integer_exponents_are_multiplications():
    # x**2 is x*x, x**3 is (x*x)*x, x**4 ((x*x)*x)*x; anything else is C pow
    def expected(a, b):
        return (a * a) + (b * b * b) - (a * a * a * a) + math.pow(abs(b), 0.5) \
            + math.pow(abs(a) + 0.5, b) + math.pow(abs(b), a)

    assert_same(out_of(powers, a=A, b=B), per_sample(expected, A, B))
    calls = [op.attr for op in powers.program.ops if op.kind is OpKind.CALL]
    assert calls == ["pow", "pow", "pow"]


@hawk.kernel
def square(a: Scalar, out: Out[Scalar]):
    out = a**2


def test_square_is_one_multiplication():
    kinds = [op.kind for op in square.program.ops]
    assert kinds == [OpKind.LOAD, OpKind.MUL]
    assert_same(out_of(square, a=A), A * A)


# -- comparisons and logic -----------------------------------------------------------------------


@hawk.kernel
def comparisons(a: Scalar, b: Scalar, out: Out[Scalar]):
    bits = 0.0
    bits += 1.0 if a < b else 0.0
    bits += 2.0 if a <= b else 0.0
    bits += 4.0 if a > b else 0.0
    bits += 8.0 if a >= b else 0.0
    bits += 16.0 if a == b else 0.0
    bits += 32.0 if a != b else 0.0
    bits += 64.0 if 0 < a < 1 else 0.0
    bits += 128.0 if -1.0 <= a < b <= 2 else 0.0
    out = bits


def _comparisons(a, b):
    bits = 0.0
    bits += 1.0 if a < b else 0.0
    bits += 2.0 if a <= b else 0.0
    bits += 4.0 if a > b else 0.0
    bits += 8.0 if a >= b else 0.0
    bits += 16.0 if a == b else 0.0
    bits += 32.0 if a != b else 0.0
    bits += 64.0 if 0 < a < 1 else 0.0
    bits += 128.0 if -1.0 <= a < b <= 2 else 0.0
    return bits


def test_comparisons_including_chained():
    a = np.concatenate([A, [0.5, 1.0, 0.0, -1.0, 2.0]])
    b = np.concatenate([B, [0.5, 2.0, 0.0, 2.0, 2.0]])
    result = step_once(comparisons, a=a, b=b, out=np.zeros(len(a)))["out"]
    assert_same(result, per_sample(_comparisons, a, b))


@hawk.kernel
def logic(a: Scalar, b: Scalar, out: Out[Scalar]):
    p = a > 0
    q = b > 0
    r = (p and q) or (not p and not q)
    s = p or q and not (a > b)
    t = p == q
    u = p != (not q)
    out = (1.0 if r else 0.0) + (2.0 if s else 0.0) + (4.0 if t else 0.0) + (8.0 if u else 0.0)


def _logic(a, b):
    p, q = a > 0, b > 0
    r = (p and q) or (not p and not q)
    s = p or q and not (a > b)
    t = p == q
    u = p != (not q)
    return (1.0 if r else 0.0) + (2.0 if s else 0.0) + (4.0 if t else 0.0) + (8.0 if u else 0.0)


def test_and_or_not():
    assert_same(out_of(logic, a=A, b=B), per_sample(_logic, A, B))


@hawk.kernel
def ternary(a: Scalar, b: Scalar, out: Out[Scalar]):
    out = a if a > b else (b if b > 0 else -b) * 2


def test_ternary():
    expected = per_sample(lambda a, b: a if a > b else (b if b > 0 else -b) * 2, A, B)
    assert_same(out_of(ternary, a=A, b=B), expected)


# -- blocks, unpacking, augmented assignment -----------------------------------------------------


@hawk.kernel
def branches(a: Scalar, b: Scalar, out: Out[Scalar]):
    y = 0.0
    if a > 1.0:
        y = a * 2
        if b > 0:
            y += b
        else:
            y -= b
            z = 3.0
    elif a > -1.0:
        if b > 1.0:
            y = 10.0
        elif b > 0.0:
            y = 20.0
        else:
            pass
    else:
        y = -a
    out = y


def _branches(a, b):
    y = 0.0
    if a > 1.0:
        y = a * 2
        if b > 0:
            y += b
        else:
            y -= b
    elif a > -1.0:
        if b > 1.0:
            y = 10.0
        elif b > 0.0:
            y = 20.0
    else:
        y = -a
    return y


def test_if_elif_else_nested():
    assert_same(out_of(branches, a=A, b=B), per_sample(_branches, A, B))
    assert not any(op.kind is OpKind.CALL for op in branches.program.ops)


@hawk.kernel
def branch_writes_state(a: Scalar, x: Mutable[Scalar], v: Mutable[Scalar]):
    if a > 0:
        x = x + a
    else:
        v = v - a


def test_if_assigning_state_on_one_branch_keeps_the_other():
    x, v = np.arange(N, dtype=float), np.arange(N, dtype=float) * 10
    result = step_once(branch_writes_state, a=A, x=x, v=v)
    assert_same(result["x"], np.where(A > 0, x + A, x))
    assert_same(result["v"], np.where(A > 0, v, v - A))


@hawk.kernel
def swap(a: Mutable[Scalar], b: Mutable[Scalar]):
    a, b = b, a


@hawk.kernel
def unpacking(a: Scalar, b: Scalar, out: Out[Scalar]):
    s, d = a + b, a - b
    p = q = s * d
    (m, n), k = (a, b), 2.0
    out = p + q + m * n * k


def test_tuple_unpacking_and_swap():
    result = step_once(swap, a=A, b=B)
    assert_same(result["a"], B)
    assert_same(result["b"], A)
    expected = per_sample(lambda a, b: 2 * ((a + b) * (a - b)) + a * b * 2.0, A, B)
    assert_same(out_of(unpacking, a=A, b=B), expected)


@hawk.kernel
def augmented(a: Scalar, b: Scalar, x: Mutable[Scalar]):
    x += a
    x -= b
    x *= b
    x /= a + 10.0
    x **= 2
    x //= b
    x %= 3.0
    x += abs(b) ** 0.25


def _augmented(x, a, b):
    x += a
    x -= b
    x *= b
    x /= a + 10.0
    x = x * x
    x //= b
    x %= 3.0
    x += abs(b) ** 0.25
    return x


def test_augmented_assignment():
    x = RNG.normal(size=N)
    assert_same(step_once(augmented, a=A, b=B, x=x)["x"], per_sample(_augmented, x, A, B))


@hawk.kernel
def temporaries(x: Mutable[Scalar], v: Mutable[Scalar], dt: Param):
    x = x + dt * v  # rebinds the local: the next line sees the new x
    v = v - dt * x
    energy = 0.5 * (x * x + v * v)
    x = x * energy


def test_locals_see_assignments_in_order_and_params_broadcast():
    x, v = A.copy(), B.copy()

    def expected(x, v):
        x = x + 0.01 * v
        v = v - 0.01 * x
        return x * (0.5 * (x * x + v * v)), v

    result = step_once(temporaries, x=x, v=v, dt=0.01)
    rows = [expected(*row) for row in zip(x.tolist(), v.tolist(), strict=True)]
    assert_same(result["x"], np.array([r[0] for r in rows]))
    assert_same(result["v"], np.array([r[1] for r in rows]))


# -- math ----------------------------------------------------------------------------------------

MATH_CASES = {
    "sqrt": (lambda a, b: math.sqrt(abs(a))),
    "exp": (lambda a, b: math.exp(a)),
    "log": (lambda a, b: math.log(abs(a) + 0.5)),
    "sin": (lambda a, b: math.sin(a)),
    "cos": (lambda a, b: math.cos(a)),
    "tan": (lambda a, b: math.tan(a)),
    "atan2": (lambda a, b: math.atan2(a, b)),
    "tanh": (lambda a, b: math.tanh(a)),
    "fabs": (lambda a, b: math.fabs(a)),
    # C floor/ceil: a float, and -0.0 where Python's int result would be 0
    "floor": (lambda a, b: math.copysign(math.floor(a * 3), a) if a * 3 > -1 else
              float(math.floor(a * 3))),
    "ceil": (lambda a, b: math.copysign(math.ceil(a * 3), a) if a * 3 > -1 else
             float(math.ceil(a * 3))),
    "pow": (lambda a, b: math.pow(abs(a) + 0.5, b)),
    "hypot": (lambda a, b: float(np.hypot(a, b))),  # the C library's hypot, not CPython's
    "min": (lambda a, b: min(a, b)),
    "min3": (lambda a, b: min(a, b, 0.0)),
    "max": (lambda a, b: max(a, b)),
    "max3": (lambda a, b: max(b, 1, a)),
    "abs": (lambda a, b: abs(a)),
    "pi": (lambda a, b: a * math.pi + math.e - math.tau),
    "bare": (lambda a, b: math.sqrt(abs(b)) + math.atan2(b, a)),
    # issue 14's functions (asin, acos: arguments in (-1, 1); log10, log1p: positive)
    "asin": (lambda a, b: math.asin(a / (1.0 + abs(a)))),
    "acos": (lambda a, b: math.acos(b / (1.0 + abs(b)))),
    "atan": (lambda a, b: math.atan(a)),
    "erf": (lambda a, b: math.erf(a)),
    "log10": (lambda a, b: math.log10(abs(a) + 0.5)),
    "log1p": (lambda a, b: math.log1p(abs(b))),
    "expm1": (lambda a, b: math.expm1(a)),
    "cbrt": (lambda a, b: math.cbrt(b)),
    "sinh": (lambda a, b: math.sinh(a)),
    "cosh": (lambda a, b: math.cosh(b)),
}


@hawk.kernel
def math_functions(a: Scalar, b: Scalar,
                   sqrt_: Out[Scalar], exp_: Out[Scalar], log_: Out[Scalar], sin_: Out[Scalar],
                   cos_: Out[Scalar], tan_: Out[Scalar], atan2_: Out[Scalar], tanh_: Out[Scalar],
                   fabs_: Out[Scalar], floor_: Out[Scalar], ceil_: Out[Scalar], pow_: Out[Scalar],
                   hypot_: Out[Scalar], min_: Out[Scalar], min3_: Out[Scalar], max_: Out[Scalar],
                   max3_: Out[Scalar], abs_: Out[Scalar], pi_: Out[Scalar], bare_: Out[Scalar],
                   asin_: Out[Scalar], acos_: Out[Scalar], atan_: Out[Scalar], erf_: Out[Scalar],
                   log10_: Out[Scalar], log1p_: Out[Scalar], expm1_: Out[Scalar],
                   cbrt_: Out[Scalar], sinh_: Out[Scalar], cosh_: Out[Scalar]):
    sqrt_ = math.sqrt(abs(a))
    exp_ = math.exp(a)
    log_ = math.log(abs(a) + 0.5)
    sin_ = math.sin(a)
    cos_ = math.cos(a)
    tan_ = math.tan(a)
    atan2_ = math.atan2(a, b)
    tanh_ = math.tanh(a)
    fabs_ = math.fabs(a)
    floor_ = math.floor(a * 3)
    ceil_ = math.ceil(a * 3)
    pow_ = math.pow(abs(a) + 0.5, b)
    hypot_ = math.hypot(a, b)
    min_ = min(a, b)
    min3_ = min(a, b, 0.0)
    max_ = max(a, b)
    max3_ = max(b, 1, a)
    abs_ = abs(a)
    pi_ = a * math.pi + math.e - math.tau
    bare_ = sqrt(abs(b)) + atan2(b, a)  # math functions imported by name
    asin_ = math.asin(a / (1.0 + abs(a)))
    acos_ = math.acos(b / (1.0 + abs(b)))
    atan_ = math.atan(a)
    erf_ = math.erf(a)
    log10_ = math.log10(abs(a) + 0.5)
    log1p_ = math.log1p(abs(b))
    expm1_ = math.expm1(a)
    cbrt_ = math.cbrt(b)
    sinh_ = math.sinh(a)
    cosh_ = math.cosh(b)


@pytest.mark.parametrize("name", MATH_CASES)
def test_math_function(name):
    outs = {f"{k}_": np.full(N, np.nan) for k in MATH_CASES}
    result = step_once(math_functions, a=A, b=B, **outs)[f"{name}_"]
    assert_same(result, per_sample(MATH_CASES[name], A, B))


def test_math_function_cases_cover_every_math_function():
    assert set(hawk.ir.MATH_FUNCTIONS) <= set(MATH_CASES)


@hawk.kernel
def math_edges(a: Scalar, out: Out[Scalar]):
    out = math.log(a) + math.exp(a * 1000.0) + math.sqrt(a) + math.pow(a, -1.0) + math.sin(1 / a)


def test_math_domain_errors_give_c_results_not_exceptions():
    a = np.array([-1.0, 0.0, 1.0, np.inf, np.nan])
    with np.errstate(all="ignore"):
        expected = np.log(a) + np.exp(a * 1000.0) + np.sqrt(a) + a**-1.0 + np.sin(1 / a)
    assert_same(step_once(math_edges, a=a, out=np.zeros(5))["out"], expected)


@hawk.kernel
def min_max_nan(a: Scalar, b: Scalar, lo: Out[Scalar], hi: Out[Scalar]):
    lo = min(a, b)
    hi = max(a, b)


def test_min_max_follow_python_with_nan_and_signed_zero():
    a = np.array([np.nan, 1.0, 0.0, -0.0, 2.0])
    b = np.array([1.0, np.nan, -0.0, 0.0, 2.0])
    result = step_once(min_max_nan, a=a, b=b, lo=np.zeros(5), hi=np.zeros(5))
    assert_same(result["lo"], per_sample(min, a, b))
    assert_same(result["hi"], per_sample(max, a, b))


@hawk.kernel
def conversion(k: Scalar, out: Out[Scalar]):
    out = float(k) / 2


def test_float_conversion_of_an_int64_input():
    k = np.arange(-5, N - 5, dtype=np.int64)
    result = step_once(conversion, {"k": np.int64}, k=k, out=np.zeros(N))["out"]
    assert_same(result, per_sample(lambda k: float(k) / 2, k))


# -- vectors -------------------------------------------------------------------------------------


@hawk.kernel
def vector_ops(p: Vec3, q: Vec3, s: Scalar, r: Out[Vec3], d: Out[Scalar], n: Out[Scalar],
               c: Out[Scalar]):
    u = (p + q) * s - q / 2.0 + 3.0 * p - (-q)
    u = u * p  # elementwise
    u.x = u.x + p[0]
    u[2] = u.z - q[-1]
    px, py, pz = p
    w = hawk.vec3(px, py * 2, 1.0)
    w2 = Vec3(pz, 0, px)
    r = u + w + w2
    d = hawk.dot(p, q)
    n = hawk.length(q)
    c = p.y * q[1] + p[2]


def _vector_ops(p, q, s):
    u = [(pk + qk) * s - qk / 2.0 + 3.0 * pk - (-qk) for pk, qk in zip(p, q, strict=True)]
    u = [uk * pk for uk, pk in zip(u, p, strict=True)]
    u[0] = u[0] + p[0]
    u[2] = u[2] - q[2]
    w = [p[0], p[1] * 2, 1.0]
    w2 = [p[2], 0.0, p[0]]
    return [uk + wk + w2k for uk, wk, w2k in zip(u, w, w2, strict=True)]


def test_vector_arithmetic_components_and_helpers():
    s = RNG.normal(size=N)
    result = step_once(vector_ops, p=P, q=Q, s=s, r=np.zeros((3, N)), d=np.zeros(N),
                       n=np.zeros(N), c=np.zeros(N))
    assert_same(result["r"], per_sample_vec(_vector_ops, P, Q, s))
    dot = per_sample_vec(lambda p, q: p[0] * q[0] + p[1] * q[1] + p[2] * q[2], P, Q)
    assert_same(result["d"], dot)
    assert_same(result["n"], np.sqrt(per_sample_vec(lambda q: q[0] * q[0] + q[1] * q[1]
                                                     + q[2] * q[2], Q)))
    assert_same(result["c"], P[1] * Q[1] + P[2])
    # the same helpers work on (3, n) arrays outside a kernel
    assert_same(hawk.dot(P, Q), dot)
    assert_same(hawk.length(Q), result["n"])
    assert_same(hawk.vec3(P[0], 1.0, P[2]), np.stack([P[0], np.ones(N), P[2]]))


@hawk.kernel
def vector_state(p: Mutable[Vec3], v: Mutable[Vec3], dt: Param):
    p.x += dt * v.x
    p.y = p.y + dt * v[1]
    p[2] -= dt
    v = -v / 2


def test_mutable_vector_component_assignment():
    p, v = P.copy(), Q.copy()
    result = step_once(vector_state, p=p, v=v, dt=0.125)
    expected = np.stack([P[0] + 0.125 * Q[0], P[1] + 0.125 * Q[1], P[2] - 0.125])
    assert_same(result["p"], expected)
    assert_same(result["v"], -Q / 2)


@hawk.kernel
def vector_out(p: Vec3, s: Scalar, r: Out[Vec3], m: Out[Scalar]):
    r = p * s
    m = s + 1.0


@hawk.kernel(accumulate=True)
def vector_out_accumulate(p: Vec3, s: Scalar, r: Out[Vec3], m: Out[Scalar]):
    r = p * s
    m = s + 1.0


def test_out_overwrites_and_accumulate_adds():
    s = RNG.normal(size=N)
    r0, m0 = RNG.normal(size=(3, N)), RNG.normal(size=N)
    plain = step_once(vector_out, p=P, s=s, r=r0, m=m0)
    assert_same(plain["r"], P * s)
    assert_same(plain["m"], s + 1.0)
    summed = step_once(vector_out_accumulate, p=P, s=s, r=r0, m=m0)
    assert_same(summed["r"], r0 + P * s)
    assert_same(summed["m"], m0 + (s + 1.0))
    assert vector_out_accumulate.program.accumulate
    assert vector_out_accumulate.options == {"accumulate": True}
    assert not vector_out.program.accumulate


@hawk.kernel
def vec2_and_vec4(a: Vec2, b: Mutable[Vec2], c: Vec4, d: Mutable[Vec4], s: Scalar,
                  r2: Out[Vec2], r4: Out[Vec4], dots: Out[Vec2], lengths: Out[Vec2]):
    b = b * s + a / 2.0 - (-a)
    b.y -= a.x
    d = d + c * s
    d.w = d.w + c[3] * c.x
    d[-2] += 1.0
    x0, y0 = a
    r2 = hawk.vec2(y0, x0) + Vec2(1.0, 2)
    r4 = hawk.normalize(c) + hawk.Vec4(c.w, c.z, c.y, c.x)
    dots = hawk.vec2(hawk.dot(a, a), hawk.dot(c, d))
    lengths = Vec2(hawk.length(a), hawk.length(c))


def _vec2_and_vec4(a, b, c, d, s):
    b = [bk * s + ak / 2.0 - (-ak) for ak, bk in zip(a, b, strict=True)]
    b[1] -= a[0]
    d = [dk + ck * s for ck, dk in zip(c, d, strict=True)]
    d[3] = d[3] + c[3] * c[0]
    d[2] += 1.0
    norm_c = math.sqrt(((c[0] * c[0] + c[1] * c[1]) + c[2] * c[2]) + c[3] * c[3])
    dot_cd = ((c[0] * d[0] + c[1] * d[1]) + c[2] * d[2]) + c[3] * d[3]
    return (b + d + [a[1] + 1.0, a[0] + 2.0]
            + [ck / norm_c + cr for ck, cr in zip(c, reversed(c), strict=True)]
            + [a[0] * a[0] + a[1] * a[1], dot_cd]
            + [math.sqrt(a[0] * a[0] + a[1] * a[1]), norm_c])


def test_vec2_and_vec4_work_like_vec3():
    a, b = RNG.normal(size=(2, N)), RNG.normal(size=(2, N))
    c, d = RNG.normal(size=(4, N)), RNG.normal(size=(4, N))
    s = RNG.normal(size=N)
    result = step_once(vec2_and_vec4, a=a, b=b, c=c, d=d, s=s, r2=np.zeros((2, N)),
                       r4=np.zeros((4, N)), dots=np.zeros((2, N)), lengths=np.zeros((2, N)))
    expected = per_sample_vec(_vec2_and_vec4, a, b, c, d, s)
    got = np.concatenate([result[k] for k in ("b", "d", "r2", "r4", "dots", "lengths")])
    assert_same(got, expected)
    # the width is the type's: the parameters, their argument slots and their array shapes
    widths = {p.name: p.width for p in vec2_and_vec4.params}
    assert widths == dict(a=2, b=2, c=4, d=4, s=1, r2=2, r4=4, dots=2, lengths=2)
    assert [slot.name for slot in vec2_and_vec4.program.slots][:5] == [
        "p_a_0", "p_a_1", "p_b_0", "p_b_1", "p_c_0"]
    assert vec2_and_vec4.param("d").shape(N) == (4, N)
    assert str(vec2_and_vec4.program).startswith(
        "kernel vec2_and_vec4(a: Vec2 float64, b: Mutable[Vec2] float64, c: Vec4 float64")
    assert (repr(hawk.Vec4), repr(Mutable[hawk.Vec2]), hawk.Vec4.width) == (
        "Vec4", "Mutable[Vec2]", 4)


@hawk.kernel
def cross_product(p: Vec3, q: Vec3, r: Out[Vec3], u: Out[Vec3]):
    r = hawk.cross(p, q)
    u = hawk.normalize(q)


def test_cross_and_normalize():
    result = step_once(cross_product, p=P, q=Q, r=np.zeros((3, N)), u=np.zeros((3, N)))

    def cross(p, q):
        return [p[1] * q[2] - p[2] * q[1], p[2] * q[0] - p[0] * q[2],
                p[0] * q[1] - p[1] * q[0]]

    def normalize(q):
        norm = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2])
        return [qk / norm for qk in q]

    assert_same(result["r"], per_sample_vec(cross, P, Q))
    assert_same(result["u"], per_sample_vec(normalize, Q))
    # outside a kernel, on (3, n) arrays, the same formulas
    assert_same(hawk.cross(P, Q), result["r"])
    assert_same(hawk.normalize(Q), result["u"])
    assert_same(hawk.vec4(*Q, P[0]), np.concatenate([Q, P[:1]]))
    assert_same(hawk.dot(hawk.vec2(P[0], P[1]), hawk.vec2(Q[0], Q[1])),
                P[0] * Q[0] + P[1] * Q[1])
    with pytest.raises(ValueError, match="two 3-vectors"):
        hawk.cross(P[:2], Q[:2])


def test_float32_vectors_stay_float32():
    a = RNG.normal(size=(2, N)).astype(np.float32)
    b = RNG.normal(size=(2, N)).astype(np.float32)
    c = RNG.normal(size=(4, N)).astype(np.float32)
    d = RNG.normal(size=(4, N)).astype(np.float32)
    s = RNG.normal(size=N).astype(np.float32)
    outs = dict(r2=np.zeros((2, N), np.float32), r4=np.zeros((4, N), np.float32),
                dots=np.zeros((2, N), np.float32), lengths=np.zeros((2, N), np.float32))
    dtypes = {k: np.float32 for k in ("a", "b", "c", "d", "s", *outs)}
    program = vec2_and_vec4.specialize(dtypes)
    for store in program.stores:  # computed in float32 (r2 adds Vec2(1.0, 2): float64)
        if store.param != "r2":
            assert program.ops[store.value].dtype is DType.FLOAT32, store
            assert program.ops[store.value].kind is not OpKind.CAST, store
    result = step_once(vec2_and_vec4, dtypes, a=a, b=b, c=c, d=d, s=s, **outs)
    assert result["r4"].dtype == np.float32
    assert_same(result["b"][0], (b[0] * s + a[0] / np.float32(2.0)) - (-a[0]))


# -- termination ---------------------------------------------------------------------------------


@hawk.kernel(accumulate=True)
def countdown(limit: Scalar, terminated: Terminated, count: Mutable[Scalar],
              total: Out[Scalar]):
    count += 1.0
    total = count
    terminated = count >= limit


def test_terminated_samples_are_frozen():
    limit = np.array([1.0, 3.0, 5.0, 0.0, 2.0])
    count, total = np.zeros(5), np.zeros(5)
    flags = np.array([False, False, False, False, True])  # the last one is done from the start
    arrays = dict(limit=limit, count=count, total=total, terminated=flags)
    assert step(countdown.program, arrays) == 4
    assert_same(count, np.array([1.0, 1.0, 1.0, 1.0, 0.0]))
    assert flags.tolist() == [True, False, False, True, True]
    steps = run(countdown.program, arrays, max_steps=100)
    assert steps == 4  # the slowest sample needs 5 steps in all
    assert_same(count, np.array([1.0, 3.0, 5.0, 1.0, 0.0]))
    assert_same(total, np.array([1.0, 6.0, 15.0, 1.0, 0.0]))  # 1+2+...+count
    assert flags.all()
    assert run(countdown.program, arrays, max_steps=100) == 0  # nothing left to do
    assert_same(count, np.array([1.0, 3.0, 5.0, 1.0, 0.0]))


def test_max_steps_is_honoured():
    limit = np.array([10.0, 2.0])
    arrays = dict(limit=limit, count=np.zeros(2), total=np.zeros(2),
                  terminated=np.zeros(2, dtype=bool))
    assert run(countdown.program, arrays, max_steps=3) == 3
    assert_same(arrays["count"], np.array([3.0, 2.0]))
    assert arrays["terminated"].tolist() == [False, True]


# -- dtypes --------------------------------------------------------------------------------------


@hawk.kernel
def weak_literals(x: Mutable[Scalar], v: Scalar, dt: Param):
    x = x * 0.5 + 1 - v * dt / 3.0 + x**2 + math.sqrt(abs(x)) + min(x, 0.25)


def _weak_literals32(x, v, dt):
    f = np.float32
    return (x * f(0.5) + f(1) - v * dt / f(3.0) + x * x + np.sqrt(np.abs(x))
            + np.where(f(0.25) < x, f(0.25), x))


def test_float32_specialisation_keeps_float32():
    dtypes = {"x": np.float32, "v": np.float32, "dt": np.float32}
    program = weak_literals.specialize(dtypes)
    for store in program.stores:  # computed in float32 (r2 adds Vec2(1.0, 2): float64)
        if store.param != "r2":
            assert program.ops[store.value].dtype is DType.FLOAT32, store
            assert program.ops[store.value].kind is not OpKind.CAST, store
    assert weak_literals.specialize(dtypes) is program  # cached per signature
    x, v = A.astype(np.float32), B.astype(np.float32)
    arrays = dict(x=x.copy(), v=v, dt=np.float32(0.01))
    step(program, arrays)
    assert arrays["x"].dtype == np.float32
    assert_same(arrays["x"], _weak_literals32(x, v, np.float32(0.01)))


def test_float64_param_promotes_a_float32_kernel():
    program = weak_literals.specialize({"x": np.float32, "v": np.float32})  # dt stays float64
    assert DType.FLOAT64 in {op.dtype for op in program.ops}
    assert program.stores[0].param == "x"
    assert program.ops[program.stores[0].value].dtype is DType.FLOAT32  # cast back on store


@hawk.kernel
def integer_inputs(k: Scalar, m: Scalar, x: Scalar, half: Out[Scalar], q: Out[Scalar],
                   mixed: Out[Scalar], scaled: Out[Scalar]):
    half = k / m
    q = k // 2 + k % 3 - m * 2
    mixed = k + x
    scaled = k * 0.5


def test_int64_inputs_promote_as_the_typing_rules_say():
    dtypes = {"k": np.int64, "m": np.int64, "x": np.float32, "q": np.int64, "mixed": np.float32}
    program = integer_inputs.specialize(dtypes)
    by_store = {s.param: program.ops[s.value].dtype for s in program.stores}
    assert by_store == {"half": DType.FLOAT64, "q": DType.INT64, "mixed": DType.FLOAT32,
                        "scaled": DType.FLOAT64}
    k = np.arange(-7, N - 7, dtype=np.int64)
    m = np.where(k % 2 == 0, 3, -2).astype(np.int64)
    x = A.astype(np.float32)
    arrays = dict(k=k, m=m, x=x, half=np.zeros(N), q=np.zeros(N, dtype=np.int64),
                  mixed=np.zeros(N, dtype=np.float32), scaled=np.zeros(N))
    step(program, arrays)
    assert_same(arrays["half"], per_sample(lambda k, m: k / m, k, m))
    assert_same(arrays["q"], np.array([k // 2 + k % 3 - m * 2 for k, m in
                                       zip(k.tolist(), m.tolist(), strict=True)]))
    assert_same(arrays["mixed"], k.astype(np.float32) + x)
    assert_same(arrays["scaled"], per_sample(lambda k: k * 0.5, k))


def test_literals_too_big_for_float32_promote():
    @hawk.kernel
    def big(x: Scalar, out: Out[Scalar]):
        out = x * 1e300

    program = big.specialize({"x": np.float32, "out": np.float64})
    assert program.ops[program.stores[0].value].dtype is DType.FLOAT64


# -- the spec's oscillator: THE acceptance test --------------------------------------------------


@hawk.kernel
def oscillator(omega: Scalar, t_end: Param, dt: Param, terminated: Terminated,
               x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    x0, v0 = x, v
    x = x0 + dt * v0
    v = v0 - dt * omega * omega * x0
    t += dt
    terminated = t >= t_end


def test_oscillator_matches_a_handwritten_numpy_loop_exactly():
    n = 1000
    omega = np.linspace(1.0, 3.0, n)
    t_end, dt = 1.0, 1e-3
    arrays = dict(omega=omega, t_end=t_end, dt=dt, x=np.ones(n), v=np.zeros(n), t=np.zeros(n),
                  terminated=np.zeros(n, dtype=bool))
    steps = run(oscillator.program, arrays, max_steps=10_000)

    x, v, t = np.ones(n), np.zeros(n), np.zeros(n)
    done = np.zeros(n, dtype=bool)
    expected_steps = 0
    while not done.all():
        live = ~done
        x0, v0 = x.copy(), v.copy()
        x[live] = (x0 + dt * v0)[live]
        v[live] = (v0 - dt * omega * omega * x0)[live]
        t[live] = (t + dt)[live]
        done[live] = (t >= t_end)[live]
        expected_steps += 1

    # t passes 1.0 after 1000 additions of 1e-3 (1.0000000000000007); a 1001st step is needed
    # only to see that nothing is live
    assert steps == expected_steps == 1000
    assert np.array_equal(arrays["x"], x)
    assert np.array_equal(arrays["v"], v)
    assert np.array_equal(arrays["t"], t)
    assert arrays["terminated"].all()
    assert arrays["x"].dtype == np.float64


# -- a point mass under gravity, Mutable[Vec3] state ---------------------------------------------


@hawk.kernel
def falling(g: Param, dt: Param, terminated: Terminated,
            position: Mutable[Vec3], velocity: Mutable[Vec3], t: Mutable[Scalar]):
    gravity = hawk.vec3(0.0, 0.0, -g)
    velocity = velocity + dt * gravity
    position = position + dt * velocity
    t += dt
    terminated = position.z <= 0.0


def test_point_mass_under_gravity_matches_numpy():
    n = 500
    rng = np.random.default_rng(7)
    position = np.ascontiguousarray(np.stack([rng.uniform(-1, 1, n), rng.uniform(-1, 1, n),
                                              rng.uniform(1.0, 50.0, n)]))
    velocity = np.ascontiguousarray(rng.normal(size=(3, n)))
    g, dt = 9.81, 1e-2
    arrays = dict(g=g, dt=dt, position=position.copy(), velocity=velocity.copy(),
                  t=np.zeros(n), terminated=np.zeros(n, dtype=bool))
    steps = run(falling.program, arrays, max_steps=100_000)

    p, v, t = position.copy(), velocity.copy(), np.zeros(n)
    done = np.zeros(n, dtype=bool)
    expected_steps = 0
    gravity = np.array([0.0, 0.0, -g])[:, None]
    while not done.all():
        live = ~done
        new_v = v + dt * gravity
        new_p = p + dt * new_v
        v[:, live], p[:, live] = new_v[:, live], new_p[:, live]
        t[live] = (t + dt)[live]
        done[live] = (p[2] <= 0.0)[live]
        expected_steps += 1

    assert steps == expected_steps
    assert np.array_equal(arrays["position"], p)
    assert np.array_equal(arrays["velocity"], v)
    assert np.array_equal(arrays["t"], t)
    assert (arrays["position"][2] <= 0.0).all()


# -- odds and ends -------------------------------------------------------------------------------


@hawk.kernel
def with_docstring(x: Mutable[Scalar]):
    """A docstring and `pass` are allowed."""
    pass
    x = x + 1.0


def test_docstring_and_pass_are_ignored():
    assert_same(step_once(with_docstring, x=A)["x"], A + 1.0)


def test_program_text_and_digest_are_stable():
    again = hawk.kernel(oscillator.func)
    assert str(again.program) == str(oscillator.program)
    assert again.program.digest() == oscillator.program.digest()
    assert "terminated <-" in str(oscillator.program)


@hawk.kernel
def signed_zeros(x: Scalar, a: Out[Scalar], b: Out[Scalar]):
    a = x * 0.0
    b = x * -0.0


def test_constants_that_compare_equal_are_not_merged():
    result = step_once(signed_zeros, x=np.ones(3), a=np.ones(3), b=np.ones(3))
    assert_same(result["a"], np.zeros(3))
    assert_same(result["b"], -np.zeros(3))


@hawk.kernel
def shifted(s: Scalar, x: Mutable[Scalar]):
    x = x + s


def test_a_scalar_bound_to_a_number_broadcasts():
    assert_same(step_once(shifted, s=2.5, x=A)["x"], A + 2.5)


@hawk.kernel
def vectors_are_values(p: Mutable[Vec3], q: Out[Vec3]):
    r = p  # a copy, not an alias: changing r leaves p alone
    r.x = 0.0
    q = r


def test_vectors_are_values_not_references():
    result = step_once(vectors_are_values, p=P, q=np.zeros((3, N)))
    assert_same(result["p"], P)
    assert_same(result["q"], np.stack([np.zeros(N), P[1], P[2]]))


@hawk.kernel
def reads_flag(x: Scalar, terminated: Terminated, seen: Out[Scalar]):
    seen = 1.0 if terminated else 0.0  # a live sample's flag reads False
    terminated = terminated or x > 0


def test_reading_the_terminated_flag_gives_false_for_live_samples():
    flags = np.zeros(N, dtype=bool)
    result = step_once(reads_flag, x=A, terminated=flags, seen=np.full(N, 7.0))
    assert_same(result["seen"], np.zeros(N))
    assert result["terminated"].tolist() == (A > 0).tolist()


@hawk.kernel
def constant_powers(x: Scalar, big: Out[Scalar], root: Out[Scalar], exact: Out[Scalar]):
    big = x + 1e308**2  # overflows: C pow gives inf where Python raises
    root = x + (-8.0) ** 0.5  # complex in Python: C pow gives nan
    exact = x + 3**40 + 2**-2  # folded exactly, as Python ints and floats


def test_constant_powers():
    result = step_once(constant_powers, x=np.zeros(2), big=np.zeros(2), root=np.zeros(2),
                       exact=np.zeros(2))
    assert_same(result["big"], np.full(2, np.inf))
    assert np.isnan(result["root"]).all()
    assert_same(result["exact"], np.full(2, 0.0 + 3**40 + 0.25))
