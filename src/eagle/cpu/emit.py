"""The CPU emitter: a hawk program as the source of the Numba functions that run a launch.

A launch advances every live sample by up to ``nsteps`` steps and reports how many samples are
still live and how many steps the slowest one took; ``run_blocks(tid, nthreads, ...)`` is one
host-team thread's share of it (``cpu.team``). Its shape was chosen by measurement;
``benchmarks/cpu_loop.py`` compares it with the fastest kernels we could write by hand
(``benchmarks/peer_numba.py``: a counter-free, alive-masked lane-blocked kernel and a
per-sample loop), which on plain kernels are still up to 2x faster (issue 13):

- samples are cut into blocks of ``BLOCK`` lanes, dealt to threads in cyclic order
  (``range(tid, nblocks, nthreads)``): one contiguous piece per thread finishes unevenly on
  spread configurations;
- inside a block the step loop is outside and the lane loop innermost, branch-free and over
  arrays, so LLVM vectorises it: a finished lane is frozen by a select, never by a branch;
- ``UNROLL`` steps are written out per lane visit so a lane's state stays in registers, with a
  one-step tail for the remainder so ``nsteps`` is honoured exactly;
- a block leaves its step loop once none of its lanes is live; once fewer than half are live it
  stops stepping the finished ones: its live lanes are gathered into contiguous scratch arrays
  (padded to a multiple of ``PAD`` lanes) and run there, finished lanes written back and the
  rest compacted again whenever half of them have finished (``run_sparse``), so the work
  follows the useful sample-steps when samples stop unevenly (1% of samples 100x longer than
  the rest, scattered: about 12x faster than stepping every lane of a block to its slowest);
- one pass over a block's lanes (``visit_unrolled``, ``visit_one``) is its own function:
  LLVM vectorises a small function more reliably than the same loop nested in the block's
  step loop;

No fastmath and no FMA contraction: results equal the NumPy reference executor bit for bit.
"""

from __future__ import annotations

from hawk.ir import COMPARISONS, COUNTER_ARGUMENTS, DType, Op, OpKind, Program, Role
from hawk.philox import (
    COS_SERIES,
    LN2_HI,
    LN2_LO,
    LOG_SERIES,
    M0,
    M1,
    PI_4,
    ROUNDS,
    SIN_SERIES,
    SQRT2,
    W0,
    W1,
    horner_text,
)
from hawk.reference import IN_DOUBLE

from ..codegen import ExpressionRenderer, invariant_ops, walk

__all__ = ["emit_launch", "BLOCK", "UNROLL", "SPARSE_MIN"]

BLOCK = 2048
UNROLL = 4
SPARSE_MIN = 32  # below this many lanes, compacting a sparse block further is not worth it
PAD = 16  # sparse lanes are padded to a multiple of this, so LLVM's vector loop covers them

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


_BITS = {DType.FLOAT32: 32, DType.FLOAT64: 64}

# Helpers every generated module defines (inlined by Numba): the reference's results where
# Numba's own differ. A math function's NaN is the canonical quiet NaN (Numba's log(-1) has the
# sign bit clear, the C library's set); int64 MIN // -1 wraps to MIN, as NumPy's does (Numba
# gives 0); // and % by zero give 0 (Numba's error_model="numpy" already does).
_HELPERS = """\
@njit(inline="always")
def canonical_nan64(x):
    return x if x == x else np.float64(np.nan)


@njit(inline="always")
def canonical_nan32(x):
    return x if x == x else np.float32(np.nan)


@njit(inline="always")
def int_floordiv(a, b):
    return -a if b == -1 else a // b
"""


def _philox_rounds() -> list[str]:
    """Philox4x32's rounds written out (``hawk.philox.philox4x32``), so LLVM sees straight-line
    code it can vectorise across lanes."""
    lines = []
    for r in range(ROUNDS):
        if r:
            lines += [f"    k0 = (k0 + np.uint64({W0:#x})) & mask",
                      f"    k1 = (k1 + np.uint64({W1:#x})) & mask"]
        lines += [f"    p0 = c0 * np.uint64({M0:#x})", f"    p1 = c2 * np.uint64({M1:#x})",
                  "    c0, c1, c2, c3 = (p1 >> s32) ^ c1 ^ k0, p1 & mask, (p0 >> s32) ^ c3 ^ k1, "
                  "p0 & mask"]
    return lines


