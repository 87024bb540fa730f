"""eagle's public API on the CPU: the runner's contract and binding validation."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import eagle
from kernels import falling, oscillator

ROOT = Path(__file__).resolve().parent.parent


def bindings(n=2000):
    return dict(x=np.ones(n), v=np.zeros(n), t=np.zeros(n), omega=np.linspace(1.0, 3.0, n),
                t_end=1.0, dt=1e-3)


def test_second_run_without_reset_does_nothing_and_reset_repeats_the_result():
    b = bindings()
    runner = eagle.until_done(eagle.deploy(oscillator), max_steps=10_000, **b)
    first = runner.run()
    assert first.launches > 0 and first.done == first.n and first.build_s > 0
    x_after = b["x"].copy()
    again = runner.run()
    assert again.launches == 0 and again.steps == 0 and again.build_s == 0
    np.testing.assert_array_equal(b["x"], x_after)
    runner.reset()
    b["x"][:], b["v"][:], b["t"][:] = 1.0, 0.0, 0.0
    third = runner.run()
    assert third.steps == first.steps and third.done == third.n
    np.testing.assert_array_equal(b["x"], x_after)


def test_simulate_and_thread_count_give_identical_results():
    a, b = bindings(), bindings()
    report = eagle.simulate(oscillator, max_steps=10_000, **a)
    threads = eagle.get_num_threads()
    eagle.set_num_threads(1)
    try:
        single = eagle.simulate(oscillator, max_steps=10_000, **b)
    finally:
        eagle.set_num_threads(threads)
    assert single.threads == 1 and report.threads == threads
    np.testing.assert_array_equal(a["x"], b["x"])


def test_repeat_while_is_the_documented_loop():
    condition, calls = np.array([1]), []

    def body():
        calls.append(1)
        condition[0] = len(calls) < 5

    assert eagle.repeat_while(condition, body) == 5
    condition[0] = 1
    assert eagle.repeat_while(condition, body, max_iterations=0) == 0


@pytest.mark.parametrize("change, error, words", [
    (dict(x=None), TypeError, "'x'"),
    (dict(extra=np.ones(3)), TypeError, "unknown binding 'extra'"),
    (dict(dt=np.ones(2000)), TypeError, "'dt' is a Param"),
    (dict(x=np.ones(1999)), ValueError, "disagree on the number of samples"),
    (dict(x=np.ones(4000)[::2]), ValueError, "not contiguous"),
    (dict(x=np.ones(2000, dtype=np.int16)), TypeError, "dtype int16"),
    (dict(x=[1.0] * 2000), TypeError, "'x'"),
    (dict(v="x"), TypeError, "'v'"),
    (dict(x=np.zeros(0), v=np.zeros(0), t=np.zeros(0), omega=np.zeros(0)), ValueError,
     "no samples"),
])
def test_bad_bindings_are_refused_before_anything_runs(change, error, words):
    b = bindings()
    b.update(change)
    b = {k: v for k, v in b.items() if v is not None}
    snapshot = {k: np.array(v, copy=True) for k, v in b.items() if isinstance(v, np.ndarray)}
    with pytest.raises(error, match=words.replace("(", r"\(")):
        eagle.until_done(eagle.deploy(oscillator), max_steps=100, **b)
    for k, v in snapshot.items():
        np.testing.assert_array_equal(b[k], v)


def test_read_only_and_aliased_mutables_are_refused():
    b = bindings()
    b["x"].flags.writeable = False
    with pytest.raises(ValueError, match="'x'.*read-only"):
        eagle.until_done(eagle.deploy(oscillator), max_steps=100, **b)
    b = bindings()
    b["v"] = b["x"]
    with pytest.raises(ValueError, match="share memory"):
        eagle.until_done(eagle.deploy(oscillator), max_steps=100, **b)
    p = np.ones((2000, 3))
    with pytest.raises(ValueError, match=r"\(3, n\)"):
        eagle.until_done(eagle.deploy(falling), max_steps=10, position=p, velocity=p.copy(),
                         mu=1.0, dt=0.1, r_min=0.1)


@pytest.mark.parametrize("max_steps", [0, -1, 1.5, True, 2**80])
def test_bad_max_steps(max_steps):
    with pytest.raises((TypeError, ValueError), match="max_steps"):
        eagle.until_done(eagle.deploy(oscillator), max_steps=max_steps, **bindings())


def test_gpu_request_without_a_gpu_says_why_and_how_to_run_on_the_cpu():
    from eagle.cuda import is_available

    if is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(eagle.BackendUnavailable, match="no CUDA device can be used") as info:
        eagle.until_done(eagle.deploy(oscillator, "gpu"), max_steps=10, **bindings())
    assert "device='cpu'" in str(info.value)


def test_spec_main_cell_runs_as_a_script():
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "seed.py")], check=True,
                         capture_output=True, text=True, timeout=600).stdout
    line = out.splitlines()[0]
    assert line.startswith("one runner.run() call -- build (capture) took ")
    launches = int(line.split("fired ")[1].split(" times")[0])
    assert 0 < launches < 100
    assert "second run() without reset(): launches == 0" in out


def test_numpy_scalars_bind_like_python_numbers():
    from kernels import spread_oscillator

    python = bindings()
    numpy_scalars = dict(bindings(), t_end=np.float64(1.0), dt=np.float64(1e-3))
    eagle.simulate(oscillator, max_steps=5000, **python)
    eagle.simulate(oscillator, max_steps=5000, **numpy_scalars)
    np.testing.assert_array_equal(python["x"], numpy_scalars["x"])
    broadcast = dict(bindings(), t_end=np.float64(0.5))  # a Scalar given one NumPy number
    report = eagle.simulate(spread_oscillator, max_steps=5000, **broadcast)
    assert report.steps == 500


SUBPACKAGES = ["ode", "distributed", "cuda", "pipeline", "compose", "loaded"]


def test_subpackages_are_attributes_after_import_eagle_in_a_fresh_process():
    """``import eagle; eagle.ode.solve(...)``, the README's spelling (an AttributeError before:
    the user had to write ``import eagle.ode``); ``hawk.ode`` likewise."""
    code = ("import eagle, hawk\n"
            f"for name in {SUBPACKAGES!r}:\n"
            "    assert getattr(eagle, name).__name__ == 'eagle.' + name, name\n"
            "    assert name in dir(eagle), name\n"
            "assert callable(eagle.ode.solve) and callable(eagle.distributed.run_on_cluster)\n"
            "assert hawk.ode.__name__ == 'hawk.ode'\n"
            "try:\n"
            "    eagle.no_such_thing\n"
            "except AttributeError as exc:\n"
            "    assert 'no_such_thing' in str(exc)\n"
            "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.stdout.strip() == "ok", done.stderr


def test_import_eagle_imports_neither_numbas_compiler_nor_dask():
    """What ``python -X importtime -c 'import eagle'`` lists: none of Numba, llvmlite, Dask,
    distributed, nor the subpackages that ``eagle.ode`` and ``eagle.distributed`` import on
    first use."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import eagle"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:") and "|" in line}
    assert "eagle" in imported
    heavy = sorted(m for m in imported if m.split(".")[0] in (
        "numba", "llvmlite", "dask", "distributed", "scipy")
        or m in ("eagle.ode", "eagle.distributed", "hawk.ode"))
    assert heavy == [], heavy
