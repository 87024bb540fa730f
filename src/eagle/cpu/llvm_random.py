"""The draws of ``hawk.philox`` as LLVM IR text, for a CPU backend that compiles with llvmlite.

``hawk.philox`` defines every random number a hawk kernel draws (Philox4x32-10 of a counter made
from the sample, the step and the draw's position, keyed by the seed; then ``uniform``,
``normal``, ``exponential`` and ``randint`` built on its four words), and every backend must
give its bits exactly. This module renders its operations, in the same order, as LLVM IR
text that the CPU emitter's module (``cpu.emit``) includes: ``random_ir(names)`` gives the
definitions of the draws in ``names`` (``DRAWS`` lists them and their signatures) and of the
helpers they call, nothing else.

What keeps the bits the same:

- integer words are ``i32`` (Philox's products ``i64``: ``zext`` then ``mul``), so each
  operation is the reference's modulo ``2**32`` or ``2**64``;
- floating point has no fast-math flags and no ``fmuladd`` (LLVM never contracts ``fmul`` and
  ``fadd`` without the ``contract`` flag), every ``fadd``/``fmul`` is the reference's in its
  order, ``sqrt`` is ``llvm.sqrt.f64`` (correctly rounded), constants are written in LLVM's
  exact hexadecimal form, and the polynomials are Horner's rule innermost first, generated
  from ``hawk.philox``'s coefficient tuples (``hawk.philox._horner``);
- ``log53`` and ``cos53`` are ``hawk.philox``'s, whose ``np.where``/``np.select`` are
  ``select`` here.

Why straight-line code: the draws are ``internal`` functions marked ``alwaysinline``, and a
backend calls them inside its loop over lanes; with no branches (``select`` only) and no
library calls, LLVM's loop vectoriser can run that loop several lanes to an instruction.

A module that includes this text must not define the ``@eagle_`` names itself, and must
declare the intrinsics of ``declarations(names)`` exactly once (LLVM rejects a second
``declare`` of the same function): ``random_ir(names, declare=True)`` includes them, for a
module that declares nothing else of ``DECLARATIONS``.
"""

from __future__ import annotations

import struct

from hawk.ir import DType
from hawk.philox import (
    COS_SERIES,
    LN2_HI,
    LN2_LO,
    LOG_SERIES,
    M0,
    M1,
    PI_4,
    ROUNDS,
    SIN_SERIES,
    SQRT2,
    W0,
    W1,
)

from .llvm_ops import literal

__all__ = ["DRAWS", "DECLARATIONS", "random_ir", "declarations", "symbol"]

_COUNTER = "i64 %seed, i64 %sample, i64 %step, i64 %position"
#: the draws: short name -> (symbol, LLVM return type, LLVM parameter types). ``seed`` and
#: ``position`` are uint64 values in an ``i64``, ``sample`` and ``step`` int64; ``randint``'s
#: ``lo`` and ``hi`` are int64 (``lo`` where ``hi <= lo``).
DRAWS = {
    "uniform64": ("eagle_draw_uniform64", "double", ("i64",) * 4),
    "uniform32": ("eagle_draw_uniform32", "float", ("i64",) * 4),
    "normal64": ("eagle_draw_normal64", "double", ("i64",) * 4),
    "exponential64": ("eagle_draw_exponential64", "double", ("i64",) * 4),
    "randint": ("eagle_draw_randint", "i64", ("i64",) * 6),
}
#: the intrinsics a draw may call: name -> its declaration
DECLARATIONS = {"llvm.sqrt.f64": "declare double @llvm.sqrt.f64(double)"}

_ATTRIBUTES = "alwaysinline nounwind"
_WORDS = "{i32, i32, i32, i32}"


# -- rendering: constants and lines ----------------------------------------------------------

def _double(x: float) -> str:
    """A float64 constant, exactly (``llvm_ops.literal``)."""
    return literal(x, DType.FLOAT64)


def _float(x: float) -> str:
    """A float32 constant, which must be one exactly (``llvm_ops.literal`` would round it)."""
    (rounded,) = struct.unpack("<f", struct.pack("<f", x))
    if rounded != x:
        raise ValueError(f"{x!r} is not a float32")
    return literal(x, DType.FLOAT32)


def _hex(n: int) -> str:
    """An integer constant in hexadecimal, read as unsigned (LLVM's ``u0x`` form)."""
    return f"u0x{n:X}"


