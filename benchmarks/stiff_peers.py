"""The stiff ensemble of ``stiff_ensemble.py``: Robertson's problem, its peers and references.

Robertson's chemical kinetics (Hairer and Wanner's ROBER), three species, rate constants ``k``:

    r1 = k0 u0,   r2 = k1 u1 u1,   r3 = k2 u1 u2
    u0' = -r1 + r3,   u1' = r1 - r2 - r3,   u2' = r2

with ``k = (0.04, 3e7, 1e4)`` each multiplied per member by an independent ``U(0.5, 2)``, ``u0 =
(1, 0, 0)``, from ``t = 0`` to ``1e5``. Stiff: the Jacobian's eigenvalues reach ``-1e4`` and
beyond while the solution changes on times of order ``t``.

What is here:

* ``robertson_ensemble``: the randomised ensemble (``ode_peers.Ensemble``: ``u0`` (3, n), ``p``
  the rates (3, n));
* ``rosenbrock23_numba``: the hand-written Numba peer of eagle's ``method="rosenbrock23"``
  (``hawk.ode.rosenbrock``), step for step: Shampine and Reichelt's Rosenbrock23 (``d = 1 /
  (2 + sqrt 2)``, ``e32 = 6 + sqrt 2``), the same I-controller (``h * clip(0.9 err^(-1/3),
  0.2, 5)``, no growth right after a rejection, a rejected step at most ``0.9 h``), the same
  RMS error norm of ``err / (atol + rtol max(|u|, |u_new|))``, the same initial step
  (``hawk.ode.dopri5_start``: Hairer's hinit with the error exponent 1/5, as eagle uses for
  both its adaptive methods), the same last step (``min(h, t1 - t)``, landing on ``t1``; an
  accepted step shortened to land there does not shrink the next one) and the same
  arithmetic order. What a skilled Numba user writes by hand and eagle does not: the 3 x 3
  Jacobian written out analytically (eagle's comes from ``hawk.jacobian``; for this model the
  two are the same numbers bit for bit), ``df/dt`` left out (the model is autonomous; eagle
  adds ``(h d) * 0``), and ``W = I - h d J`` factored once per step and the factors applied to
  the three right-hand sides (eagle's ``hawk.solve`` eliminates again for each; the pivots,
  factors and order of operations are the same, so are the bits: ``hawk.linalg``'s partial
  pivoting, each row ``i > k`` swapped with row ``k`` in turn when ``|a[i][k]| > |a[k][k]|``).
  ``@njit(parallel=True, cache=True)``, a ``prange`` over members, every component in a scalar
  local (nothing allocated per step), no fastmath;
* ``solve_radau``: ``scipy.integrate.solve_ivp(method="Radau")`` member after member with the
  analytic ``jac=`` (the fastest way a SciPy user runs it); step counts from ``nlu`` are not
  comparable, so the accepted steps are ``len(t) - 1`` and the rejected ones are not reported;
* ``reference_radau``: the same at a tight tolerance (rtol 1e-10, atol 1e-14), the accuracy
  reference;
* ``robertson_field`` and ``kvaerno5``: the right-hand side (jax.numpy) and diffrax's
  ``Kvaerno5`` with a ``PIDController`` at the benchmark's tolerances (an I-controller:
  ``pcoeff = 0``, ``icoeff = 1``, diffrax's defaults otherwise), for
  ``ode_peers.make_diffrax``.
"""

from __future__ import annotations

import math

import numpy as np
import ode_peers
from numba import njit, prange
from scipy.integrate import solve_ivp

RATES = (0.04, 3e7, 1e4)
SPREAD = (0.5, 2.0)  # each rate times U(0.5, 2)
T1 = 1e5
# hawk.ode.rosenbrock's constants
D = 1.0 / (2.0 + math.sqrt(2.0))
E32 = 6.0 + math.sqrt(2.0)
SAFE, FAC_MIN, FAC_MAX = 0.9, 0.2, 5.0
SMALLEST_STEP = 10 * 2.0**-52  # hawk.ode.kernels: a sample whose step falls below gives up


