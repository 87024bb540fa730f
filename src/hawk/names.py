"""What a name in a kernel body refers to, when it is not a local or a parameter: a global of
the kernel's (or func's) module, a Python builtin, or an attribute of a module.

A global is a compile-time value: a number (a weak literal), a tuple of them (a method's
coefficients), ``math`` or ``hawk``, a built-in function (``hawk.calls.BUILTINS`` names the
objects), a ``@hawk.func``, or a user's module whose attributes resolve the same way. Anything
else, a plain Python function above all, is a ``CompileError`` that says what would do. These
functions take the lowering (a ``frontend.Lowering``) for its errors and scope.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import math
import types

import numpy as np

from .calls import ATTRIBUTES, OBJECTS
from .errors import Loc
from .inline import Func
from .values import FuncRef, Lit, ModuleRef, Ref

__all__ = ["global_value", "builtin_value", "module_attribute", "module_member"]

_MATH_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau, "inf": math.inf}


def _known(value) -> bool:
    try:
        return value in OBJECTS
    except TypeError:  # unhashable
        return False


def _python_definition(value) -> Loc | None:
    """The ``def`` line of a plain Python function (its first line for a lambda), for an error
    to point at; None when its source is not available."""
    code = getattr(value, "__code__", None)
    file = inspect.getsourcefile(value) if code is not None else None
    if file is None:
        return None
    first = code.co_firstlineno
    for line in range(first, first + 20):  # past any decorators
        if linecache.getline(file, line).lstrip().startswith(("def ", "async def ")):
            break
    else:
        line = first
    text = linecache.getline(file, line).rstrip("\n")
    return Loc(file, line, len(text) - len(text.lstrip()), None, text, value.__name__)


def global_value(lw, name: str, value, node: ast.AST):
    """The compile-time value of the global ``name`` (bound to ``value``)."""
    if isinstance(value, Func):
        return FuncRef("function", value.name, value)
    if isinstance(value, types.ModuleType):
        if value.__name__ not in ("math", "hawk"):
            return ModuleRef("module", value.__name__, value)
        if value is math:
            return Ref("module", "math")
        if value.__name__ == "hawk":
            return Ref("module", "hawk")
    known = _known(value)
    if not known and (inspect.isfunction(value) or inspect.ismethod(value)):
        where = _python_definition(value)
        notes = ((f"{name!r} is defined here:", where),) if where else ()
        raise lw.error(f"global {name!r} is a plain Python function, which a hawk kernel "
                       f"cannot call; decorate it with @hawk.func to make it callable "
                       "(it is then inlined at each call)", node, notes)
    if isinstance(value, bool | int | float | np.bool_ | np.integer | np.floating):
        return Lit(value.item() if isinstance(value, np.generic) else value)
    if isinstance(value, tuple):  # a table of constants (a method's coefficients)
        return tuple(global_value(lw, f"{name}[{i}]", item, node)
                     for i, item in enumerate(value))
    if known:
        return Ref("function", OBJECTS[value])
    raise lw.error(f"global {name!r} is a {type(value).__name__}, which a hawk kernel "
                   "cannot use (only numbers, tuples of them, `math`, math functions and "
                   "hawk helpers)", node)


def builtin_value(name: str) -> Ref | None:
    """The built-in function a Python builtin's ``name`` calls (``min``, ``abs``), or None."""
    value = getattr(builtins, name, None)
    return Ref("function", OBJECTS[value]) if _known(value) else None


def module_attribute(lw, node: ast.Attribute):
    """``helpers.rk4``, ``constants.G``: an attribute of a user's module named by a global,
    as that module's global; None when ``node`` is not one."""
    if isinstance(node.value, ast.Name) and node.value.id not in lw.env:
        base = lw.src.names.get(node.value.id)
        if isinstance(base, types.ModuleType) and base.__name__ not in ("math", "hawk"):
            if not hasattr(base, node.attr):
                raise lw.error(f"module {base.__name__!r} has no attribute {node.attr!r}", node)
            return global_value(lw, f"{node.value.id}.{node.attr}", getattr(base, node.attr),
                                node)
    return None


def module_member(lw, module: Ref, node: ast.Attribute):
    """``math.sqrt``, ``math.pi``, ``hawk.dot``, ``hawk.Vec3``: a built-in or a constant."""
    name = ATTRIBUTES.get((module.name, node.attr))
    if name is not None:
        return Ref("function", name)
    if module.name == "math" and node.attr in _MATH_CONSTANTS:
        return Lit(_MATH_CONSTANTS[node.attr])
    raise lw.error(f"{module.name}.{node.attr} is not supported in a hawk kernel", node)
