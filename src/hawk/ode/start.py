"""The first step's size: Hairer's HINIT (*Solving Ordinary Differential Equations I*, II.4),
as SciPy's ``select_initial_step`` has it, for an error estimate of any order, in hawk."""

from __future__ import annotations

import hawk

from .explicit import rms

__all__ = ["initial_step"]


@hawk.func
def initial_step(f, u, t, t_end, p, rtol, atol, exponent):
    """``(k1, h)``: ``k1 = f(u, t, p)`` and the initial step size, from the sizes of ``u``,
    ``f`` and a difference estimate of ``f``'s derivative, never more than ``t_end - t``.
    Costs two evaluations of ``f``.

    Args:
        f: the right-hand side, a func ``f(u, t, p)``.
        u: the initial state.
        t: the initial time.
        t_end: where the integration ends.
        p: the model's parameters, passed on to ``f``.
        rtol, atol: the tolerances the steps will be controlled to.
        exponent: ``1 / (q + 1)`` for an error estimate of order ``q`` (DOPRI5's 1/5).
    """
    k1 = f(u, t, p)
    scale = atol + abs(u) * rtol
    d0 = rms(u / scale)
    d1 = rms(k1 / scale)
    span = t_end - t
    h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
    h0 = hawk.minimum(h0, span)
    k_probe = f(u + h0 * k1, t + h0, p)
    d2 = rms((k_probe - k1) / scale) / h0
    if d1 <= 1e-15 and d2 <= 1e-15:
        h1 = hawk.maximum(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / hawk.maximum(d1, d2)) ** exponent
    return k1, hawk.minimum(hawk.minimum(100.0 * h0, h1), span)
