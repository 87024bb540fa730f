"""The CPU backend against the NumPy reference executor, bit for bit (the every-backend table
is ``test_every_backend``; these are the CPU's own cases and the shared bindings)."""

from __future__ import annotations

import numpy as np
import pytest

from differential import assert_bitwise_equal, eagle_run, reference_run
from eagle.cpu.layout import SHAPE
from kernels import oscillator, spread_oscillator

N = 3001  # not a multiple of the block size, so the last block is partial


def oscillator_bindings(n=N):
    return dict(x=np.ones(n), v=np.zeros(n), t=np.zeros(n), omega=np.linspace(1.0, 3.0, n),
                t_end=1.0, dt=1e-3)


def spread_bindings(n=N, k=1000):
    dt = 1e-3
    return dict(x=np.ones(n), v=np.zeros(n), t=np.zeros(n), omega=np.linspace(1.0, 3.0, n),
                t_end=dt * (1 + (k - 1) * np.arange(n) / (n - 1)), dt=dt)


def falling_bindings(n=N):
    rng = np.random.default_rng(1)
    position = rng.uniform(1.0, 2.0, size=(3, n))
    velocity = rng.normal(0.0, 0.1, size=(3, n))
    return dict(position=position, velocity=velocity, mu=1.0, dt=1e-2, r_min=0.5)


def bouncing_bindings(n=N):
    rng = np.random.default_rng(2)
    return dict(y=rng.uniform(1.0, 50.0, n), vy=rng.normal(0, 5, n), bounces=np.zeros(n),
                g=9.81, dt=1e-2, restitution=0.8)


def transcendental_bindings(n=N):
    rng = np.random.default_rng(3)
    return dict(k=rng.uniform(0.5, 3.0, n), u=rng.normal(0, 0.5, n), w=rng.normal(0, 0.5, n),
                peak=np.zeros(n), dt=1e-2)


def test_oscillator_takes_the_reference_number_of_steps():
    actual, report = eagle_run(oscillator, oscillator_bindings(), 10_000)
    _, expected_steps = reference_run(oscillator, oscillator_bindings(), 10_000)
    # 1000 additions of dt=1e-3 reach 1.0000000000000007 >= t_end in float64
    assert report.steps == expected_steps == 1000
    assert report.done == report.n == N and not report.truncated


def test_max_steps_is_honoured_exactly():
    for max_steps in (1, 63, 500):
        expected, steps = reference_run(spread_oscillator, spread_bindings(), max_steps)
        actual, report = eagle_run(spread_oscillator, spread_bindings(), max_steps, 64)
        assert steps == report.steps == max_steps
        assert report.truncated
        assert_bitwise_equal(actual, expected)


def test_float32_kernel_equals_reference():
    b = oscillator_bindings()
    b.update(x=b["x"].astype(np.float32), v=b["v"].astype(np.float32),
             t=b["t"].astype(np.float32), omega=b["omega"].astype(np.float32))
    expected, steps = reference_run(oscillator, b, 3000)
    actual, report = eagle_run(oscillator, b, 3000, 7)
    assert actual["x"].dtype == np.float32
    assert_bitwise_equal(actual, expected)
    assert report.steps == steps


def test_parameter_names_cannot_clash_with_generated_names():
    from kernels import clashing_names

    n = 1030
    bindings = dict(i=np.arange(n, dtype=float), flags=2.0, control=0.5, done=np.zeros(n),
                    np=np.zeros(n), double=np.ones(n))
    expected, _ = reference_run(clashing_names, bindings, 100)
    actual, report = eagle_run(clashing_names, bindings, 100, 3)
    assert_bitwise_equal(actual, expected)
    assert report.steps == 5


def tail_bindings(n=9001, seed=5, dt=1e-3):
    """Most samples stop early, a scattered few run 40x longer, some blocks almost empty: the
    CPU backend compacts a block's live lanes as they finish and sends a block's last few to
    its thread's pool (``eagle.cpu.emit``)."""
    rng = np.random.default_rng(seed)
    block = SHAPE.block
    n = max(n, 5 * block + 1)
    stops = np.where(rng.random(n) < 0.02, 2000, rng.integers(1, 60, n))
    stops[3 * block:4 * block] = 5  # a block that empties at once
    stops[4 * block + 17] = 2500  # and one with a single long sample
    stops[4 * block + 18:5 * block] = 3
    return dict(x=np.ones(n), v=np.zeros(n), t=np.zeros(n), omega=rng.uniform(1.0, 3.0, n),
                t_end=dt * stops - dt / 2, dt=dt)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("steps_per_launch", [1, 3, 50, None])
