"""Edge cases of the arithmetic where the C library, NumPy, Numba and CUDA disagree among
themselves, and the one result every backend gives (docs/language.md, "Exactness"):
integer ``//`` and ``%`` by zero give 0, int64 ``MIN // -1`` wraps to ``MIN``, and a math
function whose result is NaN gives the canonical quiet NaN (sign bit clear)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from differential import assert_bitwise_equal, bits, eagle_run, reference_run
from eagle.bindings import bind
from host_cuda import HostKernel, compiler
from numerics_kernels import domain_errors, integer_division

MIN = np.iinfo(np.int64).min


def division_bindings():
    a = np.array([7, -7, 5, -5, MIN, MIN, 0, 9], dtype=np.int64)
    b = np.array([0, 0, 2, 2, -1, 1, 0, -1], dtype=np.int64)
    return dict(a=a, b=b, q=np.zeros(8, np.int64), r=np.zeros(8, np.int64))


def domain_bindings(dtype=np.float64):
    a = np.array([-1.0, -0.0, 0.0, 4.0, np.nan, -np.nan, -np.inf], dtype=dtype)
    return dict(a=a, **{name: np.zeros(7, dtype) for name in ("y_log", "y_sqrt", "y_pow",
                                                               "y_atan2")})


def test_the_reference_defines_the_edge_cases():
    expected, _ = reference_run(integer_division, division_bindings(), 1)
    assert list(expected["q"]) == [0, 0, 2, -3, MIN, MIN, 0, -9]
    assert list(expected["r"]) == [0, 0, 1, 1, 0, 0, 0, 0]
    for dtype in (np.float64, np.float32):
        expected, _ = reference_run(domain_errors, domain_bindings(dtype), 1)
        canonical = bits(np.array([np.nan], dtype))
        for name in ("y_log", "y_sqrt", "y_pow", "y_atan2"):
            for value in expected[name][np.isnan(expected[name])]:
                assert bits(np.array([value], dtype)).tolist() == canonical.tolist(), name


def run_on_host_cuda(kernel, bindings, tmp_path):
    bound = bind(kernel, copy.deepcopy(bindings), "cpu")
    program = kernel.specialize(bound.dtypes)
    HostKernel(program, tmp_path).run(bound.arrays, bound.uniforms, bound.flags, 1, 1)
    return bound.arrays


BACKENDS = ["cpu", pytest.param("host-cuda", marks=pytest.mark.skipif(
    compiler() is None, reason="no host C++ compiler to run the generated CUDA code"))]


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", ["integer-division", "domain-float64", "domain-float32"])
def test_every_backend_gives_the_reference_result(backend, case, tmp_path):
    kernel, bindings = {
        "integer-division": (integer_division, division_bindings()),
        "domain-float64": (domain_errors, domain_bindings(np.float64)),
        "domain-float32": (domain_errors, domain_bindings(np.float32)),
    }[case]
    expected, _ = reference_run(kernel, bindings, 1)
    if backend == "cpu":
        actual, _ = eagle_run(kernel, bindings, 1)
    else:
        actual = run_on_host_cuda(kernel, bindings, tmp_path)
    if backend == "host-cuda" and case == "domain-float32":  # float32 functions: ulps apart
        for name in expected:
            assert np.array_equal(np.isnan(actual[name]), np.isnan(expected[name]))
            nans = np.isnan(expected[name])
            assert np.array_equal(bits(actual[name][nans]), bits(expected[name][nans])), name
        return
    assert_bitwise_equal({k: actual[k] for k in expected if k in actual},
                         {k: expected[k] for k in expected if k in actual})
