"""Fixed-step integrators: explicit Euler, the classic fourth-order Runge-Kutta method, and
Euler-Maruyama for stochastic differential equations.

Each is a ``@hawk.func`` that takes the model as a func ``f(u, t, p)`` returning ``du/dt`` for a
state ``u`` (a number or a vector, ``Vec2`` ... ``Vector[128]``), its time ``t`` and whatever
parameters ``p`` the model needs (a number, a vector or a tuple), and returns the state one
step later.
"""

from __future__ import annotations

import math

import hawk

__all__ = ["euler", "rk4", "euler_maruyama"]


@hawk.func
def euler(f, u, t, dt, p):
    """One explicit Euler step of ``u' = f(u, t, p)`` (first order): ``u + dt * f(u, t, p)``.

    Args:
        f: the right-hand side, a func ``f(u, t, p)`` returning ``du/dt`` shaped as ``u``.
        u: the state (a number or a vector) at time ``t``.
        t: the time.
        dt: the step.
        p: the model's parameters, passed on to ``f``.
    """
    return u + dt * f(u, t, p)


@hawk.func
def rk4(f, u, t, dt, p):
    """One step of the classic fourth-order Runge-Kutta method of ``u' = f(u, t, p)``.

    The arguments are ``euler``'s: the right-hand side ``f``, a func ``f(u, t, p)``; the
    state ``u`` at the time ``t``; the step ``dt``; the model's parameters ``p``.
    """
    k1 = f(u, t, p)
    k2 = f(u + (0.5 * dt) * k1, t + 0.5 * dt, p)
    k3 = f(u + (0.5 * dt) * k2, t + 0.5 * dt, p)
    k4 = f(u + dt * k3, t + dt, p)
    return u + (dt / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


@hawk.func
def noise_like(u):
    """Independent standard normal draws, one per component of ``u`` (a number or a vector):
    the Wiener increments of ``euler_maruyama``, before scaling by ``sqrt(dt)``."""
    if hawk.width(u) == 1:
        return hawk.normal()
    elif hawk.width(u) == 2:
        return hawk.vec2(hawk.normal(), hawk.normal())
    elif hawk.width(u) == 3:
        return hawk.vec3(hawk.normal(), hawk.normal(), hawk.normal())
    return hawk.vec4(hawk.normal(), hawk.normal(), hawk.normal(), hawk.normal())


@hawk.func
def euler_maruyama(f, g, u, t, dt, p):
    """One Euler-Maruyama step of the Ito SDE ``du = f(u, t, p) dt + g(u, t, p) dW`` with
    diagonal noise (``g`` gives one amplitude per component, each driven by its own Wiener
    process): ``u + dt * f + g * sqrt(dt) * xi`` with ``xi`` standard normal draws (strong order
    1/2, weak order 1). The draws come from the kernel's random numbers, so a run needs a seed.

    Args:
        f: the drift, a func ``f(u, t, p)`` shaped as ``u``.
        g: the diffusion, a func ``g(u, t, p)`` shaped as ``u`` (one amplitude per component).
        u: the state (a number or a vector) at time ``t``.
        t: the time.
        dt: the step.
        p: the model's parameters, passed on to ``f`` and ``g``.
    """
    return u + dt * f(u, t, p) + g(u, t, p) * (math.sqrt(dt) * noise_like(u))
