"""One runner, several threads: a second ``run()`` is refused (``eagle.RunnerBusy``) and a
``checkpoint()`` from another thread is taken at a launch boundary, never torn. Each promise is
tried many times at random moments (seeded, so a failure can be replayed)."""

from __future__ import annotations

import random
import threading
import time

import numpy as np
import pytest

import eagle
from eagle.checkpoint import load
from kernels import spread_oscillator

# --- trial counts (docs/reliability.md includes these lines) ---
RUN_TRIALS = 10  # a second run() while the first is mid-run
START_TRIALS = 10  # two run() calls started at the same moment
CHECKPOINT_TRIALS = 30  # checkpoint() from another thread at a random moment of run()
# --- end of trial counts ---

N = 20_000
MAX_STEPS = 5000
DT = 1e-3
FULL_STEPS = 3001  # the slowest sample's steps: its t_end is 3.0, which 3000 DTs fall short of


def bindings(n=N):
    return dict(x=np.ones(n), v=np.zeros(n), t=np.zeros(n), omega=np.linspace(1.0, 3.0, n),
                t_end=DT * (1 + 2999 * np.arange(n) / (n - 1)), dt=DT)


def new_runner(b, steps_per_launch=1):
    return eagle.until_done(eagle.deploy(spread_oscillator), max_steps=MAX_STEPS,
                            steps_per_launch=steps_per_launch, **b)


@pytest.fixture(scope="module")
def expected():
    """The arrays after one uninterrupted run (which compiles the kernel, too)."""
    b = bindings()
    new_runner(b).run()
    return b


def assert_same_state(arrays, expected):
    for key in ("x", "v", "t"):
        np.testing.assert_array_equal(arrays[key], expected[key], err_msg=key)


def reached(runner, thread, steps, timeout=60.0):
    """Wait until ``runner`` (running in ``thread``) has taken ``steps`` steps, or ended."""
    deadline = time.monotonic() + timeout
    while runner.steps < steps and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.0002)


def a_random_moment(rng, runner, thread):
    """A random moment of ``runner``'s run: after a random number of steps (so the moment
    does not depend on how fast this machine is), plus up to a millisecond."""
    reached(runner, thread, rng.randrange(1, int(0.8 * FULL_STEPS)))
    time.sleep(rng.uniform(0.0, 0.001))


@pytest.mark.slow
def test_a_second_run_while_one_is_running_is_refused(expected):
    rng = random.Random(16)
    refused = 0
    for trial in range(RUN_TRIALS):
        b = bindings()
        runner = new_runner(b)
        first = threading.Thread(target=runner.run, name="first-run")
        first.start()
        a_random_moment(rng, runner, first)
        running = first.is_alive()
        try:
            runner.run()
        except eagle.RunnerBusy as exc:
            refused += 1
            assert isinstance(exc, RuntimeError)
            assert "spread_oscillator" in str(exc) and "'first-run'" in str(exc)
        else:
            assert not running, f"trial {trial}: run() ran beside a run in progress"
        first.join()
        assert_same_state(b, expected)
        assert runner.steps == FULL_STEPS and runner.live == 0, f"trial {trial}: counters"
    assert refused >= RUN_TRIALS // 2, "the second run() should mostly land mid-run"


def run_after(runner, barrier, outcomes, jitter):
    barrier.wait()
    time.sleep(jitter)
    start = time.perf_counter()
    try:
        outcome = runner.run()
    except eagle.RunnerBusy as exc:
        outcome = exc
    outcomes.append((outcome, start, time.perf_counter()))


@pytest.mark.slow
def test_two_runs_started_together_give_one_result(expected):
    rng = random.Random(61)
    for trial in range(START_TRIALS):
        b = bindings()
        runner = new_runner(b)
        barrier = threading.Barrier(2)
        outcomes = []
        threads = [threading.Thread(target=run_after, args=(runner, barrier, outcomes,
                                                            rng.uniform(0.0, 0.002)))
                   for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(outcomes) == 2, f"trial {trial}: a run failed otherwise"
        ran = sorted((start, end) for outcome, start, end in outcomes
                     if isinstance(outcome, eagle.Report))
        assert ran, f"trial {trial}: neither run ran"
        assert len(ran) == 1 or ran[0][1] <= ran[1][0], f"trial {trial}: two runs at once"
        assert_same_state(b, expected)
        assert runner.steps == FULL_STEPS and runner.live == 0


def test_reset_during_a_run_is_refused(expected):
    b = bindings()
    runner = new_runner(b)
    thread = threading.Thread(target=runner.run)
    thread.start()
    reached(runner, thread, 1)
    with pytest.raises(eagle.RunnerBusy, match="reset"):
        runner.reset()
    thread.join()
    assert_same_state(b, expected)


@pytest.mark.slow
def test_checkpoint_during_a_run_is_consistent_and_resumes_bit_identically(expected, tmp_path):
    rng = random.Random(2)
    plan = eagle.deploy(spread_oscillator)
    mid_run = 0
    for trial in range(CHECKPOINT_TRIALS):
        b = bindings()
        runner = new_runner(b, steps_per_launch=rng.choice([1, 2, 5]))
        path = tmp_path / f"trial{trial}.npz"
        thread = threading.Thread(target=runner.run)
        thread.start()
        a_random_moment(rng, runner, thread)
        runner.checkpoint(path)
        thread.join()
        assert_same_state(b, expected)

        meta, arrays, flags = load(path)
        mid_run += 0 < meta["steps"] < FULL_STEPS
        # One step for every array and counter: each live sample took exactly `steps` steps.
        live = ~flags
        assert live.sum() == meta["live"], f"trial {trial}: flags and live count disagree"
        np.testing.assert_array_equal(np.round(arrays["t"][live] / DT), meta["steps"],
                                      err_msg=f"trial {trial}: t is not at the counted step")
        restored = eagle.Runner.restore(path, plan)
        restored.run()
        assert_same_state(restored.arrays, expected)
        assert restored.steps == FULL_STEPS
    assert mid_run >= CHECKPOINT_TRIALS // 2, "most checkpoints should land mid-run"


class DeviceLoop:
    """A loop whose launches the host does not see (as a GPU's one graph launch), held open
    until released."""

    sees_launches = False
    mode = "graph-while"
    threads = 0
    steps_per_launch = 1

    def __init__(self):
        self.entered = threading.Event()
        self.release = threading.Event()

    def build(self):
        return 0.0

    def run(self, counters, after_launch):
        self.entered.set()
        self.release.wait(60)
        counters.record(1, counters.max_steps, 0)

    def live_now(self):
        return None


def test_checkpoint_during_a_device_loop_is_refused_not_torn(tmp_path):
    runner = new_runner(bindings(100))
    runner._loop = loop = DeviceLoop()
    thread = threading.Thread(target=runner.run, name="device-run")
    thread.start()
    assert loop.entered.wait(60)
    try:
        with pytest.raises(eagle.RunnerBusy, match="after run\\(\\) returns"):
            runner.checkpoint(tmp_path / "run.npz")
        assert not (tmp_path / "run.npz").exists()
    finally:
        loop.release.set()
        thread.join()
    assert runner.checkpoint(tmp_path / "run.npz").exists()  # between runs: fine
