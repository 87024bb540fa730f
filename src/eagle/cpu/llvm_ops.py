"""The hawk IR's ops as LLVM IR instructions: the table the CPU emitter renders a step with.

One op is one scalar value of one lane; the emitter's lane loop is what LLVM vectorises. Every
rendering gives the NumPy reference executor's bits (``hawk.reference``), never the faster
instruction that differs from it:

- no fast-math flags and no ``fmuladd``: LLVM contracts nothing, so each ``+ - * /`` rounds;
- ``//`` and ``%`` are NumPy's: floats by ``npy_divmod`` (the sign rules and the rounding of
  the quotient), integers floor-wise with 0 for a zero divisor and ``MIN // -1 == MIN``
  (LLVM's ``sdiv`` by zero or of ``MIN`` by -1 is undefined: the divisor is made safe first);
- shifts by a count outside ``[0, bits)`` give 0 (or the sign, for ``>>`` of a negative
  number), as NumPy's;
- a math function is the C library's, called through a name of eagle's own (``libm_symbol``):
  LLVM rewrites calls it recognises by name (``pow(x, 2.0)``, ``exp2``) and would no longer
  call the function the reference calls. A float32 ``sin`` is ``float(sin(double(x)))`` as in
  the reference (``IN_DOUBLE``); a NaN result is the canonical quiet NaN;
- a literal is written by its bits, so it reads back exactly.
"""

from __future__ import annotations

import copy
import itertools
import struct
from dataclasses import dataclass

from hawk.ir import AGGREGATES, DType, Op, OpKind, Program
from hawk.reference import IN_DOUBLE

from ..codegen import ExpressionRenderer, block_fill_value

__all__ = ["LlvmRenderer", "Where", "INTRINSICS", "TYPES", "MEMORY_TYPES", "libm_symbol",
           "LIBM", "literal", "Unsupported", "vector_variants", "VARIANT_LANES"]

#: an op's value in registers
TYPES = {DType.BOOL: "i1", DType.INT32: "i32", DType.UINT32: "i32", DType.INT64: "i64",
         DType.UINT64: "i64", DType.FLOAT32: "float", DType.FLOAT64: "double"}
#: the same value in memory (a NumPy bool is a byte)
MEMORY_TYPES = {**TYPES, DType.BOOL: "i8"}
_SUFFIX = {DType.FLOAT32: "f32", DType.FLOAT64: "f64"}
#: the math functions LLVM computes itself (exact ones, vectorised); the rest are calls
INTRINSICS = {"sqrt": "sqrt", "fabs": "fabs", "floor": "floor", "ceil": "ceil"}
#: the C library functions a generated module may call (``libm_symbol``): float32 ones other
#: than ``hypotf`` go through the double function (``IN_DOUBLE``)
LIBM = (*sorted(IN_DOUBLE), "hypot", "hypotf")
_SIGNED = {OpKind.LT: "slt", OpKind.LE: "sle", OpKind.GT: "sgt", OpKind.GE: "sge",
           OpKind.EQ: "eq", OpKind.NE: "ne"}
_UNSIGNED = {**_SIGNED, OpKind.LT: "ult", OpKind.LE: "ule", OpKind.GT: "ugt",
             OpKind.GE: "uge"}
_ORDERED = {OpKind.LT: "olt", OpKind.LE: "ole", OpKind.GT: "ogt", OpKind.GE: "oge",
            OpKind.EQ: "oeq", OpKind.NE: "une"}  # NaN != anything, as in NumPy
_FLOAT_ARITHMETIC = {OpKind.ADD: "fadd", OpKind.SUB: "fsub", OpKind.MUL: "fmul",
                     OpKind.DIV: "fdiv"}
_INT_ARITHMETIC = {OpKind.ADD: "add", OpKind.SUB: "sub", OpKind.MUL: "mul",
                   OpKind.BITAND: "and", OpKind.BITOR: "or", OpKind.BITXOR: "xor",
                   OpKind.AND: "and", OpKind.OR: "or"}


