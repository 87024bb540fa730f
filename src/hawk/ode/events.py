"""Locating a continuous event ``g(u, t, p) = 0`` inside a step, on the step's interpolant.

A step from ``t`` to ``t + h`` has an event when ``g`` changes sign in the direction asked for,
between its ends or between points inside it (``first_crossing``: the step is cut into equal
parts, as DifferentialEquations.jl's ``interp_points`` does). The crossing is then bracketed in
``theta`` (the fraction of the step) and narrowed by the Illinois method (regula falsi that
halves the stale end's value when the same end moves twice; Dowell and Jarratt 1971): it keeps
the bracket, converges superlinearly on a smooth ``g``, and needs no derivative. The loop is
unrolled (a hawk loop has a constant count), and stops changing once the bracket is narrower
than the tolerance in time. The returned ``theta`` is the bracket's far end, where the event
has happened: the state there is past the event by at most the tolerance, never before it.
"""

from __future__ import annotations

import hawk

from .dopri5 import dense_value

__all__ = ["crossed", "first_crossing", "locate"]


@hawk.func
def crossed(g_old, g_new, direction):
    """Whether ``g`` crossed zero during a step in ``direction`` (a compile-time int): ``-1``
    from positive to zero or below (a falling height), ``1`` from negative to zero or above,
    ``0`` either way; and the sign (``1.0`` or ``-1.0``) that makes the start of the step
    positive.

    Args:
        g_old, g_new: ``g`` at the start and at the end of the step.
        direction: ``-1``, ``0`` or ``1``, a compile-time int.
    """
    if direction < 0:
        return g_old > 0.0 and g_new <= 0.0, 1.0
    if direction > 0:
        return g_old < 0.0 and g_new >= 0.0, -1.0
    falling = g_old > 0.0 and g_new <= 0.0
    rising = g_old < 0.0 and g_new >= 0.0
    return falling or rising, 1.0 if g_old > 0.0 else -1.0


@hawk.func
def first_crossing(g, u, t, h, q, p, g_old, g_new, direction, samples, value=dense_value):
    """The first of ``samples`` equal parts of a step (a compile-time int) in which ``g``, on
    the interpolant, crosses zero in ``direction``: ``(hit, sign, lo, hi, f_lo, f_hi)``, the
    part's ends as fractions of the step and ``sign * g`` there (``f_lo > 0 >= f_hi`` when
    ``hit``). Looking inside the step finds a pair of crossings that its ends do not show
    (a ball that bounces and lands again within one step), as long as the parts are shorter
    than the time between them.

    Args:
        g: the event func ``g(u, t, p)``.
        u, t, h: the step's start state, time and size.
        q: the step's interpolant coefficients (``dense_coefficients``).
        p: the model's parameters, passed on to ``g``.
        g_old, g_new: ``g`` at the step's ends.
        direction: ``-1``, ``0`` or ``1`` (see ``crossed``).
        samples: the number of parts, a compile-time int.
        value: the method's interpolant ``value(u, h, q, theta)`` (default: Dormand-Prince's
            ``dense_value``).
    """
    hit, sign, lo, hi, f_lo, f_hi = False, 1.0, 0.0, 1.0, 1.0, -1.0
    g_a = g_old
    for j in range(samples):
        theta = (j + 1) / samples
        if j + 1 == samples:
            g_b = g_new
        else:
            g_b = g(value(u, h, q, theta), t + theta * h, p)
        here, s = crossed(g_a, g_b, direction)
        if here and not hit:
            hit, sign, lo, hi, f_lo, f_hi = True, s, j / samples, theta, s * g_a, s * g_b
        g_a = g_b
    return hit, sign, lo, hi, f_lo, f_hi


@hawk.func
def locate(g, u, t, h, q, p, sign, lo, hi, f_lo, f_hi, tol, iterations, value=dense_value):
    """The ``theta`` in ``(lo, hi]`` where ``sign * g`` on the interpolant ``dense_value(u, h,
    q, theta)`` first reaches zero or below, to ``tol`` in time, given its values ``f_lo > 0``
    at ``lo`` and ``f_hi <= 0`` at ``hi`` (both already multiplied by ``sign``). At most
    ``iterations`` (a compile-time int) evaluations of ``g``.

    Args:
        g: the event func ``g(u, t, p)``.
        u, t, h: the step's start state, time and size.
        q: the step's interpolant coefficients (``dense_coefficients``).
        p: the model's parameters, passed on to ``g``.
        sign: ``1.0`` or ``-1.0`` (from ``crossed``).
        lo, hi: the bracket, as fractions of the step.
        f_lo, f_hi: ``sign * g`` at ``lo`` (positive) and ``hi`` (zero or below).
        tol: the tolerance in time.
        iterations: the most evaluations, a compile-time int.
        value: the method's interpolant (as for ``first_crossing``).
    """
    side = 0.0
    for _ in range(iterations):
        active = (hi - lo) * h > tol and f_hi < 0.0
        theta = hi - f_hi * (hi - lo) / (f_hi - f_lo)
        theta = hawk.minimum(hawk.maximum(theta, lo), hi)
        f_mid = sign * g(value(u, h, q, theta), t + theta * h, p)
        if active and f_mid > 0.0:
            f_hi = 0.5 * f_hi if side > 0.0 else f_hi
            lo, f_lo, side = theta, f_mid, 1.0
        elif active:
            f_lo = 0.5 * f_lo if side < 0.0 else f_lo
            hi, f_hi, side = theta, f_mid, -1.0
    return hi