# Helpers of a program that draws (``Program.counters``), after ``_HELPERS``: the draws of
# ``hawk.philox``, operation for operation. In the lane loop ``seed`` (uint64), ``sample_id``
# and ``step_id`` (int64) are the run's seed, the lane's global sample index and its step number.
_RANDOM_HELPERS = "\n".join([
    '@njit(inline="always")',
    "def philox(seed, sample, step, position):",
    "    mask = np.uint64(0xFFFFFFFF)",
    "    s32 = np.uint64(32)",
    "    s = np.uint64(sample)",
    "    t = np.uint64(step)",
    "    c0 = np.uint64(position)",
    "    c1 = t & mask",
    "    high = np.uint64(0xFFFF)",
    "    c2 = ((t >> s32) & high) | (((s >> s32) & high) << np.uint64(16))",
    "    c3 = s & mask",
    "    k0 = seed & mask",
    "    k1 = seed >> s32",
    *_philox_rounds(),
    "    return c0, c1, c2, c3",
    "",
    "",
    '@njit(inline="always")',
    "def integer53(high, low):",
    "    return np.int64((high << np.uint64(21)) | (low >> np.uint64(11)))",
    "",
    "",
    '@njit(inline="always")',
    "def draw_uniform64(seed, sample, step, position):",
    "    w0, w1, w2, w3 = philox(seed, sample, step, position)",
    "    return np.float64(integer53(w0, w1)) * np.float64(2.0 ** -53)",
    "",
    "",
    '@njit(inline="always")',
    "def draw_uniform32(seed, sample, step, position):",
    "    w0, w1, w2, w3 = philox(seed, sample, step, position)",
    "    return np.float32(np.int64(w0 >> np.uint64(8))) * np.float32(2.0 ** -24)",
    "",
    "",
    '@njit(inline="always")',
    "def log53(k):",  # hawk.philox.log53, operation for operation
    "    e = np.int64(0)",
    *[f"    e = e + np.int64({shift}) * np.int64((k >> (e + np.int64({shift}))) != 0)"
      for shift in (32, 16, 8, 4, 2, 1)],
    "    top = (k << (np.int64(52) - e)) if e <= 52 else (k >> np.int64(1))",
    "    m = np.float64(top) * np.float64(2.0 ** -52)",
    f"    big = m > {SQRT2!r}",
    "    m = m * 0.5 if big else m",
    "    e = e + np.int64(big) - np.int64(53)",
    "    s = (m - 1.0) / (m + 1.0)",
    "    z = s * s",
    f"    log_m = (2.0 * s) + ((2.0 * s) * (z * {horner_text('z', LOG_SERIES)}))",
    "    ef = np.float64(e)",
    f"    return (ef * {LN2_HI!r}) + ((ef * {LN2_LO!r}) + log_m)",
    "",
    "",
    '@njit(inline="always")',
    "def cos53(k):",  # hawk.philox.cos53: the same values; its selects written as arithmetic
    "    octant = k >> np.int64(50)",  # (0/1 blends and a +-1 factor, exact on these values:
    "    f = k & np.int64((1 << 50) - 1)",  # sin_x, cos_x >= 0), which LLVM vectorises after a
    "    odd = octant & np.int64(1)",  # Philox block where it does not vectorise the selects
    "    f = f + odd * (np.int64(1 << 50) - np.int64(2) * f)",
    f"    x = (np.float64(f) * np.float64(2.0 ** -50)) * {PI_4!r}",
    "    w = x * x",
    f"    sin_x = x + (x * (w * {horner_text('w', SIN_SERIES)}))",
    f"    cos_x = (1.0 - (0.5 * w)) + (w * (w * {horner_text('w', COS_SERIES)}))",
    "    oddf = np.float64(odd)",
    "    cos_phi = sin_x * oddf + cos_x * (1.0 - oddf)",
    "    sin_phi = cos_x * oddf + sin_x * (1.0 - oddf)",
    "    quadrant = octant >> np.int64(1)",
    "    swap = np.float64(quadrant & np.int64(1))",
    "    negative = np.float64(((quadrant + np.int64(1)) >> np.int64(1)) & np.int64(1))",
    "    return (sin_phi * swap + cos_phi * (1.0 - swap)) * (1.0 - 2.0 * negative)",
    "",
    "",
    '@njit(inline="always")',
    "def draw_normal64(seed, sample, step, position):",
    "    w0, w1, w2, w3 = philox(seed, sample, step, position)",
    "    radius = math.sqrt(log53(integer53(w0, w1) + np.int64(1)) * np.float64(-2.0))",
    "    return radius * cos53(integer53(w2, w3))",
    "",
    "",
    '@njit(inline="always")',
    "def draw_exponential64(seed, sample, step, position):",
    "    w0, w1, w2, w3 = philox(seed, sample, step, position)",
    "    return -log53(integer53(w0, w1) + np.int64(1))",
    "",
    "",
    '@njit(inline="always")',
    "def draw_randint(seed, sample, step, position, lo, hi):",
    "    w0, w1, w2, w3 = philox(seed, sample, step, position)",
    "    span = np.uint64(hi) - np.uint64(lo)",
    "    span = min(span, np.uint64(1 << 32)) if hi > lo else np.uint64(0)",
    "    s32 = np.uint64(32)",
    "    return np.int64(np.uint64(lo) + ((w0 * span + ((w1 * span) >> s32)) >> s32))",
    "",
])


