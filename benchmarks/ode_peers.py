"""The peers that ``ode_ensemble.py`` (and ``kepler_ensemble.py``) measure ``eagle.ode.solve``
against, and the references.

Every peer integrates the Lorenz system by default (``make_dopri5_numba``, ``make_diffrax`` and
the references take any other right-hand side: ``kepler_peers.py`` is one)

    x' = sigma (y - x),  y' = x (rho - z) - y,  z' = x y - beta z,     p = (sigma, rho, beta)

per trajectory from ``t0`` to ``t1`` with the same method as eagle's ``dopri5``:

* **Dormand-Prince 5(4)** with scipy's ``RK45`` tableau (``C``, ``A``, ``B``, ``E`` are read from
  ``scipy.integrate._ivp.rk.RK45`` below, so they are scipy's values bit for bit), FSAL (six new
  right-hand-side evaluations per attempted step), local extrapolation (the 5th-order solution
  is kept);
* error norm: the RMS over the 3 components of ``err_i / (atol + rtol max(|y_i|, |y_new_i|))``
  with ``err = h sum_j E_j K_j`` (seven stages, the last the FSAL one);
* **Hairer's DOPRI5 PI controller**: ``beta = 0.04``, ``expo1 = 0.2 - 0.75 beta``, ``safe =
  0.9``, ``fac_min = 0.2``, ``fac_max = 10``; ``fac11 = err**expo1``, ``fac = fac11 /
  err_old**beta`` clipped to ``[1/fac_max, 1/fac_min]`` after dividing by ``safe``, ``h_new =
  h / fac``. Accepted when ``err <= 1`` (then ``err_old = max(err, 1e-4)``, and a step right
  after a rejection may not grow); otherwise rejected with ``h_new = h / min(1/fac_min, fac11 /
  safe)``. ``err_old`` starts at ``1e-4``;
* the initial step is Hairer's ``hinit`` exactly as scipy's ``select_initial_step`` computes it
  for RK45 (error exponent 1/5), one extra right-hand-side evaluation;
* the last step is shortened to land on ``t1`` exactly (as scipy does: ``t_new = min(t + h,
  t1)``, ``h = t_new - t``); ``max_steps`` bounds the *attempted* steps (one eagle step = one
  attempted integrator step), and a trajectory that has not reached ``t1`` by then is not done.

What is here:

* ``dopri5_numba``: the Numba per-sample peer, the fastest integrator of this method we could
  write by hand: ``@njit(parallel=True, cache=True)``, a ``prange`` over trajectories, each one
  integrated to ``t1`` with its state, stages and controller in scalar locals (nothing
  allocated per step), IEEE arithmetic (no fastmath, no FMA contraction: Numba does not contract
  unless asked; eagle is exact, so the peer is too);
* ``make_diffrax``: the diffrax peer, ``jax.jit(jax.vmap(solve_one))`` with ``diffrax.Dopri5``
  and a ``PIDController`` set as close to Hairer's as diffrax allows (see its docstring), or
  the same ``vmap`` over chunks of the ensemble (``jax.lax.map(..., batch_size=...)``);
* ``reference_dop853`` and ``reference_rk45``: ``scipy.integrate.solve_ivp`` per trajectory, the
  accuracy reference (DOP853 at a tight tolerance) and scipy's own step counts (RK45 at the
  benchmark's tolerance, rejected steps recovered from ``nfev``; scipy's controller is an
  I-controller, which rejects about twice as many steps as Hairer's PI controller);
* ``reference_hairer``: scipy's ``RK45`` stages (``rk_step``) driven by Hairer's controller in
  Python, one trajectory at a time: the same method as the peers, written independently of
  them, so it gives the accepted and rejected counts the peers must reproduce;
* ``make_dopri5_numba(rhs, k, m)``: the Numba peer of any right-hand side with ``k`` states
  and ``m`` parameters, its source written out for ``k`` and ``m`` with every component a
  scalar local (what ``dopri5_numba`` is for Lorenz, by hand), following eagle's step rules
  exactly (its docstring says where they differ from scipy's), so its accepted and rejected
  counts and, in practice, its end states bit for bit are eagle's;
* ``lorenz_ensemble``: the randomised ensemble every arm integrates.

``tests/test_ode_peers.py`` checks the Numba peer against both references.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit, prange
from scipy.integrate import solve_ivp
from scipy.integrate._ivp.rk import RK45, rk_step

# -- the tableau: scipy's RK45 values, as Python floats (Numba folds them as constants) ---------

C2, C3, C4, C5 = (float(c) for c in RK45.C[1:5])
A21 = float(RK45.A[1, 0])
A31, A32 = (float(a) for a in RK45.A[2, :2])
A41, A42, A43 = (float(a) for a in RK45.A[3, :3])
A51, A52, A53, A54 = (float(a) for a in RK45.A[4, :4])
A61, A62, A63, A64, A65 = (float(a) for a in RK45.A[5, :5])
B1, B2, B3, B4, B5, B6 = (float(b) for b in RK45.B)
E1, E2, E3, E4, E5, E6, E7 = (float(e) for e in RK45.E)
assert B2 == 0.0 and E2 == 0.0  # the second stage enters neither sum (skipped below)
assert RK45.n_stages == 6 and RK45.error_estimator_order == 4

# -- Hairer's DOPRI5 step-size controller --------------------------------------------------------

BETA = 0.04
EXPO1 = 0.2 - 0.75 * BETA
SAFE = 0.9
FAC_MIN = 0.2
FAC_MAX = 10.0
ERR_OLD_FLOOR = 1e-4

# -- the ensemble ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ensemble:
    """``n`` trajectories: ``u0`` is ``(k, n)`` (k states) and ``p`` ``(m, n)`` (m parameters)
    float64 (C-contiguous); for Lorenz k = m = 3."""

    u0: np.ndarray
    p: np.ndarray  # Lorenz's rows: sigma, rho, beta

    @property
    def n(self) -> int:
        return self.u0.shape[1]


def lorenz_ensemble(n: int, seed: int = 2024) -> Ensemble:
    """The benchmark's ensemble: ``sigma ~ U(9, 11)``, ``rho ~ U(20, 30)``, ``beta ~ U(2.5, 3)``,
    and ``u0 = (1, 1, 1) + U(-0.1, 0.1)^3``, independent draws from ``default_rng(seed)``."""
    if not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n: expected a positive integer, got {n!r}")
    rng = np.random.default_rng(seed)
    p = np.stack([rng.uniform(9.0, 11.0, n), rng.uniform(20.0, 30.0, n),
                  rng.uniform(2.5, 3.0, n)])
    u0 = 1.0 + rng.uniform(-0.1, 0.1, (3, n))
    return Ensemble(np.ascontiguousarray(u0), np.ascontiguousarray(p))


# -- the Numba per-sample peer ------------------------------------------------------------------


@njit(inline="always")
def lorenz(t, x, y, z, sigma, rho, beta):
    """The right-hand side, as scalars (``t`` unused: the system is autonomous)."""
    return sigma * (y - x), x * (rho - z) - y, x * y - beta * z


@njit(inline="always")
def _rms3(a, b, c):
    return math.sqrt((a * a + b * b + c * c) / 3.0)


@njit(inline="always")
def _hinit(t0, t1, x, y, z, fx, fy, fz, sigma, rho, beta, rtol, atol):
    """scipy's ``select_initial_step`` for RK45 (Hairer's hinit, error exponent 1/5)."""
    interval = abs(t1 - t0)
    sx, sy, sz = atol + abs(x) * rtol, atol + abs(y) * rtol, atol + abs(z) * rtol
    d0 = _rms3(x / sx, y / sy, z / sz)
    d1 = _rms3(fx / sx, fy / sy, fz / sz)
    h0 = 1e-6 if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
    h0 = min(h0, interval)
    gx, gy, gz = lorenz(t0 + h0, x + h0 * fx, y + h0 * fy, z + h0 * fz, sigma, rho, beta)
    d2 = _rms3((gx - fx) / sx, (gy - fy) / sy, (gz - fz) / sz) / h0
    if d1 <= 1e-15 and d2 <= 1e-15:
        h1 = max(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** (1.0 / 5.0)
    return min(100.0 * h0, h1, interval)


@njit(parallel=True, cache=True, nogil=True, error_model="numpy")
def dopri5_numba(u0, p, t0, t1, rtol, atol, max_steps, u, t_out, accepted, rejected, done):
    """Integrate every trajectory of ``u0`` (3, n) with parameters ``p`` (3, n) from ``t0`` to
    ``t1``; writes the final state into ``u`` (3, n), the time reached into ``t_out``, the
    accepted and rejected step counts (int64) and ``done`` (bool: ``t1`` reached within
    ``max_steps`` attempted steps)."""
    n = u0.shape[1]
    for i in prange(n):
        sigma, rho, beta = p[0, i], p[1, i], p[2, i]
        x, y, z = u0[0, i], u0[1, i], u0[2, i]
        k1x, k1y, k1z = lorenz(t0, x, y, z, sigma, rho, beta)
        h = _hinit(t0, t1, x, y, z, k1x, k1y, k1z, sigma, rho, beta, rtol, atol)
        t = t0
        err_old = ERR_OLD_FLOOR
        after_reject = False
        n_acc = 0
        n_rej = 0
        while t < t1 and n_acc + n_rej < max_steps:
            t_new = t + h
            if t_new > t1:
                t_new = t1
            h = t_new - t
            k2x, k2y, k2z = lorenz(t + C2 * h, x + (A21 * k1x) * h, y + (A21 * k1y) * h,
                                   z + (A21 * k1z) * h, sigma, rho, beta)
            k3x, k3y, k3z = lorenz(t + C3 * h, x + (A31 * k1x + A32 * k2x) * h,
                                   y + (A31 * k1y + A32 * k2y) * h,
                                   z + (A31 * k1z + A32 * k2z) * h, sigma, rho, beta)
            k4x, k4y, k4z = lorenz(t + C4 * h, x + (A41 * k1x + A42 * k2x + A43 * k3x) * h,
                                   y + (A41 * k1y + A42 * k2y + A43 * k3y) * h,
                                   z + (A41 * k1z + A42 * k2z + A43 * k3z) * h,
                                   sigma, rho, beta)
            k5x, k5y, k5z = lorenz(
                t + C5 * h, x + (A51 * k1x + A52 * k2x + A53 * k3x + A54 * k4x) * h,
                y + (A51 * k1y + A52 * k2y + A53 * k3y + A54 * k4y) * h,
                z + (A51 * k1z + A52 * k2z + A53 * k3z + A54 * k4z) * h, sigma, rho, beta)
            k6x, k6y, k6z = lorenz(
                t + h, x + (A61 * k1x + A62 * k2x + A63 * k3x + A64 * k4x + A65 * k5x) * h,
                y + (A61 * k1y + A62 * k2y + A63 * k3y + A64 * k4y + A65 * k5y) * h,
                z + (A61 * k1z + A62 * k2z + A63 * k3z + A64 * k4z + A65 * k5z) * h,
                sigma, rho, beta)
            xn = x + (B1 * k1x + B3 * k3x + B4 * k4x + B5 * k5x + B6 * k6x) * h
            yn = y + (B1 * k1y + B3 * k3y + B4 * k4y + B5 * k5y + B6 * k6y) * h
            zn = z + (B1 * k1z + B3 * k3z + B4 * k4z + B5 * k5z + B6 * k6z) * h
            k7x, k7y, k7z = lorenz(t_new, xn, yn, zn, sigma, rho, beta)  # FSAL
            ex = (E1 * k1x + E3 * k3x + E4 * k4x + E5 * k5x + E6 * k6x + E7 * k7x) * h
            ey = (E1 * k1y + E3 * k3y + E4 * k4y + E5 * k5y + E6 * k6y + E7 * k7y) * h
            ez = (E1 * k1z + E3 * k3z + E4 * k4z + E5 * k5z + E6 * k6z + E7 * k7z) * h
            err = _rms3(ex / (atol + rtol * max(abs(x), abs(xn))),
                        ey / (atol + rtol * max(abs(y), abs(yn))),
                        ez / (atol + rtol * max(abs(z), abs(zn))))
            fac11 = err ** EXPO1
            if err <= 1.0:
                fac = fac11 / err_old ** BETA
                fac = max(1.0 / FAC_MAX, min(1.0 / FAC_MIN, fac / SAFE))
                h_new = h / fac
                if after_reject:
                    h_new = min(h_new, h)
                err_old = max(err, ERR_OLD_FLOOR)
                after_reject = False
                t = t_new
                x, y, z = xn, yn, zn
                k1x, k1y, k1z = k7x, k7y, k7z
                n_acc += 1
            else:
                h_new = h / min(1.0 / FAC_MIN, fac11 / SAFE)
                after_reject = True
                n_rej += 1
            h = h_new
        u[0, i], u[1, i], u[2, i] = x, y, z
        t_out[i] = t
        accepted[i] = n_acc
        rejected[i] = n_rej
        done[i] = t >= t1


@dataclass
class Solution:
    """One arm's result: the final state (3, n), the time reached, the step counts, done."""

    u: np.ndarray
    t: np.ndarray
    accepted: np.ndarray
    rejected: np.ndarray
    done: np.ndarray


