"""Shared read-only tables in a kernel body: ``tab[i]``, ``tab[i, j, k]``, ``hawk.interp`` and
``hawk.interp_grid``.

A ``Table[d]`` parameter (``hawk.Table``, 1 to 3 dimensions) is one array shared by every
sample: a drag coefficient against Mach number, a cross-section against energy, an atmosphere
profile, a rate matrix. Its argument is a pointer to its C-contiguous elements followed by its
sizes (``hawk.ir.TABLE_FIELDS``), so a kernel is compiled once for any table size.

Reading. ``tab[i, j]`` takes one integer index per dimension (any integer expression). **An
index out of range is clamped to the nearest edge**: ``tab[-3]`` reads ``tab[0]`` and
``tab[10**9]`` the last element, so a read is never out of bounds and needs no flag. The
frontend writes that rule out as IR (``lower_read``): each index becomes
``min(max(i, 0), size - 1)`` (``MAX``/``MIN`` ops on the ``LOAD`` of the size), the clamped
indices the row-major flat index ``(i * size1 + j) * size2 + k``, and one ``TABLE_READ`` reads
that element. Backends see only the read of an index in range.

Interpolating. ``interp`` (linear, at breakpoints) and ``interp_grid`` (linear, bilinear,
trilinear on a uniform grid) are lowered here into straight-line IR (no loop at run time, ``if``
as ``SELECT``), and work on NumPy arrays outside a kernel, computing the same expressions in
the same order, so ``hawk.interp(x, xp, fp)`` on NumPy arrays gives the kernel's bits. Both
compute in the kernel's float type of their operands: float32 when every float operand is
float32, else float64 (integer tables are converted).

The breakpoint search of ``interp`` is a branch-free binary search of ``SEARCH_STEPS`` (40)
halving steps, each one read of ``xp``, enough for any table of up to 2**40 elements (the
bindings refuse a larger table, ``MAX_TABLE_ELEMENTS``): every step is taken whatever the
table's size (a step past the answer reads the same element again and changes nothing), and
the halving sizes depend only on the table's length, so backends compute them once per launch.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import numpy as np

from .ir import TABLE_FIELDS, DType, OpKind, Parameter

__all__ = ["TableValue", "interp", "interp_grid", "FUNCTIONS", "OBJECTS", "SEARCH_STEPS",
           "MAX_TABLE_ELEMENTS", "lower_read", "lower_call"]

#: halving steps of ``interp``'s binary search: enough for 2**SEARCH_STEPS elements
SEARCH_STEPS = 40
#: the most elements a table may have (8 TiB of float64): what ``SEARCH_STEPS`` covers
MAX_TABLE_ELEMENTS = 2**SEARCH_STEPS


@dataclass(frozen=True)
class TableValue:
    """A ``Table`` parameter named in the body: read at integer indices (``tab[i, j]``) or
    passed to ``hawk.interp``/``interp_grid`` or to a hawk func; it is never a number itself."""

    param: Parameter

    @property
    def annotation(self) -> str:
        return self.param.annotation

    @property
    def description(self) -> str:
        return f"the {self.annotation} {self.param.name!r}"

    def usage(self) -> str:
        name, ndim = self.param.name, self.param.ndim
        indices = ", ".join("ijk"[:ndim])
        return (f"{name!r} is a {self.annotation}, a read-only table shared by every sample: "
                f"read an element with `{name}[{indices}]` ({ndim} integer "
                f"{'index' if ndim == 1 else 'indices'}), or pass it to hawk.interp / "
                "hawk.interp_grid")


# -- the functions a body calls, and their NumPy versions ----------------------------------------


def _float_type(dtypes) -> np.dtype:
    """float32 when every float among ``dtypes`` is float32 (and there is one), else float64."""
    floats = {np.dtype(d) for d in dtypes if np.dtype(d).kind == "f"}
    return np.dtype(np.float32) if floats == {np.dtype(np.float32)} else np.dtype(np.float64)


def _dtype_of(value) -> list:
    """The dtypes that count for the float type: a Python number is weak (none)."""
    return [] if isinstance(value, int | float) else [np.asarray(value).dtype]


def interp(x, xp, fp):
    """Linear interpolation at breakpoints, as ``numpy.interp(x, xp, fp)``: ``fp[0]`` below
    ``xp[0]``, ``fp[-1]`` from ``xp[-1]`` on, NaN for a NaN ``x`` (``fp[0]`` for one breakpoint,
    as NumPy's). In a kernel ``xp`` and ``fp``
    are 1-D ``Table`` parameters; outside one, NumPy arrays (``x`` a number or an array).

    ``xp`` must be strictly increasing (not checked, as NumPy does not). The interval is
    ``j``, the largest index in ``[0, len(xp) - 2]`` with ``xp[j] <= x`` (0 if none), found by a
    branch-free binary search of ``SEARCH_STEPS`` (40) halving steps; then, with ``a, b =
    xp[j], xp[j+1]`` and ``fa, fb = fp[j], fp[j+1]``, the result is NumPy's formula::

        slope = (fb - fa) / (b - a)
        r = slope * (x - a) + fa                  # if NaN: slope * (x - b) + fb,
                                                  # and if that is NaN too and fa == fb: fa
        r = fa if x == a else r                   # (its derivative in x: the slope)
        r = fp[-1] if x >= xp[-1] else r
        r = fp[0] if x < xp[0] else r
        r = x if x is NaN and len(xp) > 1 else r

    evaluated in the float type of the operands (float32 when every float operand is float32,
    else float64), so in float64 it gives ``numpy.interp``'s bits exactly. In a kernel its
    derivative in ``x`` (``hawk.jvp``, ``hawk.jacobian``, ``solve``'s sensitivities) is the
    slope of the interval ``x`` falls in; at an interior breakpoint that is one-sided, the
    slope of the interval to its right (where ``x`` goes when it grows); below ``xp[0]`` and
    from ``xp[-1]`` on it is 0. ``fp`` has the
    length of ``xp`` (a longer one's extra values are not read; a shorter one is read clamped to
    its last element, never out of bounds).

    Args:
        x: the point: a number or per-sample value (an array outside a kernel).
        xp: the breakpoints, a strictly increasing 1-D table of at least one element.
        fp: the values at the breakpoints, a 1-D table of the same length.
    """
    xp, fp = np.asarray(xp), np.asarray(fp)
    if xp.ndim != 1 or fp.ndim != 1 or xp.size == 0 or fp.size == 0:
        raise ValueError(f"interp() takes 1-D xp and fp of at least one element, got shapes "
                         f"{xp.shape} and {fp.shape}")
    dtype = _float_type([*_dtype_of(x), xp.dtype, fp.dtype])
    x = np.asarray(x, dtype=dtype)
    n, m = xp.size, fp.size
    xs, fs = xp.astype(dtype), fp.astype(dtype)
    base = np.zeros(x.shape, dtype=np.int64)
    length = max(n - 1, 1)
    for _ in range(SEARCH_STEPS):
        half = length >> 1
        mid = base + half
        base = np.where(xs[mid] <= x, mid, base)
        length -= half
    j1 = np.minimum(base + 1, n - 1)
    a, b = xs[base], xs[j1]
    fa, fb = fs[np.minimum(base, m - 1)], fs[np.minimum(j1, m - 1)]
    with np.errstate(all="ignore"):
        slope = (fb - fa) / (b - a)
        r1 = slope * (x - a) + fa
        r2 = slope * (x - b) + fb
    r2 = np.where(np.isnan(r2) & (fa == fb), fa, r2)
    r = np.where(np.isnan(r1), r2, r1)
    r = np.where(x == a, fa, r)
    r = np.where(x >= xs[n - 1], fs[min(n, m) - 1], r)
    r = np.where(x < xs[0], fs[0], r)
    return np.where(np.isnan(x) & (n > 1), x, r).astype(dtype)


def interp_grid(table, point, lo, hi):
    """Linear (1-D), bilinear (2-D) or trilinear (3-D) interpolation of ``table`` on a uniform
    grid: along axis ``k`` its ``N = table.shape[k]`` values sit at ``lo[k] + i * (hi[k] -
    lo[k]) / (N - 1)``. A point outside the grid is clamped to the grid's edge; a NaN
    coordinate gives NaN. In a kernel ``table`` is a ``Table[d]`` parameter and ``point``,
    ``lo``, ``hi`` are numbers for a 1-D table and vectors of width ``d`` (``hawk.vec2``,
    ``vec3``) otherwise; outside one, a NumPy array and numbers or arrays of shape ``(d,)`` or
    ``(d, n)``.

    Per axis (in the float type of the operands, as ``interp``)::

        t = (p - lo) / (hi - lo) * (N - 1)
        t = min(t if t > 0 else 0, N - 1)         # clamped; NaN -> 0
        i = min(int(t), max(N - 2, 0))            # the cell; N = 1: 0, read twice
        f = t - i                                 # the weight of i + 1 (index clamped to N - 1)

    then lerps, ``lerp(a, b, f) = a + f * (b - a)``, along the last axis first: 2-D is
    ``lerp(lerp(T[i, j], T[i, j+1], fy), lerp(T[i+1, j], T[i+1, j+1], fy), fx)``, and 3-D
    the same with one more level. Agrees with ``scipy.interpolate.RegularGridInterpolator``
    (method "linear") on the clamped point to rounding (``tests/test_tables.py``: 1e-12
    relative in float64).

    Args:
        table: the values at the grid points, 1 to 3 dimensions, each of size >= 1.
        point: where to interpolate (a number, or one coordinate per dimension).
        lo, hi: the grid's first and last coordinates along each axis (``lo != hi``).
    """
    table = np.asarray(table)
    d = table.ndim
    if not 1 <= d <= 3 or table.size == 0:
        raise ValueError(f"interp_grid() takes a table of 1 to 3 dimensions with at least one "
                         f"element, got shape {table.shape}")
    coords = [point, lo, hi]
    dtype = _float_type([table.dtype, *(t for c in coords for t in _dtype_of(c))])
    if d == 1:
        coords = [[np.asarray(c, dtype=dtype)] for c in coords]
    else:
        coords = [list(np.asarray(c, dtype=dtype)) for c in coords]
        if any(len(c) != d for c in coords):
            raise ValueError(f"interp_grid() of a {d}-D table takes point, lo and hi of {d} "
                             "coordinates each")
    values = table.astype(dtype)
    cells, weights, nans = [], [], []
    with np.errstate(all="ignore"):
        for k in range(d):
            p, low, high = (np.asarray(c[k], dtype=dtype) for c in coords)
            size = table.shape[k]
            last = dtype.type(size - 1)
            t = (p - low) / (high - low) * last
            t = np.where(t > 0, t, dtype.type(0))
            t = np.where(last < t, last, t)
            i = np.minimum(t.astype(np.int64), max(size - 2, 0))
            weights.append((t - i.astype(dtype)).astype(dtype))
            cells.append((i, np.minimum(i + 1, size - 1)))
            nans.append(p)
        shape = np.broadcast_shapes(*(w.shape for w in weights))
        corners = {}
        for corner in np.ndindex(*(2,) * d):
            index = tuple(np.broadcast_to(cells[k][c], shape) for k, c in enumerate(corner))
            corners[corner] = values[index]
        for k in reversed(range(d)):  # lerp along the last axis first
            f = weights[k]
            corners = {c[:k]: corners[(*c[:k], 0)] + f * (corners[(*c[:k], 1)]
                                                        - corners[(*c[:k], 0)])
                       for c in corners if len(c) == k + 1 and c[k] == 0}
        result = corners[()]
    for p in nans:  # a NaN coordinate: that NaN
        result = np.where(np.isnan(p), p, result)
    return np.asarray(result, dtype=dtype)


#: the name a body calls each function by -> its number of arguments
FUNCTIONS = {"interp": 3, "interp_grid": 4}
#: the function objects, for a body that imports them (``from hawk import interp``)
OBJECTS = {interp: "interp", interp_grid: "interp_grid"}


# -- lowering ------------------------------------------------------------------------------------


def _op(lw, kind: OpKind, dtype: DType, *args):
    return lw.emit(kind, dtype, tuple(a.id for a in args))


def _size(lw, table: Parameter, axis: int):
    return lw.emit(OpKind.LOAD, DType.INT64, attr=(table.name, TABLE_FIELDS[axis]))


def _last(lw, table: Parameter, axis: int):
    """``size - 1`` along ``axis``: the largest index."""
    return _op(lw, OpKind.SUB, DType.INT64, _size(lw, table, axis), lw.const(1, DType.INT64))


def _read(lw, table: Parameter, flat):
    """The element at ``flat``, an int64 value in range."""
    return lw.emit(OpKind.TABLE_READ, table.dtype, (flat.id,), table.name)


def _clamp(lw, table: Parameter, axis: int, index):
    """An int64 ``index`` clamped to ``[0, size - 1]`` along ``axis``."""
    low = _op(lw, OpKind.MAX, DType.INT64, index, lw.const(0, DType.INT64))
    return _op(lw, OpKind.MIN, DType.INT64, low, _last(lw, table, axis))


def _flat(lw, table: Parameter, indices: list):
    """The row-major flat index of clamped ``indices``: ``(i * size1 + j) * size2 + k``."""
    flat = indices[0]
    for axis, index in enumerate(indices[1:], start=1):
        scaled = _op(lw, OpKind.MUL, DType.INT64, flat, _size(lw, table, axis))
        flat = _op(lw, OpKind.ADD, DType.INT64, scaled, index)
    return flat


def _index(lw, table: TableValue, value, k: int, node: ast.AST):
    """Index ``k`` of a read (an integer value or literal) as int64 clamped to its axis."""
    p = table.param
    literal = not hasattr(value, "id") and type(getattr(value, "value", None)) is int
    dtype = getattr(value, "dtype", None) if hasattr(value, "id") else None
    if not literal and (dtype is None or not dtype.is_integer):
        place = f"index {k} of" if p.ndim > 1 else "the index of"
        raise lw.error(f"{place} {p.name!r} ({p.annotation}) must be an integer, not "
                       f"{lw.describe(value)} (a table is read at integer indices; "
                       "hawk.interp and hawk.interp_grid interpolate between them)", node)
    if literal:  # a literal outside int64 is clamped like any index
        number = min(max(value.value, -(2**63)), 2**63 - 1)
        return _clamp(lw, p, k, lw.const(number, DType.INT64))
    if dtype is DType.UINT64:  # clamped as unsigned: a huge index reads the last element
        top = lw.cast(_last(lw, p, k), DType.UINT64)
        return lw.cast(_op(lw, OpKind.MIN, DType.UINT64, value, top), DType.INT64)
    return _clamp(lw, p, k, lw.cast(value, DType.INT64))


def lower_read(lw, table: TableValue, node: ast.Subscript):
    """``tab[i]``, ``tab[i, j]``, ``tab[i, j, k]``: each index clamped, one ``TABLE_READ``."""
    p = table.param
    if isinstance(node.slice, ast.Slice) or (
            isinstance(node.slice, ast.Tuple)
            and any(isinstance(e, ast.Slice) for e in node.slice.elts)):
        raise lw.error(f"slicing {p.name!r} ({p.annotation}) is not supported: read one "
                       f"element, {table.usage().split(': ', 1)[1]}", node)
    elements = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    if len(elements) != p.ndim:
        raise lw.error(f"{p.name!r} is a {p.annotation} and takes {p.ndim} "
                       f"{'index' if p.ndim == 1 else 'indices'}, got {len(elements)} "
                       f"(`{ast.unparse(node)}`)", node)
    indices = [_index(lw, table, lw.expr(e), k, e) for k, e in enumerate(elements)]
    return _read(lw, p, _flat(lw, p, indices))


def _table_arg(lw, value, ndims: tuple[int, ...], what: str, name: str, node: ast.AST):
    if not isinstance(value, TableValue):
        raise lw.error(f"hawk.{name}()'s {what} must be a Table parameter, not "
                       f"{lw.describe(value)}", node)
    if value.param.ndim not in ndims:
        want = "a 1-D Table" if ndims == (1,) else "a Table, Table[2] or Table[3]"
        raise lw.error(f"hawk.{name}()'s {what} must be {want}; {value.param.name!r} is a "
                       f"{value.annotation}", node)
    return value.param


def _float_of(lw, dtypes) -> DType:
    floats = {d for d in dtypes if d.is_float}
    return DType.FLOAT32 if floats == {DType.FLOAT32} else DType.FLOAT64


def _number(lw, value, name: str, node: ast.AST):
    if isinstance(value, TableValue):
        raise lw.error(f"hawk.{name}() takes a number here, not {value.description}", node)
    return lw.number(lw.scalar(value, node), f"hawk.{name}()", node)


def lower_call(lw, name: str, args: list, node: ast.AST):
    """Lower ``hawk.interp(...)`` or ``hawk.interp_grid(...)`` in ``lw`` (a
    ``frontend.Lowering``); the formulas are ``interp``'s and ``interp_grid``'s docstrings'."""
    if len(args) != FUNCTIONS[name]:
        raise lw.error(f"hawk.{name}() takes {FUNCTIONS[name]} arguments, got {len(args)}",
                       node)
    if name == "interp":
        return _lower_interp(lw, args, node)
    return _lower_interp_grid(lw, args, node)


def _lower_interp(lw, args: list, node: ast.AST):
    x = _number(lw, args[0], "interp", node)
    xp = _table_arg(lw, args[1], (1,), "xp (the breakpoints)", "interp", node)
    fp = _table_arg(lw, args[2], (1,), "fp (the values)", "interp", node)
    dt = _float_of(lw, [xp.dtype, fp.dtype, *([x.dtype] if hasattr(x, "id") else [])])
    x = lw.cast(x, dt)
    i64 = DType.INT64
    one = lw.const(1, i64)

    def value(table: Parameter, flat):
        return lw.cast(_read(lw, table, flat), dt)

    last = _last(lw, xp, 0)
    base = lw.const(0, i64)
    length = _op(lw, OpKind.MAX, i64, last, one)  # intervals, at least 1
    for _ in range(SEARCH_STEPS):  # the largest j in [0, n - 2] with xp[j] <= x, else 0
        half = _op(lw, OpKind.RSHIFT, i64, length, one)
        mid = _op(lw, OpKind.ADD, i64, base, half)
        take = _op(lw, OpKind.LE, DType.BOOL, value(xp, mid), x)
        base = _op(lw, OpKind.SELECT, i64, take, mid, base)
        length = _op(lw, OpKind.SUB, i64, length, half)
    j1 = _op(lw, OpKind.MIN, i64, _op(lw, OpKind.ADD, i64, base, one), last)
    a, b = value(xp, base), value(xp, j1)
    fa = value(fp, _op(lw, OpKind.MIN, i64, base, _last(lw, fp, 0)))
    fb = value(fp, _op(lw, OpKind.MIN, i64, j1, _last(lw, fp, 0)))
    slope = _op(lw, OpKind.DIV, dt, _op(lw, OpKind.SUB, dt, fb, fa),
                _op(lw, OpKind.SUB, dt, b, a))
    r1 = _op(lw, OpKind.ADD, dt, _op(lw, OpKind.MUL, dt, slope, _op(lw, OpKind.SUB, dt, x, a)),
             fa)
    r2 = _op(lw, OpKind.ADD, dt, _op(lw, OpKind.MUL, dt, slope, _op(lw, OpKind.SUB, dt, x, b)),
             fb)
    flat = _op(lw, OpKind.AND, DType.BOOL, _op(lw, OpKind.NE, DType.BOOL, r2, r2),
               _op(lw, OpKind.EQ, DType.BOOL, fa, fb))
    r2 = _op(lw, OpKind.SELECT, dt, flat, fa, r2)
    r = _op(lw, OpKind.SELECT, dt, _op(lw, OpKind.NE, DType.BOOL, r1, r1), r2, r1)
    r = _op(lw, OpKind.SELECT, dt, _op(lw, OpKind.EQ, DType.BOOL, x, a), _at_breakpoint(
        lw, dt, x, a, fa, slope), r)
    end = value(fp, _op(lw, OpKind.MIN, i64, last, _last(lw, fp, 0)))
    r = _op(lw, OpKind.SELECT, dt, _op(lw, OpKind.GE, DType.BOOL, x, value(xp, last)), end, r)
    zero = lw.const(0, i64)
    r = _op(lw, OpKind.SELECT, dt, _op(lw, OpKind.LT, DType.BOOL, x, value(xp, zero)),
            value(fp, zero), r)
    nan = _op(lw, OpKind.AND, DType.BOOL, _op(lw, OpKind.NE, DType.BOOL, x, x),
              _op(lw, OpKind.GT, DType.BOOL, last, lw.const(0, i64)))
    return _op(lw, OpKind.SELECT, dt, nan, x, r)


def _at_breakpoint(lw, dt: DType, x, a, fa, slope):
    """``fa``, bit for bit, as ``fa + z`` with ``z`` a zero whose derivative in ``x`` is
    ``slope``: so at a breakpoint ``interp`` is NumPy's value and its derivative the slope of
    the interval to the right (one-sided; 0 for an infinite or NaN slope). ``z`` is ``-0.0``
    (``fa + -0.0`` is ``fa`` for every ``fa``, ``-0.0`` included): ``slope * (x - a)`` is that
    for a negative slope, ``-(slope * (a - x))`` for the others."""
    neg = _op(lw, OpKind.MUL, dt, slope, _op(lw, OpKind.SUB, dt, x, a))
    pos = _op(lw, OpKind.NEG, dt, _op(lw, OpKind.MUL, dt, slope, _op(lw, OpKind.SUB, dt, a, x)))
    rising = _op(lw, OpKind.GE, DType.BOOL, slope, lw.const(0.0, dt))
    zero = _op(lw, OpKind.SELECT, dt, rising, pos, neg)
    return _op(lw, OpKind.SELECT, dt, _op(lw, OpKind.NE, DType.BOOL, zero, zero), fa,
               _op(lw, OpKind.ADD, dt, fa, zero))


def _lower_interp_grid(lw, args: list, node: ast.AST):
    table = _table_arg(lw, args[0], (1, 2, 3), "first argument (the table)", "interp_grid",
                       node)
    d = table.ndim
    coords = []
    for what, value in zip(("point", "lo", "hi"), args[1:], strict=True):
        comps = getattr(value, "comps", None)
        if d == 1 and comps is None:
            coords.append([_number(lw, value, "interp_grid", node)])
        elif d > 1 and comps is not None and len(comps) == d:
            coords.append(list(comps))
        else:
            want = "a number" if d == 1 else f"a vector of {d} coordinates (hawk.vec{d}(...))"
            raise lw.error(f"hawk.interp_grid() of the {table.annotation} {table.name!r} takes "
                           f"{what} as {want}, not {lw.describe(value)}", node)
    dtypes = [table.dtype, *(c.dtype for cs in coords for c in cs if hasattr(c, "id"))]
    dt = _float_of(lw, dtypes)
    i64 = DType.INT64
    cells, weights, nans = [], [], []
    for k in range(d):
        p, low, high = (lw.cast(c[k], dt) for c in coords)
        last_i = _last(lw, table, k)
        last = lw.cast(last_i, dt)
        span = _op(lw, OpKind.DIV, dt, _op(lw, OpKind.SUB, dt, p, low),
                   _op(lw, OpKind.SUB, dt, high, low))
        t = _op(lw, OpKind.MUL, dt, span, last)
        zero = lw.const(0.0, dt)
        t = _op(lw, OpKind.SELECT, dt, _op(lw, OpKind.GT, DType.BOOL, t, zero), t, zero)
        t = _op(lw, OpKind.MIN, dt, t, last)
        top = _op(lw, OpKind.MAX, i64, _op(lw, OpKind.SUB, i64, last_i, lw.const(1, i64)),
                  lw.const(0, i64))
        i = _op(lw, OpKind.MIN, i64, lw.cast(t, i64), top)
        weights.append(_op(lw, OpKind.SUB, dt, t, lw.cast(i, dt)))
        upper = _op(lw, OpKind.MIN, i64, _op(lw, OpKind.ADD, i64, i, lw.const(1, i64)), last_i)
        cells.append((i, upper))
        nans.append((p, _op(lw, OpKind.NE, DType.BOOL, p, p)))
    corners = {}
    for corner in np.ndindex(*(2,) * d):
        flat = _flat(lw, table, [cells[k][c] for k, c in enumerate(corner)])
        corners[corner] = lw.cast(_read(lw, table, flat), dt)
    for k in reversed(range(d)):  # lerp along the last axis first
        f = weights[k]
        corners = {c[:k]: _lerp(lw, dt, corners[(*c[:k], 0)], corners[(*c[:k], 1)], f)
                   for c in corners if len(c) == k + 1 and c[k] == 0}
    result = corners[()]
    for p, nan in nans:
        result = _op(lw, OpKind.SELECT, dt, nan, p, result)
    return result


def _lerp(lw, dt: DType, a, b, f):
    """``a + f * (b - a)``."""
    return _op(lw, OpKind.ADD, dt, a,
               _op(lw, OpKind.MUL, dt, f, _op(lw, OpKind.SUB, dt, b, a)))
