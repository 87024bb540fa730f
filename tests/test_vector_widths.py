"""Vec2 and Vec4 through eagle: the width is the type's, and everything that lays out, checks or
saves a vector's array reads it from there (bindings, checkpoints), not from a constant 3."""

from __future__ import annotations

import numpy as np
import pytest

import eagle
import hawk
from differential import assert_bitwise_equal, reference_run
from eagle.bindings import BindingValueError
from hawk import Mutable, Param, Terminated, Vec2, Vec4


@hawk.kernel
def spin(omega: Param, dt: Param, terminated: Terminated, p: Mutable[Vec2],
         q: Mutable[Vec4], steps: Mutable[Vec2]):
    p = p + dt * omega * hawk.vec2(-p.y, p.x)
    for i in range(4):
        q[i] = q[i] + dt * q[(i + 1) % 4] * 0.5
    q = hawk.normalize(q)
    steps.x += 1.0
    terminated = steps.x >= steps.y


def bindings(n: int) -> dict:
    rng = np.random.default_rng(4)
    return dict(omega=2.0, dt=0.01, p=rng.normal(size=(2, n)), q=rng.normal(size=(4, n)),
                steps=np.stack([np.zeros(n), rng.integers(5, 200, n).astype(float)]))


def test_vec2_and_vec4_run_on_the_cpu_as_the_reference_does():
    expected, expected_steps = reference_run(spin, bindings(300), 500)
    arrays = bindings(300)
    report = eagle.simulate(spin, max_steps=500, device="cpu", **arrays)
    assert report.steps == expected_steps and report.done == 300
    assert_bitwise_equal({k: arrays[k] for k in ("p", "q", "steps")},
                         {k: expected[k] for k in ("p", "q", "steps")})


def test_bindings_check_the_width_of_each_vector():
    good = bindings(10)
    with pytest.raises(BindingValueError, match=r"'q' \(Mutable\[Vec4\]\) must have shape "
                                                r"\(4, n\), got \(3, 10\)"):
        eagle.until_done(eagle.deploy(spin, "cpu"), max_steps=5, **{**good, "q": good["q"][:3]})
    with pytest.raises(BindingValueError, match=r"'p' \(Mutable\[Vec2\]\).*\(2, n\).*a\.T"):
        eagle.until_done(eagle.deploy(spin, "cpu"), max_steps=5,
                         **{**good, "p": np.ascontiguousarray(good["p"].T)})


def test_a_checkpoint_of_vec2_and_vec4_state_restores(tmp_path):
    plan = eagle.deploy(spin, "cpu")
    whole = bindings(200)
    eagle.until_done(plan, max_steps=400, **whole).run()
    part = bindings(200)
    runner = eagle.until_done(plan, max_steps=60, **part)
    with pytest.warns(eagle.TruncationWarning):  # stopped part way, on purpose
        runner.run()
    path = runner.checkpoint(tmp_path / "spin.npz")
    again = eagle.Runner.restore(path, plan)
    again.max_steps = 400
    again.run()
    assert again.arrays["q"].shape == (4, 200)
    assert_bitwise_equal({k: again.arrays[k] for k in ("p", "q", "steps")},
                         {k: whole[k] for k in ("p", "q", "steps")})