# Helpers of a program with shifts (after ``_HELPERS``): NumPy's shifts, whose count outside
# [0, bits) gives 0 (or -1 for >> of a negative number); Numba's are LLVM's, undefined there.
_SHIFT_HELPERS = """\
@njit(inline="always")
def shift_left(a, b, zero, bits):
    return (a << b) if (b >= zero and b < bits) else zero


@njit(inline="always")
def shift_right(a, b, zero, bits):
    return (a >> b) if (b >= zero and b < bits) else zero


@njit(inline="always")
def shift_right_signed(a, b, zero, bits, top):
    return (a >> b) if (b >= zero and b < bits) else (a >> top)
"""
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


class _LaneLoop:
    """Writes the lane loop of a block: load a lane, take ``steps`` steps, store it back."""

    def __init__(self, program: Program):
        self.program = program
        self.renderer = NumbaRenderer()
        self.slots = {slot.key: slot for slot in program.slots}
        # Mutable state and Out values live in local variables for the whole visit.
        self.state = {(s.param, s.component) for s in program.stores}
        self.outputs = {(s.param, s.component) for s in program.stores
                        if program.param(s.param).role is Role.OUT}
        self.invariant = invariant_ops(program)
        self.hoisted: dict[int, str] = {}
        # Per-lane int64 step counters halve the lanes of a float32 loop (Numba widens every
        # integer to int64): a kernel whose per-sample values are all float32 (or bool) counts
        # its steps with one OR per step across lanes instead (``any_k``: some lane was live at
        # step k), and its live lanes in a pass over the flags (float32 1.2-1.5x faster).
        self.narrow = all(slot.param.dtype in (DType.FLOAT32, DType.BOOL)
                          for slot in program.slots if not slot.is_uniform)

    def local(self, key) -> str:
        """The local variable holding a per-sample value during a visit (``s_x``)."""
        return "s" + self.slots[key].name[1:]

    def value(self, key) -> str:
        """A loaded value's name in the step: a ``Param``'s argument, else the lane's local."""
        slot = self.slots[key]
        return slot.name if slot.is_uniform else self.local(key)

    def lines(self, steps: int, sparse: bool = False) -> list[str]:
        """The lane loop; ``sparse``: over ``run_sparse``'s packed lanes, whose samples are
        ``idx[i]`` (matters only to a program that reads counters)."""
        p = self.program
        # An unsigned lane index: with a signed one Numba emits a negative-index wraparound
        # that keeps LLVM from proving the accesses safe, and the loop stays scalar (4x slower).
        out = ["for i in range(np.uint64(lo), np.uint64(hi)):"]
        reads = sorted({op.attr for op in p.ops if op.kind is OpKind.LOAD} | self.state,
                       key=str)
        for key in reads:
            if not self.slots[key].is_uniform:
                out.append(f"    {self.local(key)} = {self.slots[key].name}[i]")
        # The flag is read after the state: read first, LLVM keeps it packed as 32-bit lanes
        # and repacks it every step (1.2x slower on the oscillator, AVX2).
        out += ["    alive = not flags[i]"] if self.narrow else ["    done = flags[i]",
                                                               "    lane_steps = 0"]
        if p.counters:  # the lane's sample: its draws' stream (hawk.philox)
            lane = "idx[i]" if sparse else "np.int64(i)"
            out.append(f"    sample_id = first_sample + {lane}")
        # What does not change from step to step (dt * omega * omega) is computed once a visit.
        hoisted, names = walk(p, self.renderer, self.value, suffix="_h", only=self.invariant)
        out += [f"    {a.name} = {a.expression}" for a in hoisted]
        self.hoisted = {i: names[i] for i in self.invariant}
        for k in range(steps):
            out += [f"    {line}" for line in self.step(k)]
        for key in sorted(self.state, key=str):
            out.append(f"    {self.slots[key].name}[i] = {self.local(key)}")
        if self.narrow:
            return [*out, "    flags[i] = not alive"]
        out += ["    flags[i] = done", "    live += 1 - done",
                "    visit = max(visit, lane_steps)"]
        return out

    def step(self, k: int) -> list[str]:
        p = self.program
        lines = [f"any{k} = any{k} | alive"] if self.narrow else ["lane_steps += 1 - done"]
        if p.counters:  # a live lane has taken every step of the visit so far
            lines.append(f"step_id = first_step + np.int64({k})")
        assignments, names = walk(p, self.renderer, self.value, suffix=f"_{k}",
                                  known=self.hoisted)
        lines += [f"{a.name} = {a.expression}" for a in assignments]
        for store in p.stores:
            key = (store.param, store.component)
            local, value = self.local(key), names[store.value]
            if key in self.outputs and p.accumulate:
                value = f"({local} + {value})"
            lines.append(f"{local} = {value} if alive else {local}" if self.narrow
                         else f"{local} = {local} if done else {value}")
        if p.terminated is not None:  # a live lane takes the kernel's flag; a done one stays
            lines.append(f"alive = alive & (not {names[p.terminated]})" if self.narrow
                         else f"done = done | {names[p.terminated]}")
        return lines


