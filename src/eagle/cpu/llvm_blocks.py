"""The IR's whole-matrix ops (``hawk.ir.AGGREGATES``) on the CPU: a factorisation and a solve
as LLVM functions with loops, called from a lane's step on memory of the visit's own.

A block lives in a stack slot of the visit (``alloca`` in its entry block, one per op, reused
by every step the visit unrolls: a step's parts are read before the next step writes it). An
``LU`` block is the ``n * n`` eliminated elements, then ``n * n`` swap flags (bytes); an
``LU_SOLVE`` block the ``n * columns`` elements of the solution. The functions take the sizes
as arguments, so there is one pair per float type whatever the sizes, and they are the
definition in ``hawk.linalg`` (``lu_factor``, ``lu_substitute``) step for step, a subtraction
with a zero coefficient skipped as there: each ``+ - * /`` rounds as there (no fast-math
flags), so a block's elements are the reference's bits.
"""

from __future__ import annotations

from hawk.ir import DType

from .llvm_ops import factor_symbol, fill_symbol, solve_symbol
from .llvm_text import IrBuilder

__all__ = ["block_functions"]

_TYPES = {DType.FLOAT32: ("float", "f32"), DType.FLOAT64: ("double", "f64")}


def block_functions(dtypes) -> tuple[set[str], list[str]]:
    """The declarations of the intrinsics they call, and the definitions of the
    factorisation and the solve, for each float dtype in ``dtypes``."""
    declarations, lines = set(), []
    for dtype in sorted(dtypes, key=lambda d: d.value):
        t, suffix = _TYPES[dtype]
        declarations.add(f"declare {t} @llvm.fabs.{suffix}({t})")
        lines += _factor(dtype) + _solve(dtype) + _fill(dtype)
    return declarations, lines


def _fill(dtype: DType) -> list[str]:
    """Every one of the ``count`` elements at ``%m`` set to ``%value``."""
    t, _ = _TYPES[dtype]
    b = IrBuilder()
    with b.range_("k", "0", "%count") as k:
        b.write(t, "%m", k, "%value")
    return _function(fill_symbol(dtype), f"ptr noalias %m, i64 %count, {t} %value", b)


def _function(name: str, parameters: str, b: IrBuilder) -> list[str]:
    return [f"define internal void @{name}({parameters}) nounwind noinline {{", "entry:",
            *b.slots, *b.lines, "  ret void", "}", ""]


class _Rows:
    """Row-major elements of type ``t`` through ``b``: the one vocabulary of both loops."""

    def __init__(self, b: IrBuilder, t: str):
        self.b, self.t = b, t

    def at(self, pointer: str, row: str, column: str, width: str) -> str:
        """The address of ``[row, column]`` of the ``width``-wide rows at ``pointer``."""
        return self.b.at(self.t, pointer, self.b.i64("add", self.b.i64("mul", row, width),
                                                     column))

    def load(self, pointer: str) -> str:
        return self.b.do(f"load {self.t}, ptr {pointer}")

    def swap(self, top: str, below: str) -> None:
        x, y = self.load(top), self.load(below)
        self.b.line(f"store {self.t} {y}, ptr {top}")
        self.b.line(f"store {self.t} {x}, ptr {below}")

    def subtract_product(self, target: str, factor: str, other: str) -> None:
        """``*target -= factor * *other``."""
        product = self.b.do(f"fmul {self.t} {factor}, {self.load(other)}")
        self.b.line(f"store {self.t} {self.b.do(f'fsub {self.t} {self.load(target)}, {product}')}"
                    f", ptr {target}")

    def nonzero(self, value: str) -> str:
        """Whether ``value`` is not exactly zero (NaN is not: its subtraction is kept)."""
        return self.b.do(f"fcmp une {self.t} {value}, 0.0")


