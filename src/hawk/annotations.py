"""The annotations a kernel's parameters are declared with, and hawk's vector helpers.

``Scalar``, ``Param``, ``Terminated`` and the vector types ``Vec2``, ``Vec3``, ``Vec4`` and
``Vector[K]`` (K from 2 to 128) are used bare; ``Mutable[...]``, ``Out[...]`` and
``Series[...]`` wrap ``Scalar`` or a vector type (a ``Series`` is bound to ``(T, n)`` or
``(T, k, n)``: rows the body writes at computed indices).
A vector type's width is a property of the type (``Vec3.width == 3``): the frontend, the
argument layout (one slot per component) and the bindings (an array of shape ``(width, n)``)
all read it from there.

``Table`` (``Table[1]``), ``Table[2]`` and ``Table[3]`` declare a read-only array of that many
dimensions and any sizes, shared by every sample (a drag coefficient against Mach number, an
atmosphere profile, a rate matrix): read at computed integer indices, ``tab[i, j]``, each
clamped to its axis, and interpolated by ``hawk.interp`` and ``hawk.interp_grid``
(``hawk.tables``).

The helpers ``vec2``/``vec3``/``vec4``, ``dot``, ``length``, ``cross`` and ``normalize`` are
understood inside a kernel and also work on NumPy arrays of shape ``(k, n)`` (SoA, one row per
component) outside one, computing the same expressions in the same order.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .ir import (
    MAX_ARGUMENT_MATRIX_SIDE,
    MAX_MATRIX_SIDE,
    MAX_WIDTH,
    Role,
    annotation_name,
    type_name,
)

__all__ = ["Annotation", "Scalar", "Param", "Terminated", "Vec2", "Vec3", "Vec4", "Vector",
           "Matrix", "Mutable", "Out", "Series", "Table", "VECTOR_TYPES", "vector", "vec2",
           "vec3", "vec4", "dot", "length", "cross", "normalize", "maximum", "minimum", "total",
           "width", "value_matrix_type"]  # fmt: skip


@dataclass(frozen=True)
class Annotation:
    """What a parameter annotation means: a role, a number of components (1 for a scalar),
    for a matrix its columns, and for a table its number of dimensions.

    Attributes:
        role: the parameter's ``hawk.ir.Role`` (read-only input, mutable state, output...).
        width: the components: 1 for a scalar, 2 to 128 for ``Vec2`` ... ``Vector[128]``,
            ``R * C`` for a ``Matrix[R, C]``.
        columns: a matrix's columns, 0 otherwise.
        ndim: a ``Table``'s dimensions, 1 to 3; 0 for every other annotation.
    """

    role: Role
    width: int = 1
    columns: int = 0
    ndim: int = 0

    def __repr__(self) -> str:
        return annotation_name(self.role, self.width, self.columns, self.ndim)


class _Table(Annotation):
    """``hawk.Table``: a read-only 1-D array shared by every sample; ``Table[d]`` for ``d``
    dimensions, 1 to 3 (``Table[1] is Table``). Bound to an array of exactly ``d`` dimensions,
    each of size >= 1; read as ``tab[i]``, ``tab[i, j]``, ``tab[i, j, k]`` with integer
    indices, each clamped to ``[0, size - 1]`` of its axis (never a read out of bounds)."""

    def __getitem__(self, ndim) -> _Table:
        if isinstance(ndim, bool) or not isinstance(ndim, int | np.integer) \
                or not 1 <= ndim <= MAX_TABLE_DIMENSIONS:
            raise TypeError(f"hawk.Table[d] takes an int d from 1 to {MAX_TABLE_DIMENSIONS} (the "
                            f"table's dimensions), got {ndim!r}")
        return _TABLES[int(ndim)]


class _Vec(Annotation):
    """A vector type is both the annotation of a per-sample vector and, in a body (or on NumPy
    arrays), its constructor: ``Vec3(x, y, z)``."""

    def __call__(self, *components):
        if len(components) != self.width:
            raise TypeError(f"{type_name(self.width)}() takes {self.width} components, "
                            f"got {len(components)}")
        return np.stack(np.broadcast_arrays(*components))


class _VectorFamily:
    """``hawk.Vector[K]``: the vector type of ``K`` components, for ``K`` from 2 to
    ``MAX_WIDTH`` (128); ``Vector[3] is Vec3``. Its components are read as ``u[i]`` (a constant
    or a ``for i in range(K)`` index; ``.x .y .z .w`` name the first four)."""

    def __getitem__(self, width) -> _Vec:
        if isinstance(width, bool) or not isinstance(width, int | np.integer) \
                or not 2 <= width <= MAX_WIDTH:
            raise TypeError(f"hawk.Vector[K] takes an int K from 2 to {MAX_WIDTH} (the "
                            f"components of a vector), got {width!r}")
        return _vector_type(int(width))

    def __repr__(self) -> str:
        return "Vector"


class _Mat(Annotation):
    """A matrix type: the annotation of a per-sample matrix (bound to ``(R, C, n)``) and, in a
    body (or on NumPy arrays), its constructor from ``R * C`` components, row by row:
    ``Matrix[2, 2](a, b, c, d)`` is ``[[a, b], [c, d]]``."""

    def __call__(self, *components):
        if len(components) != self.width:
            raise TypeError(f"{type_name(self.width, self.columns)}() takes {self.width} "
                            f"components, got {len(components)}")
        flat = np.stack(np.broadcast_arrays(*components))
        return flat.reshape(self.width // self.columns, self.columns, *flat.shape[1:])


class _MatrixFamily:
    """``hawk.Matrix[R, C]``: the matrix type of ``R`` rows and ``C`` columns, each from 1 to
    ``MAX_ARGUMENT_MATRIX_SIDE`` (16), not both 1 (each component is an argument of the
    kernel; a matrix built in a body goes up to ``MAX_MATRIX_SIDE``, 128). Read as ``m[i, j]``
    (an element) or ``m[i]`` (row ``i``, a ``Vector[C]``), with constant or loop indices."""

    def __getitem__(self, shape) -> _Mat:
        good = (isinstance(shape, tuple) and len(shape) == 2
                and all(isinstance(s, int | np.integer) and not isinstance(s, bool)
                        and 1 <= s <= MAX_ARGUMENT_MATRIX_SIDE for s in shape) and shape != (1, 1))
        if not good:
            raise TypeError(f"hawk.Matrix[R, C] takes two ints R and C from 1 to "
                            f"{MAX_ARGUMENT_MATRIX_SIDE} (rows and columns, not both 1), got "
                            f"{shape!r}")
        return _matrix_type(int(shape[0]), int(shape[1]))

    def __repr__(self) -> str:
        return "Matrix"


class _Wrapper:
    def __init__(self, role: Role):
        self.role = role

    def __getitem__(self, inner):
        if isinstance(inner, Annotation) and inner.role is Role.TABLE:
            raise TypeError(f"{self.role.value}[{inner!r}] is not a type: a table is read-only "
                            f"and shared by every sample; declare the parameter {inner!r}")
        if not isinstance(inner, Annotation) or inner.role is not Role.SCALAR:
            raise TypeError(f"{self.role.value}[...] takes Scalar, Vec2, Vec3, Vec4, "
                            f"Vector[K] or Matrix[R, C], not {inner!r}")
        return Annotation(self.role, inner.width, inner.columns)

    def __repr__(self) -> str:
        return self.role.value


class _ParamAnnotation(Annotation, _Wrapper):
    """``Param`` is one number shared by every sample; ``Param[Vector[K]]`` and
    ``Param[Matrix[R, C]]`` one vector or matrix shared by every sample (bound to an array
    of shape ``(K,)`` or ``(R, C)``, passed to the kernel by value)."""

    def __getitem__(self, inner):
        return _Wrapper.__getitem__(self, inner)


Scalar = Annotation(Role.SCALAR)
Param = _ParamAnnotation(Role.PARAM)
Terminated = Annotation(Role.TERMINATED)
Vec2 = _Vec(Role.SCALAR, 2)
Vec3 = _Vec(Role.SCALAR, 3)
Vec4 = _Vec(Role.SCALAR, 4)
Mutable = _Wrapper(Role.MUTABLE)
Out = _Wrapper(Role.OUT)
#: A per-sample output with rows: ``Series[Scalar]`` is bound to an array of shape ``(T, n)``,
#: ``Series[Vec3]`` to ``(T, 3, n)``; the body writes rows (``s[row] = value``) and never reads.
Series = _Wrapper(Role.SERIES)
#: the most dimensions a ``Table`` has
MAX_TABLE_DIMENSIONS = 3
Table = _Table(Role.TABLE, 1, ndim=1)
_TABLES = {1: Table, **{d: _Table(Role.TABLE, 1, ndim=d)
                        for d in range(2, MAX_TABLE_DIMENSIONS + 1)}}

#: the vector types by width
VECTOR_TYPES = {2: Vec2, 3: Vec3, 4: Vec4}
Vector = _VectorFamily()


Matrix = _MatrixFamily()


@functools.cache
def _vector_type(width: int) -> _Vec:
    return VECTOR_TYPES.get(width) or _Vec(Role.SCALAR, width)


@functools.cache
def _matrix_type(rows: int, columns: int) -> _Mat:
    return _Mat(Role.SCALAR, rows * columns, columns)


def value_matrix_type(rows: int, columns: int) -> _Mat:
    """The type of a matrix value a kernel builds (a Jacobian, what a user's ``jac=``
    returns): ``Matrix[rows, columns]``, each side up to ``MAX_MATRIX_SIDE`` (128) where an
    argument's is up to ``MAX_ARGUMENT_MATRIX_SIDE`` (16)."""
    if not (1 <= rows <= MAX_MATRIX_SIDE and 1 <= columns <= MAX_MATRIX_SIDE):
        raise ValueError(f"a matrix value has 1 to {MAX_MATRIX_SIDE} rows and columns, got "
                         f"{rows} x {columns}")
    return _matrix_type(rows, columns)


