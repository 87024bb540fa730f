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
  ``w2, w3``; a float32 kernel rounds the float64 result. ``log``, ``cos`` and ``sqrt`` are the
  C library's (the reference evaluates them with Python's ``math``, the CPU backend calls the
  same functions, bit for bit); CUDA's libdevice ``log`` and ``cos`` are within 1 ulp and 2 ulp
  of the correctly rounded result, so a GPU normal is within a few float64 ulps of this one;
- ``exponential``: ``-log(u1)`` with ``u1`` as above, in float64 (float32: rounded);
- ``randint(lo, hi)``: with ``r = min(max(hi - lo, 0), 2**32)`` (``hi <= lo`` gives ``lo``),
  ``lo + ((w0 * r + ((w1 * r) >> 32)) >> 32)``, i.e. ``floor(x * r / 2**64)`` for the 64-bit
  integer ``x = w0 * 2**32 + w1``: each of the ``r`` values has probability within
  ``r / 2**64`` (relative) of ``1/r``, a bias below 2.4e-10.

The functions below take NumPy arrays (or Python ints) and compute with ``uint64`` arrays that
hold 32-bit words; ``hawk.reference`` calls them, and every emitter renders the same operations.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["philox4x32", "counter_words", "key_words", "block", "uniform", "normal",
           "exponential", "randint", "DISTRIBUTIONS", "ROUNDS", "M0", "M1", "W0", "W1"]

ROUNDS = 10
M0, M1 = 0xD2511F53, 0xCD9E8D57  # the round multipliers
W0, W1 = 0x9E3779B9, 0xBB67AE85  # the key's Weyl increments (golden ratio, sqrt(3) - 1)
MASK = 0xFFFFFFFF
TWO_PI = 2.0 * math.pi  # 6.283185307179586, the float64 nearest 2 pi
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


def _open_uniform(high, low) -> np.ndarray:
    """Uniform in ``(0, 1]``, float64, 53 bits."""
    return (_integer53(high, low) + 1).astype(np.float64) * 2.0**-53


def _libm(function, x: np.ndarray) -> np.ndarray:
    """``function`` (from ``math``, i.e. the C library) element by element, in float64."""
    return np.asarray(np.frompyfunc(function, 1, 1)(x), dtype=np.float64)


def normal(words, dtype) -> np.ndarray:
    """Standard normal by Box-Muller (module docstring), float64, rounded to ``dtype``."""
    u1 = _open_uniform(words[0], words[1])
    u2 = _integer53(words[2], words[3]).astype(np.float64) * 2.0**-53
    radius = np.sqrt(_libm(math.log, u1) * -2.0)
    z = radius * _libm(math.cos, TWO_PI * u2)
    return z.astype(dtype)


def exponential(words, dtype) -> np.ndarray:
    """Standard exponential, ``-log(u1)`` with ``u1`` in ``(0, 1]``, rounded to ``dtype``."""
    return np.negative(_libm(math.log, _open_uniform(words[0], words[1]))).astype(dtype)


def randint(words, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """An integer in ``[lo, hi)`` (``lo`` where ``hi <= lo``; ranges above ``2**32`` are cut to
    ``2**32``): ``lo + floor(x * r / 2**64)`` for the 64-bit word pair ``x`` (docstring)."""
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    span = hi.astype(np.uint64) - lo.astype(np.uint64)  # wraps: the true width when hi > lo
    span = np.where(hi > lo, np.minimum(span, _U64(1 << 32)), _U64(0))
    offset = (words[0] * span + ((words[1] * span) >> _U64(32))) >> _U64(32)
    return (lo.astype(np.uint64) + offset).astype(np.int64)
