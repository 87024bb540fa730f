"""Running one kernel both through eagle and through the NumPy reference executor."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import eagle
from eagle.bindings import bind
from hawk import reference
from hawk.source import import_file


def bits(a: np.ndarray) -> np.ndarray:
    """An array's raw bytes, so equality is bit-for-bit (NaNs and signed zeros included)."""
    return np.ascontiguousarray(a).view(np.uint8)


def assert_bitwise_equal(actual: dict, expected: dict) -> None:
    for name in expected:
        a, e = np.asarray(actual[name]), np.asarray(expected[name])
        assert a.dtype == e.dtype, name
        if not np.array_equal(bits(a), bits(e)):
            bad = np.flatnonzero((bits(a) != bits(e)).reshape(a.shape[-1], -1).any(axis=1)
                                 if a.ndim == 1 else np.ones(1))
            raise AssertionError(f"{name} differs from the reference at samples {bad[:5]}: "
                                 f"{a.reshape(-1)[bad[:3]]} vs {e.reshape(-1)[bad[:3]]}")


def assert_matches_reference(actual: dict, expected: dict, exact: bool, rtol: float,
                             counts_within: int = 0, looser: dict | None = None) -> None:
    """Bit for bit where the target's math library is the C library's (``exact``); otherwise
    (CUDA's libdevice, a few ulp off glibc per call) floats within ``rtol`` of the reference,
    relative to each array's largest magnitude, and integer counts within ``counts_within``
    (an adaptive step's accept/reject decision can turn on an ulp); ``looser``: a tolerance per
    array name where an array's own ulps grow (a step size proposed from an error estimate that
    cancels, raised to a power)."""
    if exact:
        assert_bitwise_equal(actual, expected)
        return
    for name in expected:
        a, e = np.asarray(actual[name]), np.asarray(expected[name])
        assert a.dtype == e.dtype and a.shape == e.shape, name
        if a.dtype.kind in "iub":
            worst = int(np.abs(a.astype(np.int64) - e.astype(np.int64)).max(initial=0))
            assert worst <= counts_within, f"{name}: counts differ by up to {worst}"
            continue
        assert np.array_equal(np.isnan(a), np.isnan(e)), f"{name}: NaNs differ"
        scale = np.nanmax(np.abs(e), initial=0.0)
        worst = np.nanmax(np.abs(a - e), initial=0.0) / (scale or 1.0)
        assert worst <= (looser or {}).get(name, rtol), \
            f"{name} differs from the reference by {worst:.3g} of its scale"


def reference_run(kernel, bindings: dict, max_steps: int, seed: int | None = None,
                  ) -> tuple[dict, int]:
    """The final arrays and the steps taken, by the reference executor (``seed``: the random
    streams' seed, for a kernel that draws)."""
    bound = bind(kernel, copy.deepcopy(bindings), "cpu", seed=seed)
    program = kernel.specialize(bound.dtypes)
    arrays = {**bound.arrays, **bound.uniforms}
    steps = 0
    while steps < max_steps and reference.step(program, arrays, bound.flags, seed=seed,
                                               step_number=steps):
        steps += 1
    return arrays, steps


def eagle_run(kernel, bindings: dict, max_steps: int, steps_per_launch=None, device="cpu",
              seed: int | None = None):
    bindings = copy.deepcopy(bindings)
    runner = eagle.until_done(eagle.deploy(kernel, device), max_steps=max_steps,
                              steps_per_launch=steps_per_launch, seed=seed, **bindings)
    report = runner.run()
    arrays = {**runner.bound.arrays, **runner.bound.uniforms}
    return arrays, report


def resumed_run(kernel, bindings: dict, stop: int, max_steps: int, path) -> dict:
    """The arrays of a CPU run cut at ``stop`` steps (its ``TruncationWarning`` expected),
    checkpointed to ``path``, restored and run on to ``max_steps``."""
    plan = eagle.deploy(kernel, "cpu")
    runner = eagle.until_done(plan, max_steps=stop, **bindings)
    with pytest.warns(eagle.TruncationWarning):
        runner.run()
    restored = eagle.Runner.restore(runner.checkpoint(path), plan)
    restored.max_steps = max_steps
    restored.run()
    return restored.arrays


def load_kernel(source: str, folder, name: str):
    """The object ``name`` (a kernel or func) of ``source`` written to ``folder/name.py`` and
    imported (hawk reads a kernel's source from its file)."""
    path = folder / f"{name}.py"
    path.write_text(source)
    return getattr(import_file(path, f"generated_{name}_{abs(hash(source))}", keep=False), name)


def adaptive_bindings(p, u0, k1, t_end: float, rtol: float, atol: float, h: float,
                      save_every: float, save_count: int) -> dict:
    """The bindings of a ``hawk.ode.dopri5_kernel(..., saveat=True)`` run (any method) from
    ``u0`` (``(k, n)``) with ``k1 = f(u0, 0, p)``, a first step ``h`` and ``save_count``
    recorded times ``save_every`` apart from 0."""
    n = u0.shape[-1]
    counts = {name: np.zeros(n, np.int64)
              for name in ("accepted", "rejected", "status", "events", "stops", "saves")}
    return dict(p=p, t_end=np.full(n, t_end), rtol=rtol, atol=atol, max_step=np.inf,
                save_first=0.0, save_every=save_every, save_count=float(save_count), u=u0,
                k1=k1, t=np.zeros(n), h=np.full(n, h), c=np.full(n, 1e-4), **counts,
                saved=np.full((save_count, *u0.shape), np.nan), stop_first=0.0,
                stop_every=1.0)


def assert_adaptive_run_matches_reference(target, kernel, bindings: dict,
                                          max_steps: int) -> None:
    """``kernel`` (an adaptive ODE kernel) run on ``target`` until done equals the reference
    executor's run (``assert_matches_reference``: bit for bit where the math library is the
    C library's; else within 1e-9, counts within 2, ``h`` within 1e-6: 5.3e-8 on an H200),
    in the same steps, every sample done."""
    expected, steps = reference_run(kernel, bindings, max_steps)
    arrays = target.put(bindings)
    report = eagle.until_done(eagle.deploy(kernel, target.target.device),
                              max_steps=max_steps, **arrays).run()
    actual = target.get(arrays)
    names = ("u", "t", "h", "accepted", "rejected", "status", "saved")
    assert_matches_reference({k: actual[k] for k in names}, {k: expected[k] for k in names},
                             target.target.exact_math, rtol=1e-9, counts_within=2,
                             looser={"h": 1e-6})
    assert abs(report.steps - steps) <= (0 if target.target.exact_math else 2)
    assert (actual["status"] == 1).all()
