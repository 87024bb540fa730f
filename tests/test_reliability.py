"""Interruption, checkpoints and progress: nothing is lost, nothing changes a result."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import eagle
from eagle.checkpoint import CheckpointError
from kernels import bouncing, spread_oscillator

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src"


def long_bindings(n=200_000):
    dt = 1e-3
    return dict(x=np.ones(n), v=np.zeros(n), t=np.zeros(n), omega=np.linspace(1.0, 3.0, n),
                t_end=dt * (1 + 2999 * np.arange(n) / (n - 1)), dt=dt)


def uninterrupted(max_steps=5000):
    b = long_bindings()
    eagle.until_done(eagle.deploy(spread_oscillator), max_steps=max_steps,
                     steps_per_launch=8, **b).run()
    return b


@pytest.fixture
def ctrl_c_raises():
    """Python's own SIGINT handler, as in an interactive session (a process started in the
    background inherits SIGINT ignored, and Python then leaves it ignored)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_stops_at_a_launch_boundary_and_run_continues_exactly(ctrl_c_raises):
    expected = uninterrupted()
    b = long_bindings()
    # One step per launch: thousands of launch boundaries, so the signal lands mid-run.
    runner = eagle.until_done(eagle.deploy(spread_oscillator), max_steps=5000,
                              steps_per_launch=1, **b)
    timer = threading.Timer(0.15, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        runner.run()
    timer.join()
    assert 0 < runner.steps < 3000, "the interrupt should land mid-run"
    # Consistent at the boundary: every live sample has taken exactly runner.steps steps.
    live = ~runner.bound.flags
    assert live.sum() == runner.live
    np.testing.assert_array_equal(np.round(b["t"][live] / 1e-3), runner.steps)
    runner.run()
    for key in ("x", "v", "t"):
        np.testing.assert_array_equal(b[key], expected[key])


def test_checkpoint_round_trip_continues_bit_identically(tmp_path):
    expected = uninterrupted()
    b = long_bindings()
    plan = eagle.deploy(spread_oscillator)
    runner = eagle.until_done(plan, max_steps=1000, steps_per_launch=8, **b)
    runner.run()
    path = runner.checkpoint(tmp_path / "run.npz")
    b["x"][:] = np.nan  # the live arrays are gone; only the checkpoint remains
    restored = eagle.Runner.restore(path, plan)
    assert restored.steps == 1000 and restored.max_steps == 1000
    restored.max_steps = 5000
    restored.run()
    for key in ("x", "v", "t"):
        np.testing.assert_array_equal(restored.arrays[key], expected[key])


def test_restore_refuses_another_kernel_and_damaged_files(tmp_path):
    b = long_bindings(2000)
    runner = eagle.until_done(eagle.deploy(spread_oscillator), max_steps=10, **b)
    runner.run()
    path = runner.checkpoint(tmp_path / "run.npz")
    with pytest.raises(CheckpointError, match="cannot continue 'bouncing'"):
        eagle.Runner.restore(path, eagle.deploy(bouncing))
    damaged = tmp_path / "damaged.npz"
    damaged.write_bytes(path.read_bytes()[:200])
    with pytest.raises(CheckpointError, match="not a readable eagle checkpoint"):
        eagle.Runner.restore(damaged, eagle.deploy(spread_oscillator))


CHILD = f"""
import sys
sys.path[:0] = [{str(TESTS)!r}, {str(SRC)!r}]
import numpy as np, eagle
from kernels import spread_oscillator
from test_reliability import long_bindings
b = long_bindings()
runner = eagle.until_done(eagle.deploy(spread_oscillator), max_steps=5000, steps_per_launch=1,
                          **b)
print("started", flush=True)
runner.run(checkpoint_every=0.02, checkpoint_path=sys.argv[1])
print("finished", flush=True)
"""


@pytest.mark.slow
def test_a_killed_run_resumes_from_its_checkpoint_bit_identically(tmp_path):
    expected = uninterrupted()
    path = tmp_path / "run.npz"
    env = {**os.environ, "EAGLE_NUM_THREADS": "1"}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], env=env,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "started"
    deadline = time.monotonic() + 120
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)  # let it write a few more checkpoints, then kill it mid-run
    child.kill()
    child.wait()
    assert path.exists()
    restored = eagle.Runner.restore(path, eagle.deploy(spread_oscillator))
    assert 0 < restored.steps < 3000, "the child should have been killed mid-run"
    restored.run()
    for key in ("x", "v", "t"):
        np.testing.assert_array_equal(restored.arrays[key], expected[key])


def test_progress_changes_no_result(capsys):
    a, b = long_bindings(20_000), long_bindings(20_000)
    eagle.until_done(eagle.deploy(spread_oscillator), max_steps=5000, **a).run()
    report = eagle.until_done(eagle.deploy(spread_oscillator), max_steps=5000,
                              **b).run(progress=True)
    for key in ("x", "v", "t"):
        np.testing.assert_array_equal(a[key], b[key])
    assert "20000/20000" in capsys.readouterr().err and report.done == 20_000


def test_checkpoint_arguments_are_checked():
    runner = eagle.until_done(eagle.deploy(spread_oscillator), max_steps=10,
                              **long_bindings(100))
    with pytest.raises(ValueError, match="needs checkpoint_path"):
        runner.run(checkpoint_every=1.0)
    with pytest.raises(ValueError, match="positive number of seconds"):
        runner.run(checkpoint_every=0, checkpoint_path="x.npz")
