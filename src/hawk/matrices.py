"""hawk's matrix helpers: ``matrix``, ``zeros``, ``identity``, ``outer``, ``transpose``,
``matmul`` (``@`` in a body), ``trace``, ``det``, ``inverse``, ``solve`` and ``sparse_solve``
(``hawk.sparse_lu``).

In a kernel body they are understood by the frontend and lowered to scalar ops. Outside one
they compute on NumPy arrays in hawk's SoA layout (a vector is ``(K,)`` or ``(K, n)``, a matrix
``(R, C)`` or ``(R, C, n)``: the sample axis last), with the same expressions in the same order
(``hawk.linalg`` and ``hawk.sparse_lu`` define them once for both), so a result on the host
is bit-for-bit what a kernel computes (``sparse_solve``: for the same pattern).
"""

from __future__ import annotations

import numpy as np

from . import linalg, sparse_lu
from .ir import MAX_MATRIX_SIDE

__all__ = ["matrix", "zeros", "identity", "outer", "transpose", "matmul", "trace", "det",
           "inverse", "solve", "sparse_solve", "concat"]


def _rows(a, what: str) -> list[list]:
    a = np.asarray(a)
    if a.ndim < 2 or a.ndim > 3:
        raise ValueError(f"{what} takes a matrix: an array of shape (R, C) or (R, C, n), got "
                         f"shape {a.shape}")
    return [[a[i, j] for j in range(a.shape[1])] for i in range(a.shape[0])]


def _square(a, what: str) -> list[list]:
    rows = _rows(a, what)
    if len(rows) != len(rows[0]):
        raise ValueError(f"{what} takes a square matrix, got {len(rows)} x {len(rows[0])}")
    return rows


def _stack(rows: list[list]) -> np.ndarray:
    return np.stack([np.stack(np.broadcast_arrays(*row)) for row in rows])


def _float(a) -> np.ndarray:
    a = np.asarray(a)
    return a if a.dtype.kind == "f" else a.astype(np.float64)


def matrix(*rows):
    """A matrix from its rows, each a vector or a sequence of numbers of one length:
    ``hawk.matrix((a, b), (c, d))`` is ``[[a, b], [c, d]]`` (``Matrix[2, 2]``).

    Args:
        rows: 1 to 128 rows of 1 to 128 components each (numbers or arrays of shape ``(n,)``
            outside a kernel, scalar values inside one).
    """
    lengths = {len(row) for row in rows}
    if len(lengths) != 1 or not 1 <= len(rows) <= MAX_MATRIX_SIDE \
            or not 1 <= min(lengths) <= MAX_MATRIX_SIDE:
        raise ValueError(f"matrix() takes 1 to {MAX_MATRIX_SIDE} rows of one length from 1 to "
                         f"{MAX_MATRIX_SIDE}, got rows of lengths {[len(r) for r in rows]}")
    return _stack([list(row) for row in rows])


def zeros(rows: int, columns: int | None = None):
    """A zero vector of ``rows`` components, or with ``columns`` a zero matrix (float64).

    Args:
        rows: the components of the vector, or the rows of the matrix (a constant int).
        columns: the matrix's columns; None (default) for a vector.
    """
    shape = (rows,) if columns is None else (rows, columns)
    return np.zeros(shape)


def identity(size: int):
    """The ``size`` x ``size`` identity matrix (float64).

    Args:
        size: its rows and columns (a constant int).
    """
    return np.eye(size)


def outer(a, b):
    """The outer product of two vectors: ``m[i, j] = a[i] * b[j]``.

    Args:
        a, b: vectors (arrays of shape ``(K,)`` or ``(K, n)`` outside a kernel).
    """
    return _stack(linalg.outer(linalg.NUMPY, list(np.asarray(a)), list(np.asarray(b))))


def transpose(a):
    """The transposed matrix (``m.T`` in a body).

    Args:
        a: a matrix (an array of shape ``(R, C)`` or ``(R, C, n)`` outside a kernel).
    """
    return _stack(linalg.transpose(_rows(a, "transpose()")))


def matmul(a, b):
    """The product ``a @ b`` of matrices and vectors, as in a body: matrix @ matrix, matrix @
    vector (a vector), vector @ matrix (a vector) and vector @ vector (their dot product);
    each element summed left to right.

    Args:
        a, b: vectors ``(K,)``/``(K, n)`` or matrices ``(R, C)``/``(R, C, n)`` outside a
            kernel, with the inner sizes equal. A 2-D operand is a matrix unless the other
            is 3-D (one matrix per sample), which makes it a vector per sample.
    """
    a, b = np.asarray(a), np.asarray(b)
    a_vector, b_vector = _is_vector(a, b), _is_vector(b, a)
    left = [list(a)] if a_vector else _rows(a, "matmul()")
    right = [[x] for x in b] if b_vector else _rows(b, "matmul()")
    if len(left[0]) != len(right):
        raise ValueError(f"matmul() needs the inner sizes equal, got {len(left[0])} and "
                         f"{len(right)}")
    product = linalg.matmul(linalg.NUMPY, left, right)
    if a_vector and b_vector:
        return product[0][0]
    if a_vector:
        return np.stack(np.broadcast_arrays(*product[0]))
    if b_vector:
        return np.stack(np.broadcast_arrays(*[row[0] for row in product]))
    return _stack(product)


