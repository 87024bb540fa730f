"""The random streams of hawk kernels, defined in NumPy: Philox4x32-10 and the draws built on it.

A draw is a pure function of four numbers: the run's ``seed``, the sample's global index, the
sample's step number (the runner's count: steps taken since the runner was made or reset) and
the draw's *position*, the order of the ``hawk.uniform()``/``normal()``/... call in the kernel's
text (a call inside an ``if`` branch has its position whichever branch runs). Nothing else
enters: not the launch size, the thread, the device, the chunk of a distributed run, or which
other samples are done. So results never depend on how a run is cut up.

The generator is Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy
as 1, 2, 3", SC'11), the counter-based generator of Random123, cuRAND and JAX's GPU default:
ten rounds of a 32x32->64-bit multiply, xor with the key, the key bumped by the Weyl constants
between rounds. One call maps a 128-bit counter and a 64-bit key to four 32-bit words:

- key: ``(seed mod 2**32, seed >> 32)`` (the seed is an integer in ``[0, 2**64)``);
- counter: ``(position, step mod 2**32, (step >> 32) mod 2**16 | ((sample >> 32) mod 2**16)
  << 16, sample mod 2**32)``, so step numbers and sample indices are distinct below ``2**48``
  (larger ones wrap: a sample would have to take 2.8e14 steps).

Each draw takes one block of four words (``w0..w3``) and turns it into a number:

- ``uniform``, float64: ``((w0 << 21) | (w1 >> 11)) * 2**-53``: the 53-bit integers in
  ``[0, 2**53)``, equally likely, so every float64 of the form ``k * 2**-53`` in ``[0, 1)``
  (the full mantissa); float32: ``(w0 >> 8) * 2**-24``, 24 bits;
- ``normal``: Box-Muller, ``sqrt(-2 log u1) * cos(2 pi u2)`` in float64, with
  ``u1 = (k1 + 1) * 2**-53`` in ``(0, 1]`` from ``w0, w1`` and ``u2 = k2 * 2**-53`` from
  ``w2, w3``; a float32 kernel rounds the float64 result. ``log`` and ``cos`` are not the C
  library's but ``log53`` and ``cos53`` below, written with integer operations, ``+ - * /`` and
  ``sqrt`` only, whose results IEEE 754 fixes: every backend (NumPy, Numba, CUDA without FMA
  contraction) computes the same bits, and the CPU vectorises them where a library call would
  not vectorise. They are within a few ulp of the true ``log`` and ``cos``;
- ``exponential``: ``-log(u1)`` with ``u1`` as above and ``log53``, in float64 (float32:
  rounded);
- ``randint(lo, hi)``: with ``r = min(max(hi - lo, 0), 2**32)`` (``hi <= lo`` gives ``lo``),
  ``lo + ((w0 * r + ((w1 * r) >> 32)) >> 32)``, i.e. ``floor(x * r / 2**64)`` for the 64-bit
  integer ``x = w0 * 2**32 + w1``: each of the ``r`` values has probability within
  ``r / 2**64`` (relative) of ``1/r``, a bias below 2.4e-10.

The functions below take NumPy arrays (or Python ints) and compute with ``uint64`` arrays that
hold 32-bit words; ``hawk.reference`` calls them, and every emitter renders the same operations,
so every draw (normals and exponentials included) is bit for bit the same on every backend.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["philox4x32", "counter_words", "key_words", "block", "uniform", "normal",
           "exponential", "randint", "log53", "cos53", "horner_text", "DISTRIBUTIONS", "ROUNDS",
           "M0", "M1", "W0", "W1"]

ROUNDS = 10
M0, M1 = 0xD2511F53, 0xCD9E8D57  # the round multipliers
W0, W1 = 0x9E3779B9, 0xBB67AE85  # the key's Weyl increments (golden ratio, sqrt(3) - 1)
MASK = 0xFFFFFFFF
#: the draws a kernel can make: name -> (takes integer bounds, result is the kernel's float)
DISTRIBUTIONS = {"uniform": False, "normal": False, "exponential": False, "randint": True}

_U64 = np.uint64


def _words(x) -> np.ndarray:
    return np.asarray(x, dtype=np.uint64) & _U64(MASK)


def philox4x32(counter, key, rounds: int = ROUNDS) -> tuple[np.ndarray, ...]:
    """Philox4x32-``rounds`` of ``counter`` (four 32-bit words) under ``key`` (two words), as
    Random123's ``philox4x32_R``: the four output words (``uint64`` arrays holding 32 bits)."""
    c0, c1, c2, c3 = (_words(w) for w in counter)
    k0, k1 = (_words(w) for w in key)
    for r in range(rounds):
        if r:
            k0 = (k0 + _U64(W0)) & _U64(MASK)
            k1 = (k1 + _U64(W1)) & _U64(MASK)
        p0 = c0 * _U64(M0)
        p1 = c2 * _U64(M1)
        c0, c1, c2, c3 = (p1 >> _U64(32)) ^ c1 ^ k0, p1 & _U64(MASK), \
            (p0 >> _U64(32)) ^ c3 ^ k1, p0 & _U64(MASK)
    return c0, c1, c2, c3