#: the vector widths a C library call gets a variant for, by element type (SSE to AVX-512)
VARIANT_LANES = {"double": (2, 4, 8), "float": (4, 8, 16)}


def _variant_name(symbol: str, lanes: int) -> str:
    return f"{symbol}_v{lanes}"


def _variant_attribute(symbol: str, work: str, arity: int) -> str:
    """The ``vector-function-abi-variant`` attribute naming ``symbol``'s vector variants (LLVM's
    own vector function ABI), so that the loop vectoriser can widen a loop that calls it."""
    names = ",".join(f"_ZGV_LLVM_N{lanes}{'v' * arity}_{symbol}({_variant_name(symbol, lanes)})"
                     for lanes in VARIANT_LANES[work])
    return f'"vector-function-abi-variant"="{names}"'


def vector_variants(calls) -> list[str]:
    """The definitions of the vector variants of each C library call in ``calls``
    (``LlvmRenderer.libm_calls``), and ``@llvm.compiler.used`` keeping them until the
    vectoriser has called them. A variant calls the scalar function lane by lane, so a
    vectorised step computes each lane's value with the same C library call, bit for bit:
    without variants one such call kept a whole step (Dormand-Prince's controller calls
    ``pow``) from being vectorised."""
    lines, used = [], []
    for symbol, work, arity in sorted(calls):
        for lanes in VARIANT_LANES[work]:
            vector = f"<{lanes} x {work}>"
            name = _variant_name(symbol, lanes)
            used.append(f"ptr @{name}")
            params = ", ".join(f"{vector} %a{j}" for j in range(arity))
            body = [f"define internal {vector} @{name}({params}) nounwind willreturn "
                    "memory(none) {", "entry:"]
            result = "poison"
            for lane in range(lanes):
                for j in range(arity):
                    body.append(f"  %x{j}_{lane} = extractelement {vector} %a{j}, i64 {lane}")
                arguments = ", ".join(f"{work} %x{j}_{lane}" for j in range(arity))
                body.append(f"  %r{lane} = call {work} @{symbol}({arguments})")
                body.append(f"  %v{lane} = insertelement {vector} {result}, {work} %r{lane}, "
                            f"i64 {lane}")
                result = f"%v{lane}"
            lines += [*body, f"  ret {vector} {result}", "}", ""]
    if used:
        lines.append(f"@llvm.compiler.used = appending global [{len(used)} x ptr] "
                     f"[{', '.join(used)}], section \"llvm.metadata\"")
    return lines


def block_bytes(op: Op) -> int:
    """The bytes an ``LU`` or ``LU_SOLVE`` op's block takes (``llvm_blocks``): an ``LU``'s
    ``n * n`` elements and as many swap flags (bytes), an ``LU_SOLVE``'s solution."""
    size = op.dtype.numpy.itemsize
    if op.kind is OpKind.LU:
        return op.attr * op.attr * (size + 1)
    return op.attr[0] * op.attr[1] * size


#: how the functions an ``LU`` calls begin (``native.pipeline`` looks for their calls)
FACTOR_SYMBOL_PREFIX = "eagle_lu_factor_"


def factor_symbol(dtype: DType) -> str:
    """The function an ``LU`` calls (``llvm_blocks`` defines it)."""
    return f"{FACTOR_SYMBOL_PREFIX}{_SUFFIX[dtype]}"


def fill_symbol(dtype: DType) -> str:
    """The function that sets every element of a block to one value (``llvm_blocks``)."""
    return f"eagle_fill_{_SUFFIX[dtype]}"


def solve_symbol(dtype: DType) -> str:
    """The function an ``LU_SOLVE`` calls."""
    return f"eagle_lu_solve_{_SUFFIX[dtype]}"


class Unsupported(NotImplementedError):
    """An op this backend cannot render (named, never replaced by something slower)."""


def libm_symbol(name: str) -> str:
    """The symbol a generated module calls for C library function ``name`` (bound to the C
    library's own at link time, ``native.load``)."""
    return f"eagle_libm_{name}"


