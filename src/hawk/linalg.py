"""Small dense linear algebra on hawk's vectors and matrices, defined once for a kernel body and
for NumPy arrays.

Every function here is written against an ``Arithmetic`` (add, multiply, compare, select...):
the frontend passes one that emits IR ops, and the public functions (``hawk.solve``,
``hawk.det``... called outside a kernel) pass ``NUMPY``, which computes on arrays. So the
expressions, and their order, are the same in both places by construction: a NumPy result on
the host is the bits a kernel computes on any backend.

Matrices are lists of rows, vectors lists of elements. Sums run left to right
(``a[0]*b[0] + a[1]*b[1] + ...``), as ``hawk.dot``.

``solve`` is Gaussian elimination with partial pivoting, branch-free (every choice is a select,
so a GPU warp never diverges): for column ``k``, each row ``i > k`` in turn is swapped with row
``k`` when ``|a[i][k]| > |a[k][k]|``, which leaves the first largest ``|a[i][k]|`` as the pivot
(LAPACK's choice; only the order of the other rows differs); then each row ``i > k`` gets
``a[i][j] - f * a[k][j]`` with ``f = a[i][k] / a[k][k]``, or ``f = 0`` when the pivot is 0
(the column is already zero below it: LAPACK's ``getrf`` also goes on past a zero pivot; a NaN
pivot is divided by, as ``getrf`` does, so every component that depends on a NaN is NaN);
then back substitution, ``x[i] = (b[i] - a[i][i+1]*x[i+1] - ...) / a[i][i]`` (subtracted left
to right). A singular matrix divides by a zero pivot there, which gives inf or NaN
components (IEEE), never an error. ``det`` is the product of the pivots, left to right,
negated for an odd number of swaps (as ``numpy.linalg.det``, up to the order of the rows; 0
for a singular matrix whose pivot is exactly 0); ``inverse(a)`` is ``solve(a, identity)``.

Sizes. Written out op by op, an elimination is about ``n**3 / 3`` multiply-adds and as many
selects for the row swaps: 2,000 ops at 8 x 8, 90,000 at 64 x 64, and the compilers' time grows
faster than the code. So above ``UNROLLED_SIDE`` a kernel solves with the IR's whole-matrix ops
(``LU`` and ``LU_SOLVE``, ``hawk.ir.AGGREGATES``), which the backends render as loops:
``lu_factor`` and ``lu_substitute`` below are what those ops mean (on NumPy arrays, for the
reference executor). ``lu_factor`` is ``eliminate``'s column loop on ``a`` alone, keeping each
column's swap decisions and, in the column below the pivot (which elimination never reads
again), each row's factor; ``lu_substitute`` replays the same swaps and subtractions on the
right-hand sides, then substitutes back as ``solve`` does. One difference: a subtraction whose
coefficient (a row's factor, or an element of the eliminated matrix in the back substitution)
is exactly zero is skipped, as the reference BLAS's rank-one update skips a zero multiplier.
So a sparse matrix (a stiff model's Jacobian, banded or a reaction network's) costs what its
nonzeros cost, not ``n**3 / 3``. Subtracting ``0 * x`` gives back what it subtracts from, so the
bits are ``solve``'s, but for an ``x`` that is infinite or NaN (``0 * x`` is NaN: ``solve``
spreads it into rows the skipped step would not have touched) and for the sign of a zero
(``-0.0 - 0.0 * x`` is ``+0.0`` when ``x`` is negative).
"""

from __future__ import annotations

import numpy as np

__all__ = ["Arithmetic", "NUMPY", "matmul", "transpose", "outer", "trace", "det", "solve",
           "inverse", "sum_products", "eliminate", "lu_factor", "lu_substitute",
           "UNROLLED_SIDE"]

#: the largest square matrix ``hawk.solve`` and ``hawk.inverse`` write out op by op in a
#: kernel; a larger one is solved by loops (see "Sizes")
UNROLLED_SIDE = 8


class Arithmetic:
    """The operations the algorithms use, on whatever an element is (an IR value, an array)."""

    def add(self, a, b): ...
    def sub(self, a, b): ...
    def mul(self, a, b): ...
    def div(self, a, b): ...
    def neg(self, a): ...
    def abs(self, a): ...
    def greater(self, a, b): ...  # a bool
    def equal(self, a, b): ...  # a bool
    def differ(self, a, b): ...  # a != b of two bools
    def select(self, condition, a, b): ...
    def false(self): ...
    def zero(self): ...


class _NumpyArithmetic(Arithmetic):
    add, sub, mul = staticmethod(np.add), staticmethod(np.subtract), staticmethod(np.multiply)
    div, neg, abs = staticmethod(np.true_divide), staticmethod(np.negative), staticmethod(np.abs)
    greater, equal = staticmethod(np.greater), staticmethod(np.equal)
    differ = staticmethod(np.not_equal)
    select = staticmethod(np.where)

    def false(self):
        return np.False_

    def zero(self):
        return 0.0


NUMPY = _NumpyArithmetic()


def sum_products(ops: Arithmetic, a: list, b: list):
    """``a[0]*b[0] + a[1]*b[1] + ...``, left to right."""
    total = ops.mul(a[0], b[0])
    for x, y in zip(a[1:], b[1:], strict=True):
        total = ops.add(total, ops.mul(x, y))
    return total


def transpose(a: list[list]) -> list[list]:
    return [list(column) for column in zip(*a, strict=True)]


def matmul(ops: Arithmetic, a: list[list], b: list[list]) -> list[list]:
    """The matrix product ``a @ b`` (a vector is a one-row or one-column matrix here)."""
    columns = transpose(b)
    return [[sum_products(ops, row, column) for column in columns] for row in a]


