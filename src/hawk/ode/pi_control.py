"""Hairer's PI step-size controller for an error estimate of any order, written in hawk.

``dopri5_control`` is this controller with DOPRI5's exponents (an estimate of order 4, so
``err`` falls as ``h**5``). For an estimate of order ``q`` the error falls as ``h**(q + 1)``,
and the step that would bring it to 1 is ``h * err**(-1 / (q + 1))``: the higher the order, the
gentler the correction. The same formula serves Verner's 7(6) and 9(8) pairs with their own
exponents, ``expo = 1 / (q + 1) - 0.75 beta`` and ``beta = 0.2 / (q + 1)`` (DOPRI5's
``0.17`` and ``0.04`` at ``q = 4``): the proportional part (``beta``, Hairer's "stabilized
step size control", II.4) damps the oscillation of the step size that a pure integral
controller shows where the step is limited by stability rather than accuracy; scaled with the
exponent, it keeps the same share of it. (Hairer's DOP853 uses ``beta = 0``; OrdinaryDiffEq.jl's
Vern7/Vern9 use a PI controller too, with its own gains.)

The rest is DOPRI5's (Hairer's defaults), with its constants below; ``hawk.ode.dopri5`` reads
them from here.
"""

from __future__ import annotations

import hawk

__all__ = ["pi_control", "SAFE", "FAC_MIN", "FAC_MAX", "C_START"]

SAFE = 0.9
FAC_MIN = 0.2
FAC_MAX = 10.0
#: the controller's memory at the start (the floor of the last accepted error norm)
C_START = 1e-4


@hawk.func
def pi_control(err_norm, h, c, expo, beta):
    """``(accepted, h_next, c_next)`` after a step of size ``h`` whose error norm is
    ``err_norm``: ``h_new = h / fac``, ``fac = err**expo / |c|**beta / SAFE`` clipped to
    ``[1 / FAC_MAX, 1 / FAC_MIN]``; no growth right after a rejection; a rejected step is
    retried with ``h / min(1 / FAC_MIN, err**expo / SAFE)``.

    Args:
        err_norm: the step's ``error_norm``.
        h: the step's size.
        c: the controller's memory: the last accepted step's error norm (at least
            ``C_START``), negated after a rejection.
        expo: the exponent of the error, ``1 / (q + 1) - 0.75 beta`` for an estimate of
            order ``q``.
        beta: the exponent of the last accepted step's error (0: an integral controller).
    """
    fac11 = err_norm**expo
    fac = hawk.maximum(1.0 / FAC_MAX, hawk.minimum(1.0 / FAC_MIN,
                                                   fac11 / abs(c) ** beta / SAFE))
    accepted = err_norm <= 1.0
    h_grown = h / fac
    if c < 0.0:  # the last step was rejected: no growth now
        h_grown = hawk.minimum(h_grown, h)
    h_shrunk = h / hawk.minimum(1.0 / FAC_MIN, fac11 / SAFE)
    if accepted:
        return accepted, h_grown, hawk.maximum(err_norm, C_START)
    return accepted, h_shrunk, -abs(c)
