"""Lowering calls of hawk's matrix helpers in a kernel body (``hawk.matrices`` names them):
``matrix``, ``zeros``, ``identity``, ``outer``, ``transpose``, ``matmul``, ``trace``, ``det``,
``inverse``, ``solve`` and ``sparse_solve``, each to the scalar ops ``hawk.linalg`` (or
``hawk.sparse_lu``) writes out, and the ``@`` operator. ``lowering`` is the
``frontend.Lowering`` doing the walk."""

from __future__ import annotations

import ast
import operator

from . import linalg, sparse_lu
from .ir import MAX_MATRIX_SIDE, MAX_WIDTH, DType, OpKind
from .values import Lit, S, V

__all__ = ["Ops", "lower_call", "matmul", "matrix_value", "structural_pattern", "ARITY"]

#: how many arguments each helper takes
ARITY = {"matrix": range(1, MAX_MATRIX_SIDE + 1), "zeros": (1, 2), "identity": (1,),
         "outer": (2,), "transpose": (1,), "matmul": (2,), "trace": (1,), "det": (1,),
         "inverse": (1,), "solve": (2,), "sparse_solve": (2,),
         "concat": range(1, MAX_WIDTH + 1)}  # fmt: skip


class Ops(linalg.Arithmetic):
    """``hawk.linalg``'s arithmetic as IR ops emitted by ``lowering`` (constants folded as
    the frontend folds them)."""

    def __init__(self, lowering, node: ast.AST):
        self.low, self.node = lowering, node

    def add(self, a, b):
        return self.low.arith(OpKind.ADD, a, b, "+", operator.add, self.node)

    def sub(self, a, b):
        return self.low.arith(OpKind.SUB, a, b, "-", operator.sub, self.node)

    def mul(self, a, b):
        return self.low.arith(OpKind.MUL, a, b, "*", operator.mul, self.node)

    def div(self, a, b):
        return self.low.arith(OpKind.DIV, a, b, "/", operator.truediv, self.node)

    def neg(self, a):
        if isinstance(a, Lit):
            return Lit(-a.value)
        return self.low.emit(OpKind.NEG, a.dtype, (a.id,))

    def abs(self, a):
        return self.low.call_abs(a, self.node)

    def greater(self, a, b):
        if isinstance(a, Lit) and isinstance(b, Lit):
            return Lit(a.value > b.value)
        dtype = self.low.common_type(a, b, ">", self.node)
        return self.low.emit(OpKind.GT, DType.BOOL, (self.low.cast(a, dtype).id,
                                                     self.low.cast(b, dtype).id))

    def equal(self, a, b):
        if isinstance(a, Lit) and isinstance(b, Lit):
            return Lit(a.value == b.value)
        dtype = self.low.common_type(a, b, "==", self.node)
        return self.low.emit(OpKind.EQ, DType.BOOL, (self.low.cast(a, dtype).id,
                                                     self.low.cast(b, dtype).id))

    def differ(self, a, b):
        if isinstance(a, Lit) and isinstance(b, Lit):
            return Lit(a.value != b.value)
        return self.low.emit(OpKind.NE, DType.BOOL, (self.low.cast(a, DType.BOOL).id,
                                                     self.low.cast(b, DType.BOOL).id))

    def select(self, condition, a, b):
        if isinstance(condition, Lit):
            return a if condition.value else b
        return self.low.select(condition, a, b, "a linear algebra value", self.node)

    def false(self):
        return Lit(False)

    def zero(self):
        return Lit(0.0)


def matrix_value(rows: list[list]) -> V | S | Lit:
    """A matrix of these rows of scalars (a single element is that scalar)."""
    comps = [c for row in rows for c in row]
    if len(comps) == 1:
        return comps[0]
    return V(tuple(comps), (len(rows), len(rows[0])))


def _vector_value(comps: list):
    return comps[0] if len(comps) == 1 else V(tuple(comps))


