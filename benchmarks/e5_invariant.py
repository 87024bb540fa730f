"""E5 (issue 42 item 3): how far ``rodas5p`` lands from the Bari test set's reference, why, and
what one refinement step of its linear solves would buy. Prints; asserts nothing.

    python benchmarks/e5_invariant.py [--members 24] [--rtols 1e-4 1e-5 1e-6 1e-8]
                                      [--scipy] [--attribute] [--cost 2000]

The problem is the test set's E5 (chemical pyrolysis, four species), written as its Fortran
``feval`` writes it::

    r1 = A y1,  r2 = B y1 y3,  r3 = M C y2 y3,  r4 = C y4
    f1 = -r1 - r2,  f2 = r1 - r3,  f4 = r2 - r4,  f3 = f2 - f4

``A = 7.89e-10``, ``B = 1.1e7``, ``C = 1.13e3``, ``M = 1e6``, ``y(0) = (1.76e-3, 0, 0, 0)``, to
``t = 1e13``, ``atol = 1e-24`` (the test set's). ``y3 - y2 + y4`` is invariant (zero), and the end
state hangs on it: once ``y1`` and ``y4`` are gone, ``y2' = y3' = -M C y2 y3``, so both fall as
``1 / (M C t)``, 8.9e-23 at the end, only if ``y2 - y3`` stayed below about 1e-24; a drift of
``d`` leaves ``|d|`` in one of them and nothing in the other. The order of ``f3 = f2 - f4``
matters: written out as ``r1 - r2 - r3 + r4`` it loses the invariant by the rounding of ``r2``
(1e-7) in every evaluation, and SciPy's Radau and BDF then miss by 1e3-1e4 units too.

Each arm runs ``--members`` copies with ``y1(0)`` moved by ``k * 1e-9`` (relative; the reference
does not move at this scale) so that each copy rounds differently: the error is printed for
member 0 (the unperturbed problem), as the median and the maximum over members, and as the
fraction of members within 10 tolerance units (``|y - ref| / (atol + rtol |ref|)``, worst
component). Arms: eagle's ``rodas5p`` and ``rosenbrock23``, each with ``linsolve="lu"`` and
``linsolve="refined"`` (each stage's solve refined once, ``x += W \\ r``, ``r = b - W x``
summed in doubled precision: Dekker's product and Knuth's sum, Ogita, Rump and Oishi's Dot2;
``hawk.ode.linsolve``); with ``--scipy`` SciPy's Radau and BDF.

With ``--attribute``: a re-implementation of ``rodas5p``'s step and controller in mpmath (40
digits), with the stage quantities rounded to float64 one kind at a time, to say which
rounding moves the answer. Measured on the 2-core machine (load 6-18), 24 members:

=========================  ========================  ================  ==============
arm                        rtol 1e-4                 1e-6              1e-8
=========================  ========================  ================  ==============
rodas5p                    5.5e4 (median 4.6e4)      9.4e3 (1.2e4)     521 (1.8e3)
rodas5p, refined solves    1.26 (median 28, 21% ok)  5.4 (4.1, max 8)  0.15 (0.11)
rosenbrock23               2.8 (median 13, 29% ok)   0.94 (1.0)        0.75 (0.82)
SciPy Radau (8 members)    median 0.54, max 1.3      0.07              0.08
=========================  ========================  ================  ==============

The invariant's largest drift falls from 1.7e-19 / 5.3e-20 / 5e-21 to 1.9e-22 / 1.5e-23 /
1e-24 with the refinement; the refined arm costs 2.5x the time per member at this size (four
states; ``--cost 2000``: 2,000 members at rtol 1e-6, 0.15 s against 0.38 s, load 8). The
attribution (``--attribute``: exact arithmetic but for one rounding, 8 runs each, median /
max): none 0.07 / 0.09 at rtol 1e-4 (1e-6: 0.05 / 0.07); the stage solutions ``k`` rounded
0.06 / 0.10 (0.07 / 0.12); the model's values ``f`` rounded 28 / 47 (2.0 / 9.4); the stage
solves' right-hand sides rounded 44 / 59 (3.9 / 5.5). So:
the solves cost four orders of magnitude and a refinement with an exact residual recovers
them, but the rounding of ``f`` itself at ``rodas5p``'s stages (``|f3|, |f4|`` about 3e-10
there, against 1e-14 on the solution, times ``h gamma``, about 1e3, along the invariant, where
``W``'s eigenvalue is ``1 / (h gamma)``) leaves tens of units at rtol 1e-4 whatever the solver
does.

The table's refined arm was measured as a candidate registered by this script, before it became
``linsolve="refined"`` (the same arithmetic). Elsewhere it changes nothing that matters and
costs compile time: Robertson (20 members, rtol 1e-6 and 1e-8) takes the same steps, keeps its
mass to 1.2e-14 and moves by at most 8e-6 tolerance units; the Brusselator of
``stiff_models.py`` at 8 and 20 states (rtol 1e-6 and 1e-8) takes the same steps and moves by at
most 1.4e-7 units; but the residual is written out, about 25 n**2 ops per solve (8 solves a
step), and the first 20-state ``solve`` took 17.6 s against 4.0 s (load 11). So the library
offers it for at most 8 states (``hawk.ode.linsolve.REFINED_MAX_STATES``); above that it would
need a loop op.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import eagle
import eagle.ode
import hawk
from hawk.ode.linsolve import LINSOLVES

RATES = (7.89e-10, 1.1e7, 1.13e3, 1e6)  # A, B, C, M
Y0 = (1.76e-3, 0.0, 0.0, 0.0)
T1 = 1e13
ATOL = 1e-24
#: the test set's reference solution at t = 1e13
REFERENCE = np.array([0.1152903278711829e-290, 0.8867655517642120e-22,
                      0.8854814626268838e-22, 0.0])


@hawk.func
def e5(u, t, p):
    """The test set's E5, in its Fortran's order (``f3 = f2 - f4``)."""
    r1 = p[0] * u[0]
    r2 = p[1] * u[0] * u[2]
    r3 = p[3] * p[2] * u[1] * u[2]
    r4 = p[2] * u[3]
    f2 = r1 - r3
    f4 = r2 - r4
    return hawk.vec4(-r1 - r2, f2, f2 - f4, f4)


def members(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(u0, p)`` of ``n`` copies, ``y1(0)`` moved by ``k * 1e-9`` (relative) in copy ``k``."""
    u0 = np.zeros((4, n))
    u0[0] = Y0[0] * (1.0 + 1e-9 * np.arange(n))
    return u0, np.repeat(np.array(RATES)[:, None], n, axis=1)


