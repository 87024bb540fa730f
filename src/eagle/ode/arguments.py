"""``solve``'s arguments checked and made into the arrays its kernels bind, in the user's words.

Every refusal here is raised before anything is allocated or run, names the user's argument
(``u0``, ``p``, ``t_span[0]``, ``tables[1]``, ``saveat``...) and says what was expected: never
a name of the kernels' own parameters. Every array ``solve`` hands to a kernel is a new one (a
copy, C-ordered, of the solve's dtype), so nothing the caller passed is ever written, whatever
its dtype, shape or layout; complex numbers and strings are refused rather than cast (NumPy would
drop an imaginary part, or parse ``"1.0"``).
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np

import hawk
from hawk import ode as hawk_ode
from hawk.ir import MAX_ARGUMENT_MATRIX_SIDE, MAX_WIDTH

__all__ = ["array_module", "state_type", "numeric", "params", "per_sample", "tables",
           "finite_pair", "allocate", "threads", "record_events", "is_array", "listed_times"]

_NUMBERS = (int, float, np.integer, np.floating)


def array_module(u0):
    """NumPy or CuPy, from ``u0``'s type."""
    module = type(u0).__module__.split(".")[0]
    if isinstance(u0, np.ndarray):
        return np
    if module == "cupy":
        return sys.modules["cupy"]
    raise TypeError(f"u0 must be a NumPy or CuPy array of shape (n,) or (k, n), got "
                    f"{type(u0).__name__}; for other arrays (PyTorch, JAX) bind the kernels of "
                    "hawk.ode to them directly")


def numeric(name: str, value) -> None:
    """``TypeError`` naming ``name`` unless ``value`` is real numbers: a bool, int or float,
    or an array of them (not complex, not strings or objects)."""
    if isinstance(value, bool | np.bool_ | int | float | np.integer | np.floating):
        return
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    if kind is None:
        if isinstance(value, complex | str | bytes):
            kind = "c" if isinstance(value, complex) else "U"
        else:
            return  # a sequence: its elements are checked where it is converted
    if kind not in "biuf":
        what = {"c": "complex numbers", "U": "strings", "S": "bytes", "O": "Python objects"}
        raise TypeError(f"{name} must be real numbers (bool, int or float), got "
                        f"{what.get(kind) or f'dtype {value.dtype}'}"
                        + ("; pass the real part (.real) if that is what you mean"
                           if kind == "c" else ""))


def state_type(u0) -> tuple[object, int]:
    """``u0``'s annotation and the number of samples."""
    if u0.ndim == 1:
        return hawk.Scalar, u0.shape[0]
    if u0.ndim == 2 and 2 <= u0.shape[0] <= MAX_WIDTH:
        return hawk.Vector[u0.shape[0]], u0.shape[1]
    raise ValueError(f"u0 must have shape (n,) for a scalar state or (k, n) with k in "
                     f"1..{MAX_WIDTH} for a vector state, got {tuple(u0.shape)}")


def params(p, xp, n: int, dtype):
    """``p`` as bound, and its annotation. A number is one ``Param``. An array whose last axis
    has the ``n`` samples is per sample: ``(n,)`` a ``Scalar``, ``(k, n)`` a ``Vector[k]``,
    ``(r, c, n)`` a ``Matrix[r, c]``. Any other array ``(m,)`` or ``(r, c)`` is one vector or
    matrix shared by every sample (``Param[...]``, passed by value). A sequence of ``k``
    numbers or ``(n,)`` arrays is a ``Vector[k]`` per sample. Always a new array."""
    numeric("p", p)
    if isinstance(p, _NUMBERS):
        return float(p), hawk.Param
    if isinstance(p, tuple | list) and all(
            isinstance(v, _NUMBERS) or np.ndim(v) == 1 for v in p):
        if not 2 <= len(p) <= MAX_WIDTH:
            raise ValueError(f"p as a sequence must have 2 to {MAX_WIDTH} entries (a vector), "
                             f"got {len(p)}")
        for i, v in enumerate(p):
            numeric(f"p[{i}]", v)
        for i, v in enumerate(p):
            if np.ndim(v) == 1 and np.shape(v)[0] != n:
                raise ValueError(f"p[{i}] has shape {np.shape(v)}: a sequence p is a "
                                 f"Vector[{len(p)}] per sample, each entry a number or an "
                                 f"array ({n},); pass arguments of other shapes as "
                                 f"args=(...), f(u, t, *args)")
        p = xp.stack([xp.broadcast_to(xp.asarray(v, dtype=dtype), (n,)) for v in p])
    elif isinstance(p, tuple | list) and len(p) >= 1 and not all(
            isinstance(v, _NUMBERS) or np.ndim(v) == 0 for v in p):
        raise ValueError(f"p is a sequence of arrays of different shapes "
                         f"{[np.shape(v) for v in p]}: a sequence p is one Vector[k] per "
                         f"sample (numbers or arrays ({n},)); pass a model's several "
                         f"arguments as args=(...), called f(u, t, *args)")
    p = _new_array("p", p, xp, dtype, "a number, an array or a sequence of numbers or arrays "
                   f"({n},)")
    shape = tuple(p.shape)
    if shape == (n,):
        return p, hawk.Scalar
    if len(shape) == 2 and shape[1] == n and 2 <= shape[0] <= MAX_WIDTH:
        return p, hawk.Vector[shape[0]]
    if len(shape) == 3 and shape[2] == n and _matrix_shape(shape[:2]):
        return p, hawk.Matrix[shape[:2]]
    if len(shape) == 1 and 2 <= shape[0] <= MAX_WIDTH:
        return p, hawk.Param[hawk.Vector[shape[0]]]
    if len(shape) == 2 and _matrix_shape(shape):
        return p, hawk.Param[hawk.Matrix[shape]]
    raise ValueError(f"p must be a number; per sample an array ({n},), (k, {n}) with k in "
                     f"2..{MAX_WIDTH} or (r, c, {n}) with r, c in "
                     f"1..{MAX_ARGUMENT_MATRIX_SIDE}; shared "
                     f"by every sample an array (m,) with m in 2..{MAX_WIDTH} or (r, c); or a "
                     f"sequence of 2 to {MAX_WIDTH} numbers or arrays; got shape {shape}")


