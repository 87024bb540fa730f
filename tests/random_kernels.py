"""Random hawk kernels for differential tests, drawn by hypothesis.

A drawn kernel is Python source: straight-line temporaries, ``if/else`` blocks, ternaries,
``and/or/not``, ``min/max/abs`` and ``math`` functions over a per-sample input ``a``, a uniform
``p``, two scalar state variables and ``Vec2``, ``Vec3`` and ``Vec4`` states (their components,
constant and loop-variable indices, ``hawk.length``, ``hawk.dot``, ``hawk.cross``,
``hawk.normalize``, elementwise vector arithmetic, component assignment), calls of drawn
``@hawk.func`` helpers (a scalar one, possibly with an early return; one returning a tuple;
one taking another func as an argument; one generic over the vector width, called at every
width), ``for`` loops over constant ranges, plus a step counter that bounds how long a sample
runs, and writes of ``Series`` rows (a scalar and a ``Vec3`` series) at drawn integer rows of an
int64 counter (in and out of range), under drawn conditions and in loops, and reads of a shared
``Table[2]`` at indices computed from that counter (clamped where out of range). The
expressions keep values finite (squashing functions, divisions by ``1 + |e|``), so backends are
compared bit for bit without NaN payloads getting in the way. hawk reads a kernel's source from
its file, so ``load`` writes the source into a module and imports it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
from hypothesis import strategies as st

from hawk.source import import_file

LITERALS = ["0.5", "1.5", "-2.0", "3.0", "0.25", "1e-3"]
UNARY = ["-({})", "abs({})", "math.tanh({})", "math.sin({})", "math.sqrt(abs({}))",
         "math.exp(-abs({}))", "math.floor({})", "math.cos({})"]
BINARY = ["({} + {})", "({} - {})", "({} * {})", "({} / (1.0 + abs({})))", "min({}, {})",
          "max({}, {})", "math.atan2({}, {})", "math.hypot({}, {})"]
COMPARISONS = ["<", "<=", ">", ">=", "==", "!="]
# Functions whose float32 results the reference computes in double and rounds: a float32
# kernel draws only correctly rounded operations.
EXACT_UNARY = ["-({})", "abs({})", "math.sqrt(abs({}))", "math.floor({})"]
EXACT_BINARY = ["({} + {})", "({} - {})", "({} * {})", "({} / (1.0 + abs({})))",
                "min({}, {})", "max({}, {})"]

IMPORTS = """\
import math

import hawk
from hawk import Mutable, Param, Scalar, Series, Table, Terminated, Vec2, Vec3, Vec4

"""

HEADER = """\

@hawk.kernel(dtypes={"row": "int64"})
def random_kernel(a: Scalar, p: Param, limit: Param, terminated: Terminated,
                  s0: Mutable[Scalar], s1: Mutable[Scalar], count: Mutable[Scalar],
                  q: Mutable[Vec3], q2: Mutable[Vec2], q4: Mutable[Vec4],
                  row: Mutable[Scalar], rec: Series[Scalar], recv: Series[Vec3],
                  tab: Table[2]):