def counter_words(sample, step, position):
    """The counter of draw ``position`` of a sample's step (see the module docstring)."""
    sample = np.asarray(sample, dtype=np.int64).astype(np.uint64)
    step = np.asarray(step, dtype=np.int64).astype(np.uint64)
    high = ((step >> _U64(32)) & _U64(0xFFFF)) | (((sample >> _U64(32)) & _U64(0xFFFF))
                                                  << _U64(16))
    return (np.full(np.shape(sample), position, dtype=np.uint64), step & _U64(MASK), high,
            sample & _U64(MASK))


def key_words(seed: int) -> tuple[int, int]:
    """The key of ``seed`` (an int in ``[0, 2**64)``)."""
    return seed & MASK, seed >> 32


def block(seed: int, sample, step, position: int, rounds: int = ROUNDS):
    """The four words of draw ``position`` of each sample in ``sample`` at step ``step``."""
    return philox4x32(counter_words(sample, step, position), key_words(seed), rounds)


def _integer53(high: np.ndarray, low: np.ndarray) -> np.ndarray:
    return ((high << _U64(21)) | (low >> _U64(11))).astype(np.int64)


def uniform(words, dtype) -> np.ndarray:
    """Uniform in ``[0, 1)`` of ``dtype`` (float64: 53 bits; float32: 24 bits)."""
    if np.dtype(dtype) == np.float32:
        return (words[0] >> _U64(8)).astype(np.int64).astype(np.float32) * np.float32(2.0**-24)
    return _integer53(words[0], words[1]).astype(np.float64) * 2.0**-53


# -- log and cos from + - * / alone, so that every backend computes the same bits -------------

LN2_HI = 6.93147180369123816490e-01  # fdlibm's split of log(2): LN2_HI * e is exact for |e| < 2**11
LN2_LO = 1.90821492927058770002e-10
SQRT2 = 1.4142135623730951
PI_4 = math.pi / 4
#: log(m) = 2 s + 2 s z P(z), s = (m - 1) / (m + 1), z = s * s: P's coefficients 1 / (2k + 1)
LOG_SERIES = tuple(1.0 / (2 * k + 1) for k in range(1, 11))
#: Taylor coefficients of sin (x**3, x**5, ... x**17) and cos (x**4, ... x**18) on [0, pi/4]
SIN_SERIES = tuple((-1.0) ** k / math.factorial(2 * k + 1) for k in range(1, 9))
COS_SERIES = tuple((-1.0) ** k / math.factorial(2 * k) for k in range(2, 10))


def horner_text(z: str, coefficients, literal=repr) -> str:
    """``_horner`` as source text, for an emitter (``literal`` spells a float)."""
    text = literal(coefficients[-1])
    for c in reversed(coefficients[:-1]):
        text = f"({literal(c)} + {z} * {text})"
    return text


def _horner(z: np.ndarray, coefficients) -> np.ndarray:
    """``c0 + z * (c1 + z * (c2 + ...))``, innermost first: the order every backend uses."""
    total = np.full(np.shape(z), coefficients[-1])
    for c in reversed(coefficients[:-1]):
        total = c + z * total
    return total


