"""The CPU emitter: a hawk program as the source of the Numba functions that run a launch.

A launch advances every live sample by up to ``nsteps`` steps and reports how many samples are
still live and how many steps the slowest one took; ``run_blocks`` is one host-team thread's
share of it (``cpu.team``). Its shape was chosen by measurement against the fastest kernels we
could write by hand (``benchmarks/cpu_loop.py``, ``peer_numba.py``):

- samples are cut into blocks (``Shape.block``), which the threads claim one at a time from a
  shared counter (``atomics.claim``), so a thread that is slowed down takes fewer, and near
  the end in smaller pieces (``PIECES``), so that the threads finish together; a block's live
  lanes are gathered into the thread's scratch (which stays in L2) with their read-only
  values and per-sample invariants (``dt * omega * omega``) computed once there;
- a *visit* is one pass over the scratch lanes taking ``Shape.unroll`` steps per lane, written
  out, the lane's values in registers; the lane loop is innermost and branch-free, so LLVM
  vectorises it. A finished lane is frozen by selects written ``x = new if alive else x``,
  which AVX-512 turns into merge-masked operations, and the termination flag is read from the
  state after the selects (``_Layout._flag_from_selected_state``), so that its compare folds
  into the masks too: nothing per lane but the step itself;
- no per-lane step counter: the lanes of a set are all at the same step. A visit reads one
  copy of the state and writes the other (ping-pong), so when a visit ends with no lane live,
  the set's last lane finished in it, and that visit is redone from its start one step at a
  time to find the exact step (same operations, same values: the same bits);
- finished lanes are put back and the rest compacted whenever a quarter have finished, so the
  work follows the useful sample-steps (Lorenz, whose samples stop at scattered steps: 1.15x
  over compacting at half; at an eighth no better); a block's last few live lanes
  (``Shape.park``) go to its thread's pool, in which lanes of many blocks are stepped until
  they line up at the same step and then share one dense set (1% of samples 100x longer than
  the rest, scattered: as fast as the same targets sorted). A thread whose pool has no room
  for another block's lanes (``mine``, which the caller sizes) finishes its pool before it
  claims the next block;
- a kernel that draws random numbers takes one step per visit (``SHAPE_DRAWING``): its step
  is long, and every written-out step would be another copy of each draw to compile;
- a visit is its own small function (LLVM vectorises it reliably), called from two sites, one
  per side the set is in: swapping the sides' array variables instead is reference-count
  traffic at every visit (6-12% of the oscillator's launch). LLVM does not inline the visits
  (each is compiled once, and called); everything else is one function, ``run_blocks``,
  whose first compile is most of a kernel's, so it is kept small: one copy-back and one
  live count per set, and a shell sort for the pool (Numba's ``argsort``
  alone compiled in about a second).

No fastmath and no FMA contraction: results equal the NumPy reference executor bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

from hawk.ir import COMPARISONS, COUNTER_ARGUMENTS, DType, Op, OpKind, Program, Role
from hawk.passes import Stage, classify
from hawk.reference import IN_DOUBLE

from ..codegen import ExpressionRenderer, invariant_ops, stale_reads, walk
from .helpers import HELPERS, RANDOM_HELPERS, SHIFT_HELPERS

__all__ = ["emit_launch", "launch_interface", "LaunchInterface", "PIECES", "ScratchArray", "Shape",
           "SHAPE", "SHAPE_DRAWING", "SHAPE_SHORT", "SHAPE_LONG", "shape_for"]

PAD = 16  # lanes are padded to a multiple of this, so LLVM's vector loop covers them
PIECES = 8  # threads claim samples in pieces of a block over this (a block at a time at first)


@dataclass(frozen=True)
class Shape:
    """How a launch cuts its work: ``block`` samples per block (a thread's scratch holds one
    block, and stays in L2), ``unroll`` steps written out per lane visit, and ``park``: a
    block with fewer live lanes than this sends them to the thread's pool."""

    block: int = 8192
    unroll: int = 4

    def __post_init__(self):
        if self.block % PAD or self.block <= 0 or self.unroll < 1:
            raise ValueError(f"block must be a positive multiple of {PAD} and unroll >= 1, "
                             f"got {self}")

    @property
    def park(self) -> int:
        return max(1, self.block // 16)


# 8192-lane blocks (a thread's scratch: about 0.5 MB of float64 state, in L2): on the
# oscillator's launch 0.98x the lane peer against 0.94x at 4096 (the per-visit costs are paid
# half as often); Lorenz, the spread and the scattered tail the same or better, the `if`
# kernel within the noise (benchmarks/cpu_loop.py's workloads, 1 thread, n = 1e6).
SHAPE = Shape(block=8192, unroll=4)
# A long step (a program that draws random numbers: a Philox block per draw; or a long body, such
# as an adaptive Runge-Kutta step): writing steps out gains nothing, and each written-out step is
# another copy of the body to compile. Six draws: 51 s of compile at unroll 8, a few seconds at 1.
# The Dormand-Prince Lorenz kernel of hawk.ode (351 ops), 1 thread: unroll 4 compiled in 21 s and
# ran 11 M steps/s, unroll 1 in 8 s and 15 M steps/s.
SHAPE_DRAWING = Shape(block=4096, unroll=1)
SHAPE_LONG = SHAPE_DRAWING
#: a step of more ops than this is a long step
LONG_STEP = 64


# A short step (at most SHORT_STEP ops computed per step) is written out 8 times per visit:
# the visit's own costs (the call, the live count, writing the state out and reading it back)
# are paid half as often. On the oscillator's spread (6 ops) 1.00x the lane peer against 0.90x
# at unroll 4 (uniform: the same); the bouncing ball's `if` (13 ops) 0.86x against 1.02x at 4
# (register pressure), Lorenz (17 ops) slightly slower too.
SHORT_STEP = 8
SHAPE_SHORT = Shape(block=8192, unroll=8)


def shape_for(program: Program) -> Shape:
    """The launch shape ``emit_launch`` uses for ``program`` by default."""
    if program.counters:
        return SHAPE_DRAWING
    invariant = invariant_ops(program)
    step = sum(1 for i, op in enumerate(program.ops)
               if i not in invariant and op.kind is not OpKind.LOAD)
    if step > LONG_STEP:
        return SHAPE_LONG
    return SHAPE_SHORT if step <= SHORT_STEP else SHAPE


_NUMPY_TYPES = {DType.BOOL: "np.bool_", DType.INT64: "np.int64",
                DType.FLOAT32: "np.float32", DType.FLOAT64: "np.float64",
                DType.INT32: "np.int32", DType.UINT32: "np.uint32",
                DType.UINT64: "np.uint64"}  # fmt: skip
# Exact or rounding-free functions go through NumPy's scalar versions (floor/ceil return floats,
# as in C); the rest through math, which Numba lowers to the C library's functions.
_FUNCTIONS = {"sqrt": "math.sqrt", "exp": "math.exp", "log": "math.log", "sin": "math.sin",
              "cos": "math.cos", "tan": "math.tan", "tanh": "math.tanh", "fabs": "abs",
              "floor": "np.floor", "ceil": "np.ceil", "atan2": "math.atan2",
              "pow": "math.pow", "hypot": "math.hypot", "asin": "math.asin",
              "acos": "math.acos", "atan": "math.atan", "erf": "math.erf",
              "log10": "math.log10", "log1p": "math.log1p", "expm1": "math.expm1",
              "cbrt": "np.cbrt", "sinh": "math.sinh", "cosh": "math.cosh"}  # fmt: skip


_NUMBA_TYPES = {DType.BOOL: "boolean", DType.INT64: "int64", DType.FLOAT32: "float32",
                DType.FLOAT64: "float64", DType.INT32: "int32", DType.UINT32: "uint32",
                DType.UINT64: "uint64"}  # fmt: skip
_BITS = {DType.FLOAT32: 32, DType.FLOAT64: 64}


@dataclass(frozen=True)
class ScratchArray:
    """One array of a launch thread's scratch: a lane of a block per element, or (``pool``)
    one per pooled lane (``mine`` elements, at least a block's)."""

    name: str
    dtype: DType
    pool: bool = False

# Numba computes 32-bit integers in 64 bits: their results are wrapped back to 32 bits.
_NARROW = {DType.INT32, DType.UINT32}
_NOT_WRAPPED = {OpKind.CONST, OpKind.CAST, OpKind.SELECT, OpKind.MIN, OpKind.MAX}


class NumbaRenderer(ExpressionRenderer):
    formats = {
        **ExpressionRenderer.formats,
        OpKind.FLOORDIV: "({0} // {1})", OpKind.MOD: "({0} % {1})", OpKind.ABS: "abs({0})",
        OpKind.AND: "({0} & {1})", OpKind.OR: "({0} | {1})", OpKind.NOT: "(not {0})",
        OpKind.BITAND: "({0} & {1})", OpKind.BITOR: "({0} | {1})", OpKind.BITXOR: "({0} ^ {1})",
        OpKind.INVERT: "(~{0})",
    }  # fmt: skip

    def literal(self, value, dtype: DType) -> str:
        if dtype is DType.BOOL:
            return repr(bool(value))
        if dtype.is_integer:
            return f"{_NUMPY_TYPES[dtype]}({int(value)})"
        text = self.float_text(value)
        if text in ("nan", "inf", "-inf"):
            text = f"np.{text}" if text != "-inf" else "-np.inf"
        return f"{_NUMPY_TYPES[dtype]}({text})"

    def cast(self, arg: str, dtype: DType) -> str:
        return f"{_NUMPY_TYPES[dtype]}({arg})"

    def call(self, name: str, args: list[str], dtype: DType) -> str:
        if dtype is DType.FLOAT32 and name in IN_DOUBLE:  # as the reference: no sinf
            args = [f"np.float64({a})" for a in args]
        value = f"{_NUMPY_TYPES[dtype]}({_FUNCTIONS[name]}({', '.join(args)}))"
        return f"canonical_nan{_BITS[dtype]}({value})"

    def render(self, op: Op, args: list[str]) -> str:
        value = self._render(op, args)
        if op.dtype in _NARROW and op.kind not in _NOT_WRAPPED and op.kind not in COMPARISONS:
            return f"{_NUMPY_TYPES[op.dtype]}({value})"
        return value

    def _render(self, op: Op, args: list[str]) -> str:
        if op.kind in (OpKind.LSHIFT, OpKind.RSHIFT):
            zero, bits = self.literal(0, op.dtype), self.literal(op.dtype.bits, op.dtype)
            if op.kind is OpKind.LSHIFT:
                return f"shift_left({args[0]}, {args[1]}, {zero}, {bits})"
            if op.dtype.is_unsigned:
                return f"shift_right({args[0]}, {args[1]}, {zero}, {bits})"
            top = self.literal(op.dtype.bits - 1, op.dtype)  # a >> top: the sign, 0 or -1
            return f"shift_right_signed({args[0]}, {args[1]}, {zero}, {bits}, {top})"
        if op.kind is OpKind.FLOORDIV and op.dtype.is_integer and not op.dtype.is_unsigned:
            return f"int_floordiv({args[0]}, {args[1]})"
        if op.kind is OpKind.SAMPLE_INDEX:
            return "sample_id"
        if op.kind is OpKind.STEP_INDEX:
            return "step_id"
        if op.kind is OpKind.DRAW:
            distribution, position = op.attr
            counters = f"seed, sample_id, step_id, np.uint64({position})"
            if distribution == "randint":
                return f"draw_randint({counters}, {args[0]}, {args[1]})"
            if distribution == "uniform":
                return f"draw_uniform{_BITS[op.dtype]}({counters})"
            value = f"draw_{distribution}64({counters})"  # float32: the float64 draw, rounded
            return value if op.dtype is DType.FLOAT64 else f"np.float32({value})"
        return super().render(op, args)


class _Layout:
    """Where each value of a lane visit comes from, and the names the generated code gives it.

    A sample's *state* (what the step stores: Mutable and Out values) is carried in two scratch
    buffers, ``a_*`` and ``b_*``, that visits read from one and write to the other; its
    read-only per-sample values and per-sample invariants (``Stage.SAMPLE``: ``dt * omega *
    omega``) are computed once per launch into lane arrays ``lane_*``; values shared by every
    sample are arguments, and invariants of them (``Stage.LAUNCH``) are computed once a visit.
    """

    def __init__(self, program: Program, shape: Shape):
        p = self.program = program
        self.shape = shape
        self.renderer = NumbaRenderer()
        self.slots = {slot.key: slot for slot in p.slots}
        self.state = sorted({(s.param, s.component) for s in p.stores}, key=str)
        self.outputs = {(s.param, s.component) for s in p.stores
                        if p.param(s.param).role is Role.OUT}
        stages = classify(p)
        self.invariant = invariant_ops(p)
        self.launch_ops = frozenset(i for i in self.invariant if stages[i] is Stage.LAUNCH)
        # What the step itself reads: the args of the ops computed every step, the stored
        # values and the termination flag.
        used = {a for i, op in enumerate(p.ops)
                if i not in self.invariant and op.kind is not OpKind.LOAD for a in op.args}
        used |= {s.value for s in p.stores}
        used |= {i for r in p.row_stores for i in (r.row, r.value, r.guard) if i is not None}
        if p.terminated is not None:
            used.add(p.terminated)
        self.sample_ops = sorted(i for i in used
                                 if i in self.invariant and i not in self.launch_ops)
        state = set(self.state)

        def per_sample_load(i: int) -> bool:
            op = p.ops[i]
            return op.kind is OpKind.LOAD and not self.slots[op.attr].is_uniform

        self.lane_keys = sorted({p.ops[i].attr for i in used if per_sample_load(i)
                                 and p.ops[i].attr not in state}, key=str)
        self.gathered_keys = sorted({p.ops[a].attr for i in self.invariant
                                     for a in p.ops[i].args if per_sample_load(a)}, key=str)
        self.known = {i: f"v{i}_h" if i in self.launch_ops else f"h{i}" for i in self.invariant}
        self.selected, self.flag_ops = self._flag_from_selected_state()

    def _flag_from_selected_state(self) -> tuple[dict[int, tuple], frozenset[int]]:
        """The termination flag read from the state after the selects, as the hand-written
        kernel reads it: the stored values the flag depends on (op -> state key, whose local
        holds that value after its select), and the ops between them and the flag, computed
        after the selects from those locals.

        Read from the values before the selects (``t_new >= t_end``), the flag needs ``t_new``
        beside the selected ``t``, and LLVM adds a blend or a masked move per step; read from
        the selected ``t``, the compare folds into the masked add's mask. The same bits: in a
        live lane the select chose the new value, and a lane that is not live stays so
        whatever the flag. Done only where every op between the stored values and the flag
        serves the flag alone (nothing is computed twice) and none of them reads a state's
        value from before the step (after the selects its local holds the new one); else
        ({}, frozenset())."""
        p = self.program
        if p.terminated is None:
            return {}, frozenset()
        selected = {}
        for store in p.stores:
            key = (store.param, store.component)
            if not (key in self.outputs and p.accumulate):  # the local is the value itself
                selected.setdefault(store.value, key)
        cone, todo = set(), [p.terminated]  # what the flag reads, down to stored values
        while todo:
            i = todo.pop()
            if i not in cone and i not in self.invariant and p.ops[i].kind is not OpKind.LOAD:
                cone.add(i)
                if i not in selected:
                    todo += p.ops[i].args
        flag_ops = set()
        for i in sorted(cone - set(selected)):  # an op's args come before it
            if any(a in selected or a in flag_ops for a in p.ops[i].args):
                flag_ops.add(i)
        if not flag_ops and p.terminated not in selected:
            return {}, frozenset()  # the flag does not read the stored values
        stored = {s.value for s in p.stores}
        stored |= {i for r in p.row_stores for i in (r.row, r.value, r.guard) if i is not None}
        for i, op in enumerate(p.ops):
            if i not in flag_ops and any(a in flag_ops for a in op.args):
                return {}, frozenset()  # needed before the selects too: not moved
        if stored & flag_ops:
            return {}, frozenset()
        state = set(self.state)
        if any(p.ops[a].kind is OpKind.LOAD and p.ops[a].attr in state
               for i in flag_ops for a in p.ops[i].args):
            return {}, frozenset()  # it reads a state's value from before the step
        return {v: key for v, key in selected.items() if v in cone}, frozenset(flag_ops)

    def local(self, key) -> str:
        """The local variable holding a per-sample value during a visit (``s_x``, ``l_x``)."""
        return ("s_" if key in self.state else "l_") + _base(self.slots[key])

    def value(self, key) -> str:
        """A loaded value's name in the step: a ``Param``'s argument, else the lane's local."""
        slot = self.slots[key]
        return slot.name if slot.is_uniform else self.local(key)

    def buffers(self, side: str) -> list[str]:
        """One side's state buffers and its alive flags (``a_x, a_v, a_t, a_alive``)."""
        return [f"{side}_{_base(self.slots[key])}" for key in self.state] + [f"{side}_alive"]

    def lanes(self) -> list[str]:
        """The read-only lane arrays: per-sample inputs, then per-sample invariants."""
        return ([f"lane_{_base(self.slots[key])}" for key in self.lane_keys]
                + [f"lane_h{i}" for i in self.sample_ops])

    def visit_counters(self) -> list[str]:
        """A visit's extra arguments in a program that reads counters (draws): the seed, the
        global index of sample 0, the step number of the visit's first step and the lanes'
        samples; in a program that writes Series rows, its Series arrays first (and the
        lanes' samples, the column a lane writes)."""
        series = [slot.name for slot in self.series_slots()]
        if self.program.counters:
            return [*series, "seed", "first_sample", "step0", "idx"]
        return [*series, "idx"] if series else []

    def series_slots(self) -> list:
        """The Series' component arrays (their row counts are among the uniforms)."""
        return [slot for slot in self.program.slots
                if slot.param.role is Role.SERIES and not slot.is_uniform]

    def uniforms(self) -> list[str]:
        """The values every lane shares: ``Param`` values and Series' row counts (a Numba
        array knows its own strides, so a Series' row stride is not passed on)."""
        return [slot.name for slot in self.program.slots
                if slot.is_uniform and slot.field != "row_stride"]

    def scratch(self) -> list[ScratchArray]:
        """A thread's scratch, which the caller allocates: the lanes' samples, both sides'
        buffers and alive flags, the lane arrays (a block of lanes each), and the pool."""
        arrays = [ScratchArray("idx", DType.INT64)]
        for side in "ab":
            arrays += [ScratchArray(name, self.slots[key].param.dtype)
                       for key, name in zip(self.state, self.buffers(side), strict=False)]
            arrays.append(ScratchArray(f"{side}_alive", DType.BOOL))
        arrays += [ScratchArray(f"lane_{_base(self.slots[key])}", self.slots[key].param.dtype)
                   for key in self.lane_keys]
        arrays += [ScratchArray(f"lane_h{i}", self.program.ops[i].dtype)
                   for i in self.sample_ops]
        return arrays + [ScratchArray("pool", DType.INT64, pool=True),
                         ScratchArray("pool_steps", DType.INT64, pool=True)]

    def parameters(self) -> list[tuple[str, str]]:
        """The launch's C parameters, (name, Numba type): arrays by their address
        (``at_<name>``), values by value (``backend.launch_arguments`` gives them in this
        order)."""
        values = [("nsteps", "int64"), ("nthreads", "int64"), ("n", "int64"),
                  ("at_flags", "voidptr")]
        for slot in self.program.slots:
            values.append((slot.name, _NUMBA_TYPES[slot.dtype]) if slot.is_uniform
                          else (f"at_{slot.name}", "voidptr"))
        if self.program.counters:
            values += list(zip(COUNTER_ARGUMENTS, ("uint64", "int64", "int64"), strict=True))
        values += [(f"at_{array.name}", "voidptr") for array in self.scratch()]
        return [*values, ("mine", "int64"), ("at_blocks", "voidptr"), ("at_out", "voidptr")]

    def views(self) -> list[str]:
        """The launch's arrays as Numba arrays over the addresses it was given."""
        block = self.shape.block
        lines = ["flags = carray(at_flags, n, np.bool_)"]
        for slot in self.program.slots:
            if slot.is_uniform:
                continue
            dtype = _NUMPY_TYPES[slot.dtype]
            if slot.param.role is Role.SERIES:  # (T, n); rows any whole number of elements apart
                rows, stride = (self.slots[(slot.param.name, field)].name
                                for field in ("rows", "row_stride"))
                size = slot.dtype.bits // 8
                lines.append(f"{slot.name} = np.lib.stride_tricks.as_strided(carray("
                             f"at_{slot.name}, 1, {dtype}), ({rows}, n), ({stride} * {size}, "
                             f"{size}))")
            else:
                lines.append(f"{slot.name} = carray(at_{slot.name}, n, {dtype})")
        for array in self.scratch():
            size = "mine" if array.pool else str(block)
            lines.append(f"{array.name} = carray(at_{array.name}, {size}, "
                         f"{_NUMPY_TYPES[array.dtype]})")
            if array.name.endswith("_alive"):
                lines.append(f"{array.name[0]}_words = carray(at_{array.name}, {block // 8}, "
                             "np.uint64)  # eight flags a word")
        return [*lines, "out = carray(at_out, 2, np.int64)"]

    # -- the step ----------------------------------------------------------------------------

    def step(self, k: int) -> list[str]:
        """Step ``k`` of a visit, the lane's values in registers. A lane that is not live
        keeps its state through selects written ``x = new if alive else x``, which AVX-512
        turns into merge-masked operations (``x if done else new`` costs a blend each)."""
        p = self.program
        before = None if not self.selected else \
            [i for i in range(len(p.ops)) if i not in self.flag_ops]
        assignments, names = walk(p, self.renderer, self.value, suffix=f"_{k}",
                                  known=self.known, only=before)
        lines = [f"{a.name} = {a.expression}" for a in assignments]
        # Series rows first (a row or value may be a loaded state value, which the stores
        # below replace): written by a live lane, on the write's path, at a row in [0, T).
        for r in p.row_stores:
            slot = self.slots[(r.param, r.component)]
            row = names[r.row]
            guard = "" if r.guard is None else f" and {names[r.guard]}"
            rows = self.slots[(r.param, "rows")].name
            lines += [f"if alive{guard} and {row} >= 0 and {row} < {rows}:",
                      f"    {slot.name}[{row}, idx[i]] = {names[r.value]}"]
        stale = stale_reads(p, names, self.local)  # start-of-step values the stores replace
        lines += [f"{copy} = {value}" for value, (copy, _) in stale.items()]
        for store in p.stores:
            key = (store.param, store.component)
            local, value = self.local(key), names[store.value]
            value = stale[value][0] if value in stale else value
            if key in self.outputs and p.accumulate:
                value = f"({local} + {value})"
            lines.append(f"{local} = {value} if alive else {local}")
        if self.selected:  # the flag from the selected state (_flag_from_selected_state)
            known = {**self.known, **{i: name for i, name in enumerate(names) if name},
                     **{v: self.local(key) for v, key in self.selected.items()}}
            after, names = walk(p, self.renderer, self.value, suffix=f"_{k}", known=known,
                                only=self.flag_ops)
            lines += [f"{a.name} = {a.expression}" for a in after]
        if p.terminated is not None:
            lines.append(f"alive = alive & (not {names[p.terminated]})")
        return lines

    def visit(self, name: str, steps: int) -> list[str]:
        """``name(mp, <src>, <lanes>, <uniforms>, <dst>)``: ``steps`` steps of each of ``mp``
        lanes, read from one side's buffers and written to the other's; returns
        whether any lane is still live. No per-lane step counter: a visit's lanes are all at
        the same step, which the caller counts."""
        src, dst = self.buffers("src"), self.buffers("dst")
        hoisted, _ = walk(self.program, self.renderer, self.value, suffix="_h",
                          only=self.launch_ops)
        lane = [f"{self.local(key)} = {name}[i]"
                for key, name in zip(self.state, src, strict=False)]
        lane += [f"{self.local(key)} = lane_{_base(self.slots[key])}[i]"
                 for key in self.lane_keys]
        lane += [f"h{i} = lane_h{i}[i]" for i in self.sample_ops]
        lane.append(f"alive = {src[-1]}[i]")
        if self.program.counters:  # the lane's sample: its draws' stream (hawk.philox)
            lane.append("sample_id = first_sample + idx[i]")
        for k in range(steps):
            if self.program.counters:  # a live lane has taken every step of the visit so far
                lane.append(f"step_id = step0 + np.int64({k})")
            lane += self.step(k)
        lane += [f"{name}[i] = {self.local(key)}"
                 for key, name in zip(self.state, dst, strict=False)]
        lane += [f"{dst[-1]}[i] = alive", "some = some | alive"]
        arguments = ", ".join(["mp", *src, *self.lanes(), *self.uniforms(), *dst,
                               *self.visit_counters()])
        return [
            _JIT,
            f"def {name}({arguments}):",
            *[f"    {a.name} = {a.expression}" for a in hoisted],
            "    some = False",
            # An unsigned lane index: with a signed one Numba emits a negative-index
            # wraparound check that keeps LLVM from vectorising the loop (4x slower).
            "    for i in range(np.uint64(0), np.uint64(mp)):",
            *[f"        {line}" for line in lane],
            "    return some",
            "",
            "",
        ]

    # -- moving lanes between the user's arrays and the scratch ------------------------------

    def take(self, side: str, at: str = "m") -> list[str]:
        """Lane ``at`` of ``side`` from sample ``i`` of the user's arrays: its state, its
        read-only values and its per-sample invariants."""
        p = self.program

        def gathered(key) -> str:
            slot = self.slots[key]
            return slot.name if slot.is_uniform else f"g_{_base(slot)}"

        invariants, names = walk(p, self.renderer, gathered, suffix="_g", only=self.invariant)
        lines = [f"{name}[{at}] = {self.slots[key].name}[i]"
                 for key, name in zip(self.state, self.buffers(side), strict=False)]
        lines += [f"g_{_base(self.slots[key])} = {self.slots[key].name}[i]"
                  for key in self.gathered_keys]
        if p.counters:  # hawk.sample_index() is a per-sample invariant
            lines.append("sample_id = first_sample + i")
        lines += [f"{a.name} = {a.expression}" for a in invariants]
        lines += [f"lane_{_base(self.slots[key])}[{at}] = {self.slots[key].name}[i]"
                  for key in self.lane_keys]
        lines += [f"lane_h{i}[{at}] = {names[i]}" for i in self.sample_ops]
        return [*lines, f"{side}_alive[{at}] = True"]

    def put(self, side: str) -> list[str]:
        """Lane ``j`` of ``side``'s state back to sample ``i`` of the user's arrays."""
        return [f"{self.slots[key].name}[i] = {name}[j]"
                for key, name in zip(self.state, self.buffers(side), strict=False)]

    def move(self, side: str) -> list[str]:
        """Lane ``j`` of ``side`` (with its lane values) to lane ``k``."""
        return ["idx[k] = idx[j]",
                *[f"{name}[k] = {name}[j]" for name in [*self.buffers(side), *self.lanes()]]]

    def compact(self, side: str) -> list[str]:
        """``side``'s live lanes moved to its front, the finished ones put back (``m``: how
        many remain)."""
        return ["k = 0",
                "for j in range(m):",
                f"    if {side}_alive[j]:",
                *[f"        {line}" for line in self.move(side)],
                "        k += 1",
                "    else:",
                "        i = idx[j]",
                *[f"        {line}" for line in self.put(side)],
                "        flags[i] = True",
                "m = k"]

    def pad(self) -> list[str]:
        """Lanes ``m`` to ``mp`` of the side the set is in (``swapped``: side b): copies of
        lane 0, never live, never put back, so that LLVM's vector loop covers every lane."""
        def lane(side: str) -> list[str]:
            return [f"        {side}_alive[j] = False",
                    *[f"        {name}[j] = {name}[0]" for name in self.buffers(side)[:-1]]]

        return [f"mp = min({self.shape.block}, (m + {PAD - 1}) // {PAD} * {PAD})",
                "for j in range(m, mp):",
                "    if swapped:", *lane("b"), "    else:", *lane("a"),
                *[f"    {name}[j] = {name}[0]" for name in self.lanes()]]


def _base(slot) -> str:
    return slot.name[2:]  # p_x -> x


# Numba's rewrite passes (constant folding of getitems, array expressions) find nothing to do
# in generated code; skipping them saves some 4% of a first compile.
_JIT = '@njit(nogil=True, error_model="numpy", no_rewrites=True)'


def _indent(lines: list[str], depth: int) -> list[str]:
    return [" " * (4 * depth) + line for line in lines]


def _count_live(words: str) -> list[str]:
    """``left``: how many of the set's ``m`` lanes are live, counted eight flags at a time
    (``words``: the side's alive flags viewed as uint64).

    The flags are bytes (0 or 1) and lanes ``m`` to ``mp`` are padding, never live, so the
    sum of the words' bytes (a multiply by 0x0101..01 puts it in the top byte) is the count.
    It runs after every visit: a byte-by-byte count into an int64 cost 3-4% of the
    oscillator's launch (``benchmarks/cpu_loop.py``), this one nothing measurable."""
    return ["left = 0",
            "for j in range(np.uint64(0), np.uint64((m + 7) // 8)):  # unsigned: vectorised",
            f"    left += np.int64(({words}[j] * np.uint64(0x0101010101010101)) "
            ">> np.uint64(56))"]


def _sort_pool() -> list[str]:
    """The pool's ``npool`` lanes (``pool``: their samples) sorted in place by their steps
    (``pool_steps``): a shell sort, whose few integer loops compile in a few milliseconds
    where Numba's ``np.argsort`` took about a second of the launch's first compile (a third
    of it). The order of lanes with equal steps does not matter: a sample's values do not
    depend on its lane."""
    return ["gap = zero + 1",
            "while 3 * gap + 1 < npool:",
            "    gap = 3 * gap + 1",
            "while gap > 0:",
            "    for j in range(gap, npool):",
            "        key, item = pool_steps[j], pool[j]",
            "        i = j",
            "        while i >= gap and pool_steps[i - gap] > key:",
            "            pool_steps[i], pool[i] = pool_steps[i - gap], pool[i - gap]",
            "            i -= gap",
            "        pool_steps[i], pool[i] = key, item",
            "    gap //= 3"]


def _run_blocks(layout: _Layout) -> list[str]:
    """``run_blocks``: one thread's share of a launch (see the module docstring).

    One function around the two visits, with blocks and then the pool going through one loop:
    each function is typed, lowered and optimised on its own, and this one's first compile is
    most of a kernel's, so it holds one copy of each piece (gathering, stepping, compaction,
    putting back)."""
    shape = layout.shape
    piece = shape.block // PIECES
    a, b = layout.buffers("a"), layout.buffers("b")
    # what the visits take after the uniforms, the visit's first step being the set's
    counters = [("first_step + d" if name == "step0" else name)
                for name in layout.visit_counters()]

    def visit(name: str) -> list[str]:
        """A call of visit ``name`` from the side the set is in (``swapped``: side b) to the
        other. Two call sites rather than swapping the sides' array variables: a swap is
        reference-count traffic (two atomic operations per array), and it cost the oscillator
        6-12% of its launch at a visit per 4 steps of 4096-8192 lanes."""
        def call(source: list[str], target: list[str]) -> str:
            arguments = ["mp", *source, *layout.lanes(), *layout.uniforms(), *target,
                         *counters]
            return f"    some = {name}({', '.join(arguments)})"

        return ["if swapped:", call(b, a), "else:", call(a, b)]

    pick = [  # the next set of lanes: a block's live lanes, or the pool's next ones
        "if not in_pool:",
        "    # The next samples no other thread has, while the pool has room for their lanes:",
        "    # a block at a time, and near the end smaller pieces (an eighth of a block at",
        "    # least; guided: what is left over twice the threads), so threads finish together.",
        "    lo = n",
        f"    if npool + {shape.block} <= mine:",
        f"        k = min({PIECES}, max(1, (npieces - claim(at_blocks, zero)) // (2 * nthreads)))",
        f"        lo = claim(at_blocks, k) * {piece}",
        f"        hi = min(lo + k * {piece}, n)",
        "    if lo >= n:",
        "        if npool == 0:",
        "            out[0], out[1] = live, most",
        "            return",
        "        # The pool in step order: the lanes that are behind are stepped until they",
        "        # line up with the next ones, which then join them, so the stragglers of",
        "        # many blocks share one dense set.",
        *_indent(_sort_pool(), 2),
        "        in_pool = True",
        "        continue",
        "    m = 0",
        "    for i in range(lo, hi):",
        "        m += not flags[i]",
        "    d, target, park = zero, nsteps, zero + " + str(shape.park),
        "    dense = m == hi - lo",
        "    if dense:  # every lane live: contiguous copies, which LLVM vectorises",
        "        for j in range(np.uint64(0), np.uint64(m)):",
        "            i = lo + np.int64(j)",
        "            idx[j] = i",
        *[f"            {line}" for line in layout.take("a", at="j")],
        "        source, q0, q1 = idx, zero, zero",
        "    else:",
        "        m = 0",
        "        for i in range(lo, hi):",
        "            if not flags[i]:",
        "                idx[m] = i",
        "                m += 1",
        f"        if m < {shape.park}:  # few live lanes: straight to the pool",
        "            for j in range(m):",
        "                pool[npool] = idx[j]",
        "                pool_steps[npool] = 0",
        "                npool += 1",
        "            m = 0",
        "            continue",
        "        source, q0, q1, m = idx, zero, m, zero",
        "else:",
        "    if m == 0:",
        "        if q == npool:  # the pool done: more blocks, if any are left",
        "            npool, q, in_pool = zero, zero, False",
        "            continue",
        "        d = pool_steps[q]",
        "    q1 = q",
        f"    while q1 < npool and q1 - q < {shape.block} - m and pool_steps[q1] == d:",
        "        q1 += 1",
        "    source, q0, q, dense = pool, q, q1, False",
        "    target = pool_steps[q] if q < npool and pool_steps[q] > d else nsteps",
        "    park = zero",
        "for qq in range(q0, q1):",
        "    i = source[qq]",
        "    idx[m] = i",
        *[f"    {line}" for line in layout.take("a")],
        "    m += 1",
    ]
    stepped = [  # a visit of unroll steps; the last one again a step at a time
        f"    if target - d >= {shape.unroll}:",
        *_indent(visit("visit_unrolled"), 2),
        "        if some:",
        "            swapped = not swapped",
        f"            d += {shape.unroll}",
        "    else:",
        "        some = True",
        f"    if not some or target - d < {shape.unroll}:",
        "        # One step at a time: up to the target, or, when the set's last lane finished",
        "        # in the visit just made, that visit again from its start (still in the",
        "        # source buffers) to find the exact step: the same operations on the same",
        "        # values give the same bits.",
        "        some = True",
        "        while some and d < target:",
        *_indent(visit("visit_one"), 3),
        "            swapped = not swapped",
        "            d += 1",
        "        if not some:",
        "            left = 0",
        "            break",
    ]
    single = [  # unroll 1: a step per visit; the step a set ends at is exact
        *_indent(visit("visit_one"), 1),
        "    swapped = not swapped",
        "    d += 1",
        "    if not some:",
        "        left = 0",
        "        break",
    ]
    advance = [  # the set, all at step d, until target, none live, or fewer than park live
        "swapped = False",
        "left = m",
        "while True:",
        "    while d < target:",
        *_indent(layout.pad(), 2),
        *_indent(stepped if shape.unroll > 1 else single, 1),
        "        words = b_words if swapped else a_words",
        *_indent(_count_live("words"), 2),
        "        if 4 * left < 3 * m:",
        "            break",
        "    if swapped:  # the set back in side a",
        "        for j in range(m):",
        *[f"            {x}[j] = {y}[j]" for x, y in zip(a, b, strict=True)],
        "        swapped = False",
        "    if left == 0 or d >= target or left < park:",
        "        break",
        "    dense = False  # a quarter of the lanes have finished: the rest to the front",
        *_indent(layout.compact("a"), 1),
    ]

    def put_back(loop: str, sample: str) -> list[str]:
        """The set's lanes back to their samples, with their flags, counting the live ones."""
        return [f"        {loop}", f"            i = {sample}",
                *[f"            {line}" for line in layout.put("a")],
                "            flags[i] = not a_alive[j]", "            left += a_alive[j]"]

    finish = [
        "if left == 0 or d == nsteps or not in_pool:",
        "    left = 0",
        "    if dense:  # the block's lanes in place: contiguous copies",
        *put_back("for j in range(np.uint64(0), np.uint64(m)):", "lo + np.int64(j)"),
        "    else:",
        *put_back("for j in range(m):", "idx[j]"),
        "    if left == 0 or d == nsteps:",
        "        live += left",
        "        most = max(most, d)",
        "    else:  # a few lanes left: they go on in the pool, with other blocks' stragglers",
        "        for j in range(m):",
        "            if a_alive[j]:",
        "                pool[npool] = idx[j]",
        "                pool_steps[npool] = d",
        "                npool += 1",
        "    m = 0",
        "else:",
        *[f"    {line}" for line in layout.compact("a")],
    ]
    parameters = layout.parameters()
    signature = f"void({', '.join(kind for _, kind in parameters)})"
    return [
        f'@cfunc("{signature}", error_model="numpy", no_rewrites=True)',
        f"def run_blocks({', '.join(name for name, _ in parameters)}):",
        *_indent(layout.views(), 1),
        f"    npieces = (n + {piece - 1}) // {piece}",
        "    zero = nsteps - nsteps  # an int64 (a literal would type the loop's values apart)",
        "    npool, live, most, q, m, hi = zero, zero, zero, zero, zero, zero",
        "    d, target, park = zero, zero, zero",
        "    in_pool, dense, lo = False, False, zero",
        "    while True:",
        *_indent(pick, 2),
        *_indent(advance, 2),
        *_indent(finish, 2),
        "",
        "",
    ]


def emit_launch(program: Program, shape: Shape | None = None) -> str:
    """The Python source of a module whose ``run_blocks`` is one thread's share of a launch of
    ``program``: a C function (Numba's ``cfunc``) of the parameters ``launch_interface``
    describes, writing the live samples left and the steps the slowest took to ``out``
    (``shape``: ``shape_for(program)``; tests pass small blocks to reach every path with few
    samples)."""
    layout = _Layout(program, shape or shape_for(program))
    unrolled = (layout.visit("visit_unrolled", layout.shape.unroll) if layout.shape.unroll > 1
                else ["visit_unrolled = None  # unroll 1: visit_one does every step", "", ""])
    body = [
        *unrolled,
        *layout.visit("visit_one", 1),
        *_run_blocks(layout),
    ]
    header = [
        f'"""Generated by eagle from hawk kernel {program.name!r}. Do not edit."""',
        "import math",
        "import numpy as np",
        "from numba import carray, cfunc, njit",
        "",
        "from eagle.cpu.atomics import claim",
        "",
        "nan, inf = np.nan, np.inf",
        "",
        "",
        HELPERS,
        "",
        *([RANDOM_HELPERS, ""] if program.counters else []),
        *([SHIFT_HELPERS, ""] if any(op.kind in (OpKind.LSHIFT, OpKind.RSHIFT)
                                     for op in program.ops) else []),
    ]
    return "\n".join(header + body) + "\n"


@dataclass(frozen=True)
class LaunchInterface:
    """What a caller of the emitted ``run_blocks`` passes: its C parameters in order (name,
    Numba type), and the scratch arrays each thread allocates for it."""

    parameters: tuple[tuple[str, str], ...]
    scratch: tuple[ScratchArray, ...]
    shape: Shape


def launch_interface(program: Program, shape: Shape | None = None) -> LaunchInterface:
    """The parameters and scratch of ``emit_launch(program, shape)``'s ``run_blocks``."""
    layout = _Layout(program, shape or shape_for(program))
    return LaunchInterface(tuple(layout.parameters()), tuple(layout.scratch()), layout.shape)
