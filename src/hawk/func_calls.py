"""Lowering a call of a ``@hawk.func`` (``hawk.inline`` says what a func is): its body is
lowered in place, in a scope of its own, and the value it returns replaces the call.

The lowering keeps a stack of ``Frame``s, one per func being inlined: an error inside a func
shows the call sites it was reached through, a func that reaches itself again is refused
(recursion cannot be inlined), and a func may not change its caller's vectors in place
(``hawk.statements`` asks ``Frame.caller_owns``). These functions take the lowering (a
``frontend.Lowering``) and call back through its methods; they import nothing of the walk.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass

from .errors import Loc
from .inline import Func
from .values import Lit, Ref, SeriesValue, V, describe

__all__ = ["Frame", "inline_call", "inline_values"]


@dataclass(frozen=True)
class Frame:
    """One func being inlined: which, its vector arguments (by identity: the values a name
    bound to the caller's vector holds), and where it was called."""

    func: Func
    vectors: tuple[V, ...]
    call: Loc

    def caller_owns(self, value) -> bool:
        return any(value is v for v in self.vectors)


def _always_returns(stmts: list[ast.stmt]) -> bool:
    """Whether every path through ``stmts`` ends in a ``return``."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    return (isinstance(last, ast.If) and _always_returns(last.body)
            and _always_returns(last.orelse))


def _flat(values: tuple) -> list:
    """The values in a (nested) tuple."""
    return [x for v in values for x in (_flat(v) if isinstance(v, tuple) else [v])]


def _has_return(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Return) for n in ast.walk(node))


def _body(tree: ast.FunctionDef) -> list[ast.stmt]:
    """A function's statements without its docstring."""
    body = list(tree.body)
    first = body[0]
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        body = body[1:]
    return body


def inline_call(lw, target: Func, node: ast.Call):
    """The value ``target`` returns for this call's arguments, its body lowered in place."""
    for arg in [*node.args, *(k.value for k in node.keywords)]:
        series = lw.env.get(arg.id) if isinstance(arg, ast.Name) else None
        if isinstance(series, SeriesValue):
            name = series.param.name
            raise lw.error(
                f"{name!r} ({series.annotation}) cannot be passed to the hawk func "
                f"{target.name!r}: a func cannot write a Series (it has no Series "
                f"parameter); return the value from {target.name!r} and write it in the "
                f"kernel: `{name}[row] = {target.name}(...)`", arg)
    args = lw.call_arguments(node.args)
    kwargs = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            raise lw.error("`**` arguments are not supported in a hawk kernel", keyword)
        kwargs[keyword.arg] = lw.tuple_or_expr(keyword.value)
    return inline_values(lw, target, args, node, kwargs)


def inline_values(lw, target: Func, args: list, node: ast.AST, kwargs=None):
    """The value ``target`` returns for argument values already lowered (a call's, or
    ``hawk.jvp``'s), its body lowered in place."""
    kwargs = kwargs or {}
    _check_not_recursive(lw, target, node)
    try:
        bound = target.signature.bind(*args, **kwargs)
    except TypeError as exc:
        raise lw.error(f"{target.name}(): {exc}", node,
                       ((f"{target.name!r} is defined here:", target.definition),)) from None
    scope = {}
    for name, parameter in target.signature.parameters.items():
        if name in bound.arguments:
            scope[name] = bound.arguments[name]
        elif parameter.kind is inspect.Parameter.VAR_POSITIONAL:
            scope[name] = ()
        else:  # a default, read like a global of the func's module
            scope[name] = lw.global_value(name, parameter.default, node)
    caller = lw.src.loc(node)
    saved = lw.src, lw.env, lw.node
    vectors = [v for v in scope.values() if isinstance(v, V)]
    vectors += [v for t in scope.values() if isinstance(t, tuple) for v in _flat(t)
                if isinstance(v, V)]
    lw.frames.append(Frame(target, tuple(vectors), caller))
    lw.src, lw.env = target.source, scope
    try:
        result = _block(lw, _body(target.source.tree), target)
    finally:
        lw.frames.pop()
        lw.src, lw.env, lw.node = saved
    _check_result(lw, result, target, node)
    return result


def _check_not_recursive(lw, target: Func, node: ast.AST) -> None:
    if any(frame.func is target for frame in lw.frames):
        chain = " -> ".join([f.func.name for f in lw.frames] + [target.name])
        raise lw.error(f"the hawk func {target.name!r} calls itself ({chain}): funcs are "
                       "inlined, so recursion cannot be compiled; write it as a loop "
                       "over a constant range", node,
                       ((f"{target.name!r} is defined here:", target.definition),))


def _block(lw, stmts: list[ast.stmt], target: Func):
    """Lower a func's statements; the value returned (None if it falls off the end)."""
    for i, stmt in enumerate(stmts):
        lw.node = stmt
        if isinstance(stmt, ast.Return):
            if i + 1 < len(stmts):
                raise lw.error("this code comes after `return` and never runs", stmts[i + 1])
            if stmt.value is None:
                raise lw.error(f"the hawk func {target.name!r} must return a value "
                               "(funcs are called for their value)", stmt)
            return lw.tuple_or_expr(stmt.value)
        if isinstance(stmt, ast.If) and _has_return(stmt):
            rest = stmts[i + 1:]
            condition = lw.condition(stmt.test, "if")
            known = lw.decided(condition)
            if known is not None:  # decided when compiling: only the branch taken
                branch = stmt.body if known else stmt.orelse
                value = _block(lw, branch + ([] if _always_returns(branch) else rest), target)
                if value is None:
                    raise lw.error(f"the hawk func {target.name!r} does not return a "
                                   f"value on the path through the `if` at line "
                                   f"{stmt.lineno}", stmt)
                return value
            before = dict(lw.env)
            paths = []
            for branch in (stmt.body, stmt.orelse):
                lw.env = dict(before)
                value = _block(lw, branch + ([] if _always_returns(branch) else rest), target)
                if value is None:
                    raise lw.error(f"the hawk func {target.name!r} does not return a value "
                                   f"on every path through the `if` at line "
                                   f"{stmt.lineno}", stmt)
                paths.append(value)
            lw.node = stmt
            return lw.select(condition, *paths, f"the value {target.name!r} returns", stmt)
        lw.statement(stmt)
    return None


def _check_result(lw, result, target: Func, node: ast.AST) -> None:
    if result is None:
        raise lw.error(f"the hawk func {target.name!r} returns no value: end it with "
                       "`return ...`", node,
                       ((f"{target.name!r} is defined here:", target.definition),))
    values = list(result) if isinstance(result, tuple) else [result]
    while values:
        value = values.pop()
        if isinstance(value, tuple):
            values += value
        elif isinstance(value, Ref):
            raise lw.error(f"the hawk func {target.name!r} returns {describe(value)}; a "
                           "func returns numbers, vectors or tuples of them", node)
        elif not isinstance(value, V | Lit) and not hasattr(value, "dtype"):
            raise lw.error(f"the hawk func {target.name!r} returns {describe(value)}", node)