def log53(k: np.ndarray) -> np.ndarray:
    """``log(k * 2**-53)`` for int64 ``k`` in ``[1, 2**53]``, from integer operations and
    ``+ - * /`` only (no library call, so every backend gives the same bits): ``k = 2**e m``
    with ``m`` in ``[sqrt(1/2), sqrt(2))`` (found with shifts, exactly), then
    ``(e - 53) log 2 + log(m)`` with ``log(m)`` from the ``atanh`` series of
    ``s = (m - 1) / (m + 1)``, ``|s| < 0.172``, to ten terms. Within 2 ulp of the correctly
    rounded result (``tests/test_random_numbers.py`` measures it)."""
    k = np.asarray(k, dtype=np.int64)
    e = np.zeros(np.shape(k), dtype=np.int64)
    for shift in (32, 16, 8, 4, 2, 1):  # e = floor(log2(k)), by binary search
        e = e + shift * ((k >> (e + shift)) != 0)
    top = np.where(e <= 52, k << np.maximum(52 - e, 0), k >> 1)  # k's bits, top bit at 52
    m = top.astype(np.float64) * 2.0**-52  # in [1, 2), exactly
    big = m > SQRT2
    m = np.where(big, m * 0.5, m)
    e = e + big - 53
    s = (m - 1.0) / (m + 1.0)
    z = s * s
    log_m = 2.0 * s + 2.0 * s * (z * _horner(z, LOG_SERIES))
    ef = e.astype(np.float64)
    return ef * LN2_HI + (ef * LN2_LO + log_m)


def cos53(k: np.ndarray) -> np.ndarray:
    """``cos(2 pi k 2**-53)`` for int64 ``k`` in ``[0, 2**53)``, from integer operations and
    ``+ - * /`` only: the octant from ``k``'s top three bits (exact), the angle within it from
    the other 50 (measured from the nearer multiple of pi/2, so in ``[0, pi/4]``), then Taylor
    polynomials of sin and cos. Within 2 ulp of the correctly rounded result, plus the one
    rounding of the reduced angle near the zeros of cos (an absolute error below 1e-16)."""
    k = np.asarray(k, dtype=np.int64)
    octant = k >> 50
    f = k & ((1 << 50) - 1)
    odd = (octant & 1) == 1
    f = np.where(odd, (1 << 50) - f, f)  # odd octants: the distance to the next pi/2
    x = f.astype(np.float64) * 2.0**-50 * PI_4
    w = x * x
    sin_x = x + x * (w * _horner(w, SIN_SERIES))
    cos_x = 1.0 - 0.5 * w + w * (w * _horner(w, COS_SERIES))
    cos_phi = np.where(odd, sin_x, cos_x)  # the angle within its quadrant: phi
    sin_phi = np.where(odd, cos_x, sin_x)
    quadrant = octant >> 1
    return np.select([quadrant == 0, quadrant == 1, quadrant == 2],
                     [cos_phi, -sin_phi, -cos_phi], sin_phi)


def normal(words, dtype) -> np.ndarray:
    """Standard normal by Box-Muller (module docstring), float64, rounded to ``dtype``."""
    k1 = _integer53(words[0], words[1]) + 1  # u1 = k1 * 2**-53 in (0, 1]
    k2 = _integer53(words[2], words[3])  # u2 = k2 * 2**-53 in [0, 1)
    radius = np.sqrt(log53(k1) * -2.0)
    return (radius * cos53(k2)).astype(dtype)


def exponential(words, dtype) -> np.ndarray:
    """Standard exponential, ``-log(u1)`` with ``u1`` in ``(0, 1]``, rounded to ``dtype``."""
    return np.negative(log53(_integer53(words[0], words[1]) + 1)).astype(dtype)


def randint(words, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """An integer in ``[lo, hi)`` (``lo`` where ``hi <= lo``; ranges above ``2**32`` are cut to
    ``2**32``): ``lo + floor(x * r / 2**64)`` for the 64-bit word pair ``x`` (docstring)."""
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    span = hi.astype(np.uint64) - lo.astype(np.uint64)  # wraps: the true width when hi > lo
    span = np.where(hi > lo, np.minimum(span, _U64(1 << 32)), _U64(0))
    offset = (words[0] * span + ((words[1] * span) >> _U64(32))) >> _U64(32)
    return (lo.astype(np.uint64) + offset).astype(np.int64)
