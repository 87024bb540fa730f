"""Helper functions (``@hawk.func``): what a func is. A call of one is **inlined** while the
kernel is lowered (``hawk.func_calls``), so no func exists in the IR.

A call's arguments are evaluated at the call site, the func's body is lowered in a fresh scope
holding only its parameters (and its own module's globals), and the value it returns replaces
the call. A func is therefore typed per call site, exactly like a kernel per dtype signature,
costs nothing at run time (the ops are the ones the same code written out by hand gives), and
may take another func (or a math function) as an argument: a name bound to a func is a
compile-time value, so ``rk4(rhs, y, dt)`` inlines ``rhs`` four times. A loop over a constant
``range`` is **unrolled** (``hawk.statements``): its body is lowered once per iteration with
the loop variable bound to that iteration's int, a compile-time constant (weak like a literal,
usable as a vector index).

Why by abstract interpretation again, rather than a call op and a loop op in the IR: the IR stays a
flat, branch-free list that every backend and the reference executor already understand, and
the per-sample work of a step is straight-line code (what a GPU thread or a SIMD lane runs best).

The rules the lowering enforces, each a ``CompileError`` that shows the call sites it was
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

import functools
import inspect

from .errors import Loc
from .source import KernelSource
from .wire import func_source_lines, register_source

__all__ = ["Func", "func", "FuncSource", "MAX_UNROLL"]

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

    def __getstate__(self) -> dict:
        """Pickled, a func is its Python function, its source text and its attributes
        (``.terminal``...), not its parsed source, whose namespace is its module's globals
        (``hawk.wire``)."""
        state = {k: v for k, v in vars(self).items()
                 if k not in ("source", "signature", "__wrapped__")}
        state["source_lines"] = func_source_lines(self.func)
        return state

    def __setstate__(self, state: dict) -> None:
        vars(self).update(state)
        self.__wrapped__ = self.func

    def __getattr__(self, name: str):
        """A func read back from a pickle parses its source when first asked (the unpickler
        may not have finished its function when ``__setstate__`` runs)."""
        if name in ("source", "signature") and "func" in vars(self):
            self.func = register_source(self.func, *vars(self).pop("source_lines", ()))
            self.source = FuncSource(self.func)
            self.signature = inspect.signature(self.func)
            return vars(self)[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

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
