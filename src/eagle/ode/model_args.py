"""``solve(..., args=(W1, b1, W2, b2))``: model arguments of any shapes, as separate arguments.

SciPy's ``solve_ivp(args=...)`` and diffrax's ``args`` pass any tuple to the model; a hawk
kernel has a fixed list of typed parameters. So the arguments are packed, on the host, into one
array the kernels bind as ``p`` (a ``Vector[S]`` for up to ``MAX_WIDTH``, 128, numbers in all,
else a ``Matrix[R, 16]``, row by row; shared by every sample, or per sample when any argument
is), and every user func is wrapped in a ``@hawk.func`` that takes them out again, element by
element at compile-time positions, and calls ``f(u, t, W1, b1, W2, b2, *tables)``. A copy
changes no bit, so the model computes exactly what it computes on arrays passed one by one; and
the kernels of ``hawk.ode`` (and their golden digests) are untouched: they see one ``p``, as
always.

Separate arguments read best in hawk: ``f(u, t, W1, b1, W2, b2)`` is SciPy's ``fun(t, y,
*args)``, and each argument has its own type (a ``Matrix[8, 4]``, a ``Vector[8]``, a number)
where one tuple argument would have to be unpacked in every func's first line.

The rule for each argument is ``p``'s: a number is shared; an array whose last axis has the
``n`` samples is per sample (``(n,)``, ``(k, n)``, ``(r, c, n)``); any other array ``(m,)`` or
``(r, c)`` is shared by every sample.
"""

from __future__ import annotations

import functools
import math

import numpy as np

import hawk
from hawk.inline import Func
from hawk.ir import MAX_ARGUMENT_MATRIX_SIDE as SIDE
from hawk.ir import MAX_WIDTH

from . import arguments

__all__ = ["pack", "unpacking", "MAX_NUMBERS"]

#: the most numbers ``args`` holds in all (one ``Matrix[16, 16]``)
MAX_NUMBERS = SIDE * SIDE
#: the columns of the packed matrix, beyond ``MAX_WIDTH`` numbers
_COLUMNS = SIDE


