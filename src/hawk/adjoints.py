"""Reverse-mode derivatives in a kernel body: ``hawk.vjp(f, x, ct, *rest)`` and
``hawk.grad(f, x, *rest)``, for a ``@hawk.func`` ``f`` differentiated in its first argument.

Like ``hawk.derivatives`` (forward mode), a pass over the IR the call lowers: ``f(x, *rest)``
is inlined once (the primal), then its ops are walked backwards from the result, each op's
cotangent handed to its operands. The rules are not written a second time: every forward rule
in ``derivatives.RULES`` and ``CALL_RULES`` is linear in the operands' tangents, so the
cotangent an op gives its operand ``i`` is that rule applied with the op's cotangent as operand
``i``'s tangent and no tangent for the others (the transpose of a linear map, column by
column). What the forward rules define (``select``, ``min``, ``max`` and ``abs`` piecewise,
``floor`` and comparisons without a derivative, ``interp``'s one-sided slope) holds here too,
and ``<vjp(ct), dx> == <ct, jvp(dx)>`` to rounding by construction.

Only the ops that depend on ``x`` are walked (a forward sweep marks them first), so what does
not depend on ``x`` costs nothing: structural zeros stay out, as in forward mode. One reverse
sweep gives the whole gradient, where ``hawk.jacobian`` needs one forward sweep per input: the
way to differentiate a scalar of many inputs.

A table's values can be among ``x``: an item ``hawk.table_values(table, size)`` of the tuple
``x`` hands ``f`` the table itself, and its cotangent is the vector of the table's ``size``
elements (row-major) that the reads of it inside ``f`` were given. Each ``TABLE_READ`` of the
table in ``f``'s ops is an input of the sweep; its cotangent goes to the element it read at
run time, element ``k`` the sum, over the reads in program order, of the read's cotangent
where its index is ``k`` (a ``SELECT`` per read and element: ``size`` times the reads' ops,
so ``size`` is at most ``MAX_WIDTH``, and the order is fixed). ``interp``'s reverse rule in
the values comes out of its ops: the two neighbouring entries get the interpolation weights
times the cotangent (``interp_grid``: the ``2**d`` corners).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .derivatives import (
    _CONSTANT,
    CALL_RULES,
    RULES,
    _components,
    _float_input,
    _float_output,
    _Tangents,
    block_solve,
    checked_call,
    parts,
    primal,
)
from .ir import AGGREGATES, MAX_WIDTH, DType, OpKind
from .tables import TableValue
from .values import Lit, S, V

__all__ = ["vjp", "grad", "table_values", "TableInput", "FUNCTIONS", "lower_call",
           "cotangents"]

#: the calls this module lowers, with their argument counts
FUNCTIONS = {"vjp": "3 or more", "grad": "2 or more", "table_values": "2"}


def vjp(f, x, ct, *rest):
    """``(f(x, *rest), x_bar)``: the value of the ``@hawk.func`` ``f`` and the cotangent of its
    first argument for the cotangent ``ct`` of its result (reverse mode: ``x_bar = ct^T df/dx``,
    shaped as ``x``), in a kernel body.

    Args:
        f: a ``@hawk.func``; its first argument is the one differentiated.
        x: a float number, vector or matrix: where; or a tuple of them, passed to ``f`` as
            one tuple, for the tuple of their cotangents from one sweep.
        ct: the cotangent of ``f``'s result, shaped as it.
        rest: ``f``'s other arguments, held constant.
    """
    raise TypeError("hawk.vjp() is understood inside a @hawk.kernel body (or a @hawk.func) "
                    "only: it differentiates the ops the call lowers")


def grad(f, x, *rest):
    """The gradient of the ``@hawk.func`` ``f`` (returning a number) in its first argument,
    shaped as ``x``, by one reverse sweep, in a kernel body.

    Args:
        f: a ``@hawk.func`` returning a float number; its first argument is differentiated.
        x: a float number, vector or matrix: where; or a tuple of them, passed to ``f`` as
            one tuple, for the tuple of their gradients from one sweep (``f`` computed once).
        rest: ``f``'s other arguments, held constant.
    """
    raise TypeError("hawk.grad() is understood inside a @hawk.kernel body (or a @hawk.func) "
                    "only: it differentiates the ops the call lowers")


def table_values(table, size):
    """A table's values as an item of ``x`` in ``hawk.grad``/``hawk.vjp`` (in a kernel body):
    ``f`` is handed ``table`` there, and the item's cotangent is a vector of ``size`` numbers
    (a number for ``size`` 1), one per element of the table, row-major.

    Args:
        table: a float ``Table`` parameter (1 to 3 dimensions).
        size: its number of elements, an int literal from 1 to ``MAX_WIDTH`` (128), known when
            the kernel is compiled: the caller binds a table of exactly that many elements
            (an element past ``size`` gets no cotangent).
    """
    raise TypeError("hawk.table_values() is understood inside a @hawk.kernel body (or a "
                    "@hawk.func) only, as an item of hawk.grad's or hawk.vjp's x")


@dataclass(frozen=True)
class TableInput:
    """``hawk.table_values(table, size)``: a table whose values ``hawk.grad``/``vjp``
    differentiate in; it is only an item of their ``x``."""

    table: TableValue
    size: int

    @property
    def description(self) -> str:
        return (f"hawk.table_values({self.table.param.name}, {self.size}) (an item of "
                "hawk.grad's or hawk.vjp's x only)")


def _table_input(lowering, args: list, node: ast.AST) -> TableInput:
    """``hawk.table_values(table, size)`` checked: a float table and an int literal size."""
    if len(args) != 2:
        raise lowering.error(f"hawk.table_values() takes 2 arguments (table, size), got "
                             f"{len(args)}", node)
    table, size = args
    if not isinstance(table, TableValue):
        raise lowering.error(f"hawk.table_values()'s first argument must be a Table "
                             f"parameter, not {lowering.describe(table)}", node)
    if not table.param.dtype.is_float:
        raise lowering.error(f"hawk.table_values(): {table.param.name!r} holds "
                             f"{table.param.dtype.value}; derivatives are taken in float "
                             "tables only", node)
    if not (isinstance(size, Lit) and type(size.value) is int and 1 <= size.value <= MAX_WIDTH):
        raise lowering.error(f"hawk.table_values()'s size must be an int literal from 1 to "
                             f"{MAX_WIDTH} (the table's elements), not "
                             f"{lowering.describe(size)}", node)
    return TableInput(table, size.value)


def _table_reads(lowering, start: int, end: int, table: TableValue) -> list[int]:
    """The ``TABLE_READ`` ops of ``table`` among ``start .. end - 1``, in program order."""
    return [i for i in range(start, end) if lowering.ops[i].kind is OpKind.TABLE_READ
            and lowering.ops[i].attr == table.param.name]


def _table_cotangent(lowering, given: TableInput, reads: list[int], bars: dict):
    """Element ``k`` of the table's cotangent: the sum, over ``reads`` in order, of each
    read's cotangent where its index is ``k``; a vector of ``given.size`` (a number for 1)."""
    dtype = given.table.param.dtype
    T = _Tangents(lowering, dtype)
    zero = lowering.const(0.0, dtype)
    found = [(S(lowering.ops[r].args[0], DType.INT64), bars[r]) for r in reads if r in bars]
    elements = []
    for k in range(given.size):
        at = lowering.const(k, DType.INT64)
        total = None
        for index, bar in found:
            hit = lowering.emit(OpKind.EQ, DType.BOOL, (index.id, at.id))
            total = T.add(total, T.select(hit, bar, None))
        elements.append(total if total is not None else zero)
    return V(tuple(elements)) if given.size > 1 else elements[0]


