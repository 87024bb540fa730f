"""What a user's funcs return, found before any kernel is built: ``solve``'s refusals by name.

``solve`` builds kernels whose parameters are its own (``k1``, ``h``, ``saves``...); a model
that returns the wrong shape would otherwise be refused there, in words about those internal
names. Each check here types the user's func alone, in a one-line kernel that assigns its
result to an output of the shape ``solve`` needs (hawk types a kernel when it is defined and
runs nothing), and turns a mismatch into a ``ValueError`` that names the argument (``f``,
``jac``, ``event``) and what was expected. A mistake inside the func itself stays the
``hawk.CompileError`` that points at the user's line.

No ``from __future__ import annotations`` here: the probes' annotations name the shapes.
"""

import functools

import hawk
from hawk import CompileError, Out, Param, Scalar, Table
from hawk.annotations import Annotation
from hawk.inline import Func

__all__ = ["check_result", "result_width", "table_types"]

#: the tables a model reads at most (``hawk.ode.MAX_TABLES``)
_TABLES = 3


def table_types(dims: tuple[int, ...]) -> tuple:
    """The annotations of ``table0 .. table2`` for tables of ``dims`` dimensions (the others
    unread)."""
    return tuple(Table[dims[i]] if i < len(dims) else Table for i in range(_TABLES))


def describe(annotation: Annotation) -> str:
    """A shape as a user reads it: ``a number``, ``Vector[3]``, ``Matrix[3, 3]``."""
    if annotation is Scalar or annotation is Param:
        return "a number"
    text = repr(annotation)
    return text.removeprefix("Param[").removesuffix("]") if text.startswith("Param[") \
        else text


@functools.cache
def _probe(g: Func, state, params, dims: tuple[int, ...], result, measure: bool):
    """A kernel assigning ``g(u, t, p, *tables)`` (or, with ``measure``, its width) to the
    output ``returned`` of type ``result``."""
    T0, T1, T2 = table_types(dims)
    count = len(dims)
    State, Result = state, result

    @hawk.func
    def call(u, t, args):
        return g(u, t, *args[0:count + 1])

    if measure:
        @hawk.kernel
        def width_of(p: params, u: State, t: Scalar, returned: Out[Scalar], table0: T0,
                     table1: T1, table2: T2):
            returned = hawk.width(call(u, t, (p, table0, table1, table2))) * 1.0  # noqa: F841

        return width_of

    @hawk.kernel
    def returns(p: params, u: State, t: Scalar, returned: Out[Result], table0: T0,
                table1: T1, table2: T2):
        returned = call(u, t, (p, table0, table1, table2))  # noqa: F841

    return returns


def check_result(name: str, g: Func, state, params, dims: tuple[int, ...], result,
                 meaning: str, given: str | None = None) -> None:
    """``ValueError`` naming ``name`` unless ``g(u, t, p, *tables)`` returns a ``result``
    (``meaning``: what that value is, for the message; ``given``: how the model's arguments
    were passed, where not as ``p``)."""
    try:
        _probe(g, state, params, dims, result, False).specialize({})
    except CompileError as exc:
        first = str(exc).splitlines()[0]
        if not first.startswith("'returned' is Out["):
            raise
        got = first.rpartition(", not ")[2]
        raise ValueError(
            f"{name} must return {meaning}: {describe(result)}, for u0 given as "
            f"{describe(state)} and {given or f'p as {describe(params)}'}; "
            f"{_named(g)}() returned {got}"
        ) from None


def _named(g: Func) -> str:
    """The user's name of ``g`` (not that of a wrapper that passes its arguments on)."""
    while hasattr(g, "forwards_to"):
        g = g.forwards_to
    return g.name


def result_width(name: str, g: Func, state, params, dims: tuple[int, ...]) -> int:
    """How many components ``g(u, t, p, *tables)`` returns (1 for a number)."""
    program = _probe(g, state, params, dims, Scalar, True).specialize({})
    (store,) = program.stores
    value = program.ops[store.value].attr
    if not isinstance(value, int | float):
        raise ValueError(f"{name} must return a number or a vector, got a value of "
                         f"{value!r} components")
    return int(value)
