"""A pure recording of events (issue 43, item 4: ``record_events`` with nothing terminal and no
``on_event``, a Poincaré section) locates its events after the run
(``hawk.ode.recorded.event_location_kernel``), once per event instead of on every step, with the
bits the step's own location gives.

The reference for the bits: the same solve with one more event component that is terminal but
never crosses. A component that acts makes the step locate every crossing itself (the path
before this change), and one that never fires changes no step, so both runs take the same
steps and must record the same numbers.

Each test fails on the code before: ``recorded_row_width`` and ``event_location_kernel`` did
not exist (and the rows held the located states).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import eagle.ode
import hawk
from hawk.ir import OpKind
from hawk.ode.kernels import carries_event, recorded_row_width

N = 24


@hawk.func
def pendulum(u, t, p):
    return hawk.vec2(u[1], -p[0] * u[1] - math.sin(u[0]) + p[1] * math.cos(p[2] * t))


@hawk.func
def section(u, t, p):
    return math.sin(p[2] * t)


@hawk.func
def never(u, t, p):
    return 1.0


@hawk.func
def spring(u, t, k):
    return hawk.vec2(u[1], -k * u[0])


@hawk.func
def two_levels(u, t, k):
    return hawk.vec2(u[0] - 0.25, u[1])


def _pendulum_p():
    return np.stack([np.full(N, 0.5), np.linspace(0.9, 1.5, N), np.full(N, 2.0 / 3.0)])


@pytest.mark.parametrize("method", ["dopri5", "vern9", "rodas5p"])
def test_a_poincare_section_is_located_after_the_run_with_the_steps_bits(method):
    p = _pendulum_p()
    t_end = 20.25 * 3 * math.pi
    common = dict(method=method, rtol=1e-8, atol=1e-8, record_events=25)
    after = eagle.ode.solve(pendulum, np.zeros((2, N)), (0.0, t_end), p, event=section,
                            direction=1, terminal=False, **common)
    in_step = eagle.ode.solve(pendulum, np.zeros((2, N)), (0.0, t_end), p,
                              event=[section, never], direction=(1, -1),
                              terminal=(False, True), **common)
    assert after.arrays["u_events"].shape == (25, 3, N)  # the steps' rows: (u, h)
    assert after.u_events.shape == (25, 2, N)
    np.testing.assert_array_equal(after.t_events, in_step.t_events)
    np.testing.assert_array_equal(after.u_events, in_step.u_events)
    np.testing.assert_array_equal(after.which_events, in_step.which_events)
    np.testing.assert_array_equal(after.u, in_step.u)
    # the section's crossings are at t = 2 pi k / Omega = 3 pi k
    assert (after.events == 20).all()
    exact = np.broadcast_to(3 * math.pi * np.arange(1, 21)[:, None], (20, N))
    np.testing.assert_allclose(after.t_events[:20], exact, atol=1e-9, rtol=0)
    assert np.isnan(after.t_events[20:]).all() and (after.which_events[20:] == -1).all()


def test_several_components_per_sample_arguments_and_backward_time():
    """Two components (one rising and falling), the spring constant per sample as ``args``
    (a per-sample p, gathered row by row), integrated backward: the same bits as the
    step's own location."""
    k = np.linspace(1.0, 3.0, N)
    u0 = np.array([np.linspace(0.5, 1.0, N), np.zeros(N)])
    common = dict(args=(k,), record_events=12, rtol=1e-9, atol=1e-9)
    after = eagle.ode.solve(spring, u0, (4.0, -2.0), event=two_levels, direction=(0, -1),
                            terminal=False, **common)

    @hawk.func
    def three(u, t, k):
        return hawk.concat(two_levels(u, t, k), never(u, t, k))

    in_step = eagle.ode.solve(spring, u0, (4.0, -2.0), event=three, direction=(0, -1, -1),
                              terminal=(False, False, True), **common)
    assert after.arrays["u_events"].shape[1] == 3
    np.testing.assert_array_equal(after.t_events, in_step.t_events)
    np.testing.assert_array_equal(after.u_events, in_step.u_events)
    np.testing.assert_array_equal(after.which_events, in_step.which_events)
    assert set(np.unique(after.which_events)) == {-1, 0, 1}
    assert (after.t_events[~np.isnan(after.t_events)] < 4.0).all()  # in t, not in -t


def test_which_recordings_are_located_after_the_run():
    vec2 = hawk.Vec2
    assert recorded_row_width(vec2, None, False, True) == 3  # (u, h)
    assert recorded_row_width(vec2, None, False, True, tstops=True) == 6  # (u, k1, t_new, h)
    assert recorded_row_width(hawk.Scalar, None, (False, False), True) == 2
    assert recorded_row_width(hawk.Vector[127], None, False, True) == 128
    assert recorded_row_width(vec2, None, (False, True), True) == 0  # one ends the sample
    assert recorded_row_width(vec2, None, None, True) == 0  # terminal by default
    assert recorded_row_width(vec2, spring, False, True) == 0  # an on_event acts
    assert recorded_row_width(vec2, None, False, False) == 0  # nothing recorded
    assert recorded_row_width(hawk.Vector[64], None, False, True, tstops=True) == 0  # too wide
    assert recorded_row_width(hawk.Vector[128], None, False, True) == 0


