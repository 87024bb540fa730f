"""What the generated CUDA code computes, checked on the host (no GPU needed): compiled by the
host C++ compiler with one-thread blocks (``host_cuda``), the step and decide kernels play the
device loop, and the result must equal the NumPy reference executor bit for bit, with the
device counters (steps, launches, live) agreeing with it too."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import random_kernels
from differential import assert_bitwise_equal, reference_run
from eagle.bindings import bind
from host_cuda import HostKernel, compiler
from kernels import accumulate_force, bouncing, clashing_names, falling, spread_oscillator
from test_cpu_backend import bouncing_bindings, falling_bindings, spread_bindings

if compiler() is None:
    pytest.skip("no host C++ compiler (g++, c++ or clang++) to run generated CUDA code",
                allow_module_level=True)

FIELD = {name: k for k, name in enumerate(
    ("nsteps", "live", "taken", "steps", "launches", "max_steps", "steps_per_launch",
     "last_live"))}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("host_cuda")


def host_run(kernel, bindings, max_steps, steps_per_launch, folder):
    bound = bind(kernel, copy.deepcopy(bindings), "cpu")
    program = kernel.specialize(bound.dtypes)
    control = HostKernel(program, folder).run(bound.arrays, bound.uniforms, bound.flags,
                                              max_steps, steps_per_launch)
    return {**bound.arrays, **bound.uniforms}, bound.flags, control


def check(kernel, bindings, max_steps, steps_per_launch, folder):
    expected, expected_steps = reference_run(kernel, bindings, max_steps)
    actual, flags, control = host_run(kernel, bindings, max_steps, steps_per_launch, folder)
    assert_bitwise_equal(actual, expected)
    assert control[FIELD["steps"]] == expected_steps
    assert control[FIELD["last_live"]] == np.count_nonzero(~flags)
    launches = control[FIELD["launches"]]
    assert -(-expected_steps // steps_per_launch) <= launches <= -(-expected_steps //
                                                                   steps_per_launch) + 1


def small(make, n=700):
    return make(n)


@pytest.mark.parametrize("steps_per_launch", [1, 7, 64])
@pytest.mark.parametrize("kernel, make, max_steps", [
    (spread_oscillator, spread_bindings, 2000),
    (falling, falling_bindings, 500),
    (bouncing, bouncing_bindings, 3000),
], ids=["spread-oscillator", "vec3-falling", "if-else-bouncing"])
def test_generated_cuda_equals_reference(kernel, make, max_steps, steps_per_launch, folder):
    check(kernel, small(make), max_steps, steps_per_launch, folder)


def test_max_steps_is_exact_in_the_device_loop(folder):
    bindings = small(spread_bindings)
    expected, _ = reference_run(spread_oscillator, bindings, 333)
    actual, flags, control = host_run(spread_oscillator, bindings, 333, 64, folder)
    assert_bitwise_equal(actual, expected)
    assert control[FIELD["steps"]] == 333 and control[FIELD["launches"]] == 6
    assert control[FIELD["nsteps"]] == 0 and control[FIELD["last_live"]] > 0


def test_accumulate_and_clashing_names(folder):
    n = 300
    rng = np.random.default_rng(5)
    force = dict(mu=2.0, position=rng.uniform(1.0, 2.0, (3, n)), out=np.zeros((3, n)))
    expected, _ = reference_run(accumulate_force, force, 5)
    actual, _, _ = host_run(accumulate_force, force, 5, 2, folder)
    assert_bitwise_equal(actual, expected)
    clash = dict(i=np.arange(n, dtype=float), flags=2.0, control=0.5, done=np.zeros(n),
                 np=np.zeros(n), double=np.ones(n))
    check(clashing_names, clash, 100, 3, folder)


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(source=random_kernels.kernel_sources(exact=True), seed=st.integers(0, 2**16),
       steps_per_launch=st.sampled_from([1, 5, 64]),
       dtype=st.sampled_from([np.float64, np.float32]))
def test_random_exact_kernels(tmp_path, folder, source, seed, steps_per_launch, dtype):
    kernel = random_kernels.load(source, tmp_path)
    check(kernel, random_kernels.bindings(400, seed, dtype), 60, steps_per_launch, folder)


def test_a_finished_run_ends_the_while_loop_at_once(folder):
    """A graph launched when nothing is left to do (steps == max_steps) must not spin."""
    bindings = small(spread_bindings)
    actual, flags, control = host_run(spread_oscillator, bindings, 1, 1, folder)
    assert control[FIELD["steps"]] == 1
    kernel = HostKernel(spread_oscillator.specialize({}), folder)
    bound = bind(spread_oscillator, copy.deepcopy(bindings), "cpu")
    again = kernel.run(bound.arrays, bound.uniforms, bound.flags, max_steps=0,
                       steps_per_launch=1)
    assert again[FIELD["launches"]] == 0 and again[FIELD["steps"]] == 0
