"""hawk's type rules, in one place (``docs/language.md`` states the same rules for users).

Types: ``bool``, ``int64``, ``float32``, ``float64``. A Python literal (``2``, ``0.5``) is *weak*:
it takes the type of the other operand where that type can hold it, so ``x * 0.5`` stays float32
in a float32 kernel. Otherwise:

- ``bool`` never mixes with numbers in arithmetic or ordering (write ``1.0 if b else 0.0``);
- ``int64`` with a float gives that float; ``float32`` with ``float64`` gives ``float64``;
- ``/`` on two integers gives ``float64`` (as in Python);
- an integer literal with an integer gives ``int64``; a float literal with an integer gives
  ``float64``.
"""

from __future__ import annotations

import math

import numpy as np

from .ir import DType

__all__ = ["promote", "literal_dtype", "WEAK_DEFAULTS"]

WEAK_DEFAULTS = {bool: DType.BOOL, int: DType.INT64, float: DType.FLOAT64}

_FLOAT32_MAX = float(np.finfo(np.float32).max)

_RANK = {DType.INT64: 0, DType.FLOAT32: 1, DType.FLOAT64: 2}


def promote(a: DType, b: DType) -> DType | None:
    """The common type of two strong number types, or None when they do not mix (bool)."""
    if a is b:
        return a
    if DType.BOOL in (a, b):
        return None
    return a if _RANK[a] > _RANK[b] else b


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
