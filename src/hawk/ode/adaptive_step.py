"""One adaptive step, in the parts every adaptive kernel takes it by: ``dopri5_kernel``
(``hawk.ode.kernels``), the adjoint's recording kernel (``hawk.ode.adjoint``) and the kernel
that locates a pure recording's events afterwards (``hawk.ode.recorded``).

Why shared funcs: those kernels must take the same step bit for bit (the adjoint walks back
the steps the solve took; a located event is where the step would have put it), so the step is
written once. A func is inlined where it is called (``hawk.inline``): the kernels' ops are the
ones the same code written out in each gives, in the same order, so the golden IR digests
(``tests/golden``) hold. What a func cannot do, write a ``Series``, stays in the kernels: a
func returns the values and the kernel writes the rows (``saves_passed``). Where a kernel read
a compile-time flag in an ``if`` (``has_jacobian``), the func reads it as its argument at the
same point, since the flag's constant op takes its place among the ops there.

The parts, in the order a step takes them: ``step_size`` (the step and where it ends),
``controlled_attempt`` (the method's attempt, ``attempt_with``, and its controller),
``terminal_crossing`` (a single event's crossing and location), ``event_end`` (the event's
point and where the step ends), ``saves_passed`` (the recorded times the step passed),
``tally`` (the counts and the sample's status).
"""

from __future__ import annotations

import hawk

from .events import first_crossing, locate

__all__ = ["STATUS_RUNNING", "STATUS_DONE", "STATUS_EVENT", "STATUS_FAILED", "STATUS_LOCATING",
           "SMALLEST_STEP", "NO_STOPS", "step_size", "attempt_with", "controlled_attempt",
           "terminal_crossing", "event_end", "saves_passed", "tally"]

#: ``status`` values of an adaptive run, per sample
STATUS_RUNNING, STATUS_DONE, STATUS_EVENT, STATUS_FAILED = 0, 1, 2, -1
#: a sample whose step crossed its terminal event, left at the step's start for the kernel that
#: takes the step again and locates the event (``dopri5_kernel``'s ``locate_after``); never in
#: a finished solve's ``status``
STATUS_LOCATING = 3
#: the smallest step, relative to ``|t|``, before a sample is given up (Hairer's test)
SMALLEST_STEP = 10 * 2.0**-52
#: ``step_size``'s ``stopping`` for a kernel without stops
NO_STOPS = (False, 0.0, 0.0, 0.0)


@hawk.func
def step_size(h, max_step, t, t_end, stopping, saving):
    """The step to attempt and where it ends, ``(h_step, t_new, at_stop)``: ``h``, or shorter
    to end on ``t_end``, on the next stop or on the last recorded time the step may pass;
    ``t_new`` is exactly the stop or ``t_end`` where the step lands on it.

    ``stopping`` is ``(has_stops, stop_first, stop_every, stops)``: with ``has_stops`` (a
    compile-time bool) the next stop is ``stop_first + stops * stop_every``. ``saving`` is
    ``(has_saves, saves, saves_per_step, save_count, save_time, save_first, save_every)``:
    with ``has_saves``, the last recorded time the step may pass is ``save_time(save_first,
    save_every, k)`` at ``k = saves + saves_per_step - 1``, if ``k < save_count``."""
    has_stops, stop_first, stop_every, stops = stopping
    has_saves, saves, saves_per_step, save_count, save_time, save_first, save_every = saving
    h_step = hawk.minimum(hawk.minimum(h, max_step), t_end - t)
    if has_stops:
        t_stop = stop_first + stops * stop_every
        h_step = hawk.minimum(h_step, t_stop - t)
    if has_saves:
        last_save = saves + (saves_per_step - 1)
        if last_save < save_count:
            h_step = hawk.minimum(h_step, save_time(save_first, save_every, last_save) - t)
    t_new = t + h_step
    at_stop = False
    if has_stops:
        at_stop = h_step == t_stop - t
        if at_stop:
            t_new = t_stop
    if h_step == t_end - t:
        t_new = t_end
    return h_step, t_new, at_stop