def _check_span(t0: float, t1: float, rtol: float, atol: float, max_steps: int) -> None:
    if not (math.isfinite(t0) and math.isfinite(t1) and t1 > t0):
        raise ValueError(f"t_span: expected finite t0 < t1, got ({t0!r}, {t1!r})")
    for name, value in (("rtol", rtol), ("atol", atol)):
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{name}: expected a positive finite float, got {value!r}")
    if not isinstance(max_steps, int | np.integer) or max_steps < 1:
        raise ValueError(f"max_steps: expected a positive integer, got {max_steps!r}")


def solve_numba(ens: Ensemble, t1: float, rtol: float, atol: float, *, t0: float = 0.0,
                max_steps: int = 100_000, integrator=None) -> Solution:
    """``integrator`` (default ``dopri5_numba``, Lorenz; or one ``make_dopri5_numba`` made) on
    ``ens``, allocating the outputs (on ``numba.get_num_threads()``)."""
    _check_span(t0, t1, rtol, atol, max_steps)
    n = ens.n
    sol = Solution(np.empty_like(ens.u0), np.empty(n), np.empty(n, np.int64),
                   np.empty(n, np.int64), np.empty(n, np.bool_))
    (integrator or dopri5_numba)(ens.u0, ens.p, float(t0), float(t1), float(rtol), float(atol),
                                 int(max_steps), sol.u, sol.t, sol.accepted, sol.rejected,
                                 sol.done)
    return sol


