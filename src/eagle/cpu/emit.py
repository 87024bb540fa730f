"""The CPU emitter: a hawk program's launch as LLVM IR, its ``run_blocks`` and the lane visits.

The launch ``cpu.layout`` describes (blocks claimed from a shared counter, a block's live
lanes gathered into the thread's scratch, visits of ``Shape.unroll`` steps per lane, finished
lanes put back and the rest compacted, the stragglers of many blocks pooled), written as LLVM
IR text that llvmlite compiles directly: no Python source, no type inference. What a kernel
contributes is its step (``_Visit``), rendered op by op through ``llvm_ops``; the lane
machinery around it (``_RunBlocks``) is the same text for every kernel but for the copies of
the kernel's own arrays, which it writes out per array.

The visits are straight-line SSA over one lane, inside a counted loop LLVM vectorises; the
machinery keeps its variables in stack slots (``_Builder``) that LLVM promotes to registers.
They are two modules (``emit_modules``), optimised apart: all the time of a launch is in the
visits, and LLVM's full pipeline on the machinery was most of a small kernel's compile.
"""

from __future__ import annotations

import itertools
from contextlib import contextmanager

from hawk.ir import DType, OpKind, Program

from ..codegen import walk
from .layout import PAD, PIECES, Layout, Shape, base_name, shape_for
from .llvm_ops import INTRINSICS, MEMORY_TYPES, TYPES, LlvmRenderer, Unsupported, vector_variants
from .llvm_random import declarations as random_declarations
from .llvm_random import random_ir

__all__ = ["emit_launch", "emit_modules", "SYMBOL", "COUNT_LIVE"]

SYMBOL = "eagle_run_blocks"  # the one external function of a generated module
# Vectors of lanes a visit's loop steps side by side (LLVM's interleave count), where the step
# is short: a step is a chain of dependent operations, and one vector's chain waits on each
# operation's latency. Four in flight, measured interleaved against eagle before this emitter
# (cpu_then_now.py, n = 1e6, 2 threads): the oscillator 1.18x (two: 0.97x, eight: 0.95x, the
# registers spill), Lorenz 1.11x (eight: 0.86x). A longer step has independent operations of
# its own, and LLVM's cost model chooses.
INTERLEAVE = 4
INTERLEAVED_STEP = 24  # ops computed per step, at most
_C_TYPES = {"int64": "i64", "voidptr": "ptr", "float64": "double", "float32": "float",
            "int32": "i32", "uint32": "i32", "uint64": "i64", "boolean": "i8"}


def _load(lines: list[str], name: str, dtype: DType, pointer: str, index: str) -> str:
    """Append the load of element ``index`` of ``pointer`` as register value ``%name``."""
    memory = MEMORY_TYPES[dtype]
    target = f"%{name}" if dtype is not DType.BOOL else f"%{name}.byte"
    lines += [f"%{name}.at = getelementptr {memory}, ptr {pointer}, i64 {index}",
              f"{target} = load {memory}, ptr %{name}.at"]
    if dtype is DType.BOOL:
        lines.append(f"%{name} = trunc i8 {target} to i1")
    return f"%{name}"


def _store(lines: list[str], name: str, dtype: DType, value: str, pointer: str,
           index: str) -> None:
    """Append the store of register value ``value`` to element ``index`` of ``pointer``."""
    memory = MEMORY_TYPES[dtype]
    if dtype is DType.BOOL:
        lines.append(f"%{name}.byte = zext i1 {value} to i8")
        value = f"%{name}.byte"
    lines += [f"%{name}.at = getelementptr {memory}, ptr {pointer}, i64 {index}",
              f"store {memory} {value}, ptr %{name}.at"]