def _active(lowering, start: int, end: int, inputs: set[int]) -> set[int]:
    """The ops of ``start .. end - 1`` whose value depends on ``inputs`` through float ops."""
    active = set(inputs)
    for index in range(start, end):
        op = lowering.ops[index]
        if op.kind in _CONSTANT or not op.dtype.is_float:
            continue
        if any(i in active for i in op.args):
            active.add(index)
    return active


def cotangents(lowering, start: int, end: int, inputs: set[int],
               seeds: dict[int, S]) -> dict[int, S]:
    """The cotangents of the ops of ``start .. end - 1`` that depend on ``inputs``, given the
    cotangents ``seeds`` of some of them (op index -> value), emitted after them; an op left
    out has none (a structural zero)."""
    active = _active(lowering, start, end, inputs)
    out = {i: c for i, c in seeds.items() if i in active}
    blocks: dict[int, dict[int, S]] = {}  # a block op's cotangents, element by element
    for index in reversed(range(start, end)):
        op = lowering.ops[index]
        if op.kind in AGGREGATES and index in blocks:
            _block_cotangents(lowering, index, blocks.pop(index), active, out, blocks)
            continue
        if index not in out or index in inputs:
            continue
        bar = out[index]
        T = _Tangents(lowering, op.dtype)
        if op.kind is OpKind.PART:
            _accumulate(blocks.setdefault(op.args[0], {}), op.attr, bar, T)
            continue
        operands = [S(i, lowering.ops[i].dtype) for i in op.args]
        result = S(index, op.dtype)
        for position, arg in enumerate(op.args):
            if arg not in active:
                continue
            unit = [bar if k == position else None for k in range(len(op.args))]
            if op.kind is OpKind.CALL:
                share = CALL_RULES[op.attr](T, operands, unit, result)
            else:
                share = RULES[op.kind](T, op, operands, unit, result)
            if share is None:
                continue
            dtype = lowering.ops[arg].dtype
            if dtype is not op.dtype:  # a cast between float widths: back to the operand's
                share = lowering.emit(OpKind.CAST, dtype, (share.id,))
            out[arg] = share if arg not in out else _Tangents(lowering, dtype).add(out[arg],
                                                                                     share)
    return out