# -- the Numba peer of any right-hand side, written out for its width ---------------------------


def verner_tableau(tab) -> dict:
    """``make_dopri5_numba``'s ``tableau`` for a ``hawk.ode`` ``ButcherTableau`` (``VERN7``,
    ``VERN9`` of ``hawk.ode.tableaus``): its stages' nonzero weights, nodes, solution and error
    weights as the generic step writes its sums (ascending stage; ``t + hs`` where the node is
    1), stages numbered from 1 (``f(u_new, t + h)`` is stage ``s + 1``), and the exponents of
    its PI controller (``hawk.ode.control.pi_exponents`` of its estimate's order)."""
    from hawk.ode.control import pi_exponents

    weigh = (lambda weights: [(j, repr(float(w))) for j, w in enumerate(weights, start=1)
                              if w != 0.0])
    stages = [(s, weigh(row), "t + hs" if node == 1.0 else f"t + {node!r} * hs")
              for s, (row, node) in enumerate(zip(tab.a, tab.c, strict=True), start=2)]
    expo, beta = pi_exponents(tab.error_order)
    return dict(stages=stages, b=weigh(tab.b), e=weigh(tab.e), last=len(stages) + 2,
                expo=expo, beta=beta)


def make_dopri5_numba(rhs, k: int, m: int, name: str = "dopri5_peer", tableau=None):
    """The per-sample peer of ``dopri5_numba`` for any right-hand side: ``rhs`` an
    ``@njit(inline="always")`` function ``rhs(t, u_0, ..., u_{k-1}, p_0, ..., p_{m-1})``
    returning a tuple of ``k`` derivatives, ``k`` states and ``m`` parameters per trajectory.
    Returns a function with ``dopri5_numba``'s signature (``u0`` and ``u`` ``(k, n)``, ``p``
    ``(m, n)``), for ``solve_numba(..., integrator=...)``.

    Its source is written out here for ``k`` and ``m``, the way one would write it by hand:
    every state component, stage and parameter a scalar local (``y3``, ``k5_3``, ``p0``), the
    loop over trajectories a ``prange``, nothing allocated per step, no fastmath; then
    compiled by Numba (``parallel=True``; not ``cache=True``: the source is no file).

    It is eagle's ``dopri5_kernel`` step for step, not scipy's: the step is ``min(h, t1 - t)``
    and lands on ``t1`` exactly when that is the rest (scipy computes ``min(t + h, t1) - t``,
    which rounds); an accepted step shortened to land on ``t1`` does not shrink the next one;
    the seventh stage is evaluated at ``t + h``; the controller's memory ``c`` is negated
    after a rejection (the "no growth after a rejection" flag), as in ``hawk.ode.dopri5``. The
    arithmetic is eagle's in the same order (``u + h * (A31 k1 + A32 k2)``, the error norm a
    left-to-right sum over components divided by ``k``), so the accepted and rejected counts
    are eagle's.
    """
    if not (isinstance(k, int) and k >= 1 and isinstance(m, int) and m >= 0):
        raise ValueError(f"k >= 1 states and m >= 0 parameters, got k={k!r}, m={m!r}")
    ks = range(k)
    P = "".join(f", p{j}" for j in range(m))

    def names(prefix):
        return [f"{prefix}{j}" for j in ks]

    def rhs_call(out, t, args):
        return f"{', '.join(out)}, = rhs({t}, {', '.join(args)}{P})"

    def rms(out, terms):
        return f"{out} = math.sqrt(({' + '.join(f'{a} * {a}' for a in terms)}) / {float(k)!r})"

    def stage(j, weights):  # y_c + hs * (W1 * k1_c + W2 * k2_c + ...)
        return [f"y{c} + hs * ({' + '.join(f'{w} * k{s}_{c}' for s, w in weights)})"
                for c in ks]

    A = {2: [(1, "A21")], 3: [(1, "A31"), (2, "A32")], 4: [(1, "A41"), (2, "A42"), (3, "A43")],
         5: [(1, "A51"), (2, "A52"), (3, "A53"), (4, "A54")],
         6: [(1, "A61"), (2, "A62"), (3, "A63"), (4, "A64"), (5, "A65")]}
    node = {2: "t + C2 * hs", 3: "t + C3 * hs", 4: "t + C4 * hs", 5: "t + C5 * hs", 6: "t + hs"}
    body = [f"p{j} = p[{j}, i]" for j in range(m)]
    body += [f"y{c} = u0[{c}, i]" for c in ks]
    body += [rhs_call(names("k1_"), "t0", names("y")),
             # the initial step: hawk.ode.dopri5_start (Hairer's hinit, scipy's)
             *[f"s{c} = atol + abs(y{c}) * rtol" for c in ks],
             *[f"q{c} = y{c} / s{c}" for c in ks], rms("d0", names("q")),
             *[f"q{c} = k1_{c} / s{c}" for c in ks], rms("d1", names("q")),
             "span = t1 - t0",
             "h0 = 1e-6 if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1",
             "h0 = min(h0, span)",
             rhs_call(names("g"), "t0 + h0", [f"y{c} + h0 * k1_{c}" for c in ks]),
             *[f"q{c} = (g{c} - k1_{c}) / s{c}" for c in ks], rms("d2", names("q")),
             "d2 = d2 / h0",
             "if d1 <= 1e-15 and d2 <= 1e-15:",
             "    h1 = max(1e-6, h0 * 1e-3)",
             "else:",
             "    h1 = (0.01 / max(d1, d2)) ** 0.2",
             "h = min(min(100.0 * h0, h1), span)",
             "t = t0",
             "c = ERR_OLD_FLOOR",
             "n_acc = 0",
             "n_rej = 0",
             "while t < t1 and n_acc + n_rej < max_steps:"]
    step = ["hs = min(h, t1 - t)",
            "t_new = t + hs",
            "if hs == t1 - t:",
            "    t_new = t1"]
    if tableau is None:  # Dormand-Prince's, by the names above
        tableau = dict(stages=[(s, A[s], node[s]) for s in range(2, 7)],
                       b=[(1, "B1"), (3, "B3"), (4, "B4"), (5, "B5"), (6, "B6")],
                       e=[(s, f"E{s}") for s in (1, 3, 4, 5, 6, 7)], last=7, expo="EXPO1",
                       beta="BETA")
    last = tableau["last"]
    for s, weights, at in tableau["stages"]:
        step.append(rhs_call(names(f"k{s}_"), at, stage(s, weights)))
    step += [f"yn{c} = {stage(0, tableau['b'])[c]}" for c in ks]
    step.append(rhs_call(names(f"k{last}_"), "t + hs", names("yn")))  # the next step's k1
    step += [f"e{c} = hs * ({' + '.join(f'{w} * k{s}_{c}' for s, w in tableau['e'])})"
             for c in ks]
    step += [f"q{c} = e{c} / (atol + rtol * max(abs(y{c}), abs(yn{c})))" for c in ks]
    step += [rms("err", names("q")),
             f"fac11 = err ** {tableau['expo']}",
             f"fac = max(1.0 / FAC_MAX, min(1.0 / FAC_MIN, fac11 / abs(c) ** {tableau['beta']}"
             " / SAFE))",
             "h_next = hs / fac",
             "if c < 0.0:",
             "    h_next = min(h_next, hs)",
             "if err <= 1.0:",
             "    if hs < h:",
             "        h_next = max(h_next, h)",
             "    c = max(err, ERR_OLD_FLOOR)",
             "    t = t_new",
             *[f"    y{c} = yn{c}" for c in ks],
             *[f"    k1_{c} = k{last}_{c}" for c in ks],
             "    n_acc += 1",
             "else:",
             "    h_next = hs / min(1.0 / FAC_MIN, fac11 / SAFE)",
             "    c = -abs(c)",
             "    n_rej += 1",
             "h = h_next"]
    body += ["    " + line for line in step]
    body += [f"u[{c}, i] = y{c}" for c in ks]
    body += ["t_out[i] = t", "accepted[i] = n_acc", "rejected[i] = n_rej", "done[i] = t >= t1"]
    source = (f"def {name}(u0, p, t0, t1, rtol, atol, max_steps, u, t_out, accepted, rejected,"
              f" done):\n    n = u0.shape[1]\n    for i in prange(n):\n" +
              "".join(f"        {line}\n" for line in body))
    scope = dict(globals(), rhs=rhs)
    exec(compile(source, f"<{name}: make_dopri5_numba, k={k}, m={m}>", "exec"), scope)
    peer = njit(parallel=True, nogil=True, error_model="numpy")(scope[name])
    peer.source = source
    return peer


