"""The lane machinery of a CPU launch: ``eagle_run_blocks`` (``SYMBOL``), one host-team thread's
share of a launch, as LLVM IR written with ``llvm_text.IrBuilder``.

It does what ``cpu.layout``'s docstring describes: claims blocks of samples from a shared
counter (smaller pieces near the end), gathers a block's live lanes into the thread's scratch
with their read-only values and per-sample invariants, calls the visits (``cpu.visit``) from
one side's buffers to the other's until the set reaches its target step, none is live or too
few are, puts finished lanes back and compacts the rest, and pools the stragglers of many blocks
until they line up at one step. The text is the same for every kernel but for the copies of the
kernel's own arrays, written out per array. ``COUNT_LIVE`` counts a set's live lanes; its
definition (``COUNT_LIVE_IR``) goes in the steps' module, where LLVM vectorises it.
"""

from __future__ import annotations

import itertools

from hawk.ir import DType

from ..codegen import walk
from .layout import PAD, PIECES, Layout, base_name
from .llvm_ops import MEMORY_TYPES, LlvmRenderer, Where
from .llvm_text import IrBuilder, expand, indent, load_element, store_element
from .visit import Passed, Visit, VisitParameter

__all__ = ["RunBlocks", "SYMBOL", "COUNT_LIVE", "COUNT_LIVE_IR"]

SYMBOL = "eagle_run_blocks"  # the one external function of a generated module
_C_TYPES = {"int64": "i64", "voidptr": "ptr", "float64": "double", "float32": "float",
            "int32": "i32", "uint32": "i32", "uint64": "i64", "boolean": "i8"}

# The live count of a set's lanes, eight alive flags (bytes 0 or 1) a word: a vectorised loop in
# the steps' module, called after every visit.
COUNT_LIVE = "eagle_count_live"
COUNT_LIVE_IR = f"""\
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



class RunBlocks:
    """``run_blocks``: one thread's share of a launch (``cpu.layout``'s module docstring)."""

    def __init__(self, layout: Layout, renderer: LlvmRenderer, visit: Visit):
        self.layout = layout
        self.renderer = renderer
        self.visit_parameters = visit.parameters()
        self.b = IrBuilder()
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
            load_element(lines, f"g{site}_{base_name(slot)}", slot.dtype, f"%at_{slot.name}", i)
        if p.counters:
            lines.append(f"%sample_id.g{site} = add i64 %first_sample, {i}")
        renderer = self.renderer.at(Where(draw_counters=("seed", f"sample_id.g{site}", "no_step"),
                                          table_pointer="%at_{}"))

        def gathered(key) -> str:
            slot = lay.slots[key]
            return slot.name if slot.is_uniform else f"g{site}_{base_name(slot)}"

        invariants, names = walk(p, renderer, gathered, suffix=f"_g{site}", only=lay.invariant)
        lines += expand(invariants)
        for key in lay.lane_keys if not copied else []:
            slot = lay.slots[key]
            value = load_element(lines, f"l{site}_{base_name(slot)}", slot.dtype,
                                 f"%at_{slot.name}", i)
            store_element(lines, f"ls{site}_{base_name(slot)}", slot.dtype, value,
                          self.array(f"lane_{base_name(slot)}"), at)
        for op in lay.sample_ops:
            store_element(lines, f"hs{site}_{op}", p.ops[op].dtype, f"%{names[op]}",
                          self.array(f"lane_h{op}"), at)
        b.lines += indent(lines)
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
                arguments = [f"{p.type} {self.argument(p, source, target, mp, step0)}"
                             for p in self.visit_parameters]
                b.set("some", b.do(f"call i1 @{name}({', '.join(arguments)})"))
            return emit

        b.if_else(b.get("swapped"), call("b", "a"), call("a", "b"))

    def argument(self, parameter: VisitParameter, source: str, target: str, mp: str,
                 step0: str | None) -> str:
        """What the visit's ``parameter`` is passed, the set being in side ``source``."""
        match parameter.passed:
            case Passed.COUNT:
                return mp
            case Passed.STEP0:
                return step0
            case Passed.READ_SIDE:
                return self.array(f"{source}_{parameter.buffer}")
            case Passed.WRITE_SIDE:
                return self.array(f"{target}_{parameter.buffer}")
            case Passed.ARRAY:
                return self.array(parameter.name)
        return f"%{parameter.name}"  # Passed.VALUE: the machinery's parameter of that name

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
            count = b.smin(PIECES, b.smax(1, share))
            first = b.do(f"atomicrmw add ptr %at_blocks, i64 {count} monotonic")
            lo = b.do(f"mul i64 {first}, {piece}")
            b.set("lo", lo)
            b.set("hi", b.smin("%n", b.do(f"add i64 {lo}, {b.do(f'mul i64 {count}, {piece}')}")))
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
        b.set("mp", b.smin(str(self.layout.shape.block), rounded))
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
                b.set("most", b.smax(b.get("most"), d))

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
