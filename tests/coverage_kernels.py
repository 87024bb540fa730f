"""The op-coverage kernel (in a file, since hawk reads kernels' source): every ``OpKind`` and
every math function, each feeding a stored output so that no dead-code pass can drop it.

Bound with float64 or float32 arrays for ``a``, ``b``, ``c``, ``x`` and the ``f_`` outputs, it
covers every float op and math function in that dtype; ``i``, ``j``, ``stop``, ``n`` and the
``k_`` outputs are int64 and ``h`` float64 in both. ``test_op_coverage.py`` checks that the IR
really contains every op, and that the inputs exercise it.

Each step ``u = a + x`` is positive (the domain of ``sqrt``, ``log`` and ``pow``'s base) and
``w = b - x`` is signed; ``x`` moves by ``c`` every step, so every step sees new values. The
library functions that are not correctly rounded each have their own output; every other op is
summed into ``f_arith`` or ``k_arith``, arranged so that one operator replaced by another changes
the sum (``min(u, w) - max(u, w)``, ``floor(w) - ceil(w)``), and the comparisons and logic
feed the bits of ``f_bits`` and ``k_bits`` (``(a < b) != (a <= b)`` is ``a == b``: a wrong
comparison shows on the samples where ``a == b``, which the inputs contain).

Numba compiles it once per dtype, in seconds that grow with the number of outputs and of
conditional expressions (each one is basic blocks): keep it to one kernel and few of both.
"""

import math

import hawk
from hawk import Mutable, Out, Param, Scalar, Table, Terminated


