"""A terminal event is located after the run (``dopri5_kernel(locate_after=True)``): the run
only finds which step crosses and stops the sample at that step's start; the kernel without
``locate_after`` then takes that one step again and locates the event in it.

The reference for the bits is the solve as it was before: ``eagle.ode.solve`` with
``locates_after`` patched to say no, so the run locates the event inside every step. Both must
give every array of the ``Solution`` bit for bit, in every case below (saves, stops and kicks,
vector-valued events with non-terminal components, backward time, sensitivities, tables, a run
cut short by ``max_steps``).

Each test fails on the code before: ``locates_after``, ``locate_after`` and
``STATUS_LOCATING`` did not exist, and the step kernel evaluated the event in its location on
every step.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import eagle
import eagle.ode
import hawk
from backends import target  # noqa: F401  (the fixture)
from differential import adaptive_bindings, assert_matches_reference, reference_run
from eagle.ode import solver
from hawk.ir import OpKind

N = 40


@hawk.func
def fall(u, t, p):
    return hawk.vec2(u[1], -9.81 - p * u[1] * abs(u[1]))


@hawk.func
def ground(u, t, p):
    return u[0]


@hawk.func
def ground_or_slow(u, t, p):
    return hawk.vec2(u[0], u[1] + 20.0)


@hawk.func
def pendulum(u, t, p):
    return hawk.vec2(u[1], -p[0] * u[1] - math.sin(u[0]) + p[1] * math.cos(p[2] * t))


@hawk.func
def late_section(u, t, p):
    return math.sin(p[2] * t) - 0.999


@hawk.func
def kick(u, t, p):
    return hawk.vec2(u[0], u[1] + 1.0)


@hawk.func
def fall_in_wind(u, t, p, wind):
    return hawk.vec2(u[1], -9.81 + hawk.interp_grid(wind, t, 0.0, 3.0) - p * u[1] * abs(u[1]))


@hawk.func
def below_wind(u, t, p, wind):
    return u[0] - hawk.interp_grid(wind, t, 0.0, 3.0)


def _fall_start():
    return np.stack([np.linspace(1.0, 60.0, N), np.zeros(N)]), np.linspace(0.0, 0.05, N)


def _in_step(monkeypatch, *args, **kwargs):
    """The solve with the event located in every step, as before ``locate_after``."""
    with monkeypatch.context() as patched:
        patched.setattr(solver, "locates_after", lambda *_: False)
        return eagle.ode.solve(*args, **kwargs)


def _assert_same_bits(after, in_step):
    for name in ("u", "t", "status", "accepted", "rejected", "events", "saved", "ts",
                 "du_dp", "dt_dp"):
        a, b = getattr(after, name), getattr(in_step, name)
        assert (a is None) == (b is None), name
        if a is not None:
            np.testing.assert_array_equal(a, b, err_msg=name)
    for name in ("h", "k1", "c", "stops", "saves"):
        np.testing.assert_array_equal(after.arrays[name], in_step.arrays[name], err_msg=name)
    assert not (after.status == hawk.ode.STATUS_LOCATING).any()


CASES = {
    "one event": (fall, ground, dict()),
    "saveat": (fall, ground, dict(saveat=(0.0, 3.0, 31))),
    "stops and kicks": (fall, ground, dict(tstops=(0.5, 0.5), on_stop=kick)),
    "a vector event, one component terminal": (
        fall, ground_or_slow, dict(direction=(-1, -1), terminal=(True, False))),
    "both components terminal": (fall, ground_or_slow, dict(terminal=True)),
    "rodas5p": (fall, ground, dict(method="rodas5p")),
    "vern9": (fall, ground, dict(method="vern9")),
    "sensitivity": (fall, ground, dict(sensitivity="p")),
    "max_steps": (fall, ground, dict(max_steps=12)),
}


@pytest.mark.parametrize("case", CASES)
def test_the_run_without_the_location_gives_the_same_bits(case, monkeypatch):
    f, event, options = CASES[case]
    u0, p = _fall_start()
    common = dict(rtol=1e-8, atol=1e-8, event=event, **options)
    with pytest.warns() if "max_steps" in options else _no_warning():
        after = eagle.ode.solve(f, u0, (0.0, 3.0), p, **common)
    with pytest.warns() if "max_steps" in options else _no_warning():
        in_step = _in_step(monkeypatch, f, u0, (0.0, 3.0), p, **common)
    _assert_same_bits(after, in_step)
    assert (after.status == hawk.ode.STATUS_EVENT).sum() >= N // 4  # the event was met


def _no_warning():
    import contextlib
    return contextlib.nullcontext()


def test_backward_time_and_tables_give_the_same_bits(monkeypatch):
    u0, p = _fall_start()
    wind = np.array([0.0, 2.0, -1.0, 0.5])
    common = dict(rtol=1e-9, atol=1e-9, event=below_wind, direction=1, tables=(wind,))
    after = eagle.ode.solve(fall_in_wind, u0, (3.0, 0.0), p, **common)
    in_step = _in_step(monkeypatch, fall_in_wind, u0, (3.0, 0.0), p, **common)
    _assert_same_bits(after, in_step)
    assert (after.status == hawk.ode.STATUS_EVENT).any()


def test_a_driven_pendulum_ends_at_its_section_with_the_same_bits(monkeypatch):
    p = np.stack([np.full(N, 0.5), np.linspace(0.9, 1.5, N), np.full(N, 2.0 / 3.0)])
    common = dict(rtol=1e-10, atol=1e-10, event=late_section, direction=1, threads=2)
    after = eagle.ode.solve(pendulum, np.zeros((2, N)), (0.0, 20.0), p, **common)
    in_step = _in_step(monkeypatch, pendulum, np.zeros((2, N)), (0.0, 20.0), p, **common)
    _assert_same_bits(after, in_step)
    # sin(2 t / 3) first reaches 0.999 at t = 1.5 (pi / 2 - acos(0.999)) ...
    first = 1.5 * (math.pi / 2 - math.acos(0.999))
    np.testing.assert_allclose(after.t, first, rtol=0, atol=1e-9)


def _calls_of(kernel, name: str) -> int:
    return sum(op.kind is OpKind.CALL and op.attr == name for op in kernel.program.ops)


def test_the_step_kernel_evaluates_the_event_only_to_find_the_crossing():
    """In the run, ``g = sin(Omega t) - 0.999`` is looked at on the step's ``event_samples``
    points (4 ``sin`` calls); the location's twelve iterations are in the locating kernel
    only (the model's own ``sin`` is one more)."""
    after = hawk.ode.dopri5_kernel(pendulum, hawk.Vec2, hawk.Vector[3], event=late_section,
                                   direction=1, locate_after=True)
    in_step = hawk.ode.dopri5_kernel(pendulum, hawk.Vec2, hawk.Vector[3], event=late_section,
                                     direction=1)
    model_sines = _calls_of(hawk.ode.dopri5_kernel(pendulum, hawk.Vec2, hawk.Vector[3]), "sin")
    assert _calls_of(after, "sin") - model_sines == 5  # g at the start, 3 inside, the end
    assert _calls_of(in_step, "sin") - model_sines == 5 + 12


def test_the_solve_uses_the_kernel_that_leaves_the_location():
    u0, p = _fall_start()
    solution = eagle.ode.solve(fall, u0, (0.0, 3.0), p, event=ground)
    ops = solution.plan.kernel.program.ops
    located = hawk.ode.dopri5_kernel(fall, hawk.Vec2, hawk.Scalar, event=ground)
    assert len(ops) < len(located.program.ops)


@pytest.mark.parametrize("options", [dict(on_event=kick), dict(record_events=True)])
def test_locate_after_is_refused_where_the_run_needs_the_events_time(options):
    with pytest.raises(ValueError, match="locate_after"):
        hawk.ode.dopri5_kernel(fall, hawk.Vec2, hawk.Scalar, event=ground, locate_after=True,
                               **options)


def test_both_kernels_equal_the_reference_on_every_backend(target):  # noqa: F811
    """The run that leaves the crossing step, then the locating kernel on those samples, on
    each backend against the reference executor of the same two kernels."""
    u0, p = _fall_start()
    n = u0.shape[1]
    leaving = hawk.ode.dopri5_kernel(fall, hawk.Vec2, hawk.Scalar, event=ground, saveat=True,
                                     locate_after=True)
    locating = hawk.ode.dopri5_kernel(fall, hawk.Vec2, hawk.Scalar, event=ground, saveat=True)
    k1 = np.stack([u0[1], np.full(n, -9.81)])
    bindings = adaptive_bindings(p, u0, k1, t_end=3.0, rtol=1e-8, atol=1e-8, h=1e-3,
                                 save_every=0.25, save_count=13)
    names = ("u", "t", "h", "k1", "accepted", "rejected", "status", "events", "saves", "saved")
    for kernel, steps in ((leaving, 3000), (locating, 1)):
        if kernel is locating:  # what solve does between the two
            left = bindings["status"] == hawk.ode.STATUS_LOCATING
            assert left.sum() >= n // 4
            bindings["status"][left] = hawk.ode.STATUS_RUNNING
            bindings["terminated"] = ~left
        expected, _ = reference_run(kernel, bindings, steps)
        arrays = target.put(bindings)
        eagle.until_done(eagle.deploy(kernel, target.target.device), max_steps=steps,
                         **arrays).run()
        actual = target.get(arrays)
        assert_matches_reference({k: actual[k] for k in names}, {k: expected[k] for k in names},
                                 target.target.exact_math, rtol=1e-9, counts_within=2,
                                 looser={"h": 1e-6})
        bindings = {**bindings, **{k: np.array(expected[k]) for k in names}}
    assert not (bindings["status"] == hawk.ode.STATUS_LOCATING).any()
    assert (bindings["status"] == hawk.ode.STATUS_EVENT).sum() >= n // 4


def test_a_cluster_solve_locates_on_the_client_with_the_same_bits(monkeypatch):
    """With ``client=`` (NumPy inputs) the workers run the kernel that leaves the crossing
    step, and the steps come back with the arrays: they are taken again here."""
    distributed = pytest.importorskip("distributed")
    u0, p = _fall_start()
    common = dict(rtol=1e-8, atol=1e-8, event=ground, saveat=(0.0, 3.0, 7))
    in_step = _in_step(monkeypatch, fall, u0, (0.0, 3.0), p, **common)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        remote = eagle.ode.solve(fall, u0, (0.0, 3.0), p, client=client, chunks=4, **common)
    _assert_same_bits(remote, in_step)
    assert (remote.status == hawk.ode.STATUS_EVENT).sum() >= N // 4


def test_a_left_step_that_does_not_cross_again_is_run_on_to_its_end(monkeypatch):
    """Were the locating kernel to compute the left step differently (a device compiling the
    two kernels apart), its samples would go on from the step's start as that kernel runs
    them, to their end, not stop after one step: here the locating kernel's event is one that
    never fires, so every left sample runs on to ``t_end``."""
    u0, p = _fall_start()
    real_kernel = hawk.ode.dopri5_kernel

    def never_locating(*args, locate_after=False, **kwargs):
        if not locate_after:
            kwargs["event"] = never_fires
        return real_kernel(*args, locate_after=locate_after, **kwargs)

    monkeypatch.setattr(hawk.ode, "dopri5_kernel", never_locating)
    solution = eagle.ode.solve(fall, u0, (0.0, 3.0), p, event=ground, rtol=1e-8, atol=1e-8)
    assert (solution.status == hawk.ode.STATUS_DONE).all() and (solution.t == 3.0).all()


@hawk.func
def never_fires(u, t, p):
    return 1.0