_JIT = '@njit(nogil=True, error_model="numpy", cache=True)'


def _visit(name: str, arguments: str, lane_loop: _LaneLoop, steps: int,
           sparse: bool = False) -> list[str]:
    """One pass over a block's lanes as its own function, returning (live, steps taken)."""
    body = [f"    {line}" for line in lane_loop.lines(steps, sparse)]
    if not lane_loop.narrow:
        return [_JIT, f"def {name}({arguments}):", "    live = 0", "    visit = 0", *body,
                "    return live, visit", "", ""]
    return [_JIT, f"def {name}({arguments}):", *[f"    any{k} = False" for k in range(steps)],
            *body,
            "    visit = " + " + ".join(f"np.int64(any{k})" for k in range(steps)),
            "    live = 0",
            "    for i in range(lo, hi):",
            "        live += 1 - flags[i]",
            "    return live, visit", "", ""]


def _sparse(program: Program, arrays: str, counters: str = "") -> list[str]:
    """``run_sparse``: a block's live lanes gathered into contiguous scratch arrays and run
    there, with finished lanes written back and the rest compacted as they finish, so a block
    whose samples stop unevenly costs its live lanes, not all of them. Which lane computes a
    sample changes, the sample's own steps do not: results stay bit-identical."""
    per_sample = [slot for slot in program.slots if not slot.is_uniform]
    written = [slot for slot in per_sample if slot.param.role.written]

    def scratch(name: str) -> str:
        return "f_" + name

    scratch_arrays = ", ".join(["f_flags", *(slot.name if slot.is_uniform else scratch(slot.name)
                                             for slot in program.slots)])
    # a program that reads counters visits its packed lanes with their sample indices
    visits, steps = ("_sparse", ", seed, first_sample, first_step + taken, idx") if counters \
        else ("", "")

    def pad(indent: str) -> list[str]:  # lanes m..mp: copies of lane 0, done, never written
        return [f"{indent}{line}" for line in [  # back: LLVM's vector loop covers all mp lanes
            f"mp = min(cap, (m + {PAD - 1}) // {PAD} * {PAD})",
            "for j in range(m, mp):",
            "    f_flags[j] = True",
            *[f"    {scratch(s.name)}[j] = {scratch(s.name)}[0]" for s in per_sample]]]

    lines = [
        _JIT,
        f"def run_sparse(lo, hi, nsteps, {arrays}{counters}):",
        "    idx = np.empty(hi - lo, np.int64)",
        "    m = 0",
        "    for i in range(lo, hi):",
        "        if not flags[i]:",
        "            idx[m] = i",
        "            m += 1",
        f"    cap = min(hi - lo, (m + {PAD - 1}) // {PAD} * {PAD})",
        "    f_flags = np.zeros(cap, np.bool_)",
        *[f"    {scratch(s.name)} = np.empty_like({s.name}[:cap])" for s in per_sample],
        "    for j in range(m):",
        "        i = idx[j]",
        *[f"        {scratch(s.name)}[j] = {s.name}[i]" for s in per_sample],
        "    mp = m",
        "    if m > 0:",
        *pad("        "),
        "    taken = 0",
        "    live = m",
        "    zero = lo - lo  # an int64 like lo (a literal 0 would compile the visits again)",
        "    while taken < nsteps and live > 0:",
        f"        if 2 * live < m and m > {SPARSE_MIN}:",
        "            k = 0",
        "            for j in range(m):",
        "                if f_flags[j]:",
        "                    i = idx[j]",
        *[f"                    {s.name}[i] = {scratch(s.name)}[j]" for s in written],
        "                    flags[i] = True",
        "                else:",
        "                    idx[k] = idx[j]",
        "                    f_flags[k] = False",
        *[f"                    {scratch(s.name)}[k] = {scratch(s.name)}[j]" for s in per_sample],
        "                    k += 1",
        "            m = k",
        *pad("            "),
        f"        if nsteps - taken >= {UNROLL}:",
        f"            live, visit = visit_unrolled{visits}(zero, mp, {scratch_arrays}{steps})",
        "        else:",
        f"            live, visit = visit_one{visits}(zero, mp, {scratch_arrays}{steps})",
        "        taken += visit",
        "    for j in range(m):",
        "        i = idx[j]",
        *[f"        {s.name}[i] = {scratch(s.name)}[j]" for s in written],
        "        flags[i] = f_flags[j]",
        "    return live, taken",
        "",
        "",
    ]
    return lines