# -- the diffrax peer ----------------------------------------------------------------------------


def make_diffrax(t1: float, rtol: float, atol: float, *, t0: float = 0.0,
                 max_steps: int = 100_000, batch: int | None = None, vector_field=None,
                 solver=None, controller=None):
    """``jax.jit(jax.vmap(solve_one))``: ``(u0 (n, k), p (n, m)) -> (u (n, k), t (n,),
    accepted (n,), rejected (n,), done (n,))``, float64 on JAX's default (CPU) backend.
    ``vector_field(t, u, p)`` (``u`` (k,), ``p`` (m,), jax.numpy) is the right-hand side;
    default: Lorenz's (k = m = 3).

    With ``batch``, ``jax.jit(lambda u0, p: jax.lax.map(solve_one, (u0, p), batch_size=batch))``
    instead: ``vmap`` over chunks of ``batch`` trajectories, one chunk after another. On a CPU
    that is much faster for a large ensemble (a chunk's arrays stay in cache, and a chunk stops
    with its own slowest trajectory, not the ensemble's).

    ``diffrax.Dopri5`` is the same Dormand-Prince 5(4) pair (FSAL, 5th-order solution kept,
    error ``h sum_j E_j K_j``, the same RMS norm of ``err / (atol + rtol max(|y0|, |y1|))``) and
    diffrax's own initial step is Hairer's hinit too. Its ``PIDController`` computes
    ``factor = safety * (1/err)**((p + i) / q) * (1/err_old)**(-p / q)``; with ``q =
    error_order = 5``, ``pcoeff = 0.2`` and ``icoeff = 0.65`` that is Hairer's ``h_new = h *
    safe * err**-expo1 * err_old**beta`` (``(p + i) / 5 = 0.17 = expo1``, ``p / 5 = 0.04 =
    beta``), with ``safety = 0.9``, ``factormin = 0.2``, ``factormax = 10``. What diffrax does
    not allow, and so differs: an accepted step never shrinks (its factor is clipped to
    ``[1, 10]``, Hairer's to ``[0.2, 10]``); a rejected step's factor includes the PI term and is
    clipped to ``[0.2, 0.9]`` (Hairer: ``max(0.2, 0.9 err**-expo1)``); ``err_old`` starts at 1
    (Hairer: 1e-4) and is not floored at 1e-4; a step after a rejection may grow; a step is
    accepted when ``err < 1`` (Hairer: ``<= 1``). ``max_steps`` bounds attempted steps as in
    the other arms.

    ``solver`` and ``controller`` replace ``diffrax.Dopri5()`` and that controller (both or
    neither: ``stiff_peers.kvaerno5`` gives a stiff pair).
    """
    _check_span(t0, t1, rtol, atol, max_steps)
    import diffrax
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def lorenz_field(t, u, p):
        x, y, z = u[0], u[1], u[2]
        return jnp.stack([p[0] * (y - x), x * (p[1] - z) - y, x * y - p[2] * z])

    term = diffrax.ODETerm(vector_field or lorenz_field)
    if (solver is None) != (controller is None):
        raise ValueError("solver and controller: give both or neither")
    if solver is None:
        solver = diffrax.Dopri5()
        controller = diffrax.PIDController(rtol=rtol, atol=atol, pcoeff=0.2, icoeff=0.65,
                                           dcoeff=0.0, factormin=FAC_MIN, factormax=FAC_MAX,
                                           safety=SAFE, error_order=5)

    if batch is not None and (not isinstance(batch, int) or batch < 1):
        raise ValueError(f"batch: expected a positive int or None, got {batch!r}")

    def solve_one(u0, p):
        sol = diffrax.diffeqsolve(term, solver, t0, t1, None, u0, args=p,
                                  stepsize_controller=controller,
                                  saveat=diffrax.SaveAt(t1=True), max_steps=max_steps,
                                  throw=False)
        return (sol.ys[-1], sol.ts[-1], sol.stats["num_accepted_steps"],
                sol.stats["num_rejected_steps"], sol.result == diffrax.RESULTS.successful)

    if batch is None:
        return jax.jit(jax.vmap(solve_one))
    return jax.jit(lambda u0, p: jax.lax.map(lambda a: solve_one(*a), (u0, p), batch_size=batch))


