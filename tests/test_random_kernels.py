"""Random kernels from hypothesis: the CPU backend equals the NumPy reference executor."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

import hawk
import random_kernels
from differential import assert_bitwise_equal, eagle_run, reference_run

N = 2500  # one full block (BLOCK = 2048) and a partial one
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


@settings(max_examples=_FUZZ // 2 or 6, deadline=None, derandomize=not _FUZZ,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(source=random_kernels.drawing_kernel_sources(), seed=st.integers(0, 2**16),
       steps_per_launch=st.sampled_from([1, 3, 64, None]))
def test_random_drawing_kernel_equals_reference(tmp_path, source, seed, steps_per_launch):
    """Kernels with random draws and counters: the same streams as the reference, bit for bit,
    whatever the launch size (issue 14). Six examples: a drawing kernel compiles about twice as
    long as a plain one (its Philox blocks are inlined into every visit)."""
    kernel = random_kernels.load(source, tmp_path)
    bindings = random_kernels.bindings(N, seed)
    expected, expected_steps = reference_run(kernel, bindings, MAX_STEPS, seed=seed)
    actual, report = eagle_run(kernel, bindings, MAX_STEPS, steps_per_launch, seed=seed)
    assert_bitwise_equal(actual, expected)
    assert report.steps == expected_steps, source


@settings(max_examples=_FUZZ // 2 or 6, deadline=None, derandomize=not _FUZZ,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(source=random_kernels.integer_kernel_sources(), seed=st.integers(0, 2**16),
       steps_per_launch=st.sampled_from([1, 5, None]))
def test_random_integer_kernel_equals_reference(tmp_path, source, seed, steps_per_launch):
    """uint64, uint32 and int32 state with integer and bit operations (issue 14)."""
    try:
        kernel = random_kernels.load_integer_kernel(source, tmp_path)
    except hawk.CompileError:  # a constant expression its type cannot hold
        reject()
    bindings = random_kernels.integer_bindings(N, seed)
    expected, expected_steps = reference_run(kernel, bindings, MAX_STEPS)
    actual, report = eagle_run(kernel, bindings, MAX_STEPS, steps_per_launch)
    assert_bitwise_equal(actual, expected)
    assert report.steps == expected_steps, source