def pack(given, xp, n: int, dtype, per_sample_args: tuple[bool, ...] | None = None):
    """``args`` as ``(packed, annotation, layout, per_sample)``: the new array bound as ``p``,
    how it is bound, the layout ``((offset, shape), ...)``, the compile-time positions of each
    argument in the packed numbers (``shape`` ``()`` for a number), and whether each argument
    has a value per sample (for cutting a cotangent of the packed ``p`` back into arguments:
    ``eagle.ode.adjoint``). ``per_sample_args`` says which arguments are per sample instead of
    their last axis (a chunk of ``n`` samples of a dask solve, where a shared argument's last
    axis may happen to be ``n``). ``ValueError`` or
    ``TypeError`` naming ``args[i]`` for an argument that is not real numbers of at most two
    dimensions besides the samples."""
    if not isinstance(given, tuple | list) or not given:
        raise TypeError(f"args must be a tuple of the model's extra arguments (numbers and "
                        f"arrays), passed as f(u, t, *args); got {given!r}")
    values, shapes, per_sample = [], [], False
    for i, value in enumerate(given):
        name = f"args[{i}]"
        arguments.numeric(name, value)
        if isinstance(value, bool | int | float | np.integer | np.floating):
            values.append(float(value))
            shapes.append(((), False))
            continue
        try:
            array = xp.array(xp.asarray(value), dtype=dtype, copy=True, order="C")
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be a number or an array, got "
                            f"{type(value).__name__}") from None
        arguments.numeric(name, array)
        samples = array.ndim >= 1 and array.shape[-1] == n if per_sample_args is None \
            else per_sample_args[i]
        shape = tuple(array.shape[:-1] if samples else array.shape)
        if len(shape) > 2 or (len(shape) == 2 and not all(1 <= s <= SIDE
                                                          for s in shape)) \
                or (len(shape) == 1 and not 1 <= shape[0] <= MAX_WIDTH) or 0 in shape:
            raise ValueError(f"{name} must be a number, a vector (m,) with m up to "
                             f"{MAX_WIDTH} or a matrix (r, c) with r, c up to "
                             f"{SIDE}, each with the {n} samples as a last axis "
                             f"or shared by every sample; got shape {tuple(array.shape)}")
        values.append(array)
        shapes.append((shape, samples))
        per_sample = per_sample or samples
    total = sum(math.prod(shape) for shape, _ in shapes)
    if total > MAX_NUMBERS:
        raise ValueError(f"args: {total} numbers in all, more than the {MAX_NUMBERS} a model's "
                         f"arguments hold (one Matrix[{SIDE}, {SIDE}]); "
                         "pass large shared arrays as tables=")
    width = total if total <= MAX_WIDTH else _COLUMNS * -(-total // _COLUMNS)
    flat = xp.zeros((width, n) if per_sample else (width,), dtype=dtype)
    layout, offset = [], 0
    for value, (shape, samples) in zip(values, shapes, strict=True):
        size = math.prod(shape)
        if per_sample:
            block = xp.broadcast_to(xp.asarray(value, dtype=dtype).reshape(
                size, n) if samples else xp.asarray(value, dtype=dtype).reshape(size, 1),
                (size, n))
        else:
            block = xp.asarray(value, dtype=dtype).reshape(size)
        flat[offset:offset + size] = block
        layout.append((offset, shape))
        offset += size
    columns = 0 if width <= MAX_WIDTH else _COLUMNS
    if columns:
        packed = flat.reshape((width // columns, columns, n) if per_sample
                              else (width // columns, columns))
        annotation = hawk.Matrix[packed.shape[:2]]
    elif width == 1:
        packed = flat[0] if per_sample else float(flat[0])
        annotation = hawk.Scalar if per_sample else hawk.Param
    else:
        packed, annotation = flat, hawk.Vector[width]
    if not per_sample and annotation is not hawk.Param:
        annotation = hawk.Param[annotation]
    return packed, annotation, (tuple(layout), columns, width), \
        tuple(samples for _, samples in shapes)


def describe(layout) -> str:
    """The arguments' shapes as a user reads them: ``(Matrix[8, 4], Vector[8], a number)``."""
    names = []
    for _, shape in layout[0]:
        names.append("a number" if not shape else f"Vector[{shape[0]}]" if len(shape) == 1
                     else f"Matrix[{shape[0]}, {shape[1]}]")
    return "(" + ", ".join(names) + ")"


@functools.cache
def _entry(offset: int, shape: tuple, columns: int, width: int) -> Func:
    """The ``@hawk.func`` ``(P) -> value`` taking one argument out of the packed ``P``: a
    number, a vector or a matrix of ``shape`` at the flat position ``offset``."""
    rows = shape[0] if len(shape) == 2 else 1
    cols = shape[-1] if shape else 1
    kind = len(shape)  # 0: a number, 1: a vector, 2: a matrix

    @hawk.func
    def at(P, i):
        if width == 1:
            return P
        if columns == 0:
            return P[i]
        return P[i // columns, i % columns]

    @hawk.func
    def entry(P):
        if kind == 0:
            return at(P, offset)
        if kind == 1:  # built by concat: hawk.zeros takes at most 16 components
            v = at(P, offset)
            for j in range(1, cols):
                v = hawk.concat(v, at(P, offset + j))
            return v
        m = hawk.zeros(rows, cols)
        for r in range(rows):
            for j in range(cols):
                m[r, j] = at(P, offset + r * cols + j)
        return m

    return entry


@functools.cache
def _level(following: Func, k: int, entry: Func) -> Func:
    """Takes argument ``k`` out of ``P`` and passes it on after the ``k`` already taken."""
    @hawk.func
    def level(u, t, P, *rest):
        return following(u, t, P, *rest[0:k], entry(P), *rest[k:])

    return level


@functools.cache
def _finish(g: Func) -> Func:
    @hawk.func
    def finish(u, t, P, *rest):
        return g(u, t, *rest)

    return finish


@functools.cache
def unpacking(g: Func, layout) -> Func:
    """``g(u, t, *args, *rest)`` called as ``h(u, t, P, *rest)`` with the packed ``P`` (the
    tables and an event's index in ``rest``). ``h.forwards_to`` is ``g`` and ``h.p_count``
    the arguments ``P`` stands for (how ``hawk.ode`` reads whether an ``on_event`` takes an
    index)."""
    positions, columns, width = layout
    level = _finish(g)
    for k in reversed(range(len(positions))):
        offset, shape = positions[k]
        level = _level(level, k, _entry(offset, shape, columns, width))

    @hawk.func
    def with_args(u, t, P, *rest):
        return level(u, t, P, *rest)

    with_args.forwards_to = g
    with_args.p_count = len(positions)
    return with_args
