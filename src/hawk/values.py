"""The values a kernel body's names and expressions evaluate to while it is lowered
(``hawk.frontend``): a scalar SSA value, a weak literal, or a vector or matrix of scalar values;
and the compile-time values that are not numbers: a module or function named in the body
(``Ref``, ``FuncRef``, ``ModuleRef``), a ``Series`` parameter (``SeriesValue``), a name with no
value on some path (``Undefined``). A table parameter's value is ``hawk.tables.TableValue``; a
tuple of values is a Python tuple. ``describe`` names any of them in an error message."""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .ir import DType, Parameter, type_name

if TYPE_CHECKING:
    from .inline import Func

__all__ = ["S", "Lit", "V", "Value", "Ref", "FuncRef", "ModuleRef", "SeriesValue", "Undefined",
           "describe"]


@dataclass(frozen=True)
class S:
    """A scalar SSA value."""

    id: int
    dtype: DType


@dataclass(frozen=True)
class Lit:
    """A weak Python literal, not yet given a type."""

    value: bool | int | float


@dataclass(frozen=True)
class V:
    """A vector: ``width`` scalar values of one dtype (its width is its type's, 2 to 128); or,
    with ``shape`` ``(R, C)``, a matrix of ``R * C`` values, row-major."""

    comps: tuple[S, ...]
    shape: tuple[int, int] | None = None

    @property
    def dtype(self) -> DType:
        return self.comps[0].dtype

    @property
    def width(self) -> int:
        return len(self.comps)

    @property
    def is_matrix(self) -> bool:
        return self.shape is not None

    @property
    def dims(self) -> tuple[int, ...]:
        """``(K,)`` for a vector, ``(R, C)`` for a matrix: what must agree elementwise."""
        return self.shape or (self.width,)

    @property
    def rows(self) -> list[list[S]]:
        """A matrix's components as a list of rows."""
        r, c = self.shape
        return [list(self.comps[i * c:(i + 1) * c]) for i in range(r)]

    def like(self, comps) -> V:
        """Other components of this value's shape."""
        return V(tuple(comps), self.shape)

    @property
    def type_name(self) -> str:
        return type_name(self.width, self.shape[1] if self.shape else 0)


Value = S | Lit | V


@dataclass(frozen=True)
class Ref:
    """A module or function named in the body (``math``, ``math.sqrt``, ``hawk.dot``, ``min``):
    a built-in function is known by its name in ``hawk.calls.BUILTINS``."""

    kind: str  # "module" or "function"
    name: str


@dataclass(frozen=True)
class FuncRef(Ref):
    """A hawk func named in a body: a compile-time value that can be called or passed on."""

    func: Func | None = None

    @property
    def description(self) -> str:
        return f"the hawk func {self.name!r}"


@dataclass(frozen=True)
class ModuleRef(Ref):
    """A user's module named in a body, so that ``helpers.rk4`` or ``constants.G`` resolve."""

    module: types.ModuleType | None = None


@dataclass(frozen=True)
class SeriesValue:
    """A ``Series`` parameter named in the body: it is written a row at a time
    (``s[row] = value``), never read."""

    param: Parameter

    @property
    def annotation(self) -> str:
        return self.param.annotation

    def write_only(self) -> str:
        name = self.param.name
        return (f"{name!r} is a {self.annotation}, which the step writes and never reads: write "
                f"a row with `{name}[row] = value` (keep the value in a local to use it again)")


@dataclass(frozen=True)
class Undefined:
    """A name with no value on some path; reading it is an error that says why."""

    reason: str


def describe(value) -> str:
    """What ``value`` is, in words, for an error message."""
    if isinstance(value, S):
        return value.dtype.value
    if isinstance(value, V):
        return f"{value.type_name} of {value.dtype.value}"
    if isinstance(value, Lit):
        return type(value.value).__name__
    if isinstance(value, tuple):
        return f"a tuple of {len(value)} values"
    if isinstance(value, SeriesValue):
        return f"the {value.annotation} {value.param.name!r}"
    if hasattr(value, "description"):  # a hawk func (FuncRef), a table
        return value.description
    return "a function" if isinstance(value, Ref) and value.kind == "function" else "a module"
