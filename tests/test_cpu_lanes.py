"""The CPU launch's lane scheduling, launch by launch, against the reference executor.

The generated ``run_blocks`` moves samples between lanes: a block's live lanes are gathered
and compacted as they finish, a block's few stragglers go to its thread's pool, where lanes of
different blocks are stepped until they line up at the same step and then share a set, and a
set's last visit is redone one step at a time to find the exact step. Which lane computes a
sample must never change the sample's own steps. These tests compile the launch with tiny
blocks (so a few hundred samples reach every one of those paths), call every thread's share
of each launch with random launch sizes, and compare after every launch the live count and the
steps the slowest sample took, and at the end every bit of the state, with the reference.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hawk
import random_kernels
from differential import assert_bitwise_equal, reference_run
from eagle.bindings import bind
from eagle.cpu.backend import compile_program, launch_arguments
from eagle.cpu.layout import PIECES, Shape
from hawk import Mutable, Scalar, reference
from kernels import falling, spread_oscillator

SHAPES = [Shape(block=32, unroll=4), Shape(block=64, unroll=8)]


def compiled(kernel, bound, shape: Shape):
    """One thread's share of a launch of ``kernel`` for ``bound``'s dtypes, emitted with
    ``shape``: ``(nsteps, *arguments, blocks=, nthreads=) -> (live, steps)``."""
    program = kernel.specialize(bound.dtypes)
    return program, compile_program(program, shape).function


def reference_trace(program, arrays: dict, flags: np.ndarray, max_steps: int) -> list[int]:
    """The live count before any step and after each step, until none is live."""
    arrays = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in arrays.items()}
    flags = flags.copy()
    live = [int((~flags).sum())]
    while live[-1] and len(live) <= max_steps:
        reference.step(program, arrays, flags)
        live.append(int((~flags).sum()))
    return live


def run_launches(kernel, bindings, shape, launches, threads):
    """Each launch of ``launches`` steps, every thread's share called in turn, checked against
    the reference's live counts; returns the final arrays and the steps taken."""
    bound = bind(kernel, {k: (v.copy() if isinstance(v, np.ndarray) else v)
                          for k, v in bindings.items()}, "cpu")
    program, run_blocks = compiled(kernel, bound, shape)
    trace = reference_trace(program, {**bound.arrays, **bound.uniforms}, bound.flags,
                            sum(launches))
    arguments = launch_arguments(program, bound)
    done = 0
    for k in launches:
        live, most = 0, 0
        blocks = np.zeros(1, np.int64)  # claimed by the shares in turn: the first takes all
        for _ in range(threads):
            thread_live, thread_steps = run_blocks(np.int64(k), *arguments, blocks=blocks,
                                                   nthreads=threads)
            live, most = live + thread_live, max(most, thread_steps)
            # a share returns only once no block is left: one that stopped early (its pool
            # full, say) would leave blocks to threads that may have finished already
            assert blocks[0] >= -(-bound.n // (shape.block // PIECES))
        left = trace[done:done + k + 1]
        expected_taken = (0 if left[0] == 0 else
                          left.index(0) if 0 in left else k)
        assert (live, most) == (trace[min(done + expected_taken, len(trace) - 1)],
                                expected_taken), f"launch of {k} after {done} steps"
        assert live == int((~bound.flags).sum())
        done += most
        if live == 0:
            break
    return {**bound.arrays, **bound.uniforms}, done


def oscillator_bindings(stops: list[int], done_at_start: list[bool], dt=1e-3):
    """The spread oscillator with sample i stopping after ``stops[i]`` steps (0: never)."""
    n = len(stops)
    stops = np.asarray(stops, dtype=float)
    t_end = np.where(stops > 0, dt * stops - dt / 2, np.inf)
    return dict(x=np.ones(n), v=np.zeros(n), t=np.zeros(n), omega=np.linspace(1.0, 3.0, n),
                t_end=t_end, dt=dt, terminated=np.asarray(done_at_start, dtype=bool))


stop_steps = st.one_of(st.integers(1, 12), st.integers(13, 90), st.just(0))


@pytest.mark.slow
@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data(), shape=st.sampled_from(SHAPES), threads=st.integers(1, 3))
def test_divergent_samples_keep_their_steps(data, shape, threads):
    n = data.draw(st.integers(1, 9 * shape.block + 5), label="n")
    stops = data.draw(st.lists(stop_steps, min_size=n, max_size=n), label="stops")
    if data.draw(st.booleans(), label="cluster"):  # long samples bunched in a few blocks
        stops = sorted(stops)
    done = data.draw(st.lists(st.booleans(), min_size=n, max_size=n).map(
        lambda flags: [f and i % 5 == 0 for i, f in enumerate(flags)]), label="done at start")
    launches = data.draw(st.lists(st.integers(1, 40), min_size=1, max_size=12),
                         label="launches")
    bindings = oscillator_bindings(stops, done)
    actual, steps = run_launches(spread_oscillator, bindings, shape, launches, threads)
    expected, expected_steps = reference_run(spread_oscillator, bindings, steps)
    assert steps == expected_steps
    assert_bitwise_equal(actual, expected)