@hawk.kernel
def every_op(a: Scalar, b: Scalar, c: Param, h: Param, i: Scalar, j: Scalar, stop: Scalar,
             terminated: Terminated, x: Mutable[Scalar], n: Mutable[Scalar],
             f_exp: Out[Scalar], f_log: Out[Scalar], f_sin: Out[Scalar], f_cos: Out[Scalar],
             f_tan: Out[Scalar], f_tanh: Out[Scalar], f_atan2: Out[Scalar],
             f_pow: Out[Scalar], f_hypot: Out[Scalar], f_arith: Out[Scalar],
             f_bits: Out[Scalar], k_arith: Out[Scalar], k_bits: Out[Scalar]):
    u = a + x
    w = b - x
    # library functions, in the float dtype of a, b and x
    f_exp = math.exp(w)
    f_log = math.log(u)
    f_sin = math.sin(w)
    f_cos = math.cos(w)
    f_tan = math.tan(w)
    f_tanh = math.tanh(w)
    f_atan2 = math.atan2(w, u)
    f_pow = math.pow(u, w)
    f_hypot = math.hypot(u, w)
    # float arithmetic and the correctly rounded functions
    f_arith = -w + u * w / (u + 1.0) + abs(w) + min(u, w) - max(u, w) + (u if w > 0.5 else w)
    f_arith = f_arith + 4.0 * (u // w) + u % w
    f_arith = f_arith + math.sqrt(u) * math.fabs(w) + math.floor(w) - math.ceil(w)
    # conversions: int64 -> float; in a float32 kernel also float32 -> float64 (by the float64
    # Param h) and float64 -> float32 (the float64 sum stored into the float32 output)
    f_arith = f_arith + (i + u) + w * h
    # float comparisons (a == b on some samples), == and != between bools, and, or, not
    q = u > 1.5
    f_bits = ((1.0 if (a < b) != (a <= b) else 0.0) + (2.0 if (a > b) == (a >= b) else 0.0)
              + (4.0 if a == b and q else 0.0) + (8.0 if not (a != b or q) else 0.0))
    # int64 arithmetic and comparisons (j is never 0, and equals i on some samples)
    k_arith = -i + abs(j) * i - min(i, j) + max(i, j) + (i if i > j else j)
    k_arith = k_arith + 100 * (i // j) + i % j
    k_bits = ((1 if (i < j) != (i <= j) else 0) + (2 if (i > j) == (i >= j) else 0)
              + (4 if (i == j) != (i < 0) else 0) + (8 if (i != j) == (j > 0) else 0))
    x += c
    n += 1
    terminated = n >= stop


@hawk.kernel(dtypes={"i": "int32", "j": "int32", "ci": "int32", "p": "uint32", "q": "uint32",
                     "cp": "uint32", "r": "uint64", "t": "uint64", "cr": "uint64",
                     "k_int32": "int32", "k_uint32": "uint32", "k_uint64": "uint64",
                     "n": "int64", "stop": "int64", "k_draws": "int64"})
def more_ops(v: Scalar, c: Param, i: Scalar, j: Scalar, ci: Scalar, p: Scalar, q: Scalar,
             cp: Scalar, r: Scalar, t: Scalar, cr: Scalar, stop: Scalar, terminated: Terminated,
             x: Mutable[Scalar], n: Mutable[Scalar],
             f_asin: Out[Scalar], f_acos: Out[Scalar], f_atan: Out[Scalar], f_erf: Out[Scalar],
             f_log10: Out[Scalar], f_log1p: Out[Scalar], f_expm1: Out[Scalar],
             f_cbrt: Out[Scalar], f_sinh: Out[Scalar], f_cosh: Out[Scalar],
             k_int32: Out[Scalar], k_uint32: Out[Scalar], k_uint64: Out[Scalar],
             f_draws: Out[Scalar], k_draws: Out[Scalar], tab: Table[2], f_table: Out[Scalar],
             f_solve: Out[Scalar]):
    """The ops and functions issue 14 added: the math functions (``w`` stays in (-1, 1), ``u``
    positive), the 32-bit and unsigned integers with every integer op, bit operations and shift
    counts inside and outside ``[0, bits)`` (``ci``, ``cp``, ``cr``), and every draw and
    counter (bound with a seed), a table read at signed, unsigned 32-bit and unsigned
    64-bit indices in and out of range (``tab``, clamped to its edges), and a solve above
    ``hawk.linalg.UNROLLED_SIDE`` (the whole-matrix ops, rendered as loops)."""
    w = v + x
    u = 1.5 + w
    f_asin = math.asin(w)
    f_acos = math.acos(w)
    f_atan = math.atan(u)
    f_erf = math.erf(w)
    f_log10 = math.log10(u)
    f_log1p = math.log1p(w)
    f_expm1 = math.expm1(w)
    f_cbrt = math.cbrt(w)
    f_sinh = math.sinh(u)
    f_cosh = math.cosh(w)
    # each integer type: arithmetic, comparisons, bit operations (j, q, t are never 0)
    k_int32 = (-i + abs(j) * i - min(i, j) + max(i, j) + (i if i > j else j) + 100 * (i // j)
               + i % j + ((i & j) | (i << ci)) + ((i >> ci) ^ ~j)
               + ((1 if (i < j) != (i <= j) else 0) + (2 if (i > j) == (i >= j) else 0)
                  + (4 if (i == j) != (i != j) else 0)))
    k_uint32 = (-p + abs(q) * p - min(p, q) + max(p, q) + (p if p > q else q) + 100 * (p // q)
                + p % q + ((p & q) | (p << cp)) + ((p >> cp) ^ ~q)
                + ((1 if (p < q) != (p <= q) else 0) + (2 if (p > q) == (p >= q) else 0)
                   + (4 if (p == q) != (p != q) else 0)))
    k_uint64 = (-r + abs(t) * r - min(r, t) + max(r, t) + (r if r > t else t) + 100 * (r // t)
                + r % t + ((r & t) | (r << cr)) + ((r >> cr) ^ ~t)
                + ((1 if (r < t) != (r <= t) else 0) + (2 if (r > t) == (r >= t) else 0)
                   + (4 if (r == t) != (r != t) else 0)) + p)
    k_int32 = k_int32 + (1 if (i & 1) == 1 and True & (j > 0) | False ^ (j > 3) else 0)
    # draws and counters, and conversions of the new integer types to floats
    f_draws = (hawk.uniform() + hawk.normal() + hawk.exponential() + hawk.uniform(1.0, 2.0)
               + hawk.normal(2.0, 0.5) + i * 0.5 + p * 0.25 + float(r))
    k_draws = hawk.randint(0, 10) + hawk.sample_index() * 100 + hawk.step() * 10000 + i + p
    f_table = tab[i, p % 40] + tab[j * 3, r] * x
    ones = hawk.zeros(9) + 1.0
    solved = hawk.solve(hawk.identity(9) * (3.0 + u) + hawk.outer(ones, ones * w), ones * u)
    f_solve = solved[0] - solved[8] * w
    x += c
    n += 1
    terminated = n >= stop
