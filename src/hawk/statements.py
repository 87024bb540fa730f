"""The statements of a kernel or func body, lowered: assignments (to locals, parameters,
vector components, matrix rows and ``Series`` rows), augmented assignments, ``if``/``else``
(both branches lowered, the names they bind merged by ``select``s, or only the branch a
compile-time condition takes), ``for`` loops over a constant ``range`` (unrolled), ``pass``
and ``...``.

``STATEMENTS`` maps each AST statement type to its lowering, built once; any other statement
is a ``CompileError`` that names it. Each function takes the lowering (a ``frontend.Lowering``)
and calls back through its methods for expressions and typing; none imports the walk.
"""

from __future__ import annotations

import ast
import builtins

from .inline import MAX_UNROLL
from .ir import DType, OpKind, Parameter, Role, RowStore, type_name
from .source import construct_name
from .tables import TableValue
from .values import Lit, Ref, S, SeriesValue, Undefined, V, describe

__all__ = ["STATEMENTS", "lower_statement", "assign", "bind"]


def lower_statement(lw, node: ast.stmt) -> None:
    lw.node = node
    handler = STATEMENTS.get(type(node))
    if handler is None:
        raise lw.error(f"{construct_name(node)} is not supported in a hawk kernel", node)
    handler(lw, node)


def _return_statement(lw, node: ast.Return) -> None:
    """A ``return`` that is not a func body's own (``func_calls`` lowers those)."""
    if lw.frames:
        raise lw.error("`return` inside a `for` loop is not supported in a hawk func "
                       "(loops are unrolled into straight-line code): assign the value "
                       "to a name in the loop and return it after the loop", node)
    raise lw.error(f"{construct_name(node)} is not supported in a hawk kernel", node)


def _expr_statement(lw, node: ast.Expr) -> None:
    if isinstance(node.value, ast.Constant) and node.value.value is Ellipsis:
        return
    raise lw.error("an expression statement has no effect in a hawk kernel (nothing may "
                   "be called for its side effects); assign its value to a name", node)


def _assign_statement(lw, node: ast.Assign) -> None:
    for target in node.targets:
        if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
            if len(target.elts) != len(node.value.elts):
                raise lw.error(f"cannot unpack {len(node.value.elts)} values into "
                               f"{len(target.elts)} names", node)
    values = lw.tuple_or_expr(node.value)
    for target in node.targets:
        assign(lw, target, values)


def in_place(lw, name: str, node: ast.AST, how: str) -> None:
    """Refuse changing the caller's vector ``name`` in place inside a func."""
    frame = lw.frames[-1] if lw.frames else None
    if frame is not None and frame.caller_owns(lw.env.get(name)):
        raise lw.error(
            f"the hawk func {frame.func.name!r} changes its argument {name!r} in place "
            f"({how}): a func has no side effects (in Python this would change the "
            f"caller's array; in hawk the caller's value never changes), so build a new "
            f"value and return it (e.g. `{name} = {name} + ...`, or hawk.vec3(...))", node)


def assign(lw, target: ast.expr, value) -> None:
    """``target = value``: a name bound (a tuple too), unpacked into names, or a component,
    matrix row or Series row written."""
    if isinstance(target, ast.Attribute | ast.Subscript) and isinstance(target.value, ast.Name):
        in_place(lw, target.value.id, target, f"`{ast.unparse(target)} = ...`")
        if lw.frames and target.value.id not in lw.env:
            name, func = target.value.id, lw.frames[-1].func.name
            raise lw.error(
                f"the hawk func {func!r} cannot write `{ast.unparse(target)}`: a func has "
                f"no side effects and no Series parameter, so it cannot write a Series row; "
                f"return the value and write it in the kernel (`{name}[row] = "
                f"{func}(...)`)", target)
    if isinstance(target, ast.Name) and isinstance(value, tuple):
        bind(lw, target.id, value, target)  # a tuple is a value too: `state = (x, v)`
        return
    if isinstance(target, ast.Tuple):
        if isinstance(value, V):  # a vector's components, a matrix's rows
            value = tuple(V(tuple(r)) for r in value.rows) if value.is_matrix else value.comps
        if not isinstance(value, tuple):
            raise lw.error(f"cannot unpack {describe(value)} into {len(target.elts)} names",
                           target)
        if len(value) != len(target.elts):
            raise lw.error(f"cannot unpack {len(value)} values into {len(target.elts)} "
                           "names", target)
        for t, v in zip(target.elts, value, strict=True):
            assign(lw, t, v)
        return
    if isinstance(value, tuple):
        raise lw.error("a tuple can only be unpacked into as many names "
                       "(e.g. `a, b = b, a`)", target)
    if isinstance(target, ast.Name):
        bind(lw, target.id, value, target)
    elif isinstance(target, ast.Attribute | ast.Subscript):
        _assign_element(lw, target, value)
    else:
        raise lw.error(f"cannot assign to {construct_name(target)}", target)


