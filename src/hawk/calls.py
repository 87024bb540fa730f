"""The built-in functions a kernel body may call, in one table (``BUILTINS``), and the lowering
of the simple ones: ``math`` functions, ``min``/``max``/``abs``/``float``, hawk's vector helpers
(``vec3``, ``dot``, ``length``, ``cross``, ``normalize``) and elementwise helpers (``maximum``,
``minimum``, ``total``, ``width``). The others' lowerings live with their functions: matrices in
``matrix_calls``, derivatives in ``derivatives`` (forward) and ``adjoints`` (reverse), random
draws in ``draws``, tables in ``tables``; the table names each. A ``math`` function,
``min``/``max``, ``abs`` and ``hawk.maximum``/``minimum`` apply component by component to
vectors and matrices (``componentwise``), as NumPy's ufuncs do.

Every place that needs to know the built-ins reads this table: name resolution (which Python
objects and which ``math.``/``hawk.`` attributes name a built-in: ``OBJECTS``, ``ATTRIBUTES``),
the call (``lower_call``), and the check that refuses a plain Python function (a built-in is
not one). Adding a built-in is one ``Builtin`` entry here and its lowering function.
"""

from __future__ import annotations

import ast
import builtins
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass

from . import adjoints, derivatives, draws, matrices, matrix_calls, tables
from . import annotations as hawk_annotations
from .ir import MATH_FUNCTIONS, MAX_WIDTH, DType, OpKind
from .values import Lit, V, describe

__all__ = ["Builtin", "BUILTINS", "OBJECTS", "ATTRIBUTES", "lower_call", "minmax",
           "componentwise"]


@dataclass(frozen=True)
class Builtin:
    """A function a kernel body may call.

    Attributes:
        name: the name a call is lowered by (what ``Ref.name`` holds).
        lower: ``lower(lowering, name, args, node)``: the call's value, its arguments lowered.
        objects: the Python objects that name it where the body reads a global or a Python
            builtin (``math.sqrt``, ``hawk.vec3``, ``hawk.Vec3``, ``builtins.min``).
        module: ``"math"`` or ``"hawk"``: reachable as an attribute of that module (by
            ``attributes``, default ``(name,)``); None: only by its objects.
        attributes: its names under ``module`` (``hawk.Vec3(...)`` builds a vec3).
        tuples: its arguments may be tuples (``hawk.matrix((a, b), (c, d))``, a func's
            arguments in ``hawk.jvp``) and ``*t`` spreads one; else each is a value.
    """

    name: str
    lower: Callable
    objects: tuple = ()
    module: str | None = None
    attributes: tuple[str, ...] = ()
    tuples: bool = False

    def names_under(self, module: str) -> tuple[str, ...]:
        return (self.attributes or (self.name,)) if self.module == module else ()


# -- the simple built-ins' lowerings --------------------------------------------------------------


def componentwise(lw, what: str, args: list, scalar, node: ast.AST):
    """``scalar(*numbers)`` applied component by component: the arguments that are vectors or
    matrices must share one shape, and a number is used for every component (broadcast); the
    result has that shape. With no vector or matrix among ``args`` it is ``scalar(*args)``.

    Each component is lowered exactly as the same call on numbers, so ``math.tanh(v)`` is the
    ops of a hand-written component loop, bit for bit, and its derivative is the scalar rule's
    for each component (``hawk.derivatives`` sees only scalar ops)."""
    shaped = [a for a in args if isinstance(a, V)]
    if not shaped:
        return scalar(*[lw.scalar(a, node) for a in args])
    if len({a.dims for a in shaped}) > 1:
        raise lw.error(f"{what} needs vectors of one width (or matrices of one shape), got "
                       + " and ".join(describe(a) for a in shaped), node)
    first = shaped[0]
    columns = [a.comps if isinstance(a, V) else (lw.scalar(a, node),) * first.width
               for a in args]
    return first.like(scalar(*components) for components in zip(*columns, strict=True))


def _math(lw, name: str, args: list, node: ast.AST):
    """``math.NAME(...)`` of numbers, or component by component of vectors and matrices (a
    number argument broadcast): ``math.tanh(v)``, ``math.pow(m, 2.0)``, ``math.atan2(y, x)``."""
    if len(args) != MATH_FUNCTIONS[name]:
        raise lw.error(f"math.{name}() takes {MATH_FUNCTIONS[name]} argument(s), "
                       f"got {len(args)}", node)
    return componentwise(lw, f"math.{name}()", args,
                         lambda *numbers: lw.math_call(name, list(numbers), node), node)


