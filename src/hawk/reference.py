"""The NumPy reference executor: the executable definition of what a hawk program means.

It runs one step for every sample at once, on NumPy arrays, op by op, and is written to be
obviously right rather than fast. Every backend is tested against it.

Arithmetic uses NumPy's IEEE operations on arrays of the op's dtype, which are exact (correctly
rounded) for ``+ - * /`` and ``sqrt``. Math library functions are evaluated element by element
with Python's ``math`` module, i.e. the platform's C library, the same one compiled CPU code
calls, so the CPU backend can match the reference bit for bit even for ``sin`` or ``exp``.

It runs any program that passes ``hawk.passes.check`` (checked once per program), optimized or
not: ``optimize`` does not change what a program means, and the tests hold it to that, bit for
bit. It does not hoist launch-stage ops (``hawk.passes.classify``): evaluating an op on a 0-d
value instead of an array could take a different NumPy code path, and this file is the
definition, not the fast path.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from . import linalg, philox
from .ir import AGGREGATES, TABLE_FIELDS, OpKind, Program, Role
from .passes import check

__all__ = ["step", "run", "IN_DOUBLE"]

_ARITHMETIC = {
    OpKind.ADD: np.add, OpKind.SUB: np.subtract, OpKind.MUL: np.multiply,
    OpKind.DIV: np.divide, OpKind.FLOORDIV: np.floor_divide, OpKind.MOD: np.mod,
    OpKind.LT: np.less, OpKind.LE: np.less_equal, OpKind.GT: np.greater,
    OpKind.GE: np.greater_equal, OpKind.EQ: np.equal, OpKind.NE: np.not_equal,
    OpKind.AND: np.logical_and, OpKind.OR: np.logical_or,
    OpKind.BITAND: np.bitwise_and, OpKind.BITOR: np.bitwise_or, OpKind.BITXOR: np.bitwise_xor,
    OpKind.LSHIFT: np.left_shift, OpKind.RSHIFT: np.right_shift,
}  # fmt: skip

_EXACT_UFUNCS = {"sqrt": np.sqrt, "fabs": np.fabs, "floor": np.floor, "ceil": np.ceil}

#: the functions computed in double by the C library and rounded to the op's dtype (so a
#: float32 ``sin`` is ``float32(sin(double(x)))``, not the C library's ``sinf``); the others are
#: exact in any dtype (``sqrt``, ``fabs``, ``floor``, ``ceil``) or the dtype's own C function
#: (``hypot``: ``hypotf`` for float32, as NumPy computes it)
IN_DOUBLE = frozenset({"exp", "log", "sin", "cos", "tan", "tanh", "atan2", "pow", "asin",
                       "acos", "atan", "erf", "log10", "log1p", "expm1", "cbrt", "sinh",
                       "cosh"})
#: NumPy's name of a C library function, for the results Python's ``math`` raises on instead
_NUMPY_NAMES = {"asin": "arcsin", "acos": "arccos", "atan": "arctan"}


def _libm(name: str, dtype: np.dtype, args: list[np.ndarray]) -> np.ndarray:
    if name in _EXACT_UFUNCS:
        return _EXACT_UFUNCS[name](*args)
    if name == "hypot":  # math.hypot is CPython's own algorithm; np.hypot calls the C library's
        return np.hypot(*args)
    assert name in IN_DOUBLE, name
    func = getattr(math, name)

    def safe(*xs):
        try:
            return func(*xs)
        except (ValueError, OverflowError):  # C returns nan/inf where Python raises
            return _c_semantics(name, *xs)

    result = np.frompyfunc(safe, len(args), 1)(*np.broadcast_arrays(*args))
    return np.asarray(result, dtype=np.float64).astype(dtype)


def _c_semantics(name: str, *xs: float) -> float:
    """What the C library returns where Python's math raises instead."""
    with np.errstate(all="ignore"):
        x = np.float64(xs[0])
        if name == "pow":
            return float(np.float64(x) ** np.float64(xs[1]))
        return float(getattr(np, _NUMPY_NAMES.get(name, name))(x))


