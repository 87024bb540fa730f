"""Kernels the tests share (defined in a file, since hawk reads kernels' source)."""

import math

import hawk
from hawk import Mutable, Out, Param, Scalar, Terminated, Vec3


@hawk.kernel
def oscillator(omega: Scalar, t_end: Param, dt: Param, terminated: Terminated,
               x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    x0, v0 = x, v
    x = x0 + dt * v0
    v = v0 - dt * omega * omega * x0
    t += dt
    terminated = t >= t_end


@hawk.kernel
def spread_oscillator(omega: Scalar, t_end: Scalar, dt: Param, terminated: Terminated,
                      x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    x0, v0 = x, v
    x = x0 + dt * v0
    v = v0 - dt * omega * omega * x0
    t += dt
    terminated = t >= t_end


@hawk.kernel
def falling(mu: Param, dt: Param, r_min: Param, terminated: Terminated,
            position: Mutable[Vec3], velocity: Mutable[Vec3]):
    r = hawk.length(position)
    acceleration = -mu * position / (r * r * r)
    velocity = velocity + dt * acceleration
    position = position + dt * velocity
    terminated = hawk.length(position) < r_min


@hawk.kernel
def bouncing(g: Param, dt: Param, restitution: Param, terminated: Terminated,
             y: Mutable[Scalar], vy: Mutable[Scalar], bounces: Mutable[Scalar]):
    vy = vy - g * dt
    y = y + vy * dt
    if y < 0.0:
        y = -y
        vy = -vy * restitution
        bounces += 1
    elif y > 100.0:
        y = 100.0
    else:
        y = y
    terminated = bounces >= 5 or abs(vy) < 1e-3


@hawk.kernel
def transcendental(k: Scalar, dt: Param, terminated: Terminated, u: Mutable[Scalar],
                   w: Mutable[Scalar], peak: Out[Scalar]):
    u = u + dt * math.sin(k * w) * math.exp(-u * u)
    w = w + dt * math.atan2(u, 1.0 + w * w) + math.sqrt(abs(u)) * dt
    peak = max(u, w)
    terminated = math.hypot(u, w) > 2.0 or math.tanh(w) > 0.99


@hawk.kernel(accumulate=True)
def accumulate_force(mu: Param, position: Vec3, out: Out[Vec3]):
    r = hawk.length(position)
    out = -mu * position / (r * r * r)


@hawk.kernel
def clashing_names(i: Scalar, flags: Param, control: Param, terminated: Terminated,
                   done: Mutable[Scalar], np: Mutable[Scalar], double: Mutable[Scalar]):
    # parameter names that are the generated loops' own names, or C++ keywords
    done = done + i * flags
    double = double - control
    np += 1.0
    terminated = np >= 5.0
