"""Every way a hawk kernel can fail to compile, and where the error points.

Each case below is a small factory that defines (and so compiles) one bad kernel. The offending
line carries a marker comment ``# ERR <tag>``; the test finds that line by scanning this file and
checks that the ``CompileError`` names the construct, names this file and that line, and shows
the line with a caret under the offending part (``snippet``: the text the caret must start at).
"""

# ruff: noqa: F841, B018

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

import hawk
from hawk import Mutable, Out, Param, Scalar, Terminated, Vec2, Vec3, Vec4

THIS_FILE = Path(__file__).resolve()
_LINES = THIS_FILE.read_text().splitlines()


def marker_line(tag: str) -> int:
    """The 1-based line of this file that carries the marker ``# ERR <tag>``."""
    pattern = re.compile(rf"#\s*ERR {re.escape(tag)}(\s|$)")
    hits = [i + 1 for i, line in enumerate(_LINES) if pattern.search(line)]
    assert len(hits) == 1, f"marker {tag!r} found on lines {hits}"
    return hits[0]


def check_error(err: hawk.CompileError, tag: str, words: tuple[str, ...], snippet: str | None):
    """``err`` names ``words``, this file and the marked line, and draws a caret under it."""
    line = marker_line(tag)
    text = str(err)
    for word in words:
        assert word in err.message, f"{word!r} not in message {err.message!r}"
    # the file and the line, like a traceback
    assert err.filename is not None and Path(err.filename).resolve() == THIS_FILE
    assert err.lineno == line, f"error on line {err.lineno}, expected {line}:\n{text}"
    assert f'File "{err.filename}", line {line}' in text
    # the offending source line, then a caret line under it
    source = _LINES[line - 1].strip()
    rendered = text.splitlines()
    rows = [i for i, row in enumerate(rendered) if row.strip() == source]
    assert rows, f"source line {source!r} not shown in:\n{text}"
    shown, caret = rendered[rows[0]], rendered[rows[0] + 1]
    assert caret.strip() and set(caret.strip()) == {"^"}, f"no caret line in:\n{text}"
    if snippet is not None:
        start = caret.index("^")
        assert shown[start:].startswith(snippet), (
            f"caret points at {shown[start:]!r}, expected {snippet!r}:\n{text}")


CASES = []


def case(tag: str, *words: str, snippet: str | None = None):
    """Register a factory that must raise a CompileError at the line marked ``# ERR tag``."""

    def register(factory):
        CASES.append(pytest.param(factory, tag, words, snippet, id=tag))
        return factory

    return register


def helper(value):  # ERR python-function-def (a plain Python function: not callable)
    return value


@hawk.func
def double(value):
    return 2.0 * value


NOT_A_NUMBER = "text"


# -- unsupported statements ----------------------------------------------------------------------


@case("for-over-a-tuple", "constant `range(...)`", "unrolled", snippet="(1.0, 2.0)")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        for step in (1.0, 2.0):  # ERR for-over-a-tuple
            x += step


@case("non-constant-range", "range()", "compile-time integers", "'n' is float64", snippet="n)")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar], n: Param):
        for _ in range(n):  # ERR non-constant-range
            x += 1.0


@case("float-range", "range()", "compile-time integers", "float", snippet="2.5")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        for _ in range(2.5):  # ERR float-range
            x += 1.0


@case("huge-range", "1000000 copies", "at most 1024", snippet="range(10**6)")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        for _ in range(10**6):  # ERR huge-range
            x += 1.0


@case("for-else", "`for ... else`", snippet="for _ in")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        for _ in range(2):  # ERR for-else
            x += 1.0
        else:
            x = 0.0


@case("break", "`break`", snippet="break")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        for _ in range(3):
            if x > 1.0:
                break  # ERR break
            x += 1.0


@case("continue", "`continue`", snippet="continue")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        for _ in range(3):
            continue  # ERR continue


@case("while", "`while` loop", snippet="while ")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        while x < 1.0:  # ERR while
            x += 1.0


@case("return", "`return`", snippet="return")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = x + 1.0
        return x  # ERR return


@case("nested-def", "nested function", snippet="def inner")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        def inner(y):  # ERR nested-def
            return y

        x = x + 1.0


@case("import", "`import`", snippet="import")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        import os  # ERR import  # noqa: F401

        x = x + 1.0


@case("with", "`with`", snippet="with")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        with np.errstate(all="ignore"):  # ERR with
            x = x / 0.0


