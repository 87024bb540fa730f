"""The Numba source of the helpers a generated CPU module defines (``cpu.emit``).

Each is inlined by Numba where it is called, and gives the NumPy reference executor's results
where Numba's own differ: canonical NaNs, NumPy's integer division and shifts, and the draws of
``hawk.philox`` operation for operation.
"""

from __future__ import annotations

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

__all__ = ["HELPERS", "RANDOM_HELPERS", "SHIFT_HELPERS"]

# Helpers every generated module defines (inlined by Numba): the reference's results where
# Numba's own differ. A math function's NaN is the canonical quiet NaN (Numba's log(-1) has the
# sign bit clear, the C library's set); int64 MIN // -1 wraps to MIN, as NumPy's does (Numba
# gives 0); // and % by zero give 0 (Numba's error_model="numpy" already does).
HELPERS = """\
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


# Helpers of a program that draws (``Program.counters``), after ``HELPERS``: the draws of
# ``hawk.philox``, operation for operation. In the lane loop ``seed`` (uint64), ``sample_id``
# and ``step_id`` (int64) are the run's seed, the lane's global sample index and its step number.
RANDOM_HELPERS = "\n".join([
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


# Helpers of a program with shifts (after ``HELPERS``): NumPy's shifts, whose count outside
# [0, bits) gives 0 (or -1 for >> of a negative number); Numba's are LLVM's, undefined there.
SHIFT_HELPERS = """\
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