def _assign_element(lw, target: ast.Attribute | ast.Subscript, value) -> None:
    """``v.x = value``, ``v[i] = value``, ``m[i, j] = value``, ``m[i] = row``,
    ``s[row] = value``."""
    base = target.value
    if not isinstance(base, ast.Name):
        raise lw.error("only a component of a named vector can be assigned", target)
    series = lw.env.get(base.id)
    if isinstance(series, TableValue):
        raise lw.error(f"cannot assign to an element of {base.id!r}: it is "
                       f"{series.description}, read-only and shared by every "
                       "sample", target)
    if isinstance(series, SeriesValue):
        if isinstance(target, ast.Attribute):
            raise lw.error(f"{series.param.name!r} is a {series.annotation}: write a "
                           f"whole row, `{series.param.name}[row] = value`", target)
        _row_store(lw, series.param, target, value)
        return
    vector = lw.load_name(base)
    if not isinstance(vector, V):
        raise lw.error(f"{base.id!r} is {describe(vector)}, not a vector: it has no "
                       "components to assign", target)
    comps = list(vector.comps)
    if vector.is_matrix and lw.is_row_index(target):  # m[i] = row
        i, columns = lw.row_index(target, vector), vector.shape[1]
        if not (isinstance(value, V) and value.dims == (columns,)):
            raise lw.error(f"a row of a {vector.type_name} is a {type_name(columns)}, "
                           f"not {describe(value)}", target)
        comps[i * columns:(i + 1) * columns] = [lw.cast(c, vector.dtype)
                                                for c in value.comps]
    else:
        k = lw.component_index(target, vector)
        comps[k] = lw.cast(lw.scalar(value, target), vector.dtype)
    bind(lw, base.id, vector.like(comps), target)


def bind(lw, name: str, value, node: ast.AST) -> None:
    """``name`` bound to ``value``; a kernel parameter's value checked to be storable."""
    if lw.frames:  # a func's own scope: no kernel parameters to store to
        lw.env[name] = value
        return
    if isinstance(value, tuple) and name in lw.params:
        raise lw.error(f"cannot assign {describe(value)} to parameter {name!r}; unpack it "
                       "first (`a, b = ...`)", node)
    param = lw.params.get(name)
    if param is not None:
        value = _check_store(lw, param, value, node)
    lw.env[name] = value


def _check_store(lw, param: Parameter, value, node: ast.AST):
    """A value that may be written back to ``param``: the right shape and a compatible type."""
    if param.role is Role.SERIES:
        series = SeriesValue(param)
        raise lw.error(f"cannot assign to {param.name!r}: it is a {series.annotation}, "
                       f"written a row at a time: `{param.name}[row] = value`", node)
    if not param.role.written:
        wrapped = type_name(param.width, param.columns)
        hint = ("declare it Mutable[" + wrapped + "] to update it"
                if param.role is Role.SCALAR else "a Param is one read-only value for all"
                if param.role is Role.PARAM else "a table is read-only and shared by "
                f"every sample; read it as {param.name}[...]")
        raise lw.error(f"cannot assign to read-only parameter {param.name!r} "
                       f"({param.role.value}); {hint}", node)
    if isinstance(value, Ref):
        raise lw.error(f"cannot assign {describe(value)} to {param.name!r}", node)
    if param.role is Role.TERMINATED:
        if isinstance(value, V) or lw.dtype_of(value) is not DType.BOOL:
            raise lw.error(f"{param.name!r} (Terminated) must be assigned a bool, e.g. "
                           f"`{param.name} = t >= t_end`; got {describe(value)}", node)
        return lw.cast(value, DType.BOOL)
    return _storable(lw, param, value, node)


def _storable(lw, param: Parameter, value, node: ast.AST):
    """``value`` as a Mutable, Out or Series value of ``param`` is stored: of its width,
    and of a type that converts to its dtype (no bool, no float into an integer)."""
    if isinstance(value, Ref | SeriesValue | TableValue):
        raise lw.error(f"cannot store {describe(value)} into {param.name!r}", node)
    dims = value.dims if isinstance(value, V) else ()
    if param.dims != dims:
        kind = type_name(param.width, param.columns)
        want = f"a {kind}" if param.is_vector else "a scalar"
        raise lw.error(f"{param.name!r} is {param.role.value}[{kind}] and must be assigned "
                       f"{want}, not {describe(value)}", node)
    dtype = lw.dtype_of(value)
    if dtype is DType.BOOL or (dtype.is_float and not param.dtype.is_float):
        raise lw.error(f"cannot store {describe(value)} into {param.name!r} "
                       f"({param.dtype.value})", node)
    if isinstance(value, Lit):
        return lw.cast(value, param.dtype)
    return value


