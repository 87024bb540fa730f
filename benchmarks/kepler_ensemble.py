"""A 6-state ODE ensemble, 100,000 Kepler orbits in 3D with adaptive Dormand-Prince 5(4): eagle
against a hand-written Numba integrator and diffrax on the CPU.

    python benchmarks/kepler_ensemble.py [--n 100000] [--t1 2pi] [--rtol 1e-8] [--atol 1e-8]
                                         [--threads T] [--rounds 5] [--diffrax-n N]
                                         [--diffrax-batch 256] [--arms ...] [--json PATH]
                                         [--quick]

The ensemble (``kepler_peers.kepler_ensemble``): ``n`` orbits of ``r'' = -r / |r|^3`` (mu = 1,
state ``(x, y, z, vx, vy, vz)``, a ``hawk.Vector[6]``), semi-major axis 1, eccentricity ``~ U(0,
0.7)``, orientation uniform (inclination, node and argument of periapsis), each starting at
periapsis, integrated over one period (``t1 = 2 pi``, the same for every orbit) at rtol = atol
= 1e-8 (positions are of order 1 and speeds from 0.7 to 2.4, so atol = rtol makes the error
control relative on every component; no component passes near 0 for long enough to matter).
About 67 accepted steps per orbit on average (59 for a near-circle, up to 86 at e = 0.7),
and 28,147 rejected ones in the whole ensemble (0.4% of the attempts).

The arms, the protocol (a first call timed apart, then ``--rounds`` interleaved rounds; the
median; ratios per orbit to eagle's ``run()``), the CPU pinning, the table and the JSON are
``ode_ensemble.py``'s (see its docstring), on this model:

- ``eagle``: ``eagle.ode.solve(kepler, u0, (0, t1), p=mu, method="dopri5", ...)``, ``kepler`` a
  ``@hawk.func`` of a ``Vector[6]``;
- ``numba``: ``kepler_peers.kepler_numba``, ``ode_peers.make_dopri5_numba`` written out for 6
  states and 1 parameter (a ``prange`` over orbits, every component in a scalar local, eagle's
  step rules and order of arithmetic, no fastmath); compiled in the first call (no disk cache:
  its source is generated);
- ``diffrax`` and ``diffrax_map``: ``ode_peers.make_diffrax`` with ``kepler_peers.kepler_field``
  (``jax.jit(jax.vmap(solve_one))``, and ``jax.lax.map`` over chunks of ``--diffrax-batch``).

Checks (a failed one exits non-zero):

- every orbit of every arm reached ``t1``;
- the Numba peer's accepted and rejected counts equal eagle's on every orbit (the same method,
  step for step), and its end states are printed against eagle's (bit-identical in practice);
- on ``--subset`` orbits, every arm's end state against ``solve_ivp(method="DOP853", rtol =
  atol = 1e-12)``: the largest error in absolute terms and in tolerances (``|u - ref| / (atol +
  rtol |ref|)``), at most ``BOUND`` tolerances: a DP5 orbit's global error grows with every
  step, mostly as a phase drift along the orbit, to about 200 tolerances at e = 0.7;
- the orbit closes: per arm, the largest ``|r(t1) - r0|`` and ``|v(t1) - v0|`` (one period
  later the orbit is back at periapsis) and the largest energy error ``|E(t1) + 1/2|``, on every
  orbit, and the same for the DOP853 reference on the subset (which shows the period is right
  to ~1e-11);
- step counts on the subset against scipy: ``HairerRK45`` (scipy's RK45 stages under Hairer's
  controller; its last step is ``min(t + h, t1) - t``, eagle's ``min(h, t1 - t)``, so a count
  can differ by rounding there) and ``solve_ivp(method="RK45")``.

Writes ``benchmarks/results/kepler_ensemble_t{threads}.json`` (or ``--json``).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kepler_peers as kp  # noqa: E402
import ode_ensemble  # noqa: E402
import ode_peers  # noqa: E402

import hawk  # noqa: E402

BOUND = 1e4  # tolerances: the largest error against DOP853 any arm may have


@hawk.func
def kepler(u, t, p):
    """The 2-body right-hand side: ``u = (x, y, z, vx, vy, vz)``, ``p = mu``; the same
    arithmetic as ``kepler_peers.kepler_rhs``."""
    r = math.sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2])
    d = p / (r * r * r)
    return hawk.vector(u[3], u[4], u[5], -d * u[0], -d * u[1], -d * u[2])


def make_arms(ens: ode_peers.Ensemble, args) -> ode_ensemble.Arms:
    return ode_ensemble.Arms(ens, args, f=kepler, integrator=kp.kepler_numba,
                             field=kp.kepler_field)


def _fail(message: str) -> None:
    raise SystemExit(f"kepler_ensemble: {message}")


def check(final: dict, ens: ode_peers.Ensemble, args) -> dict:
    """The checks in the module's docstring; returns what they measured, exits on a failure."""
    rtol, atol, t1 = args.rtol, args.atol, args.t1
    out = dict(bound=BOUND)
    for arm, sol in final.items():
        if not sol.done.all():
            _fail(f"{arm}: {int((~sol.done).sum())} orbits did not reach t1 = {t1}")
    nb = final["numba"]
    if "eagle" in final:
        e = final["eagle"]
        differ = (e.accepted != nb.accepted) | (e.rejected != nb.rejected)
        out["eagle_numba"] = dict(
            counts_differ=int(differ.sum()), max_abs=float(np.abs(e.u - nb.u).max()),
            bit_identical=int((e.u == nb.u).all(axis=0).sum()))
        if differ.any():
            _fail(f"the Numba peer's step counts differ from eagle's on {int(differ.sum())} "
                  f"orbits (the first: {int(np.flatnonzero(differ)[0])})")
    for arm, sol in final.items():
        if arm.startswith("diffrax"):
            k = sol.u.shape[1]
            out[f"{arm}_numba"] = dict(
                max_abs=float(np.abs(sol.u - nb.u[:, :k]).max()),
                accepted_over_numba=float(sol.accepted.sum() / nb.accepted[:k].sum()),
                rejected_over_numba=float(sol.rejected.sum() / max(nb.rejected[:k].sum(), 1)))
    subset = np.unique(np.linspace(0, args.diffrax_n - 1, args.subset).astype(np.int64))
    out["subset"] = subset.tolist()
    ref = ode_peers.reference_dop853(ens, t1, indices=subset, rhs=kp.kepler_ivp)
    u0 = ens.u0[:, subset]
    out["vs_dop853"] = {}
    for arm, sol in final.items():
        err = np.abs(sol.u[:, subset] - ref)
        tols = (err / (atol + rtol * np.abs(ref))).max(axis=0)
        out["vs_dop853"][arm] = dict(max_abs=float(err.max()), max_tolerances=float(tols.max()))
        if tols.max() > BOUND:
            _fail(f"{arm}: an end state is {tols.max():.3g} tolerances from DOP853 (bound "
                  f"{BOUND:.3g}) on orbit {subset[tols.argmax()]}")
    out["closure"] = {}
    for arm, sol in [("dop853 (subset)", ode_peers.Solution(ref, None, None, None, None)),
                     *final.items()]:
        start = u0 if arm.startswith("dop853") else ens.u0[:, :sol.u.shape[1]]
        dr, dv = kp.closure(sol.u, start)
        out["closure"][arm] = dict(
            position=float(dr.max()), velocity=float(dv.max()),
            energy=float(np.abs(kp.energy(sol.u) - kp.ENERGY).max()))
    _, h_acc, h_rej = ode_peers.reference_hairer(ens, t1, rtol, atol, indices=subset,
                                                 rhs=kp.kepler_ivp)
    _, s_acc, s_rej = ode_peers.reference_rk45(ens, t1, rtol, atol, indices=subset,
                                                rhs=kp.kepler_ivp)
    counts = dict(hairer=dict(accepted=int(h_acc.sum()), rejected=int(h_rej.sum())),
                  scipy_rk45=dict(accepted=int(s_acc.sum()), rejected=int(s_rej.sum())))
    for arm, sol in final.items():
        acc, rej = sol.accepted[subset], sol.rejected[subset]
        counts[arm] = dict(accepted=int(acc.sum()), rejected=int(rej.sum()),
                           differ_from_hairer=int(((acc != h_acc) | (rej != h_rej)).sum()))
    out["subset_counts"] = counts
    return out