"""
#: rows of ``rec`` (T = 25) and ``recv`` (T = 12) over the int64 counter ``row`` (which grows
#: by 1 or 2 a step, so some rows are out of range: those writes are dropped)
ROWS = ["row", "row // 2", "row - 3", "row % 7", "2 * row + 1", "(row if {} else row // 3)"]
# Vector funcs generic over the width (``w``: a vector, ``s``: a scalar); each keeps |w| from
# growing, so states stay finite over many steps.
VECTOR_FUNC_BODIES = [
    "return w * ((s / (1.0 + abs(s))) * 0.75) + w * 0.25",
    "return w * (0.5 / (1.0 + hawk.dot(w, w))) - w * (0.25 * (s / (1.0 + abs(s))))",
    "n = hawk.length(w)\n    return w * (0.9 / (1.0 + n)) + (s / (1.0 + abs(s))) * w * 0.05",
]
# Leaves over the loop variable ``i`` (0 <= i < 4): an int constant and a vector index.
LOOP_LEAVES = ["i", "float(i)", "q4[i]", "q4[-1 - i]", "(i * 0.25)", "tab[i, row - i]"]
# Reads of the shared table ``tab`` (4 x 6, values in [-1, 1)) at indices computed from the
# int64 counter ``row``, in and out of range on both sides (each index is clamped to its axis).
TABLE_LEAVES = ["tab[row % 5 - 1, row - 4]", "tab[row // 2, 3 - row]"]
CALLS = ["f_scalar({}, {})", "f_apply(f_scalar, {}, {})", "f_pair({}, {})[0]",
         "f_pair({}, {})[-1]"]


@st.composite
def _expression(draw, names: list[str], depth: int, exact: bool, calls: bool = False) -> str:
    unary, binary = (EXACT_UNARY, EXACT_BINARY) if exact else (UNARY, BINARY)
    kinds = ["leaf", "leaf", "unary", "binary", "binary", "ternary"] + ["call"] * calls
    kind = draw(st.sampled_from(kinds) if depth > 0 else st.just("leaf"))
    if kind == "leaf":
        return draw(st.sampled_from(names + LITERALS))
    if kind == "call":
        return draw(st.sampled_from(CALLS)).format(draw(_expression(names, depth - 1, exact)),
                                                   draw(_expression(names, depth - 1, exact)))
    if kind == "unary":
        return draw(st.sampled_from(unary)).format(draw(_expression(names, depth - 1, exact)))
    if kind == "binary":
        return draw(st.sampled_from(binary)).format(draw(_expression(names, depth - 1, exact)),
                                                    draw(_expression(names, depth - 1, exact)))
    condition = draw(_condition(names, depth - 1, exact))
    return (f"({draw(_expression(names, depth - 1, exact))} if {condition} "
            f"else {draw(_expression(names, depth - 1, exact))})")


@st.composite
def _condition(draw, names: list[str], depth: int, exact: bool) -> str:
    def comparison():
        return (f"{draw(_expression(names, depth, exact))} "
                f"{draw(st.sampled_from(COMPARISONS))} {draw(_expression(names, depth, exact))}")

    shape = draw(st.sampled_from(["one", "and", "or", "not"]))
    if shape == "one":
        return comparison()
    if shape == "not":
        return f"not ({comparison()})"
    return f"({comparison()} {shape} {comparison()})"


@st.composite
def _funcs(draw, exact: bool) -> str:
    """The helper funcs a drawn kernel calls, their bodies drawn over their parameters."""
    names = ["u", "v"]

    def expr(depth=2):
        return draw(_expression(names, depth, exact))

    scalar = ["@hawk.func", "def f_scalar(u, v):"]
    if draw(st.booleans()):  # an early return: the rest of the body is the if's else
        scalar += [f"    if {draw(_condition(names, 1, exact))}:", f"        return {expr()}"]
    scalar += [f"    return {expr()}"]
    pair = ["@hawk.func", "def f_pair(u, v):", f"    return {expr()}, {expr()}"]
    apply = ["@hawk.func", "def f_apply(f, u, v):",
             f"    return f(u, v) * 0.5 + {expr(1)}"]
    vector = ["@hawk.func", "def f_vector(w, s):",
              f"    {draw(st.sampled_from(VECTOR_FUNC_BODIES))}"]
    return "\n\n".join("\n".join(f) + "\n" for f in (scalar, pair, apply, vector))


@st.composite
def _series_writes(draw, names: list[str], exact: bool) -> list[str]:
    """Zero to three writes of Series rows: plain, under an ``if``, in both branches of an
    ``if``/``else`` (a scalar and a vector series), or in a loop (``i`` added to the row)."""
    def row() -> str:
        return draw(st.sampled_from(ROWS)).format(draw(_condition(names, 0, exact)))

    def expr() -> str:
        return draw(_expression(names, 1, exact))

    lines = []
    for _ in range(draw(st.integers(0, 3))):
        shape = draw(st.sampled_from(["plain", "if", "if-else", "loop"]))
        if shape == "plain":
            lines.append(f"rec[{row()}] = {expr()}")
        elif shape == "if":
            lines += [f"if {draw(_condition(names, 1, exact))}:", f"    rec[{row()}] = {expr()}"]
        elif shape == "if-else":
            lines += [f"if {draw(_condition(names, 1, exact))}:",
                      f"    recv[{row()}] = hawk.vec3({expr()}, {expr()}, {expr()})",
                      "else:", f"    rec[{row()}] = {expr()}"]
        else:
            lines += [f"for i in range({draw(st.integers(1, 3))}):",
                      f"    rec[{row()} + i] = {expr()}"]
    step = draw(st.sampled_from(["row += 1", "row += 1 if {} else 2"]))
    return [*lines, step.format(draw(_condition(names, 0, exact)))]


@st.composite
def kernel_sources(draw, exact: bool = False) -> str:
    """The source of a module defining ``random_kernel`` (and the funcs it calls); ``exact``:
    correctly rounded operations only (for float32)."""
    names = ["a", "p", "s0", "s1", "q.x", "q[2]", "hawk.length(q)", "hawk.dot(q, q)",
             "q2.y", "q2[0]", "q4.w", "q4[1]", "hawk.length(q4)", "hawk.dot(q2, q2)",
             "hawk.cross(q, hawk.vec3(0.5, -1.0, 0.25)).z",
             "hawk.normalize(hawk.vec2(1.0 + abs(q2.x), q2.y)).y", *TABLE_LEAVES]
    body = []
    for k in range(draw(st.integers(1, 3))):
        target = f"t{k}"
        shape = draw(st.sampled_from(["assign", "if", "unpack", "loop"]))
        if shape == "assign":
            body.append(f"{target} = {draw(_expression(names, 2, exact, calls=True))}")
        elif shape == "if":
            body += [f"if {draw(_condition(names, 1, exact))}:",
                     f"    {target} = {draw(_expression(names, 2, exact, calls=True))}",
                     "else:",
                     f"    {target} = {draw(_expression(names, 2, exact))}"]
        elif shape == "unpack":
            body.append(f"{target}, {target}b = f_pair({draw(_expression(names, 1, exact))}, "
                        f"{draw(_expression(names, 1, exact))})")
            names.append(f"{target}b")
        else:
            inner = names + LOOP_LEAVES
            body += [f"{target} = {draw(_expression(names, 1, exact))}",
                     f"for i in range({draw(st.integers(1, 4))}):",
                     f"    {target} = ({target} + {draw(_expression(inner, 1, exact))}) * 0.5"]
        names.append(target)
    # every kernel calls each func and runs a loop at least once, feeding the state
    inner = names + LOOP_LEAVES
    body += [f"u0 = f_apply(f_scalar, {draw(_expression(names, 1, exact))}, "
             f"{draw(_expression(names, 1, exact))})",
             f"u1, u2 = f_pair({draw(_expression(names, 1, exact))}, u0)",
             f"u3 = {draw(_expression(names, 1, exact))}",
             f"for i in range({draw(st.integers(1, 4))}):",
             f"    u3 = (u3 + {draw(_expression(inner, 1, exact))}) * 0.5"]
    names += ["u0", "u1", "u2", "u3"]
    squash = "({} / (1.0 + abs({})))"

    def squashed(depth=2):
        return squash.format(*[draw(_expression(names, depth, exact))] * 2)

    body += [f"q = q * {squashed()} + hawk.vec3({squashed()}, {squashed()}, 0.5) * 0.125",
             f"q2 = f_vector(q2, {draw(_expression(names, 1, exact))}) "
             f"+ hawk.vec2({squashed(1)}, 0.25) * 0.125",
             f"q4 = f_vector(q4, {draw(_expression(names, 1, exact))}) "
             f"+ hawk.vec4(0.5, {squashed(1)}, -0.25, {squashed(1)}) * 0.125"]
    if draw(st.booleans()):
        body.append(f"q.y = {squashed()}")
    if draw(st.booleans()):
        body += [f"for i in range({draw(st.sampled_from(['4', '1, 4', '3, -1, -2']))}):",
                 f"    q4[i] = q4[i] * 0.5 + {squashed(1)} * 0.125"]
    feed = f"({draw(_expression(names, 2, exact))} + (u0 - u2) * u3)"
    body += draw(_series_writes(names, exact))
    body += [f"s0 = {squash.format(feed, feed)}",
             f"s1 += 0.125 * {squash.format(*[draw(_expression(names, 2, exact))] * 2)}",
             "count += 1.0",
             f"terminated = count >= limit or {draw(_condition(names, 1, exact))}"]
    return (IMPORTS + "\n" + draw(_funcs(exact)) + "\n" + HEADER
            + "".join(f"    {line}\n" for line in body))


def load(source: str, folder: Path):
    """The kernel ``random_kernel`` defined by ``source``, imported from a file in ``folder``."""
    name = "random_kernel_" + hashlib.sha256(source.encode()).hexdigest()[:16]
    path = folder / f"{name}.py"
    path.write_text(source)
    return import_file(path, name).random_kernel


def bindings(n: int, seed: int, dtype=np.float64) -> dict:
    """Inputs for ``random_kernel``: samples run for between 1 and ``limit`` steps."""
    rng = np.random.default_rng(seed)
    return dict(a=rng.uniform(-1.0, 1.0, n).astype(dtype),
                s0=rng.normal(0.0, 1.0, n).astype(dtype),
                s1=rng.normal(0.0, 1.0, n).astype(dtype),
                count=np.zeros(n, dtype), q=rng.normal(0.0, 1.0, (3, n)).astype(dtype),
                q2=rng.normal(0.0, 1.0, (2, n)).astype(dtype),
                q4=rng.normal(0.0, 1.0, (4, n)).astype(dtype),
                p=float(rng.uniform(-2.0, 2.0)), limit=40.0, row=np.zeros(n, np.int64),
                rec=np.full((25, n), np.nan, dtype), recv=np.full((12, 3, n), np.nan, dtype),
                tab=rng.uniform(-1.0, 1.0, (4, 6)).astype(dtype))


# -- kernels that draw random numbers (issue 14) -------------------------------------------------

DRAWS = ["hawk.uniform()", "hawk.normal()", "hawk.exponential()", "hawk.uniform(-1.0, 2.0)",
         "hawk.normal(0.5, 2.0)", "float(hawk.randint(-2, 5))", "float(hawk.step())",
         "float(hawk.sample_index() % 7)"]
EXACT_DRAWS = ["hawk.uniform()", "hawk.uniform(-1.0, 2.0)"]  # correctly rounded in float32


@st.composite
def drawing_kernel_sources(draw, exact: bool = False) -> str:
    """``kernel_sources`` with random draws and counters among the leaves of its expressions
    (``exact``: only the draws a float32 kernel computes exactly). Bind it with a seed."""
    source = draw(kernel_sources(exact))
    draws = EXACT_DRAWS if exact else DRAWS
    lines = source.split("\n")
    body = [k for k, line in enumerate(lines) if line.startswith("    ") and "=" in line]
    for k in draw(st.lists(st.sampled_from(body), min_size=1, max_size=4)):
        if " = " not in lines[k] or lines[k].strip().startswith("terminated"):
            continue
        target, value = lines[k].split(" = ", 1)
        if "," in target:  # a func's tuple, unpacked: no scalar to add a draw to
            continue
        lines[k] = f"{target} = ({value}) + 0.25 * {draw(st.sampled_from(draws))}"
    s1 = next(k for k, line in enumerate(lines) if line.strip().startswith("s1 +="))
    lines[s1] += f" + 0.0625 * {draw(st.sampled_from(draws))}"  # a draw that reaches the state
    return "\n".join(lines)


# -- kernels over the 32-bit and unsigned integers (issue 14) ------------------------------------

INT_LEAVES = ["h", "g", "m", "3", "7", "0xFF", "13"]
INT_UNARY = ["(~{})", "(-{})", "abs({})"]
INT_BINARY = ["({} + {})", "({} - {})", "({} * {})", "({} & {})", "({} | {})", "({} ^ {})",
              "({} << {})", "({} >> {})", "({} // ({} | 1))", "({} % ({} | 1))", "min({}, {})",
              "max({}, {})"]

INT_HEADER = """\
import hawk
from hawk import Mutable, Param, Scalar, Terminated