def scaled_errors(u: np.ndarray, rtol: float) -> np.ndarray:
    """The worst component's ``|u - ref| / (atol + rtol |ref|)``, per member (columns)."""
    ref = REFERENCE[:, None]
    return (np.abs(u - ref) / (ATOL + rtol * np.abs(ref))).max(axis=0)


def summary(name: str, rtol: float, errors: np.ndarray, drift: np.ndarray, steps, seconds):
    print(f"{name:22s} rtol {rtol:<6g} member 0 {errors[0]:9.3g}  median {np.median(errors):9.3g}"
          f"  max {errors.max():9.3g}  within 10: {(errors < 10).mean():4.0%}"
          f"  |y3 - y2 + y4| max {np.abs(drift).max():8.2g}  steps {steps}  {seconds:.2f} s")


def run_eagle(method: str, linsolve: str, rtol: float, n: int) -> None:
    u0, p = members(n)
    start = time.perf_counter()
    sol = eagle.ode.solve(e5, u0, (0.0, T1), p=p, method=method, rtol=rtol, atol=ATOL,
                          max_steps=200_000, linsolve=linsolve)
    seconds = time.perf_counter() - start
    name = method if linsolve == "lu" else f"{method}, {linsolve}"
    if not (sol.status == 1).all():
        print(f"{name}: statuses {sorted(set(sol.status.tolist()))}")
    summary(name, rtol, scaled_errors(sol.u, rtol), sol.u[2] - sol.u[1] + sol.u[3],
            int(np.median(sol.accepted)), seconds)


