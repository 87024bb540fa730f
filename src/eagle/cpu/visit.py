"""The step of a CPU launch: a lane visit, ``steps`` steps of each lane of a set, rendered as
one LLVM function (``Visit.define``). The visit reads one side's buffers and writes the other's
(``cpu.layout``); its loop over lanes is straight-line SSA per lane that LLVM vectorises, a
finished lane frozen by selects. Each op is rendered through ``llvm_ops.LlvmRenderer`` in the
context of its step (``Where``: which step's counter the draws read).

The visit's parameters are ``VisitParameter``s, each saying what the lane machinery
(``cpu.scheduler``) passes for it, so the call is built from the same list as the definition.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from hawk.ir import AGGREGATES, DType, OpKind

from ..codegen import walk
from .layout import PAD, Layout, base_name
from .llvm_ops import INTRINSICS, TYPES, LlvmRenderer, Where
from .llvm_text import expand, indent, load_element, store_element

__all__ = ["Visit", "VisitParameter", "Passed", "INTERLEAVE", "INTERLEAVED_STEP"]

# Vectors of lanes a visit's loop steps side by side (LLVM's interleave count), where the step
# is short: a step is a chain of dependent operations, and one vector's chain waits on each
# operation's latency. Four in flight, measured interleaved against eagle before this emitter
# (cpu_then_now.py, n = 1e6, 2 threads): the oscillator 1.18x (two: 0.97x, eight: 0.95x, the
# registers spill), Lorenz 1.11x (eight: 0.86x). A longer step has independent operations of
# its own, and LLVM's cost model chooses.
INTERLEAVE = 4
INTERLEAVED_STEP = 24  # ops computed per step, at most


class Passed(enum.Enum):
    """What the lane machinery passes for a visit parameter."""

    COUNT = "the set's lane count, padded (mp)"
    READ_SIDE = "the buffer of the side the set is in"
    WRITE_SIDE = "the buffer of the other side"
    ARRAY = "an array by its address (a lane array, the samples' indices, a Series, a table)"
    VALUE = "a value the machinery has as its own parameter (a Param, the seed)"
    STEP0 = "the step the set is at, from the launch's first"


@dataclass(frozen=True)
class VisitParameter:
    """One parameter of a visit: its name there (``src_x``), its LLVM type, whether it is a
    ``noalias`` pointer, what the machinery passes for it, and for a side's buffer its name
    without the side (``x``: ``a_x`` or ``b_x``)."""

    name: str
    type: str
    passed: Passed
    noalias: bool = False
    buffer: str = ""

    @property
    def definition(self) -> str:
        return f"{self.type}{' noalias' if self.noalias else ''} %{self.name}"


class Visit:
    """A lane visit: ``steps`` steps of each of ``mp`` lanes, read from one side's buffers and
    written to the other's; returns whether any lane is still live."""

    def __init__(self, layout: Layout, renderer: LlvmRenderer):
        self.layout = layout
        self.renderer = renderer
        p = layout.program
        self.program = p
        self.uniforms = [slot for slot in p.slots if slot.is_uniform]
        self.series = layout.series_slots()
        self.tables = [slot for slot in p.slots if slot.is_table]

    def declaration(self, name: str) -> str:
        """``name``'s declaration, for the machinery's module, which calls it."""
        return f"declare i1 @{name}({', '.join(p.type for p in self.parameters())})"

    def parameters(self) -> list[VisitParameter]:
        """The visit's parameters, in ``RunBlocks.call_visit``'s order."""
        lay = self.layout

        def array(name: str) -> VisitParameter:
            return VisitParameter(name, "ptr", Passed.ARRAY, noalias=True)

        def side(passed: Passed) -> list[VisitParameter]:
            prefix = "src" if passed is Passed.READ_SIDE else "dst"
            return [VisitParameter(f"{prefix}_{b}", "ptr", passed, True, b)
                    for b in lay.buffer_bases()]

        values = [VisitParameter(slot.name, TYPES[slot.dtype], Passed.VALUE)
                  for slot in self.uniforms]
        after = [array(slot.name) for slot in self.series + self.tables]
        if self.program.counters:
            after += [VisitParameter("seed", "i64", Passed.VALUE),
                      VisitParameter("first_sample", "i64", Passed.VALUE),
                      VisitParameter("step0", "i64", Passed.STEP0)]
        if self.program.counters or self.series:
            after.append(array("idx"))
        return [VisitParameter("mp", "i64", Passed.COUNT), *side(Passed.READ_SIDE),
                *[array(a) for a in lay.lanes()], *values, *side(Passed.WRITE_SIDE), *after]

    def define(self, name: str, steps: int, hint: int) -> list[str]:
        lay, p = self.layout, self.program
        hoisted, _ = walk(p, self.renderer.at(Where()), lay.value, suffix="_h", only=lay.launch_ops)
        body: list[str] = []
        current = {key: load_element(body, f"s_{base_name(lay.slots[key])}.0",
                                     lay.slots[key].dtype, f"%src_{base_name(lay.slots[key])}",
                                     "%i") for key in lay.state}
        for key in lay.lane_keys:
            load_element(body, f"l_{base_name(lay.slots[key])}", lay.slots[key].dtype,
                         f"%lane_{base_name(lay.slots[key])}", "%i")
        for i in lay.sample_ops:
            load_element(body, f"h{i}", p.ops[i].dtype, f"%lane_h{i}", "%i")
        alive = load_element(body, "alive.0", DType.BOOL, "%src_alive", "%i")
        if p.counters:
            column = load_element(body, "column", DType.INT64, "%idx", "%i")
            body.append(f"%sample_id = add i64 %first_sample, {column}")
        elif self.series:
            load_element(body, "column", DType.INT64, "%idx", "%i")
        block = "lane"
        skip = self._calls_out()
        exits = [(dict(current), alive, "lane")]  # (state, alive, block) where a lane leaves
        if skip:  # a finished lane skips the rest of the visit (see _calls_out)
            body += [f"br i1 {alive}, label %live.0, label %latch", "live.0:"]
            block = "live.0"
        for k in range(steps):
            alive, block = self._step(k, current, alive, body, block)
            if skip and k + 1 < steps:
                exits.append((dict(current), alive, block))
                body += [f"br i1 {alive}, label %live.{k + 1}, label %latch", f"live.{k + 1}:"]
                block = f"live.{k + 1}"
        latch: list[str] = []
        if skip:
            exits.append((dict(current), alive, block))
            for key in lay.state:
                t = TYPES[lay.slots[key].dtype]
                out = f"%out_{base_name(lay.slots[key])}"
                incoming = ", ".join(f"[{state[key]}, %{at}]" for state, _, at in exits)
                latch.append(f"{out} = phi {t} {incoming}")
                current[key] = out
            incoming = ", ".join(f"[{flag}, %{at}]" for _, flag, at in exits)
            latch.append(f"%alive.out = phi i1 {incoming}")
            alive = "%alive.out"
        for key in lay.state:
            store_element(latch, f"d_{base_name(lay.slots[key])}", lay.slots[key].dtype,
                          current[key], f"%dst_{base_name(lay.slots[key])}", "%i")
        store_element(latch, "d_alive", DType.BOOL, alive, "%dst_alive", "%i")
        parameters = ", ".join(p.definition for p in self.parameters())
        count = INTERLEAVE if lay.step_ops <= INTERLEAVED_STEP else 0
        return [
            f"define i1 @{name}({parameters}) noinline nounwind {{",
            "entry:",
            *indent(self.renderer.block_slots()),
            *indent(expand(hoisted)),
            # mp is a multiple of PAD: said so, LLVM's vector loop needs no remainder loop
            f"  %lanes = and i64 %mp, {-PAD}",
            "  %any = icmp sgt i64 %lanes, 0",
            "  br i1 %any, label %lane, label %done",
            "lane:",
            "  %i = phi i64 [0, %entry], [%i.next, %latch]",
            "  %some = phi i1 [false, %entry], [%some.next, %latch]",
            *indent(body),
            "  br label %latch",
            "latch:",
            *indent(latch),
            f"  %some.next = or i1 %some, {alive}",
            "  %i.next = add nuw nsw i64 %i, 1",
            "  %more = icmp slt i64 %i.next, %lanes",
            f"  br i1 %more, label %lane, label %done, !llvm.loop !{hint}",
            "done:",
            "  %result = phi i1 [false, %entry], [%some.next, %latch]",
            "  ret i1 %result",
            "}",
            "",
            f'!{hint} = distinct !{{!{hint}, !{{!"llvm.loop.interleave.count", i32 {count}}}}}'
            if count else f"!{hint} = distinct !{{!{hint}}}",
        ]

    def _calls_out(self) -> bool:
        """Whether the step calls a function of the C library: LLVM cannot vectorise the
        lane loop then, and a branch around a finished lane's step costs nothing and saves
        its calls (a knocked-out GBM path's ``exp``, ``log``, ``cos``); a vectorised loop
        keeps its selects instead."""
        def calls(op) -> bool:  # a float // or % is a call of fmod; a block, of a loop
            return (op.kind is OpKind.CALL and op.attr not in INTRINSICS) or \
                (op.kind in (OpKind.FLOORDIV, OpKind.MOD) and op.dtype.is_float) or \
                op.kind in AGGREGATES

        return any(calls(op) for i, op in enumerate(self.program.ops)
                   if i not in self.layout.invariant)

    def _step(self, k: int, current: dict, alive: str, body: list[str], block: str,
              ) -> tuple[str, str]:
        """Step ``k`` of the lane (``current``: each state value's register, replaced by the
        selected new value): the new alive flag and the basic block the step ends in. A lane
        that is not live keeps its state through ``select``s, which AVX-512 turns into
        merge-masked operations."""
        lay, p = self.layout, self.program
        renderer = self.renderer.at(Where(draw_counters=("seed", "sample_id", f"step_id.{k}")))
        if p.counters:
            body.append(f"%step_id.{k} = add i64 %step0, {k}")

        def value(key) -> str:
            slot = lay.slots[key]
            if slot.is_uniform:
                return slot.name
            return current[key][1:] if key in current else f"l_{base_name(slot)}"

        before = None if not lay.selected else \
            frozenset(range(len(p.ops))) - lay.flag_ops
        assignments, names = walk(p, renderer, value, suffix=f"_{k}", known=lay.known,
                                  only=before)
        body += expand(assignments)
        for j, r in enumerate(p.row_stores):  # written by a live lane on the write's path
            slot = lay.slots[(r.param, r.component)]
            rows = lay.slots[(r.param, "rows")].name
            stride = lay.slots[(r.param, "row_stride")].name
            tag = f"row.{k}.{j}"
            row = self._as_int64(body, f"%{names[r.row]}", p.ops[r.row].dtype, tag)
            inside = [f"%{tag}.low = icmp sge i64 {row}, 0",
                      f"%{tag}.high = icmp slt i64 {row}, %{rows}",
                      f"%{tag}.in = and i1 %{tag}.low, %{tag}.high",
                      f"%{tag}.go = and i1 %{tag}.in, {alive}"]
            if r.guard is not None:
                inside[-1] = f"%{tag}.live = and i1 %{tag}.in, {alive}"
                inside.append(f"%{tag}.go = and i1 %{tag}.live, %{names[r.guard]}")
            body += [*inside, f"br i1 %{tag}.go, label %{tag}.write, label %{tag}.end",
                     f"{tag}.write:"]
            written = self._converted(body, f"%{names[r.value]}", p.ops[r.value].dtype,
                                      slot.dtype, tag)
            body += [f"%{tag}.base = mul i64 {row}, %{stride}",
                     f"%{tag}.offset = add i64 %{tag}.base, %column"]
            store_element(body, f"{tag}.v", slot.dtype, written, f"%{slot.name}",
                          f"%{tag}.offset")
            body += [f"br label %{tag}.end", f"{tag}.end:"]
            block = f"{tag}.end"
        new = dict(current)
        for s, store in enumerate(p.stores):
            key = (store.param, store.component)
            dtype = lay.slots[key].dtype
            t = TYPES[dtype]
            tag = f"s_{base_name(lay.slots[key])}.{k + 1}"
            if f"%{tag}" in new.values():  # a second store to the same value in the step
                tag = f"{tag}.{s}"
            result = self._converted(body, f"%{names[store.value]}", p.ops[store.value].dtype,
                                     dtype, tag)
            if key in lay.outputs and p.accumulate:
                add = "fadd" if dtype.is_float else "add"
                body.append(f"%{tag}.sum = {add} {t} {new[key]}, {result}")
                result = f"%{tag}.sum"
            body.append(f"%{tag} = select i1 {alive}, {t} {result}, {t} {new[key]}")
            new[key] = f"%{tag}"
        current.update(new)
        if lay.selected:  # the flag from the selected state (Layout._flag_from_selected_state)
            known = {**lay.known, **{i: name for i, name in enumerate(names) if name},
                     **{v: current[key][1:] for v, key in lay.selected.items()}}
            after, names = walk(p, renderer, value, suffix=f"_{k}", known=known,
                                only=lay.flag_ops)
            body += expand(after)
        if p.terminated is None:
            return alive, block
        body += [f"%done.{k} = xor i1 %{names[p.terminated]}, true",
                 f"%alive.{k + 1} = and i1 {alive}, %done.{k}"]
        return f"%alive.{k + 1}", block

    def _as_int64(self, body: list[str], value: str, dtype: DType, tag: str) -> str:
        if dtype in (DType.INT64, DType.UINT64):
            return value
        extend = "zext" if dtype.is_unsigned or dtype is DType.BOOL else "sext"
        body.append(f"%{tag}.wide = {extend} {TYPES[dtype]} {value} to i64")
        return f"%{tag}.wide"

    def _converted(self, body: list[str], value: str, source: DType, target: DType,
                   tag: str) -> str:
        """``value`` as ``target`` (the reference stores ``value.astype(target)``)."""
        if source is target:
            return value
        body.append(f"%{tag}.cast = {self.renderer.convert(value, source, target)}")
        return f"%{tag}.cast"