@case("try", "`try`", snippet="try")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        try:  # ERR try
            x = x + 1.0
        except ValueError:
            pass


@case("assert", "`assert`", snippet="assert")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        assert x > 0.0  # ERR assert
        x = x + 1.0


@case("raise", "`raise`", snippet="raise")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        if x > 0.0:
            raise ValueError("no")  # ERR raise


@case("del", "`del`", snippet="del")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        y = x
        del y  # ERR del


@case("expression-statement", "expression statement", snippet="math.sqrt")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        math.sqrt(x)  # ERR expression-statement


@case("annotated-assignment", "annotated assignment", snippet="y: float")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        y: float = x  # ERR annotated-assignment
        x = y


# -- unsupported expressions ---------------------------------------------------------------------


@case("lambda", "`lambda`", snippet="lambda")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        f = lambda: 1.0  # ERR lambda
        x = x + 1.0


@case("list", "a list", snippet="[x, x]")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        y = [x, x]  # ERR list


@case("dict", "a dict", snippet="{")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        y = {"a": x}  # ERR dict


@case("list-comprehension", "list comprehension", snippet="[x for")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        y = [x for _ in (1, 2)]  # ERR list-comprehension


@case("f-string", "f-string", snippet='f"')
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        y = f"{x}"  # ERR f-string


@case("string-constant", "str constant", snippet='"text"')
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        y = "text"  # ERR string-constant


@case("walrus", "`:=`", snippet="y := x")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = (y := x) + 1.0  # ERR walrus


@case("bitwise-and", "& takes integers", "float64", snippet="x & 1")
def _():
    @hawk.kernel
    def k(x: Scalar, terminated: Terminated):
        terminated = (x & 1) == 1  # ERR bitwise-and


@case("is-comparison", "comparison", "Is", snippet="x is x")
def _():
    @hawk.kernel
    def k(x: Scalar, terminated: Terminated):
        terminated = x is x  # ERR is-comparison


# -- names, calls, attributes and indexing -------------------------------------------------------


@case("unknown-function", "unknown name 'frobnicate'", snippet="frobnicate")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = frobnicate(x)  # ERR unknown-function  # noqa: F821


@case("python-function", "global 'helper'", "plain Python function", "@hawk.func",
      snippet="helper")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = helper(x)  # ERR python-function


@case("global-string", "global 'NOT_A_NUMBER'", "str", snippet="NOT_A_NUMBER")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        y = NOT_A_NUMBER  # ERR global-string


@case("call-a-value", "calling 'x'", snippet="x(1.0)")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = x(1.0)  # ERR call-a-value


@case("keyword-argument", "sqrt()", "keyword", snippet="math.sqrt(x=x)")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = math.sqrt(x=x)  # ERR keyword-argument


@case("math-arity", "math.atan2()", "2 argument", snippet="math.atan2(x)")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = math.atan2(x)  # ERR math-arity


@case("math-attribute", "math.foo", snippet="math.foo")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = math.foo(x)  # ERR math-attribute


@case("math-unsupported-function", "math.gamma", snippet="math.gamma")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = math.gamma(x)  # ERR math-unsupported-function


@case("hawk-attribute", "hawk.frobnicate", snippet="hawk.frobnicate")
def _():
    @hawk.kernel
    def k(p: Mutable[Vec3]):
        p = hawk.frobnicate(p, p)  # ERR hawk-attribute


@case("scalar-attribute", "attribute 'real'", snippet="x.real")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = x.real  # ERR scalar-attribute


@case("vec3-attribute", ".w", snippet="p.w")
def _():
    @hawk.kernel
    def k(p: Vec3, x: Mutable[Scalar]):
        x = p.w  # ERR vec3-attribute


@case("index-scalar", "indexing float64", snippet="x[0]")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = x[0]  # ERR index-scalar


@case("non-constant-index", "constant 0, 1 or 2", snippet="p[i]")
def _():
    @hawk.kernel
    def k(p: Vec3, i: Param, x: Mutable[Scalar]):
        x = p[i]  # ERR non-constant-index


@case("index-out-of-range", "constant 0, 1 or 2", snippet="p[3]")
def _():
    @hawk.kernel
    def k(p: Vec3, x: Mutable[Scalar]):
        x = p[3]  # ERR index-out-of-range


