"""``hawk.maximum``, ``hawk.minimum``, ``abs`` of a vector, ``hawk.total`` and ``hawk.width``
(what lets one func work on a scalar and on a vector state, as the ODE integrators do), and
``if`` on a compile-time constant (a flag a kernel factory closes over): only the path taken is
kept.

Values are checked bit for bit against the same helpers run on NumPy arrays outside a kernel,
and on the CPU backend against the reference executor.
"""

from __future__ import annotations

import numpy as np
import pytest

import eagle
import hawk
from hawk import Mutable, Out, Scalar, Vec3
from hawk.ir import OpKind
from test_hawk_language import A, B, P, Q, assert_same, step_once

SHOUT = False


@hawk.func
def rms(e):
    """The root-mean-square of a number or of a vector's components."""
    return (hawk.total(e * e) / hawk.width(e)) ** 0.5


@hawk.kernel
def helpers(a: Scalar, b: Scalar, p: Vec3, q: Vec3, big: Out[Vec3], small: Out[Vec3],
            mixed: Out[Vec3], size: Out[Vec3], s_big: Out[Scalar], s_rms: Out[Scalar],
            v_rms: Out[Scalar], v_total: Out[Scalar], widths: Out[Scalar]):
    big = hawk.maximum(p, q)
    small = hawk.minimum(p, q)
    mixed = hawk.maximum(0.25, hawk.minimum(p, b))
    size = abs(p)
    s_big = hawk.maximum(a, b)
    s_rms = rms(a)
    v_rms = rms(p)
    v_total = hawk.total(q)
    widths = hawk.width(a) * 10.0 + hawk.width(p)
    if SHOUT:
        widths = widths * 1000.0


def test_helpers_compute_what_numpy_does_bit_for_bit():
    out = step_once(helpers, a=A, b=B, p=P, q=Q, **{
        name: np.full((3, A.size) if name in ("big", "small", "mixed", "size") else A.size,
                      np.nan) for name in ("big", "small", "mixed", "size", "s_big", "s_rms",
                                           "v_rms", "v_total", "widths")})
    assert_same(out["big"], hawk.maximum(P, Q))
    assert_same(out["big"], np.where(Q > P, Q, P))
    assert_same(out["small"], np.where(Q < P, Q, P))
    assert_same(out["mixed"], hawk.maximum(0.25, hawk.minimum(P, B)))
    assert_same(out["size"], np.abs(P))
    assert_same(out["s_big"], np.where(B > A, B, A))
    assert_same(out["s_rms"], (A * A / 1.0) ** 0.5)
    assert_same(out["v_rms"], ((P[0] * P[0] + P[1] * P[1] + P[2] * P[2]) / 3.0) ** 0.5)
    assert_same(out["v_total"], hawk.total(Q))
    assert_same(out["widths"], np.full(A.size, 13.0))


def test_width_is_a_compile_time_int_and_a_false_constant_if_leaves_no_op():
    program = helpers.specialize({})
    assert not any(op.kind is OpKind.SELECT for op in program.ops)
    assert not any(op.kind is OpKind.CONST and op.attr == 1000.0 for op in program.ops)
    assert hawk.width(P) == 3 and hawk.width(A) == 1 and hawk.width(2.0) == 1


def test_a_true_constant_if_keeps_only_its_branch():
    @hawk.kernel
    def flagged(x: Mutable[Scalar]):
        if hawk.width(x) == 1:
            x = x + 1.0
        else:
            x = x - 1.0

    program = flagged.specialize({})
    assert [op.kind for op in program.ops].count(OpKind.SUB) == 0
    assert not any(op.kind is OpKind.SELECT for op in program.ops)
    x = np.arange(4.0)
    eagle.simulate(flagged, max_steps=3, x=x)
    assert_same(x, np.arange(4.0) + 3.0)


@pytest.mark.slow
def test_helpers_on_the_cpu_backend_match_the_reference():
    n = A.size
    arrays = dict(a=A, b=B, p=P, q=Q, **{
        name: np.full((3, n) if name in ("big", "small", "mixed", "size") else n, np.nan)
        for name in ("big", "small", "mixed", "size", "s_big", "s_rms", "v_rms", "v_total",
                     "widths")})
    expected = step_once(helpers, **arrays)
    eagle.simulate(helpers, max_steps=1, **arrays)
    for name in ("big", "small", "mixed", "size", "s_big", "s_rms", "v_rms", "v_total"):
        assert_same(arrays[name], expected[name])


@pytest.mark.parametrize("body, message", [
    ("o = hawk.total(p, q)", "hawk.total() takes 1 argument"),
    ("o = hawk.maximum(p, hawk.vec2(1.0, 2.0)).x", "hawk.maximum() needs vectors of one width"),
    ("o = hawk.minimum(o2 > 1.0, 2.0)", "hawk.minimum() takes numbers"),
    ("o = hawk.width(o2 > 1.0)", "hawk.width() takes numbers"),
])
def test_bad_uses_are_compile_errors(tmp_path, body, message):
    path = tmp_path / "bad_helpers.py"
    path.write_text("import hawk\nfrom hawk import Out, Scalar, Vec3\n\n"
                    "@hawk.kernel\n"
                    "def bad(p: Vec3, q: Vec3, o2: Scalar, o: Out[Scalar]):\n"
                    f"    {body}\n")
    from hawk.source import import_file

    with pytest.raises(hawk.CompileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        import_file(path, "bad_helpers", keep=False)