@hawk.kernel(dtypes={"h": "uint64", "g": "uint32", "m": "int32"})
def integer_kernel(h: Mutable[Scalar], g: Mutable[Scalar], m: Mutable[Scalar],
                   s0: Mutable[Scalar], count: Mutable[Scalar], limit: Param,
                   terminated: Terminated):
"""


@st.composite
def _int_expression(draw, depth: int) -> str:
    kind = draw(st.sampled_from(["leaf", "unary", "binary", "binary"]) if depth > 0
                else st.just("leaf"))
    if kind == "leaf":
        return draw(st.sampled_from(INT_LEAVES))
    if kind == "unary":
        return draw(st.sampled_from(INT_UNARY)).format(draw(_int_expression(depth - 1)))
    return draw(st.sampled_from(INT_BINARY)).format(draw(_int_expression(depth - 1)),
                                                    draw(_int_expression(depth - 1)))


@st.composite
def integer_kernel_sources(draw) -> str:
    """A kernel stepping a uint64, a uint32 and an int32 state with integer and bit
    operations (shift counts of any value: NumPy's semantics outside [0, bits)). A source that
    does not compile (a constant expression too large for its type) is for the caller to
    reject."""
    body = [f"h = {draw(_int_expression(3))}", f"g = {draw(_int_expression(3))}",
            f"m = {draw(_int_expression(2))}",
            f"s0 += float({draw(_int_expression(2))} & 1023) * 0.001",
            "count += 1.0",
            f"terminated = count >= limit or ({draw(_int_expression(2))} & 15) == 3"]
    return INT_HEADER + "".join(f"    {line}\n" for line in body)


def load_integer_kernel(source: str, folder: Path):
    name = "integer_kernel_" + hashlib.sha256(source.encode()).hexdigest()[:16]
    path = folder / f"{name}.py"
    path.write_text(source)
    return import_file(path, name).integer_kernel


def integer_bindings(n: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return dict(h=rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + np.uint64(1),
                g=rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32),
                m=rng.integers(-2**31, 2**31, n).astype(np.int32),
                s0=np.zeros(n), count=np.zeros(n), limit=30.0)