@hawk.func
def attempt_with(attempt, has_jacobian, jacobian, model, u, k1, t, h, args):
    """The method's ``attempt(model, u, k1, t, h, args)``, ``(u_new, err, q, k_next)``; with
    ``has_jacobian`` (a compile-time bool), a Rosenbrock method's with the Jacobian
    ``jacobian(f, u, t, args)`` in place of ``hawk.jacobian``'s."""
    if has_jacobian:
        return attempt(model, u, k1, t, h, args, jacobian)
    return attempt(model, u, k1, t, h, args)


@hawk.func
def controlled_attempt(stepper, model, u, k1, t, h_step, h, max_step, args, rtol, atol,
                       memory):
    """The method's attempt of the step ``h_step`` and its controller's verdict, ``(u_new, q,
    k_next, ok, h_next, c_next)``: ``q`` the interpolant's data, ``k_next`` the next ``k1``,
    ``h_next`` the next step's size (at most ``max_step``; an accepted step that was shortened
    does not shrink it below ``h``), ``c_next`` the controller's ``memory``. ``stepper`` is
    the method's ``(attempt, has_jacobian, jacobian, control, norm)`` (``attempt_with``)."""
    attempt, has_jacobian, jacobian, control, norm = stepper
    u_new, err, q, k_next = attempt_with(attempt, has_jacobian, jacobian, model, u, k1, t,
                                         h_step, args)
    ok, h_next, c_next = control(norm(err, u, u_new, rtol, atol), h_step, memory)
    if ok and h_step < h:  # a shortened step does not shrink the next one
        h_next = hawk.maximum(h_next, h)
    h_next = hawk.minimum(h_next, max_step)
    return u_new, q, k_next, ok, h_next, c_next


@hawk.func
def terminal_crossing(event, u, t, h_step, q, args, u_new, t_new, ok, direction, samples,
                      tol, iterations, value):
    """Whether the single event ``event(u, t, args)`` ends the accepted step, and where (a
    fraction ``theta`` of it): ``first_crossing`` on ``samples`` points of the interpolant
    ``value``, then ``locate`` to ``tol`` in at most ``iterations``; ``(hit, theta)``."""
    hit, sign, lo, hi, f_lo, f_hi = first_crossing(
        event, u, t, h_step, q, args, event(u, t, args), event(u_new, t_new, args),
        direction, samples, value)
    hit = hit and ok
    theta = locate(event, u, t, h_step, q, args, sign, lo, hi, f_lo, f_hi, tol, iterations,
                   value)
    return hit, theta


@hawk.func
def event_end(u, t, h_step, q, theta, value, hit, t_new):
    """Where the step's event is, at the fraction ``theta`` of it, and where the step ends:
    ``(t_event, u_event, t_reached)``, ``t_reached`` the event's time where ``hit``, else
    ``t_new``."""
    t_event = t + theta * h_step
    u_event = value(u, h_step, q, theta)
    t_reached = t_new
    if hit:
        t_reached = t_event
    return t_event, u_event, t_reached


@hawk.func
def saves_passed(saving, ok, t, t_new, t_reached, u, u_new, h_step, q, value):
    """The recorded times ``saves``, ``saves + 1``... (at most ``saves_per_step``) that the
    accepted step passed, up to ``t_reached`` where it ended (``saving`` as ``step_size``
    takes it): ``(due, states, saves)``, per time whether it is written and the state there
    (``u_new`` at the step's end, else the interpolant), and the next time's index. The kernel
    writes ``states[j]`` to row ``saves + j`` where ``due[j]`` (a func writes no ``Series``).
    Without ``has_saves``: ``((), (), saves)``."""
    has_saves, saves, saves_per_step, save_count, save_time, save_first, save_every = saving
    due, states = (), ()
    if not has_saves:
        return due, states, saves
    passed = 0
    for j in range(saves_per_step):
        t_save = save_time(save_first, save_every, saves + j)
        now = ok and saves + j < save_count and t_save <= t_reached
        inside = value(u, h_step, q, (t_save - t) / h_step)
        state = u_new if t_save == t_new else inside
        if now:
            passed += 1
        due, states = due + (now,), states + (state,)
    return due, states, saves + passed


@hawk.func
def tally(ok, accepted, rejected, status, t, t_end, failed):
    """An adaptive step's counts and the sample's status after it:
    ``(accepted, rejected, status)``."""
    if ok:
        accepted += 1
    else:
        rejected += 1
    if t >= t_end:
        status = STATUS_DONE
    if failed:
        status = STATUS_FAILED
    return accepted, rejected, status