def test_event_samples_one_looks_at_the_steps_ends_only():
    """``event_samples=1`` (SciPy's rule: a step's ends only) finds the section's crossings
    too, to the same tolerance; a bad count is refused by name."""
    p = _pendulum_p()
    common = dict(rtol=1e-8, atol=1e-8, record_events=12, event=section, direction=1,
                  terminal=False)
    ends = eagle.ode.solve(pendulum, np.zeros((2, N)), (0.0, 10.25 * 3 * math.pi), p,
                           event_samples=1, **common)
    inside = eagle.ode.solve(pendulum, np.zeros((2, N)), (0.0, 10.25 * 3 * math.pi), p,
                             **common)
    exact = np.broadcast_to(3 * math.pi * np.arange(1, 11)[:, None], (10, N))
    np.testing.assert_allclose(ends.t_events[:10], exact, atol=1e-9, rtol=0)
    np.testing.assert_allclose(ends.u_events[:10], inside.u_events[:10], atol=1e-8)
    np.testing.assert_array_equal(ends.u, inside.u)
    for bad in (0, 65, 2.0, True):
        with pytest.raises(ValueError, match="event_samples must be an int from 1 to 64"):
            eagle.ode.solve(pendulum, np.zeros((2, N)), (0.0, 1.0), p, event_samples=bad,
                            **common)


def _sin_calls(kernel) -> int:
    return sum(op.kind is OpKind.CALL and op.attr == "sin" for op in kernel.program.ops)


def test_a_pure_recording_carries_the_event_from_one_step_to_the_next():
    """The step of a pure recording evaluates ``g`` at its end and inside, not at its start:
    that value is the last step's end (or, after a rejected step, its start again), carried
    in ``c`` after the controller's memory. Fails on the code before: every step evaluated
    ``g(u, t)`` again (as many ``sin`` calls as the kernel that records nothing) and ``c``
    was one number per sample."""
    options = dict(event=section, direction=1, terminal=False)
    plain = hawk.ode.dopri5_kernel(pendulum, hawk.Vec2, hawk.Vector[3], **options)
    recording = hawk.ode.dopri5_kernel(pendulum, hawk.Vec2, hawk.Vector[3], record_events=True,
                                       **options)
    assert carries_event(hawk.Vec2, None, None, False, True)
    assert not carries_event(hawk.Vec2, None, section, False, True)  # a kick moves u
    assert not carries_event(hawk.Vec2, None, None, (False, True), True)  # one acts
    assert _sin_calls(recording) == _sin_calls(plain) - 1
    p = _pendulum_p()
    sol = eagle.ode.solve(pendulum, np.zeros((2, N)), (0.0, 4.25 * 3 * math.pi), p,
                          rtol=1e-8, atol=1e-8, record_events=5, **options)
    c = sol.arrays["c"]
    assert c.shape == (2, N)
    assert (sol.rejected > 0).any()  # a rejected step keeps the carried value
    np.testing.assert_allclose(c[1], np.sin(p[2] * sol.t), rtol=0, atol=1e-15)


def test_stops_and_saves_keep_the_carried_event_exact():
    """Steps that land on stops (``tstops`` without a kick) and end short at saved times, in
    a pure recording of two components: the same bits as the step's own location (a third,
    terminal component that never fires), which evaluates ``g`` at every step's start."""
    k = np.linspace(1.0, 3.0, N)
    u0 = np.array([np.linspace(0.5, 1.0, N), np.zeros(N)])
    common = dict(p=k, record_events=12, rtol=1e-9, atol=1e-9, tstops=(0.3, 0.7),
                  saveat=(0.0, 6.0, 13))
    after = eagle.ode.solve(spring, u0, (0.0, 6.0), event=two_levels, direction=(0, 1),
                            terminal=False, **common)

    @hawk.func
    def three(u, t, k):
        return hawk.concat(two_levels(u, t, k), never(u, t, k))

    in_step = eagle.ode.solve(spring, u0, (0.0, 6.0), event=three, direction=(0, 1, -1),
                              terminal=(False, False, True), **common)
    assert after.arrays["c"].shape == (3, N)
    for name in ("t_events", "u_events", "which_events", "u", "saved", "accepted", "rejected"):
        np.testing.assert_array_equal(getattr(after, name), getattr(in_step, name))
    assert (after.events >= 3).all()


@pytest.mark.parametrize("method", ["rosenbrock23", "dop853"])
def test_a_row_without_k1_and_the_end_lands_on_t_end_with_the_same_bits(method):
    """Without ``tstops`` a row is ``(u, h)``: the location computes ``k1 = f(u, t, p)`` and
    the step's end again. Here the last crossing is in the step that lands on ``t_end``
    (whose end is ``t_end``, not ``t + h``) and steps end short at saved times: the same
    bits as the step's own location."""
    p = _pendulum_p()
    t_end = 4 * 3 * math.pi + 1e-3
    common = dict(method=method, rtol=1e-7, atol=1e-7, record_events=6,
                  saveat=(0.0, t_end, 7))
    after = eagle.ode.solve(pendulum, np.zeros((2, N)), (0.0, t_end), p, event=section,
                            direction=1, terminal=False, **common)
    in_step = eagle.ode.solve(pendulum, np.zeros((2, N)), (0.0, t_end), p,
                              event=[section, never], direction=(1, -1),
                              terminal=(False, True), **common)
    rows, starts = after.arrays["u_events"], after.arrays["t_events"]
    assert rows.shape == (6, 3, N)
    assert (rows[3, 2] == t_end - starts[3]).sum() > N // 2  # the landing step's crossing
    for name in ("t_events", "u_events", "which_events", "u", "saved"):
        np.testing.assert_array_equal(getattr(after, name), getattr(in_step, name))
    assert (after.events == 4).all()
    np.testing.assert_allclose(after.t_events[3], 4 * 3 * math.pi, atol=1e-7, rtol=0)
