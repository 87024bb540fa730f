"""The annotations a kernel's parameters are declared with, and hawk's vector helpers.

``Scalar``, ``Param``, ``Terminated`` and ``Vec3`` are used bare; ``Mutable[...]`` and ``Out[...]``
wrap ``Scalar`` or ``Vec3``. The helpers ``vec3``, ``dot`` and ``length`` are understood inside a
kernel and also work on NumPy arrays of shape ``(3, n)`` outside one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .ir import Role

__all__ = ["Annotation", "Scalar", "Param", "Terminated", "Vec3", "Mutable", "Out",
           "vec3", "dot", "length"]  # fmt: skip


@dataclass(frozen=True)
class Annotation:
    """What a parameter annotation means: a role and a vector width."""

    role: Role
    width: int = 1

    def __repr__(self) -> str:
        kind = "Vec3" if self.width == 3 else "Scalar"
        if self.role is Role.SCALAR:
            return kind
        if self.role in (Role.PARAM, Role.TERMINATED):
            return self.role.value
        return f"{self.role.value}[{kind}]"


class _Vec3(Annotation):
    """``Vec3`` is both the annotation of a per-sample 3-vector and, in a body, its constructor."""

    def __call__(self, x, y, z):
        return vec3(x, y, z)


class _Wrapper:
    def __init__(self, role: Role):
        self.role = role

    def __getitem__(self, inner):
        if not isinstance(inner, Annotation) or inner.role is not Role.SCALAR:
            raise TypeError(f"{self.role.value}[...] takes Scalar or Vec3, not {inner!r}")
        return Annotation(self.role, inner.width)

    def __repr__(self) -> str:
        return self.role.value


Scalar = Annotation(Role.SCALAR)
Param = Annotation(Role.PARAM)
Terminated = Annotation(Role.TERMINATED)
Vec3 = _Vec3(Role.SCALAR, 3)
Mutable = _Wrapper(Role.MUTABLE)
Out = _Wrapper(Role.OUT)


def vec3(x, y, z):
    """A 3-vector from its components (stacked along axis 0, the SoA layout)."""
    return np.stack(np.broadcast_arrays(x, y, z))


def dot(a, b):
    """The dot product of two 3-vectors (summed over axis 0)."""
    a, b = np.asarray(a), np.asarray(b)
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def length(a):
    """The Euclidean length of a 3-vector."""
    return np.sqrt(dot(a, a))