def _min_max(lw, name: str, args: list, node: ast.AST):
    """``min``/``max`` of two or more numbers, or component by component of vectors and
    matrices of one shape (a number broadcast), folded left to right: ``max(v, 0.0)``."""
    if len(args) < 2:
        raise lw.error(f"{name}() needs at least two arguments in a hawk kernel", node)
    kind = OpKind.MIN if name == "min" else OpKind.MAX
    result = args[0]
    for arg in args[1:]:
        result = componentwise(lw, f"{name}()", [result, arg],
                               lambda a, b: minmax(lw, kind, a, b, f"{name}()", node), node)
    return result


def _one_argument(lw, name: str, args: list, node: ast.AST) -> None:
    if len(args) != 1:
        raise lw.error(f"{name}() takes 1 argument(s), got {len(args)}", node)


def _abs(lw, name: str, args: list, node: ast.AST):
    _one_argument(lw, name, args, node)
    return componentwise(lw, "abs()", args, lambda a: lw.call_abs(a, node), node)


def _float(lw, name: str, args: list, node: ast.AST):
    _one_argument(lw, name, args, node)
    value = lw.number(lw.scalar(args[0], node), "float()", node)
    if isinstance(value, Lit):
        return Lit(float(value.value))
    return lw.cast(value, value.dtype if value.dtype.is_float else DType.FLOAT64)


def minmax(lw, kind: OpKind, a, b, symbol: str, node: ast.AST):
    """``MAX``: ``b if b > a else a``, or ``MIN``: ``b if b < a else a``, of two numbers
    (``max``/``min`` and ``hawk.maximum``/``minimum``, named ``symbol`` in errors)."""
    dtype = lw.common_type(a, b, symbol, node)
    return lw.emit(kind, dtype, (lw.cast(a, dtype).id, lw.cast(b, dtype).id))


def _elementwise(lw, name: str, args: list, node: ast.AST):
    """``hawk.maximum``/``minimum`` (component by component, a number broadcast),
    ``hawk.total`` (the components summed left to right) and ``hawk.width`` (a
    compile-time int): what lets one func work on a scalar and on a vector state."""
    expected = 2 if name in ("maximum", "minimum") else 1
    if len(args) != expected:
        raise lw.error(f"hawk.{name}() takes {expected} argument(s), got {len(args)}", node)
    for arg in args:
        if not isinstance(arg, V):
            lw.number(lw.scalar(arg, node), f"hawk.{name}()", node)
    if name == "width":
        if isinstance(args[0], V) and args[0].is_matrix:
            raise lw.error(f"hawk.width() takes a number or a vector, not "
                           f"{describe(args[0])}", node)
        return Lit(args[0].width if isinstance(args[0], V) else 1)
    if name == "total":
        if not isinstance(args[0], V):
            return args[0]
        result = args[0].comps[0]
        for c in args[0].comps[1:]:
            result = lw.arith(OpKind.ADD, result, c, "+", operator.add, node)
        return result
    kind, symbol = (OpKind.MAX if name == "maximum" else OpKind.MIN), f"hawk.{name}()"
    return componentwise(lw, symbol, args, lambda a, b: minmax(lw, kind, a, b, symbol, node),
                         node)


_VECTOR_ARITY = {"vec2": 2, "vec3": 3, "vec4": 4, "dot": 2, "length": 1, "cross": 2,
                 "normalize": 1}


