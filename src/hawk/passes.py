"""The passes between the frontend and the backends: check, clean up and classify a ``Program``.

``frontend.lower`` turns a kernel body into a flat SSA ``Program``; ``optimize`` runs ``PIPELINE``
over it, and ``Kernel.specialize`` hands the result to every backend and to the reference
executor. The pipeline is deliberately tiny (Numba's ``DefaultPassBuilder``, minus everything a
branch-free, loop-free body does not need):

- ``check``: the IR's rules, checked so a malformed program fails here, naming the op and the
  rule, instead of miscompiling in an emitter or being read wrongly by a reader of the IR;
- ``eliminate_dead_code``: drop ops that feed no store, no Series write (its row, value or
  guard) and not the terminated flag;
- ``eliminate_common_subexpressions``: merge ops that compute the same value.

Every pass takes a ``Program`` and returns one, so passes compose and the list is data.

Why these transformations cannot change a result, bit for bit: every op is a pure function of
its args (the body has no side effects, ``LOAD`` reads a parameter's value at step start and
``TABLE_READ`` an element of a table no step writes),
and backends evaluate each op with the same operation wherever it sits. So dropping an unused op,
or evaluating two identical ops once, gives the same bits. "Identical" is strict for constants:
``0.0 == -0.0`` and ``nan != nan``, so constants are compared by their bits, not their values.

``classify`` does not change the program: it says, per op, how often its value can change
(once per launch, per sample, or every step), for a backend that hoists the first two out of its
step loop. Hoisting is bit-identical for the same reason as above.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import replace
from enum import Enum
from typing import NamedTuple

from .errors import IRError
from .ir import (
    AGGREGATES,
    BIT_OPS,
    COMPARISONS,
    MATH_FUNCTIONS,
    TABLE_FIELDS,
    DType,
    Op,
    OpKind,
    Program,
    Role,
    RowStore,
    Store,
    type_name,
)
from .philox import DISTRIBUTIONS

__all__ = ["check", "eliminate_dead_code", "eliminate_common_subexpressions", "Stage",
           "classify", "Pass", "PIPELINE", "optimize", "IRError"]


# -- the checker ---------------------------------------------------------------------------------

_UNARY = {OpKind.CAST, OpKind.NEG, OpKind.ABS, OpKind.NOT, OpKind.INVERT}
#: ops whose operands and result share one numeric dtype
_ARITHMETIC = {OpKind.NEG, OpKind.ADD, OpKind.SUB, OpKind.MUL, OpKind.DIV, OpKind.FLOORDIV,
               OpKind.MOD, OpKind.ABS, OpKind.MIN, OpKind.MAX}  # fmt: skip
_LOGIC = {OpKind.AND, OpKind.OR, OpKind.NOT}
#: the Python type of a ``CONST``'s attr, per dtype (what ``dtype.numpy.type(v).item()`` gives)
_CONST_TYPES = {DType.BOOL: bool, DType.INT64: int, DType.FLOAT32: float, DType.FLOAT64: float,
                DType.INT32: int, DType.UINT32: int, DType.UINT64: int}


def _arity(op: Op) -> int:
    if op.kind in (OpKind.CONST, OpKind.LOAD, OpKind.SAMPLE_INDEX, OpKind.STEP_INDEX):
        return 0
    if op.kind is OpKind.DRAW:  # the attr is checked first
        return 2 if DISTRIBUTIONS[op.attr[0]] else 0
    if op.kind in _UNARY or op.kind is OpKind.TABLE_READ:
        return 1
    if op.kind is OpKind.SELECT:
        return 3
    if op.kind is OpKind.CALL:
        return MATH_FUNCTIONS[op.attr]  # the attr is checked first
    if op.kind is OpKind.LU:  # the attr is checked first
        return op.attr * op.attr
    if op.kind is OpKind.LU_SOLVE:
        return 1 + op.attr[0] * op.attr[1]
    if op.kind is OpKind.PART:
        return 1
    return 2


def _is_size(value: object) -> bool:
    return type(value) is int and value >= 1


def _aggregate_rule(program: Program, op: Op) -> str | None:
    """The rules of the whole-matrix ops (``AGGREGATES`` and ``PART``) that ``_arity`` and the
    dtype checks need first: their attrs, and what their first argument is."""
    if op.kind is OpKind.LU and not _is_size(op.attr):
        return f"an lu's attr is its size n >= 1, got {op.attr!r}"
    if op.kind is OpKind.LU_SOLVE:
        if not (isinstance(op.attr, tuple) and len(op.attr) == 2
                and all(_is_size(v) for v in op.attr)):
            return f"an lu_solve's attr is (n, columns), got {op.attr!r}"
        first = program.ops[op.args[0]] if op.args and 0 <= op.args[0] < len(program.ops) \
            else None
        if first is None or first.kind is not OpKind.LU or first.attr != op.attr[0]:
            return f"an lu_solve's first argument is an lu of size {op.attr[0]}"
    if op.kind is OpKind.PART:
        whole = program.ops[op.args[0]] if len(op.args) == 1 \
            and 0 <= op.args[0] < len(program.ops) else None
        if whole is None or whole.kind is not OpKind.LU_SOLVE:
            return "a part's argument is an lu_solve"
        if not (type(op.attr) is int and 0 <= op.attr < whole.attr[0] * whole.attr[1]):
            return (f"a part's attr is an element index below {whole.attr[0] * whole.attr[1]},"
                    f" got {op.attr!r}")
    return None


def _fits(value: object, dtype: DType) -> bool:
    """Whether ``value`` is exactly a value of ``dtype``, as the frontend materialises it."""
    if type(value) is not _CONST_TYPES[dtype]:
        return False
    try:
        return repr(dtype.numpy.type(value).item()) == repr(value)  # repr: -0.0, nan
    except OverflowError:
        return False


def _op_rule(program: Program, index: int, op: Op, dtypes: list[DType],
             blocks: set[int]) -> str | None:
    """The first rule ``op`` (at ``index``) breaks, or None. ``dtypes``: the earlier ops';
    ``blocks``: the indices of the earlier ``AGGREGATES``."""
    for a in op.args:
        if not (type(a) is int and 0 <= a < index):
            return f"argument %{a} does not refer to an earlier op"
    if op.kind is OpKind.CALL and not (isinstance(op.attr, str) and op.attr in MATH_FUNCTIONS):
        return f"calls {op.attr!r}, which is not one of MATH_FUNCTIONS"
    if op.kind is OpKind.DRAW and (rule := _draw_rule(op)):
        return rule
    if op.kind in AGGREGATES or op.kind is OpKind.PART:
        if rule := _aggregate_rule(program, op):
            return rule
    reads = tuple(a for a in op.args if a in blocks) if blocks else ()
    if reads != op.args[:len(reads)] or len(reads) > (op.kind in (OpKind.LU_SOLVE, OpKind.PART)):
        return "reads a block value (an lu or lu_solve), which only lu_solve and part read"
    if len(op.args) != _arity(op):
        what = f"math.{op.attr}" if op.kind is OpKind.CALL else op.kind.value
        return f"{what} takes {_arity(op)} argument(s), got {len(op.args)}"
    args = [dtypes[a] for a in op.args]
    if op.kind is OpKind.CONST:
        if not _fits(op.attr, op.dtype):
            return f"the constant {op.attr!r} is not exactly a value of dtype {op.dtype.value}"
    elif op.kind is OpKind.LOAD:
        return _load_rule(program, op)
    elif op.kind is OpKind.TABLE_READ:
        return _table_read_rule(program, op, args)
    elif op.kind in AGGREGATES or op.kind is OpKind.PART:
        if not op.dtype.is_float or any(d is not op.dtype for d in args):
            return (f"{op.kind.value} takes and gives floats of one dtype, got "
                    f"{', '.join(sorted({d.value for d in args}))} -> {op.dtype.value}")
        return None
    elif op.attr is not None and op.kind not in (OpKind.CALL, OpKind.DRAW):
        return f"{op.kind.value} takes no attr, got {op.attr!r}"
    if op.kind is OpKind.CAST:
        if not (args[0].is_number and op.dtype.is_number and args[0] is not op.dtype):
            return (f"a cast converts a number to another number dtype, not {args[0].value} "
                    f"to {op.dtype.value}")
    elif op.kind in _ARITHMETIC:
        if not op.dtype.is_number:
            return f"{op.kind.value} computes numbers, not {op.dtype.value}"
        if op.kind is OpKind.DIV and not op.dtype.is_float:
            return f"div computes floats (an integer / is cast first), not {op.dtype.value}"
        if any(d is not op.dtype for d in args):
            return (f"the operands must have the result dtype {op.dtype.value}, got "
                    f"{', '.join(d.value for d in args)}")
    elif op.kind in BIT_OPS:
        if not op.dtype.is_integer or any(d is not op.dtype for d in args):
            return (f"{op.kind.value} takes and gives integers of one dtype, got "
                    f"{', '.join(d.value for d in args)} -> {op.dtype.value}")
    elif op.kind in COMPARISONS:
        if op.dtype is not DType.BOOL or args[0] is not args[1]:
            return (f"a comparison takes two operands of one dtype and gives bool, got "
                    f"{args[0].value}, {args[1].value} -> {op.dtype.value}")
        if args[0] is DType.BOOL and op.kind not in (OpKind.EQ, OpKind.NE):
            return f"{op.kind.value} orders numbers; bools only compare with eq/ne"
    elif op.kind in _LOGIC:
        if op.dtype is not DType.BOOL or any(d is not DType.BOOL for d in args):
            return (f"{op.kind.value} takes and gives bools, got "
                    f"{', '.join(d.value for d in args)} -> {op.dtype.value}")
    elif op.kind is OpKind.SELECT:
        if args[0] is not DType.BOOL:
            return f"the condition of a select must be bool, got {args[0].value}"
        if args[1] is not op.dtype or args[2] is not op.dtype:
            return (f"the branches of a select must have the result dtype {op.dtype.value}, "
                    f"got {args[1].value}, {args[2].value}")
    elif op.kind is OpKind.CALL:
        if not op.dtype.is_float or any(d is not op.dtype for d in args):
            return (f"math.{op.attr} takes and gives floats of one dtype, got "
                    f"{', '.join(d.value for d in args)} -> {op.dtype.value}")
    elif op.kind in (OpKind.SAMPLE_INDEX, OpKind.STEP_INDEX):
        if op.dtype is not DType.INT64:
            return f"{op.kind.value} gives int64, not {op.dtype.value}"
    elif op.kind is OpKind.DRAW:
        integer = DISTRIBUTIONS[op.attr[0]]
        if integer and (op.dtype is not DType.INT64 or any(d is not DType.INT64 for d in args)):
            return (f"a {op.attr[0]} draw takes and gives int64, got "
                    f"{', '.join(d.value for d in args)} -> {op.dtype.value}")
        if not integer and not op.dtype.is_float:
            return f"a {op.attr[0]} draw gives a float, not {op.dtype.value}"
    return None


def _draw_rule(op: Op) -> str | None:
    attr = op.attr
    if not (isinstance(attr, tuple) and len(attr) == 2 and attr[0] in DISTRIBUTIONS
            and type(attr[1]) is int and 0 <= attr[1] < 2**32):
        return (f"a draw's attr is (one of {', '.join(DISTRIBUTIONS)}, a position in "
                f"[0, 2**32)), got {attr!r}")
    return None


def _load_rule(program: Program, op: Op) -> str | None:
    if not (isinstance(op.attr, tuple) and len(op.attr) == 2):
        return f"a load's attr is (parameter name, component), got {op.attr!r}"
    name, component = op.attr
    try:
        param = program.param(name)
    except KeyError:
        return f"loads {name!r}, which is not a parameter"
    if param.role in (Role.OUT, Role.TERMINATED, Role.SERIES):
        return f"loads {name!r}, which is {param.role.value}: a step never reads it"
    if param.role is Role.TABLE:  # only its sizes are loaded; its elements by TABLE_READ
        if component not in TABLE_FIELDS[:param.ndim]:
            return (f"loads {name!r} ({param.annotation}): only its sizes "
                    f"{', '.join(TABLE_FIELDS[:param.ndim])} are loaded, not {component!r}")
        if op.dtype is not DType.INT64:
            return f"loads the size {component!r} of {name!r} as {op.dtype.value}, not int64"
        return None
    if rule := _component_rule(param.width, component):
        return f"loads {name!r}: {rule}"
    if op.dtype is not param.dtype:
        return f"loads {name!r} ({param.dtype.value}) as {op.dtype.value}"
    return None


def _table_read_rule(program: Program, op: Op, args: list[DType]) -> str | None:
    try:
        param = program.param(op.attr) if isinstance(op.attr, str) else None
    except KeyError:
        param = None
    if param is None or param.role is not Role.TABLE:
        return f"a table read's attr is the name of a Table parameter, got {op.attr!r}"
    if args[0] is not DType.INT64:
        return f"a table read's index is an int64 op, got {args[0].value}"
    if op.dtype is not param.dtype:
        return f"reads {op.attr!r} ({param.dtype.value}) as {op.dtype.value}"
    return None


def _component_rule(width: int, component: object) -> str | None:
    if width == 1:
        return None if component is None else f"a scalar has no component {component!r}"
    if type(component) is int and 0 <= component < width:
        return None
    listing = ", ".join(map(str, range(width - 1))) + f" or {width - 1}"
    return f"a {type_name(width)}'s component is {listing}, not {component!r}"


def _fail(program: Program, where: str, rule: str, op: Op | None = None) -> IRError:
    shown = f" ({op})" if op is not None else ""
    at = f" [from {op.loc.file}, line {op.loc.line}]" if op is not None and op.loc else ""
    return IRError(f"IR of kernel {program.name!r}: {where}{shown}{at}: {rule}")


def check(program: Program) -> Program:
    """``program``, unchanged, if it follows the IR's rules; otherwise raise ``IRError``.

    The error names the op (``%3``), the store or the terminated flag, and the rule it breaks.
    An ``IRError`` is a bug in whatever made the program (the frontend, a pass, a hand-written
    or tampered ``Program``), never in the user's kernel: the frontend refuses bad kernels
    earlier, with a ``CompileError`` pointing at the source.
    """
    names = [p.name for p in program.params]
    for p in program.params:
        if names.count(p.name) > 1:
            raise _fail(program, f"parameter {p.name!r}", "two parameters have this name")
    dtypes: list[DType] = []
    blocks: set[int] = set()
    for index, op in enumerate(program.ops):
        if rule := _op_rule(program, index, op, dtypes, blocks):
            raise _fail(program, f"op %{index}", rule, op)
        dtypes.append(op.dtype)
        if op.kind in AGGREGATES:
            blocks.add(index)
    roots = [s.value for s in program.stores] + [program.terminated] + \
        [i for r in program.row_stores for i in (r.row, r.value, r.guard)]
    if blocks.intersection(roots):
        raise _fail(program, f"op %{min(blocks.intersection(roots))}",
                    "a block value (an lu or lu_solve) is stored or written: only its parts are")
    written = set()
    for k, store in enumerate(program.stores):
        if rule := _store_rule(program, store, dtypes, written):
            raise _fail(program, f"store {k} ({store.param} <- %{store.value})", rule)
        written.add((store.param, store.component))
    for k, row_store in enumerate(program.row_stores):
        if rule := _row_store_rule(program, row_store, dtypes):
            raise _fail(program, f"row store {k} ({row_store})", rule)
    if program.terminated is not None:
        flag = program.terminated
        if not (type(flag) is int and 0 <= flag < len(dtypes)):
            rule = "does not refer to an op"
        elif dtypes[flag] is not DType.BOOL:
            rule = f"must be a bool op, got {dtypes[flag].value}"
        elif program.terminated_param is None:
            rule = "is set, but the kernel has no Terminated parameter"
        else:
            rule = None
        if rule:
            raise _fail(program, f"terminated <- %{flag}", rule)
    return program


def _store_rule(program: Program, store: Store, dtypes: list[DType], written: set) -> str | None:
    try:
        param = program.param(store.param)
    except KeyError:
        return f"{store.param!r} is not a parameter"
    if param.role not in (Role.MUTABLE, Role.OUT):
        return f"{store.param!r} is {param.role.value}, not Mutable or Out: a step cannot write it"
    if rule := _component_rule(param.width, store.component):
        return rule
    if (store.param, store.component) in written:
        return "this component is already stored to"
    if not (type(store.value) is int and 0 <= store.value < len(dtypes)):
        return f"%{store.value} does not refer to an op"
    if dtypes[store.value] is not param.dtype:
        return f"stores {dtypes[store.value].value} into a {param.dtype.value} parameter"
    return None


def _row_store_rule(program: Program, store: RowStore, dtypes: list[DType]) -> str | None:
    try:
        param = program.param(store.param)
    except KeyError:
        return f"{store.param!r} is not a parameter"
    if param.role is not Role.SERIES:
        return f"{store.param!r} is {param.role.value}, not a Series: it has no rows to write"
    if rule := _component_rule(param.width, store.component):
        return rule
    ops = {"row": store.row, "value": store.value, "guard": store.guard}
    for what, index in ops.items():
        if index is None and what == "guard":
            continue
        if not (type(index) is int and 0 <= index < len(dtypes)):
            return f"its {what} %{index} does not refer to an op"
    if dtypes[store.row] is not DType.INT64:
        return f"its row must be an int64 op, got {dtypes[store.row].value}"
    if dtypes[store.value] is not param.dtype:
        return f"writes {dtypes[store.value].value} into a {param.dtype.value} Series"
    if store.guard is not None and dtypes[store.guard] is not DType.BOOL:
        return f"its guard must be a bool op, got {dtypes[store.guard].value}"
    return None


# -- dead code and common subexpressions ---------------------------------------------------------


def _rebuilt(program: Program, ops: list[Op], new_index: list[int]) -> Program:
    """``program`` with ``ops``, its stores, Series writes and flag renumbered by ``new_index``
    (old -> new)."""
    flag = program.terminated
    return Program(
        name=program.name,
        params=program.params,
        ops=tuple(ops),
        stores=tuple(Store(s.param, s.component, new_index[s.value]) for s in program.stores),
        terminated=None if flag is None else new_index[flag],
        options=program.options,
        row_stores=tuple(
            RowStore(r.param, r.component, new_index[r.row], new_index[r.value],
                     None if r.guard is None else new_index[r.guard])
            for r in program.row_stores),
    )


def eliminate_dead_code(program: Program) -> Program:
    """``program`` without the ops that feed no store, no Series write and not the terminated
    flag (a Series write's row, value and guard are all roots).

    One sweep from the last op back suffices: an op's args are always earlier ops.
    """
    live = [False] * len(program.ops)
    rows = [i for r in program.row_stores for i in (r.row, r.value, r.guard)]
    for root in [s.value for s in program.stores] + [program.terminated] + rows:
        if root is not None:
            live[root] = True
    for index in reversed(range(len(program.ops))):
        if live[index]:
            for a in program.ops[index].args:
                live[a] = True
    new_index, ops = [], []
    for op, keep in zip(program.ops, live, strict=True):
        new_index.append(len(ops) if keep else -1)
        if keep:
            ops.append(replace(op, args=tuple(new_index[a] for a in op.args)))
    return _rebuilt(program, ops, new_index)


def attr_key(attr: object) -> object:
    """A dict key that tells attrs apart exactly as their bits do: ``0.0`` from ``-0.0``, and
    NaNs by payload and sign (every NaN is unequal to itself, so no NaN could be a key)."""
    if type(attr) is float:
        return float, struct.pack("<d", attr)
    return type(attr), attr


def eliminate_common_subexpressions(program: Program) -> Program:
    """``program`` with each value computed once: ops equal in kind, dtype, args (after earlier
    merges) and attr become one, the first. Safe because every op is pure (see the module's
    docstring); the source location kept is the first op's."""
    first: dict[tuple, int] = {}
    new_index, ops = [], []
    for op in program.ops:
        args = tuple(new_index[a] for a in op.args)
        key = (op.kind, op.dtype, args, attr_key(op.attr))
        if key not in first:
            first[key] = len(ops)
            ops.append(replace(op, args=args))
        new_index.append(first[key])
    return _rebuilt(program, ops, new_index)


# -- stages --------------------------------------------------------------------------------------


class Stage(Enum):
    """How often an op's value can change, for hoisting it out of the step loop.

    Ordered: an op is at the latest stage of its args.
    """

    LAUNCH = 0  # constants, Param and Table-size loads: one value for every sample and step
    SAMPLE = 1  # also per-sample read-only inputs (Scalar): one value per sample, every step
    STEP = 2  # reads mutable state, draws or the step number: recomputed every step


_LOAD_STAGES = {Role.PARAM: Stage.LAUNCH, Role.SCALAR: Stage.SAMPLE, Role.MUTABLE: Stage.STEP,
                Role.TABLE: Stage.LAUNCH}


#: the last program ``classify`` was asked about and its answer: an emitter asks several times
#: about one program (its layout, its invariants), and a stiff kernel has tens of thousands of
#: ops
_last_classified: tuple[Program | None, tuple[Stage, ...]] = (None, ())


def classify(program: Program) -> tuple[Stage, ...]:
    """The ``Stage`` of each op of ``program``, in order (``check`` the program first)."""
    global _last_classified
    last, known = _last_classified
    if last is program:
        return known
    stages: list[Stage] = []
    for op in program.ops:
        if op.kind is OpKind.CONST:
            stage = Stage.LAUNCH
        elif op.kind is OpKind.LOAD:
            stage = _LOAD_STAGES[program.param(op.attr[0]).role]
        elif op.kind is OpKind.SAMPLE_INDEX:
            stage = Stage.SAMPLE
        elif op.kind in (OpKind.DRAW, OpKind.STEP_INDEX):  # new values every step
            stage = Stage.STEP
        elif op.kind in AGGREGATES:  # never hoisted: its memory is the step's own
            stage = Stage.STEP
        else:  # a TABLE_READ too: the table is the same for every sample and step
            stage = max((stages[a] for a in op.args), key=lambda s: s.value)
        stages.append(stage)
    _last_classified = (program, tuple(stages))
    return _last_classified[1]


# -- the pipeline --------------------------------------------------------------------------------


class Pass(NamedTuple):
    """One named step of the pipeline: a function from ``Program`` to ``Program``.

    Attributes:
        name: what the pass is called in messages (``"dead code"``).
        run: the function, ``Program -> Program``.
    """

    name: str
    run: Callable[[Program], Program]


#: what ``optimize`` runs, in order. The second dead-code pass removes nothing today (merging
#: keeps every value some op used); it keeps "no dead ops" true after any future merging pass,
#: and the final check catches a pass that broke a rule.
PIPELINE: tuple[Pass, ...] = (
    Pass("check", check),
    Pass("dead code", eliminate_dead_code),
    Pass("common subexpressions", eliminate_common_subexpressions),
    Pass("dead code", eliminate_dead_code),
    Pass("check", check),
)


def optimize(program: Program, pipeline: tuple[Pass, ...] = PIPELINE) -> Program:
    """``program`` after each pass of ``pipeline`` in turn: what every backend compiles."""
    for step in pipeline:
        program = step.run(program)
    return program