@dataclass(frozen=True)
class Counters:
    """What the draws of one step read: the run's seed, every sample's global index and the
    step number of the samples that are live (all live samples are at the same step)."""

    seed: int | None
    samples: np.ndarray
    step: int

    def draw(self, program: Program, op, args: list[np.ndarray]) -> np.ndarray:
        if self.seed is None:
            raise ValueError(f"kernel {program.name!r} draws random numbers: step() needs a "
                             "seed")
        distribution, position = op.attr
        words = philox.block(self.seed, self.samples, self.step, position)
        if distribution == "randint":
            return philox.randint(words, *args)
        return getattr(philox, distribution)(words, op.dtype.numpy)


def _evaluate(program: Program, arrays: Mapping[str, np.ndarray], n: int,
              counters: Counters) -> list[np.ndarray]:
    values: list[np.ndarray] = []
    for op in program.ops:
        dtype = op.dtype.numpy
        a = [values[i] for i in op.args]
        if op.kind is OpKind.CONST:
            v = np.full(n, op.attr, dtype=dtype)
        elif op.kind is OpKind.LOAD:
            name, component = op.attr
            source = np.asarray(arrays[name])
            if component in TABLE_FIELDS:  # a Table's size along one axis
                v = np.full(n, source.shape[TABLE_FIELDS.index(component)], dtype=dtype)
            else:
                if source.ndim > 0:  # a component of a per-sample array, or of a Param's value
                    source = source[program.param(name).index(component)]
                v = np.full(n, source, dtype=dtype) if source.ndim == 0 \
                    else np.array(source, dtype=dtype)
        elif op.kind is OpKind.CAST:
            v = a[0].astype(dtype)
        elif op.kind is OpKind.NEG:
            v = np.negative(a[0])
        elif op.kind is OpKind.ABS:
            v = np.abs(a[0])
        elif op.kind is OpKind.NOT:
            v = np.logical_not(a[0])
        elif op.kind is OpKind.INVERT:
            v = np.invert(a[0])
        elif op.kind is OpKind.MIN:
            v = np.where(a[1] < a[0], a[1], a[0])
        elif op.kind is OpKind.MAX:
            v = np.where(a[1] > a[0], a[1], a[0])
        elif op.kind is OpKind.SELECT:
            v = np.where(a[0], a[1], a[2])
        elif op.kind is OpKind.TABLE_READ:  # element a[0] (row-major) of the whole table
            v = np.asarray(arrays[op.attr]).reshape(-1)[a[0]]
        elif op.kind is OpKind.DRAW:
            v = counters.draw(program, op, a)
        elif op.kind is OpKind.SAMPLE_INDEX:
            v = counters.samples
        elif op.kind is OpKind.STEP_INDEX:
            v = np.full(n, counters.step, dtype=np.int64)
        elif op.kind is OpKind.CALL:  # a NaN result is the canonical quiet NaN, sign clear
            v = _libm(op.attr, dtype, a)
            v = np.where(np.isnan(v), np.array(np.nan, dtype=dtype), v)
        elif op.kind in AGGREGATES:  # a block: (factors, swaps), or a solution's elements
            values.append(_block(op, a))
            continue
        elif op.kind is OpKind.PART:
            v = a[0][op.attr]
        else:
            v = _ARITHMETIC[op.kind](a[0], a[1])
        values.append(np.asarray(v, dtype=dtype))
    return values


def _block(op, a: list):
    """An ``LU`` (``linalg.lu_factor``'s pair) or an ``LU_SOLVE`` (its solution's elements,
    row-major, one array per element)."""
    if op.kind is OpKind.LU:
        return linalg.lu_factor(np.stack(a).reshape(op.attr, op.attr, -1))
    (m, swaps), *b = a
    n, columns = op.attr
    return linalg.lu_substitute(m, swaps, np.stack(b).reshape(n, columns, -1)).reshape(
        n * columns, -1)


