"""hawk's errors: ``CompileError`` for a kernel it cannot compile, pointing at the user's source,
and ``IRError`` for a ``Program`` that breaks the IR's rules (a bug in whatever made it)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CompileError", "IRError", "Loc"]


@dataclass(frozen=True)
class Loc:
    """Where an IR node came from: the user's file, line and columns, and the line's text.

    Attributes:
        file: the path of the user's source file.
        line: the line number, from 1.
        col: the column where the construct starts, from 0 (default 0).
        end_col: the column just past its end, or None (default): to the end of the line.
        text: the source line itself ("" when unknown: then no caret is drawn).
        function: the name of the kernel or func the line is in ("" when unknown).
    """

    file: str
    line: int
    col: int = 0
    end_col: int | None = None
    text: str = ""
    function: str = ""

    def render(self) -> str:
        where = f'  File "{self.file}", line {self.line}'
        if self.function:
            where += f", in {self.function}"
        if not self.text:
            return where
        stripped = self.text.lstrip()
        indent = len(self.text) - len(stripped)
        start = max(self.col - indent, 0)
        end = self.end_col - indent if self.end_col is not None else len(stripped)
        width = max(end - start, 1)
        return f"{where}\n    {stripped.rstrip()}\n    {' ' * start}{'^' * width}"


class CompileError(Exception):
    """A kernel uses something hawk does not support, or uses it wrongly.

    The message names the construct; ``loc`` points at the user's file and line, and ``str()``
    shows that line with a caret under the offending part, the way Python's own SyntaxError does.

    An error inside a ``@hawk.func`` is reached through calls: ``calls`` holds their call sites,
    outermost (the kernel's line) first, and ``str()`` shows them before ``loc`` like the frames
    of a traceback. ``notes`` are ``(text, loc)`` pairs shown after it (e.g. where a plain
    Python function that cannot be called is defined).

    Args:
        message: what is wrong, naming the construct.
        loc: where, or None when there is no source position.
        calls: the call sites through ``@hawk.func`` calls, outermost first.
        notes: ``(text, loc)`` pairs shown after ``loc``.
    """

    def __init__(self, message: str, loc: Loc | None = None, calls: tuple[Loc, ...] = (),
                 notes: tuple[tuple[str, Loc], ...] = ()):
        self.message = message
        self.loc = loc
        self.calls = tuple(calls)
        self.notes = tuple(notes)
        super().__init__(self._format())

    def _format(self) -> str:
        if self.loc is None:
            return self.message
        frames = [c.render() for c in self.calls] + [self.loc.render()]
        frames += [f"{text}\n{loc.render()}" for text, loc in self.notes]
        return "\n".join([self.message, *frames])

    @property
    def filename(self) -> str | None:
        return self.loc.file if self.loc else None

    @property
    def lineno(self) -> int | None:
        return self.loc.line if self.loc else None


class IRError(Exception):
    """A ``Program`` breaks a rule of the IR (raised by ``hawk.passes.check``).

    The message names the kernel, the op (``%3``), store or flag, and the rule. Not a mistake in
    the user's kernel (those raise ``CompileError``): a bug in the frontend or a pass, or a
    hand-made or tampered ``Program``.
    """
