"""Lowering a kernel's Python AST into the hawk IR for one dtype signature.

Typing and lowering happen in one walk over the AST, by abstract interpretation: each expression
evaluates to a typed value (a scalar SSA value, a vector of them, or a weak Python literal), so
the type of every operand is known when its op is emitted and no later pass needs to re-derive it.
Kept in one walk because what reaches the IR is straight-line code: calls of ``@hawk.func``
functions are inlined and ``for`` loops over constant ranges unrolled during the same walk
(``hawk.inline`` extends this module's ``Lowering`` with both), so there is no fixed point to
compute, and a separate typed AST would only duplicate this file.

Every unsupported construct, unknown name or type mismatch raises ``CompileError`` at the node
that caused it, so the message points at the user's line.
"""

from __future__ import annotations

import ast
import builtins
import math
import operator
import types
from dataclasses import dataclass

import numpy as np

from . import annotations as hawk_annotations
from . import derivatives, draws, integers, linalg, matrices, matrix_calls, tables
from .errors import CompileError
from .ir import (
    BIT_OPS,
    MATH_FUNCTIONS,
    MAX_WIDTH,
    DType,
    Op,
    OpKind,
    Parameter,
    Program,
    Role,
    RowStore,
    Store,
    type_name,
)
from .passes import attr_key
from .source import KernelSource
from .tables import TableValue
from .typing_rules import WEAK_DEFAULTS, literal_dtype, promote
from .values import Lit, S, V

__all__ = ["lower"]


# -- values an expression can evaluate to -------------------------------------------------------


@dataclass(frozen=True)
class Ref:
    """A module or function named in the body (``math``, ``math.sqrt``, ``hawk.dot``, ``min``)."""

    kind: str  # "module" or "function"
    name: str


@dataclass(frozen=True)
class SeriesValue:
    """A ``Series`` parameter named in the body: it is written a row at a time
    (``s[row] = value``), never read."""

    param: Parameter

    @property
    def annotation(self) -> str:
        return self.param.annotation

    def write_only(self) -> str:
        name = self.param.name
        return (f"{name!r} is a {self.annotation}, which the step writes and never reads: write "
                f"a row with `{name}[row] = value` (keep the value in a local to use it again)")


@dataclass(frozen=True)
class Undefined:
    """A name with no value on some path; reading it is an error that says why."""

    reason: str


Value = S | Lit | V


def describe(value) -> str:
    if isinstance(value, S):
        return value.dtype.value
    if isinstance(value, V):
        return f"{value.type_name} of {value.dtype.value}"
    if isinstance(value, Lit):
        return type(value.value).__name__
    if isinstance(value, tuple):
        return f"a tuple of {len(value)} values"
    if isinstance(value, SeriesValue):
        return f"the {value.annotation} {value.param.name!r}"
    if hasattr(value, "description"):  # a hawk func (hawk.inline.FuncRef), a table
        return value.description
    return "a function" if isinstance(value, Ref) and value.kind == "function" else "a module"


# -- names the body may use ----------------------------------------------------------------------

_MATH_BY_OBJECT = {getattr(math, name): name for name in MATH_FUNCTIONS}
_HELPERS = {
    hawk_annotations.vec2: "vec2", hawk_annotations.Vec2: "vec2",
    hawk_annotations.vec3: "vec3", hawk_annotations.Vec3: "vec3",
    hawk_annotations.vec4: "vec4", hawk_annotations.Vec4: "vec4",
    hawk_annotations.vector: "vector",
    hawk_annotations.dot: "dot", hawk_annotations.length: "length",
    hawk_annotations.cross: "cross", hawk_annotations.normalize: "normalize",
    hawk_annotations.maximum: "maximum", hawk_annotations.minimum: "minimum",
    hawk_annotations.total: "total", hawk_annotations.width: "width",
    **{getattr(matrices, name): name for name in matrices.__all__},
    derivatives.jvp: "jvp", derivatives.jacobian: "jacobian",
    builtins.min: "min", builtins.max: "max", builtins.abs: "abs", builtins.float: "float",
}  # fmt: skip
_MATH_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau, "inf": math.inf}
_HAWK_FUNCTIONS = {"vec2", "vec3", "vec4", "vector", "dot", "length", "cross", "normalize",
                   "maximum", "minimum", "total", "width", *matrices.__all__,
                   *derivatives.FUNCTIONS}  # fmt: skip