def vector(*components):
    """A vector of any width from 2 to 128 from its components (stacked along axis 0, the SoA
    layout): ``hawk.vector(a, b, c, d, e, f)`` is a ``Vector[6]``.

    Args:
        components: numbers or arrays of shape ``(n,)`` outside a kernel, scalar values
            inside one.
    """
    if not 2 <= len(components) <= MAX_WIDTH:
        raise TypeError(f"vector() takes 2 to {MAX_WIDTH} components, got {len(components)}")
    return _vector_type(len(components))(*components)


def vec2(x, y):
    """A 2-vector from its components (stacked along axis 0, the SoA layout).

    Args:
        x, y: the components: numbers or arrays of shape ``(n,)`` outside a kernel,
            scalar values inside one.
    """
    return Vec2(x, y)


def vec3(x, y, z):
    """A 3-vector from its components (stacked along axis 0, the SoA layout).

    Args:
        x, y, z: the components: numbers or arrays of shape ``(n,)`` outside a kernel,
            scalar values inside one.
    """
    return Vec3(x, y, z)


def vec4(x, y, z, w):
    """A 4-vector from its components (stacked along axis 0, the SoA layout).

    Args:
        x, y, z, w: the components: numbers or arrays of shape ``(n,)`` outside a kernel,
            scalar values inside one.
    """
    return Vec4(x, y, z, w)