def emit_launch(program: Program) -> str:
    """The Python source of a module whose ``run_blocks(tid, nthreads, nsteps, flags, ...)``
    is one thread's share of a launch of ``program``."""
    sparse_counters = ", seed, first_sample, first_step + taken" if program.counters else ""
    lane_loop = _LaneLoop(program)
    arrays = ", ".join(["flags", *(slot.name for slot in program.slots)])
    visit_args = f"lo, hi, {arrays}"
    # A program that reads counters (draws) takes COUNTER_ARGUMENTS after its slots; its visits
    # take the step number of their first step (the launch's first_step + steps taken so far).
    counters = ", " + ", ".join(COUNTER_ARGUMENTS) if program.counters else ""
    visit_call, visits = visit_args, []
    if program.counters:
        visit_call = f"{visit_args}, seed, first_sample, first_step + taken"
        visit_args = f"{visit_args}{counters}"
        visits = [*_visit("visit_unrolled_sparse", f"{visit_args}, idx", lane_loop, UNROLL, True),
                  *_visit("visit_one_sparse", f"{visit_args}, idx", lane_loop, 1, True)]
    body = [
        *_visit("visit_unrolled", visit_args, lane_loop, UNROLL),
        *_visit("visit_one", visit_args, lane_loop, 1),
        *visits,
        *_sparse(program, arrays, counters),
        _JIT,
        f"def run_block(lo, hi, nsteps, {arrays}{counters}):",
        "    live = 0",
        "    for i in range(lo, hi):",
        "        live += 1 - flags[i]",
        "    taken = 0",
        "    while taken < nsteps and live > 0:",
        "        if 2 * live < hi - lo:  # most lanes are done: run the live ones packed",
        f"            live, more = run_sparse(lo, hi, nsteps - taken, {arrays}{sparse_counters})",
        "            return live, taken + more",
        f"        if nsteps - taken >= {UNROLL}:",
        f"            live, visit = visit_unrolled({visit_call})",
        "        else:",
        f"            live, visit = visit_one({visit_call})",
        "        taken += visit",
        "    return live, taken",
        "",
        "",
        _JIT,
        f"def run_blocks(tid, nthreads, nsteps, {arrays}{counters}):",
        "    n = flags.shape[0]",
        f"    nblocks = (n + {BLOCK - 1}) // {BLOCK}",
        "    thread_live = 0",
        "    thread_steps = 0",
        "    for b in range(tid, nblocks, nthreads):",
        f"        lo = b * {BLOCK}",
        f"        hi = min(lo + {BLOCK}, n)",
        f"        live, steps = run_block(lo, hi, nsteps, {arrays}{counters})",
        "        thread_live += live",
        "        thread_steps = max(thread_steps, steps)",
        "    return thread_live, thread_steps",
    ]
    header = [
        f'"""Generated by eagle from hawk kernel {program.name!r}. Do not edit."""',
        "import math",
        "import numpy as np",
        "from numba import njit",
        "",
        "nan, inf = np.nan, np.inf",
        "",
        "",
        _HELPERS,
        "",
        *([_RANDOM_HELPERS, ""] if program.counters else []),
        *([_SHIFT_HELPERS, ""] if any(op.kind in (OpKind.LSHIFT, OpKind.RSHIFT)
                                     for op in program.ops) else []),
    ]
    return "\n".join(header + body) + "\n"