def _row_store(lw, param: Parameter, target: ast.Subscript, value) -> None:
    """``s[row] = value``: a ``RowStore`` per component, guarded by the path's condition."""
    if isinstance(value, tuple):
        raise lw.error("a tuple can only be unpacked into as many names "
                       "(e.g. `a, b = b, a`)", target)
    annotation = SeriesValue(param).annotation
    if isinstance(target.slice, ast.Slice | ast.Tuple):
        raise lw.error(f"a row of {param.name!r} ({annotation}) is written at one integer "
                       f"index, `{param.name}[row] = value`, not "
                       f"`{ast.unparse(target)}`", target)
    row = lw.expr(target.slice)
    if not isinstance(row, S | Lit) or not lw.dtype_of(row).is_integer:
        raise lw.error(f"the row written of {param.name!r} ({annotation}) must be an "
                       f"integer (e.g. `hawk.step() // 4`), not {describe(row)}",
                       target.slice)
    row = lw.cast(row, DType.INT64)
    value = _storable(lw, param, value, target)
    guard = _path_guard(lw)
    comps = value.comps if isinstance(value, V) else (value,)
    for k, c in enumerate(comps):
        lw.row_stores.append(RowStore(
            param.name, k if param.is_vector else None, row.id,
            lw.cast(c, param.dtype).id, None if guard is None else guard.id))


def _path_guard(lw) -> S | None:
    """The condition under which the statement being lowered runs (the ``and`` of the
    enclosing ``if``s' conditions, negated in an ``else``), or None outside every ``if``.
    Made only where a Series is written, so other kernels' IR is as before."""
    guard = None
    for condition, taken in lw.guards:
        term = condition if taken else lw.emit(OpKind.NOT, DType.BOOL, (condition.id,))
        guard = term if guard is None else lw.emit(OpKind.AND, DType.BOOL, (guard.id, term.id))
    return guard


def _augassign_statement(lw, node: ast.AugAssign) -> None:
    if isinstance(node.target, ast.Name):
        in_place(lw, node.target.id, node, f"`{ast.unparse(node)}`")
    load = ast.copy_location(
        type(node.target)(**{**vars(node.target), "ctx": ast.Load()}), node.target)
    value = lw.binop(node.op, lw.expr(load), lw.expr(node.value), node)
    assign(lw, node.target, value)


def _if_statement(lw, node: ast.If) -> None:
    condition = lw.condition(node.test, "if")
    known = lw.decided(condition)
    if known is not None:  # decided when compiling: only the branch taken is lowered
        for stmt in node.body if known else node.orelse:
            lw.statement(stmt)
        return
    before = dict(lw.env)
    lw.guards.append((condition, True))
    for stmt in node.body:
        lw.statement(stmt)
    then_env, lw.env = lw.env, dict(before)
    lw.guards[-1] = (condition, False)
    for stmt in node.orelse:
        lw.statement(stmt)
    lw.guards.pop()
    else_env = lw.env
    lw.node = node
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
            merged[name] = lw.select(condition, a, b, f"{name!r}")
    lw.env = merged


def _for_statement(lw, node: ast.For) -> None:
    """``for i in range(...)``: the body lowered once per iteration, ``i`` a constant."""
    if node.orelse:
        raise lw.error("`for ... else` is not supported in a hawk kernel", node)
    if not isinstance(node.target, ast.Name):
        raise lw.error("a hawk loop has one name as its variable (`for i in range(K)`)",
                       node.target)
    iterator = node.iter
    is_range = (isinstance(iterator, ast.Call) and isinstance(iterator.func, ast.Name)
                and iterator.func.id == "range" and iterator.func.id not in lw.env
                and lw.src.names.get("range", builtins.range) is builtins.range)
    if not is_range:
        raise lw.error("a hawk loop runs over a constant `range(...)` (it is unrolled at "
                       f"compile time), not over {ast.unparse(iterator)!r}", iterator)
    if iterator.keywords or not 1 <= len(iterator.args) <= 3:
        raise lw.error("range() takes one to three positional arguments", iterator)
    bounds = []
    for arg in iterator.args:
        value = lw.expr(arg)
        if not (isinstance(value, Lit) and type(value.value) is int):
            raise lw.error(
                f"range() in a hawk kernel takes compile-time integers (a literal, a global "
                f"int, an enclosing loop's variable or a func argument given one): the loop "
                f"is unrolled; {ast.unparse(arg)!r} is {describe(value)}", arg)
        bounds.append(value.value)
    try:
        iterations = range(*bounds)
    except ValueError as exc:
        raise lw.error(f"range(): {exc}", iterator) from None
    if len(iterations) > MAX_UNROLL:
        raise lw.error(f"this loop would be unrolled into {len(iterations)} copies of its "
                       f"body; hawk unrolls at most {MAX_UNROLL} iterations", iterator)
    for i in iterations:
        bind(lw, node.target.id, Lit(i), node.target)
        for stmt in node.body:
            lw.statement(stmt)
    lw.node = node


#: each statement's lowering, by its AST type
STATEMENTS = {
    ast.Assign: _assign_statement, ast.AugAssign: _augassign_statement, ast.If: _if_statement,
    ast.For: _for_statement, ast.Return: _return_statement, ast.Expr: _expr_statement,
    ast.Pass: lambda lw, node: None,
}  # fmt: skip
