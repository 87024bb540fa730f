"""Random numbers in a kernel body: ``hawk.uniform()``, ``normal()``, ``exponential()``,
``randint(lo, hi)``, and the counters they are keyed by, ``hawk.sample_index()`` and
``hawk.step()``.

The functions here are what a body names; outside a kernel they raise (a draw has no meaning
without a sample, a step and a seed). ``lower_call`` is the frontend's lowering of a call to one
of them: a ``DRAW`` op whose position is the number of draws lowered before it in the same body
(so positions follow the text: both branches of an ``if`` are lowered, each draw keeps its own
position whichever branch is taken), plus the arithmetic of ``uniform(lo, hi)`` and
``normal(mean, std)``. What each draw computes is ``hawk.philox``'s definition.
"""

from __future__ import annotations

import ast
import operator

from .ir import DType, OpKind

__all__ = ["uniform", "normal", "exponential", "randint", "sample_index", "step",
           "FUNCTIONS", "lower_call", "float_type"]


def _inside_only(name: str):
    def function(*args):
        raise TypeError(f"hawk.{name}() is understood inside a @hawk.kernel body only (a draw "
                        "needs a sample, a step and the run's seed)")

    function.__name__ = function.__qualname__ = name
    return function


uniform = _inside_only("uniform")
uniform.__doc__ = """A uniform float in [0, 1) of the kernel's float type (53 random bits for
float64, 24 for float32); ``uniform(lo, hi)`` is ``lo + (hi - lo) * uniform()``.

Args:
    *args: none, or ``lo, hi``: the bounds, numbers or per-sample values (any other count is a
        ``CompileError``).

Example::

    @hawk.kernel
    def walk(dt: Param, terminated: Terminated, x: Mutable[Scalar], t: Mutable[Scalar]):
        x += hawk.uniform(-1.0, 1.0) * dt
        t += dt
        terminated = t >= 1.0
"""
normal = _inside_only("normal")
normal.__doc__ = """A standard normal float (Box-Muller, see ``hawk.philox``);
``normal(mean, std)`` is ``mean + std * normal()``.

Args:
    *args: none, or ``mean, std``: numbers or per-sample values (any other count is a
        ``CompileError``).
"""
exponential = _inside_only("exponential")
exponential.__doc__ = """A standard exponential float (mean 1): ``-log(u)``, ``u`` in (0, 1].

Args:
    *args: none (scale the result for another mean); arguments are a ``CompileError``.
"""
randint = _inside_only("randint")
randint.__doc__ = """An int64 in [lo, hi) (lo where hi <= lo; a width above 2**32 is cut to
2**32), each value's probability within 2.4e-10 (relative) of 1 / (hi - lo).

Args:
    *args: ``lo, hi``, integers or per-sample integer values (any other count is a
        ``CompileError``).
"""
sample_index = _inside_only("sample_index")
sample_index.__doc__ = """The sample's global index (int64).

Args:
    *args: none; arguments are a ``CompileError``.
"""
step = _inside_only("step")
step.__doc__ = """The sample's step number (int64): steps it took before this one since the
runner was made or reset.

Args:
    *args: none; arguments are a ``CompileError``.
"""

#: the name a body calls each function by -> the numbers of arguments it takes
FUNCTIONS = {"uniform": (0, 2), "normal": (0, 2), "exponential": (0,), "randint": (2,),
             "sample_index": (0,), "step": (0,)}  # fmt: skip
#: the function objects, for a body that imports them (``from hawk import uniform``)
OBJECTS = {uniform: "uniform", normal: "normal", exponential: "exponential", randint: "randint",
           sample_index: "sample_index", step: "step"}  # fmt: skip


def float_type(params) -> DType:
    """The float type of a kernel's draws: float32 when every float parameter is float32 (the
    kernel runs in float32), else float64."""
    floats = {p.dtype for p in params if p.dtype.is_float}
    return DType.FLOAT32 if floats == {DType.FLOAT32} else DType.FLOAT64


def lower_call(lowering, name: str, args: list, node: ast.AST):
    """Lower ``hawk.<name>(*args)`` in ``lowering`` (a ``frontend.Lowering``); return the value."""
    if len(args) not in FUNCTIONS[name]:
        counts = " or ".join(str(n) for n in FUNCTIONS[name])
        raise lowering.error(f"hawk.{name}() takes {counts} argument(s), got {len(args)}", node)
    if name == "sample_index":
        return lowering.emit(OpKind.SAMPLE_INDEX, DType.INT64)
    if name == "step":
        return lowering.emit(OpKind.STEP_INDEX, DType.INT64)
    position = sum(op.kind is OpKind.DRAW for op in lowering.ops)
    if name == "randint":
        lo, hi = (lowering.number(lowering.scalar(a, node), "hawk.randint()", node) for a in args)
        for bound in (lo, hi):
            if lowering.dtype_of(bound).is_float:
                raise lowering.error("hawk.randint(lo, hi) takes integer bounds, not "
                                     f"{lowering.dtype_of(bound).value}", node)
        lo, hi = lowering.cast(lo, DType.INT64), lowering.cast(hi, DType.INT64)
        return lowering.emit(OpKind.DRAW, DType.INT64, (lo.id, hi.id), (name, position))
    value = lowering.emit(OpKind.DRAW, float_type(lowering.param_list), (), (name, position))
    if not args:
        return value
    a, b = (lowering.number(lowering.scalar(x, node), f"hawk.{name}()", node) for x in args)
    if name == "uniform":  # lo + (hi - lo) * u
        width = lowering.arith(OpKind.SUB, b, a, "-", operator.sub, node)
        scaled = lowering.arith(OpKind.MUL, width, value, "*", operator.mul, node)
        return lowering.arith(OpKind.ADD, a, scaled, "+", operator.add, node)
    scaled = lowering.arith(OpKind.MUL, b, value, "*", operator.mul, node)  # mean + std * z
    return lowering.arith(OpKind.ADD, a, scaled, "+", operator.add, node)
