"""hawk's type rules, in one place (``docs/language.md`` states the same rules for users).

Types: ``bool``, the integers ``int32``, ``int64``, ``uint32``, ``uint64``, and ``float32``,
``float64``. A Python literal (``2``, ``0.5``) is *weak*: it takes the type of the other operand
where that type can hold it, so ``x * 0.5`` stays float32 in a float32 kernel and ``k & 0xFF``
stays uint32 (a literal the type cannot hold, ``k + (-1)`` with ``k`` unsigned, is a compile
error). Otherwise:

- ``bool`` never mixes with numbers in arithmetic or ordering (write ``1.0 if b else 0.0``);
- two integer types give the smallest type holding both, as NumPy: ``int32`` with ``int64``,
  ``uint32`` with ``int32`` or ``int64`` give ``int64``; ``uint32`` with ``uint64`` gives
  ``uint64``. Where NumPy has no such type, ``uint64`` with ``int32`` or ``int64``, hawk follows
  C and gives ``uint64`` (the signed value's two's complement bits), not NumPy's ``float64``,
  which would lose bits: so ``k + (1 if c else 0)`` stays ``uint64``;
- any integer with a float gives that float (NumPy gives ``float64`` for ``int32``/``int64``
  with ``float32``; a float32 kernel stays float32 here); ``float32`` with ``float64`` gives
  ``float64``;
- ``/`` on two integers gives ``float64`` (as in Python);
- an integer literal with an integer gives ``int64``; a float literal with an integer gives
  ``float64``.

Integer arithmetic wraps around (two's complement, as NumPy's), ``//`` and ``%`` follow Python
(floor) and give 0 for a zero divisor, and shifts by a count outside ``[0, bits)`` give 0 (or -1
for ``>>`` of a negative number), as NumPy's.
"""

from __future__ import annotations

import math

import numpy as np

from .ir import DType

__all__ = ["promote", "literal_dtype", "WEAK_DEFAULTS"]

WEAK_DEFAULTS = {bool: DType.BOOL, int: DType.INT64, float: DType.FLOAT64}

_FLOAT32_MAX = float(np.finfo(np.float32).max)

_FLOAT_RANK = {DType.FLOAT32: 1, DType.FLOAT64: 2}
_INTEGERS = {
    frozenset({DType.INT32, DType.INT64}): DType.INT64,
    frozenset({DType.UINT32, DType.INT32}): DType.INT64,
    frozenset({DType.UINT32, DType.INT64}): DType.INT64,
    frozenset({DType.UINT32, DType.UINT64}): DType.UINT64,
    frozenset({DType.INT32, DType.UINT64}): DType.UINT64,  # C's rule; NumPy: float64
    frozenset({DType.INT64, DType.UINT64}): DType.UINT64,  # C's rule; NumPy: float64
}  # fmt: skip


def promote(a: DType, b: DType) -> DType | None:
    """The common type of two strong number types, or None when they do not mix (bool)."""
    if a is b:
        return a
    if DType.BOOL in (a, b):
        return None
    if a.is_float or b.is_float:
        return max((a, b), key=lambda d: _FLOAT_RANK.get(d, 0))
    return _INTEGERS.get(frozenset({a, b}))


def literal_dtype(value, other: DType) -> DType | None:
    """The type a weak Python literal takes beside a strong operand of type ``other``."""
    if isinstance(value, bool) or other is DType.BOOL:
        both_bool = isinstance(value, bool) and other is DType.BOOL
        return DType.BOOL if both_bool else None
    if other is DType.FLOAT32 and abs(value) > _FLOAT32_MAX and math.isfinite(value):
        return DType.FLOAT64  # float32 cannot hold it
    if isinstance(value, int):
        return other
    return other if other.is_float else DType.FLOAT64