_HAWK_VECTOR_TYPES = {"Vec2": "vec2", "Vec3": "vec3", "Vec4": "vec4"}  # constructors too
_VECTOR_HELPERS = {"vec2", "vec3", "vec4", "vector", "dot", "length", "cross", "normalize"}
_ELEMENTWISE_HELPERS = {"maximum", "minimum", "total", "width"}
# random numbers and counters (hawk.draws): hawk.uniform(), from hawk import normal, ...
_HELPERS.update(draws.OBJECTS)
_HAWK_FUNCTIONS |= set(draws.FUNCTIONS)
# tables (hawk.tables): hawk.interp(x, xp, fp), hawk.interp_grid(table, point, lo, hi)
_HELPERS.update(tables.OBJECTS)
_HAWK_FUNCTIONS |= set(tables.FUNCTIONS)
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

_CONSTRUCT_NAMES = {
    ast.For: "a `for` loop", ast.While: "a `while` loop", ast.Return: "`return`",
    ast.FunctionDef: "a nested function", ast.Lambda: "`lambda`", ast.With: "`with`",
    ast.Try: "`try`", ast.Raise: "`raise`", ast.Assert: "`assert`", ast.Import: "`import`",
    ast.ImportFrom: "`import`", ast.Global: "`global`", ast.Nonlocal: "`nonlocal`",
    ast.Delete: "`del`", ast.ListComp: "a list comprehension", ast.GeneratorExp: "a generator",
    ast.List: "a list", ast.Dict: "a dict", ast.Set: "a set", ast.JoinedStr: "an f-string",
    ast.Await: "`await`", ast.Yield: "`yield`", ast.NamedExpr: "`:=`", ast.Starred: "`*`",
    ast.AnnAssign: "an annotated assignment", ast.Match: "`match`", ast.Break: "`break`",
    ast.Continue: "`continue`", ast.Slice: "a slice", ast.ClassDef: "a class",
}  # fmt: skip


def construct_name(node: ast.AST) -> str:
    return _CONSTRUCT_NAMES.get(type(node), f"`{type(node).__name__}`")


# -- the walk ------------------------------------------------------------------------------------


