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


def _factor(dtype: DType) -> list[str]:
    """``lu_factor`` of the ``n * n`` elements at ``%m`` in place, the swaps at ``%s``."""
    t, suffix = _TYPES[dtype]
    b = IrBuilder()
    fabs = f"@llvm.fabs.{suffix}"

    def element(row: str, column: str) -> str:
        return b.at(t, "%m", b.i64("add", b.i64("mul", row, "%n"), column))

    def load(pointer: str) -> str:
        return b.do(f"load {t}, ptr {pointer}")

    def subtract_into(target: str, product: str) -> None:
        b.line(f"store {t} {b.do(f'fsub {t} {load(target)}, {product}')}, ptr {target}")

    with b.range_("k", "0", "%n") as k:
        k1 = b.i64("add", k, "1")
        with b.range_("i", k1, "%n") as i:
            pivot = b.do(f"call {t} {fabs}({t} {load(element(k, k))})")
            other = b.do(f"call {t} {fabs}({t} {load(element(i, k))})")
            swap = b.do(f"fcmp ogt {t} {other}, {pivot}")
            flag = b.do(f"zext i1 {swap} to i8")
            b.write("i8", "%s", b.i64("add", b.i64("mul", k, "%n"), i), flag)
            with b.if_(swap), b.range_("j", k, "%n") as j:
                top, below = element(k, j), element(i, j)
                x, y = load(top), load(below)
                b.line(f"store {t} {y}, ptr {top}")
                b.line(f"store {t} {x}, ptr {below}")
        with b.if_(b.cmp("slt", k1, "%n")):
            pivot = load(element(k, k))
            zero_pivot = b.do(f"fcmp oeq {t} {pivot}, 0.0")
            with b.range_("r", k1, "%n") as r:
                at = element(r, k)
                quotient = b.do(f"fdiv {t} {load(at)}, {pivot}")
                factor = b.do(f"select i1 {zero_pivot}, {t} 0.0, {t} {quotient}")
                with b.if_(b.do(f"fcmp une {t} {factor}, 0.0")), b.range_("c", k1, "%n") as c:
                    subtract_into(element(r, c),
                                  b.do(f"fmul {t} {factor}, {load(element(k, c))}"))
                b.line(f"store {t} {factor}, ptr {at}")
    return _function(factor_symbol(dtype), "ptr noalias %m, ptr noalias %s, i64 %n", b)


def _solve(dtype: DType) -> list[str]:
    """``lu_substitute``: the ``n * columns`` right-hand sides at ``%x`` in place, for the
    factorisation at ``%m`` and its swaps at ``%s``."""
    t, _ = _TYPES[dtype]
    b = IrBuilder()

    def at(pointer: str, row: str, column: str, width: str) -> str:
        return b.at(t, pointer, b.i64("add", b.i64("mul", row, width), column))

    def load(pointer: str) -> str:
        return b.do(f"load {t}, ptr {pointer}")

    def subtract_into(target: str, product: str) -> None:
        b.line(f"store {t} {b.do(f'fsub {t} {load(target)}, {product}')}, ptr {target}")

    with b.range_("k", "0", "%n") as k:
        k1 = b.i64("add", k, "1")
        with b.range_("i", k1, "%n") as i:
            flag = b.read("i8", "%s", b.i64("add", b.i64("mul", k, "%n"), i))
            with b.if_(b.do(f"icmp ne i8 {flag}, 0")), b.range_("j", "0", "%cols") as j:
                top, below = at("%x", k, j, "%cols"), at("%x", i, j, "%cols")
                x, y = load(top), load(below)
                b.line(f"store {t} {y}, ptr {top}")
                b.line(f"store {t} {x}, ptr {below}")
        with b.range_("r", k1, "%n") as r:
            factor = load(at("%m", r, k, "%n"))
            with b.if_(b.do(f"fcmp une {t} {factor}, 0.0")), b.range_("c", "0", "%cols") as c:
                subtract_into(at("%x", r, c, "%cols"),
                              b.do(f"fmul {t} {factor}, {load(at('%x', k, c, '%cols'))}"))
    with b.range_("back", "0", "%n") as back:
        i = b.i64("sub", b.i64("sub", "%n", "1"), back)
        i1 = b.i64("add", i, "1")
        with b.range_("col", "0", "%cols") as col:
            b.var("value", t, load(at("%x", i, col, "%cols")))
            with b.range_("mm", i1, "%n") as mm:
                u = load(at("%m", i, mm, "%n"))
                with b.if_(b.do(f"fcmp une {t} {u}, 0.0")):
                    x = load(at("%x", mm, col, "%cols"))
                    b.set("value", b.do(f"fsub {t} {b.get('value')}, "
                                        f"{b.do(f'fmul {t} {u}, {x}')}"))
            quotient = b.do(f"fdiv {t} {b.get('value')}, {load(at('%m', i, i, '%n'))}")
            b.line(f"store {t} {quotient}, ptr {at('%x', i, col, '%cols')}")
    return _function(solve_symbol(dtype),
                     "ptr noalias %m, ptr noalias %s, ptr noalias %x, i64 %n, i64 %cols", b)