def _is_vector(x: np.ndarray, other: np.ndarray) -> bool:
    return x.ndim == 1 or (x.ndim == 2 and other.ndim == 3)


def trace(a):
    """The sum of the diagonal, left to right.

    Args:
        a: a matrix (an array of shape ``(R, C)`` or ``(R, C, n)`` outside a kernel).
    """
    return linalg.trace(linalg.NUMPY, _rows(a, "trace()"))


def det(a):
    """The determinant of a square matrix: the product of the pivots of a branch-free LU
    factorisation with partial pivoting (``hawk.linalg`` gives the exact steps), negated for
    an odd number of row swaps. A singular matrix gives 0 (or a tiny number from rounding).

    Args:
        a: a square matrix (an array of shape ``(K, K)`` or ``(K, K, n)`` outside a kernel).
    """
    return linalg.det(linalg.NUMPY, _square(_float(a), "det()"))


def inverse(a):
    """The inverse of a square matrix: ``solve(a, identity)``. A singular matrix gives inf or
    NaN components.

    Args:
        a: a square matrix (an array of shape ``(K, K)`` or ``(K, K, n)`` outside a kernel).
    """
    a = _float(a)
    return _stack(linalg.inverse(linalg.NUMPY, _square(a, "inverse()"), a.dtype.type(1),
                                 a.dtype.type(0)))


def solve(a, b):
    """``x`` with ``a @ x == b``: Gaussian elimination with partial pivoting, branch-free
    (``hawk.linalg`` gives the exact steps). A singular ``a`` gives inf or NaN components,
    never an error.

    Args:
        a: a square matrix ``(K, K)`` or ``(K, K, n)`` outside a kernel.
        b: a vector ``(K,)``/``(K, n)`` (the result is a vector) or a matrix of ``K`` rows
            (the result is a matrix).
    """
    rows, right, vector = _system(a, b, "solve()")
    return _solution(linalg.solve(linalg.NUMPY, rows, right), vector)


def sparse_solve(a, b):
    """``x`` with ``a @ x == b`` by a static sparse LU (``hawk.sparse_lu``): Gaussian
    elimination without pivoting over ``a``'s nonzeros and their fill only, the pivots in a
    fill-reducing (Markowitz) order. For matrices whose diagonal dominates, such as a stiff
    solver's ``W = I / (h gamma) - J``; the bits differ from ``solve``'s (no row swaps), and a
    zero pivot gives inf or NaN components.

    In a kernel the pattern is the elements that are not zero by construction (a constant 0,
    or arithmetic that gives 0 for any finite operands: ``x * 0``, ``0 - 0``: the structural
    zeros of ``hawk.jacobian``'s Jacobian and of ``hawk.identity``). Outside a kernel it is
    the elements not exactly 0 in some sample. A pattern with no zero, or one whose ordered
    elimination would still make more than half the dense one's multiply-subtracts
    (``hawk.sparse_lu.DENSE_SHARE``), is solved by ``solve``.

    Args:
        a: a square matrix ``(K, K)`` or ``(K, K, n)`` outside a kernel.
        b: a vector ``(K,)``/``(K, n)`` (the result is a vector) or a matrix of ``K`` rows
            (the result is a matrix).
    """
    rows, right, vector = _system(a, b, "sparse_solve()")
    size = len(rows)
    pattern = [(i, j) for i in range(size) for j in range(size) if np.any(rows[i][j] != 0)]
    plan = sparse_lu.plan_for(pattern, size)
    x = (linalg.solve(linalg.NUMPY, rows, right) if plan is None
         else sparse_lu.solve(linalg.NUMPY, rows, right, plan))
    return _solution(x, vector)


def _system(a, b, what: str) -> tuple[list, list, bool]:
    """``solve``'s and ``sparse_solve``'s arguments as rows: ``(a's rows, b's rows, whether b
    is a vector)``, ``what`` naming the call in a refusal."""
    a, b = _float(a), _float(b)
    rows = _square(a, what)
    vector = _is_vector(b, a)
    right = [[x] for x in b] if vector else _rows(b, what)
    if len(right) != len(rows):
        raise ValueError(f"{what} needs b of {len(rows)} rows, got {len(right)}")
    return rows, right, vector


def _solution(x: list[list], vector: bool):
    """A solve's rows ``x`` as an array: a vector for a vector ``b``, else a matrix."""
    return np.stack(np.broadcast_arrays(*[r[0] for r in x])) if vector else _stack(x)


def concat(*values):
    """In a kernel body: the components of numbers, vectors and matrices (row by row), in
    order, as one vector (a number if there is one component): ``hawk.concat(u, s)``, with
    ``u[a:b]`` (a slice with compile-time bounds) its inverse.

    Args:
        values: 1 to 128 numbers, vectors or matrices.
    """
    raise TypeError("hawk.concat() is understood inside a @hawk.kernel body (or a @hawk.func) "
                    "only: outside one, np.concatenate the component axes you mean")
