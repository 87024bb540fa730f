"""Integer bit operations in a kernel body: ``& | ^ ~ << >>`` (``hawk.typing_rules`` has the
integer types and how they mix).

On integers they are NumPy's ``bitwise_and``/``or``/``xor``/``invert``/``left_shift``/
``right_shift`` in the operands' common integer type (a shift by a count outside ``[0, bits)``
gives 0, or -1 for ``>>`` of a negative number). On two bools, ``&``, ``|`` and ``^`` are
``and``, ``or`` and ``!=`` (both sides always evaluated, as everywhere in a kernel). On floats
they are a compile error.
"""

from __future__ import annotations

import ast
import operator

from .ir import DType, OpKind
from .values import describe

__all__ = ["BINARY", "lower_binary", "lower_invert"]

#: the AST operators, with the op, the constant folding and the symbol
BINARY = {
    ast.BitAnd: (OpKind.BITAND, operator.and_, "&"), ast.BitOr: (OpKind.BITOR, operator.or_, "|"),
    ast.BitXor: (OpKind.BITXOR, operator.xor, "^"),
    ast.LShift: (OpKind.LSHIFT, operator.lshift, "<<"),
    ast.RShift: (OpKind.RSHIFT, operator.rshift, ">>"),
}  # fmt: skip
_ON_BOOLS = {OpKind.BITAND: OpKind.AND, OpKind.BITOR: OpKind.OR, OpKind.BITXOR: OpKind.NE}


def lower_binary(lowering, kind: OpKind, a, b, symbol: str, node: ast.AST):
    """``a <symbol> b`` for a bit operation ``kind``, both scalars (not two literals, which the
    frontend folds)."""
    types = (lowering.dtype_of(a), lowering.dtype_of(b))
    if types == (DType.BOOL, DType.BOOL) and kind in _ON_BOOLS:
        return lowering.emit(_ON_BOOLS[kind], DType.BOOL, (lowering.cast(a, DType.BOOL).id,
                                                            lowering.cast(b, DType.BOOL).id))
    if not all(t.is_integer for t in types):
        raise lowering.error(f"{symbol} takes integers (or, for & | ^, two bools), not "
                             f"{describe(a)} and {describe(b)}", node)
    dtype = lowering.common_type(a, b, symbol, node)
    return lowering.emit(kind, dtype, (lowering.cast(a, dtype).id, lowering.cast(b, dtype).id))


def lower_invert(lowering, value, node: ast.AST):
    """``~value`` for an integer scalar or literal."""
    if not lowering.dtype_of(value).is_integer:
        hint = "; for a bool write `not`" if lowering.dtype_of(value) is DType.BOOL else ""
        raise lowering.error(f"~ takes an integer, not {describe(value)}{hint}", node)
    if not hasattr(value, "id"):  # a literal
        return type(value)(~value.value)
    return lowering.emit(OpKind.INVERT, value.dtype, (value.id,))