class _Body:
    """The instructions of one function: ``body("fadd double %a, %b")`` appends
    ``%v7 = fadd double %a, %b`` and returns ``%v7`` (each temporary named once, in order)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._count = 0

    def __call__(self, instruction: str) -> str:
        name = f"%v{self._count}"
        self._count += 1
        self.lines.append(f"  {name} = {instruction}")
        return name

    def call(self, kind: str, function: str, *arguments: str) -> str:
        """``call kind @function(arguments)``, each argument written with its type."""
        return self(f"call {kind} @{function}({', '.join(arguments)})")

    def ret(self, kind: str, value: str) -> None:
        self.lines.append(f"  ret {kind} {value}")


def _define(kind: str, name: str, parameters: str, body: _Body) -> str:
    return "\n".join([f"define internal {kind} @{name}({parameters}) {_ATTRIBUTES} {{",
                      *body.lines, "}", ""])


def _horner(b: _Body, z: str, coefficients) -> str:
    """``c0 + z * (c1 + z * (... + z * c_last))``, innermost first (``hawk.philox._horner``)."""
    total = _double(coefficients[-1])
    for c in reversed(coefficients[:-1]):
        product = b(f"fmul double {z}, {total}")
        total = b(f"fadd double {_double(c)}, {product}")
    return total


# -- Philox4x32-10 and the integers of a block ------------------------------------------------

def _philox() -> str:
    """``hawk.philox.block``: the counter and key words (``counter_words``, ``key_words``), the
    ten rounds written out (``philox4x32``), the four words as a struct. The position is
    taken modulo ``2**32``, as the reference's counter word."""
    b = _Body()
    c0 = b("trunc i64 %position to i32")
    c1 = b("trunc i64 %step to i32")
    step_high = b(f"and i64 {b('lshr i64 %step, 32')}, {_hex(0xFFFF)}")
    sample_high = b(f"and i64 {b('lshr i64 %sample, 32')}, {_hex(0xFFFF)}")
    high = b(f"or i64 {step_high}, {b(f'shl i64 {sample_high}, 16')}")
    c2 = b(f"trunc i64 {high} to i32")
    c3 = b("trunc i64 %sample to i32")
    k0 = b("trunc i64 %seed to i32")
    k1 = b(f"trunc i64 {b('lshr i64 %seed, 32')} to i32")
    for r in range(ROUNDS):
        if r:
            k0 = b(f"add i32 {k0}, {_hex(W0)}")
            k1 = b(f"add i32 {k1}, {_hex(W1)}")
        p0 = b(f"mul i64 {b(f'zext i32 {c0} to i64')}, {_hex(M0)}")
        p1 = b(f"mul i64 {b(f'zext i32 {c2} to i64')}, {_hex(M1)}")
        high0 = b(f"trunc i64 {b(f'lshr i64 {p0}, 32')} to i32")
        high1 = b(f"trunc i64 {b(f'lshr i64 {p1}, 32')} to i32")
        c0, c1, c2, c3 = (b(f"xor i32 {b(f'xor i32 {high1}, {c1}')}, {k0}"),
                          b(f"trunc i64 {p1} to i32"),
                          b(f"xor i32 {b(f'xor i32 {high0}, {c3}')}, {k1}"),
                          b(f"trunc i64 {p0} to i32"))
    words = "poison"
    for i, word in enumerate((c0, c1, c2, c3)):
        words = b(f"insertvalue {_WORDS} {words}, i32 {word}, {i}")
    b.ret(_WORDS, words)
    return _define(_WORDS, "eagle_philox4x32_10", _COUNTER, b)


def _integer53() -> str:
    """``hawk.philox._integer53``: ``(high << 21) | (low >> 11)``, in ``[0, 2**53)``."""
    b = _Body()
    high = b(f"shl i64 {b('zext i32 %high to i64')}, 21")
    low = b(f"lshr i64 {b('zext i32 %low to i64')}, 11")
    b.ret("i64", b(f"or i64 {high}, {low}"))
    return _define("i64", "eagle_integer53", "i32 %high, i32 %low", b)


def _block(b: _Body) -> list[str]:
    """The four words of this draw's block (the draw's own parameters are the counter's)."""
    words = b.call(_WORDS, "eagle_philox4x32_10", *_COUNTER.split(", "))
    return [b(f"extractvalue {_WORDS} {words}, {i}") for i in range(4)]


def _integer53_of(b: _Body, high: str, low: str) -> str:
    return b.call("i64", "eagle_integer53", f"i32 {high}", f"i32 {low}")


# -- log53 and cos53 ---------------------------------------------------------------------------