def run_scipy(method: str, rtol: float, n: int) -> None:
    from scipy.integrate import solve_ivp

    a, b, c, m = RATES

    def field(t, y):
        r1, r2, r3, r4 = a * y[0], b * y[0] * y[2], m * c * y[1] * y[2], c * y[3]
        f2, f4 = r1 - r3, r2 - r4
        return [-r1 - r2, f2, f2 - f4, f4]

    def jacobian(t, y):
        j2 = [a, -m * c * y[2], -m * c * y[1], 0.0]
        j4 = [b * y[2], 0.0, b * y[0], -c]
        return np.array([[-a - b * y[2], 0.0, -b * y[0], 0.0], j2,
                         [x - z for x, z in zip(j2, j4, strict=True)], j4])

    u0, _ = members(n)
    ends, steps, start = [], [], time.perf_counter()
    for k in range(n):
        done = solve_ivp(field, (0.0, T1), u0[:, k], method=method, rtol=rtol, atol=ATOL,
                         jac=jacobian)
        ends.append(done.y[:, -1])
        steps.append(done.t.size - 1)
    u = np.array(ends).T
    summary(method, rtol, scaled_errors(u, rtol), u[2] - u[1] + u[3], int(np.median(steps)),
            time.perf_counter() - start)


# -- which rounding matters: rodas5p in mpmath, one kind of stage value rounded to float64 ---------

ROUNDINGS = ("none", "k", "f", "rhs")


def _mp_integrate(rtol: float, rounding: str, h0: float):
    """``rodas5p``'s steps and I-controller on E5 in 40 digits, the state stored in float64
    after each step, and with ``rounding`` one kind of stage quantity rounded to float64: the
    stage solutions ``k``, the model's values ``f`` at the stages, or the right-hand sides of
    the stage solves. Returns the end state (float64)."""
    import mpmath

    from hawk.ode.rodas import FAC_MAX, GAMMA, STAGES, A, C

    mpmath.mp.dps = 40
    mpf = mpmath.mpf
    a, b, c, m = (mpf(x) for x in RATES)
    mc = m * c

    def field(y):
        r1, r2, r3, r4 = a * y[0], b * y[0] * y[2], mc * y[1] * y[2], c * y[3]
        f2, f4 = r1 - r3, r2 - r4
        return [-r1 - r2, f2, f2 - f4, f4]

    def jacobian(y):
        j2 = [a, -mc * y[2], -mc * y[1], mpf(0)]
        j4 = [b * y[2], mpf(0), b * y[0], -c]
        return [[-a - b * y[2], mpf(0), -b * y[0], mpf(0)], j2,
                [x - z for x, z in zip(j2, j4, strict=True)], j4]

    def rounded(v, kind):
        return [mpf(float(x)) for x in v] if rounding == kind else v

    def attempt(u, h):
        jac, scale = jacobian(u), 1 / (mpf(h) * mpf(GAMMA))
        w = mpmath.matrix([[(scale if i == j else 0) - jac[i][j] for j in range(4)]
                           for i in range(4)])

        def combination(weights, ks, count):
            return [sum((mpf(weights[i]) * ks[i][q] for i in range(count)
                         if weights[i] != 0.0), mpf(0)) for q in range(4)]

        ks = [rounded(list(mpmath.lu_solve(w, mpmath.matrix(rounded(field(u), "f")))), "k")]
        for s in range(1, STAGES):
            stage = [x + d for x, d in zip(u, combination(A[s], ks, s), strict=True)]
            rhs = [x + y / h for x, y in zip(rounded(field(stage), "f"),
                                             combination(C[s], ks, s), strict=True)]
            ks.append(rounded(list(mpmath.lu_solve(w, mpmath.matrix(rounded(rhs, "rhs")))),
                              "k"))
        step = combination(A[STAGES - 1], ks, STAGES - 1)
        return [x + d + e for x, d, e in zip(u, step, ks[-1], strict=True)], ks[-1]

    u, t, h, rejected = [mpf(x) for x in Y0], 0.0, h0, False
    while t < T1:
        h_step = min(h, T1 - t)
        u_new, err = attempt(u, h_step)
        norm = np.sqrt(np.mean([(float(e) / (ATOL + rtol * max(abs(float(x)), abs(float(y)))))
                                ** 2 for e, x, y in zip(err, u, u_new, strict=True)]))
        fac = min(FAC_MAX, max(0.2, 0.9 * norm ** -0.2)) if norm > 0 else FAC_MAX
        if rejected:
            fac = min(fac, 1.0)
        if norm <= 1.0:
            u = [mpf(float(x)) for x in u_new]
            t = T1 if h_step == T1 - t else t + h_step
            h, rejected = max(h_step * fac, h) if h_step < h else h_step * fac, False
        else:
            h, rejected = h_step * min(fac, 0.9), True
    return np.array([float(x) for x in u])