def _accumulate(cotangents: dict, key: int, share, T: _Tangents) -> None:
    cotangents[key] = share if key not in cotangents else T.add(cotangents[key], share)


def _block_cotangents(lowering, index: int, bars: dict[int, S], active: set[int], out: dict,
                      blocks: dict) -> None:
    """Hand the cotangents of a block's elements to its operands: for an ``LU_SOLVE``
    ``x = A \\ B``, ``B_bar = A^-T x_bar`` (a solve with the transpose's factorisation) and
    ``A_bar = -B_bar x^T`` (given to the ``LU``'s block, element by element); for an ``LU``,
    its elements' cotangents to the matrix's elements."""
    op = lowering.ops[index]
    T = _Tangents(lowering, op.dtype)
    if op.kind is OpKind.LU:
        for k, bar in bars.items():
            if op.args[k] in active:
                _accumulate(out, op.args[k], bar, T)
        return
    n, columns = op.attr
    lu = lowering.ops[op.args[0]]
    transposed = tuple(lu.args[j * n + i] for i in range(n) for j in range(n))
    lu_transposed = lowering.emit(OpKind.LU, op.dtype, transposed, n).id
    solve = block_solve(T, lu_transposed, [bars.get(k) for k in range(n * columns)])
    b_bar = parts(T, solve.id, n * columns)
    for k, arg in enumerate(op.args[1:]):
        if arg in active:
            _accumulate(out, arg, b_bar[k], T)
    if op.args[0] not in active:
        return
    x = parts(T, index, n * columns)
    factors = blocks.setdefault(op.args[0], {})
    for i in range(n):
        for m in range(n):
            share = None
            for j in range(columns):
                share = T.add(share, T.scale(b_bar[i * columns + j], x[m * columns + j]))
            _accumulate(factors, i * n + m, T.neg(share), T)


