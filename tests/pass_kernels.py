"""Kernels for tests/test_passes.py (in a file, since hawk reads kernels' source)."""

import math

import hawk
from hawk import Mutable, Param, Scalar, Vec3


@hawk.kernel
def duplicated(k: Scalar, dt: Param, x: Mutable[Scalar], y: Mutable[Scalar]):
    a = math.sin(k * x) * dt
    b = math.sin(k * x) * dt  # the same three ops again: k * x, sin, * dt
    x = x + a
    y = y - b


@hawk.kernel
def lengths(q: Mutable[Vec3], s: Mutable[Scalar]):
    s = hawk.length(q) + hawk.length(q)  # two lengths of one vector: one is enough
    q = q / hawk.length(q)


@hawk.kernel
def signed_zeros(a: Scalar, x: Mutable[Scalar], y: Mutable[Scalar]):
    x = a + 0.0  # -0.0 + 0.0 is 0.0 ...
    y = a + -0.0  # ... but -0.0 + -0.0 is -0.0: these are two values, not one


@hawk.kernel
def unused(a: Scalar, x: Mutable[Scalar]):
    waste = math.exp(a) * 3.0  # noqa: F841 (dead on purpose)
    x = x + a


@hawk.kernel
def staged(omega: Scalar, dt: Param, x: Mutable[Scalar], v: Mutable[Scalar]):
    half_dt2 = 0.5 * dt * dt
    w2 = omega * omega
    x = x + dt * v - half_dt2 * w2 * x
    v = v - dt * w2 * x


@hawk.kernel
def nan_signs(x: Mutable[Scalar], y: Mutable[Scalar]):
    x = math.inf - math.inf  # a NaN ...
    y = -(math.inf - math.inf)  # ... and the same NaN with the other sign bit: two constants
