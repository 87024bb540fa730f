"""Kernels for the numerics edge cases every backend must agree on (test_numerics)."""

import math

import hawk
from hawk import Mutable, Scalar


@hawk.kernel
def integer_division(a: Scalar, b: Scalar, q: Mutable[Scalar], r: Mutable[Scalar]):
    q = a // b
    r = a % b


@hawk.kernel
def domain_errors(a: Scalar, y_log: Mutable[Scalar], y_sqrt: Mutable[Scalar],
                  y_pow: Mutable[Scalar], y_atan2: Mutable[Scalar]):
    y_log = math.log(a)
    y_sqrt = math.sqrt(a)
    y_pow = math.pow(a, 0.5)
    y_atan2 = math.atan2(a, a)
