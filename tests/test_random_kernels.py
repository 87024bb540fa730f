"""Random kernels from hypothesis: every backend equals the NumPy reference executor.

The kernels (``random_kernels``) call drawn ``@hawk.func`` helpers (scalar, tuple-returning,
taking a func, and one generic over the vector width called on a ``Vec2``, a ``Vec3`` and a
``Vec4``), run unrolled ``for`` loops, and hold state of every vector width. The CPU backend is
checked with more examples (float64 and float32); every device of ``backends.TARGETS`` (the CPU,
the emulated GPU, a real GPU where present) with a few, through the same ``until_done``.
NVRTC compiles the same kernels to cubins in ``tests/test_cuda_codegen.py``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

import eagle
import hawk
import random_kernels
from backends import target  # noqa: F401  (the fixture)
from differential import assert_bitwise_equal, eagle_run, reference_run

N = 2500  # samples per example (below a block: random kernels by launch, test_cpu_lanes.py)
MAX_STEPS = 60

# Each example compiles a new kernel (10 to 20 seconds on a loaded machine), so CI runs a
# modest number of examples with a fixed seed; `make fuzz` sets EAGLE_FUZZ_EXAMPLES for a long
# run with fresh ones.
_FUZZ = int(os.environ.get("EAGLE_FUZZ_EXAMPLES", "0"))
_SETTINGS = settings(max_examples=_FUZZ or 12, deadline=None, derandomize=not _FUZZ,
                     suppress_health_check=[HealthCheck.function_scoped_fixture,
                                            HealthCheck.too_slow])


@pytest.mark.slow
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


@pytest.mark.slow
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


@settings(max_examples=_FUZZ // 4 or 3, deadline=None, derandomize=not _FUZZ,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data(), seed=st.integers(0, 2**16), steps_per_launch=st.sampled_from([1, 5, None]))
def test_random_kernel_on_every_device_equals_reference(target, tmp_path, data,  # noqa: F811
                                                        seed, steps_per_launch):
    # a device whose math library is not the C library's gets correctly rounded ops only
    source = data.draw(random_kernels.kernel_sources(exact=not target.target.exact_math))
    kernel = random_kernels.load(source, tmp_path)
    bindings = random_kernels.bindings(N, seed)
    expected, expected_steps = reference_run(kernel, bindings, MAX_STEPS)
    arrays = target.put(bindings)
    runner = eagle.until_done(eagle.deploy(kernel, target.target.device), max_steps=MAX_STEPS,
                              steps_per_launch=steps_per_launch, **arrays)
    report = runner.run()
    actual = target.get(arrays)
    assert_bitwise_equal({k: actual[k] for k in expected if k in actual},
                         {k: expected[k] for k in expected if k in actual})
    assert report.steps == expected_steps and report.mode == target.target.mode, source
    assert {"q2", "q", "q4"} <= actual.keys() and actual["q4"].shape == (4, N)


@pytest.mark.slow
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


@pytest.mark.slow
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