def outer(ops: Arithmetic, a: list, b: list) -> list[list]:
    """``m[i][j] = a[i] * b[j]``."""
    return [[ops.mul(x, y) for y in b] for x in a]


def trace(ops: Arithmetic, a: list[list]):
    """The diagonal summed left to right."""
    total = a[0][0]
    for k in range(1, min(len(a), len(a[0]))):
        total = ops.add(total, a[k][k])
    return total


def eliminate(ops: Arithmetic, a: list[list], b: list[list]):
    """Gaussian elimination with partial pivoting of ``a`` (square) and the right-hand sides
    ``b`` (rows of ``a``'s height) alike: the upper-triangular ``a``, the transformed ``b``
    and whether the rows were swapped an odd number of times. See the module docstring."""
    a, b = [list(row) for row in a], [list(row) for row in b]
    size, odd = len(a), ops.false()
    for k in range(size):
        for i in range(k + 1, size):
            swap = ops.greater(ops.abs(a[i][k]), ops.abs(a[k][k]))
            for rows in (a, b):
                first = k if rows is a else 0
                top, other = rows[k], rows[i]
                for j in range(first, len(top)):
                    top[j], other[j] = (ops.select(swap, other[j], top[j]),
                                        ops.select(swap, top[j], other[j]))
            odd = ops.differ(odd, swap)
        zero_pivot = ops.equal(a[k][k], ops.zero()) if k + 1 < size else None
        for i in range(k + 1, size):
            factor = ops.select(zero_pivot, ops.zero(), ops.div(a[i][k], a[k][k]))
            for j in range(k + 1, size):
                a[i][j] = ops.sub(a[i][j], ops.mul(factor, a[k][j]))
            for j in range(len(b[i])):
                b[i][j] = ops.sub(b[i][j], ops.mul(factor, b[k][j]))
    return a, b, odd


def solve(ops: Arithmetic, a: list[list], b: list[list]) -> list[list]:
    """``x`` with ``a @ x == b`` for a square ``a`` and a right-hand side of one or more
    columns (rows of ``b``)."""
    u, c, _ = eliminate(ops, a, b)
    size = len(u)
    x: list[list] = [[] for _ in range(size)]
    for i in reversed(range(size)):
        row = []
        for j in range(len(c[i])):
            value = c[i][j]
            for m in range(i + 1, size):
                value = ops.sub(value, ops.mul(u[i][m], x[m][j]))
            row.append(ops.div(value, u[i][i]))
        x[i] = row
    return x


def det(ops: Arithmetic, a: list[list]):
    """The determinant: the pivots' product, negated after an odd number of row swaps."""
    u, _, odd = eliminate(ops, a, [[] for _ in a])
    product = u[0][0]
    for k in range(1, len(u)):
        product = ops.mul(product, u[k][k])
    return ops.select(odd, ops.neg(product), product)


def inverse(ops: Arithmetic, a: list[list], one, zero) -> list[list]:
    """``solve(a, identity)``, with ``one`` and ``zero`` the identity's elements."""
    size = len(a)
    return solve(ops, a, [[one if i == j else zero for j in range(size)] for i in range(size)])


def lu_factor(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What an ``LU`` op holds, for matrices ``a`` of shape ``(n, n, samples)``: the
    eliminated matrix, with each row's factor of column ``k`` kept below the pivot at
    ``[row, k]``, and ``swaps[k, i]``, whether column ``k``'s pass swapped rows ``k`` and
    ``i``. Each value is ``eliminate``'s, in its order, but for a row whose factor is zero,
    which is left as it is (see "Sizes")."""
    m = np.array(a, copy=True)
    size = m.shape[0]
    swaps = np.zeros((size, size) + m.shape[2:], dtype=bool)
    for k in range(size):
        for i in range(k + 1, size):
            swap = np.abs(m[i, k]) > np.abs(m[k, k])
            top, other = m[k, k:].copy(), m[i, k:].copy()
            m[k, k:], m[i, k:] = np.where(swap, other, top), np.where(swap, top, other)
            swaps[k, i] = swap
        if k + 1 < size:
            zero_pivot = m[k, k] == 0
            for i in range(k + 1, size):
                factor = np.where(zero_pivot, m.dtype.type(0), m[i, k] / m[k, k])
                m[i, k + 1:] = np.where(factor == 0, m[i, k + 1:],
                                        m[i, k + 1:] - factor * m[k, k + 1:])
                m[i, k] = factor
    return m, swaps


def lu_substitute(m: np.ndarray, swaps: np.ndarray, b: np.ndarray) -> np.ndarray:
    """What an ``LU_SOLVE`` op holds: ``x`` with ``a @ x == b`` for ``lu_factor(a)`` and
    right-hand sides ``b`` of shape ``(n, columns, samples)``, each value ``solve``'s, but for
    the subtractions with a zero coefficient, which are skipped (see "Sizes")."""
    x = np.array(b, copy=True)
    size = m.shape[0]
    for k in range(size):
        for i in range(k + 1, size):
            top, other = x[k].copy(), x[i].copy()
            x[k], x[i] = np.where(swaps[k, i], other, top), np.where(swaps[k, i], top, other)
        for i in range(k + 1, size):
            x[i] = np.where(m[i, k] == 0, x[i], x[i] - m[i, k] * x[k])
    for i in reversed(range(size)):
        value = x[i]
        for j in range(i + 1, size):
            value = np.where(m[i, j] == 0, value, value - m[i, j] * x[j])
        x[i] = value / m[i, i]
    return x