def _primal(lowering, name: str, args: list, node: ast.AST):
    """``derivatives.primal`` for an ``x`` that may also be a tuple of numbers, vectors and
    matrices (the gradient in several arguments from one sweep): ``(inputs, several, result,
    outputs, start, end)``, ``inputs`` a list of ``(fresh components, value or None)``, one
    per item of ``x`` (one for an ``x`` that is not a tuple, ``several`` False); an item
    ``hawk.table_values(...)`` is ``(TableInput, the table's reads in f)``, ``f`` handed the
    table."""
    given = "ct" if name == "vjp" else None
    if len(args) >= 2 and isinstance(args[1], TableInput):
        raise lowering.error(f"hawk.{name}(): hawk.table_values() is an item of a tuple x, "
                             f"as in hawk.{name}(f, (x, hawk.table_values(table, size)), ...)",
                             node)
    if len(args) < 2 or not isinstance(args[1], tuple):
        fresh, x_value, result, outputs, start, end = primal(lowering, name, args, node, given,
                                                             FUNCTIONS[name])
        return [(fresh, x_value)], False, result, outputs, start, end
    f = checked_call(lowering, name, args, node, given, FUNCTIONS[name])
    if not args[1]:
        raise lowering.error(f"hawk.{name}(): x is an empty tuple; give the values to "
                             "differentiate in", node)
    start = len(lowering.ops)
    inputs = [(item, None) if isinstance(item, TableInput)
              else _float_input(lowering, item, name, node) for item in args[1]]
    x = tuple(fresh.table if isinstance(fresh, TableInput)
              else value if value is not None else fresh[0] for fresh, value in inputs)
    inlined = len(lowering.ops)
    result = lowering.inline_values(f.func, [x, *args[3 if given else 2:]], node)
    outputs = _float_output(lowering, result, name, node)
    end = len(lowering.ops)
    inputs = [(item, _table_reads(lowering, inlined, end, item.table))
              if isinstance(item, TableInput) else (item, value) for item, value in inputs]
    return inputs, True, result, outputs, start, end


def lower_call(lowering, name: str, args: list, node: ast.AST):
    """Lower ``hawk.vjp(f, x, ct, *rest)`` (the tuple ``(f(x, *rest), x_bar)``) or
    ``hawk.grad(f, x, *rest)`` (``x_bar`` for ``ct = 1``, ``f`` returning a number); for an
    ``x`` that is a tuple of values, ``x_bar`` is the tuple of their cotangents, all from one
    sweep (``f`` then takes the tuple as its first argument); ``hawk.table_values(table,
    size)`` is only such an item."""
    if name == "table_values":
        return _table_input(lowering, args, node)
    inputs, several, result, outputs, start, end = _primal(lowering, name, args, node)
    shape = result.shape if isinstance(result, V) else None
    dtype = lowering.dtype_of(outputs[0])
    if name == "grad":
        if len(outputs) != 1:
            raise lowering.error(f"hawk.grad(): f returns {lowering.describe(result)}; grad "
                                 "takes an f returning a number (hawk.vjp takes any shape)",
                                 node)
        given = [lowering.const(1.0, dtype)]
    else:
        given, ct_shape = _components(args[2])
        if len(given) != len(outputs) or ct_shape != shape:
            raise lowering.error(f"hawk.vjp(): ct is {lowering.describe(args[2])}, not shaped "
                                 f"as f's result ({lowering.describe(result)})", node)
        given = [lowering.cast(lowering.number(c, "hawk.vjp()", node), dtype) for c in given]
    seeds: dict[int, S] = {}
    for out, c in zip(outputs, given, strict=True):
        if isinstance(out, S):
            seeds[out.id] = c if out.id not in seeds else \
                _Tangents(lowering, dtype).add(seeds[out.id], c)
    sources = {r for fresh, reads in inputs if isinstance(fresh, TableInput) for r in reads}
    sources |= {v.id for fresh, _ in inputs if not isinstance(fresh, TableInput) for v in fresh}
    bars = cotangents(lowering, start, end, sources, seeds)
    x_bars = []
    for fresh, x_value in inputs:
        if isinstance(fresh, TableInput):
            x_bars.append(_table_cotangent(lowering, fresh, x_value, bars))
            continue
        zero = lowering.const(0.0, lowering.dtype_of(fresh[0]))
        x_bar = [bars.get(v.id, zero) for v in fresh]
        x_bars.append(V(tuple(x_bar), x_value.shape) if x_value is not None else x_bar[0])
    x_bar_value = tuple(x_bars) if several else x_bars[0]
    return (result, x_bar_value) if name == "vjp" else x_bar_value
