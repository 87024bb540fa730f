"""Forward-mode derivatives in a kernel body: ``hawk.jvp(f, x, dx, *rest)`` and
``hawk.jacobian(f, x, *rest)``, for a ``@hawk.func`` ``f`` differentiated in its first argument.

Both are a pass over the IR the call lowers: ``f(x, *rest)`` is inlined once (the primal), and
then, for each direction, the ops it added are walked in order and each op's tangent is emitted
from its operands' tangents by the rule for its kind in ``RULES`` (math functions in
``CALL_RULES``): the derivative rules are written here once, beside the op table of
``hawk.ir``, and every backend compiles what they emit like any other op. A value that does not
depend on ``x`` has no tangent (a structural zero: nothing is emitted for it, so ``jacobian``
costs only what each column needs, and a rule never multiplies 0 by an infinite derivative).

What the rules define, beyond calculus:

- a ``SELECT`` (an ``if`` or a conditional expression), ``min``, ``max`` and ``abs`` are
  differentiated piecewise: the tangent of the branch taken (``abs`` at 0 takes ``+``);
- ``floor``, ``ceil``, ``//``, a cast to an integer, comparisons, random draws and the
  counters are piecewise constant: no tangent; ``a % b`` has ``da - floor(a / b) * db``;
- integer and bit operations have none either, and asking for a derivative in an integer
  ``x``, or of an integer or bool result, is a ``CompileError``.
"""

from __future__ import annotations

import ast
import math

from .ir import DType, OpKind
from .values import Lit, S, V

__all__ = ["jvp", "jacobian", "RULES", "CALL_RULES", "FUNCTIONS", "lower_call", "tangents",
           "primal"]

#: the calls this module lowers, with their argument counts
FUNCTIONS = {"jvp": "3 or more", "jacobian": "2 or more"}


def jvp(f, x, dx, *rest):
    """``(f(x, *rest), df)``: the value of the ``@hawk.func`` ``f`` and its derivative in its
    first argument along ``dx`` (forward mode), in a kernel body.

    Args:
        f: a ``@hawk.func``; its first argument is the one differentiated.
        x: a float number, vector or matrix: where.
        dx: the direction, shaped as ``x``.
        rest: ``f``'s other arguments, held constant.
    """
    raise TypeError("hawk.jvp() is understood inside a @hawk.kernel body (or a @hawk.func) "
                    "only: it differentiates the ops the call lowers")


def jacobian(f, x, *rest):
    """``df/dx`` of the ``@hawk.func`` ``f`` in its first argument, in a kernel body: a number
    for a number in and out, a vector for a number in or out (the derivative, the gradient),
    else a ``Matrix[M, K]`` of ``M`` outputs by ``K`` inputs (one forward pass per input).

    Args:
        f: a ``@hawk.func``; its first argument is the one differentiated.
        x: a float number or vector: where.
        rest: ``f``'s other arguments, held constant.
    """
    raise TypeError("hawk.jacobian() is understood inside a @hawk.kernel body (or a "
                    "@hawk.func) only: it differentiates the ops the call lowers")