@case("vec4-index-out-of-range", "a Vec4 index", "constant 0, 1, 2 or 3", snippet="q[i + 1]")
def _():
    @hawk.kernel
    def k(q: Vec4, x: Mutable[Scalar]):
        for i in range(4):
            x += q[i + 1]  # ERR vec4-index-out-of-range


@case("vec2-has-no-z", "a Vec2 has components .x and .y, not .z", snippet="p.z")
def _():
    @hawk.kernel
    def k(p: Vec2, x: Mutable[Scalar]):
        x = p.z  # ERR vec2-has-no-z


@case("vector-widths-differ", "+", "one width", "Vec3 of float64", "Vec2 of float64",
      snippet="p + q")
def _():
    @hawk.kernel
    def k(p: Vec3, q: Vec2, x: Mutable[Scalar]):
        x = hawk.length(p + q)  # ERR vector-widths-differ


@case("cross-of-vec2", "hawk.cross()", "two Vec3", "Vec2 of float64", snippet="hawk.cross")
def _():
    @hawk.kernel
    def k(p: Vec2, q: Mutable[Vec3]):
        q = hawk.cross(p, p)  # ERR cross-of-vec2


@case("vec2-into-mutable-vec3", "'q' is Mutable[Vec3]", "a Vec3", "Vec2 of float64",
      snippet="q =")
def _():
    @hawk.kernel
    def k(p: Vec2, q: Mutable[Vec3]):
        q = 2.0 * p  # ERR vec2-into-mutable-vec3


@case("dot-widths-differ", "hawk.dot()", "one width", snippet="hawk.dot(p, q)")
def _():
    @hawk.kernel
    def k(p: Vec4, q: Vec3, x: Mutable[Scalar]):
        x = hawk.dot(p, q)  # ERR dot-widths-differ


@case("slice", "slice of a Vec3 takes no step", snippet="p[0:3:2]")
def _():
    @hawk.kernel
    def k(p: Vec3, x: Mutable[Scalar]):
        x = p[0:3:2]  # ERR slice


@case("empty-slice", "takes no component of a Vec3", snippet="p[2:1]")
def _():
    @hawk.kernel
    def k(p: Vec3, x: Mutable[Scalar]):
        x = p[2:1]  # ERR empty-slice


@case("unknown-name", "unknown name 'velocity'", snippet="velocity")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = x + velocity  # ERR unknown-name  # noqa: F821


# -- writes to read-only parameters --------------------------------------------------------------


@case("assign-scalar", "read-only parameter 'x'", "Scalar", "Mutable[Scalar]", snippet="x =")
def _():
    @hawk.kernel
    def k(x: Scalar, y: Mutable[Scalar]):
        x = 1.0  # ERR assign-scalar


@case("augassign-scalar", "read-only parameter 'x'", snippet="x +=")
def _():
    @hawk.kernel
    def k(x: Scalar, y: Mutable[Scalar]):
        x += 1.0  # ERR augassign-scalar


@case("assign-param", "read-only parameter 'dt'", "Param", snippet="dt =")
def _():
    @hawk.kernel
    def k(dt: Param, y: Mutable[Scalar]):
        dt = 2.0  # ERR assign-param


@case("assign-vec3-component", "read-only parameter 'p'", "Mutable[Vec3]", snippet="p.x")
def _():
    @hawk.kernel
    def k(p: Vec3, y: Mutable[Scalar]):
        p.x = 1.0  # ERR assign-vec3-component


@case("assign-in-tuple", "read-only parameter 'b'", snippet="b")
def _():
    @hawk.kernel
    def k(a: Mutable[Scalar], b: Scalar):
        a, b = b, a  # ERR assign-in-tuple


# -- type mismatches -----------------------------------------------------------------------------


@case("bool-plus-float", "+", "bool", "float64", snippet="flag + x")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        flag = x > 0.0
        x = flag + x  # ERR bool-plus-float


@case("bool-literal-plus-float", "+", "bool", "float64", snippet="True + x")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = True + x  # ERR bool-literal-plus-float


@case("vec3-plus-bool", "+", "bool", snippet="p + (x > 0.0)")
def _():
    @hawk.kernel
    def k(p: Mutable[Vec3], x: Scalar):
        p = p + (x > 0.0)  # ERR vec3-plus-bool


@case("if-on-float", "condition of if", "float64", snippet="x:")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        if x:  # ERR if-on-float
            x = 0.0