def _new_array(name: str, value, xp, dtype, expected: str):
    """``value`` as a new C-ordered array of ``dtype``, its elements checked to be real numbers
    first (a list of strings is refused, not parsed)."""
    try:
        raw = xp.asarray(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be {expected}, got {type(value).__name__}") from None
    numeric(name, raw)
    return xp.array(raw, dtype=dtype, copy=True, order="C")


def _matrix_shape(shape: tuple[int, ...]) -> bool:
    return all(1 <= side <= MAX_ARGUMENT_MATRIX_SIDE for side in shape) and shape != (1, 1)


def per_sample(name: str, value, xp, n: int, dtype, positive: bool = False,
               infinite: bool = False):
    """``value`` (a number or an array ``(n,)``) as a new array ``(n,)``; ``ValueError`` naming
    ``name`` where a value is NaN, infinite (unless ``infinite``: +inf only) or, with
    ``positive``, not > 0."""
    numeric(name, value)
    allowed = "a finite number" if not infinite else "a number (inf for none)"
    if isinstance(value, _NUMBERS):
        if math.isnan(value) or (math.isinf(value) and not (infinite and value > 0)):
            raise ValueError(f"{name} must be {allowed}, got {value!r}")
        if positive and not value > 0:
            raise ValueError(f"{name} must be positive, got {value!r}")
        return xp.full(n, value, dtype=dtype)
    value = _new_array(name, value, xp, dtype, f"a number or an array of shape ({n},)")
    if value.shape != (n,):
        raise ValueError(f"{name} must be a number or an array of shape ({n},), got shape "
                         f"{tuple(value.shape)}")
    bad = xp.isnan(value) | (xp.isinf(value) & ((value < 0) if infinite else True))
    if bool(bad.any()):
        first = int(xp.argmax(bad))
        raise ValueError(f"{name} must be {allowed} for every sample, got {value[first]!r} "
                         f"at sample {first}")
    if positive and not bool((value > 0).all()):
        raise ValueError(f"{name} must be positive for every sample")
    return value


def tables(given, xp) -> tuple[dict, tuple[int, ...]]:
    """``tables`` as the kernels' bindings ``table0``... and their dimensions; each must be
    real numbers and small enough to be laid out contiguously (a zero-stride view is copied)."""
    if not isinstance(given, tuple | list) or len(given) > hawk_ode.MAX_TABLES:
        raise ValueError(f"tables must be a sequence of at most {hawk_ode.MAX_TABLES} arrays, "
                         f"got {given!r}")
    dims = []
    for i, table in enumerate(given):
        ndim = getattr(table, "ndim", None)
        if ndim not in (1, 2, 3):
            raise ValueError(f"tables[{i}] must be an array of 1, 2 or 3 dimensions, got "
                             f"{type(table).__name__}"
                             + (f" of {ndim} dimensions" if ndim is not None else ""))
        numeric(f"tables[{i}]", table)
        _fits(f"tables[{i}]", xp, int(table.size) * table.dtype.itemsize,
              f"a table of shape {tuple(table.shape)} laid out contiguously")
        dims.append(int(ndim))
    return {f"table{i}": table for i, table in enumerate(given)}, tuple(dims)


def finite_pair(name: str, value) -> tuple[float, float]:
    """``value`` as two finite floats, else ``ValueError`` naming ``name``."""
    try:
        a, b = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair of numbers, got {value!r}") from None
    if not (math.isfinite(a) and math.isfinite(b)):
        raise ValueError(f"{name} must be finite numbers, got {value!r}")
    return a, b


def is_array(value) -> bool:
    """Whether ``value`` is a NumPy or CuPy array (``saveat`` as an array of times, not the
    sequence ``(first, last, count)``)."""
    return isinstance(value, np.ndarray) or type(value).__module__.split(".")[0] == "cupy"


def listed_times(name: str, value, xp, n: int, dtype, backward: bool):
    """``saveat`` given as an array of times (SciPy's ``t_eval``, diffrax's ``SaveAt(ts=...)``)
    as a new 1-D array in the integration's variable (``s = -t`` for ``backward``), increasing;
    ``ValueError`` naming ``name`` where it is not ``(T,)`` or ``(T, n)`` (a column per
    sample), empty, not finite or not strictly sorted in the integration's direction."""
    numeric(name, value)
    if not (value.ndim == 1 or (value.ndim == 2 and value.shape[1] == n)) \
            or value.shape[0] == 0:
        raise ValueError(f"{name} as an array of times must be (T,) (the same times for every "
                         f"sample) or (T, {n}) (a column of times per sample), T >= 1, got "
                         f"shape {tuple(value.shape)}")
    times = xp.array(value, dtype=dtype, copy=True, order="C")
    bad = ~xp.isfinite(times)
    if bool(bad.any()):
        first = int(xp.argmax(bad.ravel()))
        where = f"index {first}" if times.ndim == 1 else \
            f"row {first // n} of column {first % n}"
        raise ValueError(f"{name} must be finite times, got {float(times.ravel()[first])!r} "
                         f"at {where}")
    if backward:
        times = -times
    unsorted = times[1:] <= times[:-1]
    if bool(unsorted.any()):
        first = int(xp.argmax(unsorted.ravel()))
        row, column = (first + 1, None) if times.ndim == 1 else divmod(first, n)
        where = f"index {row}" if column is None else f"row {row + 1} of column {column}"
        at = (row,) if column is None else (row + 1, column)
        before = (row - 1,) if column is None else (row, column)
        way = "decreasing (t_end < t0)" if backward else "increasing"
        raise ValueError(f"{name} must be sorted, strictly {way}: {where} is "
                         f"{float(value[at])!r} after {float(value[before])!r}")
    return times


def record_events(value) -> int:
    """``record_events`` as the events kept per sample (an int >= 0, not a bool)."""
    if isinstance(value, bool | np.bool_) or not (isinstance(value, int | np.integer)
                                                  and value >= 0):
        raise ValueError(f"record_events must be an int >= 0 (the events kept per sample), "
                         f"got {value!r}")
    return int(value)


def threads(value) -> int | None:
    """``threads`` as a count of CPU threads (None: the process's setting)."""
    if value is None:
        return None
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else os.cpu_count() or 1
    if isinstance(value, bool | np.bool_) or not (isinstance(value, int | np.integer)
                                                  and 1 <= value <= usable):
        raise ValueError(f"threads must be an int from 1 to {usable} (the CPUs this process may "
                         f"use), or None for eagle.get_num_threads(); got {value!r}")
    return int(value)


def _memory(xp) -> int:
    """The bytes one array could at most take where ``xp`` allocates: the host's memory, or
    the GPU's."""
    if xp is np:
        try:
            return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            return 1 << 62
    return int(xp.cuda.Device().mem_info[1])


def _fits(name: str, xp, nbytes: int, what: str) -> None:
    available = _memory(xp)
    if nbytes > available:
        where = "this machine's memory" if xp is np else "the GPU's memory"
        raise ValueError(f"{name}: {what} would need {_size(nbytes)}, more than {where} "
                         f"({_size(available)})")


def _size(nbytes: int) -> str:
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} bytes"


def allocate(name: str, xp, shape: tuple[int, ...], dtype, fill):
    """``xp.full(shape, fill, dtype)`` for the user's argument ``name``; a ``ValueError``
    naming it and the size needed where that cannot be allocated."""
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    what = f"an array of shape {shape} ({np.dtype(dtype).name})"
    _fits(name, xp, nbytes, what)
    try:
        return xp.full(shape, fill, dtype=dtype)
    except MemoryError:  # CuPy's OutOfMemoryError is one too
        raise ValueError(f"{name}: {what} would need {_size(nbytes)}, which cannot be "
                         f"allocated now") from None
