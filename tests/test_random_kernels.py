"""Random kernels from hypothesis: the CPU backend equals the NumPy reference executor."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import random_kernels
from differential import assert_bitwise_equal, eagle_run, reference_run

N = 2500  # samples per example (below a block: random kernels by launch, test_cpu_lanes.py)
MAX_STEPS = 60

# Each example compiles a new kernel (about a second), so CI runs a modest number of examples
# with a fixed seed; `make fuzz` sets EAGLE_FUZZ_EXAMPLES for a long run with fresh ones.
_FUZZ = int(os.environ.get("EAGLE_FUZZ_EXAMPLES", "0"))
_SETTINGS = settings(max_examples=_FUZZ or 12, deadline=None, derandomize=not _FUZZ,
                     suppress_health_check=[HealthCheck.function_scoped_fixture,
                                            HealthCheck.too_slow])


@_SETTINGS
@given(source=random_kernels.kernel_sources(), seed=st.integers(0, 2**16),
       steps_per_launch=st.sampled_from([1, 3, 64, None]))
def test_random_float64_kernel_equals_reference(tmp_path, source, seed, steps_per_launch):
    kernel = random_kernels.load(source, tmp_path)
    bindings = random_kernels.bindings(N, seed)
    expected, expected_steps = reference_run(kernel, bindings, MAX_STEPS)
    actual, report = eagle_run(kernel, bindings, MAX_STEPS, steps_per_launch)
    assert_bitwise_equal(actual, expected)
    assert report.steps == expected_steps, source


@settings(max_examples=_FUZZ // 2 or 6, deadline=None, derandomize=not _FUZZ,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(source=random_kernels.kernel_sources(exact=True), seed=st.integers(0, 2**16))
def test_random_float32_kernel_equals_reference(tmp_path, source, seed):
    kernel = random_kernels.load(source, tmp_path)
    bindings = random_kernels.bindings(N, seed, np.float32)
    expected, expected_steps = reference_run(kernel, bindings, MAX_STEPS)
    actual, report = eagle_run(kernel, bindings, MAX_STEPS, 7)
    assert_bitwise_equal(actual, expected)
    assert report.steps == expected_steps, source