def attribute(rtol: float, runs: int = 8) -> None:
    for rounding in ROUNDINGS:
        ends = np.array([_mp_integrate(rtol, rounding, 1e-3 * (1 + 0.01 * k))
                         for k in range(runs)]).T
        errors = scaled_errors(ends, rtol)
        print(f"mpmath, rounded: {rounding:5s} rtol {rtol:<6g} median {np.median(errors):8.3g}"
              f"  max {errors.max():8.3g}  |y3 - y2 + y4| max "
              f"{np.abs(ends[2] - ends[1] + ends[3]).max():8.2g}")


def cost(n: int, repeats: int = 3) -> None:
    """Seconds for ``n`` members at rtol 1e-6, ``rodas5p`` with ``linsolve="lu"`` and
    ``"refined"`` interleaved (best of ``repeats``, after one untimed run of each for the
    compilation)."""
    u0, p = members(n)
    arms = ("lu", "refined")
    times: dict[str, list[float]] = {arm: [] for arm in arms}
    for repeat in range(repeats + 1):
        for arm in arms:
            start = time.perf_counter()
            eagle.ode.solve(e5, u0, (0.0, T1), p=p, method="rodas5p", rtol=1e-6, atol=ATOL,
                            max_steps=200_000, linsolve=arm)
            if repeat:
                times[arm].append(time.perf_counter() - start)
    for arm in arms:
        print(f"cost rodas5p, {arm:8s} {n} members, rtol 1e-6: best of {repeats} "
              f"{min(times[arm]):.3f} s")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=24)
    parser.add_argument("--rtols", type=float, nargs="+", default=[1e-4, 1e-5, 1e-6, 1e-8])
    parser.add_argument("--scipy", action="store_true", help="add SciPy's Radau and BDF")
    parser.add_argument("--attribute", action="store_true",
                        help="which rounding matters (mpmath; a minute or two)")
    parser.add_argument("--cost", type=int, default=0, metavar="N",
                        help="time rodas5p with linsolve='lu' and 'refined' on N members")
    args = parser.parse_args(argv)
    if args.members < 1:
        parser.error(f"--members: expected a positive integer, got {args.members}")
    implicit = [name for name, method in hawk.ode.METHODS.items() if method.implicit]
    for rtol in args.rtols:
        for method in implicit:
            for linsolve in LINSOLVES:
                run_eagle(method, linsolve, rtol, args.members)
        if args.scipy:
            for method in ("Radau", "BDF"):
                run_scipy(method, rtol, min(args.members, 8))
    if args.attribute:
        for rtol in (1e-4, 1e-6):
            attribute(rtol)
    if args.cost > 0:
        cost(args.cost)


if __name__ == "__main__":
    main()