def matmul(lowering, a, b, node: ast.AST):
    """``a @ b``: matrix @ matrix, matrix @ vector, vector @ matrix, vector @ vector (the dot
    product), each element summed left to right."""
    for x in (a, b):
        if not isinstance(x, V):
            raise lowering.error(f"@ takes vectors and matrices, not {lowering.describe(x)}",
                                 node)
    left = a.rows if a.is_matrix else [list(a.comps)]
    right = b.rows if b.is_matrix else [[c] for c in b.comps]
    if len(left[0]) != len(right):
        raise lowering.error(f"@ needs the inner sizes equal: {lowering.describe(a)} @ "
                             f"{lowering.describe(b)}", node)
    product = linalg.matmul(Ops(lowering, node), left, right)
    if a.is_matrix and b.is_matrix:
        return matrix_value(product)
    return _vector_value([c for row in product for c in row])


def _count(lowering, value, what: str, node: ast.AST) -> int:
    if not (isinstance(value, Lit) and type(value.value) is int
            and 1 <= value.value <= MAX_MATRIX_SIDE):
        raise lowering.error(f"{what} must be a constant int from 1 to {MAX_MATRIX_SIDE}", node)
    return value.value


def _matrix(lowering, value, name: str, node: ast.AST, square: bool = False) -> V:
    if not (isinstance(value, V) and value.is_matrix):
        raise lowering.error(f"hawk.{name}() takes a matrix (Matrix[R, C]), not "
                             f"{lowering.describe(value)}", node)
    if square and value.shape[0] != value.shape[1]:
        raise lowering.error(f"hawk.{name}() takes a square matrix, not a {value.type_name}",
                             node)
    return value


def _floats(lowering, rows: list[list]) -> list[list]:
    """The elements as floats (an integer matrix is solved in float64)."""
    dtype = rows[0][0].dtype if rows[0][0].dtype.is_float else DType.FLOAT64
    return [[lowering.cast(c, dtype) for c in row] for row in rows]


def _row(lowering, value, name: str, node: ast.AST) -> list:
    """One row of ``hawk.matrix(...)``: a vector, or a tuple of numbers."""
    if isinstance(value, V) and not value.is_matrix:
        return list(value.comps)
    if isinstance(value, tuple) and all(isinstance(c, S | Lit) for c in value):
        return [lowering.number(c, f"hawk.{name}()", node) for c in value]
    raise lowering.error(f"hawk.matrix() takes rows, each a vector or a tuple of numbers "
                         f"(`hawk.matrix((a, b), (c, d))`), not {lowering.describe(value)}",
                         node)


def _concat(lowering, args: list, node: ast.AST):
    """``hawk.concat(a, b, ...)``: the components of numbers, vectors and matrices (row by
    row) in order, as one vector of their common float type (a number if there is one)."""
    comps = []
    for value in args:
        if isinstance(value, V):
            comps += value.comps
        elif isinstance(value, S | Lit):
            comps.append(lowering.number(value, "hawk.concat()", node))
        else:
            raise lowering.error(f"hawk.concat() takes numbers, vectors and matrices, not "
                                 f"{lowering.describe(value)}", node)
    dtype = lowering.vector_dtype(comps)
    comps = [lowering.cast(c, dtype) for c in comps]
    return comps[0] if len(comps) == 1 else V(tuple(comps))