@pytest.mark.parametrize("shape", SHAPES)
def test_pool_sets_line_up_and_overflow(shape):
    """Blocks park stragglers at many different steps, more at one step than a set holds,
    and the pool's sets meet the launch's end while lanes are still waiting. With 160 shares
    (the first claims every block) the pool has room for one block's lanes only: it fills,
    and is finished before the next block is claimed."""
    rng = np.random.default_rng(3)
    n = 40 * shape.block
    stops = rng.integers(1, 30, n)
    long = rng.random(n) < 0.04
    stops[long] = rng.integers(31, 400, long.sum())
    stops[5 * shape.block:7 * shape.block] = 500  # two whole blocks of long samples
    bindings = oscillator_bindings(list(stops), [False] * n)
    for threads in (1, 2, 160):
        actual, steps = run_launches(spread_oscillator, bindings, shape,
                                     [7, 1, 64, 3, 200, 1000], threads)
        expected, expected_steps = reference_run(spread_oscillator, bindings, steps)
        assert steps == expected_steps == 500
        assert_bitwise_equal(actual, expected)


@pytest.mark.slow
def test_vector_kernel_with_float32_state():
    """A Vec3 kernel in float32 (its own lanes and invariants) through the same paths."""
    rng = np.random.default_rng(0)
    n = 700
    position = rng.normal(size=(3, n)).astype(np.float32) * 4
    bindings = dict(position=position, velocity=np.zeros((3, n), np.float32),
                    mu=np.float32(1.0), dt=np.float32(1e-2), r_min=np.float32(0.5))
    actual, steps = run_launches(falling, bindings, SHAPES[0], [5, 1, 17, 300], 2)
    expected, expected_steps = reference_run(falling, bindings, steps)
    assert steps == expected_steps
    assert_bitwise_equal(actual, expected)


@pytest.mark.slow
@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(source=random_kernels.kernel_sources(), seed=st.integers(0, 2**16),
       launches=st.lists(st.integers(1, 25), min_size=1, max_size=6))
def test_random_kernels_launch_by_launch(tmp_path, source, seed, launches):
    kernel = random_kernels.load(source, tmp_path)
    bindings = random_kernels.bindings(300, seed)
    actual, steps = run_launches(kernel, bindings, SHAPES[0], launches, 2)
    expected, expected_steps = reference_run(kernel, bindings, steps)
    assert steps == expected_steps, source
    assert_bitwise_equal(actual, expected)


@hawk.kernel
def bare(x: Mutable[Scalar]):
    x += 1.0


def test_kernel_with_nothing_but_state():
    """No Param, no read-only input, no Terminated: the visits take the state alone."""
    bindings = dict(x=np.arange(300.0))
    actual, steps = run_launches(bare, bindings, SHAPES[1], [3, 9, 1], 2)
    assert steps == 13
    assert_bitwise_equal(actual, dict(x=np.arange(300.0) + 13))


