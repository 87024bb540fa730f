"""An explicit Runge-Kutta pair as data: ``ButcherTableau``, checked when it is defined.

A method is its coefficients: the nodes ``c``, the stage weights ``a``, the solution's weights
``b``, the error estimate's weights ``e`` and, for values inside a step, the interpolant's
weights (``dense``, with any extra stages it needs). ``hawk.ode.explicit`` turns a tableau into
hawk funcs (one generic step, one interpolant); ``hawk.ode.tableaus`` holds the methods'
coefficients, one file each. Nothing about a method is code.

A tableau is checked when it is made, as diffrax checks its ``ButcherTableau``: the shapes, each
row of ``a`` summing to its node, ``sum(b) = 1`` and ``sum(e) = 0``, and the order conditions:
``b`` meets those of every rooted tree up to ``order`` and the embedded weights (``b - e``) up
to ``error_order``; the interpolant meets the quadrature conditions up to ``dense_order`` at
several ``theta`` and is ``b`` at ``theta = 1``. A mistyped coefficient is a ``ValueError`` at
import, naming the tableau and the condition, not a method that silently loses its order.

The conventions (diffrax's and OrdinaryDiffEq's, in one place):

- stage 1 is at ``t`` with ``k1 = f(u, t)`` (the last step's ``f(u_new, t + h)``);
- ``c[i]`` and ``a[i]`` are stage ``i + 2``'s node and its weights on stages ``1 .. i + 1``;
- ``b`` weighs the ``s = len(c) + 1`` stages: ``u_new = u + h sum_i b_i k_i``;
- stage ``s + 1`` is ``f(u_new, t + h)``: the next step's ``k1``, and a stage of the error
  estimate and of the interpolant (its row of ``a`` is ``b``, its node 1);
- ``e`` weighs stages ``1 .. s + 1``: ``err = h sum_i e_i k_i``, the solution's difference to
  the embedded one;
- the interpolant's extra stages (``extra_c``, ``extra_a``) follow, each weighing every stage
  before it (``1 .. s + 1`` and the extra ones so far);
- ``dense[j]`` weighs every stage (``1 .. s + 1``, then the extra ones) at ``theta**(j + 1)``:
  ``u(t + theta h) = u + h sum_j theta**(j + 1) sum_i dense[j][i] k_i``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

__all__ = ["ButcherTableau", "rooted_trees", "from_hairer_dense"]

#: the largest order whose rooted trees the check enumerates (719 trees up to 9)
MAX_CHECKED_ORDER = 10


@dataclass(frozen=True)
class ButcherTableau:
    """An explicit Runge-Kutta pair, its interpolant, and the facts a kernel needs about them.

    Attributes:
        name: the method's name (as ``eagle.ode.solve(method=...)`` takes it).
        order: the solution's order (``b``'s).
        error_order: the embedded solution's order (``b - e``'s).
        c: the nodes of stages ``2 .. s``.
        a: the rows of stages ``2 .. s``, row ``i`` with ``i + 1`` weights.
        b: the solution's weights on stages ``1 .. s``.
        e: the error estimate's weights on stages ``1 .. s + 1``.
        e_low: a second estimate's weights on stages ``1 .. s + 1``, of order ``low_order``
            (DOP853's third-order one), or None. With it, the error norm is Hairer's for
            DOP853, ``|err|**2 / sqrt(|err|**2 + 0.01 |err_low|**2)`` (``hawk.ode.explicit``).
        low_order: ``b - e_low``'s order (0 without ``e_low``).
        extra_c: the nodes of the interpolant's extra stages.
        extra_a: their rows, each over stages ``1 .. s + 1`` and the extra ones before it.
        dense: the interpolant's weights, ``dense[j]`` at ``theta**(j + 1)`` over every stage;
            None where the method's interpolant is not a polynomial in this form (tsit5's is
            written out in ``hawk.ode.tsit5``).
        dense_order: the interpolant's order (checked: its quadrature conditions).
        dense_in_attempt: form the interpolant's coefficients in the step (DOPRI5's placement:
            the kernel's interpolations read them) rather than in each interpolation
            (Verner's: they are formed where read). Both give the same values; the op order
            differs, so each method keeps the placement its kernels were built with.
    """

    name: str
    order: int
    error_order: int
    c: tuple[float, ...]
    a: tuple[tuple[float, ...], ...]
    b: tuple[float, ...]
    e: tuple[float, ...]
    e_low: tuple[float, ...] | None = None
    low_order: int = 0
    extra_c: tuple[float, ...] = ()
    extra_a: tuple[tuple[float, ...], ...] = ()
    dense: tuple[tuple[float, ...], ...] | None = None
    dense_order: int = 0
    dense_in_attempt: bool = False

    def __post_init__(self):
        self._check_shapes()
        self._check_sums()
        self._check_orders()

    @classmethod
    def from_json(cls, text: str) -> ButcherTableau:
        """The tableau a JSON object of its fields gives (rows as arrays, every number as
        Python writes a float: ``json`` reads it back as the same double, bit for bit); checked
        as any other. For a tableau long enough that its rows are better kept as data beside
        the file that names its source (``hawk.ode.tableaus.vern9``)."""
        def frozen(value):
            return tuple(frozen(v) for v in value) if isinstance(value, list) else value

        return cls(**{name: frozen(value) for name, value in json.loads(text).items()})

    # -- the derived data ---------------------------------------------------------------------

    @property
    def stages(self) -> int:
        """``s``: the stages of a step, ``f(u_new, t + h)`` not counted."""
        return len(self.c) + 1

    def full(self) -> tuple[np.ndarray, np.ndarray]:
        """``(A, c)`` over stages ``1 .. s + 1`` and the extra ones: the square matrix of every
        stage's weights (stage ``s + 1``'s row is ``b``) and every node."""
        count = self.stages + 1 + len(self.extra_c)
        A = np.zeros((count, count))
        rows = (*self.a, self.b, *self.extra_a)
        for i, row in enumerate(rows, start=1):
            A[i, :len(row)] = row
        c = np.array((0.0, *self.c, 1.0, *self.extra_c))
        return A, c

    # -- the checks -----------------------------------------------------------------------------

    def _fail(self, what: str):
        raise ValueError(f"Butcher tableau {self.name!r}: {what}")

    def _check_shapes(self):
        s = self.stages
        if len(self.a) != len(self.c):
            self._fail(f"{len(self.c)} nodes but {len(self.a)} rows of a")
        for i, row in enumerate(self.a):
            if len(row) != i + 1:
                self._fail(f"row {i} of a (stage {i + 2}) has {len(row)} weights, not {i + 1}")
        if len(self.b) != s:
            self._fail(f"b has {len(self.b)} weights for {s} stages")
        for name, weights in (("e", self.e), ("e_low", self.e_low)):
            if weights is not None and len(weights) != s + 1:
                self._fail(f"{name} has {len(weights)} weights, not {s + 1} (the stages and "
                           "f(u_new, t + h))")
        if len(self.extra_a) != len(self.extra_c):
            self._fail(f"{len(self.extra_c)} extra nodes but {len(self.extra_a)} extra rows")
        for i, row in enumerate(self.extra_a):
            if len(row) != s + 1 + i:
                self._fail(f"extra row {i} has {len(row)} weights, not {s + 1 + i}")
        if self.dense is not None:
            total = s + 1 + len(self.extra_c)
            for j, row in enumerate(self.dense):
                if len(row) != total:
                    self._fail(f"dense row {j} has {len(row)} weights, not {total}")
        elif self.extra_c or self.dense_in_attempt:
            self._fail("extra stages or dense_in_attempt without dense weights")
        if (self.e_low is None) != (self.low_order == 0):
            self._fail("e_low and low_order go together")

    def _check_sums(self):
        if abs(math.fsum(self.b) - 1.0) > 1e-14:
            self._fail(f"the weights b sum to {math.fsum(self.b)!r}, not 1")
        A, c = self.full()
        scale = np.maximum(np.abs(A).sum(axis=1), 1.0)
        bad = np.abs(A.sum(axis=1) - c) > 8 * np.finfo(float).eps * scale
        bad[0] = False
        if bad.any():
            i = int(np.argmax(bad))
            self._fail(f"the weights of stage {i + 1} sum to {float(A[i].sum())!r}, not to its "
                       f"node {float(c[i])!r}")
        for name, weights in (("e", self.e), ("e_low", self.e_low)):
            if weights is not None and abs(math.fsum(weights)) > 1e-14 * max(
                    1.0, sum(map(abs, weights))):
                self._fail(f"the error weights {name} sum to {math.fsum(weights)!r}, not 0")

    def _check_orders(self):
        if not 1 <= self.order <= MAX_CHECKED_ORDER:
            self._fail(f"order {self.order} is outside 1..{MAX_CHECKED_ORDER}")
        s = self.stages
        A, c = self.full()
        A, c = A[:s + 1, :s + 1], c[:s + 1]
        b = np.array((*self.b, 0.0))
        _meets(self, "b", b, A, c, self.order)
        _meets(self, "b - e", b - np.array(self.e), A, c, self.error_order)
        if self.e_low is not None:
            _meets(self, "b - e_low", b - np.array(self.e_low), A, c, self.low_order)
        if self.dense is not None:
            self._check_dense()

    def _check_dense(self):
        A, c = self.full()
        R = np.array(self.dense)  # (degree, stages)
        b_full = np.zeros(A.shape[0])
        b_full[:self.stages] = self.b
        at_one = R.sum(axis=0)
        if np.abs(at_one - b_full).max() > 1e-15 * np.abs(R).sum() * 4:
            self._fail("the interpolant at theta = 1 is not the step's solution (its weights "
                       "summed over the powers of theta are not b)")
        for theta in (0.25, 0.6, 1.0):
            powers = theta ** np.arange(1, R.shape[0] + 1)
            weights = powers @ R
            for k in range(1, self.dense_order + 1):
                rounding = 1e-14 * (np.abs(R).T @ powers) @ np.abs(c) ** (k - 1)
                if abs(weights @ c ** (k - 1) - theta**k / k) > max(rounding, 1e-14):
                    self._fail(f"the interpolant misses the quadrature condition of order {k} "
                               f"at theta = {theta}: it is not of order {self.dense_order}")


def rooted_trees(order: int) -> list[tuple]:
    """Every rooted tree with at most ``order`` nodes, each a sorted tuple of its subtrees
    (``()`` is the single node): 1, 1, 2, 4, 9, 20, 48, 115, 286 of orders 1 to 9."""
    by_order: list[list[tuple]] = [[], [()]]
    for n in range(2, order + 1):
        found = set()
        for forest in _forests(n - 1, n - 1, by_order):
            found.add(tuple(sorted(forest)))
        by_order.append(sorted(found))
    return [t for trees in by_order for t in trees]


def _forests(total: int, largest: int, by_order: list[list[tuple]]):
    """The multisets of trees with ``total`` nodes in all, none larger than ``largest``."""
    if total == 0:
        yield ()
        return
    for size in range(min(total, largest), 0, -1):
        for tree in by_order[size]:
            for rest in _forests(total - size, size, by_order):
                yield (tree, *rest)


def _size(tree: tuple) -> int:
    return 1 + sum(_size(child) for child in tree)


def _gamma(tree: tuple) -> int:
    return _size(tree) * math.prod(_gamma(child) for child in tree)


def _weights(tree: tuple, A: np.ndarray) -> np.ndarray:
    """The elementary weights ``Phi`` of ``tree`` per stage (``A``'s row sums are ``c``)."""
    out = np.ones(A.shape[0])
    for child in tree:
        out = out * (A @ _weights(child, A))
    return out


def _meets(tab: ButcherTableau, name: str, b, A, c, order: int) -> None:
    """Check that the weights ``b`` meet every order condition up to ``order`` (to the
    rounding of their terms) and miss one of order ``order + 1`` (an order claimed too low
    would make the error control wrong too)."""
    absA = np.abs(A)
    for tree in rooted_trees(order):
        phi = _weights(tree, A)
        rounding = 64 * np.finfo(float).eps * (np.abs(b) @ _weights(tree, absA))
        miss = b @ phi - 1.0 / _gamma(tree)
        if abs(miss) > max(rounding, 1e-14):
            tab._fail(f"the weights {name} miss an order condition of order {_size(tree)} "
                      f"(tree {tree}: off by {miss:.3g}), so they are not of order {order}")
    if abs(b @ c**order - 1.0 / (order + 1)) < 1e-12:  # the bushy tree first
        misses = [abs(b @ _weights(tree, A) - 1.0 / _gamma(tree))
                  for tree in rooted_trees(order + 1) if _size(tree) == order + 1]
        if max(misses) < 1e-12:
            tab._fail(f"the weights {name} meet every condition of order {order + 1}: their "
                      f"order is higher than the {order} given")


def from_hairer_dense(b, new: int, d_rows, count: int) -> tuple[tuple[float, ...], ...]:
    """Hairer's dense output (DOP853's ``CONTD8``, SciPy's ``Dop853DenseOutput``) as
    ``dense`` weights: his ``u + x (F0 + (1 - x) (F1 + x (F2 + (1 - x) (F3 + ...))))`` with
    ``F0 = du``, ``F1 = h k1 - du``, ``F2 = 2 du - h (k1 + f(u_new))``, ``F3... = h d.k``,
    ``du = h b.k``, multiplied out in powers of ``x``: the same polynomial, in monomials.

    Args:
        b: the solution's weights on the stages.
        new: the index of ``f(u_new, t + h)`` among the stages.
        d_rows: the weights of ``F3``, ``F4``... over the stages.
        count: the number of stages the weights run over.
    """
    du = np.zeros(count)
    du[:len(b)] = b
    k1, k_new = np.eye(count)[0], np.eye(count)[new]
    F = [du, k1 - du, 2 * du - k1 - k_new]
    F += [np.pad(np.array(row, dtype=float), (0, count - len(row))) for row in d_rows]
    poly = np.zeros((len(F) + 1, count))  # poly[m]: the weights at x**m
    poly[0] = F[-1]
    for i in range(len(F) - 2, -1, -1):  # p = F_i + x p (i odd) or F_i + (1 - x) p (i even)
        shifted = np.roll(poly, 1, axis=0)
        poly = shifted if i % 2 == 1 else poly - shifted
        poly[0] += F[i]
    return tuple(tuple(float(v) for v in row) for row in np.roll(poly, 1, axis=0)[1:])