def report(results: dict) -> str:
    a, c, m = results["settings"], results["checks"], results["meta"]
    out = [f"Kepler ensemble (6 states, e ~ U(0, {a['e_max']:g}), random orientations), DP5 "
           f"(Hairer's PI controller), rtol {a['rtol']:g}, atol {a['atol']:g}, t1 = "
           f"{a['t1']:.6g} (one period), n = {a['n']:,}; {a['threads']} thread(s); "
           f"{a['rounds']} interleaved rounds after a warm-up",
           *ode_ensemble.arm_table(results)]
    if "eagle_numba" in c:
        en = c["eagle_numba"]
        out.append(f"numba vs eagle on every orbit: step counts differ on {en['counts_differ']}, "
                   f"end states bit-identical on {en['bit_identical']:,}, largest difference "
                   f"{en['max_abs']:.3g}")
    for key, v in c.items():
        if key.startswith("diffrax"):
            out.append(f"{key.replace('_numba', '')} vs numba: largest end-state difference "
                       f"{v['max_abs']:.3g}; accepted {v['accepted_over_numba']:.3f}x, "
                       f"rejected {v['rejected_over_numba']:.3f}x numba's")
    out.append(f"end state vs DOP853 (rtol 1e-12) on {len(c['subset'])} orbits, largest error "
               f"(in tolerances; bound {c['bound']:g}): " + ", ".join(
                   f"{k} {v['max_abs']:.3g} ({v['max_tolerances']:.0f})"
                   for k, v in c["vs_dop853"].items()))
    out.append("after one period, largest |r - r0|, |v - v0|, |E + 1/2|:")
    for arm, v in c["closure"].items():
        out.append(f"  {arm:<16} {v['position']:.3g}, {v['velocity']:.3g}, {v['energy']:.3g}")
    sc = c["subset_counts"]
    out.append(f"steps on the subset (accepted / rejected): scipy RK45 (I-controller) "
               f"{sc['scipy_rk45']['accepted']} / {sc['scipy_rk45']['rejected']}; HairerRK45 "
               f"{sc['hairer']['accepted']} / {sc['hairer']['rejected']}; " + "; ".join(
                   f"{arm} {sc[arm]['accepted']} / {sc[arm]['rejected']} (orbits differing "
                   f"from HairerRK45: {sc[arm]['differ_from_hairer']})"
                   for arm in results["arms"]))
    out.append(f"load average at start {m['loadavg_start']}, at end {m.get('loadavg_end')}")
    return "\n".join(out)


def main(argv=None) -> None:
    args = ode_ensemble.parse(argv, description=__doc__.splitlines()[0], t1=kp.PERIOD,
                              tol=1e-8, name="kepler_ensemble")
    ens = kp.kepler_ensemble(args.n, args.seed)
    ode_ensemble.measure(
        args, lambda: make_arms(ens, args),
        dict(model="kepler", e_max=kp.E_MAX, mu=kp.MU, distributions=dict(
            e=f"U(0, {kp.E_MAX})", cos_inclination="U(-1, 1)", node="U(0, 2 pi)",
            argument_of_periapsis="U(0, 2 pi)", a="1", start="periapsis")),
        lambda final: check(final, ens, args), report)


if __name__ == "__main__":
    main()