class Lowering:
    """One lowering of one kernel body under one dtype signature."""

    def __init__(self, source: KernelSource, params: tuple[Parameter, ...], options):
        self.src = source
        self.params = {p.name: p for p in params}
        self.param_list = params
        self.options = options
        self.ops: list[Op] = []
        self.row_stores: list[RowStore] = []
        # the conditions of the `if`s around the statement being lowered, with the branch
        # taken (True: the body, False: the else), for the guard of a Series write there
        self.guards: list[tuple[S, bool]] = []
        self._interned: dict[tuple, int] = {}
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

    def error(self, message: str, node: ast.AST | None = None) -> CompileError:
        return self.src.error(message, node or self.node)

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

    # statements

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
        self.node = node
        handler = {
            ast.Assign: self.assign_statement, ast.AugAssign: self.augassign_statement,
            ast.If: self.if_statement, ast.Pass: lambda node: None, ast.Expr: self.expr_statement,
        }.get(type(node))  # fmt: skip
        if handler is None:
            raise self.error(f"{construct_name(node)} is not supported in a hawk kernel", node)
        handler(node)

    def expr_statement(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and node.value.value is Ellipsis:
            return
        raise self.error("an expression statement has no effect in a hawk kernel (nothing may "
                         "be called for its side effects); assign its value to a name", node)

    def assign_statement(self, node: ast.Assign) -> None:
        for target in node.targets:
            if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                if len(target.elts) != len(node.value.elts):
                    raise self.error(f"cannot unpack {len(node.value.elts)} values into "
                                     f"{len(target.elts)} names", node)
        values = self.tuple_or_expr(node.value)
        for target in node.targets:
            self.assign(target, values)

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

    def assign(self, target: ast.expr, value) -> None:
        if isinstance(target, ast.Tuple):
            if isinstance(value, V):  # a vector's components, a matrix's rows
                value = tuple(V(tuple(r)) for r in value.rows) if value.is_matrix \
                    else value.comps
            if not isinstance(value, tuple):
                raise self.error(f"cannot unpack {describe(value)} into {len(target.elts)} names",
                                 target)
            if len(value) != len(target.elts):
                raise self.error(f"cannot unpack {len(value)} values into {len(target.elts)} "
                                 "names", target)
            for t, v in zip(target.elts, value, strict=True):
                self.assign(t, v)
            return
        if isinstance(value, tuple):
            raise self.error("a tuple can only be unpacked into as many names "
                             "(e.g. `a, b = b, a`)", target)
        if isinstance(target, ast.Name):
            self.bind(target.id, value, target)
        elif isinstance(target, ast.Attribute | ast.Subscript):
            base = target.value
            if not isinstance(base, ast.Name):
                raise self.error("only a component of a named vector can be assigned", target)
            series = self.env.get(base.id)
            if isinstance(series, TableValue):
                raise self.error(f"cannot assign to an element of {base.id!r}: it is "
                                 f"{series.description}, read-only and shared by every "
                                 "sample", target)
            if isinstance(series, SeriesValue):
                if isinstance(target, ast.Attribute):
                    raise self.error(f"{series.param.name!r} is a {series.annotation}: write a "
                                     f"whole row, `{series.param.name}[row] = value`", target)
                self.row_store(series.param, target, value)
                return
            vector = self.load_name(base)
            if not isinstance(vector, V):
                raise self.error(f"{base.id!r} is {describe(vector)}, not a vector: it has no "
                                 "components to assign", target)
            comps = list(vector.comps)
            if vector.is_matrix and self.is_row_index(target):  # m[i] = row
                i, columns = self.row_index(target, vector), vector.shape[1]
                if not (isinstance(value, V) and value.dims == (columns,)):
                    raise self.error(f"a row of a {vector.type_name} is a {type_name(columns)}, "
                                     f"not {describe(value)}", target)
                comps[i * columns:(i + 1) * columns] = [self.cast(c, vector.dtype)
                                                        for c in value.comps]
            else:
                k = self.component_index(target, vector)
                comps[k] = self.cast(self.scalar(value, target), vector.dtype)
            self.bind(base.id, vector.like(comps), target)
        else:
            raise self.error(f"cannot assign to {construct_name(target)}", target)

    def bind(self, name: str, value, node: ast.AST) -> None:
        param = self.params.get(name)
        if param is not None:
            value = self.check_store(param, value, node)
        self.env[name] = value

    def check_store(self, param: Parameter, value, node: ast.AST):
        """A value that may be written back to ``param``: the right shape and a compatible type."""
        if param.role is Role.SERIES:
            series = SeriesValue(param)
            raise self.error(f"cannot assign to {param.name!r}: it is a {series.annotation}, "
                             f"written a row at a time: `{param.name}[row] = value`", node)
        if not param.role.written:
            wrapped = type_name(param.width, param.columns)
            hint = ("declare it Mutable[" + wrapped + "] to update it"
                    if param.role is Role.SCALAR else "a Param is one read-only value for all"
                    if param.role is Role.PARAM else "a table is read-only and shared by "
                    f"every sample; read it as {param.name}[...]")
            raise self.error(f"cannot assign to read-only parameter {param.name!r} "
                             f"({param.role.value}); {hint}", node)
        if isinstance(value, Ref):
            raise self.error(f"cannot assign {describe(value)} to {param.name!r}", node)
        if param.role is Role.TERMINATED:
            if isinstance(value, V) or self.dtype_of(value) is not DType.BOOL:
                raise self.error(f"{param.name!r} (Terminated) must be assigned a bool, e.g. "
                                 f"`{param.name} = t >= t_end`; got {describe(value)}", node)
            return self.cast(value, DType.BOOL)
        return self.storable(param, value, node)

    def storable(self, param: Parameter, value, node: ast.AST):
        """``value`` as a Mutable, Out or Series value of ``param`` is stored: of its width,
        and of a type that converts to its dtype (no bool, no float into an integer)."""
        if isinstance(value, Ref | SeriesValue | TableValue):
            raise self.error(f"cannot store {describe(value)} into {param.name!r}", node)
        dims = value.dims if isinstance(value, V) else ()
        if param.dims != dims:
            kind = type_name(param.width, param.columns)
            want = f"a {kind}" if param.is_vector else "a scalar"
            raise self.error(f"{param.name!r} is {param.role.value}[{kind}] and must be assigned "
                             f"{want}, not {describe(value)}", node)
        dtype = self.dtype_of(value)
        if dtype is DType.BOOL or (dtype.is_float and not param.dtype.is_float):
            raise self.error(f"cannot store {describe(value)} into {param.name!r} "
                             f"({param.dtype.value})", node)
        if isinstance(value, Lit):
            return self.cast(value, param.dtype)
        return value

    def row_store(self, param: Parameter, target: ast.Subscript, value) -> None:
        """``s[row] = value``: a ``RowStore`` per component, guarded by the path's condition."""
        if isinstance(value, tuple):
            raise self.error("a tuple can only be unpacked into as many names "
                             "(e.g. `a, b = b, a`)", target)
        annotation = SeriesValue(param).annotation
        if isinstance(target.slice, ast.Slice | ast.Tuple):
            raise self.error(f"a row of {param.name!r} ({annotation}) is written at one integer "
                             f"index, `{param.name}[row] = value`, not "
                             f"`{ast.unparse(target)}`", target)
        row = self.expr(target.slice)
        if not isinstance(row, S | Lit) or not self.dtype_of(row).is_integer:
            raise self.error(f"the row written of {param.name!r} ({annotation}) must be an "
                             f"integer (e.g. `hawk.step() // 4`), not {describe(row)}",
                             target.slice)
        row = self.cast(row, DType.INT64)
        value = self.storable(param, value, target)
        guard = self.path_guard()
        comps = value.comps if isinstance(value, V) else (value,)
        for k, c in enumerate(comps):
            self.row_stores.append(RowStore(
                param.name, k if param.is_vector else None, row.id,
                self.cast(c, param.dtype).id, None if guard is None else guard.id))

    def path_guard(self) -> S | None:
        """The condition under which the statement being lowered runs (the ``and`` of the
        enclosing ``if``s' conditions, negated in an ``else``), or None outside every ``if``.
        Made only where a Series is written, so other kernels' IR is as before."""
        guard = None
        for condition, taken in self.guards:
            term = condition if taken else self.emit(OpKind.NOT, DType.BOOL, (condition.id,))
            guard = term if guard is None else self.emit(OpKind.AND, DType.BOOL,
                                                         (guard.id, term.id))
        return guard

    def augassign_statement(self, node: ast.AugAssign) -> None:
        load = ast.copy_location(
            type(node.target)(**{**vars(node.target), "ctx": ast.Load()}), node.target)
        value = self.binop(node.op, self.expr(load), self.expr(node.value), node)
        self.assign(node.target, value)

    def if_statement(self, node: ast.If) -> None:
        condition = self.condition(node.test, "if")
        known = self.decided(condition)
        if known is not None:  # decided when compiling: only the branch taken is lowered
            for stmt in node.body if known else node.orelse:
                self.statement(stmt)
            return
        before = dict(self.env)
        self.guards.append((condition, True))
        for stmt in node.body:
            self.statement(stmt)
        then_env, self.env = self.env, dict(before)
        self.guards[-1] = (condition, False)
        for stmt in node.orelse:
            self.statement(stmt)
        self.guards.pop()
        else_env = self.env
        self.node = node
        merged = {}
        # In the order the names were first bound, never a set's: the selects' order is the
        # program's, and so its digest (the cache key), the same in every process.
        for name in dict.fromkeys([*then_env, *else_env]):
            a, b = then_env.get(name), else_env.get(name)
            if a is b:
                merged[name] = a
            elif a is None or b is None or isinstance(a, Undefined) or isinstance(b, Undefined):
                merged[name] = Undefined(f"{name!r} is assigned on only one branch of the `if` at "
                                         f"line {node.lineno}; assign it on both, or before the if")
            else:
                merged[name] = self.select(condition, a, b, f"{name!r}")
        self.env = merged

    # expressions

    def expr(self, node: ast.expr):
        saved, self.node = self.node, node
        handler = {
            ast.Constant: self.constant, ast.Name: self.load_name, ast.BinOp: self.binop_expr,
            ast.UnaryOp: self.unaryop, ast.BoolOp: self.boolop, ast.Compare: self.compare,
            ast.IfExp: self.ifexp, ast.Call: self.call, ast.Attribute: self.attribute,
            ast.Subscript: self.subscript,
        }.get(type(node))  # fmt: skip
        if handler is None:
            raise self.error(f"{construct_name(node)} is not supported in a hawk kernel", node)
        value = handler(node)
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
        builtin = getattr(builtins, node.id, None)
        if builtin in _HELPERS:
            return Ref("function", _HELPERS[builtin])
        raise self.error(f"unknown name {node.id!r}: not a parameter, a local assigned "
                         "earlier, or a global number, math function or hawk helper", node)

    def global_value(self, name: str, value, node: ast.AST):
        if isinstance(value, types.ModuleType):
            if value is math:
                return Ref("module", "math")
            if value.__name__ == "hawk":
                return Ref("module", "hawk")
        if isinstance(value, bool | int | float | np.bool_ | np.integer | np.floating):
            return Lit(value.item() if isinstance(value, np.generic) else value)
        if isinstance(value, tuple):  # a table of constants (a method's coefficients)
            return tuple(self.global_value(f"{name}[{i}]", item, node)
                         for i, item in enumerate(value))
        try:
            if value in _MATH_BY_OBJECT:
                return Ref("function", _MATH_BY_OBJECT[value])
            if value in _HELPERS:
                return Ref("function", _HELPERS[value])
        except TypeError:  # unhashable
            pass
        raise self.error(f"global {name!r} is a {type(value).__name__}, which a hawk kernel "
                         "cannot use (only numbers, tuples of them, `math`, math functions and "
                         "hawk helpers)",
                         node)

    def attribute(self, node: ast.Attribute):
        base = self.expr(node.value)
        if isinstance(base, Ref) and base.kind == "module":
            if base.name == "math" and node.attr in MATH_FUNCTIONS:
                return Ref("function", node.attr)
            if base.name == "math" and node.attr in _MATH_CONSTANTS:
                return Lit(_MATH_CONSTANTS[node.attr])
            if base.name == "hawk" and node.attr in _HAWK_FUNCTIONS:
                return Ref("function", node.attr)
            if base.name == "hawk" and node.attr in _HAWK_VECTOR_TYPES:
                return Ref("function", _HAWK_VECTOR_TYPES[node.attr])
            raise self.error(f"{base.name}.{node.attr} is not supported in a hawk kernel", node)
        if isinstance(base, V) and base.is_matrix and node.attr == "T":
            return matrix_calls.matrix_value(linalg.transpose(base.rows))
        if isinstance(base, V):
            return base.comps[self.component_index(node, base)]
        raise self.error(f"attribute {node.attr!r} of {describe(base)} is not supported "
                         "(only .x, .y, .z, .w of a vector, .T of a matrix)", node)

    def subscript(self, node: ast.Subscript):
        base = self.expr(node.value)
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
        if not (isinstance(func, Ref) and func.kind == "function"):
            raise self.error(f"calling {ast.unparse(node.func)!r} is not supported: only math "
                             "functions, min/max/abs/float, hawk's vector helpers and @hawk.func "
                             "functions", node)
        if node.keywords:
            raise self.error(f"{func.name}() takes no keyword arguments in a hawk kernel", node)
        name = func.name
        if name in derivatives.FUNCTIONS:  # hawk.jvp(f, x, dx, ...), hawk.jacobian(f, x, ...)
            return derivatives.lower_call(self, name, self.call_arguments(node.args), node)
        if name in matrix_calls.ARITY:  # hawk.matrix((a, b), (c, d)) takes tuple rows
            return matrix_calls.lower_call(self, name, self.call_arguments(node.args), node)
        args = [self.expr(a) for a in node.args]
        if name in draws.FUNCTIONS:
            return draws.lower_call(self, name, args, node)
        if name in tables.FUNCTIONS:
            return tables.lower_call(self, name, args, node)
        if name in MATH_FUNCTIONS:
            if len(args) != MATH_FUNCTIONS[name]:
                raise self.error(f"math.{name}() takes {MATH_FUNCTIONS[name]} argument(s), "
                                 f"got {len(args)}", node)
            return self.math_call(name, [self.scalar(a, node) for a in args], node)
        if name in ("min", "max"):
            if len(args) < 2:
                raise self.error(f"{name}() needs at least two arguments in a hawk kernel", node)
            kind = OpKind.MIN if name == "min" else OpKind.MAX
            result = self.scalar(args[0], node)
            for arg in args[1:]:
                result = self.minmax(kind, result, self.scalar(arg, node), f"{name}()", node)
            return result
        if name in _VECTOR_HELPERS:
            return self.vector_call(name, args, node)
        if name in _ELEMENTWISE_HELPERS:
            return self.elementwise_call(name, args, node)
        if len(args) != 1:
            raise self.error(f"{name}() takes 1 argument(s), got {len(args)}", node)
        if name == "abs":
            if isinstance(args[0], V):
                return args[0].like(self.call_abs(c, node) for c in args[0].comps)
            return self.call_abs(args[0], node)
        value = self.number(self.scalar(args[0], node), "float()", node)  # float()
        return Lit(float(value.value)) if isinstance(value, Lit) else self.cast(
            value, value.dtype if value.dtype.is_float else DType.FLOAT64)

    def call_abs(self, value, node: ast.AST):
        value = self.number(self.scalar(value, node), "abs()", node)
        if isinstance(value, Lit):
            return Lit(abs(value.value))
        return self.emit(OpKind.ABS, value.dtype, (value.id,))

    def elementwise_call(self, name: str, args: list, node: ast.AST):
        """``hawk.maximum``/``minimum`` (component by component, a number broadcast),
        ``hawk.total`` (the components summed left to right) and ``hawk.width`` (a
        compile-time int): what lets one func work on a scalar and on a vector state."""
        expected = 2 if name in ("maximum", "minimum") else 1
        if len(args) != expected:
            raise self.error(f"hawk.{name}() takes {expected} argument(s), got {len(args)}",
                             node)
        for arg in args:
            if not isinstance(arg, V):
                self.number(self.scalar(arg, node), f"hawk.{name}()", node)
        if name == "width":
            if isinstance(args[0], V) and args[0].is_matrix:
                raise self.error(f"hawk.width() takes a number or a vector, not "
                                 f"{describe(args[0])}", node)
            return Lit(args[0].width if isinstance(args[0], V) else 1)
        if name == "total":
            if not isinstance(args[0], V):
                return args[0]
            result = args[0].comps[0]
            for c in args[0].comps[1:]:
                result = self.arith(OpKind.ADD, result, c, "+", operator.add, node)
            return result
        a, b = args
        shapes = {x.dims for x in args if isinstance(x, V)}
        if len(shapes) > 1:
            raise self.error(f"hawk.{name}() needs vectors of one width, got {describe(a)} and "
                             f"{describe(b)}", node)
        kind, symbol = (OpKind.MAX if name == "maximum" else OpKind.MIN), f"hawk.{name}()"
        if not shapes:
            return self.minmax(kind, a, b, symbol, node)
        shaped = a if isinstance(a, V) else b
        a_comps = a.comps if isinstance(a, V) else (a,) * shaped.width
        b_comps = b.comps if isinstance(b, V) else (b,) * shaped.width
        return shaped.like(self.minmax(kind, x, y, symbol, node)
                           for x, y in zip(a_comps, b_comps, strict=True))

    def minmax(self, kind: OpKind, a, b, symbol: str, node: ast.AST):
        """``MAX``: ``b if b > a else a``, or ``MIN``: ``b if b < a else a``, of two numbers
        (``max``/``min`` and ``hawk.maximum``/``minimum``, named ``symbol`` in errors)."""
        dtype = self.common_type(a, b, symbol, node)
        return self.emit(kind, dtype, (self.cast(a, dtype).id, self.cast(b, dtype).id))

    def vector_call(self, name: str, args: list, node: ast.AST):
        """``hawk.vec2/vec3/vec4/vector(...)``, ``dot``, ``length``, ``cross``,
        ``normalize``: each lowered to the scalar ops of its written-out formula, in the order
        the docs give."""
        if name == "vector":
            if not 2 <= len(args) <= MAX_WIDTH:
                raise self.error(f"vector() takes 2 to {MAX_WIDTH} components, got "
                                 f"{len(args)}", node)
        elif len(args) != (expected := {"vec2": 2, "vec3": 3, "vec4": 4, "dot": 2, "length": 1,
                                        "cross": 2, "normalize": 1}[name]):
            raise self.error(f"{name}() takes {expected} argument(s), got {len(args)}", node)
        if name.startswith("vec"):  # vec2, vec3, vec4, vector
            comps = [self.number(self.scalar(a, node), f"{name}()", node) for a in args]
            dtype = self.vector_dtype(comps)
            return V(tuple(self.cast(c, dtype) for c in comps))
        for arg in args:
            if not isinstance(arg, V) or arg.is_matrix:
                raise self.error(f"hawk.{name}() takes vector arguments (Vec2, Vec3, Vec4 "
                                 f"or Vector[K]), not {describe(arg)}", node)
            if name == "cross" and arg.width != 3:
                raise self.error(f"hawk.cross() takes two Vec3 arguments, not {describe(arg)}",
                                 node)
        a, b = args[0], args[-1]
        if a.width != b.width:
            raise self.error(f"hawk.{name}() needs vectors of one width, got {describe(a)} and "
                             f"{describe(b)}", node)

        def mul(x, y):
            return self.arith(OpKind.MUL, x, y, "*", operator.mul, node)

        def sub(x, y):
            return self.arith(OpKind.SUB, x, y, "-", operator.sub, node)

        if name == "cross":
            (ax, ay, az), (bx, by, bz) = a.comps, b.comps
            return V((sub(mul(ay, bz), mul(az, by)), sub(mul(az, bx), mul(ax, bz)),
                      sub(mul(ax, by), mul(ay, bx))))
        total = None
        for x, y in zip(a.comps, b.comps, strict=True):
            term = mul(x, y)
            total = term if total is None else self.arith(OpKind.ADD, total, term, "+",
                                                          operator.add, node)
        if name == "dot":
            return total
        norm = self.math_call("sqrt", [total], node)
        if name == "length":
            return norm
        return V(tuple(self.arith(OpKind.DIV, c, norm, "/", operator.truediv, node)
                       for c in a.comps))  # normalize

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


def lower(source: KernelSource, params: tuple[Parameter, ...], options=()) -> Program:
    """The hawk IR of ``source``'s body for parameters of the given dtypes, as lowered: it may
    hold dead ops; ``hawk.passes.optimize`` cleans it up (``Kernel.specialize`` does both)."""
    from .inline import InliningLowering  # calls of hawk funcs and loops, built on this walk

    return InliningLowering(source, params, options).run()
