"""The shared part of every emitter: one op of the hawk IR rendered as one expression.

A backend subclasses ``ExpressionRenderer`` and changes tables, not logic (the tinygrad way): the
format string of each op, how a literal and a cast are spelled, and how a math function is
called. The CPU (Numba) and CUDA emitters both walk a program with ``render``.
"""

from __future__ import annotations

import math

from hawk.ir import DType, Op, OpKind

__all__ = ["ExpressionRenderer"]


class ExpressionRenderer:
    """Renders each op of a program as an expression over the names of its arguments."""

    formats: dict[OpKind, str] = {
        OpKind.NEG: "(-{0})", OpKind.ADD: "({0} + {1})", OpKind.SUB: "({0} - {1})",
        OpKind.MUL: "({0} * {1})", OpKind.DIV: "({0} / {1})",
        OpKind.LT: "({0} < {1})", OpKind.LE: "({0} <= {1})", OpKind.GT: "({0} > {1})",
        OpKind.GE: "({0} >= {1})", OpKind.EQ: "({0} == {1})", OpKind.NE: "({0} != {1})",
        OpKind.MIN: "({1} if {1} < {0} else {0})", OpKind.MAX: "({1} if {1} > {0} else {0})",
        OpKind.SELECT: "({1} if {0} else {2})",
    }  # fmt: skip

    def literal(self, value, dtype: DType) -> str:
        raise NotImplementedError

    def cast(self, arg: str, dtype: DType) -> str:
        raise NotImplementedError

    def call(self, name: str, args: list[str], dtype: DType) -> str:
        raise NotImplementedError

    def render(self, op: Op, args: list[str]) -> str:
        """The expression computing ``op`` from its arguments' names (LOAD is the caller's)."""
        if op.kind is OpKind.CONST:
            return self.literal(op.attr, op.dtype)
        if op.kind is OpKind.CAST:
            return self.cast(args[0], op.dtype)
        if op.kind is OpKind.CALL:
            return self.call(op.attr, args, op.dtype)
        if op.kind not in self.formats:
            raise NotImplementedError(f"{type(self).__name__} cannot render {op.kind}")
        return self.formats[op.kind].format(*args)

    @staticmethod
    def float_text(value: float) -> str:
        """A float literal that reads back to the same bits (repr, with inf/nan spelled out)."""
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(float(value))