def dot(a, b):
    """The dot product of two vectors of one width: ``a[0]*b[0] + a[1]*b[1] + ...``, summed
    left to right over axis 0.

    Args:
        a, b: vectors of the same width (arrays of shape ``(k,)`` or ``(k, n)`` outside a
            kernel); different widths are a ``ValueError`` (a ``CompileError`` in a kernel).
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"dot() of vectors of widths {a.shape[0]} and {b.shape[0]}")
    total = a[0] * b[0]
    for k in range(1, a.shape[0]):
        total = total + a[k] * b[k]
    return total


def length(a):
    """The Euclidean length of a vector: ``sqrt(dot(a, a))``.

    Args:
        a: a vector (an array of shape ``(k,)`` or ``(k, n)`` outside a kernel).
    """
    return np.sqrt(dot(a, a))


def cross(a, b):
    """The cross product of two 3-vectors:
    ``(a.y*b.z - a.z*b.y, a.z*b.x - a.x*b.z, a.x*b.y - a.y*b.x)``.

    Args:
        a, b: 3-vectors (arrays of shape ``(3,)`` or ``(3, n)`` outside a kernel); another
            width is a ``ValueError`` (a ``CompileError`` in a kernel).
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.shape[0] != 3 or b.shape[0] != 3:
        raise ValueError(f"cross() takes two 3-vectors, got widths {a.shape[0]} and "
                         f"{b.shape[0]}")
    return np.stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


def normalize(a):
    """``a / length(a)``: each component divided by the length (a zero vector gives NaNs).

    Args:
        a: a vector (an array of shape ``(k,)`` or ``(k, n)`` outside a kernel).
    """
    a = np.asarray(a)
    return a / length(a)


def maximum(a, b):
    """The larger of ``a`` and ``b``, component by component: ``b if b > a else a`` for each
    (Python's ``max`` of two numbers, so a NaN in ``a`` is kept and one in ``b`` is not).

    Args:
        a, b: numbers or vectors of one width; a number is used for every component of the
            other (outside a kernel: arrays, broadcast as NumPy does).
    """
    a, b = np.asarray(a), np.asarray(b)
    return np.where(b > a, b, a)


def minimum(a, b):
    """The smaller of ``a`` and ``b``, component by component: ``b if b < a else a`` for each
    (Python's ``min`` of two numbers).

    Args:
        a, b: numbers or vectors of one width, as for ``maximum``.
    """
    a, b = np.asarray(a), np.asarray(b)
    return np.where(b < a, b, a)


def total(a):
    """The sum of a vector's components, left to right (``a[0] + a[1] + ...``); a number is
    its own total. With ``width``, this writes code that works on a scalar state and on a
    vector state alike: the root-mean-square of ``e`` is
    ``sqrt(hawk.total(e * e) / hawk.width(e))``.

    Args:
        a: a number or a vector (outside a kernel, a vector is an array of shape ``(k, n)``
            and anything else is a number, or one per sample).
    """
    a = np.asarray(a)
    if width(a) == 1:
        return a
    result = a[0]
    for k in range(1, a.shape[0]):
        result = result + a[k]
    return result


def width(a) -> int:
    """The number of components: 1 for a number, ``k`` for a ``Veck``. In a kernel it is a
    compile-time int, so it can bound a loop (``for i in range(hawk.width(u))``).

    Args:
        a: a number or a vector (outside a kernel, a vector is an array of shape ``(k, n)``;
            a number, a 0-d or a 1-D array, one value per sample, has width 1).
    """
    return np.shape(a)[0] if np.ndim(a) == 2 else 1
