"""``until_done`` equals the reference executor, bit for bit: written once, run on every device
(``backends.TARGETS``: the CPU, the emulated GPU and, where present, a real GPU), each skipping
by what it can do."""

from __future__ import annotations

import numpy as np
import pytest

import eagle
from backends import target  # noqa: F401  (the fixture)
from differential import assert_bitwise_equal, reference_run
from kernels import bouncing, falling, oscillator, spread_oscillator, transcendental
from table_kernels import lookup, lookup_bindings
from test_cpu_backend import (
    bouncing_bindings,
    falling_bindings,
    oscillator_bindings,
    spread_bindings,
    transcendental_bindings,
)

N = 3001  # not a multiple of any block size, so the last block is partial

CASES = {
    "oscillator-uniform": (oscillator, oscillator_bindings, 2000),
    "oscillator-spread": (spread_oscillator, spread_bindings, 2000),
    "vec3-falling": (falling, falling_bindings, 500),
    "if-else-bouncing": (bouncing, bouncing_bindings, 3000),
    "math-functions": (transcendental, transcendental_bindings, 400),
    "tables-interp": (lookup, lookup_bindings, 100),
}
MATH_CASES = {"math-functions"}


@pytest.mark.parametrize("steps_per_launch", [1, 7, 64, None])
@pytest.mark.parametrize("case", list(CASES))
def test_until_done_equals_the_reference(target, case, steps_per_launch):  # noqa: F811
    if case in MATH_CASES and not target.target.exact_math:
        pytest.skip(f"{target.target.name}'s math library differs from the C library by ulps "
                    "(tests/test_gpu.py bounds it)")
    kernel, make, max_steps = CASES[case]
    bindings = make(N)
    expected, expected_steps = reference_run(kernel, bindings, max_steps)
    arrays = target.put(bindings)
    runner = eagle.until_done(eagle.deploy(kernel, target.target.device), max_steps=max_steps,
                              steps_per_launch=steps_per_launch, **arrays)
    report = runner.run()
    actual = target.get(arrays)
    shared = [k for k in expected if k in actual]
    assert_bitwise_equal({k: actual[k] for k in shared}, {k: expected[k] for k in shared})
    assert report.device == target.target.device and report.mode == target.target.mode
    assert report.steps == expected_steps
    if "terminated" in expected:
        assert report.done == int(np.count_nonzero(expected["terminated"]))
    if steps_per_launch is not None:  # a fixed launch size: the launch count follows
        assert report.launches == -(-expected_steps // steps_per_launch)
    if target.target.one_graph_launch:
        assert target.graph_launches == 1  # the whole loop was one graph launch
    again = runner.run()  # finished: a second run returns at once
    assert again.launches == 0 and again.steps == 0
