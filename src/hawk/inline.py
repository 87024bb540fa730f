"""Helper functions (``@hawk.func``) and fixed loops (``for i in range(K)``), both resolved while
the kernel is lowered, so neither exists in the IR.

A call of a hawk func is **inlined**: its arguments are evaluated at the call site, its body is
lowered in a fresh scope holding only its parameters (and its own module's globals), and the value
it returns replaces the call. A func is therefore typed per call site, exactly like a kernel per
dtype signature, costs nothing at run time (the ops are the ones the same code written out by hand
gives), and may take another func (or a math function) as an argument: a name bound to a func is
a compile-time value, so ``rk4(rhs, y, dt)`` inlines ``rhs`` four times. A loop over a constant
``range`` is **unrolled**: its body is lowered once per iteration with the loop variable bound to
that iteration's int, a compile-time constant (weak like a literal, usable as a vector index).

Why by abstract interpretation again, rather than a call op and a loop op in the IR: the IR stays a
flat, branch-free list that every backend and the reference executor already understand, and
the per-sample work of a step is straight-line code (what a GPU thread or a SIMD lane runs best).

``InliningLowering`` extends the straight-line walk of ``hawk.frontend`` with these two constructs
and nothing else. The rules it enforces, each a ``CompileError`` that shows the call sites it was
reached through (a traceback's frames) and points at the func's own line:

- a func returns a value on every path: ``return`` at the end of its body, or in both branches of
  an ``if`` (an ``if`` that returns early has the rest of the body as its ``else``);
- a func has no side effects: changing a vector argument in place (``p.x = ...``, ``p[i] += ...``,
  ``p += ...``, also through another name bound to it) is an error, since in Python that would
  change the caller's array and a hawk value never changes under its caller. Rebinding a
  parameter (``y = y + h * f(y)``) is fine: in Python too the caller's value stays as it was;
- no recursion (a func is inlined, so it must not reach itself again);
- a func cannot write a ``Series`` (it has no Series parameter, and passing one is an error):
  it returns the value, and the kernel writes the row;
- only ``@hawk.func`` functions are called: a plain Python function is an error that says where
  it is defined and how to fix it;
- ``range(...)`` takes compile-time ints, and a loop runs at most ``MAX_UNROLL`` iterations;
  ``break``, ``continue``, ``while`` and ``return`` inside a loop remain errors.
"""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
import linecache
import types
from dataclasses import dataclass

from .errors import CompileError, Loc
from .frontend import _HELPERS, Lit, Lowering, Ref, SeriesValue, V, describe
from .source import KernelSource

__all__ = ["Func", "func", "FuncRef", "InliningLowering", "MAX_UNROLL"]

#: the most iterations one ``for`` loop may be unrolled into
MAX_UNROLL = 1024


class FuncSource(KernelSource):
    """A func's parsed definition: like a kernel's, but its parameters carry no annotations
    (a func is typed per call site, from the values it is called with)."""

    WHAT = "func"

    def _read_params(self):
        args = self.tree.args  # ``*rest`` is taken: a tuple of the remaining arguments
        if args.kwarg is not None:
            raise self.error("**kwargs is not supported in a hawk func's parameters",
                             args.kwarg)
        return ()