def solve_diffrax(fn, ens: Ensemble) -> Solution:
    """Run a ``make_diffrax`` function on ``ens`` to completion (``block_until_ready``)."""
    import jax

    out = jax.block_until_ready(fn(ens.u0.T, ens.p.T))
    u, t, acc, rej, done = (np.asarray(a) for a in out)
    return Solution(np.ascontiguousarray(u.T), t, acc.astype(np.int64), rej.astype(np.int64),
                    done.astype(np.bool_))


# -- the scipy references ------------------------------------------------------------------------


def _lorenz_ivp(t, u, sigma, rho, beta):
    x, y, z = u
    return [sigma * (y - x), x * (rho - z) - y, x * y - beta * z]


def reference_dop853(ens: Ensemble, t1: float, *, t0: float = 0.0, rtol: float = 1e-12,
                     atol: float = 1e-12, indices=None, rhs=_lorenz_ivp) -> np.ndarray:
    """Final states (k, len(indices)) by ``solve_ivp(method="DOP853")`` at a tight tolerance,
    of ``rhs(t, u, *p)`` (default: Lorenz's)."""
    indices = range(ens.n) if indices is None else indices
    out = []
    for i in indices:
        sol = solve_ivp(rhs, (t0, t1), ens.u0[:, i], method="DOP853", rtol=rtol,
                        atol=atol, args=tuple(ens.p[:, i]))
        if sol.status != 0:
            raise RuntimeError(f"DOP853 reference failed on trajectory {i}: {sol.message}")
        out.append(sol.y[:, -1])
    return np.stack(out, axis=1)