@case("ternary-on-float", "condition of a conditional expression", "float64", snippet="x else")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = 1.0 if x else 0.0  # ERR ternary-on-float


@case("and-on-floats", "`and`", "float64", snippet="x and")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = x and x  # ERR and-on-floats


@case("not-on-float", "`not`", "float64", snippet="not x")
def _():
    @hawk.kernel
    def k(x: Scalar, terminated: Terminated):
        terminated = not x  # ERR not-on-float


@case("float-to-terminated", "'terminated'", "Terminated", "bool", "float64",
      snippet="terminated =")
def _():
    @hawk.kernel
    def k(x: Scalar, terminated: Terminated):
        terminated = x  # ERR float-to-terminated


@case("scalar-to-mutable-vec3", "'p'", "Mutable[Vec3]", "float64", snippet="p =")
def _():
    @hawk.kernel
    def k(p: Mutable[Vec3], x: Scalar):
        p = x  # ERR scalar-to-mutable-vec3


@case("vec3-to-mutable-scalar", "'x'", "Mutable[Scalar]", "Vec3", snippet="x =")
def _():
    @hawk.kernel
    def k(p: Vec3, x: Mutable[Scalar]):
        x = p  # ERR vec3-to-mutable-scalar


@case("bool-to-mutable", "cannot store bool", "'x'", snippet="x =")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = x > 0.0  # ERR bool-to-mutable


@case("branches-disagree", "Vec3", "float64", snippet="p if")
def _():
    @hawk.kernel
    def k(p: Vec3, x: Scalar, q: Out[Vec3]):
        q = p if x > 0.0 else x  # ERR branches-disagree


@case("vec3-floordiv", "//", "Vec3", snippet="p // 2.0")
def _():
    @hawk.kernel
    def k(p: Mutable[Vec3]):
        p = p // 2.0  # ERR vec3-floordiv


@case("vec3-power", "**", "Vec3", snippet="p**2")
def _():
    @hawk.kernel
    def k(p: Mutable[Vec3]):
        p = p**2  # ERR vec3-power


@case("dot-of-scalars", "hawk.dot()", "Vec3", snippet="hawk.dot(x, x)")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = hawk.dot(x, x)  # ERR dot-of-scalars


@case("unpack-count", "unpack 3 values into 2 names", snippet="a, b = x, x, x")
def _():
    @hawk.kernel
    def k(a: Mutable[Scalar], b: Mutable[Scalar], x: Scalar):
        a, b = x, x, x  # ERR unpack-count


@case("unpack-scalar", "cannot unpack float64", snippet="a, b")
def _():
    @hawk.kernel
    def k(a: Mutable[Scalar], b: Mutable[Scalar], x: Scalar):
        a, b = x  # ERR unpack-scalar


@case("constant-division-by-zero", "division by zero", snippet="1.0 / 0")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = x + 1.0 / 0  # ERR constant-division-by-zero


# -- definedness ---------------------------------------------------------------------------------


@case("one-branch", "'y' is assigned on only one branch", snippet="y")
def _():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        if x > 0.0:
            y = 2.0 * x
        x = y  # ERR one-branch


@case("out-before-assign", "'out'", "write-only", snippet="out")
def _():
    @hawk.kernel
    def k(x: Scalar, out: Out[Scalar]):
        out = out + x  # ERR out-before-assign


@case("out-vec3-component-before-assign", "'q'", "write-only", snippet="q")
def _():
    @hawk.kernel
    def k(x: Scalar, q: Out[Vec3]):
        q.x = x  # ERR out-vec3-component-before-assign


# -- the signature -------------------------------------------------------------------------------


@case("missing-annotation", "parameter 'x' has no annotation", snippet="x")
def _():
    @hawk.kernel
    def k(
        x,  # ERR missing-annotation
        y: Mutable[Scalar],
    ):
        y = y + 1.0


@case("unknown-annotation", "parameter 'x'", "unknown annotation 'float'", snippet="float")
def _():
    @hawk.kernel
    def k(
        x: float,  # ERR unknown-annotation
        y: Mutable[Scalar],
    ):
        y = y + x


@case("varargs", "*args", snippet="args")
def _():
    @hawk.kernel
    def k(
        y: Mutable[Scalar],
        *args: Scalar,  # ERR varargs
    ):
        y = y + 1.0


@case("kwargs", "**kwargs", snippet="kwargs")
def _():
    @hawk.kernel
    def k(
        y: Mutable[Scalar],
        **kwargs: Scalar,  # ERR kwargs
    ):
        y = y + 1.0