def step(program: Program, arrays: Mapping[str, np.ndarray], terminated: np.ndarray | None = None,
         *, seed: int | None = None, first_sample: int = 0, step_number: int = 0) -> int:
    """Advance every live sample of ``arrays`` by one step, in place; return how many were live.

    ``program`` is the IR to run (``kernel.specialize(dtypes)``). ``arrays`` maps each
    parameter name to its NumPy array (``(n,)`` or ``(k, n)``; a ``Series`` ``(T, n)`` or
    ``(T, k, n)``; a ``Table[d]`` any array of ``d`` dimensions, each of size >= 1) or, for a
    ``Param``, a scalar.
    ``terminated`` is the flag array (taken from ``arrays`` when None). A program that draws
    needs ``seed``; sample ``i`` of the arrays is the run's sample ``first_sample + i``, and
    the live samples take their step number ``step_number`` (the steps they took before this
    one: ``run`` counts them). Raises ``hawk.IRError`` for a program that breaks the IR's
    rules.
    """
    _checked(program)
    flag_param = program.terminated_param
    if terminated is None and flag_param is not None:
        terminated = arrays[flag_param.name]
    n = _sample_count(program, arrays, terminated)
    alive = np.ones(n, dtype=bool) if terminated is None else ~terminated
    counters = Counters(seed, first_sample + np.arange(n, dtype=np.int64), step_number)
    with np.errstate(all="ignore"):
        values = _evaluate(program, arrays, n, counters)
    for store in program.stores:
        target = arrays[store.param]
        target = target[program.param(store.param).index(store.component)]
        new = values[store.value].astype(target.dtype)
        if program.accumulate and program.param(store.param).role is Role.OUT:
            target[alive] += new[alive]
        else:
            target[alive] = new[alive]
    for row_store in program.row_stores:
        _write_rows(program, row_store, arrays, values, alive)
    if terminated is not None and program.terminated is not None:
        terminated[alive] = values[program.terminated][alive]
    return int(np.count_nonzero(alive))


def _write_rows(program: Program, row_store, arrays, values, alive: np.ndarray) -> None:
    """One ``RowStore``: each live sample on the write's path whose row is in ``[0, T)``
    overwrites that row of its column (``accumulate`` does not apply). A sample writes at most
    one row per ``RowStore``, and samples own their columns, so the stores' order is the only
    order that matters: a later write to the same row wins."""
    target = arrays[row_store.param]  # (T, n) or (T, k, n)
    target = target[(slice(None), *program.param(row_store.param).index(row_store.component))]
    rows = values[row_store.row]
    done = alive & (rows >= 0) & (rows < target.shape[0])
    if row_store.guard is not None:
        done &= values[row_store.guard]
    samples = np.flatnonzero(done)
    target[rows[samples], samples] = values[row_store.value][samples].astype(target.dtype)


def run(program: Program, arrays: Mapping[str, np.ndarray], max_steps: int, *,
        seed: int | None = None, first_sample: int = 0) -> int:
    """Step until every sample is terminated or ``max_steps`` steps; return the steps taken.

    Means ``for s in range(max_steps): if step(..., step_number=s) == 0: return s``.

    Args:
        program: the IR to run (``kernel.specialize(dtypes)``); one that breaks the IR's
            rules is a ``hawk.IRError``.
        arrays: parameter name -> NumPy array (``(n,)`` or ``(k, n)``), or a number for a
            ``Param``; updated in place, the ``Terminated`` flags included.
        max_steps: the most steps, a non-negative int.
        seed: keyword only; the random streams' key, needed by a program that draws.
        first_sample: keyword only; the run's index of ``arrays``' sample 0 (default 0), so
            that a slice of an ensemble draws what the whole would.

    Example::

        program = oscillator.specialize({})          # float64 everywhere
        steps = hawk.reference.run(program, arrays, max_steps=10_000)
    """
    for steps in range(max_steps):
        if step(program, arrays, seed=seed, first_sample=first_sample, step_number=steps) == 0:
            return steps
    return max_steps


@functools.lru_cache(maxsize=64)
def _checked(program: Program) -> Program:
    """``check(program)``, once per program rather than every step."""
    return check(program)


def _sample_count(program: Program, arrays, terminated) -> int:
    if terminated is not None:
        return len(terminated)
    for p in program.params:
        if p.role.per_sample and p.name in arrays and np.ndim(arrays[p.name]) > 0:
            return np.shape(arrays[p.name])[-1]  # (a Scalar bound to a number broadcasts)
    raise ValueError("cannot tell the number of samples: the kernel has no per-sample parameter")