def _factor(dtype: DType) -> list[str]:
    """``lu_factor`` of the ``n * n`` elements at ``%m`` in place, the swaps at ``%s``."""
    t, suffix = _TYPES[dtype]
    b = IrBuilder()
    rows = _Rows(b, t)

    def element(row: str, column: str) -> str:
        return rows.at("%m", row, column, "%n")

    def magnitude(pointer: str) -> str:
        return b.do(f"call {t} @llvm.fabs.{suffix}({t} {rows.load(pointer)})")

    with b.range_("k", "0", "%n") as k:
        k1 = b.i64("add", k, "1")
        with b.range_("i", k1, "%n") as i:
            pivot, other = magnitude(element(k, k)), magnitude(element(i, k))
            swap = b.do(f"fcmp ogt {t} {other}, {pivot}")
            flag = b.do(f"zext i1 {swap} to i8")
            b.write("i8", "%s", b.i64("add", b.i64("mul", k, "%n"), i), flag)
            with b.if_(swap), b.range_("j", k, "%n") as j:
                rows.swap(element(k, j), element(i, j))
        with b.if_(b.cmp("slt", k1, "%n")):
            pivot = rows.load(element(k, k))
            zero_pivot = b.do(f"fcmp oeq {t} {pivot}, 0.0")
            with b.range_("r", k1, "%n") as r:
                at = element(r, k)
                quotient = b.do(f"fdiv {t} {rows.load(at)}, {pivot}")
                factor = b.do(f"select i1 {zero_pivot}, {t} 0.0, {t} {quotient}")
                with b.if_(rows.nonzero(factor)), b.range_("c", k1, "%n") as c:
                    rows.subtract_product(element(r, c), factor, element(k, c))
                b.line(f"store {t} {factor}, ptr {at}")
    return _function(factor_symbol(dtype), "ptr noalias %m, ptr noalias %s, i64 %n", b)


def _solve(dtype: DType) -> list[str]:
    """``lu_substitute``: the ``n * columns`` right-hand sides at ``%x`` in place, for the
    factorisation at ``%m`` and its swaps at ``%s``."""
    t, _ = _TYPES[dtype]
    b = IrBuilder()
    rows = _Rows(b, t)

    def factors(row: str, column: str) -> str:
        return rows.at("%m", row, column, "%n")

    def right(row: str, column: str) -> str:
        return rows.at("%x", row, column, "%cols")

    with b.range_("k", "0", "%n") as k:
        k1 = b.i64("add", k, "1")
        with b.range_("i", k1, "%n") as i:
            flag = b.read("i8", "%s", b.i64("add", b.i64("mul", k, "%n"), i))
            with b.if_(b.do(f"icmp ne i8 {flag}, 0")), b.range_("j", "0", "%cols") as j:
                rows.swap(right(k, j), right(i, j))
        with b.range_("r", k1, "%n") as r:
            factor = rows.load(factors(r, k))
            with b.if_(rows.nonzero(factor)), b.range_("c", "0", "%cols") as c:
                rows.subtract_product(right(r, c), factor, right(k, c))
    with b.range_("back", "0", "%n") as back:
        i = b.i64("sub", b.i64("sub", "%n", "1"), back)
        i1 = b.i64("add", i, "1")
        with b.range_("col", "0", "%cols") as col:
            b.var("value", t, rows.load(right(i, col)))
            with b.range_("mm", i1, "%n") as mm:
                u = rows.load(factors(i, mm))
                with b.if_(rows.nonzero(u)):
                    x, value = rows.load(right(mm, col)), b.get("value")
                    b.set("value", b.do(f"fsub {t} {value}, {b.do(f'fmul {t} {u}, {x}')}"))
            quotient = b.do(f"fdiv {t} {b.get('value')}, {rows.load(factors(i, i))}")
            b.line(f"store {t} {quotient}, ptr {right(i, col)}")
    return _function(solve_symbol(dtype),
                     "ptr noalias %m, ptr noalias %s, ptr noalias %x, i64 %n, i64 %cols", b)