def _vector(lw, name: str, args: list, node: ast.AST):
    """``hawk.vec2/vec3/vec4/vector(...)``, ``dot``, ``length``, ``cross``, ``normalize``:
    each lowered to the scalar ops of its written-out formula, in the order the docs give."""
    if name == "vector":
        if any(isinstance(a, tuple) for a in args):
            raise lw.error("vector() takes numbers, not a tuple: spread one with "
                           "hawk.vector(*components)", node)
        if not 2 <= len(args) <= MAX_WIDTH:
            raise lw.error(f"vector() takes 2 to {MAX_WIDTH} components, got {len(args)}", node)
    elif len(args) != (expected := _VECTOR_ARITY[name]):
        raise lw.error(f"{name}() takes {expected} argument(s), got {len(args)}", node)
    if name.startswith("vec"):  # vec2, vec3, vec4, vector
        comps = [lw.number(lw.scalar(a, node), f"{name}()", node) for a in args]
        dtype = lw.vector_dtype(comps)
        return V(tuple(lw.cast(c, dtype) for c in comps))
    for arg in args:
        if not isinstance(arg, V) or arg.is_matrix:
            raise lw.error(f"hawk.{name}() takes vector arguments (Vec2, Vec3, Vec4 "
                           f"or Vector[K]), not {describe(arg)}", node)
        if name == "cross" and arg.width != 3:
            raise lw.error(f"hawk.cross() takes two Vec3 arguments, not {describe(arg)}", node)
    a, b = args[0], args[-1]
    if a.width != b.width:
        raise lw.error(f"hawk.{name}() needs vectors of one width, got {describe(a)} and "
                       f"{describe(b)}", node)

    def mul(x, y):
        return lw.arith(OpKind.MUL, x, y, "*", operator.mul, node)

    def sub(x, y):
        return lw.arith(OpKind.SUB, x, y, "-", operator.sub, node)

    if name == "cross":
        (ax, ay, az), (bx, by, bz) = a.comps, b.comps
        return V((sub(mul(ay, bz), mul(az, by)), sub(mul(az, bx), mul(ax, bz)),
                  sub(mul(ax, by), mul(ay, bx))))
    total = None
    for x, y in zip(a.comps, b.comps, strict=True):
        term = mul(x, y)
        total = term if total is None else lw.arith(OpKind.ADD, total, term, "+",
                                                     operator.add, node)
    if name == "dot":
        return total
    norm = lw.math_call("sqrt", [total], node)
    if name == "length":
        return norm
    return V(tuple(lw.arith(OpKind.DIV, c, norm, "/", operator.truediv, node)
                   for c in a.comps))  # normalize


# -- the table -----------------------------------------------------------------------------------


def _hawk(name: str, lower: Callable, module, tuples: bool = False,
          alias: str | None = None) -> Builtin:
    """A built-in reached as ``hawk.<name>`` and by the object of that name in ``module``
    (its ``OBJECTS`` where it has them); ``alias``: a second name and object in ``module``
    that call it (the type ``Vec3`` builds a vec3)."""
    objects = getattr(module, "OBJECTS", {getattr(module, name): name})
    found = tuple(o for o, n in objects.items() if n == name)
    if alias is None:
        return Builtin(name, lower, found, "hawk", tuples=tuples)
    return Builtin(name, lower, (*found, getattr(module, alias)), "hawk", (name, alias), tuples)


def _table() -> dict[str, Builtin]:
    entries = [Builtin(name, _math, (getattr(math, name),), "math") for name in MATH_FUNCTIONS]
    entries += [Builtin(name, lower, (getattr(builtins, name),))
                for name, lower in (("min", _min_max), ("max", _min_max), ("abs", _abs),
                                    ("float", _float))]
    entries += [_hawk(f"vec{k}", _vector, hawk_annotations, alias=f"Vec{k}") for k in (2, 3, 4)]
    entries += [_hawk("vector", _vector, hawk_annotations, tuples=True)]  # vector(*components)
    entries += [_hawk(name, _vector, hawk_annotations)
                for name in ("dot", "length", "cross", "normalize")]
    entries += [_hawk(name, _elementwise, hawk_annotations)
                for name in ("maximum", "minimum", "total", "width")]
    entries += [_hawk(name, matrix_calls.lower_call, matrices, tuples=True)
                for name in matrices.__all__]
    entries += [_hawk(name, derivatives.lower_call, derivatives, tuples=True)
                for name in derivatives.FUNCTIONS]
    entries += [_hawk(name, adjoints.lower_call, adjoints, tuples=True)
                for name in adjoints.FUNCTIONS]
    entries += [_hawk(name, draws.lower_call, draws) for name in draws.FUNCTIONS]
    entries += [_hawk(name, tables.lower_call, tables) for name in tables.FUNCTIONS]
    by_name = {e.name: e for e in entries}
    assert len(by_name) == len(entries), "two built-ins of one name"
    return by_name


#: every built-in function by the name its calls are lowered by
BUILTINS: dict[str, Builtin] = _table()
#: the Python objects that name a built-in -> its name
OBJECTS = {obj: b.name for b in BUILTINS.values() for obj in b.objects}
#: ``(module, attribute)`` -> the built-in's name, for ``math.sqrt`` and ``hawk.dot``
ATTRIBUTES = {(module, attribute): b.name for b in BUILTINS.values()
              for module in ("math", "hawk") for attribute in b.names_under(module)}


def lower_call(lw, name: str, node: ast.Call):
    """The value of a call of the built-in ``name`` (its keywords already refused)."""
    builtin = BUILTINS[name]
    if builtin.tuples:  # hawk.matrix((a, b), (c, d)) takes tuple rows, hawk.jvp a func's args
        args = lw.call_arguments(node.args)
    else:
        args = [lw.expr(a) for a in node.args]
    return builtin.lower(lw, name, args, node)
