"""Models for the ODE tests: right-hand sides, events and kicks as hawk funcs (they must live in
a file: hawk reads their source)."""

from __future__ import annotations

import math

import hawk

G = 9.81


@hawk.func
def decay(u, t, k):
    return -k * u


@hawk.func
def harmonic(u, t, omega):
    return hawk.vec2(u.y, -omega * omega * u.x)


@hawk.func
def kepler(u, t, mu):
    """Planar two-body motion: u = (x, y, vx, vy)."""
    r = math.sqrt(u.x * u.x + u.y * u.y)
    a = -mu / (r * r * r)
    return hawk.vec4(u.z, u.w, a * u.x, a * u.y)


@hawk.func
def lorenz(u, t, p):
    return hawk.vec3(p.x * (u.y - u.x), u.x * (p.y - u.z) - u.y, u.x * u.y - p.z * u.z)


@hawk.func
def van_der_pol(u, t, mu):
    return hawk.vec2(u.y, mu * (1.0 - u.x * u.x) * u.y - u.x)


@hawk.func
def falling_with_drag(u, t, drag):
    """Height and vertical velocity of a ball falling with quadratic drag."""
    return hawk.vec2(u.y, -G - drag * u.y * abs(u.y))


@hawk.func
def height(u, t, p):
    return u.x


@hawk.func
def free_fall(u, t, restitution):
    return hawk.vec2(u.y, -G)


@hawk.func
def bounce(u, t, restitution):
    return hawk.vec2(u.x, -restitution * u.y)


@hawk.func
def still(u, t, p):
    return 0.0 * u


@hawk.func
def kick(u, t, p):
    return u + p


@hawk.func
def ornstein_uhlenbeck_drift(u, t, p):
    theta, mu, sigma = p
    return theta * (mu - u)


@hawk.func
def ornstein_uhlenbeck_noise(u, t, p):
    theta, mu, sigma = p
    return sigma + 0.0 * u


@hawk.func
def square(u, t, p):
    """u' = u**2: from u(0) = 1, u = 1 / (1 - t) blows up at t = 1."""
    return u * u