def reference_rk45(ens: Ensemble, t1: float, rtol: float, atol: float, *, t0: float = 0.0,
                   indices=None, rhs=_lorenz_ivp) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``solve_ivp(method="RK45")`` per trajectory of ``rhs(t, u, *p)`` (default: Lorenz's):
    final states (k, len(indices)), accepted and rejected
    step counts. scipy reports only ``nfev``: RK45 spends 2 evaluations on the first derivative
    and ``select_initial_step``, then 6 per attempted step (FSAL), so attempted = (nfev - 2) / 6
    and rejected = attempted - accepted (accepted = the number of output times - 1)."""
    indices = range(ens.n) if indices is None else indices
    finals, acc, rej = [], [], []
    for i in indices:
        sol = solve_ivp(rhs, (t0, t1), ens.u0[:, i], method="RK45", rtol=rtol,
                        atol=atol, args=tuple(ens.p[:, i]))
        if sol.status != 0:
            raise RuntimeError(f"RK45 reference failed on trajectory {i}: {sol.message}")
        attempted, rest = divmod(sol.nfev - 2, 6)
        assert rest == 0, f"RK45 nfev {sol.nfev} is not 2 + 6k"
        finals.append(sol.y[:, -1])
        acc.append(len(sol.t) - 1)
        rej.append(attempted - (len(sol.t) - 1))
    return np.stack(finals, axis=1), np.array(acc, np.int64), np.array(rej, np.int64)


class HairerRK45(RK45):
    """scipy's ``RK45`` (its tableau, ``rk_step``, error estimate and ``select_initial_step``)
    with Hairer's DOPRI5 PI controller in place of scipy's I-controller; counts the accepted
    and rejected steps. Forward integration only."""

    def __init__(self, fun, t0, y0, t_bound, **kwargs):
        super().__init__(fun, t0, y0, t_bound, **kwargs)
        if self.direction != 1:
            raise ValueError(f"t_bound: expected t_bound > t0, got {t_bound!r} <= {t0!r}")
        self.err_old = ERR_OLD_FLOOR
        self.after_reject = False
        self.n_accepted = 0
        self.n_rejected = 0

    def _step_impl(self):
        t, y, h = self.t, self.y, self.h_abs
        while True:
            t_new = min(t + h, self.t_bound)
            h = t_new - t
            y_new, f_new = rk_step(self.fun, t, y, self.f, h, self.A, self.B, self.C, self.K)
            scale = self.atol + np.maximum(np.abs(y), np.abs(y_new)) * self.rtol
            err = self._estimate_error_norm(self.K, h, scale)
            fac11 = err ** EXPO1
            if err <= 1.0:
                fac = max(1.0 / FAC_MAX, min(1.0 / FAC_MIN, fac11 / self.err_old ** BETA / SAFE))
                h_new = min(h / fac, h) if self.after_reject else h / fac
                self.err_old = max(err, ERR_OLD_FLOOR)
                self.after_reject = False
                self.n_accepted += 1
                break
            h = h / min(1.0 / FAC_MIN, fac11 / SAFE)
            self.after_reject = True
            self.n_rejected += 1
        self.h_previous, self.y_old = h, y
        self.t, self.y, self.f, self.h_abs = t_new, y_new, f_new, h_new
        return True, None


def reference_hairer(ens: Ensemble, t1: float, rtol: float, atol: float, *, t0: float = 0.0,
                     indices=None, rhs=_lorenz_ivp) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``HairerRK45`` per trajectory of ``rhs(t, u, *p)`` (default: Lorenz's): final states
    (k, len(indices)), accepted and rejected counts."""
    _check_span(t0, t1, rtol, atol, 1)
    indices = range(ens.n) if indices is None else indices
    finals, acc, rej = [], [], []
    for i in indices:
        args = tuple(ens.p[:, i])
        solver = HairerRK45(lambda t, u, args=args: np.array(rhs(t, u, *args)), t0,
                            ens.u0[:, i], t1, rtol=rtol, atol=atol)
        while solver.status == "running":
            solver.step()
        if solver.status != "finished":
            raise RuntimeError(f"HairerRK45 failed on trajectory {i}")
        finals.append(solver.y)
        acc.append(solver.n_accepted)
        rej.append(solver.n_rejected)
    return np.stack(finals, axis=1), np.array(acc, np.int64), np.array(rej, np.int64)