def test_scattered_tails_equal_reference(steps_per_launch, threads, dtype):
    """float64 and float32 kernels must give the reference's steps and bits, whatever the
    launch size and the number of threads."""
    import eagle

    previous = eagle.get_num_threads()
    eagle.set_num_threads(min(threads, eagle.threads._cpus()))
    try:
        bindings = {k: v.astype(dtype) if isinstance(v, np.ndarray) else dtype(v)
                    for k, v in tail_bindings().items()}
        expected, expected_steps = reference_run(spread_oscillator, bindings, 3000)
        actual, report = eagle_run(spread_oscillator, bindings, 3000, steps_per_launch)
    finally:
        eagle.set_num_threads(previous)
    assert report.steps == expected_steps
    assert 2490 <= expected_steps <= 2510  # (float32 time steps round differently)
    assert_bitwise_equal(actual, expected)
    truncated, _ = eagle_run(spread_oscillator, bindings, 1234, steps_per_launch)
    reference_truncated, steps = reference_run(spread_oscillator, bindings, 1234)
    assert steps == 1234
    assert_bitwise_equal(truncated, reference_truncated)


def test_launches_too_short_to_split_run_on_one_thread(monkeypatch):
    """Handing a launch of a few thousand sample-steps to the team costs more than it saves:
    it runs on the calling thread; a long one is still split."""
    import eagle
    from eagle.cpu import backend, team

    calls = []
    run = team.team.run

    def recording(function, nthreads, nblocks, arguments):
        calls.append((int(arguments[0]), nthreads))
        return run(function, nthreads, nblocks, arguments)

    monkeypatch.setattr(team.team, "run", recording)
    previous = eagle.get_num_threads()
    eagle.set_num_threads(2)
    try:
        n = 3 * SHAPE.block  # three blocks: enough to split
        small = dict(x=np.ones(n), v=np.zeros(n), t=np.zeros(n), omega=np.ones(n),
                     t_end=np.full(n, 0.0105), dt=1e-3)
        eagle_run(spread_oscillator, small, 100, 4)
        assert calls and all(threads == 1 for _, threads in calls)
        assert all(k * n < backend.SPLIT_WORK for k, _ in calls)
        calls.clear()
        eagle_run(spread_oscillator, small, 100, 64)
        assert calls[0] == (64, min(2, eagle.threads._cpus()))
    finally:
        eagle.set_num_threads(previous)


def test_a_thread_that_starts_late_takes_only_the_blocks_left(monkeypatch):
    """Threads claim blocks as they go: when one thread of a launch starts after the other has
    finished every block, it finds none left (it used to advance every other block whenever it
    started); the results are the reference's either way."""
    import threading
    import time

    import eagle
    from eagle.cpu import backend

    shares = []
    function = backend.CpuKernel.function

    def late(self, *arguments, **keywords):
        if threading.current_thread() is not threading.main_thread():
            time.sleep(0.5)  # far longer than the main thread's share of this launch
        result = function(self, *arguments, **keywords)
        shares.append(result)
        return result

    monkeypatch.setattr(backend.CpuKernel, "function", late)
    bindings = spread_bindings(n=8 * SHAPE.block + 5, k=20)
    previous = eagle.get_num_threads()
    eagle.set_num_threads(2)
    try:
        actual, report = eagle_run(spread_oscillator, bindings, 10_000, 64)
    finally:
        eagle.set_num_threads(previous)
    expected, steps = reference_run(spread_oscillator, bindings, 10_000)
    assert report.steps == steps == 20
    assert_bitwise_equal(actual, expected)
    if eagle.threads._cpus() >= 2:  # else the launch ran on one thread
        assert sorted(shares) == [(0, 0), (0, 20)]


