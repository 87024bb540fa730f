"""How a CPU launch lays a program out: the shape of its work, and where each value lives.

A launch advances every live sample by up to ``nsteps`` steps and reports how many samples are
still live and how many steps the slowest one took; ``run_blocks`` is one host-team thread's
share of it (``cpu.team``). Its shape was chosen by measurement against the fastest kernels we
could write by hand (``benchmarks/cpu_loop.py``, ``peer_numba.py``):

- samples are cut into blocks (``Shape.block``), which the threads claim one at a time from a
  shared counter, so a thread that is slowed down takes fewer, and near the end in smaller
  pieces (``PIECES``), so that the threads finish together; a block's live lanes are gathered
  into the thread's scratch (which stays in L2) with their read-only values and per-sample
  invariants (``dt * omega * omega``) computed once there;
- a *visit* is one pass over the scratch lanes taking ``Shape.unroll`` steps per lane, written
  out, the lane's values in registers; the lane loop is innermost and branch-free, so LLVM
  vectorises it. A finished lane is frozen by selects (``x = new if alive else x``), which
  AVX-512 turns into merge-masked operations, and the termination flag is read from the
  state after the selects (``Layout._flag_from_selected_state``), so that its compare folds
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
- a kernel that draws random numbers, or whose step is long, takes one step per visit
  (``SHAPE_DRAWING``, ``SHAPE_LONG``).

``cpu.emit`` writes this layout as LLVM IR; ``cpu.backend`` allocates the scratch
(``Layout.scratch``) and passes the parameters (``Layout.parameters``) in this order.
"""

from __future__ import annotations

from dataclasses import dataclass

from hawk.ir import COUNTER_ARGUMENTS, DType, OpKind, Program, Role
from hawk.passes import Stage, classify

from ..codegen import invariant_ops

__all__ = ["Layout", "base_name", "LaunchInterface", "launch_interface", "PAD", "PIECES",
           "ScratchArray", "Shape", "SHAPE", "SHAPE_DRAWING", "SHAPE_SHORT", "SHAPE_LONG",
           "shape_for", "step_ops"]

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
    step = step_ops(program)
    if step > LONG_STEP:
        return SHAPE_LONG
    return SHAPE_SHORT if step <= SHORT_STEP else SHAPE


def step_ops(program: Program, invariant: frozenset[int] | None = None) -> int:
    """The ops a step computes: neither loads nor invariants (``codegen.invariant_ops``, or
    ``invariant`` where the caller has them)."""
    invariant = invariant_ops(program) if invariant is None else invariant
    return sum(1 for i, op in enumerate(program.ops)
               if i not in invariant and op.kind is not OpKind.LOAD)


_C_TYPE_NAMES = {DType.BOOL: "boolean", DType.INT64: "int64", DType.FLOAT32: "float32",
                DType.FLOAT64: "float64", DType.INT32: "int32", DType.UINT32: "uint32",
                DType.UINT64: "uint64"}  # fmt: skip


@dataclass(frozen=True)
class ScratchArray:
    """One array of a launch thread's scratch: a lane of a block per element, or (``pool``)
    one per pooled lane (``mine`` elements, at least a block's)."""

    name: str
    dtype: DType
    pool: bool = False


class Layout:
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
        self.slots = {slot.key: slot for slot in p.slots}
        self.state = sorted({(s.param, s.component) for s in p.stores}, key=str)
        self.outputs = {(s.param, s.component) for s in p.stores
                        if p.param(s.param).role is Role.OUT}
        stages = classify(p)
        self.invariant = invariant_ops(p)
        self.step_ops = step_ops(p, self.invariant)
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
        return ("s_" if key in self.state else "l_") + base_name(self.slots[key])

    def value(self, key) -> str:
        """A loaded value's name in the step: a ``Param``'s argument, else the lane's local."""
        slot = self.slots[key]
        return slot.name if slot.is_uniform else self.local(key)

    def buffer_bases(self) -> list[str]:
        """A side's buffers named without the side: each state value's base name, then
        ``alive`` (``x, v, t, alive``)."""
        return [base_name(self.slots[key]) for key in self.state] + ["alive"]

    def buffers(self, side: str) -> list[str]:
        """One side's state buffers and its alive flags (``a_x, a_v, a_t, a_alive``)."""
        return [f"{side}_{base}" for base in self.buffer_bases()]

    def lanes(self) -> list[str]:
        """The read-only lane arrays: per-sample inputs, then per-sample invariants."""
        return ([f"lane_{base_name(self.slots[key])}" for key in self.lane_keys]
                + [f"lane_h{i}" for i in self.sample_ops])

    def series_slots(self) -> list:
        """The Series' component arrays (their row counts are among the uniforms)."""
        return [slot for slot in self.program.slots
                if slot.param.role is Role.SERIES and not slot.is_uniform]

    def scratch(self) -> list[ScratchArray]:
        """A thread's scratch, which the caller allocates: the lanes' samples, both sides'
        buffers and alive flags, the lane arrays (a block of lanes each), and the pool."""
        arrays = [ScratchArray("idx", DType.INT64)]
        for side in "ab":
            arrays += [ScratchArray(name, self.slots[key].param.dtype)
                       for key, name in zip(self.state, self.buffers(side), strict=False)]
            arrays.append(ScratchArray(f"{side}_alive", DType.BOOL))
        arrays += [ScratchArray(f"lane_{base_name(self.slots[key])}", self.slots[key].param.dtype)
                   for key in self.lane_keys]
        arrays += [ScratchArray(f"lane_h{i}", self.program.ops[i].dtype)
                   for i in self.sample_ops]
        return arrays + [ScratchArray("pool", DType.INT64, pool=True),
                         ScratchArray("pool_steps", DType.INT64, pool=True)]

    def parameters(self) -> list[tuple[str, str]]:
        """The launch's C parameters, (name, C type name): arrays by their address
        (``at_<name>``), values by value (``backend.launch_arguments`` gives them in this
        order)."""
        values = [("nsteps", "int64"), ("nthreads", "int64"), ("n", "int64"),
                  ("at_flags", "voidptr")]
        for slot in self.program.slots:
            values.append((slot.name, _C_TYPE_NAMES[slot.dtype]) if slot.is_uniform
                          else (f"at_{slot.name}", "voidptr"))
        if self.program.counters:
            values += list(zip(COUNTER_ARGUMENTS, ("uint64", "int64", "int64"), strict=True))
        values += [(f"at_{array.name}", "voidptr") for array in self.scratch()]
        return [*values, ("mine", "int64"), ("at_blocks", "voidptr"), ("at_out", "voidptr")]


def base_name(slot) -> str:
    """A slot's name without its prefix, for the scratch arrays named after it (p_x -> x)."""
    return slot.name[2:]


@dataclass(frozen=True)
class LaunchInterface:
    """What a caller of the emitted ``run_blocks`` passes: its C parameters in order (name,
    C type name: ``int64``, ``voidptr``, ``boolean``...), and the scratch arrays each thread
    allocates for it."""

    parameters: tuple[tuple[str, str], ...]
    scratch: tuple[ScratchArray, ...]
    shape: Shape


def launch_interface(program: Program, shape: Shape | None = None) -> LaunchInterface:
    """The parameters and scratch of ``emit_launch(program, shape)``'s ``run_blocks``."""
    layout = Layout(program, shape or shape_for(program))
    return LaunchInterface(tuple(layout.parameters()), tuple(layout.scratch()), layout.shape)