# The termination flag is read from the state after the selects where that changes nothing
# (cpu.layout.Layout._flag_from_selected_state); these kernels are the cases where it must not be.


@hawk.kernel
def flag_reads_the_old_state(terminated: hawk.Terminated, x: Mutable[Scalar],
                             y: Mutable[Scalar]):
    x0 = x
    x = x0 * 1.5 + 0.25
    y = y + x0
    terminated = x - x0 > 20.0  # x0: the value before the step (after the selects: the new)


@hawk.kernel
def flag_shares_an_op_with_a_store(terminated: hawk.Terminated, x: Mutable[Scalar],
                                   y: Mutable[Scalar]):
    x = x * 1.25 + 0.5
    e = x * x  # after the selects for the flag, and before them for y
    y = y + e
    terminated = e > 40.0


@hawk.kernel
def flag_from_state_and_temporaries(terminated: hawk.Terminated, x: Mutable[Scalar],
                                    y: Mutable[Scalar]):
    x = x * 1.25 + 0.5
    y = y - 0.125 * x
    terminated = x * x + y > 30.0  # reads only the new state: moved after the selects


@pytest.mark.slow
@pytest.mark.parametrize("kernel", [flag_reads_the_old_state, flag_shares_an_op_with_a_store,
                                    flag_from_state_and_temporaries])
def test_the_flag_after_the_selects_reads_what_the_kernel_says(kernel):
    """Samples that stop at different steps (a few of them never), launch by launch, bit for
    bit against the reference, whichever side of the selects the flag is computed on."""
    n = 200
    bindings = dict(x=np.linspace(0.1, 3.0, n), y=np.linspace(-1.0, 2.0, n)[::-1].copy())
    program, _ = compiled(kernel, bind(kernel, dict(bindings), "cpu"), SHAPES[0])
    expected, expected_steps = reference_run(kernel, bindings, 200)
    assert 4 < expected_steps <= 60
    actual, steps = run_launches(kernel, bindings, SHAPES[0], [3, 5, 100], 2)
    assert steps == expected_steps
    assert_bitwise_equal(actual, expected)


def test_the_flag_is_moved_only_where_it_reads_the_new_state_alone():
    """Which kernels get the flag after the selects: the oscillator and the one above that
    reads only the new state do; a flag reading the old state, or an op also stored, does
    not."""
    from eagle.cpu.layout import SHAPE, Layout

    def moved(kernel, dtypes) -> bool:
        program = kernel.specialize({k: np.dtype(v) for k, v in dtypes.items()})
        return bool(Layout(program, SHAPE).selected)

    two = dict(x="float64", y="float64", terminated="bool")
    assert moved(flag_from_state_and_temporaries, two)
    assert not moved(flag_reads_the_old_state, two)
    assert not moved(flag_shares_an_op_with_a_store, two)
    assert moved(spread_oscillator, dict(omega="float64", t_end="float64", dt="float64",
                                         x="float64", v="float64", t="float64",
                                         terminated="bool"))


@hawk.kernel
def drawing(x: Mutable[Scalar]):
    x += hawk.uniform()


def test_a_short_step_is_written_out_eight_times_per_visit():
    """The oscillator's step (6 ops) gets unroll 8, a Vec3 kernel's (dozens) unroll 4, and a
    kernel that draws one step per visit (``cpu.emit.shape_for``)."""
    from eagle.cpu.layout import SHAPE, SHAPE_DRAWING, SHAPE_SHORT, shape_for

    def program(kernel):
        return kernel.specialize({p.name: np.dtype(bool) if p.name == "terminated"
                                  else np.dtype("float64") for p in kernel.params})

    assert SHAPE_SHORT.unroll == 8 and SHAPE.unroll == 4 and SHAPE_DRAWING.unroll == 1
    assert shape_for(program(spread_oscillator)) == SHAPE_SHORT
    assert shape_for(program(falling)) == SHAPE
    assert shape_for(program(drawing)) == SHAPE_DRAWING