def _log53() -> str:
    """``hawk.philox.log53``: ``log(k * 2**-53)`` for ``k`` in ``[1, 2**53]``."""
    b = _Body()
    e = "0"
    for shift in (32, 16, 8, 4, 2, 1):  # e = floor(log2(k)), by binary search
        shifted = b(f"ashr i64 %k, {b(f'add i64 {e}, {shift}')}")
        above = b(f"icmp ne i64 {shifted}, 0")
        e = b(f"add i64 {e}, {b(f'select i1 {above}, i64 {shift}, i64 0')}")
    fits = b(f"icmp sle i64 {e}, 52")
    amount = b(f"select i1 {fits}, i64 {b(f'sub i64 52, {e}')}, i64 0")
    up = b(f"shl i64 %k, {amount}")
    top = b(f"select i1 {fits}, i64 {up}, i64 {b('ashr i64 %k, 1')}")  # top bit at 52
    m = b(f"fmul double {b(f'sitofp i64 {top} to double')}, {_double(2.0**-52)}")  # [1, 2)
    big = b(f"fcmp ogt double {m}, {_double(SQRT2)}")
    m = b(f"select i1 {big}, double {b(f'fmul double {m}, {_double(0.5)}')}, double {m}")
    e = b(f"add i64 {e}, {b(f'zext i1 {big} to i64')}")
    e = b(f"sub i64 {e}, 53")
    s = b(f"fdiv double {b(f'fsub double {m}, {_double(1.0)}')}, "
          f"{b(f'fadd double {m}, {_double(1.0)}')}")
    z = b(f"fmul double {s}, {s}")
    series = b(f"fmul double {z}, {_horner(b, z, LOG_SERIES)}")
    twice_s = b(f"fmul double {_double(2.0)}, {s}")
    log_m = b(f"fadd double {twice_s}, {b(f'fmul double {twice_s}, {series}')}")
    ef = b(f"sitofp i64 {e} to double")
    low = b(f"fadd double {b(f'fmul double {ef}, {_double(LN2_LO)}')}, {log_m}")
    b.ret("double", b(f"fadd double {b(f'fmul double {ef}, {_double(LN2_HI)}')}, {low}"))
    return _define("double", "eagle_log53", "i64 %k", b)


def _cos53() -> str:
    """``hawk.philox.cos53``: ``cos(2 pi k 2**-53)`` for ``k`` in ``[0, 2**53)``."""
    b = _Body()
    octant = b("ashr i64 %k, 50")
    f = b(f"and i64 %k, {_hex((1 << 50) - 1)}")
    odd = b(f"icmp eq i64 {b(f'and i64 {octant}, 1')}, 1")
    # odd octants: the distance to the next multiple of pi/2
    f = b(f"select i1 {odd}, i64 {b(f'sub i64 {_hex(1 << 50)}, {f}')}, i64 {f}")
    x = b(f"fmul double {b(f'sitofp i64 {f} to double')}, {_double(2.0**-50)}")
    x = b(f"fmul double {x}, {_double(PI_4)}")
    w = b(f"fmul double {x}, {x}")
    sin_series = b(f"fmul double {w}, {_horner(b, w, SIN_SERIES)}")
    sin_x = b(f"fadd double {x}, {b(f'fmul double {x}, {sin_series}')}")
    cos_series = b(f"fmul double {w}, {_horner(b, w, COS_SERIES)}")
    cos_x = b(f"fsub double {_double(1.0)}, {b(f'fmul double {_double(0.5)}, {w}')}")
    cos_x = b(f"fadd double {cos_x}, {b(f'fmul double {w}, {cos_series}')}")
    cos_phi = b(f"select i1 {odd}, double {sin_x}, double {cos_x}")
    sin_phi = b(f"select i1 {odd}, double {cos_x}, double {sin_x}")
    # quadrant 0: cos_phi, 1: -sin_phi, 2: -cos_phi, 3: sin_phi
    quadrant = b(f"ashr i64 {octant}, 1")
    swap = b(f"icmp eq i64 {b(f'and i64 {quadrant}, 1')}, 1")
    negative = b(f"and i64 {b(f'add i64 {quadrant}, 1')}, 2")
    negative = b(f"icmp eq i64 {negative}, 2")
    value = b(f"select i1 {swap}, double {sin_phi}, double {cos_phi}")
    b.ret("double", b(f"select i1 {negative}, double {b(f'fneg double {value}')}, "
                      f"double {value}"))
    return _define("double", "eagle_cos53", "i64 %k", b)


# -- the draws ---------------------------------------------------------------------------------

def _uniform64() -> str:
    b = _Body()
    w0, w1, _, _ = _block(b)
    k = b(f"sitofp i64 {_integer53_of(b, w0, w1)} to double")
    b.ret("double", b(f"fmul double {k}, {_double(2.0**-53)}"))
    return _define("double", "eagle_draw_uniform64", _COUNTER, b)


def _uniform32() -> str:
    b = _Body()
    w0, _, _, _ = _block(b)
    k = b(f"sitofp i32 {b(f'lshr i32 {w0}, 8')} to float")
    b.ret("float", b(f"fmul float {k}, {_float(2.0**-24)}"))
    return _define("float", "eagle_draw_uniform32", _COUNTER, b)


def _log_u1(b: _Body, w0: str, w1: str) -> str:
    """``log53(k1)``, ``k1 = integer53(w0, w1) + 1``: the log of ``u1`` in ``(0, 1]``."""
    k1 = b(f"add i64 {_integer53_of(b, w0, w1)}, 1")
    return b.call("double", "eagle_log53", f"i64 {k1}")


