"""The values a kernel body's expressions evaluate to while it is lowered (``frontend``): a
scalar SSA value, a weak literal, or a vector or matrix of scalar values."""

from __future__ import annotations

from dataclasses import dataclass

from .ir import DType, type_name

__all__ = ["S", "Lit", "V"]


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
    """A vector: ``width`` scalar values of one dtype (its width is its type's, 2 to 64); or,
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
