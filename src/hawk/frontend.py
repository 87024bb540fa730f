"""Lowering a kernel's Python AST into the hawk IR for one dtype signature: the walk.

Typing and lowering happen in one walk over the AST, by abstract interpretation: each expression
evaluates to a typed value (``hawk.values``: a scalar SSA value, a vector of them, a weak Python
literal, a tuple, a compile-time function or module), so the type of every operand is known
when its op is emitted and no later pass needs to re-derive it. Kept in one walk because what
reaches the IR is straight-line code: calls of ``@hawk.func`` functions are inlined and ``for``
loops over constant ranges unrolled during the same walk, so there is no fixed point to compute,
and a separate typed AST would only duplicate it.

``Lowering`` is the walk: its state (the ops, the names in scope, the funcs being inlined), the
ops it emits, the expressions and the typing rules they follow. The rest is by job, in modules
of functions that take the lowering and call back through its methods (none imports this one):
``statements`` (assignments, ``if``, unrolled ``for``), ``names`` (globals, builtins and module
attributes), ``calls`` (the table of built-in functions and the simple ones' lowerings; matrix,
derivative, random and table calls in ``matrix_calls``, ``derivatives``, ``draws``,
``tables``), ``func_calls`` (inlining a ``@hawk.func``), ``integers`` (bit operations).

Every unsupported construct, unknown name or type mismatch raises ``CompileError`` at the node
that caused it, so the message points at the user's line (and, inside a func, shows the calls
it was reached through).
"""

from __future__ import annotations

import ast
import operator

from . import calls, func_calls, integers, linalg, matrix_calls, names, statements, tables
from .errors import CompileError
from .ir import BIT_OPS, DType, Op, OpKind, Parameter, Program, Role, Store
from .passes import attr_key
from .source import KernelSource, construct_name
from .tables import TableValue
from .typing_rules import WEAK_DEFAULTS, literal_dtype, promote
from .values import FuncRef, Lit, Ref, S, SeriesValue, Undefined, V, describe

__all__ = ["lower", "Lowering"]

_FOLD_COMPARISON = {OpKind.LT: operator.lt, OpKind.LE: operator.le, OpKind.GT: operator.gt,
                    OpKind.GE: operator.ge, OpKind.EQ: operator.eq, OpKind.NE: operator.ne}
_COMPONENTS = {"x": 0, "y": 1, "z": 2, "w": 3}

_BINOPS = {
    ast.Add: (OpKind.ADD, operator.add, "+"), ast.Sub: (OpKind.SUB, operator.sub, "-"),
    ast.Mult: (OpKind.MUL, operator.mul, "*"), ast.Div: (OpKind.DIV, operator.truediv, "/"),
    ast.FloorDiv: (OpKind.FLOORDIV, operator.floordiv, "//"),
    ast.Mod: (OpKind.MOD, operator.mod, "%"), ast.MatMult: (None, None, "@"),
    **integers.BINARY,  # & | ^ << >>
}  # fmt: skip
_CMPOPS = {
    ast.Lt: OpKind.LT, ast.LtE: OpKind.LE, ast.Gt: OpKind.GT,
    ast.GtE: OpKind.GE, ast.Eq: OpKind.EQ, ast.NotEq: OpKind.NE,
}  # fmt: skip
_CMP_SYMBOLS = {OpKind.LT: "<", OpKind.LE: "<=", OpKind.GT: ">", OpKind.GE: ">=",
                OpKind.EQ: "==", OpKind.NE: "!="}  # fmt: skip


