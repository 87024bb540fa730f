"""Step-size controllers, generic over the order of a method's error estimate, written in hawk.

For an estimate of order ``q`` the error falls as ``h**(q + 1)``, and the step that would bring
it to 1 is ``h * err**(-1 / (q + 1))``: the higher the order, the gentler the correction. Two
controllers use it:

- ``pi_control``: Hairer's PI controller of DOPRI5 (*Solving Ordinary Differential Equations
  I*, II.4, "stabilized step size control"): ``h_new = h / fac``, ``fac = err**expo /
  err_old**beta / SAFE`` clipped to ``[1 / FAC_MAX, 1 / FAC_MIN]``, with ``beta = 0.2 / (q +
  1)`` and ``expo = 1 / (q + 1) - 0.75 beta`` (``pi_exponents``; DOPRI5's ``0.04`` and ``0.17``
  at ``q = 4``): the proportional part damps the oscillation of the step size that a pure
  integral controller shows where the step is limited by stability rather than accuracy;
  scaled with the exponent, it keeps the same share of it. ``err_old`` (the norm of the last
  accepted step, at least ``C_START``) is the controller's memory ``c``, carried from step to
  step by the caller; it is stored negated after a rejection, and the next step may then not
  grow. A rejected step is retried with ``h / min(1 / FAC_MIN, err**expo / SAFE)``.
- ``i_control``: the integral controller of the Rosenbrock methods and of SciPy's ``RK23`` and
  ``DOP853``: ``h_new = h * clip(SAFE * err**(-1 / (q + 1)), FAC_MIN, fac_max)``, no growth
  after a rejection (``c`` negative), at most ``0.9 h`` on a rejection.

``controller(kind, order, fac_max)`` gives the ``(err_norm, h, c) -> (accepted, h_next,
c_next)`` func a kernel calls, for a method's registry entry.
"""

from __future__ import annotations

import functools

import hawk

__all__ = ["pi_control", "i_control", "pi_exponents", "controller", "SAFE", "FAC_MIN",
           "FAC_MAX", "C_START"]

SAFE = 0.9
FAC_MIN = 0.2
FAC_MAX = 10.0
#: the controller's memory at the start (the floor of the last accepted error norm)
C_START = 1e-4


def pi_exponents(order: int) -> tuple[float, float]:
    """``(expo, beta)`` of ``pi_control`` for an error estimate of order ``order``."""
    beta = 0.2 / (order + 1)
    return 1.0 / (order + 1) - 0.75 * beta, beta


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


@hawk.func
def i_control(err_norm, h, c, expo, fac_max):
    """``(accepted, h_next, c_next)`` after a step of size ``h`` with error norm ``err_norm``:
    ``h * clip(SAFE * err_norm**expo, FAC_MIN, fac_max)``, not more than ``h`` after a
    rejection (``c`` negative) and at most ``0.9 h`` on one; ``c_next`` is 1 after an accepted
    step, -1 after a rejected one.

    Args:
        err_norm: the step's ``error_norm``.
        h: the step's size.
        c: the controller's memory (negative after a rejection).
        expo: ``-1 / (q + 1)`` for an estimate of order ``q``.
        fac_max: the most a step may grow by.
    """
    fac = hawk.minimum(fac_max, hawk.maximum(FAC_MIN, SAFE * err_norm**expo))
    accepted = err_norm <= 1.0
    if c < 0.0:
        fac = hawk.minimum(fac, 1.0)
    if accepted:
        return accepted, h * fac, 1.0
    return accepted, h * hawk.minimum(fac, 0.9), -1.0


@functools.cache
def controller(kind: str, order: int, fac_max: float = FAC_MAX):
    """The ``@hawk.func`` ``(err_norm, h, c) -> (accepted, h_next, c_next)`` of a method whose
    error estimate is of order ``order``: ``kind`` ``"pi"`` (``pi_control`` with
    ``pi_exponents(order)``) or ``"i"`` (``i_control`` growing at most ``fac_max``-fold).

    Args:
        kind: ``"pi"`` or ``"i"``.
        order: the error estimate's order ``q`` (the error falls as ``h**(q + 1)``).
        fac_max: for ``"i"``, the most a step may grow by (``pi`` uses ``FAC_MAX``).
    """
    if kind == "pi":
        expo, beta = pi_exponents(order)

        @hawk.func
        def control(err_norm, h, c):
            return pi_control(err_norm, h, c, expo, beta)
    elif kind == "i":
        expo = -1.0 / (order + 1)

        @hawk.func
        def control(err_norm, h, c):
            return i_control(err_norm, h, c, expo, fac_max)
    else:
        raise ValueError(f"a controller is 'pi' or 'i', got {kind!r}")
    control.__doc__ = f"""``{kind}_control`` for an error estimate of order {order}:
    ``(accepted, h_next, c_next)``.

    Args:
        err_norm: the step's error norm.
        h: the step's size.
        c: the controller's memory (start it at ``C_START``; negative after a rejection).
    """
    return control