class _Tangents:
    """Emitting tangent ops of one dtype; ``None`` is a structural zero throughout."""

    def __init__(self, lowering, dtype: DType):
        self.low, self.dtype = lowering, dtype

    def op(self, kind: OpKind, *args: S) -> S:
        return self.low.emit(kind, self.dtype, tuple(a.id for a in args))

    def const(self, value: float) -> S:
        return self.low.const(value, self.dtype)

    def call(self, name: str, *args: S) -> S:
        return self.low.emit(OpKind.CALL, self.dtype, tuple(a.id for a in args), name)

    def add(self, a, b):
        if a is None or b is None:
            return b if a is None else a
        return self.op(OpKind.ADD, a, b)

    def sub(self, a, b):
        if b is None:
            return a
        return self.neg(b) if a is None else self.op(OpKind.SUB, a, b)

    def neg(self, a):
        return None if a is None else self.op(OpKind.NEG, a)

    def scale(self, t, factor: S):
        """``t * factor`` (``t`` a tangent, ``factor`` a primal value)."""
        return None if t is None else self.op(OpKind.MUL, t, factor)

    def over(self, t, divisor: S):
        return None if t is None else self.op(OpKind.DIV, t, divisor)

    def select(self, condition: S, a, b):
        if a is None and b is None:
            return None
        zero = self.const(0.0)
        return self.low.emit(OpKind.SELECT, self.dtype,
                             (condition.id, (a or zero).id, (b or zero).id))

    def sign_of(self, x: S, t):
        """``t`` where ``x >= 0``, ``-t`` where ``x < 0`` (``abs``)."""
        if t is None:
            return None
        negative = self.low.emit(OpKind.LT, DType.BOOL, (x.id, self.const(0.0).id))
        return self.select(negative, self.neg(t), t)


def _value(op_index: int, dtype: DType) -> S:
    return S(op_index, dtype)


# The rules: (tangents, the op, its operands as values, their tangents, its own value) ->
# the op's tangent (None: zero).


def _mul(T, op, a, da, r):
    return T.add(T.scale(da[0], a[1]), T.scale(da[1], a[0]))


def _div(T, op, a, da, r):  # (da - r db) / b
    return T.over(T.sub(da[0], T.scale(da[1], r)), a[1])


def _mod(T, op, a, da, r):  # a - floor(a / b) b
    if da[1] is None:
        return da[0]
    quotient = T.call("floor", T.op(OpKind.DIV, a[0], a[1]))
    return T.sub(da[0], T.scale(da[1], quotient))


def _minmax(T, op, a, da, r):  # MIN is b if b < a else a; MAX b if b > a else a
    kind = OpKind.LT if op.kind is OpKind.MIN else OpKind.GT
    took_b = T.low.emit(kind, DType.BOOL, (a[1].id, a[0].id))
    return T.select(took_b, da[1], da[0])


def _cast(T, op, a, da, r):
    return da[0] if op.dtype.is_float and T.low.ops[a[0].id].dtype.is_float else None


class LuTangent:
    """The tangent of an ``LU`` op: its elements' tangents (``None``: zero), which the rule of
    an ``LU_SOLVE`` reads as ``dA``. A factorisation has no tangent of its own: only its
    solves' values are parts a kernel can read."""

    def __init__(self, elements: list):
        self.elements = elements


def parts(T, solve: int, count: int) -> list[S]:
    """The elements of the ``LU_SOLVE`` op ``solve``, as ``PART`` ops (merged with the
    kernel's own by common subexpressions)."""
    return [T.low.emit(OpKind.PART, T.dtype, (solve,), k) for k in range(count)]