def lower_call(lowering, name: str, args: list, node: ast.AST):
    """Lower ``hawk.<name>(*args)``; ``args`` are values (a tuple for a tuple literal)."""
    if len(args) not in ARITY[name]:
        counts = (f"1 to {ARITY[name][-1]}" if name in ("matrix", "concat")
                  else " or ".join(map(str, ARITY[name])))
        raise lowering.error(f"hawk.{name}() takes {counts} argument(s), got {len(args)}", node)
    ops = Ops(lowering, node)
    if name == "concat":
        return _concat(lowering, args, node)
    if name == "matrix":
        rows = [_row(lowering, a, name, node) for a in args]
        if len({len(r) for r in rows}) != 1 or len(rows[0]) > MAX_MATRIX_SIDE \
                or len(rows) * len(rows[0]) < 2:
            raise lowering.error(f"hawk.matrix() takes rows of one length from 1 to "
                                 f"{MAX_MATRIX_SIDE} (at least 2 elements), got lengths "
                                 f"{[len(r) for r in rows]}", node)
        elements = [c for r in rows for c in r]
        dtype = lowering.vector_dtype(elements)
        return matrix_value([[lowering.cast(c, dtype) for c in r] for r in rows])
    if name in ("zeros", "identity"):
        sizes = [_count(lowering, a, f"hawk.{name}()'s size", node) for a in args]
        if name == "zeros" and len(sizes) == 1:
            if sizes[0] < 2:
                raise lowering.error("hawk.zeros(K) makes a vector of K >= 2 components", node)
            return V((lowering.const(0.0, DType.FLOAT64),) * sizes[0])
        rows, columns = (sizes[0], sizes[0]) if name == "identity" else sizes
        one, zero = lowering.const(1.0, DType.FLOAT64), lowering.const(0.0, DType.FLOAT64)
        return matrix_value([[one if name == "identity" and i == j else zero
                              for j in range(columns)] for i in range(rows)])
    if name == "outer":
        for x in args:
            if not isinstance(x, V) or x.is_matrix:
                raise lowering.error(f"hawk.outer() takes two vectors, not "
                                     f"{lowering.describe(x)}", node)
        return matrix_value(linalg.outer(ops, list(args[0].comps), list(args[1].comps)))
    if name == "matmul":
        return matmul(lowering, *args, node)
    a = _matrix(lowering, args[0], name, node, square=name != "transpose")
    if name == "transpose":
        return matrix_value(linalg.transpose(a.rows))
    if name == "trace":
        return linalg.trace(ops, a.rows)
    rows = _floats(lowering, a.rows)
    if name == "det":
        return linalg.det(ops, rows)
    if name == "inverse":
        dtype = rows[0][0].dtype
        one, zero = lowering.const(1.0, dtype), lowering.const(0.0, dtype)
        if len(rows) > linalg.UNROLLED_SIDE:
            identity = [[one if i == j else zero for j in range(len(rows))]
                        for i in range(len(rows))]
            return matrix_value(_solved_by_loops(lowering, rows, identity))
        return matrix_value(linalg.inverse(ops, rows, one, zero))
    b = args[1]  # solve(a, b), sparse_solve(a, b)
    if not isinstance(b, V):
        raise lowering.error(f"hawk.{name}(a, b) takes a vector or a matrix b, not "
                             f"{lowering.describe(b)}", node)
    right = b.rows if b.is_matrix else [[c] for c in b.comps]
    if len(right) != len(rows):
        raise lowering.error(f"hawk.{name}(a, b) needs b of {len(rows)} rows for a "
                             f"{a.type_name}, got {lowering.describe(b)}", node)
    dtype = rows[0][0].dtype
    right = [[lowering.cast(c, dtype) for c in r] for r in right]
    factored = _sparse_factors(lowering, ops, rows) if name == "sparse_solve" else None
    if factored is not None:
        x = sparse_lu.substitute(ops, factored[1], right, factored[0])
    elif len(rows) > linalg.UNROLLED_SIDE:
        x = _solved_by_loops(lowering, rows, right)
    else:
        x = linalg.solve(ops, rows, right)
    return matrix_value(x) if b.is_matrix else _vector_value([r[0] for r in x])


