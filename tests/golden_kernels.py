"""Kernels for the golden digests (``test_golden_digests``) that reach what the other kernel
files do not: an indexed call of a func (``rhs(u, 3.0)[0]``), an indexed vector expression and
an indexed vector of draws, whose lowering the refactoring of issue 41 changed on purpose in a
commit of its own."""

from __future__ import annotations

import hawk
from hawk import Mutable, Scalar, Vec3


@hawk.func
def rhs(u, c):
    return hawk.vec3(u.y * c, u.z - 2.5, u.x * 0.5)


@hawk.func
def noise(x):
    return hawk.vec2(x * hawk.uniform(), hawk.uniform())


@hawk.kernel
def indexed_call(u: Mutable[Vec3], x: Mutable[Scalar]):
    x = rhs(u, 3.0)[0] + rhs(u, 1.5)[2] * 7.0


@hawk.kernel
def indexed_vector(u: Mutable[Vec3], x: Mutable[Scalar]):
    x = (u * 2.0 + u)[1] + hawk.vec2(x * 4.0, x + 9.0)[1]


@hawk.kernel
def indexed_draws(x: Mutable[Scalar]):
    x = noise(x)[0] + hawk.vec2(hawk.normal(), 1.0)[1]