@case("star-not-tuple", "spreads a tuple", snippet="*y")
def _():
    @hawk.func
    def g(a):
        return a

    @hawk.kernel
    def k(y: Mutable[Scalar]):
        y = g(*y)  # ERR star-not-tuple


@case("keyword-only", "keyword-only", snippet="z")
def _():
    @hawk.kernel
    def k(
        y: Mutable[Scalar],
        *,
        z: Scalar,  # ERR keyword-only
    ):
        y = y + z


@case("default", "default values", snippet="1.0")
def _():
    @hawk.kernel
    def k(
        y: Mutable[Scalar],
        z: Param = 1.0,  # ERR default
    ):
        y = y + z


@case("two-terminated", "parameter 'done'", "at most one Terminated", "'terminated'",
      snippet="done")
def _():
    @hawk.kernel
    def k(
        x: Scalar,
        terminated: Terminated,
        done: Terminated,  # ERR two-terminated
    ):
        terminated = x > 0.0


# -- hawk funcs: the error points at the func's line and at the call site --------------------------

FUNC_CASES = []


def func_case(tag: str, *words: str, snippet: str | None = None):
    """Register a factory whose CompileError points inside a hawk func at ``# ERR tag``, reached
    from the kernel's line marked ``# ERR tag-call`` (shown first, like a traceback frame)."""

    def register(factory):
        FUNC_CASES.append(pytest.param(factory, tag, words, snippet, id=tag))
        return factory

    return register


@func_case("recursion", "'countdown' calls itself", "countdown -> countdown",
           snippet="countdown(n - 1.0)")
def _():
    @hawk.func
    def countdown(n):
        if n < 1.0:
            return n
        return countdown(n - 1.0)  # ERR recursion

    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = countdown(x)  # ERR recursion-call


@func_case("mutual-recursion", "'ping' calls itself", "ping -> pong -> ping", snippet="ping(")
def _():
    @hawk.func
    def ping(n):
        return pong(n) + 1.0

    @hawk.func
    def pong(n):
        return ping(n) * 2.0  # ERR mutual-recursion

    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = ping(x)  # ERR mutual-recursion-call


@func_case("func-changes-a-vector-argument", "'kick' changes its argument 'v' in place",
           "`v += dv`", "side effects", snippet="v += dv")
def _():
    @hawk.func
    def kick(v, dv):
        v += dv  # ERR func-changes-a-vector-argument
        return v

    @hawk.kernel
    def k(p: Mutable[Vec3]):
        p = kick(p, 1.0)  # ERR func-changes-a-vector-argument-call


@func_case("func-assigns-a-component", "'flatten' changes its argument 'p' in place",
           "`p.z = ...`", snippet="p.z")
def _():
    @hawk.func
    def flatten(p):
        p.z = 0.0  # ERR func-assigns-a-component
        return p

    @hawk.kernel
    def k(q: Mutable[Vec3]):
        q = flatten(q)  # ERR func-assigns-a-component-call


@func_case("func-changes-an-alias", "'zero_first' changes its argument 'q' in place",
           snippet="q[0] += 1.0")
def _():
    @hawk.func
    def zero_first(pair):
        p, other = pair
        q = p  # another name for the caller's vector
        q[0] += 1.0  # ERR func-changes-an-alias
        return q

    @hawk.kernel
    def k(q: Mutable[Vec2], x: Scalar):
        q = zero_first((q, x))  # ERR func-changes-an-alias-call


@case("python-function-as-argument", "global 'helper'", "plain Python function",
      snippet="helper, x)")
def _():
    @hawk.func
    def apply(f, x):
        return f(x)

    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = apply(double, x) + apply(helper, x)  # ERR python-function-as-argument


@func_case("python-function-in-func", "global 'helper'", "plain Python function",
           snippet="helper")
def _():
    @hawk.func
    def outer(x):
        return helper(x) + 1.0  # ERR python-function-in-func

    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = outer(x)  # ERR python-function-in-func-call


@func_case("type-error-in-func", "+", "bool", "float64", snippet="x + (x > 0.0)")
def _():
    @hawk.func
    def ramp(x):
        return x + (x > 0.0)  # ERR type-error-in-func

    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = ramp(x)  # ERR type-error-in-func-call