def _normal64() -> str:
    b = _Body()
    w0, w1, w2, w3 = _block(b)
    twice = b(f"fmul double {_log_u1(b, w0, w1)}, {_double(-2.0)}")
    radius = b.call("double", "llvm.sqrt.f64", f"double {twice}")
    k2 = _integer53_of(b, w2, w3)
    b.ret("double", b(f"fmul double {radius}, {b.call('double', 'eagle_cos53', f'i64 {k2}')}"))
    return _define("double", "eagle_draw_normal64", _COUNTER, b)


def _exponential64() -> str:
    b = _Body()
    w0, w1, _, _ = _block(b)
    b.ret("double", b(f"fneg double {_log_u1(b, w0, w1)}"))
    return _define("double", "eagle_draw_exponential64", _COUNTER, b)


def _randint() -> str:
    """``hawk.philox.randint``: ``lo + ((w0 * r + ((w1 * r) >> 32)) >> 32)``,
    ``r = min(hi - lo, 2**32)`` where ``hi > lo``, else 0."""
    b = _Body()
    w0, w1, _, _ = _block(b)
    width = b("sub i64 %hi, %lo")  # wraps: the true width when hi > lo
    capped = b(f"select i1 {b(f'icmp ult i64 {width}, {_hex(1 << 32)}')}, i64 {width}, "
               f"i64 {_hex(1 << 32)}")
    span = b(f"select i1 {b('icmp sgt i64 %hi, %lo')}, i64 {capped}, i64 0")
    high = b(f"mul i64 {b(f'zext i32 {w0} to i64')}, {span}")
    low = b(f"mul i64 {b(f'zext i32 {w1} to i64')}, {span}")
    total = b(f"add i64 {high}, {b(f'lshr i64 {low}, 32')}")
    b.ret("i64", b(f"add i64 %lo, {b(f'lshr i64 {total}, 32')}"))
    return _define("i64", "eagle_draw_randint", _COUNTER + ", i64 %lo, i64 %hi", b)


# -- what a module includes ---------------------------------------------------------------------

# each function: (renderer, the functions it calls, the intrinsics it calls), callees first
_FUNCTIONS = {
    "eagle_philox4x32_10": (_philox, (), ()),
    "eagle_integer53": (_integer53, (), ()),
    "eagle_log53": (_log53, (), ()),
    "eagle_cos53": (_cos53, (), ()),
    "eagle_draw_uniform64": (_uniform64, ("eagle_philox4x32_10", "eagle_integer53"), ()),
    "eagle_draw_uniform32": (_uniform32, ("eagle_philox4x32_10",), ()),
    "eagle_draw_normal64": (_normal64, ("eagle_philox4x32_10", "eagle_integer53",
                                        "eagle_log53", "eagle_cos53"), ("llvm.sqrt.f64",)),
    "eagle_draw_exponential64": (_exponential64, ("eagle_philox4x32_10", "eagle_integer53",
                                                  "eagle_log53"), ()),
    "eagle_draw_randint": (_randint, ("eagle_philox4x32_10",), ()),
}


def symbol(name: str) -> str:
    """The function's symbol of a draw, named either way: ``"normal64"`` or
    ``"eagle_draw_normal64"`` -> ``"eagle_draw_normal64"`` (ValueError if there is no such)."""
    for short, (full, _, _) in DRAWS.items():
        if name in (short, full):
            return full
    raise ValueError(f"no draw {name!r}: the draws are {', '.join(DRAWS)}")


def _closure(names) -> list[str]:
    """The functions the draws in ``names`` need, themselves included, in ``_FUNCTIONS``' order."""
    wanted = set()
    for name in names:
        full = symbol(name)
        wanted.add(full)
        wanted.update(_FUNCTIONS[full][1])
    return [name for name in _FUNCTIONS if name in wanted]


def declarations(names) -> dict[str, str]:
    """The intrinsics the draws in ``names`` call: name -> declaration (from ``DECLARATIONS``),
    which the including module must declare once."""
    return {intrinsic: DECLARATIONS[intrinsic] for name in _closure(names)
            for intrinsic in _FUNCTIONS[name][2]}


def random_ir(names, declare: bool = False) -> str:
    """LLVM IR text defining the draws in ``names`` (short names or symbols, see ``DRAWS``) and
    the helpers they call, as ``internal`` ``alwaysinline nounwind`` functions; with
    ``declare``, also the declarations of the intrinsics they call (``declarations``). Empty
    for no names."""
    functions = _closure(names)
    text = [_FUNCTIONS[name][0]() for name in functions]
    if declare:
        text += [line + "\n" for line in declarations(names).values()]
    return "\n".join(text)
