"""Random kernels from hypothesis: the CPU backend equals the NumPy reference executor."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import random_kernels
from differential import assert_bitwise_equal, eagle_run, reference_run

N = 1500  # one full block and a partial one
MAX_STEPS = 60

# Each example compiles a new kernel (about a second), so the example counts are modest.
_SETTINGS = settings(max_examples=12, deadline=None, derandomize=True,
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


@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(source=random_kernels.kernel_sources(exact=True), seed=st.integers(0, 2**16))
def test_random_float32_kernel_equals_reference(tmp_path, source, seed):
    kernel = random_kernels.load(source, tmp_path)
    bindings = random_kernels.bindings(N, seed, np.float32)
    expected, expected_steps = reference_run(kernel, bindings, MAX_STEPS)
    actual, report = eagle_run(kernel, bindings, MAX_STEPS, 7)
    assert_bitwise_equal(actual, expected)
    assert report.steps == expected_steps, source