@func_case("return-in-loop", "`return` inside a `for` loop", snippet="return")
def _():
    @hawk.func
    def first_positive(p):
        for i in range(3):
            if p[i] > 0.0:
                return p[i]  # ERR return-in-loop
        return 0.0

    @hawk.kernel
    def k(p: Vec3, x: Mutable[Scalar]):
        x = first_positive(p)  # ERR return-in-loop-call


@func_case("return-on-one-path", "'clip' does not return a value on every path",
           snippet="if x > 1.0")
def _():
    @hawk.func
    def clip(x):
        y = 2.0 * x
        if x > 1.0:  # ERR return-on-one-path
            return 1.0

    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = clip(x)  # ERR return-on-one-path-call


@func_case("while-in-func", "`while` loop", snippet="while ")
def _():
    @hawk.func
    def halve_until_small(x):
        while x > 1.0:  # ERR while-in-func
            x = x * 0.5
        return x

    @hawk.func
    def outer(x):
        return halve_until_small(x) + 1.0  # a func between the kernel and the error

    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = outer(x)  # ERR while-in-func-call


@func_case("break-in-func", "`break`", snippet="break")
def _():
    @hawk.func
    def first(p):
        for _ in range(3):
            break  # ERR break-in-func
        return p.x

    @hawk.kernel
    def k(p: Vec3, x: Mutable[Scalar]):
        x = first(p)  # ERR break-in-func-call


@func_case("code-after-return", "after `return`", snippet="y = x")
def _():
    @hawk.func
    def early(x):
        return x
        y = x  # ERR code-after-return

    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = early(x)  # ERR code-after-return-call


@func_case("branches-of-a-func-disagree", "the value 'pick' returns", "Vec3", "float64",
           snippet="if x > 0.0")
def _():
    @hawk.func
    def pick(x, p):
        if x > 0.0:  # ERR branches-of-a-func-disagree
            return p
        return x

    @hawk.kernel
    def k(x: Mutable[Scalar], p: Vec3):
        x = hawk.length(pick(x, p))  # ERR branches-of-a-func-disagree-call


@func_case("loop-in-func-non-constant", "range()", "compile-time integers", snippet="n)")
def _():
    @hawk.func
    def repeat(x, n):
        for _ in range(n):  # ERR loop-in-func-non-constant
            x = x * 0.5
        return x

    @hawk.kernel
    def k(x: Mutable[Scalar], n: Param):
        x = repeat(x, n)  # ERR loop-in-func-non-constant-call


@pytest.mark.parametrize("factory, tag, words, snippet", FUNC_CASES)
def test_func_error_points_at_the_func_and_the_call_site(factory, tag, words, snippet):
    with pytest.raises(hawk.CompileError) as info:
        factory()
    err = info.value
    check_error(err, tag, words, snippet)  # err.loc: the func's own line
    call = marker_line(tag + "-call")
    assert [c.line for c in err.calls][:1] == [call], (err.calls, call)  # the kernel's line
    text = str(err)
    call_source = _LINES[call - 1].strip()
    assert text.index(f"line {call}, in") < text.index(f"line {err.lineno}, in"), text
    assert f"    {call_source}\n" in text, text
    assert err.calls[0].function == "k" and err.loc.function != "k"


def test_recursion_error_also_shows_the_funcs_definition():
    with pytest.raises(hawk.CompileError) as info:
        FUNC_CASES[0].values[0]()
    (text, where), = info.value.notes
    assert text == "'countdown' is defined here:"
    assert _LINES[where.line - 1].strip() == "def countdown(n):"
    assert "    def countdown(n):\n" in str(info.value)


def test_python_function_error_shows_where_it_is_defined():
    python_function = next(p for p in CASES if p.values[1] == "python-function")
    with pytest.raises(hawk.CompileError) as info:
        python_function.values[0]()
    (text, where), = info.value.notes
    assert text == "'helper' is defined here:" and where.function == "helper"
    assert where.line == marker_line("python-function-def")
    assert str(info.value).rstrip().endswith("^" * len(_LINES[where.line - 1].strip()))


def test_func_arity_error_at_the_call_site():
    with pytest.raises(hawk.CompileError) as info:
        @hawk.kernel
        def k(x: Mutable[Scalar]):
            x = double(x, x)

    assert "double(): too many positional arguments" in info.value.message
    assert info.value.calls == () and "x = double(x, x)" in str(info.value)
    assert "'double' is defined here:" in str(info.value)