class Lowering:
    """One lowering of one kernel body under one dtype signature."""

    def __init__(self, source: KernelSource, params: tuple[Parameter, ...], options):
        self.src = source
        self.params = {p.name: p for p in params}
        self.param_list = params
        self.options = options
        self.ops: list[Op] = []
        self.row_stores: list = []
        # the conditions of the `if`s around the statement being lowered, with the branch
        # taken (True: the body, False: the else), for the guard of a Series write there
        self.guards: list[tuple[S, bool]] = []
        # the funcs being inlined, outermost first (func_calls.Frame)
        self.frames: list[func_calls.Frame] = []
        self._interned: dict[tuple, int] = {}
        # hawk.sparse_solve's factorisations by the matrix's element ids (matrix_calls)
        self.sparse_factors: dict[tuple[int, ...], object] = {}
        self.env: dict[str, object] = {}
        self.initial: dict[str, object] = {}
        self.node: ast.AST = source.tree
        for p in params:
            self.env[p.name] = self._initial_value(p)
        self.initial = dict(self.env)

    # emitting

    def emit(self, kind: OpKind, dtype: DType, args=(), attr=None) -> S:
        key = (kind, dtype, args, attr_key(attr))  # by bits: 0.0 is not -0.0, NaNs by sign
        interned = kind in (OpKind.CONST, OpKind.LOAD)
        if interned and key in self._interned:
            return S(self._interned[key], dtype)
        self.ops.append(Op(kind, dtype, tuple(args), attr, self.src.loc(self.node)))
        if interned:
            self._interned[key] = len(self.ops) - 1
        return S(len(self.ops) - 1, dtype)

    def const(self, value, dtype: DType) -> S:
        try:
            attr = dtype.numpy.type(value).item()
        except OverflowError:
            raise self.error(f"the constant {value!r} does not fit in {dtype.value}") from None
        return self.emit(OpKind.CONST, dtype, attr=attr)

    def cast(self, value, dtype: DType) -> S:
        """A scalar (or literal) converted to ``dtype``."""
        if isinstance(value, Lit):
            return self.const(value.value, dtype)
        if value.dtype is dtype:
            return value
        if DType.BOOL in (value.dtype, dtype):  # the IR's casts are between numbers only
            raise self.error(f"a {value.dtype.value} is used where a {dtype.value} is needed "
                             "(bools do not mix with numbers; write `1.0 if flag else 0.0`)")
        return self.emit(OpKind.CAST, dtype, (value.id,))

    def error(self, message: str, node: ast.AST | None = None, notes=()) -> CompileError:
        """A ``CompileError`` at ``node`` (else the node being lowered), with the call sites of
        the funcs being inlined and ``notes`` (``(text, loc)`` pairs)."""
        return CompileError(message, self.src.loc(node or self.node),
                            calls=tuple(f.call for f in self.frames), notes=notes)

    @staticmethod
    def describe(value) -> str:
        return describe(value)

    def _initial_value(self, p: Parameter):
        if p.role is Role.OUT:
            return Undefined(f"Out parameter {p.name!r} is write-only: assign it before reading it")
        if p.role is Role.TERMINATED:
            return self.const(False, DType.BOOL)
        if p.role is Role.SERIES:
            return SeriesValue(p)
        if p.role is Role.TABLE:
            return TableValue(p)
        if p.is_vector:
            return V(tuple(self.emit(OpKind.LOAD, p.dtype, attr=(p.name, k))
                           for k in range(p.width)), p.dims if p.columns else None)
        return self.emit(OpKind.LOAD, p.dtype, attr=(p.name, None))

    # statements (hawk.statements), funcs (hawk.func_calls), names (hawk.names)

    def run(self) -> Program:
        body = self.src.tree.body
        for i, stmt in enumerate(body):
            is_docstring = (i == 0 and isinstance(stmt, ast.Expr)
                            and isinstance(stmt.value, ast.Constant)
                            and isinstance(stmt.value.value, str))  # fmt: skip
            if not is_docstring:
                self.statement(stmt)
        return self._finish()

    def statement(self, node: ast.stmt) -> None:
        statements.lower_statement(self, node)

    def global_value(self, name: str, value, node: ast.AST):
        return names.global_value(self, name, value, node)

    def inline_values(self, target, args: list, node: ast.AST, kwargs=None):
        """The value the func ``target`` returns for argument values already lowered (a
        call's, or ``hawk.jvp``'s), its body lowered in place."""
        return func_calls.inline_values(self, target, args, node, kwargs)

    def tuple_or_expr(self, node: ast.expr):
        """An assignment's right-hand side: a value, or a (nested) tuple of values."""
        if isinstance(node, ast.Tuple):
            return tuple(self.tuple_or_expr(e) for e in node.elts)
        return self.expr(node)

    def call_arguments(self, nodes: list[ast.expr]) -> list:
        """A call's positional argument values (tuples included), a ``*t`` of a tuple spread
        into its items."""
        values = []
        for arg in nodes:
            if isinstance(arg, ast.Starred):
                spread = self.tuple_or_expr(arg.value)
                if not isinstance(spread, tuple):
                    raise self.error(f"`*` spreads a tuple into a call's arguments, not "
                                     f"{describe(spread)}", arg)
                values.extend(spread)
            else:
                values.append(self.tuple_or_expr(arg))
        return values

    # expressions

    def expr(self, node: ast.expr):
        saved, self.node = self.node, node
        handler = _EXPRESSIONS.get(type(node))
        if handler is None:
            raise self.error(f"{construct_name(node)} is not supported in a hawk kernel", node)
        value = handler(self, node)
        self.node = saved
        return value

    def constant(self, node: ast.Constant):
        if isinstance(node.value, bool | int | float):
            return Lit(node.value)
        raise self.error(f"a {type(node.value).__name__} constant is not supported in a hawk "
                         "kernel (only numbers and True/False)", node)

    def load_name(self, node: ast.Name):
        if node.id in self.env:
            value = self.env[node.id]
            if isinstance(value, Undefined):
                raise self.error(value.reason, node)
            if isinstance(value, SeriesValue):
                raise self.error(value.write_only(), node)
            return value
        if node.id in self.src.names:
            return self.global_value(node.id, self.src.names[node.id], node)
        builtin = names.builtin_value(node.id)
        if builtin is not None:
            return builtin
        raise self.error(f"unknown name {node.id!r}: not a parameter, a local assigned "
                         "earlier, or a global number, math function or hawk helper", node)

    def attribute(self, node: ast.Attribute):
        member = names.module_attribute(self, node)
        if member is not None:
            return member
        base = self.expr(node.value)
        if isinstance(base, Ref) and base.kind == "module":
            return names.module_member(self, base, node)
        if isinstance(base, V) and base.is_matrix and node.attr == "T":
            return matrix_calls.matrix_value(linalg.transpose(base.rows))
        if isinstance(base, V):
            return base.comps[self.component_index(node, base)]
        raise self.error(f"attribute {node.attr!r} of {describe(base)} is not supported "
                         "(only .x, .y, .z, .w of a vector, .T of a matrix)", node)

    def subscript(self, node: ast.Subscript):
        base = self.expr(node.value)
        if isinstance(base, tuple):
            return self.tuple_item(base, node)
        if isinstance(base, TableValue):
            return tables.lower_read(self, base, node)
        if not isinstance(base, V):
            raise self.error(f"indexing {describe(base)} is not supported (only a vector or a "
                             "matrix with a constant index)", node)
        if base.is_matrix and self.is_row_index(node):  # m[i]: row i
            i, columns = self.row_index(node, base), base.shape[1]
            return V(base.comps[i * columns:(i + 1) * columns])
        if isinstance(node.slice, ast.Slice) and not base.is_matrix:
            return self.vector_slice(base, node)
        return base.comps[self.component_index(node, base)]

    def tuple_item(self, base: tuple, node: ast.Subscript):
        """``t[i]`` or ``t[a:b:c]`` of a tuple, at compile-time ints (Python's indexing)."""
        if isinstance(node.slice, ast.Slice):
            bounds = []
            for bound in (node.slice.lower, node.slice.upper, node.slice.step):
                value = None if bound is None else self.expr(bound)
                if value is not None and not (isinstance(value, Lit)
                                              and type(value.value) is int):
                    raise self.error(f"the bounds of a tuple's slice are compile-time ints, "
                                     f"not {describe(value)}", node)
                bounds.append(None if value is None else value.value)
            return base[slice(*bounds)]
        index = self.expr(node.slice)
        if not (isinstance(index, Lit) and type(index.value) is int
                and -len(base) <= index.value < len(base)):
            raise self.error(f"a tuple of {len(base)} values is indexed by a constant from 0 to "
                             f"{len(base) - 1}", node)
        return base[index.value]

    def vector_slice(self, vector: V, node: ast.Subscript):
        """``v[a:b]``: the components ``a`` to ``b - 1`` (compile-time ints, as Python's
        slice; no step), a vector, or a number when one component is left."""
        part = node.slice
        if part.step is not None:
            raise self.error(f"a slice of a {vector.type_name} takes no step: `v[a:b]`", node)
        bounds = []
        for bound in (part.lower, part.upper):
            value = None if bound is None else self.expr(bound)
            if value is not None and not (isinstance(value, Lit) and type(value.value) is int):
                raise self.error(f"the bounds of a slice of a {vector.type_name} are "
                                 f"compile-time ints (literals, global ints, loop indices), not "
                                 f"{describe(value)}", node)
            bounds.append(None if value is None else value.value)
        comps = vector.comps[bounds[0]:bounds[1]]
        if not comps:
            raise self.error(f"`{ast.unparse(node)}` takes no component of a "
                             f"{vector.type_name}", node)
        return comps[0] if len(comps) == 1 else V(comps)

    @staticmethod
    def is_row_index(node: ast.Attribute | ast.Subscript) -> bool:
        return isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Tuple | ast.Slice)

    def row_index(self, node: ast.Subscript, matrix: V) -> int:
        return self.constant_index(node.slice, matrix.shape[0], f"a row of a "
                                   f"{matrix.type_name}", node)

    def constant_index(self, index: ast.expr, size: int, what: str, node: ast.AST) -> int:
        """``index`` as a compile-time int (a literal, a global int, a loop's ``i``) from
        ``-size`` to ``size - 1``, counted from 0; negative ones count from the end."""
        value = self.expr(index)
        if not (isinstance(value, Lit) and type(value.value) is int
                and -size <= value.value < size):
            indices = (", ".join(map(str, range(size - 1))) + f" or {size - 1}" if size <= 4
                       else f"from {-size} to {size - 1}")
            raise self.error(f"{what} index must be a constant {indices}", node)
        return value.value % size

    def component_index(self, node: ast.Attribute | ast.Subscript, value: V) -> int:
        """The component ``value`` is accessed at: ``.x .y .z .w`` or an index that is a
        compile-time int constant (a literal, a global int, a loop's ``i``), ``m[i, j]`` for a
        matrix; ``p[-1]`` is the last."""
        width, kind = value.width, value.type_name
        if value.is_matrix:
            (rows, columns), node_slice = value.shape, getattr(node, "slice", None)
            if not isinstance(node_slice, ast.Tuple) or len(node_slice.elts) != 2:
                raise self.error(f"a {kind} is read as m[i, j] (an element) or m[i] (a row), "
                                 f"not `{ast.unparse(node)}`", node)
            i = self.constant_index(node_slice.elts[0], rows, f"a {kind} row", node)
            j = self.constant_index(node_slice.elts[1], columns, f"a {kind} column", node)
            return i * columns + j
        names = list(_COMPONENTS)[:width]
        if isinstance(node, ast.Attribute):
            if _COMPONENTS.get(node.attr, width) >= width:
                listing = ", ".join(f".{c}" for c in names[:-1]) + f" and .{names[-1]}"
                raise self.error(f"a {kind} has components {listing}, not .{node.attr}", node)
            return _COMPONENTS[node.attr]
        if isinstance(node.slice, ast.Slice):
            raise self.error(f"slicing a {kind} is not supported here; use its components "
                             f"{', '.join('.' + c for c in names)} or a constant index", node)
        return self.constant_index(node.slice, width, f"a {kind}", node)

    def binop_expr(self, node: ast.BinOp):
        if isinstance(node.op, ast.Add):  # tuple + tuple: Python's concatenation
            left, right = self.tuple_or_expr(node.left), self.tuple_or_expr(node.right)
            if isinstance(left, tuple) and isinstance(right, tuple):
                return left + right
            if isinstance(left, tuple) or isinstance(right, tuple):
                raise self.error(f"`+` joins two tuples, not {describe(left)} and "
                                 f"{describe(right)}", node)
            return self.binop(node.op, left, right, node)
        return self.binop(node.op, self.expr(node.left), self.expr(node.right), node)

    def binop(self, op: ast.operator, a, b, node: ast.AST):
        if isinstance(op, ast.Pow):
            return self.power(a, b, node)
        if type(op) not in _BINOPS:
            raise self.error(f"the operator {construct_name(op)} is not supported", node)
        kind, fold, symbol = _BINOPS[type(op)]
        if isinstance(op, ast.MatMult):
            return matrix_calls.matmul(self, a, b, node)
        if isinstance(a, V) or isinstance(b, V):
            vector = a if isinstance(a, V) else b
            if kind not in (OpKind.ADD, OpKind.SUB, OpKind.MUL, OpKind.DIV):
                raise self.error(f"{symbol} is not defined for {vector.type_name} operands", node)
            if isinstance(a, V) and isinstance(b, V) and a.dims != b.dims:
                what = "matrices of one shape" if vector.is_matrix else "vectors of one width"
                raise self.error(f"{symbol} needs {what}, got {describe(a)} and "
                                 f"{describe(b)}", node)
            a_c = a.comps if isinstance(a, V) else (a,) * vector.width
            b_c = b.comps if isinstance(b, V) else (b,) * vector.width
            return vector.like(self.arith(kind, x, y, symbol, fold, node)
                               for x, y in zip(a_c, b_c, strict=True))
        return self.arith(kind, a, b, symbol, fold, node)

    def arith(self, kind: OpKind, a, b, symbol: str, fold, node: ast.AST):
        a, b = self.scalar(a, node), self.scalar(b, node)
        if isinstance(a, Lit) and isinstance(b, Lit) and not isinstance(a.value, bool) \
                and not isinstance(b.value, bool):
            try:
                return Lit(fold(a.value, b.value))
            except ZeroDivisionError:
                raise self.error(f"division by zero in the constant expression {symbol}",
                                 node) from None
            except (ValueError, TypeError) as exc:  # 1 << -1, 1.5 & 1
                raise self.error(f"the constant expression {symbol} is invalid: {exc}",
                                 node) from None
        if kind in BIT_OPS:
            return integers.lower_binary(self, kind, a, b, symbol, node)
        dtype = self.common_type(a, b, symbol, node)
        if kind is OpKind.DIV and not dtype.is_float:
            dtype = DType.FLOAT64
        return self.emit(kind, dtype, (self.cast(a, dtype).id, self.cast(b, dtype).id))

    def power(self, a, b, node: ast.AST):
        if isinstance(a, V) or isinstance(b, V):
            raise self.error(f"** is not defined for {(a if isinstance(a, V) else b).type_name} "
                             "operands", node)
        a, b = self.scalar(a, node), self.scalar(b, node)
        if isinstance(a, Lit) and isinstance(b, Lit) and not isinstance(a.value, bool) \
                and not isinstance(b.value, bool):
            huge = isinstance(b.value, int) and b.value > 1024  # no 10 ** 10 ** 9 bigints
            try:  # a constant expression, folded as Python would (2 ** 70 stays an int)
                folded = None if huge else a.value**b.value
            except ZeroDivisionError:
                raise self.error("division by zero in the constant expression **",
                                 node) from None
            except OverflowError:
                folded = None
            if isinstance(folded, int | float):
                return Lit(folded)
            return self.math_call("pow", [a, b], node)  # overflow, complex: what C pow gives
        if isinstance(b, Lit) and type(b.value) is int and 2 <= b.value <= 4:
            self.common_type(a, b, "**", node)
            result = a
            for _ in range(b.value - 1):  # left to right: ((a * a) * a)
                result = self.emit(OpKind.MUL, a.dtype, (result.id, a.id))
            return result
        return self.math_call("pow", [a, b], node)

    def unaryop(self, node: ast.UnaryOp):
        value = self.expr(node.operand)
        if isinstance(node.op, ast.UAdd):
            return value
        if isinstance(node.op, ast.USub):
            if isinstance(value, V):
                return value.like(self.emit(OpKind.NEG, c.dtype, (c.id,)) for c in value.comps)
            value = self.scalar(value, node)
            if isinstance(value, Lit) and not isinstance(value.value, bool):
                return Lit(-value.value)
            if self.dtype_of(value) is DType.BOOL:
                raise self.error("unary - is not defined for bool", node)
            return self.emit(OpKind.NEG, value.dtype, (value.id,))
        if isinstance(node.op, ast.Invert):
            return integers.lower_invert(self, self.scalar(value, node), node)
        if isinstance(node.op, ast.Not):
            value = self.boolean(value, "not", node)
            if isinstance(value, Lit):
                return Lit(not value.value)
            return self.emit(OpKind.NOT, DType.BOOL, (value.id,))
        raise self.error(f"the operator {construct_name(node.op)} is not supported", node)

    def boolop(self, node: ast.BoolOp):
        word = "and" if isinstance(node.op, ast.And) else "or"
        kind = OpKind.AND if word == "and" else OpKind.OR
        values = [self.boolean(self.expr(v), word, v) for v in node.values]
        if all(isinstance(v, Lit) for v in values):  # known when compiling (feature flags)
            return Lit(all(v.value for v in values) if word == "and"
                       else any(v.value for v in values))
        result = self.cast(values[0], DType.BOOL)
        for v in values[1:]:
            result = self.emit(kind, DType.BOOL, (result.id, self.cast(v, DType.BOOL).id))
        return result

    def compare(self, node: ast.Compare):
        result, left = None, self.expr(node.left)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.expr(right_node)
            if type(op) not in _CMPOPS:
                raise self.error(f"the comparison {construct_name(op)} is not supported", node)
            kind = _CMPOPS[type(op)]
            a, b = self.scalar(left, node), self.scalar(right, node)
            symbol = _CMP_SYMBOLS[kind]
            a_type, b_type = self.dtype_of(a), self.dtype_of(b)
            if kind in (OpKind.EQ, OpKind.NE) and DType.BOOL in (a_type, b_type):
                if a_type is not b_type:
                    raise self.error(f"cannot compare {describe(a)} {symbol} {describe(b)}", node)
                dtype = DType.BOOL
            else:
                dtype = self.common_type(a, b, symbol, node)
            if isinstance(a, Lit) and isinstance(b, Lit):  # known when compiling, as Python
                test = Lit(bool(_FOLD_COMPARISON[kind](a.value, b.value)))
            else:
                test = self.emit(kind, DType.BOOL, (self.cast(a, dtype).id,
                                                    self.cast(b, dtype).id))
            if result is None:
                result = test
            elif isinstance(result, Lit) and isinstance(test, Lit):
                result = Lit(result.value and test.value)
            else:
                result = self.emit(OpKind.AND, DType.BOOL, (self.cast(result, DType.BOOL).id,
                                                            self.cast(test, DType.BOOL).id))
            left = right
        return result

    def ifexp(self, node: ast.IfExp):
        condition = self.condition(node.test, "a conditional expression")
        return self.select(condition, self.expr(node.body), self.expr(node.orelse),
                           "the two branches of the conditional expression", node)

    def condition(self, node: ast.expr, where: str) -> S:
        value = self.expr(node)
        if isinstance(value, V) or self.dtype_of(value) is not DType.BOOL:
            raise self.error(f"the condition of {where} must be a bool (a comparison such as "
                             f"`x > 0`), not {describe(value)}", node)
        return self.cast(value, DType.BOOL)

    def decided(self, condition: S) -> bool | None:
        """The value of a condition known when compiling (a comparison of constants, a global
        flag), or None when it depends on the sample."""
        op = self.ops[condition.id]
        return bool(op.attr) if op.kind is OpKind.CONST else None

    def select(self, condition: S, a, b, what: str, node: ast.AST | None = None):
        """``a`` where ``condition`` holds, else ``b``: tuples item by item, vectors component
        by component, the same compile-time function or table as itself."""
        if isinstance(a, tuple) or isinstance(b, tuple):
            if not (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b)):
                raise self.error(f"{what} is {describe(a)} on one path and {describe(b)} on "
                                 "the other", node)
            return tuple(self.select(condition, x, y, what, node)
                         for x, y in zip(a, b, strict=True))
        if isinstance(a, Ref) and a == b:
            return a
        if isinstance(a, TableValue) or isinstance(b, TableValue):
            if a == b:
                return a
            raise self.error(f"{what} is {describe(a)} on one path and {describe(b)} on the "
                             "other (a table cannot be chosen per sample)", node)
        if (isinstance(a, V) != isinstance(b, V) or isinstance(a, Ref) or isinstance(b, Ref)
                or (isinstance(a, V) and a.dims != b.dims)):
            raise self.error(f"{what} is {describe(a)} on one path and {describe(b)} on the "
                             "other", node)
        if isinstance(a, V):
            return a.like(self.select(condition, x, y, what, node)
                          for x, y in zip(a.comps, b.comps, strict=True))
        if DType.BOOL in (self.dtype_of(a), self.dtype_of(b)):
            if self.dtype_of(a) is not self.dtype_of(b):
                raise self.error(f"{what} is {describe(a)} on one path and {describe(b)} on the "
                                 "other", node)
            dtype = DType.BOOL
        else:
            dtype = self.common_type(a, b, "if/else", node)
        a, b = self.cast(a, dtype), self.cast(b, dtype)
        if a.id == b.id:
            return a
        known = self.decided(condition)
        if known is not None:  # the other path's ops are dead
            return a if known else b
        return self.emit(OpKind.SELECT, dtype, (condition.id, a.id, b.id))

    def call(self, node: ast.Call):
        func = self.expr(node.func)
        if isinstance(func, FuncRef):
            return func_calls.inline_call(self, func.func, node)
        if not (isinstance(func, Ref) and func.kind == "function"):
            raise self.error(f"calling {ast.unparse(node.func)!r} is not supported: only math "
                             "functions, min/max/abs/float, hawk's vector helpers and @hawk.func "
                             "functions", node)
        if node.keywords:
            raise self.error(f"{func.name}() takes no keyword arguments in a hawk kernel", node)
        return calls.lower_call(self, func.name, node)

    @staticmethod
    def vector_dtype(comps: list) -> DType:
        """The element type of a vector or matrix built from ``comps``: their promoted float
        type (float64 for literals and integers)."""
        strong = [c.dtype for c in comps if isinstance(c, S)]
        if not strong:
            return DType.FLOAT64
        dtype = strong[0]
        for d in strong[1:]:
            dtype = promote(dtype, d)
        return dtype if dtype.is_float else DType.FLOAT64

    def call_abs(self, value, node: ast.AST):
        """``abs()`` of a number (a literal folded)."""
        value = self.number(self.scalar(value, node), "abs()", node)
        if isinstance(value, Lit):
            return Lit(abs(value.value))
        return self.emit(OpKind.ABS, value.dtype, (value.id,))

    def math_call(self, name: str, args: list, node: ast.AST) -> S:
        args = [self.number(a, f"math.{name}()", node) for a in args]
        strong = [a.dtype for a in args if isinstance(a, S) and a.dtype.is_float]
        dtype = strong[0] if strong else DType.FLOAT64
        for d in strong[1:]:
            dtype = promote(dtype, d)
        return self.emit(OpKind.CALL, dtype, tuple(self.cast(a, dtype).id for a in args), name)

    # typing helpers

    def scalar(self, value, node: ast.AST):
        if isinstance(value, S | Lit):
            return value
        if isinstance(value, TableValue):
            raise self.error(value.usage(), node)
        raise self.error(f"expected a scalar here, got {describe(value)}", node)

    def number(self, value, where: str, node: ast.AST):
        if isinstance(value, V) or self.dtype_of(value) is DType.BOOL:
            raise self.error(f"{where} takes numbers, not {describe(value)}", node)
        return value

    def boolean(self, value, word: str, node: ast.AST):
        if isinstance(value, V) or self.dtype_of(value) is not DType.BOOL:
            raise self.error(f"`{word}` takes bools (comparisons such as `x > 0`), not "
                             f"{describe(value)}", node)
        return value

    def dtype_of(self, value) -> DType:
        if isinstance(value, Lit):
            return WEAK_DEFAULTS[type(value.value)]
        if isinstance(value, TableValue):
            raise self.error(value.usage())
        if isinstance(value, Ref):
            raise self.error(f"{describe(value)} ({value.name}) is not a value; call it")
        return value.dtype

    def common_type(self, a, b, symbol: str, node: ast.AST) -> DType:
        if isinstance(a, Lit) and isinstance(b, Lit):
            dtype = promote(self.dtype_of(a), self.dtype_of(b))
        elif isinstance(a, Lit):
            dtype = literal_dtype(a.value, b.dtype)
        elif isinstance(b, Lit):
            dtype = literal_dtype(b.value, a.dtype)
        else:
            dtype = promote(a.dtype, b.dtype)
        if dtype is None or (dtype is DType.BOOL and symbol not in ("if/else",)):
            raise self.error(f"unsupported operand types for {symbol}: {describe(a)} and "
                             f"{describe(b)} (bools do not mix with numbers; write "
                             "`1.0 if flag else 0.0`)", node)
        return dtype

    # the end of the step

    def _finish(self) -> Program:
        self.node = self.src.tree
        stores, terminated = [], None
        for p in self.param_list:
            value = self.env[p.name]
            if value is self.initial[p.name]:
                continue
            if isinstance(value, Undefined):
                raise self.error(value.reason)
            if p.role is Role.TERMINATED:
                terminated = value.id
            elif p.is_vector:
                stores += [Store(p.name, k, self.cast(c, p.dtype).id)
                           for k, c in enumerate(value.comps)]
            else:
                stores.append(Store(p.name, None, self.cast(value, p.dtype).id))
        return Program(
            name=self.src.name,
            params=self.param_list,
            ops=tuple(self.ops),
            stores=tuple(stores),
            terminated=terminated,
            options=self.options,
            row_stores=tuple(self.row_stores),
        )


#: each expression's lowering, by its AST type (built once)
_EXPRESSIONS = {
    ast.Constant: Lowering.constant, ast.Name: Lowering.load_name,
    ast.BinOp: Lowering.binop_expr, ast.UnaryOp: Lowering.unaryop, ast.BoolOp: Lowering.boolop,
    ast.Compare: Lowering.compare, ast.IfExp: Lowering.ifexp, ast.Call: Lowering.call,
    ast.Attribute: Lowering.attribute, ast.Subscript: Lowering.subscript,
}  # fmt: skip


def lower(source: KernelSource, params: tuple[Parameter, ...], options=()) -> Program:
    """The hawk IR of ``source``'s body for parameters of the given dtypes, as lowered: it may
    hold dead ops; ``hawk.passes.optimize`` cleans it up (``Kernel.specialize`` does both)."""
    return Lowering(source, params, options).run()