def test_the_first_launch_is_sized_by_a_probe_that_touches_nothing(monkeypatch):
    """A run longer than the default first launch is probed: the launch runs on copies of a
    few samples (the user's arrays are bit-identical before and after the probe), the
    first launch's size follows the measured rate (TARGET_LAUNCH_S of work), and the result
    is the reference's, bit for bit. A run the default first launch covers is not probed."""
    import eagle
    from eagle.cpu import backend, team

    monkeypatch.setattr(backend, "FIRST_LAUNCH_WORK", 1000)  # probe even at this small n
    monkeypatch.setattr(backend, "PROBE_SAMPLES", 64)
    monkeypatch.setattr(backend, "_rates", {})  # no rate remembered from an earlier test
    bindings = spread_bindings()
    runner = eagle.until_done(eagle.deploy(spread_oscillator, "cpu"), max_steps=10_000,
                              **{k: (v.copy() if isinstance(v, np.ndarray) else v)
                                 for k, v in bindings.items()})
    before = {name: array.copy() for name, array in runner.arrays.items()}
    probes, launches = [], []
    probe, run = backend._probe, team.team.run

    def probing(*args):
        rate, live_share = probe(*args)
        assert_bitwise_equal({k: runner.arrays[k] for k in before}, before)
        probes.append((rate, live_share))
        return 2.0e6, 0.5  # sample-steps/s on one thread, half the samples live

    def recording(function, nthreads, nblocks, arguments):
        launches.append((int(arguments[0]), arguments[1].shape[0]))  # (steps, samples)
        return run(function, nthreads, nblocks, arguments)

    monkeypatch.setattr(backend, "_probe", probing)
    monkeypatch.setattr(team.team, "run", recording)
    previous = eagle.get_num_threads()
    eagle.set_num_threads(1)
    try:
        report = runner.run()
    finally:
        eagle.set_num_threads(previous)
    [(rate, live_share)] = probes
    assert rate > 0 and live_share == 1.0  # no sample was done before the run
    probed = [k for k, n in launches if n < N]  # the probe's launches, on 64 samples
    assert probed and all(n == 64 for k, n in launches if n < N)
    full = [k for k, n in launches if n == N]
    assert full[0] == int(backend.TARGET_LAUNCH_S * 2.0e6 / (0.5 * N))
    expected, steps = reference_run(spread_oscillator, bindings, 10_000)
    assert report.steps == steps
    assert_bitwise_equal({**runner.arrays, "t_end": bindings["t_end"]},
                         {k: v for k, v in expected.items() if k in runner.arrays or
                          k == "t_end"})
    # The same kernel again, a quarter of its samples done: its rate is remembered, so no
    # probe, and the first launch is sized by that rate and the live share the flags give.
    probes.clear()
    launches.clear()
    again = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in bindings.items()}
    again["terminated"] = np.arange(N) % 4 == 0
    live_share = 1.0 - np.count_nonzero(again["terminated"]) / N
    eagle.until_done(eagle.deploy(spread_oscillator, "cpu"), max_steps=10_000, **again).run()
    assert probes == []
    assert launches[0] == (int(backend.TARGET_LAUNCH_S * 2.0e6 / (live_share * N)), N)
    probes.clear()
    monkeypatch.setattr(backend, "_rates", {})
    monkeypatch.setattr(backend, "FIRST_LAUNCH_WORK", N * 10_000)  # covered: no probe
    eagle_run(spread_oscillator, bindings, 10_000)
    assert probes == []


def test_an_op_the_cpu_compiler_cannot_render_is_refused_by_name():
    """Never a silent fallback: the refusal names the kernel and the op (an integer true
    division, which the language never produces, stands for any op the table lacks)."""
    import dataclasses

    from eagle.cpu.emit import emit_launch
    from eagle.cpu.llvm_ops import Unsupported
    from hawk.ir import DType, OpKind

    program = oscillator.specialize({})
    at = next(i for i, op in enumerate(program.ops) if op.kind is OpKind.MUL)
    ops = list(program.ops)
    ops[at] = dataclasses.replace(ops[at], kind=OpKind.DIV, dtype=DType.INT64)
    broken = dataclasses.replace(program, ops=tuple(ops))
    with pytest.raises(Unsupported, match=r"kernel 'oscillator': .*div of int64"):
        emit_launch(broken)