@hawk.func
def _returns_nothing(x):
    y = x


@hawk.func
def _returns_a_func(x):
    return double


@pytest.mark.parametrize("bad, words", [(_returns_nothing, "returns no value"),
                                        (_returns_a_func, "returns the hawk func 'double'")])
def test_func_returning_nothing_or_a_function_is_an_error(bad, words):
    with pytest.raises(hawk.CompileError, match=words):
        @hawk.kernel
        def k(x: Mutable[Scalar]):
            x = bad(x)


def test_func_decorates_only_plain_functions():
    with pytest.raises(TypeError, match="decorates a plain Python function"):
        hawk.func(3)
    with pytest.raises(TypeError, match="decorates a plain Python function"):
        hawk.func(double)


def test_func_is_still_a_python_function():
    assert double(2.5) == 5.0
    assert np.array_equal(double(np.arange(3.0)), [0.0, 2.0, 4.0])


@pytest.mark.parametrize("factory, tag, words, snippet", CASES)
def test_compile_error_points_at_the_line(factory, tag, words, snippet):
    with pytest.raises(hawk.CompileError) as info:
        factory()
    check_error(info.value, tag, words, snippet)


def test_every_marker_has_a_case():
    tags = {p.values[1] for p in CASES + FUNC_CASES}
    tags |= {p.values[1] + "-call" for p in FUNC_CASES} | {"python-function-def"}
    markers = {m.group(1) for line in _LINES if (m := re.search(r"#\s*ERR ([\w-]+)(\s|$)", line))}
    assert markers == tags | {"int-overflow"}


def test_caret_spans_the_whole_construct():
    with pytest.raises(hawk.CompileError) as info:
        _index_scalar_for_caret()
    shown, caret = str(info.value).splitlines()[-2:]
    start, width = caret.index("^"), caret.count("^")
    assert shown[start:start + width] == "x[0]"


def _index_scalar_for_caret():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = x[0] + 1.0


def test_compile_error_attributes_and_traceback_form():
    with pytest.raises(hawk.CompileError) as info:
        CASES[0].values[0]()
    err = info.value
    assert err.loc is not None and err.loc.function == "k"
    assert ", in k\n" in str(err)
    assert isinstance(err, Exception) and not isinstance(err, TypeError)


# -- kernel options and dtypes are Python TypeErrors, not CompileErrors --------------------------


def _bare(x: Mutable[Scalar]):
    x = x + 1.0


def test_unknown_kernel_option():
    with pytest.raises(TypeError, match=r"unknown option 'acumulate'.*accumulate"):
        hawk.kernel(acumulate=True)(_bare)


def test_kernel_option_of_the_wrong_type():
    with pytest.raises(TypeError, match=r"option 'accumulate' must be a bool, got 1"):
        hawk.kernel(accumulate=1)(_bare)


def test_kernel_decorates_only_functions():
    with pytest.raises(TypeError, match="decorates a function"):
        hawk.kernel(3)


def test_terminated_must_be_specialised_as_bool():
    @hawk.kernel
    def k(x: Scalar, terminated: Terminated):
        terminated = x > 0.0

    with pytest.raises(TypeError, match=r"'terminated' is the Terminated flag and must be bool"):
        k.specialize({"terminated": np.float64})


def test_kernel_is_not_called_directly():
    @hawk.kernel
    def k(x: Mutable[Scalar]):
        x = x + 1.0

    with pytest.raises(TypeError, match="not called directly"):
        k(np.zeros(3))


def test_annotation_wrappers_reject_other_types():
    with pytest.raises(TypeError, match=r"Mutable\[...\] takes Scalar, Vec2, Vec3, Vec4, "
                                         r"Vector\[K\] or Matrix\[R, C\]"):
        Mutable[float]
    with pytest.raises(TypeError, match=r"Out\[...\] takes Scalar, Vec2, Vec3, Vec4, "
                                         r"Vector\[K\] or Matrix\[R, C\]"):
        Out[Param]


def test_integer_literal_too_big_for_int64():
    @hawk.kernel
    def k(x: Scalar, out: Out[Scalar]):
        out = x + 2**70  # ERR int-overflow

    with pytest.raises(hawk.CompileError) as info:
        k.specialize({"x": np.int64, "out": np.int64})
    check_error(info.value, "int-overflow", ("1180591620717411303424",
                                             "does not fit in int64"), "x + 2**70")
