"""How hawk's kernels and funcs travel to another process (pickled: a Dask worker, a file).

A kernel travels as its IR: the ``Program`` of each specialisation made so far, read back as a
``ProgramKernel``. Never as its Python function: pickling that (cloudpickle does, for a
function of a script) takes the function's module namespace along, which is every import of
the user's script (hundreds of kilobytes), and each of those modules must then be importable
wherever the bytes are read, the Dask scheduler included.

The IR is read back only by a process whose IR format is the sender's: the programs travel
as bytes beside ``ir_format_digest()`` (a digest of ``hawk/ir.py``, which defines every op,
dtype and role), and a process whose digest differs refuses them with an ``IRFormatError``
that says so, before unpickling anything (which would otherwise fail deep inside, e.g. as
``'load' is not a valid OpKind``, or silently mean something else).

A func has no IR of its own (it is typed per call site), so it travels as its Python function
(which cloudpickle writes by value with only the globals its body names, or by reference when
its module is importable) and its source text, which is registered in ``linecache`` where it
lands, so the func can be read again there without its file.
"""

from __future__ import annotations

import functools
import hashlib
import linecache
from pathlib import Path

from .errors import IRError

__all__ = ["IRFormatError", "ir_format_digest", "check_ir_format", "func_source_lines",
           "register_source"]


class IRFormatError(IRError):
    """Kernel IR written by a hawk whose IR format differs from this process's."""


@functools.cache
def ir_format_digest() -> str:
    """A digest of the IR's definition (``hawk/ir.py``'s text): two processes that agree on it
    read each other's programs."""
    return hashlib.sha256(Path(__file__).with_name("ir.py").read_bytes()).hexdigest()[:16]


def check_ir_format(digest: str) -> None:
    """``IRFormatError`` unless IR written under ``digest`` can be read in this process."""
    if digest != ir_format_digest():
        raise IRFormatError(
            f"this process cannot read a hawk kernel sent to it: the sender's IR format (digest "
            f"{digest}) is not this process's ({ir_format_digest()}); run the same hawk, "
            "installed from the same source, in every process")


def func_source_lines(func) -> tuple[str, int, tuple[str, ...]]:
    """``(file, first line, lines)`` of a function's definition, as ``inspect`` found it."""
    import inspect

    lines, first = inspect.getsourcelines(func)
    return func.__code__.co_filename, max(first, 1), tuple(lines)


def register_source(func, file: str = "", first: int = 0, lines: tuple[str, ...] = ()):
    """``func`` (read back from a pickle) made readable by ``inspect.getsource`` here: its code
    names ``file`` again (cloudpickle may rename it) and ``lines``, its definition from line
    ``first``, are registered in ``linecache`` unless ``file`` here already holds them. The
    entry has no modification time, so ``linecache.checkcache`` keeps it (as IPython's cells).
    Returns the function (the same object)."""
    if not lines:
        return func
    if func.__code__.co_filename != file:
        func.__code__ = func.__code__.replace(co_filename=file)
    here = linecache.getlines(file)
    if here[first - 1:first - 1 + len(lines)] != list(lines):
        text = ["\n"] * (first - 1) + list(lines)
        linecache.cache[file] = (sum(map(len, text)), None, text, file)
    return func