class _Visit:
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
        return f"declare i1 @{name}({', '.join(t.split()[0] for t, _ in self.parameters())})"

    def parameters(self) -> list[tuple[str, str]]:
        """(LLVM type, name) of the visit's parameters, in ``_run_blocks``' call order."""
        lay = self.layout
        arrays = [*lay.buffers("src"), *lay.lanes()]
        values = [(TYPES[slot.dtype], slot.name) for slot in self.uniforms]
        after = [("ptr noalias", slot.name) for slot in self.series + self.tables]
        if self.program.counters:
            after += [("i64", "seed"), ("i64", "first_sample"), ("i64", "step0")]
        if self.program.counters or self.series:
            after.append(("ptr noalias", "idx"))
        return [("i64", "mp"), *[("ptr noalias", a) for a in arrays], *values,
                *[("ptr noalias", a) for a in lay.buffers("dst")], *after]

    def define(self, name: str, steps: int, hint: int) -> list[str]:
        lay, p = self.layout, self.program
        hoisted, _ = walk(p, self.renderer, lay.value, suffix="_h", only=lay.launch_ops)
        body: list[str] = []
        current = {key: _load(body, f"s_{base_name(lay.slots[key])}.0", lay.slots[key].dtype,
                              f"%src_{base_name(lay.slots[key])}", "%i") for key in lay.state}
        for key in lay.lane_keys:
            _load(body, f"l_{base_name(lay.slots[key])}", lay.slots[key].dtype,
                  f"%lane_{base_name(lay.slots[key])}", "%i")
        for i in lay.sample_ops:
            _load(body, f"h{i}", p.ops[i].dtype, f"%lane_h{i}", "%i")
        alive = _load(body, "alive.0", DType.BOOL, "%src_alive", "%i")
        if p.counters:
            column = _load(body, "column", DType.INT64, "%idx", "%i")
            body.append(f"%sample_id = add i64 %first_sample, {column}")
        elif self.series:
            _load(body, "column", DType.INT64, "%idx", "%i")
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
            _store(latch, f"d_{base_name(lay.slots[key])}", lay.slots[key].dtype, current[key],
                   f"%dst_{base_name(lay.slots[key])}", "%i")
        _store(latch, "d_alive", DType.BOOL, alive, "%dst_alive", "%i")
        parameters = ", ".join(f"{t} %{n}" for t, n in self.parameters())
        count = INTERLEAVE if lay.step_ops <= INTERLEAVED_STEP else 0
        return [
            f"define i1 @{name}({parameters}) noinline nounwind {{",
            "entry:",
            *_indent(_expand(hoisted)),
            # mp is a multiple of PAD: said so, LLVM's vector loop needs no remainder loop
            f"  %lanes = and i64 %mp, {-PAD}",
            "  %any = icmp sgt i64 %lanes, 0",
            "  br i1 %any, label %lane, label %done",
            "lane:",
            "  %i = phi i64 [0, %entry], [%i.next, %latch]",
            "  %some = phi i1 [false, %entry], [%some.next, %latch]",
            *_indent(body),
            "  br label %latch",
            "latch:",
            *_indent(latch),
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
        def calls(op) -> bool:  # a float // or % is a call of fmod
            return (op.kind is OpKind.CALL and op.attr not in INTRINSICS) or \
                (op.kind in (OpKind.FLOORDIV, OpKind.MOD) and op.dtype.is_float)

        return any(calls(op) for i, op in enumerate(self.program.ops)
                   if i not in self.layout.invariant)

    def _step(self, k: int, current: dict, alive: str, body: list[str], block: str,
              ) -> tuple[str, str]:
        """Step ``k`` of the lane (``current``: each state value's register, replaced by the
        selected new value): the new alive flag and the basic block the step ends in. A lane
        that is not live keeps its state through ``select``s, which AVX-512 turns into
        merge-masked operations."""
        lay, p, renderer = self.layout, self.program, self.renderer
        renderer.draw_counters = ("seed", "sample_id", f"step_id.{k}")
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
        body += _expand(assignments)
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
            _store(body, f"{tag}.v", slot.dtype, written, f"%{slot.name}", f"%{tag}.offset")
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
            body += _expand(after)
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


def _expand(assignments) -> list[str]:
    """``codegen.walk``'s assignments as lines: an expression's last line is the value."""
    lines = []
    for a in assignments:
        *before, last = a.expression.split("\n")
        lines += [*before, f"%{a.name} = {last}"]
    return lines


def _indent(lines: list[str]) -> list[str]:
    return [line if line.endswith(":") else f"  {line}" for line in lines]


class _Builder:
    """LLVM IR text for the lane machinery: variables in stack slots, structured control flow
    (``if_``, ``loop``, ``break_``, ``continue_``), each temporary named once."""

    def __init__(self):
        self.lines: list[str] = []
        self.slots: list[str] = []
        self.types: dict[str, str] = {}
        self._count = itertools.count()
        self._loops: list[tuple[str, str]] = []

    def fresh(self, hint: str = "r") -> str:
        return f"{hint}{next(self._count)}"

    def do(self, text: str) -> str:
        name = f"%{self.fresh()}"
        self.lines.append(f"  {name} = {text}")
        return name

    def i64(self, opcode: str, x, y) -> str:
        """``x opcode y`` on int64 values (``add``, ``sub``, ``mul``, ``sdiv``...)."""
        return self.do(f"{opcode} i64 {x}, {y}")

    def cmp(self, predicate: str, x, y) -> str:
        """``x predicate y`` on int64 values (``slt``, ``eq``...), an i1."""
        return self.do(f"icmp {predicate} i64 {x}, {y}")

    def not_(self, x: str) -> str:
        return self.do(f"xor i1 {x}, true")

    def both(self, x: str, y: str) -> str:
        return self.do(f"and i1 {x}, {y}")

    def either(self, x: str, y: str) -> str:
        return self.do(f"or i1 {x}, {y}")

    def line(self, text: str) -> None:
        self.lines.append(f"  {text}")

    def label(self, name: str) -> None:
        self.lines.append(f"{name}:")

    def var(self, name: str, kind: str, initial: str | None = None) -> None:
        self.slots.append(f"  %{name}.slot = alloca {kind}")
        self.types[name] = kind
        if initial is not None:
            self.set(name, initial)

    def get(self, name: str) -> str:
        return self.do(f"load {self.types[name]}, ptr %{name}.slot")

    def set(self, name: str, value: str) -> None:
        self.line(f"store {self.types[name]} {value}, ptr %{name}.slot")

    def add(self, name: str, amount: str) -> None:
        self.set(name, self.do(f"add i64 {self.get(name)}, {amount}"))

    def at(self, kind: str, pointer: str, index: str) -> str:
        return self.do(f"getelementptr {kind}, ptr {pointer}, i64 {index}")

    def read(self, kind: str, pointer: str, index: str) -> str:
        return self.do(f"load {kind}, ptr {self.at(kind, pointer, index)}")

    def write(self, kind: str, pointer: str, index: str, value: str) -> None:
        self.line(f"store {kind} {value}, ptr {self.at(kind, pointer, index)}")

    def jump(self, label: str) -> None:
        """A branch, then a fresh block for what follows (unreachable unless labelled)."""
        self.line(f"br label %{label}")
        self.label(self.fresh("after"))

    @contextmanager
    def if_(self, condition: str):
        then, end = self.fresh("then"), self.fresh("end")
        self.line(f"br i1 {condition}, label %{then}, label %{end}")
        self.label(then)
        yield
        self.line(f"br label %{end}")
        self.label(end)

    def if_else(self, condition: str, then, otherwise) -> None:
        yes, no, end = self.fresh("then"), self.fresh("else"), self.fresh("end")
        self.line(f"br i1 {condition}, label %{yes}, label %{no}")
        self.label(yes)
        then()
        self.line(f"br label %{end}")
        self.label(no)
        otherwise()
        self.line(f"br label %{end}")
        self.label(end)

    @contextmanager
    def loop(self):
        """``while True``: leave it with ``break_``; ``continue_`` starts it again."""
        head, end = self.fresh("loop"), self.fresh("exit")
        self.line(f"br label %{head}")
        self.label(head)
        self._loops.append((head, end))
        yield
        self._loops.pop()
        self.line(f"br label %{head}")
        self.label(end)

    def while_(self, condition):
        """``while condition():`` as a ``loop`` that breaks when the condition fails."""
        builder = self

        @contextmanager
        def body():
            with builder.loop():
                with builder.if_(builder.do(f"xor i1 {condition()}, true")):
                    builder.break_()
                yield

        return body()

    def range_(self, name: str, start: str, stop: str):
        """``for name in range(start, stop)`` (``name`` a variable; ``stop`` read once)."""
        builder = self
        self.var(name, "i64") if name not in self.types else None

        @contextmanager
        def body():
            builder.set(name, start)
            with builder.while_(lambda: builder.do(f"icmp slt i64 {builder.get(name)}, "
                                                   f"{stop}")):
                yield builder.get(name)
                builder.add(name, "1")

        return body()

    def break_(self) -> None:
        self.jump(self._loops[-1][1])

    def continue_(self) -> None:
        self.jump(self._loops[-1][0])


class _RunBlocks:
    """``run_blocks``: one thread's share of a launch (``cpu.layout``'s module docstring)."""

    def __init__(self, layout: Layout, renderer: LlvmRenderer, visit: _Visit):
        self.layout = layout
        self.renderer = renderer
        self.visit_parameters = visit.parameters()
        self.b = _Builder()
        self.scratch = {a.name: a for a in layout.scratch()}
        self._takes = itertools.count()

    def array(self, name: str) -> str:
        return f"%at_{name}"

    def kind(self, name: str) -> str:
        return MEMORY_TYPES[self.scratch[name].dtype]

    def state_arrays(self) -> list[tuple[str, str]]:
        """(scratch base name, user's slot name) of each state value."""
        lay = self.layout
        return [(base_name(lay.slots[key]), lay.slots[key].name) for key in lay.state]

    # -- lanes in and out --------------------------------------------------------------------

    def take(self, side: str, at: str, i: str, copied: bool = False) -> None:
        """Lane ``at`` of ``side`` from sample ``i``: its state, its read-only values and its
        per-sample invariants (``copied``: the state and read-only values are there already,
        ``copy_block``)."""
        lay, b, p = self.layout, self.b, self.layout.program
        for base, slot_name in self.state_arrays() if not copied else []:
            kind = self.kind(f"{side}_{base}")
            b.write(kind, self.array(f"{side}_{base}"), at, b.read(kind, f"%at_{slot_name}", i))
        site = next(self._takes)
        lines: list[str] = []
        for key in lay.gathered_keys:
            slot = lay.slots[key]
            _load(lines, f"g{site}_{base_name(slot)}", slot.dtype, f"%at_{slot.name}", i)
        if p.counters:
            lines.append(f"%sample_id.g{site} = add i64 %first_sample, {i}")
        self.renderer.draw_counters = ("seed", f"sample_id.g{site}", "no_step")
        self.renderer.table_pointer = "%at_{}"

        def gathered(key) -> str:
            slot = lay.slots[key]
            return slot.name if slot.is_uniform else f"g{site}_{base_name(slot)}"

        invariants, names = walk(p, self.renderer, gathered, suffix=f"_g{site}",
                                 only=lay.invariant)
        self.renderer.table_pointer = "%{}"
        lines += _expand(invariants)
        for key in lay.lane_keys if not copied else []:
            slot = lay.slots[key]
            value = _load(lines, f"l{site}_{base_name(slot)}", slot.dtype, f"%at_{slot.name}", i)
            _store(lines, f"ls{site}_{base_name(slot)}", slot.dtype, value,
                   self.array(f"lane_{base_name(slot)}"), at)
        for op in lay.sample_ops:
            _store(lines, f"hs{site}_{op}", p.ops[op].dtype, f"%{names[op]}",
                   self.array(f"lane_h{op}"), at)
        b.lines += _indent(lines)
        b.write("i8", self.array(f"{side}_alive"), at, "1")

    def copy_block(self, lo: str, count: str, back: bool) -> None:
        """Samples ``lo`` to ``lo + count`` to lanes 0 to ``count`` of side a (their state and
        read-only values), or (``back``) their state back: one ``memcpy`` per array, where a
        loop of the machinery's (which LLVM does not vectorise here) would copy an element at
        a time."""
        b, lay = self.b, self.layout
        pairs = [(f"a_{base}", slot_name) for base, slot_name in self.state_arrays()]
        if not back:
            pairs += [(f"lane_{base_name(lay.slots[key])}", lay.slots[key].name)
                      for key in lay.lane_keys]
        for scratch, slot_name in pairs:
            size = MEMORY_TYPES[self.scratch[scratch].dtype]
            width = {"i8": 1, "i32": 4, "float": 4}.get(size, 8)
            user = b.at(size, f"%at_{slot_name}", lo)
            lanes, nbytes = self.array(scratch), b.i64("mul", count, width)
            target, source = (user, lanes) if back else (lanes, user)
            b.line(f"call void @llvm.memcpy.p0.p0.i64(ptr {target}, ptr {source}, "
                   f"i64 {nbytes}, i1 false)")

    def put(self, side: str, j: str, i: str) -> None:
        """Lane ``j`` of ``side``'s state back to sample ``i``."""
        b = self.b
        for base, slot_name in self.state_arrays():
            kind = self.kind(f"{side}_{base}")
            b.write(kind, f"%at_{slot_name}", i, b.read(kind, self.array(f"{side}_{base}"), j))

    def copy(self, names: list[str], source: str, target: str) -> None:
        """Element ``source`` of each scratch array in ``names`` to element ``target``."""
        b = self.b
        for name in names:
            kind = self.kind(name)
            b.write(kind, self.array(name), target, b.read(kind, self.array(name), source))

    def side_arrays(self, side: str) -> list[str]:
        return [f"{side}_{base}" for base, _ in self.state_arrays()] + [f"{side}_alive"]

    def lane_arrays(self) -> list[str]:
        return self.layout.lanes()

    def compact(self) -> None:
        """Side a's live lanes moved to its front, the finished ones put back."""
        b = self.b
        m = b.get("m")
        b.set("k", "0")
        with b.range_("j", "0", m) as j:
            alive = b.do(f"trunc i8 {b.read('i8', self.array('a_alive'), j)} to i1")
            k = b.get("k")

            def keep():
                b.write("i64", self.array("idx"), k, b.read("i64", self.array("idx"), j))
                self.copy([*self.side_arrays("a"), *self.lane_arrays()], j, k)
                b.add("k", "1")

            def put_back():
                i = b.read("i64", self.array("idx"), j)
                self.put("a", j, i)
                b.write("i8", "%at_flags", i, "1")

            b.if_else(alive, keep, put_back)
        b.set("m", b.get("k"))

    # -- visits ------------------------------------------------------------------------------

    def call_visit(self, name: str) -> None:
        """``some = name(...)`` from the side the set is in (``swapped``: side b)."""
        b, lay = self.b, self.layout
        mp = b.get("mp")
        step0 = b.do(f"add i64 %first_step, {b.get('d')}") if lay.program.counters else None

        def call(source: str, target: str):
            def emit():
                arguments = []
                for kind, parameter in self.visit_parameters:
                    if parameter == "mp":
                        value = mp
                    elif parameter.startswith("src_"):
                        value = self.array(source + parameter[3:])
                    elif parameter.startswith("dst_"):
                        value = self.array(target + parameter[3:])
                    elif parameter.startswith("lane_") or parameter == "idx":
                        value = self.array(parameter)
                    elif parameter == "step0":
                        value = step0
                    elif kind.startswith("ptr"):  # a Series' array or a table's data
                        value = f"%at_{parameter}"
                    else:
                        value = f"%{parameter}"
                    arguments.append(f"{kind.split()[0]} {value}")
                b.set("some", b.do(f"call i1 @{name}({', '.join(arguments)})"))
            return emit

        b.if_else(b.get("swapped"), call("b", "a"), call("a", "b"))

    def flip(self) -> None:
        b = self.b
        b.set("swapped", b.do(f"xor i1 {b.get('swapped')}, true"))

    # -- the function ------------------------------------------------------------------------

    def define(self) -> list[str]:
        lay, b = self.layout, self.b
        piece = lay.shape.block // PIECES
        for name in ("npool", "live", "most", "q", "m", "hi", "d", "target", "park", "lo",
                     "left", "q0", "q1", "k", "mp", "npieces"):
            b.var(name, "i64", "0")
        for name in ("in_pool", "dense", "swapped", "some"):
            b.var(name, "i1", "false")
        b.var("source", "ptr", self.array("idx"))
        b.set("npieces", b.do(f"sdiv i64 {b.do(f'add i64 %n, {piece - 1}')}, {piece}"))
        with b.loop():
            b.if_else(b.get("in_pool"), self.pick_from_pool, self.pick_block)
            with b.range_("qq", b.get("q0"), b.get("q1")) as qq:
                i = b.read("i64", b.get("source"), qq)
                m = b.get("m")
                b.write("i64", self.array("idx"), m, i)
                self.take("a", m, i)
                b.add("m", "1")
            self.advance()
            self.finish()
        uniforms = [f"  %{s.name} = icmp ne i8 %{s.name}.byte, 0" for s in lay.program.slots
                    if s.is_uniform and s.dtype is DType.BOOL]
        # Every array is its own (the binding refuses a written array that shares memory
        # with another), so LLVM copies lanes without checking for overlaps at run time.
        parameters = []
        for name, kind in lay.parameters():
            value = f"%{name}.byte" if kind == "boolean" else f"%{name}"
            parameters.append(f"{_C_TYPES[kind]}{' noalias' if kind == 'voidptr' else ''} "
                              f"{value}")
        return [f"define void @{SYMBOL}({', '.join(parameters)}) nounwind {{", "entry:",
                *b.slots, *uniforms, *b.lines, "  unreachable", "}", ""]

    def pick_block(self) -> None:
        """The next samples no other thread has, while the pool has room for their lanes: a
        block at a time, and near the end smaller pieces, so threads finish together."""
        b, lay = self.b, self.layout
        shape = lay.shape
        block, piece, park = shape.block, shape.block // PIECES, shape.park
        b.set("lo", "%n")
        room = b.cmp("sle", b.i64("add", b.get("npool"), block), "%mine")
        with b.if_(room):
            claimed = b.do("atomicrmw add ptr %at_blocks, i64 0 monotonic")
            left = b.do(f"sub i64 {b.get('npieces')}, {claimed}")
            share = b.do(f"sdiv i64 {left}, {b.do('mul i64 %nthreads, 2')}")
            count = _smin(b, PIECES, _smax(b, 1, share))
            first = b.do(f"atomicrmw add ptr %at_blocks, i64 {count} monotonic")
            lo = b.do(f"mul i64 {first}, {piece}")
            b.set("lo", lo)
            b.set("hi", _smin(b, "%n", b.do(f"add i64 {lo}, {b.do(f'mul i64 {count}, {piece}')}")))
        with b.if_(b.do(f"icmp sge i64 {b.get('lo')}, %n")):
            with b.if_(b.do(f"icmp eq i64 {b.get('npool')}, 0")):
                b.write("i64", "%at_out", "0", b.get("live"))
                b.write("i64", "%at_out", "1", b.get("most"))
                b.line("ret void")
                b.label(b.fresh("after"))
            self.sort_pool()
            b.set("in_pool", "true")
            b.continue_()
        lo, hi = b.get("lo"), b.get("hi")
        b.set("m", "0")
        with b.range_("i", lo, hi) as i:
            flag = b.read("i8", "%at_flags", i)
            b.add("m", b.do(f"zext i1 {b.do(f'icmp eq i8 {flag}, 0')} to i64"))
        b.set("d", "0")
        b.set("target", "%nsteps")
        b.set("park", str(park))
        m = b.get("m")
        dense = b.do(f"icmp eq i64 {m}, {b.do(f'sub i64 {hi}, {lo}')}")
        b.set("dense", dense)

        def contiguous():  # every lane live: samples lo..hi in order
            self.copy_block(lo, m, back=False)
            with b.range_("j", "0", m) as j:
                i = b.do(f"add i64 {lo}, {j}")
                b.write("i64", self.array("idx"), j, i)
                self.take("a", j, i, copied=True)
            b.set("q0", "0")
            b.set("q1", "0")

        def scattered():
            b.set("m", "0")
            with b.range_("i", lo, hi) as i:
                with b.if_(b.do(f"icmp eq i8 {b.read('i8', '%at_flags', i)}, 0")):
                    b.write("i64", self.array("idx"), b.get("m"), i)
                    b.add("m", "1")
            count = b.get("m")
            with b.if_(b.do(f"icmp slt i64 {count}, {park}")):  # few live lanes: to the pool
                with b.range_("j", "0", count) as j:
                    npool = b.get("npool")
                    b.write("i64", self.array("pool"), npool,
                            b.read("i64", self.array("idx"), j))
                    b.write("i64", self.array("pool_steps"), npool, "0")
                    b.add("npool", "1")
                b.set("m", "0")
                b.continue_()
            b.set("source", self.array("idx"))
            b.set("q0", "0")
            b.set("q1", count)
            b.set("m", "0")

        b.if_else(dense, contiguous, scattered)

    def pick_from_pool(self) -> None:
        """The pool's next lanes: those at the step of its first, up to a block's room."""
        b, lay = self.b, self.layout
        with b.if_(b.do(f"icmp eq i64 {b.get('m')}, 0")):
            with b.if_(b.do(f"icmp eq i64 {b.get('q')}, {b.get('npool')}")):
                b.set("npool", "0")  # the pool done: more blocks, if any are left
                b.set("q", "0")
                b.set("in_pool", "false")
                b.continue_()
            b.set("d", b.read("i64", self.array("pool_steps"), b.get("q")))
        q = b.get("q")
        b.set("q1", q)
        d, npool = b.get("d"), b.get("npool")
        room = b.do(f"sub i64 {lay.shape.block}, {b.get('m')}")

        def more():
            q1 = b.get("q1")
            inside = b.do(f"icmp slt i64 {q1}, {npool}")
            # the step read only where q1 is inside: a select of a load past the pool's end
            # would still read it
            at = b.do(f"select i1 {inside}, i64 {q1}, i64 0")
            same = b.do(f"icmp eq i64 {b.read('i64', self.array('pool_steps'), at)}, {d}")
            fits = b.do(f"icmp slt i64 {b.do(f'sub i64 {q1}, {q}')}, {room}")
            return b.do(f"and i1 {inside}, {b.do(f'and i1 {fits}, {same}')}")

        with b.while_(more):
            b.add("q1", "1")
        q1 = b.get("q1")
        b.set("source", self.array("pool"))
        b.set("q0", q)
        b.set("q", q1)
        b.set("dense", "false")
        inside = b.do(f"icmp slt i64 {q1}, {npool}")
        at = b.do(f"select i1 {inside}, i64 {q1}, i64 0")
        next_step = b.read("i64", self.array("pool_steps"), at)
        later = b.do(f"and i1 {inside}, {b.do(f'icmp sgt i64 {next_step}, {d}')}")
        b.set("target", b.do(f"select i1 {later}, i64 {next_step}, i64 %nsteps"))
        b.set("park", "0")

    def sort_pool(self) -> None:
        """The pool's lanes sorted in place by their steps (a shell sort: equal steps in any
        order, a sample's values do not depend on its lane)."""
        b = self.b
        pool, steps = self.array("pool"), self.array("pool_steps")
        npool = b.get("npool")
        b.var("gap", "i64", "1")
        def wider() -> str:
            return b.i64("add", b.i64("mul", b.get("gap"), 3), 1)

        with b.while_(lambda: b.cmp("slt", wider(), npool)):
            b.set("gap", wider())
        with b.while_(lambda: b.do(f"icmp sgt i64 {b.get('gap')}, 0")):
            gap = b.get("gap")
            with b.range_("js", gap, npool) as j:
                key, item = b.read("i64", steps, j), b.read("i64", pool, j)
                b.var("at", "i64") if "at" not in b.types else None
                b.set("at", j)

                def behind():
                    at = b.get("at")
                    inside = b.do(f"icmp sge i64 {at}, {gap}")
                    earlier = b.do(f"select i1 {inside}, i64 {b.do(f'sub i64 {at}, {gap}')}, "
                                   "i64 0")
                    return b.both(inside, b.cmp("sgt", b.read("i64", steps, earlier), key))

                with b.while_(behind):
                    at = b.get("at")
                    earlier = b.do(f"sub i64 {at}, {gap}")
                    b.write("i64", steps, at, b.read("i64", steps, earlier))
                    b.write("i64", pool, at, b.read("i64", pool, earlier))
                    b.set("at", earlier)
                at = b.get("at")
                b.write("i64", steps, at, key)
                b.write("i64", pool, at, item)
            b.set("gap", b.do(f"sdiv i64 {b.get('gap')}, 3"))

    def advance(self) -> None:
        """The set, all at step d, until target, none live, or fewer than park live."""
        b, lay = self.b, self.layout
        unroll = lay.shape.unroll
        b.set("swapped", "false")
        b.set("left", b.get("m"))
        with b.loop():
            with b.while_(lambda: b.do(f"icmp slt i64 {b.get('d')}, {b.get('target')}")):
                self.pad()
                if unroll > 1:
                    self.stepped(unroll)
                else:
                    self.one_step()
                    self.stop_if_none_live()
                self.count_live()
                left, m = b.get("left"), b.get("m")
                with b.if_(b.cmp("slt", b.i64("mul", left, 4), b.i64("mul", m, 3))):
                    b.break_()
            with b.if_(b.get("swapped")):  # the set back in side a
                with b.range_("j", "0", b.get("m")) as j:
                    for a, bb in zip(self.side_arrays("a"), self.side_arrays("b"), strict=True):
                        kind = self.kind(a)
                        b.write(kind, self.array(a), j, b.read(kind, self.array(bb), j))
                b.set("swapped", "false")
            left = b.get("left")
            done = b.do(f"icmp eq i64 {left}, 0")
            reached = b.do(f"icmp sge i64 {b.get('d')}, {b.get('target')}")
            few = b.do(f"icmp slt i64 {left}, {b.get('park')}")
            with b.if_(b.do(f"or i1 {done}, {b.do(f'or i1 {reached}, {few}')}")):
                b.break_()
            b.set("dense", "false")  # a quarter of the lanes have finished: the rest forward
            self.compact()

    def stepped(self, unroll: int) -> None:
        """A visit of ``unroll`` steps; the last one again a step at a time where the set's
        last lane finished in it (the same operations on the same values: the same bits)."""
        b = self.b

        def room() -> str:
            return b.cmp("sge", b.i64("sub", b.get("target"), b.get("d")), unroll)

        def unrolled():
            self.call_visit("eagle_visit_unrolled")
            with b.if_(b.get("some")):
                self.flip()
                b.add("d", str(unroll))

        b.if_else(room(), unrolled, lambda: b.set("some", "true"))
        with b.if_(b.either(b.not_(b.get("some")), b.not_(room()))):
            b.set("some", "true")

            def going() -> str:
                return b.both(b.get("some"), b.cmp("slt", b.get("d"), b.get("target")))

            with b.while_(going):
                self.one_step()
            self.stop_if_none_live()

    def one_step(self) -> None:
        """A visit of one step, from the side the set is in to the other."""
        self.call_visit("eagle_visit_one")
        self.flip()
        self.b.add("d", "1")

    def stop_if_none_live(self) -> None:
        """Out of the stepping loop when the visit just made left no lane live."""
        b = self.b
        with b.if_(b.not_(b.get("some"))):
            b.set("left", "0")
            b.break_()

    def pad(self) -> None:
        """Lanes ``m`` to ``mp`` of the set's side: copies of lane 0, never live, never put
        back, so that LLVM's vector loop covers every lane."""
        b = self.b
        m = b.get("m")
        rounded = b.i64("mul", b.i64("sdiv", b.i64("add", m, PAD - 1), PAD), PAD)
        b.set("mp", _smin(b, str(self.layout.shape.block), rounded))
        swapped = b.get("swapped")
        with b.range_("j", m, b.get("mp")) as j:
            def lane(side):
                def emit():
                    b.write("i8", self.array(f"{side}_alive"), j, "0")
                    self.copy(self.side_arrays(side)[:-1], "0", j)
                return emit

            b.if_else(swapped, lane("b"), lane("a"))
            self.copy(self.lane_arrays(), "0", j)

    def count_live(self) -> None:
        """``left``: how many of the set's lanes are live, eight flags a word (the flags are
        bytes 0 or 1, and the padding lanes are never live)."""
        b = self.b
        words = b.do(f"select i1 {b.get('swapped')}, ptr {self.array('b_alive')}, "
                     f"ptr {self.array('a_alive')}")
        count = b.i64("sdiv", b.i64("add", b.get("m"), 7), 8)
        b.set("left", b.do(f"call i64 @{COUNT_LIVE}(ptr {words}, i64 {count})"))

    def finish(self) -> None:
        """The set's lanes back to their samples, or on into the pool, or compacted."""
        b = self.b

        def put_back(dense_lanes: bool):
            def emit():
                lo = b.get("lo")
                if dense_lanes:
                    self.copy_block(lo, b.get("m"), back=True)
                with b.range_("j", "0", b.get("m")) as j:
                    i = b.do(f"add i64 {lo}, {j}") if dense_lanes else \
                        b.read("i64", self.array("idx"), j)
                    if not dense_lanes:
                        self.put("a", j, i)
                    alive = b.read("i8", self.array("a_alive"), j)
                    b.write("i8", "%at_flags", i, b.do(f"xor i8 {alive}, 1"))
                    b.add("left", b.do(f"zext i8 {alive} to i64"))
            return emit

        def settle():
            b.set("left", "0")
            b.if_else(b.get("dense"), put_back(True), put_back(False))
            left, d = b.get("left"), b.get("d")
            over = b.do(f"or i1 {b.do(f'icmp eq i64 {left}, 0')}, "
                        f"{b.do(f'icmp eq i64 {d}, %nsteps')}")

            def count():
                b.add("live", left)
                b.set("most", _smax(b, b.get("most"), d))

            def to_pool():  # a few lanes left: on in the pool with other blocks' stragglers
                with b.range_("j", "0", b.get("m")) as j:
                    alive = b.read("i8", self.array("a_alive"), j)
                    with b.if_(b.do(f"icmp ne i8 {alive}, 0")):
                        npool = b.get("npool")
                        b.write("i64", self.array("pool"), npool,
                                b.read("i64", self.array("idx"), j))
                        b.write("i64", self.array("pool_steps"), npool, d)
                        b.add("npool", "1")

            b.if_else(over, count, to_pool)
            b.set("m", "0")

        left, d = b.get("left"), b.get("d")
        ends = b.do(f"or i1 {b.do(f'icmp eq i64 {left}, 0')}, "
                    f"{b.do(f'icmp eq i64 {d}, %nsteps')}")
        ends = b.either(ends, b.not_(b.get("in_pool")))
        b.if_else(ends, settle, self.compact)


def _smin(b: _Builder, x, y) -> str:
    return b.do(f"select i1 {b.do(f'icmp slt i64 {x}, {y}')}, i64 {x}, i64 {y}")


def _smax(b: _Builder, x, y) -> str:
    return b.do(f"select i1 {b.do(f'icmp sgt i64 {x}, {y}')}, i64 {x}, i64 {y}")


# The live count of a set's lanes, eight alive flags (bytes 0 or 1) a word: a vectorised loop in
# the steps' module, called after every visit.
COUNT_LIVE = "eagle_count_live"
_COUNT_LIVE = f"""\
define i64 @{COUNT_LIVE}(ptr noalias %words, i64 %count) noinline nounwind {{
entry:
  %any = icmp sgt i64 %count, 0
  br i1 %any, label %word, label %done
word:
  %w = phi i64 [0, %entry], [%w.next, %word]
  %left = phi i64 [0, %entry], [%left.next, %word]
  %at = getelementptr i64, ptr %words, i64 %w
  %flags = load i64, ptr %at
  %spread = mul i64 %flags, {0x0101010101010101}
  %top = lshr i64 %spread, 56
  %left.next = add i64 %left, %top
  %w.next = add nuw nsw i64 %w, 1
  %more = icmp slt i64 %w.next, %count
  br i1 %more, label %word, label %done
done:
  %result = phi i64 [0, %entry], [%left.next, %word]
  ret i64 %result
}}
"""


def emit_modules(program: Program, shape: Shape | None = None) -> tuple[str, str]:
    """The LLVM IR of ``program``'s launch as two modules that ``native.compile_ir`` optimises
    apart and links: the steps (the visits and the live count, where the time goes: LLVM's
    full pipeline, vectorised) and the lane machinery (``eagle_run_blocks``, ``SYMBOL``: a
    C function of the parameters ``layout.launch_interface`` describes, run once per set or
    per lane per launch; promoted to registers and simplified only, which takes a third of
    the full pipeline's time). ``shape``: ``shape_for(program)``; tests pass small blocks to
    reach every path with few samples. An op the table cannot render is ``Unsupported``,
    naming the kernel and the op."""
    layout = Layout(program, shape or shape_for(program))
    renderer = LlvmRenderer(program)
    visit = _Visit(layout, renderer)
    # (name, steps, loop hint's metadata number) of each visit the machinery calls
    visits = [("eagle_visit_one", 1, 2)]
    if layout.shape.unroll > 1:
        visits.append(("eagle_visit_unrolled", layout.shape.unroll, 1))
    try:
        steps = [line for name, count, hint in visits
                 for line in visit.define(name, count, hint)]
        machinery = _RunBlocks(layout, renderer, visit).define()
    except Unsupported as exc:
        raise Unsupported(f"kernel {program.name!r}: {exc}") from None
    draws = {d.split(":", 1)[1] for d in renderer.declarations if d.startswith("draw:")}
    declarations = {d for d in renderer.declarations if not d.startswith("draw:")}
    declarations |= set(random_declarations(draws).values())
    header = f"; Generated by eagle from hawk kernel {program.name!r}. Do not edit."
    steps_module = "\n".join([header, "; The steps.", "", *sorted(declarations), "",
                              random_ir(draws), *steps, _COUNT_LIVE,
                              *vector_variants(renderer.libm_calls)])
    machinery_module = "\n".join([
        header, "; The lane machinery.", "", *sorted(declarations),
        *[visit.declaration(name) for name, _, _ in visits],
        f"declare i64 @{COUNT_LIVE}(ptr, i64)",
        "declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)", "", *machinery])
    return steps_module, machinery_module


def emit_launch(program: Program, shape: Shape | None = None) -> str:
    """``emit_modules(program, shape)`` as one text: what the cache keeps for the reader and
    the golden files hold."""
    return "\n".join(emit_modules(program, shape))