class Func:
    """A Python function made callable from hawk kernels and other funcs (``@hawk.func``).

    Inside a kernel a call is inlined (see ``hawk.inline``). Called from Python, it is the
    plain function it decorates (so it can be tried on floats or NumPy arrays).

    Attributes:
        name: the function's name.
        func: the decorated Python function.
        signature: its ``inspect.Signature``, by which a call's arguments are bound.

    Args:
        pyfunc: the plain Python function (made by ``@hawk.func``, which checks it).
    """

    def __init__(self, pyfunc):
        self.func = pyfunc
        self.name = pyfunc.__name__
        self.source = FuncSource(pyfunc)
        self.signature = inspect.signature(pyfunc)
        functools.update_wrapper(self, pyfunc)

    def __call__(self, *args, **kwargs):
        return self.func(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<hawk.func {self.name}{self.signature}>"

    @property
    def definition(self) -> Loc:
        """Where the func is defined: its ``def`` line."""
        return self.source.loc(self.source.tree)


def func(pyfunc):
    """Make a Python function callable from hawk kernels (and other funcs), inlined at each
    call. Its parameters take scalars, vectors, tuples and other funcs, typed per call site.

    Args:
        pyfunc: a plain Python function (a ``def`` in a file); anything else, a ``Func``
            included, is a ``TypeError``, and ``*args``/``**kwargs`` are a ``CompileError``.

    Example::

        @hawk.func
        def accel(x, omega):
            return -omega * omega * x

        @hawk.kernel
        def oscillator(omega: Scalar, dt: Param, x: Mutable[Scalar], v: Mutable[Scalar]):
            v += dt * accel(x, omega)
            x += dt * v
    """
    if isinstance(pyfunc, Func) or not inspect.isfunction(pyfunc):
        raise TypeError(f"@hawk.func decorates a plain Python function, got {pyfunc!r}")
    return Func(pyfunc)


@dataclass(frozen=True)
class FuncRef(Ref):
    """A hawk func named in a body: a compile-time value that can be called or passed on."""

    func: Func | None = None

    @property
    def description(self) -> str:
        return f"the hawk func {self.name!r}"


@dataclass(frozen=True)
class ModuleRef(Ref):
    """A user's module named in a body, so that ``helpers.rk4`` or ``constants.G`` resolve."""

    module: types.ModuleType | None = None


@dataclass(frozen=True)
class _Frame:
    """One func being inlined: which, its vector arguments (by identity: the values a name
    bound to the caller's vector holds), and where it was called."""

    func: Func
    vectors: tuple[V, ...]
    call: Loc

    def caller_owns(self, value) -> bool:
        return any(value is v for v in self.vectors)


def _python_definition(value) -> Loc | None:
    """The ``def`` line of a plain Python function (its first line for a lambda), for an error
    to point at; None when its source is not available."""
    code = getattr(value, "__code__", None)
    file = inspect.getsourcefile(value) if code is not None else None
    if file is None:
        return None
    first = code.co_firstlineno
    for line in range(first, first + 20):  # past any decorators
        if linecache.getline(file, line).lstrip().startswith(("def ", "async def ")):
            break
    else:
        line = first
    text = linecache.getline(file, line).rstrip("\n")
    return Loc(file, line, len(text) - len(text.lstrip()), None, text, value.__name__)


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


class InliningLowering(Lowering):
    """``hawk.frontend.Lowering`` with calls of hawk funcs inlined and constant loops unrolled."""

    def __init__(self, source, params, options):
        self.frames: list[_Frame] = []
        super().__init__(source, params, options)

    def error(self, message: str, node: ast.AST | None = None, notes=()) -> CompileError:
        return CompileError(message, self.src.loc(node or self.node),
                            calls=tuple(f.call for f in self.frames), notes=notes)

    # names: funcs, user modules, and plain Python functions (an error that says where)

    def global_value(self, name: str, value, node: ast.AST):
        if isinstance(value, Func):
            return FuncRef("function", value.name, value)
        if isinstance(value, types.ModuleType) and value.__name__ not in ("math", "hawk"):
            return ModuleRef("module", value.__name__, value)
        try:
            known = value in _HELPERS
        except TypeError:  # unhashable
            known = False
        if not known and (inspect.isfunction(value) or inspect.ismethod(value)):
            where = _python_definition(value)
            notes = ((f"{name!r} is defined here:", where),) if where else ()
            raise self.error(f"global {name!r} is a plain Python function, which a hawk kernel "
                             f"cannot call; decorate it with @hawk.func to make it callable "
                             "(it is then inlined at each call)", node, notes)
        return super().global_value(name, value, node)

    def attribute(self, node: ast.Attribute):
        if isinstance(node.value, ast.Name) and node.value.id not in self.env:
            base = self.src.names.get(node.value.id)
            if isinstance(base, types.ModuleType) and base.__name__ not in ("math", "hawk"):
                if not hasattr(base, node.attr):
                    raise self.error(f"module {base.__name__!r} has no attribute "
                                     f"{node.attr!r}", node)
                return self.global_value(f"{node.value.id}.{node.attr}",
                                         getattr(base, node.attr), node)
        return super().attribute(node)

    # statements: loops, returns, and vector arguments, which a func may not change in place

    def statement(self, node: ast.stmt) -> None:
        if isinstance(node, ast.For):
            self.node = node
            self.for_statement(node)
        elif isinstance(node, ast.Return) and self.frames:
            raise self.error("`return` inside a `for` loop is not supported in a hawk func "
                             "(loops are unrolled into straight-line code): assign the value "
                             "to a name in the loop and return it after the loop", node)
        else:
            super().statement(node)

    def in_place(self, name: str, node: ast.AST, how: str) -> None:
        """Refuse changing the caller's vector ``name`` in place inside a func."""
        frame = self.frames[-1] if self.frames else None
        if frame is not None and frame.caller_owns(self.env.get(name)):
            raise self.error(
                f"the hawk func {frame.func.name!r} changes its argument {name!r} in place "
                f"({how}): a func has no side effects (in Python this would change the "
                f"caller's array; in hawk the caller's value never changes), so build a new "
                f"value and return it (e.g. `{name} = {name} + ...`, or hawk.vec3(...))", node)

    def augassign_statement(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Name):
            self.in_place(node.target.id, node, f"`{ast.unparse(node)}`")
        super().augassign_statement(node)

    def bind(self, name: str, value, node: ast.AST) -> None:
        if self.frames:  # a func's own scope: no kernel parameters to store to
            self.env[name] = value
            return
        if isinstance(value, tuple) and name in self.params:
            raise self.error(f"cannot assign {describe(value)} to parameter {name!r}; unpack it "
                             "first (`a, b = ...`)", node)
        super().bind(name, value, node)

    def assign(self, target: ast.expr, value) -> None:
        if isinstance(target, ast.Attribute | ast.Subscript) and isinstance(target.value,
                                                                             ast.Name):
            self.in_place(target.value.id, target, f"`{ast.unparse(target)} = ...`")
            if self.frames and target.value.id not in self.env:
                name, func = target.value.id, self.frames[-1].func.name
                raise self.error(
                    f"the hawk func {func!r} cannot write `{ast.unparse(target)}`: a func has "
                    f"no side effects and no Series parameter, so it cannot write a Series row; "
                    f"return the value and write it in the kernel (`{name}[row] = "
                    f"{func}(...)`)", target)
        if isinstance(target, ast.Name) and isinstance(value, tuple):
            self.bind(target.id, value, target)  # a tuple is a value too: `state = (x, v)`
        else:
            super().assign(target, value)

    def for_statement(self, node: ast.For) -> None:
        """``for i in range(...)``: the body lowered once per iteration, ``i`` a constant."""
        if node.orelse:
            raise self.error("`for ... else` is not supported in a hawk kernel", node)
        if not isinstance(node.target, ast.Name):
            raise self.error("a hawk loop has one name as its variable (`for i in range(K)`)",
                             node.target)
        iterator = node.iter
        is_range = (isinstance(iterator, ast.Call) and isinstance(iterator.func, ast.Name)
                    and iterator.func.id == "range" and iterator.func.id not in self.env
                    and self.src.names.get("range", builtins.range) is builtins.range)
        if not is_range:
            raise self.error("a hawk loop runs over a constant `range(...)` (it is unrolled at "
                             f"compile time), not over {ast.unparse(iterator)!r}", iterator)
        if iterator.keywords or not 1 <= len(iterator.args) <= 3:
            raise self.error("range() takes one to three positional arguments", iterator)
        bounds = []
        for arg in iterator.args:
            value = self.expr(arg)
            if not (isinstance(value, Lit) and type(value.value) is int):
                raise self.error(
                    f"range() in a hawk kernel takes compile-time integers (a literal, a global "
                    f"int, an enclosing loop's variable or a func argument given one): the loop "
                    f"is unrolled; {ast.unparse(arg)!r} is {describe(value)}", arg)
            bounds.append(value.value)
        try:
            iterations = range(*bounds)
        except ValueError as exc:
            raise self.error(f"range(): {exc}", iterator) from None
        if len(iterations) > MAX_UNROLL:
            raise self.error(f"this loop would be unrolled into {len(iterations)} copies of its "
                             f"body; hawk unrolls at most {MAX_UNROLL} iterations", iterator)
        for i in iterations:
            self.bind(node.target.id, Lit(i), node.target)
            for stmt in node.body:
                self.statement(stmt)
        self.node = node

    # expressions: calls of funcs, tuples as values

    def call(self, node: ast.Call):
        callee = self.expr(node.func)
        if isinstance(callee, FuncRef):
            return self.inline(callee.func, node)
        return super().call(node)

    def subscript(self, node: ast.Subscript):
        base = self.expr(node.value)
        if not isinstance(base, tuple):
            return super().subscript(node)
        if isinstance(node.slice, ast.Slice):
            return base[self._tuple_slice(node.slice, node)]
        index = self.expr(node.slice)
        if not (isinstance(index, Lit) and type(index.value) is int
                and -len(base) <= index.value < len(base)):
            raise self.error(f"a tuple of {len(base)} values is indexed by a constant from 0 to "
                             f"{len(base) - 1}", node)
        return base[index.value]

    def _tuple_slice(self, part: ast.Slice, node: ast.AST) -> slice:
        """``t[a:b:c]`` of a tuple: Python's slice, its bounds compile-time ints."""
        bounds = []
        for bound in (part.lower, part.upper, part.step):
            value = None if bound is None else self.expr(bound)
            if value is not None and not (isinstance(value, Lit) and type(value.value) is int):
                raise self.error(f"the bounds of a tuple's slice are compile-time ints, not "
                                 f"{describe(value)}", node)
            bounds.append(None if value is None else value.value)
        return slice(*bounds)

    def select(self, condition, a, b, what: str, node: ast.AST | None = None):
        if isinstance(a, tuple) or isinstance(b, tuple):
            if not (isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b)):
                raise self.error(f"{what} is {describe(a)} on one path and {describe(b)} on "
                                 "the other", node)
            return tuple(self.select(condition, x, y, what, node)
                         for x, y in zip(a, b, strict=True))
        if isinstance(a, Ref) and a == b:
            return a
        return super().select(condition, a, b, what, node)

    # inlining

    def inline(self, target: Func, node: ast.Call):
        """The value ``target`` returns for this call's arguments, its body lowered in place."""
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            series = self.env.get(arg.id) if isinstance(arg, ast.Name) else None
            if isinstance(series, SeriesValue):
                name = series.param.name
                raise self.error(
                    f"{name!r} ({series.annotation}) cannot be passed to the hawk func "
                    f"{target.name!r}: a func cannot write a Series (it has no Series "
                    f"parameter); return the value from {target.name!r} and write it in the "
                    f"kernel: `{name}[row] = {target.name}(...)`", arg)
        args = self.call_arguments(node.args)
        kwargs = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                raise self.error("`**` arguments are not supported in a hawk kernel", keyword)
            kwargs[keyword.arg] = self.tuple_or_expr(keyword.value)
        return self.inline_values(target, args, node, kwargs)

    def inline_values(self, target: Func, args: list, node: ast.AST, kwargs=None):
        """The value ``target`` returns for argument values already lowered (a call's, or
        ``hawk.jvp``'s), its body lowered in place."""
        kwargs = kwargs or {}
        self._check_not_recursive(target, node)
        try:
            bound = target.signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise self.error(f"{target.name}(): {exc}", node,
                             ((f"{target.name!r} is defined here:", target.definition),)) from None
        scope = {}
        for name, parameter in target.signature.parameters.items():
            if name in bound.arguments:
                scope[name] = bound.arguments[name]
            elif parameter.kind is inspect.Parameter.VAR_POSITIONAL:
                scope[name] = ()
            else:  # a default, read like a global of the func's module
                scope[name] = self.global_value(name, parameter.default, node)
        caller = self.src.loc(node)
        saved = self.src, self.env, self.node
        vectors = [v for v in scope.values() if isinstance(v, V)]
        vectors += [v for t in scope.values() if isinstance(t, tuple) for v in _flat(t)
                    if isinstance(v, V)]
        self.frames.append(_Frame(target, tuple(vectors), caller))
        self.src, self.env = target.source, scope
        try:
            result = self.block(_body(target.source.tree), target)
        finally:
            self.frames.pop()
            self.src, self.env, self.node = saved
        self._check_result(result, target, node)
        return result

    def _check_not_recursive(self, target: Func, node: ast.AST) -> None:
        if any(frame.func is target for frame in self.frames):
            chain = " -> ".join([f.func.name for f in self.frames] + [target.name])
            raise self.error(f"the hawk func {target.name!r} calls itself ({chain}): funcs are "
                             "inlined, so recursion cannot be compiled; write it as a loop "
                             "over a constant range", node,
                             ((f"{target.name!r} is defined here:", target.definition),))

    def block(self, stmts: list[ast.stmt], target: Func):
        """Lower a func's statements; the value returned (None if it falls off the end)."""
        for i, stmt in enumerate(stmts):
            self.node = stmt
            if isinstance(stmt, ast.Return):
                if i + 1 < len(stmts):
                    raise self.error("this code comes after `return` and never runs",
                                     stmts[i + 1])
                if stmt.value is None:
                    raise self.error(f"the hawk func {target.name!r} must return a value "
                                     "(funcs are called for their value)", stmt)
                return self.tuple_or_expr(stmt.value)
            if isinstance(stmt, ast.If) and _has_return(stmt):
                rest = stmts[i + 1:]
                condition = self.condition(stmt.test, "if")
                known = self.decided(condition)
                if known is not None:  # decided when compiling: only the branch taken
                    branch = stmt.body if known else stmt.orelse
                    value = self.block(branch + ([] if _always_returns(branch) else rest),
                                       target)
                    if value is None:
                        raise self.error(f"the hawk func {target.name!r} does not return a "
                                         f"value on the path through the `if` at line "
                                         f"{stmt.lineno}", stmt)
                    return value
                before = dict(self.env)
                paths = []
                for branch in (stmt.body, stmt.orelse):
                    self.env = dict(before)
                    value = self.block(branch + ([] if _always_returns(branch) else rest), target)
                    if value is None:
                        raise self.error(f"the hawk func {target.name!r} does not return a value "
                                         f"on every path through the `if` at line "
                                         f"{stmt.lineno}", stmt)
                    paths.append(value)
                self.node = stmt
                return self.select(condition, *paths,
                                   f"the value {target.name!r} returns", stmt)
            self.statement(stmt)
        return None

    def _check_result(self, result, target: Func, node: ast.AST) -> None:
        if result is None:
            raise self.error(f"the hawk func {target.name!r} returns no value: end it with "
                             "`return ...`", node,
                             ((f"{target.name!r} is defined here:", target.definition),))
        values = list(result) if isinstance(result, tuple) else [result]
        while values:
            value = values.pop()
            if isinstance(value, tuple):
                values += value
            elif isinstance(value, Ref):
                raise self.error(f"the hawk func {target.name!r} returns {describe(value)}; a "
                                 "func returns numbers, vectors or tuples of them", node)
            elif not isinstance(value, V | Lit) and not hasattr(value, "dtype"):
                raise self.error(f"the hawk func {target.name!r} returns {describe(value)}",
                                 node)