def literal(value, dtype: DType) -> str:
    """``value`` as an LLVM constant of ``dtype``'s register type, exactly."""
    if dtype is DType.BOOL:
        return "true" if value else "false"
    if dtype.is_integer:
        bits = dtype.bits
        number = int(value) & ((1 << bits) - 1)
        return str(number - (1 << bits) if number >> (bits - 1) else number)
    if dtype is DType.FLOAT32:  # LLVM spells a float by the double of the same value
        value = struct.unpack("<f", struct.pack("<f", value))[0]
    return f"0x{struct.unpack('<Q', struct.pack('<d', value))[0]:016X}"


@dataclass(frozen=True)
class Where:
    """Where ops are rendered, as far as their text depends on it: the names of the draws'
    counters (the seed, the sample's index, the step's: ``step_id.2`` in a visit's third
    step), and how a table's data pointer is named from its slot's name (``%p_tab`` in a
    visit, ``%at_p_tab`` in ``run_blocks``)."""

    draw_counters: tuple[str, str, str] = ("seed", "sample_id", "step_id")
    table_pointer: str = "%{}"


class LlvmRenderer(ExpressionRenderer):
    """Renders an op as the LLVM instructions computing it (``codegen.walk``'s expression):
    the lines before the last define temporaries; the last is the value's right-hand side.
    Names are bare (``v3_0``); this renderer adds the ``%``. ``declarations`` collects the
    functions the rendered code calls, across every ``at`` of one program's renderer."""

    def __init__(self, program: Program, where: Where = Where()):
        self.program = program
        self.where = where
        self._tables = {slot.param.name: slot.name for slot in program.slots if slot.is_table}
        self.declarations: set[str] = set()
        #: the C library functions called, ``(symbol, type, arity)``: ``vector_variants``
        self.libm_calls: set[tuple[str, str, int]] = set()
        #: the whole-matrix ops rendered, by index: each has a stack slot (``block_slots``)
        self.blocks: dict[int, Op] = {}
        self._block_index = {id(op): i for i, op in enumerate(program.ops)
                             if op.kind in AGGREGATES}
        self._temps = itertools.count()

    def at(self, where: Where) -> LlvmRenderer:
        """This renderer for ops rendered ``where``: the same declarations, calls and
        temporaries' numbering (shared, not copied)."""
        other = copy.copy(self)
        other.where = where
        return other

    def _temp(self) -> str:
        return f"%t{next(self._temps)}"

    def block_slots(self) -> list[str]:
        """The stack slots of the whole-matrix ops rendered (``llvm_blocks``), for the entry
        block of the function their steps are in."""
        return [f"%block{i} = alloca [{block_bytes(op)} x i8], align 16"
                for i, op in sorted(self.blocks.items())]

    def _block(self, op: Op, args: list[str], lines: list[str]) -> str:
        """An ``LU`` or ``LU_SOLVE``: its elements stored into its slot and the function called
        on it; the value is the slot's address, which a ``PART`` (or an ``LU_SOLVE``, for an
        ``LU``) reads."""
        index = self._block_index[id(op)]
        self.blocks[index] = op
        t, block = TYPES[op.dtype], f"%block{index}"
        elements = args[1:] if op.kind is OpKind.LU_SOLVE else args
        common = block_fill_value(elements)
        if common is not None:  # a sparse matrix's zero: one loop, then the others
            lines.append(f"call void @{fill_symbol(op.dtype)}(ptr {block}, i64 "
                         f"{len(elements)}, {t} {common})")
        for k, value in enumerate(elements):
            if value == common:
                continue
            pointer = self._temp()
            lines += [f"{pointer} = getelementptr inbounds {t}, ptr {block}, i64 {k}",
                      f"store {t} {value}, ptr {pointer}"]
        n = op.attr if op.kind is OpKind.LU else op.attr[0]
        factors = block if op.kind is OpKind.LU else args[0]
        flags = self._temp()
        lines.append(f"{flags} = getelementptr inbounds {t}, ptr {factors}, i64 {n * n}")
        if op.kind is OpKind.LU:
            lines.append(f"call void @{factor_symbol(op.dtype)}(ptr {block}, ptr {flags}, "
                         f"i64 {n})")
        else:
            lines.append(f"call void @{solve_symbol(op.dtype)}(ptr {factors}, ptr {flags}, "
                         f"ptr {block}, i64 {n}, i64 {op.attr[1]})")
        return f"getelementptr inbounds i8, ptr {block}, i64 0"

    def render(self, op: Op, args: list[str]) -> str:
        lines: list[str] = []
        values = [f"%{a}" for a in args]
        dtypes = [self.program.ops[a].dtype for a in op.args]
        value = self._render(op, values, dtypes, lines)
        return "\n".join([*lines, value])

    # -- one op ------------------------------------------------------------------------------

    def _render(self, op: Op, args: list[str], dtypes: list[DType], lines: list[str]) -> str:
        kind, dtype = op.kind, op.dtype
        t = TYPES[dtype]

        def emit(text: str) -> str:
            name = self._temp()
            lines.append(f"{name} = {text}")
            return name

        if kind in AGGREGATES:
            return self._block(op, args, lines)
        if kind is OpKind.PART:  # element attr of the block args[0] points to
            at = emit(f"getelementptr inbounds {t}, ptr {args[0]}, i64 {op.attr}")
            return f"load {t}, ptr {at}"
        if kind is OpKind.CONST:  # a value of its own: a select of the literal, which is exact
            value = literal(op.attr, dtype)
            return f"select i1 true, {t} {value}, {t} {value}"
        if kind is OpKind.CAST:
            return self.convert(args[0], dtypes[0], dtype)
        if kind is OpKind.SAMPLE_INDEX:
            return f"or i64 %{self.where.draw_counters[1]}, 0"
        if kind is OpKind.STEP_INDEX:
            return f"or i64 %{self.where.draw_counters[2]}, 0"
        if kind is OpKind.DRAW:
            return self._draw(op, args, emit)
        if kind is OpKind.TABLE_READ:  # element args[0] (in range) of the shared table
            pointer = self.where.table_pointer.format(self._tables[op.attr])
            at = emit(f"getelementptr {MEMORY_TYPES[dtype]}, ptr {pointer}, i64 {args[0]}")
            return f"load {MEMORY_TYPES[dtype]}, ptr {at}"
        if kind is OpKind.CALL:
            return self._call(op.attr, args, dtype, emit)
        if kind is OpKind.SELECT:
            return f"select i1 {args[0]}, {t} {args[1]}, {t} {args[2]}"
        if kind is OpKind.NOT:
            return f"xor i1 {args[0]}, true"
        if kind in _SIGNED:  # comparisons: the operands' dtype decides
            a = dtypes[0]
            ta = TYPES[a]
            if a.is_float:
                return f"fcmp {_ORDERED[kind]} {ta} {args[0]}, {args[1]}"
            table = _UNSIGNED if a.is_unsigned or a is DType.BOOL else _SIGNED
            return f"icmp {table[kind]} {ta} {args[0]}, {args[1]}"
        if kind in (OpKind.MIN, OpKind.MAX):  # Python's: b if b < a else a
            a, b = args
            if dtype.is_float:
                test = emit(f"fcmp {'olt' if kind is OpKind.MIN else 'ogt'} {t} {b}, {a}")
            else:
                table = _UNSIGNED if dtype.is_unsigned or dtype is DType.BOOL else _SIGNED
                test = emit(f"icmp {table[OpKind.LT if kind is OpKind.MIN else OpKind.GT]} "
                            f"{t} {b}, {a}")
            return f"select i1 {test}, {t} {b}, {t} {a}"
        if dtype.is_float:
            return self._float(kind, args, dtype, emit)
        return self._integer(kind, args, dtype, emit)

    def _float(self, kind: OpKind, args: list[str], dtype: DType, emit) -> str:
        t = TYPES[dtype]
        if kind in _FLOAT_ARITHMETIC:
            return f"{_FLOAT_ARITHMETIC[kind]} {t} {args[0]}, {args[1]}"
        if kind is OpKind.NEG:
            return f"fneg {t} {args[0]}"
        if kind is OpKind.ABS:
            return self._intrinsic("fabs", dtype, args)
        if kind in (OpKind.FLOORDIV, OpKind.MOD):
            return self._float_divmod(kind, *args, dtype, emit)
        raise Unsupported(f"the CPU backend cannot compute {kind.value} of {dtype.value}")

    def _float_divmod(self, kind: OpKind, a: str, b: str, dtype: DType, emit) -> str:
        """NumPy's ``npy_divmod`` (floor division and remainder of floats), step for step."""
        t = TYPES[dtype]
        zero, one, half = (literal(v, dtype) for v in (0.0, 1.0, 0.5))
        mod = emit(f"frem {t} {a}, {b}")  # C's fmod: exact
        b_zero = emit(f"fcmp oeq {t} {b}, {zero}")
        mod_set = emit(f"fcmp une {t} {mod}, {zero}")  # C's `if (mod)`: NaN counts
        signs_differ = emit(f"xor i1 {emit(f'fcmp olt {t} {b}, {zero}')}, "
                            f"{emit(f'fcmp olt {t} {mod}, {zero}')}")
        adjust = emit(f"and i1 {mod_set}, {signs_differ}")
        if kind is OpKind.MOD:
            moved = emit(f"select i1 {adjust}, {t} {emit(f'fadd {t} {mod}, {b}')}, {t} {mod}")
            signed_zero = self._copysign(zero, b, dtype, emit)
            result = emit(f"select i1 {mod_set}, {t} {moved}, {t} {signed_zero}")
            return f"select i1 {b_zero}, {t} {mod}, {t} {result}"
        quotient = emit(f"fdiv {t} {a}, {b}")
        div = emit(f"fdiv {t} {emit(f'fsub {t} {a}, {mod}')}, {b}")
        div = emit(f"select i1 {adjust}, {t} {emit(f'fsub {t} {div}, {one}')}, {t} {div}")
        floor = emit(self._intrinsic("floor", dtype, [div]))
        up = emit(f"fcmp ogt {t} {emit(f'fsub {t} {div}, {floor}')}, {half}")
        rounded = emit(f"select i1 {up}, {t} {emit(f'fadd {t} {floor}, {one}')}, {t} {floor}")
        div_set = emit(f"fcmp une {t} {div}, {zero}")
        signed_zero = self._copysign(zero, quotient, dtype, emit)
        result = emit(f"select i1 {div_set}, {t} {rounded}, {t} {signed_zero}")
        return f"select i1 {b_zero}, {t} {quotient}, {t} {result}"

    def _copysign(self, magnitude: str, sign: str, dtype: DType, emit) -> str:
        return emit(self._intrinsic("copysign", dtype, [magnitude, sign]))

    def _integer(self, kind: OpKind, args: list[str], dtype: DType, emit) -> str:
        t = TYPES[dtype]
        if kind in _INT_ARITHMETIC and (dtype is not DType.BOOL
                                        or kind in (OpKind.AND, OpKind.OR, OpKind.BITAND,
                                                    OpKind.BITOR, OpKind.BITXOR)):
            return f"{_INT_ARITHMETIC[kind]} {t} {args[0]}, {args[1]}"
        if kind is OpKind.INVERT:
            return f"xor {t} {args[0]}, {literal(-1, dtype) if dtype.is_integer else 'true'}"
        if dtype is DType.BOOL:
            raise Unsupported(f"the CPU backend cannot compute {kind.value} of bool")
        if kind is OpKind.NEG:
            return f"sub {t} 0, {args[0]}"
        if kind is OpKind.ABS:
            if dtype.is_unsigned:
                return f"or {t} {args[0]}, 0"
            negative = emit(f"icmp slt {t} {args[0]}, 0")
            return f"select i1 {negative}, {t} {emit(f'sub {t} 0, {args[0]}')}, {t} {args[0]}"
        if kind in (OpKind.FLOORDIV, OpKind.MOD):
            return self._integer_divmod(kind, *args, dtype, emit)
        if kind in (OpKind.LSHIFT, OpKind.RSHIFT):
            a, b = args
            inside = emit(f"icmp ult {t} {b}, {dtype.bits}")  # a negative count is outside too
            if kind is OpKind.RSHIFT and not dtype.is_unsigned:  # outside: the sign, a >> top
                count = emit(f"select i1 {inside}, {t} {b}, {t} {dtype.bits - 1}")
                return f"ashr {t} {a}, {count}"
            shifted = emit(f"{'shl' if kind is OpKind.LSHIFT else 'lshr'} {t} {a}, {b}")
            return f"select i1 {inside}, {t} {shifted}, {t} 0"
        raise Unsupported(f"the CPU backend cannot compute {kind.value} of {dtype.value}")

    def _integer_divmod(self, kind: OpKind, a: str, b: str, dtype: DType, emit) -> str:
        """NumPy's integer ``//`` and ``%``: floor-wise; 0 for a zero divisor; ``MIN // -1``
        wraps to ``MIN``. The divisor LLVM sees is never 0 (nor -1: ``x % -1 == 0`` and
        ``x // -1 == -x`` are taken apart), where its ``sdiv`` and ``srem`` are undefined."""
        t = TYPES[dtype]
        b_zero = emit(f"icmp eq {t} {b}, 0")
        if dtype.is_unsigned:
            safe = emit(f"select i1 {b_zero}, {t} 1, {t} {b}")
            value = emit(f"{'udiv' if kind is OpKind.FLOORDIV else 'urem'} {t} {a}, {safe}")
            return f"select i1 {b_zero}, {t} 0, {t} {value}"
        b_minus_one = emit(f"icmp eq {t} {b}, -1")
        safe = emit(f"select i1 {emit(f'or i1 {b_zero}, {b_minus_one}')}, {t} 1, {t} {b}")
        remainder = emit(f"srem {t} {a}, {safe}")
        remainder_set = emit(f"icmp ne {t} {remainder}, 0")
        signs_differ = emit(f"icmp slt {t} {emit(f'xor {t} {remainder}, {safe}')}, 0")
        adjust = emit(f"and i1 {remainder_set}, {signs_differ}")
        if kind is OpKind.MOD:
            moved = emit(f"add {t} {remainder}, {safe}")
            value = emit(f"select i1 {adjust}, {t} {moved}, {t} {remainder}")
            return f"select i1 {b_zero}, {t} 0, {t} {value}"
        quotient = emit(f"sdiv {t} {a}, {safe}")
        floored = emit(f"sub {t} {quotient}, {emit(f'zext i1 {adjust} to {t}')}")
        negated = emit(f"select i1 {b_minus_one}, {t} {emit(f'sub {t} 0, {a}')}, {t} {floored}")
        return f"select i1 {b_zero}, {t} 0, {t} {negated}"

    def convert(self, value: str, source: DType, target: DType) -> str:
        """The one instruction converting ``value`` from ``source`` to ``target``, as NumPy's
        ``astype`` does (an emitter's stores use it too)."""
        ts, tt = TYPES[source], TYPES[target]
        if source is target or (ts == tt and source is not DType.BOOL):
            return f"bitcast {ts} {value} to {tt}"  # int64 <-> uint64: the same bits
        if target is DType.BOOL:  # NumPy: nonzero is True, NaN included
            if source.is_float:
                return f"fcmp une {ts} {value}, {literal(0.0, source)}"
            return f"icmp ne {ts} {value}, 0"
        if source is DType.BOOL:
            return f"{'uitofp' if target.is_float else 'zext'} i1 {value} to {tt}"
        if source.is_float and target.is_float:
            return f"{'fpext' if target.bits > source.bits else 'fptrunc'} {ts} {value} to {tt}"
        if source.is_float:
            return f"{'fptoui' if target.is_unsigned else 'fptosi'} {ts} {value} to {tt}"
        if target.is_float:
            return f"{'uitofp' if source.is_unsigned else 'sitofp'} {ts} {value} to {tt}"
        if target.bits < source.bits:
            return f"trunc {ts} {value} to {tt}"
        return f"{'zext' if source.is_unsigned else 'sext'} {ts} {value} to {tt}"

    def _intrinsic(self, name: str, dtype: DType, args: list[str]) -> str:
        t = TYPES[dtype]
        function = f"@llvm.{name}.{_SUFFIX[dtype]}"
        self.declarations.add(f"declare {t} {function}({', '.join([t] * len(args))})")
        return f"call {t} {function}({', '.join(f'{t} {a}' for a in args)})"

    def _call(self, name: str, args: list[str], dtype: DType, emit) -> str:
        if name in INTRINSICS:
            value = emit(self._intrinsic(INTRINSICS[name], dtype, args))
        else:
            in_double = dtype is DType.FLOAT32 and name in IN_DOUBLE
            work = "double" if in_double or dtype is DType.FLOAT64 else "float"
            if in_double:
                args = [emit(f"fpext float {a} to double") for a in args]
            symbol = libm_symbol(name if work == "double" else name + "f")
            self.declarations.add(f"declare {work} @{symbol}({', '.join([work] * len(args))}) "
                                  "nounwind willreturn memory(none)")
            self.libm_calls.add((symbol, work, len(args)))
            # the variants on this call, not on the function: a variant's own scalar calls
            # must not be widened into a call of itself
            value = emit(f"call {work} @{symbol}({', '.join(f'{work} {a}' for a in args)}) "
                         f"{_variant_attribute(symbol, work, len(args))}")
            if in_double:
                value = emit(f"fptrunc double {value} to float")
            # An opaque function's NaN LLVM cannot reason about: a float test and select,
            # off the integer unit (the bits' round trip added some 5 cycles of latency to
            # each call of an RK4 chain: the pendulum ran at 0.88x a per-sample loop).
            t = TYPES[dtype]
            is_nan = emit(f"fcmp uno {t} {value}, {value}")
            return f"select i1 {is_nan}, {t} {literal(float('nan'), dtype)}, {t} {value}"
        return self._canonical_nan(value, dtype, emit)

    def _canonical_nan(self, value: str, dtype: DType, emit) -> str:
        """``value`` of an intrinsic, or the canonical quiet NaN (sign clear) where it is a
        NaN. Tested and chosen on the bits: LLVM takes any NaN for any other, and folds a
        float test of an intrinsic it knows away (``select(isnan(sqrt(x)), NaN, sqrt(x))``
        became ``sqrt(x)``, whose NaN for x < 0 has the sign bit set)."""
        width = "i32" if dtype is DType.FLOAT32 else "i64"
        magnitude = 0x7FFFFFFF if dtype is DType.FLOAT32 else 0x7FFFFFFFFFFFFFFF
        infinity = 0x7F800000 if dtype is DType.FLOAT32 else 0x7FF0000000000000
        quiet = 0x7FC00000 if dtype is DType.FLOAT32 else 0x7FF8000000000000
        t = TYPES[dtype]
        bits = emit(f"bitcast {t} {value} to {width}")
        is_nan = emit(f"icmp ugt {width} {emit(f'and {width} {bits}, {magnitude}')}, {infinity}")
        chosen = emit(f"select i1 {is_nan}, {width} {quiet}, {width} {bits}")
        return f"bitcast {width} {chosen} to {t}"

    def _draw(self, op: Op, args: list[str], emit) -> str:
        distribution, position = op.attr
        seed, sample, step = (f"%{name}" for name in self.where.draw_counters)
        counters = f"i64 {seed}, i64 {sample}, i64 {step}, i64 {literal(position, DType.UINT64)}"
        bits = 32 if distribution == "uniform" and op.dtype is DType.FLOAT32 else 64
        self.declarations.add(f"draw:{distribution}{bits if distribution != 'randint' else ''}")
        if distribution == "randint":
            return f"call i64 @eagle_draw_randint({counters}, i64 {args[0]}, i64 {args[1]})"
        if distribution == "uniform":
            return f"call {TYPES[op.dtype]} @eagle_draw_uniform{bits}({counters})"
        value = f"call double @eagle_draw_{distribution}64({counters})"
        if op.dtype is DType.FLOAT64:
            return value
        return f"fptrunc double {emit(value)} to float"  # float32: the float64 draw, rounded
