"""Failures that used to pass without a word are visible: the printed report always says
done/n, a run truncated by ``max_steps`` warns (``run()`` and ``simulate``), and
``check_finite=True`` stops at the first launch that left a NaN/inf in a live sample, naming
the sample and the parameter (on every backend: after the launch where the host sees launches,
at the end of the run where it does not). Also: docs/reliability.md names only real tests."""

from __future__ import annotations

import ast
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import eagle
import hawk
from backends import target  # noqa: F401  (the fixture)
from hawk import Mutable, Scalar, Terminated
from kernels import accumulate_force, oscillator

ROOT = Path(__file__).resolve().parent.parent
N = 1000


@hawk.kernel
def overflowing(growth: Scalar, limit: Scalar, terminated: Terminated, count: Mutable[Scalar],
                y: Mutable[Scalar], z: Mutable[Scalar]):
    count += 1.0
    y = y * growth  # inf at step 31 where growth is 1e10
    z = y - y  # and NaN beside it
    terminated = count >= limit


def overflowing_bindings():
    growth = np.ones(N)
    growth[[3, 5, 800]] = 1e10
    limit = np.full(N, 60.0)
    limit[800] = 20.0  # grows too, but stops (finite) before it overflows
    y, z = np.ones(N), np.zeros(N)
    y[0] = z[0] = np.nan  # already done (below): a terminated sample is not checked
    terminated = np.zeros(N, bool)
    terminated[0] = True
    return dict(growth=growth, limit=limit, terminated=terminated, count=np.zeros(N), y=y, z=z)


def oscillator_bindings(n=N):
    return dict(x=np.ones(n), v=np.zeros(n), t=np.zeros(n), omega=np.linspace(1.0, 3.0, n),
                t_end=1.0, dt=1e-3)


def test_the_printed_report_says_done_of_n_when_truncated():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = eagle.simulate(oscillator, max_steps=10, **oscillator_bindings())
    assert report.truncated and str(report).startswith(f"0/{N} done (truncated at max_steps)")


def test_a_truncated_run_warns_and_a_finished_one_does_not():
    b = oscillator_bindings()
    b["t"][: N // 4] = 0.995  # a quarter finish within 10 steps
    runner = eagle.until_done(eagle.deploy(oscillator), max_steps=10, **b)
    with pytest.warns(eagle.TruncationWarning,
                      match=f"{N - N // 4} of {N} samples were still running at "
                            "max_steps=10; raise runner.max_steps") as record:
        runner.run()
    assert issubclass(eagle.TruncationWarning, RuntimeWarning)
    assert [Path(w.filename).name for w in record] == [Path(__file__).name]  # the caller's line
    runner.max_steps = 2000
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not runner.run().truncated  # finished: no warning


def test_simulate_warns_on_truncation_too():
    with pytest.warns(eagle.TruncationWarning, match=f"{N} of {N} samples") as record:
        eagle.simulate(oscillator, max_steps=10, **oscillator_bindings())
    assert [Path(w.filename).name for w in record] == [Path(__file__).name]


def test_a_kernel_without_terminated_run_for_max_steps_does_not_warn():
    """Its samples cannot finish earlier, so running exactly ``max_steps`` (a Monte Carlo
    payoff evaluated once with ``max_steps=1``) is what was asked; the report still says the
    samples were running. Before (issue 43, item 6): a ``TruncationWarning`` on every run."""
    n = 64
    b = dict(mu=1.0, position=np.ones((3, n)), out=np.zeros((3, n)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        once = eagle.simulate(accumulate_force, max_steps=1, **b)
        runner = eagle.until_done(eagle.deploy(accumulate_force), max_steps=3, **b)
        thrice = runner.run()
    assert once.steps == 1 and thrice.steps == 3
    assert once.truncated and thrice.truncated and thrice.done == 0


def test_check_finite_stops_at_the_launch_that_made_a_nan(target):  # noqa: F811
    arrays = target.put(overflowing_bindings())
    runner = eagle.until_done(eagle.deploy(overflowing, target.target.device), max_steps=1000,
                              steps_per_launch=8, check_finite=True, **arrays)
    with pytest.raises(eagle.NonFiniteState, match="sample 3's 'y' is inf") as info:
        runner.run()
    assert isinstance(info.value, FloatingPointError)
    assert (info.value.sample, info.value.parameter) == (3, "y")
    state = target.get(arrays)
    live = ~state["terminated"]
    if runner._loop.sees_launches:
        # The launch of steps 25..32 made it; the arrays and counters are at its end.
        assert runner.steps == 32 and runner.launches == 4
        assert "after launch 4 (step 32)" in str(info.value)
    else:
        assert "at the end of run()" in str(info.value)
    np.testing.assert_array_equal(state["count"][live], runner.steps)
    assert live.sum() == runner.live


def test_check_finite_is_off_unless_asked(monkeypatch):
    def never(runner):
        raise AssertionError("check_finite is off: nothing may be checked")

    monkeypatch.setattr(eagle.runner, "_FiniteCheck", never)
    b = overflowing_bindings()
    report = eagle.until_done(eagle.deploy(overflowing), max_steps=1000, **b).run()
    assert report.done == N and np.isnan(b["z"][3])  # ran to the end, silently
    monkeypatch.undo()
    with pytest.raises(eagle.NonFiniteState):  # simulate takes it as well
        eagle.simulate(overflowing, max_steps=1000, check_finite=True,
                       **overflowing_bindings())


def test_the_reliability_page_names_real_tests_and_their_trial_counts():
    page = (ROOT / "docs" / "reliability.md").read_text()
    named = re.findall(r"`(tests/test_\w+\.py)::(\w+)`", page)
    assert len(named) >= 10
    for file, name in named:
        tree = ast.parse((ROOT / file).read_text())
        functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert name in functions, f"docs/reliability.md names {file}::{name}, which is gone"
    for file in sorted({file for file, _ in named}):
        text = (ROOT / file).read_text()
        if re.search("^# --- trial counts", text, re.M):  # shown by literalinclude
            assert f"../{file}" in page, f"the page does not include {file}'s trial counts"