def block_solve(T, lu: int, right: list) -> S:
    """An ``LU_SOLVE`` of the ``LU`` op ``lu`` for the right-hand side ``right`` (row-major,
    ``None``: zero)."""
    n = T.low.ops[lu].attr
    zero = T.const(0.0)
    return T.low.emit(OpKind.LU_SOLVE, T.dtype, (lu, *[(r or zero).id for r in right]),
                      (n, len(right) // n))


def _lu_solve(T, op, a, da, r):
    """``x = A \\ B``: ``dx = A \\ (dB - dA x)``, with ``A``'s factorisation."""
    n, columns = op.attr
    d_a = da[0].elements if da[0] is not None else [None] * (n * n)
    x = parts(T, r.id, n * columns)
    right = []
    for i in range(n):
        for j in range(columns):
            term = da[1 + i * columns + j]
            for m in range(n):
                term = T.sub(term, T.scale(d_a[i * n + m], x[m * columns + j]))
            right.append(term)
    if all(t is None for t in right):
        return None
    return block_solve(T, a[0].id, right)


RULES = {
    OpKind.LU: lambda T, op, a, da, r: LuTangent(da),
    OpKind.LU_SOLVE: _lu_solve,
    OpKind.PART: lambda T, op, a, da, r: T.low.emit(OpKind.PART, T.dtype, (da[0].id,), op.attr),
    OpKind.NEG: lambda T, op, a, da, r: T.neg(da[0]),
    OpKind.ADD: lambda T, op, a, da, r: T.add(da[0], da[1]),
    OpKind.SUB: lambda T, op, a, da, r: T.sub(da[0], da[1]),
    OpKind.MUL: _mul,
    OpKind.DIV: _div,
    OpKind.MOD: _mod,
    OpKind.FLOORDIV: lambda T, op, a, da, r: None,
    OpKind.ABS: lambda T, op, a, da, r: T.sign_of(a[0], da[0]),
    OpKind.MIN: _minmax,
    OpKind.MAX: _minmax,
    OpKind.SELECT: lambda T, op, a, da, r: T.select(a[0], da[1], da[2]),
    OpKind.CAST: _cast,
}  # fmt: skip


def _pow(T, a, da, r):  # r = a**b: b a**(b-1) da + r log(a) db
    x, y = a
    term = None
    if da[0] is not None:
        power = T.call("pow", x, T.op(OpKind.SUB, y, T.const(1.0)))
        term = T.scale(da[0], T.op(OpKind.MUL, y, power))
    if da[1] is not None:
        term = T.add(term, T.scale(da[1], T.op(OpKind.MUL, r, T.call("log", x))))
    return term


def _atan2(T, a, da, r):  # atan2(y, x): (x dy - y dx) / (x^2 + y^2)
    y, x = a
    norm = T.op(OpKind.ADD, T.op(OpKind.MUL, x, x), T.op(OpKind.MUL, y, y))
    return T.over(T.sub(T.scale(da[0], x), T.scale(da[1], y)), norm)


def _hypot(T, a, da, r):  # (x dx + y dy) / r
    return T.over(T.add(T.scale(da[0], a[0]), T.scale(da[1], a[1])), r)


def _unary(derivative):
    """The rule ``d f(x) = f'(x) dx`` for ``derivative(T, x, r) -> f'(x)``."""
    return lambda T, a, da, r: T.scale(da[0], derivative(T, a[0], r))


def _one_minus_square(T, v):
    return T.op(OpKind.SUB, T.const(1.0), T.op(OpKind.MUL, v, v))


def _one_plus_square(T, v):
    return T.op(OpKind.ADD, T.const(1.0), T.op(OpKind.MUL, v, v))


CALL_RULES = {
    "sqrt": _unary(lambda T, x, r: T.op(OpKind.DIV, T.const(0.5), r)),
    "exp": _unary(lambda T, x, r: r),
    "log": lambda T, a, da, r: T.over(da[0], a[0]),
    "log10": lambda T, a, da, r: T.over(da[0], T.op(OpKind.MUL, a[0],
                                                    T.const(math.log(10.0)))),
    "log1p": lambda T, a, da, r: T.over(da[0], T.op(OpKind.ADD, T.const(1.0), a[0])),
    "expm1": _unary(lambda T, x, r: T.call("exp", x)),
    "sin": _unary(lambda T, x, r: T.call("cos", x)),
    "cos": _unary(lambda T, x, r: T.op(OpKind.NEG, T.call("sin", x))),
    "tan": _unary(lambda T, x, r: _one_plus_square(T, r)),
    "tanh": _unary(lambda T, x, r: _one_minus_square(T, r)),
    "sinh": _unary(lambda T, x, r: T.call("cosh", x)),
    "cosh": _unary(lambda T, x, r: T.call("sinh", x)),
    "asin": lambda T, a, da, r: T.over(da[0], T.call("sqrt", _one_minus_square(T, a[0]))),
    "acos": lambda T, a, da, r: T.neg(T.over(da[0],
                                             T.call("sqrt", _one_minus_square(T, a[0])))),
    "atan": lambda T, a, da, r: T.over(da[0], _one_plus_square(T, a[0])),
    "erf": _unary(lambda T, x, r: T.op(OpKind.MUL, T.const(2.0 / math.sqrt(math.pi)),
                                       T.call("exp", T.op(OpKind.NEG,
                                                          T.op(OpKind.MUL, x, x))))),
    "cbrt": lambda T, a, da, r: T.over(da[0], T.op(OpKind.MUL, T.const(3.0),
                                                   T.op(OpKind.MUL, r, r))),
    "fabs": lambda T, a, da, r: T.sign_of(a[0], da[0]),
    "floor": lambda T, a, da, r: None,
    "ceil": lambda T, a, da, r: None,
    "pow": _pow,
    "atan2": _atan2,
    "hypot": _hypot,
}  # fmt: skip

#: ops whose result never has a tangent (bools, counters, draws, constants, loads, bits)
_CONSTANT = {OpKind.CONST, OpKind.LOAD, OpKind.DRAW, OpKind.SAMPLE_INDEX, OpKind.STEP_INDEX}


def tangents(lowering, start: int, end: int, seeds: dict[int, S]) -> dict[int, S]:
    """The tangents of ops ``start .. end - 1`` of ``lowering`` given ``seeds`` (op index ->
    tangent), emitted after them; ops without a tangent are left out."""
    out = dict(seeds)
    for index in range(start, end):
        op = lowering.ops[index]
        if index in out or op.kind in _CONSTANT or not op.dtype.is_float:
            continue
        da = [out.get(i) for i in op.args]
        if all(t is None for t in da):
            continue
        operands = [_value(i, lowering.ops[i].dtype) for i in op.args]
        result = _value(index, op.dtype)
        T = _Tangents(lowering, op.dtype)
        if op.kind is OpKind.CALL:
            tangent = CALL_RULES[op.attr](T, operands, da, result)
        else:
            tangent = RULES[op.kind](T, op, operands, da, result)
        if tangent is not None:
            out[index] = tangent
    return out


def _components(value) -> tuple[list, tuple[int, ...] | None]:
    if isinstance(value, V):
        return list(value.comps), value.shape
    return [value], None


def _float_input(lowering, value, name: str, node: ast.AST) -> tuple[list[S], V | None]:
    """``x``'s components as fresh float values (``x * 1.0``: exact, and an op of their own,
    so a constant or a value also passed in ``rest`` is not seeded with them)."""
    if not isinstance(value, S | Lit | V):
        raise lowering.error(f"hawk.{name}() differentiates in a number, vector or matrix, not "
                             f"{lowering.describe(value)}", node)
    comps, shape = _components(value)
    dtype = lowering.dtype_of(comps[0])
    if not dtype.is_float:
        raise lowering.error(f"hawk.{name}(): x is {lowering.describe(value)}; derivatives are "
                             "taken in float values only (integer and bit operations have "
                             "none)", node)
    one = lowering.const(1.0, dtype)
    fresh = [lowering.emit(OpKind.MUL, dtype, (lowering.cast(c, dtype).id, one.id))
             for c in comps]
    if isinstance(value, V):
        return fresh, V(tuple(fresh), shape)
    return fresh, None


def _float_output(lowering, value, name: str, node: ast.AST) -> list:
    if not isinstance(value, S | Lit | V):
        raise lowering.error(f"hawk.{name}(): f returns {lowering.describe(value)}; it must "
                             "return a number, a vector or a matrix", node)
    comps, _ = _components(value)
    if not lowering.dtype_of(comps[0]).is_float:
        raise lowering.error(f"hawk.{name}(): f returns {lowering.describe(value)}; only a "
                             "float result has a derivative", node)
    return comps


def checked_call(lowering, name: str, args: list, node: ast.AST, given: str | None,
                 counts: str):
    """The func ``f`` of a derivative call ``hawk.<name>(f, x, [given,] *rest)``, after a
    ``CompileError`` for the wrong count of arguments (``counts``) or an ``f`` that is not a
    func."""
    least = 3 if given else 2
    if len(args) < least:
        raise lowering.error(f"hawk.{name}() takes {counts} arguments (f, x"
                             f"{', ' + given if given else ''}, then f's other arguments), "
                             f"got {len(args)}", node)
    f = args[0]
    if not hasattr(f, "func"):
        raise lowering.error(f"hawk.{name}() takes a @hawk.func as its first argument, not "
                             f"{lowering.describe(f)}", node)
    return f


def primal(lowering, name: str, args: list, node: ast.AST, given: str | None, counts: str):
    """``f(x, *rest)`` of a derivative call ``hawk.<name>(f, x, [given,] *rest)`` inlined on a
    fresh copy of ``x``: ``(fresh components of x, x as a value or None for a number, the
    result, its float components, the first and one-past-last op of the primal)``; a
    ``CompileError`` for the wrong count (``counts``), an ``f`` that is not a func, or a result
    that has no derivative."""
    f = checked_call(lowering, name, args, node, given, counts)
    least = 3 if given else 2
    start = len(lowering.ops)
    fresh, x_value = _float_input(lowering, args[1], name, node)
    x = x_value if x_value is not None else fresh[0]
    result = lowering.inline_values(f.func, [x, *args[least:]], node)
    outputs = _float_output(lowering, result, name, node)
    return fresh, x_value, result, outputs, start, len(lowering.ops)


def lower_call(lowering, name: str, args: list, node: ast.AST):
    """Lower ``hawk.jvp(f, x, dx, *rest)`` (the tuple ``(f(x, *rest), df)``) or
    ``hawk.jacobian(f, x, *rest)`` (``df/dx``: a number, a vector of the input's or the
    output's width, or a ``Matrix[M, K]`` of output M by input K)."""
    fresh, x_value, result, outputs, start, end = primal(
        lowering, name, args, node, "dx" if name == "jvp" else None, FUNCTIONS[name])
    dtype = lowering.dtype_of(outputs[0])
    if name == "jvp":
        directions, shape = _components(args[2])
        if len(directions) != len(fresh) or shape != (x_value.shape if x_value else None):
            raise lowering.error(f"hawk.jvp(): dx is {lowering.describe(args[2])}, not shaped "
                                 f"as x ({lowering.describe(args[1])})", node)
        seeds = {x.id: lowering.cast(lowering.number(d, "hawk.jvp()", node),
                                     lowering.dtype_of(x))
                 for x, d in zip(fresh, directions, strict=True)}
        tangent = _collect(lowering, outputs, tangents(lowering, start, end, seeds), dtype)
        return result, _shaped_like(result, tangent)
    if isinstance(result, V) and result.is_matrix or (x_value is not None and x_value.is_matrix):
        raise lowering.error("hawk.jacobian() takes a number or a vector x and an f returning "
                             "a number or a vector (use hawk.jvp for matrices)", node)
    one = lowering.const(1.0, lowering.dtype_of(fresh[0]))
    columns = [_collect(lowering, outputs, tangents(lowering, start, end, {x.id: one}), dtype)
               for x in fresh]
    rows = [[column[i] for column in columns] for i in range(len(outputs))]
    elements = [c for row in rows for c in row]
    if len(elements) == 1:
        return elements[0]
    if len(rows) == 1 or len(columns) == 1:
        return V(tuple(elements))
    return V(tuple(elements), (len(rows), len(columns)))


def _collect(lowering, outputs: list, tangent: dict[int, S], dtype: DType) -> list[S]:
    zero = lowering.const(0.0, dtype)
    return [tangent.get(o.id, zero) if isinstance(o, S) else zero for o in outputs]


def _shaped_like(value, comps: list[S]):
    return V(tuple(comps), value.shape) if isinstance(value, V) else comps[0]
