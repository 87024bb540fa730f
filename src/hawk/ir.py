"""The hawk IR: one flat, typed, scalar SSA program per kernel specialisation.

A kernel body is lowered (see ``frontend``) into a list of ops (``Op``), each producing exactly one
scalar value of a known ``DType`` from earlier ops (but the ``AGGREGATES``, a factorised matrix
and a solve's solution, whose elements ``PART`` reads one by one). The lowering has already
removed everything a backend would otherwise have to understand:

- vectors are split into their components (a ``Vec3`` parameter is three loads, a ``Vec4``
  four);
- ``if``/``else`` blocks and ``a if c else b`` become ``SELECT`` ops (the body is branch-free, so
  one sample's step is a dataflow graph, which suits SIMD lanes and GPU threads alike);
- ``x ** 2`` with a small integer literal exponent becomes repeated multiplication;
- types are resolved: every constant is materialised with its final dtype and every mixed
  operation has an explicit ``CAST``.

What a step means, for one sample that is not yet terminated: evaluate the ops in order, where
``LOAD`` reads a parameter's value at the start of the step; then write each ``Store`` back
(``accumulate`` kernels add into ``Out`` buffers instead), do the ``RowStore`` writes into
``Series`` arrays in order (one whose guard is false or whose row is outside ``[0, T)`` is not
done; they always overwrite), and set the terminated flag to the value named by
``Program.terminated``. A terminated sample is left untouched. ``TABLE_READ`` reads element
``index`` (row-major) of a ``Table`` parameter's array, the same array for every sample and
step; its index is always in range, because the frontend clamps each index to its axis
(``hawk.tables``). The NumPy reference executor (``hawk.reference``) is the executable
definition of this paragraph.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from .errors import Loc

__all__ = ["DType", "Role", "OpKind", "Op", "Parameter", "Slot", "slots", "Store", "RowStore",
           "Program", "SERIES_FIELDS", "TABLE_FIELDS", "series_field", "uniform_value",
           "MAX_WIDTH", "MAX_MATRIX_SIDE", "MAX_ARGUMENT_MATRIX_SIDE", "type_name",
           "annotation_name", "MATH_FUNCTIONS", "AGGREGATES", "COUNTER_OPS", "COUNTER_ARGUMENTS",
           "BIT_OPS"]


class DType(Enum):
    BOOL = "bool"
    INT32 = "int32"
    INT64 = "int64"
    UINT32 = "uint32"
    UINT64 = "uint64"
    FLOAT32 = "float32"
    FLOAT64 = "float64"

    @property
    def numpy(self) -> np.dtype:
        return np.dtype(self.value)

    @property
    def is_float(self) -> bool:
        return self in (DType.FLOAT32, DType.FLOAT64)

    @property
    def is_number(self) -> bool:
        return self is not DType.BOOL

    @property
    def is_integer(self) -> bool:
        return self in (DType.INT64, DType.INT32, DType.UINT32, DType.UINT64)

    @property
    def is_unsigned(self) -> bool:
        return self in (DType.UINT32, DType.UINT64)

    @property
    def bits(self) -> int:
        """The width in bits; 8 for bool, as NumPy stores it."""
        return self.numpy.itemsize * 8

    @classmethod
    def from_numpy(cls, dtype) -> DType:
        return cls(np.dtype(dtype).name)


class Role(Enum):
    """How a kernel parameter is bound and whether the step may change it."""

    SCALAR = "Scalar"  # per-sample, read-only
    PARAM = "Param"  # one value for every sample, read-only
    MUTABLE = "Mutable"  # per-sample state, read at step start, written at step end
    TERMINATED = "Terminated"  # per-sample done flag
    OUT = "Out"  # per-sample output, write-only
    SERIES = "Series"  # per-sample rows (T, n) or (T, k, n), written at computed rows only
    TABLE = "Table"  # one read-only array of 1 to 3 dimensions shared by every sample

    @property
    def per_sample(self) -> bool:
        return self not in (Role.PARAM, Role.TABLE)

    @property
    def written(self) -> bool:
        return self in (Role.MUTABLE, Role.TERMINATED, Role.OUT, Role.SERIES)


class OpKind(Enum):
    # leaves
    CONST = "const"  # attr: the Python value
    LOAD = "load"  # attr: (parameter name, component index or None)
    # conversions
    CAST = "cast"
    # arithmetic (operands already of the result dtype)
    NEG = "neg"
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    FLOORDIV = "floordiv"
    MOD = "mod"
    ABS = "abs"
    MIN = "min"  # b if b < a else a  (Python's min(a, b))
    MAX = "max"  # b if b > a else a  (Python's max(a, b))
    # comparisons (operands of one dtype, result bool)
    LT = "lt"
    LE = "le"
    GT = "gt"
    GE = "ge"
    EQ = "eq"
    NE = "ne"
    # boolean logic (both operands always evaluated: the body has no side effects)
    AND = "and"
    OR = "or"
    NOT = "not"
    SELECT = "select"  # args: (condition, if_true, if_false)
    # integer bit operations (operands of the result's integer dtype; shifts by a count outside
    # [0, bits) give 0, or -1 for >> of a negative number, as NumPy's)
    BITAND = "bitand"
    BITOR = "bitor"
    BITXOR = "bitxor"
    INVERT = "invert"
    LSHIFT = "lshift"
    RSHIFT = "rshift"
    # math library call; attr: the function name, one of MATH_FUNCTIONS
    CALL = "call"
    # random numbers and the counters they are keyed by (``hawk.philox`` defines them)
    DRAW = "draw"  # attr: (distribution, position); args: () or (lo, hi) for randint
    SAMPLE_INDEX = "sample_index"  # int64: the sample's global index
    STEP_INDEX = "step_index"  # int64: the sample's step number (the runner's count)
    # shared tables; attr: the Table parameter's name; args: (flat index,), an int64 row-major
    # element index that is always in range (the frontend clamps it); dtype: the table's
    TABLE_READ = "table_read"
    # a linear solve as whole-matrix ops (``AGGREGATES``), which a backend renders as loops over
    # memory of the sample's own, so code size grows with n * n, not n ** 3 (``hawk.linalg``'s
    # "Sizes"): LU's attr is n, its args the n * n elements of a square float matrix,
    # row-major; LU_SOLVE's attr is (n, columns), its args (an LU op, the n * columns elements
    # of the right-hand side, row-major); PART's attr is an element's index, its arg an
    # LU_SOLVE op: element ``index`` (row-major) of the solution, bit for bit what
    # ``hawk.linalg.solve`` computes from the same elements
    LU = "lu"
    LU_SOLVE = "lu_solve"
    PART = "part"


#: math functions a kernel may call, with their arity. All take and return floats.
MATH_FUNCTIONS = {
    "sqrt": 1, "exp": 1, "log": 1, "sin": 1, "cos": 1, "tan": 1, "tanh": 1,
    "fabs": 1, "floor": 1, "ceil": 1, "atan2": 2, "pow": 2, "hypot": 2,
    "asin": 1, "acos": 1, "atan": 1, "erf": 1, "log10": 1, "log1p": 1, "expm1": 1, "cbrt": 1,
    "sinh": 1, "cosh": 1,
}  # fmt: skip

#: integer-only ops: operands and result of one integer dtype
BIT_OPS = {OpKind.BITAND, OpKind.BITOR, OpKind.BITXOR, OpKind.INVERT, OpKind.LSHIFT,
           OpKind.RSHIFT}  # fmt: skip
COMPARISONS = {OpKind.LT, OpKind.LE, OpKind.GT, OpKind.GE, OpKind.EQ, OpKind.NE}
#: ops whose value is not one number but a block of them, read only by the ops that take it
#: (``LU_SOLVE`` takes an ``LU``, ``PART`` an ``LU_SOLVE``); never stored or selected
AGGREGATES = {OpKind.LU, OpKind.LU_SOLVE}
#: ops that read the counters a launch passes in (the sample's index and step number)
COUNTER_OPS = {OpKind.DRAW, OpKind.SAMPLE_INDEX, OpKind.STEP_INDEX}


@dataclass(frozen=True)
class Op:
    """One SSA value: ``kind`` applied to the values ``args`` (indices of earlier ops).

    Attributes:
        kind: the operation, an ``OpKind``.
        dtype: the value's ``DType``.
        args: the operands, as indices of earlier ops of the same program.
        attr: the op's constant operand (a literal, a parameter name and component, a draw's
            kind...), or None.
        loc: the user's source position it came from (not part of its identity), or None.
    """

    kind: OpKind
    dtype: DType
    args: tuple[int, ...] = ()
    attr: object = None
    loc: Loc | None = field(default=None, compare=False)

    def __str__(self) -> str:
        args = ", ".join(f"%{a}" for a in self.args)
        attr = f" {self.attr!r}" if self.attr is not None else ""
        return f"{self.kind.value}{attr}({args}) : {self.dtype.value}"


#: The widest vector a kernel takes: its components are registers and arguments, one each.
#: 128 (issue 42: stiff models up to 128 states): a 128-state ``rodas5p`` step kernel with
#: ``saveat`` passes 3,336 bytes of CUDA kernel parameters, inside the 4 KB every CUDA version
#: takes (``eagle.cuda.parameters.MAX_PARAMETER_BYTES``; a kernel above it is refused by name).
MAX_WIDTH = 128
#: The most rows, and the most columns, of a matrix a kernel builds (``hawk.identity``,
#: ``hawk.zeros``, ``hawk.matrix``, a Jacobian, a user's ``jac=``, the LU of ``hawk.solve``):
#: a state of ``MAX_WIDTH`` components has a ``MAX_WIDTH`` x ``MAX_WIDTH`` Jacobian, so the
#: stiff methods run at every state width (issue 42). Its components are values of the
#: straight-line program, or per-sample scratch memory above ``hawk.linalg.UNROLLED_SIDE``,
#: never arguments.
MAX_MATRIX_SIDE = MAX_WIDTH
#: The most rows, and the most columns, of a matrix a kernel takes as an argument
#: (``Matrix[R, C]``, a per-sample ``p`` of shape ``(R, C, n)``): each component is an
#: argument of its own (256 at most, 2 KiB of float64, inside CUDA's 4 KiB of parameters).
MAX_ARGUMENT_MATRIX_SIDE = 16


def type_name(width: int, columns: int = 0) -> str:
    """How hawk spells the type of ``width`` components: ``Scalar``, ``Vec2`` to ``Vec4``,
    then ``Vector[K]``; with ``columns``, the matrix ``Matrix[width // columns, columns]``."""
    if columns:
        return f"Matrix[{width // columns}, {columns}]"
    if width == 1:
        return "Scalar"
    return f"Vec{width}" if width <= 4 else f"Vector[{width}]"


def annotation_name(role: Role, width: int, columns: int = 0, ndim: int = 0) -> str:
    """How a parameter of ``role``, ``width`` and ``columns`` is declared: ``Vec3``,
    ``Param``, ``Param[Matrix[3, 3]]``, ``Mutable[Vector[6]]``, ``Table``, ``Table[2]``
    (``ndim``: a table's dimensions)..."""
    if role is Role.TABLE:
        return "Table" if ndim <= 1 else f"Table[{ndim}]"
    if role is Role.SCALAR:
        return type_name(width, columns)
    if role is Role.TERMINATED or (role is Role.PARAM and width == 1):
        return role.value
    return f"{role.value}[{type_name(width, columns)}]"


@dataclass(frozen=True)
class Parameter:
    """A kernel parameter: its name, role, number of components (1 for a scalar), matrix
    columns (0 unless it is a matrix) and element dtype.

    Attributes:
        name: the Python parameter's name.
        role: its ``Role`` (from the annotation).
        width: its components: 1 for a scalar, 2 to 128 for a vector, rows x columns for a
            matrix, stored row-major (component ``r * columns + c`` is ``m[r, c]``).
        dtype: the element ``DType`` (default float64).
        columns: a matrix's columns, or 0 for a scalar or a vector.
        ndim: a ``Table``'s number of dimensions (1 to 3); 0 for every other role.
    """

    name: str
    role: Role
    width: int = 1
    dtype: DType = DType.FLOAT64
    columns: int = 0
    ndim: int = 0

    @property
    def is_vector(self) -> bool:
        """It has components (a vector or a matrix), one slot each."""
        return self.width > 1

    @property
    def dims(self) -> tuple[int, ...]:
        """The shape of one sample's value: ``()``, ``(K,)`` or ``(R, C)`` (``()`` for a
        table, whose sizes are the bound array's)."""
        if self.columns:
            return (self.width // self.columns, self.columns)
        return (self.width,) if self.is_vector else ()

    def index(self, component: int | None) -> tuple[int, ...]:
        """Where ``component`` is in one sample's value (the axes of ``dims``): ``()`` for a
        scalar, ``(k,)`` for a vector, ``(r, c)`` for a matrix."""
        if component is None:
            return ()
        return divmod(component, self.columns) if self.columns else (component,)

    def shape(self, n: int, rows: int = 0) -> tuple[int, ...]:
        """The array shape this parameter is bound to for ``n`` samples (vectors and matrices
        are SoA: ``(K, n)``, ``(R, C, n)``); a ``Series`` has ``rows`` rows in front; a
        ``Param`` is one value of shape ``dims``."""
        if self.role is Role.PARAM:
            return self.dims
        if self.role is Role.TABLE:  # any sizes, no sample axis
            return ()
        sample = (*self.dims, n)
        return (rows, *sample) if self.role is Role.SERIES else sample

    @property
    def annotation(self) -> str:
        """How the parameter is declared (``Mutable[Vec3]``)."""
        return annotation_name(self.role, self.width, self.columns, self.ndim)

    def __str__(self) -> str:
        return f"{self.name}: {self.annotation} {self.dtype.value}"


#: The extra arguments of a ``Series`` parameter, after its component arrays: its row count
#: ``T`` and the elements between the starts of two rows (the arrays' first stride, in
#: elements), both int64 and passed by value. A GPU thread needs them to address ``row``
#: of its sample (``p[row * row_stride + i]``); the CPU's arrays carry their own strides, so
#: it reads only the row count.
SERIES_FIELDS = ("rows", "row_stride")
#: The extra arguments of a ``Table[d]`` parameter, after its data pointer: its sizes along
#: its first ``d`` axes (``TABLE_FIELDS[:d]``), int64 by value. The frontend loads them
#: (``LOAD`` of ``(name, "size0")``) to clamp indices and to make the row-major flat index.
TABLE_FIELDS = ("size0", "size1", "size2")


def series_field(slot: Slot, array) -> np.int64:
    """The value of a field slot for the array bound to its parameter: a Series' row count,
    or the elements from one row's start to the next (the first stride); a Table's size
    along one axis (``size0``...)."""
    if slot.field == "rows":
        return np.int64(array.shape[0])
    if slot.field in TABLE_FIELDS:
        return np.int64(array.shape[TABLE_FIELDS.index(slot.field)])
    return np.int64(array.strides[0] // array.dtype.itemsize)


def uniform_value(slot: Slot, value) -> np.generic:
    """What a uniform slot of a ``Param`` passes: its value (a NumPy scalar), or component
    ``slot.component`` of a vector or matrix value (row-major)."""
    return value if slot.component is None else np.ravel(value)[slot.component]


@dataclass(frozen=True)
class Slot:
    """One argument of a compiled kernel after the terminated flags: a ``Param``'s value, or
    the array of one per-sample parameter, or one component row of a vector parameter, or one
    of a ``Series``' ``SERIES_FIELDS``.

    This is the kernel's argument layout, defined here once: every emitter, backend, artifact
    sidecar and loader reads it, so they cannot disagree on the order or the names.

    Attributes:
        param: the ``Parameter`` the argument belongs to.
        component: the vector component (0 for ``x``), or None for a scalar parameter or a
            ``Param``.
        field: None for the parameter's value or array; one of ``SERIES_FIELDS`` for a
            ``Series``' row count or row stride.
    """

    param: Parameter
    component: int | None  # the vector component, or None for a scalar parameter or a Param
    field: str | None = None  # a Series' "rows" or "row_stride"; None for the value itself

    @property
    def name(self) -> str:
        """The generated code's name for this argument, ``p_x``, or ``p_x_0`` for a component
        (prefixed, so that no parameter can shadow a name of the generated loop or a C++
        keyword); ``rows_x`` and ``row_stride_x`` for a Series' fields."""
        if self.field is not None:
            return f"{self.field}_{self.param.name}"
        base = f"p_{self.param.name}"
        return base if self.component is None else f"{base}_{self.component}"

    @property
    def key(self) -> tuple[str, int | str | None]:
        """``(parameter name, component)``, as ``LOAD`` ops and stores name a value;
        ``(parameter name, field)`` for a Series' field."""
        return self.param.name, self.component if self.field is None else self.field

    @property
    def is_uniform(self) -> bool:
        """A ``Param`` or a Series' field: passed by value, the same for every sample."""
        return self.field is not None or self.param.role is Role.PARAM

    @property
    def is_table(self) -> bool:
        """Whether this is a ``Table``'s data, a pointer to its elements shared by every
        sample (neither a per-sample array nor a value), read only by ``TABLE_READ`` ops."""
        return self.field is None and self.param.role is Role.TABLE

    @property
    def dtype(self) -> DType:
        """The element type of the argument (int64 for a Series' field, else the
        parameter's)."""
        return DType.INT64 if self.field is not None else self.param.dtype


#: What a launch of a program that reads counters (``Program.counters``) takes after its slots,
#: in order: the run's seed (an unsigned 64-bit integer; 0 for a program that does not draw),
#: the global index of the bound arrays' sample 0, and the runner's step count before the
#: launch (a sample live at step ``k`` of the launch is at step ``first_step + k``).
COUNTER_ARGUMENTS = ("seed", "first_sample", "first_step")


def slots(params: tuple[Parameter, ...]) -> tuple[Slot, ...]:
    """The argument layout of a kernel with ``params``, in parameter order: one slot per
    scalar parameter, one per component of a vector or matrix parameter (a ``Param``'s by
    value, row-major).
    The ``Terminated`` flag is not a slot: every backend passes the flags array itself, before
    the slots, whether or not the kernel declares it. A ``Series`` has its component arrays,
    then its ``SERIES_FIELDS``; a ``Table[d]`` its data, then ``TABLE_FIELDS[:d]``."""
    out = []
    for p in params:
        if p.role is Role.TERMINATED:
            continue
        components = range(p.width) if p.is_vector else [None]
        out += [Slot(p, k) for k in components]
        if p.role is Role.SERIES:
            out += [Slot(p, None, field) for field in SERIES_FIELDS]
        if p.role is Role.TABLE:
            out += [Slot(p, None, field) for field in TABLE_FIELDS[:p.ndim]]
    return tuple(out)


@dataclass(frozen=True)
class Store:
    """At the end of a step, write value ``value`` to component ``component`` of ``param``."""

    param: str
    component: int | None
    value: int


@dataclass(frozen=True)
class RowStore:
    """At the end of a step, write value ``value`` to row ``row`` of component ``component``
    of the ``Series`` ``param``, if ``guard`` holds (None: always) and ``0 <= row < T``.

    Attributes:
        param: the Series parameter's name.
        component: the vector component, or None for a ``Series[Scalar]``.
        row: the op giving the row (int64).
        value: the op giving the value (of the parameter's dtype).
        guard: the op giving the condition of the path the write is on (bool), or None.
    """

    param: str
    component: int | None
    row: int
    value: int
    guard: int | None = None

    def __str__(self) -> str:
        comp = "" if self.component is None else f"[{self.component}]"
        guard = "" if self.guard is None else f" if %{self.guard}"
        return f"row {self.param}{comp}[%{self.row}] <- %{self.value}{guard}"


@dataclass(frozen=True)
class Program:
    """One kernel specialised for one dtype signature: the unit every backend compiles.

    Attributes:
        name: the kernel's name.
        params: its parameters (``Parameter``), in the function's order, with this
            signature's dtypes.
        ops: the step's SSA values in order (``Op``; an op's args are earlier indices).
        stores: the writes made at the end of the step (``Store``).
        terminated: the index of the op giving the new terminated flag, or None when the
            kernel never sets it.
        options: the kernel's options as sorted ``(name, value)`` pairs (e.g.
            ``("accumulate", True)``).
        row_stores: the ``Series`` writes of the step (``RowStore``), in program order: at
            the end of a live sample's step they are done in this order, so a later write to
            the same row wins.
    """

    name: str
    params: tuple[Parameter, ...]
    ops: tuple[Op, ...]
    stores: tuple[Store, ...]
    terminated: int | None  # the new flag's value, or None if the kernel never sets it
    options: tuple[tuple[str, object], ...] = ()
    row_stores: tuple[RowStore, ...] = ()

    def param(self, name: str) -> Parameter:
        """The parameter named ``name`` (``KeyError`` if none): a lookup the reference
        executor makes for every load and store of every step."""
        return self._params_by_name[name]

    @functools.cached_property
    def _params_by_name(self) -> dict[str, Parameter]:
        return {p.name: p for p in self.params}

    @functools.cached_property
    def slots(self) -> tuple[Slot, ...]:
        """The kernel's argument layout (see ``Slot``)."""
        return slots(self.params)

    @functools.cached_property
    def draws(self) -> bool:
        """The program draws random numbers: a run needs a seed."""
        return any(op.kind is OpKind.DRAW for op in self.ops)

    @functools.cached_property
    def counters(self) -> bool:
        """The program reads the sample's index or step number (every draw does): its compiled
        launch takes ``COUNTER_ARGUMENTS`` after the slots. False: the launch is as before."""
        return any(op.kind in COUNTER_OPS for op in self.ops)

    @functools.cached_property
    def runs_once(self) -> bool:
        """Every sample takes one step and is done: the step sets its ``Terminated`` flag to
        the constant True (``hawk.ode.dopri5_start_kernel``'s first step, run once per sample
        with ``max_steps=1``). A backend may compile such a kernel for a short life (the CPU's
        ``eagle.cpu.native.compile_ir``: -O1 passes, no vectorisers, -O0 code generation). Read
        from the ops, so it is no part of ``digest`` and changes no program's text."""
        if self.terminated is None:
            return False
        flag = self.ops[self.terminated]
        return flag.kind is OpKind.CONST and flag.attr is True

    @property
    def accumulate(self) -> bool:
        return bool(dict(self.options).get("accumulate", False))

    @property
    def terminated_param(self) -> Parameter | None:
        return next((p for p in self.params if p.role is Role.TERMINATED), None)

    def __str__(self) -> str:
        lines = [f"kernel {self.name}({', '.join(str(p) for p in self.params)})"]
        if self.options:
            lines.append("  options " + ", ".join(f"{k}={v!r}" for k, v in self.options))
        lines += [f"  %{i} = {op}" for i, op in enumerate(self.ops)]
        for s in self.stores:
            comp = "" if s.component is None else f"[{s.component}]"
            lines.append(f"  store {s.param}{comp} <- %{s.value}")
        lines += [f"  {r}" for r in self.row_stores]
        if self.terminated is not None:
            lines.append(f"  terminated <- %{self.terminated}")
        return "\n".join(lines)

    def digest(self) -> str:
        """A content hash of the program: the key every compilation cache uses (computed once
        per program object)."""
        digest = self.__dict__.get("_digest")
        if digest is None:
            digest = hashlib.sha256(str(self).encode()).hexdigest()
            object.__setattr__(self, "_digest", digest)
        return digest
