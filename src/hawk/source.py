"""Reading a kernel function's source: its AST, its parameters, and where each node came from.

The function itself is never called or ``exec``'d: hawk reads its text with ``inspect.getsource``
and ``ast``, the way a compiler reads a file. Globals and closure values are looked up only when
the body names them (``math``, ``hawk``, numeric constants).
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import linecache
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .annotations import Annotation
from .errors import CompileError, Loc
from .ir import Role

__all__ = ["KernelSource", "Namespace", "ANNOTATION_NAMES", "import_file", "construct_name"]

ANNOTATION_NAMES = ("Scalar, Param, Terminated, Vec2, Vec3, Vec4, Vector[K], Matrix[R, C], "
                    "Param[Vec3] (or another vector or matrix type), Mutable[Scalar], "
                    "Mutable[Vec3], Out[Scalar], Out[Vec3], Series[Scalar], Series[Vec3], "
                    "Table or Table[2] (or 3)")  # fmt: skip


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
    """What a construct of the source is called in an error message (``a `while` loop``)."""
    return _CONSTRUCT_NAMES.get(type(node), f"`{type(node).__name__}`")


def import_file(path: str | Path, name: str, keep: bool = True):
    """Import the Python file at ``path`` as module ``name`` and return it. Kernels must live
    in files (hawk reads their source), so this is how a kernel written at run time or named
    on a command line is loaded. ``keep=False`` leaves no entry in ``sys.modules``."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    if not keep:
        sys.modules.pop(name, None)
    return module


class Namespace(Mapping):
    """The names a function's body may refer to: its closure's variables, then its module's
    globals. Both are read when a name is looked up, not when the function is decorated, so a
    ``@hawk.func`` may call itself (an error that says so) or one defined after it in the same
    scope, as Python itself would resolve them."""

    def __init__(self, func):
        self._globals = func.__globals__
        self._cells = dict(zip(func.__code__.co_freevars, func.__closure__ or (), strict=True))

    def __getitem__(self, name: str):
        cell = self._cells.get(name)
        if cell is None:
            return self._globals[name]
        try:
            return cell.cell_contents
        except ValueError:  # a closure variable not assigned yet
            raise KeyError(name) from None

    def __iter__(self):
        return iter({**dict.fromkeys(self._globals), **dict.fromkeys(self._cells)})

    def __len__(self) -> int:
        return len(self._globals.keys() | self._cells.keys())


@dataclass(frozen=True)
class ParamDecl:
    name: str
    annotation: Annotation
    loc: Loc


class KernelSource:
    """A kernel function's parsed definition and the names it may refer to."""

    WHAT = "kernel"  # what the decorated function is, in messages (``hawk.inline``: "func")

    def __init__(self, func):
        self.func = func
        self.name = func.__name__
        self.file = inspect.getsourcefile(func) or func.__code__.co_filename
        try:
            raw = inspect.getsource(func)
        except (OSError, TypeError) as exc:
            raise CompileError(
                f"cannot read the source of {self.name!r} ({exc}); a hawk {self.WHAT} must be "
                "defined in a file (or notebook cell) whose source Python can find"
            ) from None
        first_line = raw.splitlines()[0]
        self.indent = len(first_line) - len(first_line.lstrip())
        tree = ast.parse(textwrap.dedent(raw))
        ast.increment_lineno(tree, func.__code__.co_firstlineno - 1)
        self.tree = tree.body[0]
        if not isinstance(self.tree, ast.FunctionDef):
            kind = type(self.tree).__name__
            raise CompileError(f"@hawk.{self.WHAT} needs a plain function, got {kind}",
                               self.loc(self.tree))
        self.names = Namespace(func)
        self.params = self._read_params()

    def loc(self, node: ast.AST) -> Loc:
        line = getattr(node, "lineno", self.tree.lineno)
        text = linecache.getline(self.file, line).rstrip("\n")
        col = getattr(node, "col_offset", 0) + self.indent
        end = getattr(node, "end_col_offset", None)
        if end is not None and getattr(node, "end_lineno", line) == line:
            end += self.indent
        else:
            end = None
        return Loc(self.file, line, col, end, text, self.name)

    def error(self, message: str, node: ast.AST) -> CompileError:
        return CompileError(message, self.loc(node))

    def _read_params(self) -> tuple[ParamDecl, ...]:
        args = self.tree.args
        for extra, what in ((args.vararg, "*args"), (args.kwarg, "**kwargs")):
            if extra is not None:
                raise self.error(f"{what} is not supported in a hawk kernel's parameters", extra)
        if args.kwonlyargs or args.posonlyargs:
            node = (args.kwonlyargs or args.posonlyargs)[0]
            raise self.error("keyword-only and positional-only parameters are not supported; "
                             "list every parameter plainly", node)
        if args.defaults:
            raise self.error("default values are not supported: every parameter is bound when "
                             "the kernel runs", args.defaults[0])
        hints = self.func.__annotations__
        decls, seen_terminated = [], None
        for arg in args.args:
            if arg.annotation is None:
                raise self.error(f"parameter {arg.arg!r} has no annotation; expected one of "
                                 f"{ANNOTATION_NAMES}", arg)
            hint = hints.get(arg.arg)
            if isinstance(hint, str):  # `from __future__ import annotations`
                hint = self._evaluate_annotation(hint, arg)
            if not isinstance(hint, Annotation):
                raise self.error(f"parameter {arg.arg!r} has an unknown annotation "
                                 f"{ast.unparse(arg.annotation)!r}; expected one of "
                                 f"{ANNOTATION_NAMES}", arg.annotation)
            if hint.role is Role.TERMINATED:
                if seen_terminated:
                    raise self.error(f"parameter {arg.arg!r}: a kernel has at most one Terminated "
                                     f"flag (already {seen_terminated!r})", arg)
                seen_terminated = arg.arg
            decls.append(ParamDecl(arg.arg, hint, self.loc(arg)))
        return tuple(decls)

    def _evaluate_annotation(self, text: str, arg: ast.arg):
        try:
            return eval(text, dict(self.names))  # noqa: S307 -- an annotation, as typing would
        except Exception:
            raise self.error(f"parameter {arg.arg!r}: cannot resolve annotation {text!r}; "
                             f"expected one of {ANNOTATION_NAMES}", arg.annotation) from None