def _sparse_factors(lowering, ops: Ops, rows: list[list]):
    """``(plan, factors)`` of ``hawk.sparse_lu`` for the matrix ``rows``, or None where its
    structural pattern (``structural_pattern``) is too dense to pay (``sparse_lu.plan_for``;
    it is solved as ``hawk.solve`` then). Made once per matrix in a lowering
    (``lowering.sparse_factors``, by its elements' ids): a Rosenbrock step solves one ``W``
    eight times, and emitting its factorisation once spares the tracing what
    common-subexpression elimination would merge anyway."""
    key = tuple(c.id for row in rows for c in row)
    if key not in lowering.sparse_factors:
        plan = sparse_lu.plan_for(structural_pattern(lowering, rows), len(rows))
        lowering.sparse_factors[key] = (None if plan is None
                                        else (plan, sparse_lu.factor(ops, rows, plan)))
    return lowering.sparse_factors[key]


def _solved_by_loops(lowering, a: list[list], b: list[list]) -> list[list]:
    """``linalg.solve(a, b)``'s values, as the IR's whole-matrix ops (``LU``, ``LU_SOLVE`` and
    their ``PART``s): ``linalg``'s "Sizes". Numbers are materialised, as every element of a
    block is an op; solves of one matrix share its ``LU`` (common subexpressions)."""
    dtype, size, columns = a[0][0].dtype, len(a), len(b[0])

    def ids(rows):
        return tuple(lowering.cast(c, dtype).id for row in rows for c in row)

    lu = lowering.emit(OpKind.LU, dtype, ids(a), size)
    solution = lowering.emit(OpKind.LU_SOLVE, dtype, (lu.id, *ids(b)), (size, columns))
    return [[lowering.emit(OpKind.PART, dtype, (solution.id,), i * columns + j)
             for j in range(columns)] for i in range(size)]


#: ops that are zero when every operand is (``x - y`` with ``x``, ``y`` zero); a ``SELECT``'s
#: condition is not an operand here (``_zero_when``)
_ZERO_WHEN_ALL = frozenset({OpKind.ADD, OpKind.SUB, OpKind.NEG, OpKind.CAST, OpKind.MIN,
                            OpKind.MAX, OpKind.ABS})


def _zero_when(op) -> tuple[tuple[int, ...], bool] | None:
    """Which of ``op``'s operands make it zero, and whether any one does (a product) or all
    must (a sum); None for an op that is not zero by construction."""
    if op.kind in _ZERO_WHEN_ALL:
        return op.args, False
    if op.kind is OpKind.SELECT:
        return op.args[1:], False
    if op.kind is OpKind.MUL:
        return op.args, True
    if op.kind is OpKind.DIV:
        return op.args[:1], True
    return None


def structural_pattern(lowering, rows: list[list]) -> frozenset[tuple[int, int]]:
    """The ``(row, column)`` of each element of ``rows`` that is not zero by construction:
    zero by construction is a constant 0, or arithmetic that gives 0 whatever finite values
    its other operands hold (a product with a factor zero by construction, a quotient of one
    by a nonzero divisor, a sum, difference, negation, cast, ``min``/``max``/``abs``/select of
    such values). These are ``hawk.jacobian``'s structural zeros (an output that does not
    depend on an input gets the constant 0) carried through ``scale * identity - J``. Only
    where an operand is inf or NaN (an infinite ``1 / (h gamma)``) or a divisor 0 does such
    an element differ from 0; the sparse solve then reads it as 0 where ``hawk.solve`` would
    spread the NaN."""
    memo: dict[int, bool] = {}

    def zero(index: int) -> bool:  # depth-first without recursion: a sum may be long
        stack = [index]
        while stack:
            op = lowering.ops[stack[-1]]
            rule = None if op.kind is OpKind.CONST else _zero_when(op)
            waiting = [i for i in (rule[0] if rule else ()) if i not in memo]
            if waiting:
                stack += waiting
                continue
            if op.kind is OpKind.CONST:
                memo[stack.pop()] = op.attr == 0
            else:
                memo[stack.pop()] = rule is not None and (any if rule[1] else all)(
                    memo[i] for i in rule[0])
        return memo[index]

    return frozenset((i, j) for i, row in enumerate(rows) for j, c in enumerate(row)
                     if not (isinstance(c, Lit) and c.value == 0 or isinstance(c, S)
                             and zero(c.id)))
