"""The shared part of every emitter: one op of the hawk IR rendered as one expression.

A backend subclasses ``ExpressionRenderer`` and changes tables, not logic (the tinygrad way): the
format string of each op, how a literal and a cast are spelled, and how a math function is
called. ``walk`` is the one walk over a program's ops that every emitter shares: it names each
value and renders each op once, and the emitter only decides how a line is spelled.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from hawk.ir import DType, Op, OpKind, Program
from hawk.passes import Stage, classify

__all__ = ["ExpressionRenderer", "Assignment", "walk", "invariant_ops", "stale_reads",
           "block_fill_value"]


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


@dataclass(frozen=True)
class Assignment:
    """One op of a program as ``name = expression``, for an emitter to spell as a line."""

    index: int  # the op's index in the program
    op: Op
    name: str
    expression: str


def walk(program: Program, renderer: ExpressionRenderer,
         load: Callable[[tuple[str, int | None]], str], suffix: str = "", *,
         only: Collection[int] | None = None, known: Mapping[int, str] | None = None,
         ) -> tuple[list[Assignment], list[str | None]]:
    """The ops of ``program`` rendered in order: the assignments (one per op that is not a
    ``LOAD``), and the name of every op's value by index. A ``LOAD`` is named by
    ``load((parameter, component))``; op ``i`` is named ``v{i}{suffix}`` (a suffix keeps the
    names of unrolled steps apart).

    ``only`` renders just those ops (their arguments must be among them, loads or ``known``);
    ``known`` names ops computed elsewhere, e.g. hoisted out of the step loop
    (``hawk.passes.classify``): they are used by name and not rendered again."""
    names: list[str | None] = []
    assignments = []
    only = None if only is None else frozenset(only)  # a membership test per op
    for index, op in enumerate(program.ops):
        if known is not None and index in known:
            names.append(known[index])
        elif op.kind is OpKind.LOAD:
            names.append(load(op.attr))
        elif only is not None and index not in only:
            names.append(None)
        else:
            args = [names[a] for a in op.args]
            if None in args:
                raise ValueError(f"op %{index} needs %{op.args[args.index(None)]}, which this "
                                 "walk does not render")
            name = f"v{index}{suffix}"
            assignments.append(Assignment(index, op, name, renderer.render(op, args)))
            names.append(name)
    return assignments, names


def stale_reads(program: Program, names: list[str | None],
                local: Callable[[tuple[str, int | None]], str]) -> dict[str, tuple[str, DType]]:
    """The state values a store would read after an earlier store replaced them.

    An emitter keeps a sample's state in locals (``local(key)``) and writes the stores back into
    them one after another, so a store whose value is another state parameter's loaded value
    (``a, b = b, a``; ``u_prev = u``; an accumulated ``total = t`` after ``t += dt``) would see
    the new value where the step means the start-of-step one. Returns each such value's name ->
    (the name of a copy the emitter takes before the stores, its dtype); empty for a kernel
    without one, whose code is then as before."""
    replaced: set[str] = set()
    stale: dict[str, tuple[str, DType]] = {}
    for store in program.stores:
        value = names[store.value]
        if value in replaced:
            stale[value] = (f"was_{value}", program.ops[store.value].dtype)
        replaced.add(local((store.param, store.component)))
    return stale


def invariant_ops(program: Program) -> frozenset[int]:
    """The ops whose value is the same at every step of a sample (``Stage.LAUNCH`` and
    ``Stage.SAMPLE`` in ``hawk.passes.classify``), loads aside: what an emitter computes once
    before its step loop. Bit-identical to computing them every step: each op is a pure
    function of its arguments, evaluated by the same operation."""
    stages = classify(program)
    return frozenset(i for i, (op, stage) in enumerate(zip(program.ops, stages, strict=True))
                     if stage is not Stage.STEP and op.kind is not OpKind.LOAD)


def block_fill_value(elements: list[str]) -> str | None:
    """The value most of a block's elements are, where filling the block with it by a loop and
    storing only the others is worth it (a sparse Jacobian's zero), else None. Every backend
    fills its blocks by this one rule; a tie goes to the value met first."""
    if len(elements) < 64:
        return None
    value, count = max(collections.Counter(elements).items(), key=lambda item: item[1])
    return value if count >= len(elements) // 4 else None