def robertson_ensemble(n: int, seed: int = 2024) -> ode_peers.Ensemble:
    """``n`` members: ``u0 = (1, 0, 0)``, ``p = RATES * U(0.5, 2)`` per rate and member."""
    if not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n: expected a positive integer, got {n!r}")
    rng = np.random.default_rng(seed)
    p = np.stack([r * rng.uniform(*SPREAD, n) for r in RATES])
    u0 = np.vstack([np.ones(n), np.zeros(n), np.zeros(n)])
    return ode_peers.Ensemble(np.ascontiguousarray(u0), np.ascontiguousarray(p))


# -- the Numba peer -------------------------------------------------------------------------------


@njit(inline="always")
def robertson(x, y, z, k0, k1, k2):
    """The right-hand side, as scalars, in eagle's model's order of arithmetic."""
    r1 = k0 * x
    r2 = k1 * y * y
    r3 = k2 * y * z
    return -r1 + r3, r1 - r2 - r3, r2


@njit(inline="always")
def _rms3(a, b, c):
    return math.sqrt((a * a + b * b + c * c) / 3.0)


@njit(inline="always")
def _hinit(t0, t1, x, y, z, fx, fy, fz, k0, k1, k2, rtol, atol):
    """``hawk.ode.dopri5_start``'s step (Hairer's hinit, error exponent 1/5)."""
    sx, sy, sz = atol + abs(x) * rtol, atol + abs(y) * rtol, atol + abs(z) * rtol
    d0 = _rms3(x / sx, y / sy, z / sz)
    d1 = _rms3(fx / sx, fy / sy, fz / sz)
    span = t1 - t0
    h0 = 1e-6 if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
    h0 = min(h0, span)
    gx, gy, gz = robertson(x + h0 * fx, y + h0 * fy, z + h0 * fz, k0, k1, k2)
    d2 = _rms3((gx - fx) / sx, (gy - fy) / sy, (gz - fz) / sz) / h0
    if d1 <= 1e-15 and d2 <= 1e-15:
        h1 = max(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** 0.2
    return min(min(100.0 * h0, h1), span)


@njit(inline="always")
def _swap(s, a, b):
    return (b, a) if s else (a, b)


@njit(inline="always")
def _lu3(a00, a01, a02, a10, a11, a12, a20, a21, a22):
    """Gaussian elimination with partial pivoting of a 3 x 3 matrix, ``hawk.linalg.eliminate``'s
    operations in its order: the row swaps ``s01, s02`` (column 0) and ``s12`` (column 1), the
    factors ``f1, f2, f21`` (0 below a zero pivot) and the upper triangle ``u00 .. u22``."""
    s01 = abs(a10) > abs(a00)
    a00, a10 = _swap(s01, a00, a10)
    a01, a11 = _swap(s01, a01, a11)
    a02, a12 = _swap(s01, a02, a12)
    s02 = abs(a20) > abs(a00)
    a00, a20 = _swap(s02, a00, a20)
    a01, a21 = _swap(s02, a01, a21)
    a02, a22 = _swap(s02, a02, a22)
    nonzero = abs(a00) > 0.0
    f1 = a10 / a00 if nonzero else 0.0
    f2 = a20 / a00 if nonzero else 0.0
    a11 = a11 - f1 * a01
    a12 = a12 - f1 * a02
    a21 = a21 - f2 * a01
    a22 = a22 - f2 * a02
    s12 = abs(a21) > abs(a11)
    a11, a21 = _swap(s12, a11, a21)
    a12, a22 = _swap(s12, a12, a22)
    f21 = a21 / a11 if abs(a11) > 0.0 else 0.0
    a22 = a22 - f21 * a12
    return s01, s02, s12, f1, f2, f21, a00, a01, a02, a11, a12, a22


@njit(inline="always")
def _lu_solve(s01, s02, s12, f1, f2, f21, u00, u01, u02, u11, u12, u22, b0, b1, b2):
    """Apply the row swaps and factors of ``W``'s elimination to ``b``, then back-substitute:
    ``hawk.linalg.solve``'s operations on the right-hand side, in its order."""
    b0, b1 = _swap(s01, b0, b1)
    b0, b2 = _swap(s02, b0, b2)
    b1 = b1 - f1 * b0
    b2 = b2 - f2 * b0
    b1, b2 = _swap(s12, b1, b2)
    b2 = b2 - f21 * b1
    x2 = b2 / u22
    x1 = (b1 - u12 * x2) / u11
    x0 = (b0 - u01 * x1 - u02 * x2) / u00
    return x0, x1, x2


@njit(nogil=True, error_model="numpy")
def solve3(a, b):
    """``x`` with ``a @ x == b`` for one 3 x 3 ``a`` and ``b`` (3,), by the peer's ``_lu3`` and
    ``_lu_solve`` (for the tests: ``hawk.solve`` gives the same bits)."""
    lu = _lu3(a[0, 0], a[0, 1], a[0, 2], a[1, 0], a[1, 1], a[1, 2], a[2, 0], a[2, 1], a[2, 2])
    s01, s02, s12, f1, f2, f21, u00, u01, u02, u11, u12, u22 = lu
    x0, x1, x2 = _lu_solve(s01, s02, s12, f1, f2, f21, u00, u01, u02, u11, u12, u22,
                           b[0], b[1], b[2])
    return np.array([x0, x1, x2])


@njit(parallel=True, cache=True, nogil=True, error_model="numpy")
def rosenbrock23_numba(u0, p, t0, t1, rtol, atol, max_steps, u, t_out, accepted, rejected,
                       done):
    """Integrate every member of ``u0`` (3, n) with rates ``p`` (3, n) from ``t0`` to ``t1``;
    writes ``ode_peers.dopri5_numba``'s outputs (the final state, the time reached, accepted
    and rejected counts, ``done``: ``t1`` reached within ``max_steps`` attempted steps)."""
    n = u0.shape[1]
    for i in prange(n):
        k0, k1, k2 = p[0, i], p[1, i], p[2, i]
        x, y, z = u0[0, i], u0[1, i], u0[2, i]
        fx, fy, fz = robertson(x, y, z, k0, k1, k2)
        h = _hinit(t0, t1, x, y, z, fx, fy, fz, k0, k1, k2, rtol, atol)
        t = t0
        after_reject = False
        n_acc = 0
        n_rej = 0
        while t < t1 and n_acc + n_rej < max_steps:
            hs = min(h, t1 - t)
            t_new = t + hs
            if hs == t1 - t:
                t_new = t1
            # W = I - h d J, J the analytic Jacobian
            hd = hs * D
            two_k1y = 2.0 * k1 * y
            a00, a01, a02 = 1.0 + hd * k0, -(hd * (k2 * z)), -(hd * (k2 * y))
            a10, a11, a12 = -(hd * k0), 1.0 - hd * (-two_k1y - k2 * z), hd * (k2 * y)
            a20, a21, a22 = 0.0, -(hd * two_k1y), 1.0
            # its LU with partial pivoting, once per step
            s01, s02, s12, f1, f2, f21, a00, a01, a02, a11, a12, a22 = _lu3(
                a00, a01, a02, a10, a11, a12, a20, a21, a22)
            # the stages
            q1x, q1y, q1z = _lu_solve(s01, s02, s12, f1, f2, f21, a00, a01, a02, a11, a12, a22,
                                      fx, fy, fz)
            half = 0.5 * hs
            gx, gy, gz = robertson(x + half * q1x, y + half * q1y, z + half * q1z, k0, k1, k2)
            q2x, q2y, q2z = _lu_solve(s01, s02, s12, f1, f2, f21, a00, a01, a02, a11, a12, a22,
                                      gx - q1x, gy - q1y, gz - q1z)
            q2x, q2y, q2z = q2x + q1x, q2y + q1y, q2z + q1z
            xn, yn, zn = x + hs * q2x, y + hs * q2y, z + hs * q2z
            nx, ny, nz = robertson(xn, yn, zn, k0, k1, k2)
            q3x, q3y, q3z = _lu_solve(
                s01, s02, s12, f1, f2, f21, a00, a01, a02, a11, a12, a22,
                nx - E32 * (q2x - gx) - 2.0 * (q1x - fx), ny - E32 * (q2y - gy) - 2.0 * (q1y - fy),
                nz - E32 * (q2z - gz) - 2.0 * (q1z - fz))
            h6 = hs / 6.0
            ex, ey, ez = (h6 * (q1x - 2.0 * q2x + q3x), h6 * (q1y - 2.0 * q2y + q3y),
                          h6 * (q1z - 2.0 * q2z + q3z))
            err = _rms3(ex / (atol + rtol * max(abs(x), abs(xn))),
                        ey / (atol + rtol * max(abs(y), abs(yn))),
                        ez / (atol + rtol * max(abs(z), abs(zn))))
            # the controller (hawk.ode.rosenbrock23_control)
            t_start = t
            fac = min(FAC_MAX, max(FAC_MIN, SAFE * err ** (-1.0 / 3.0)))
            if after_reject:
                fac = min(fac, 1.0)
            if err <= 1.0:
                h_next = hs * fac
                if hs < h:
                    h_next = max(h_next, h)
                after_reject = False
                t = t_new
                x, y, z = xn, yn, zn
                fx, fy, fz = nx, ny, nz
                n_acc += 1
            else:
                h_next = hs * min(fac, 0.9)
                after_reject = True
                n_rej += 1
            h = h_next
            if not h > SMALLEST_STEP * abs(t_start):  # eagle's STATUS_FAILED: give up
                break
        u[0, i], u[1, i], u[2, i] = x, y, z
        t_out[i] = t
        accepted[i] = n_acc
        rejected[i] = n_rej
        done[i] = t >= t1


# -- SciPy ----------------------------------------------------------------------------------------


def robertson_ivp(t, u, k0, k1, k2):
    """The right-hand side for ``solve_ivp`` (``args=(k0, k1, k2)``)."""
    r1 = k0 * u[0]
    r2 = k1 * u[1] * u[1]
    r3 = k2 * u[1] * u[2]
    return np.array([-r1 + r3, r1 - r2 - r3, r2])


def robertson_jac(t, u, k0, k1, k2):
    """Its Jacobian, analytic."""
    return np.array([[-k0, k2 * u[2], k2 * u[1]],
                     [k0, -2.0 * k1 * u[1] - k2 * u[2], -k2 * u[1]],
                     [0.0, 2.0 * k1 * u[1], 0.0]])


def solve_radau(ens: ode_peers.Ensemble, t1: float, rtol: float, atol: float, *,
                indices=None) -> ode_peers.Solution:
    """``solve_ivp(method="Radau", jac=robertson_jac)`` per member (``indices``, default all):
    final states, the time reached, accepted steps, ``rejected`` -1 (SciPy does not count
    them), done."""
    indices = range(ens.n) if indices is None else indices
    finals, ts, acc, done = [], [], [], []
    for i in indices:
        sol = solve_ivp(robertson_ivp, (0.0, t1), ens.u0[:, i], method="Radau", rtol=rtol,
                        atol=atol, jac=robertson_jac, args=tuple(ens.p[:, i]))
        finals.append(sol.y[:, -1])
        ts.append(sol.t[-1])
        acc.append(len(sol.t) - 1)
        done.append(sol.status == 0)
    m = len(finals)
    return ode_peers.Solution(np.stack(finals, axis=1), np.array(ts), np.array(acc, np.int64),
                              np.full(m, -1, np.int64), np.array(done, np.bool_))


def reference_radau(ens: ode_peers.Ensemble, t1: float, indices) -> np.ndarray:
    """End states (3, len(indices)) by Radau at rtol 1e-10, atol 1e-14."""
    sol = solve_radau(ens, t1, 1e-10, 1e-14, indices=indices)
    if not sol.done.all():
        raise RuntimeError("the Radau reference did not reach t1")
    return sol.u


# -- diffrax --------------------------------------------------------------------------------------


def robertson_field(t, u, p):
    """The right-hand side for diffrax: ``u`` (3,), ``p`` (3,) (jax.numpy)."""
    import jax.numpy as jnp

    r1 = p[0] * u[0]
    r2 = p[1] * u[1] * u[1]
    r3 = p[2] * u[1] * u[2]
    return jnp.stack([-r1 + r3, r1 - r2 - r3, r2])


def kvaerno5(rtol: float, atol: float):
    """``(solver, controller)``: ``diffrax.Kvaerno5()`` and a ``PIDController`` at ``rtol``,
    ``atol`` (diffrax's defaults otherwise: an I-controller)."""
    import diffrax

    return diffrax.Kvaerno5(), diffrax.PIDController(rtol=rtol, atol=atol)
