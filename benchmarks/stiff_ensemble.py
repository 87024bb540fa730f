"""A stiff ensemble, Robertson's problem with randomised rate constants: eagle's Rosenbrock23
against a hand-written Numba Rosenbrock23, SciPy's Radau in a loop and diffrax's Kvaerno5 under
``jit(vmap)``, on the CPU.

    python benchmarks/stiff_ensemble.py [--n 10000] [--t1 1e5] [--rtol 1e-6] [--atol 1e-10]
                                        [--threads T] [--rounds 5] [--scipy-n 200]
                                        [--diffrax-n 1000] [--arms ...] [--json PATH]
                                        [--quick]

The ensemble (``stiff_peers.robertson_ensemble``): ``n`` members of Robertson's kinetics with
``k = (0.04, 3e7, 1e4)`` each times ``U(0.5, 2)`` per member, ``u0 = (1, 0, 0)``, from 0 to
``t1 = 1e5``, at rtol 1e-6 and atol 1e-10 (``u1`` stays below 4e-5: atol must be small).

The arms (each on ``--threads`` threads where it can use them):

- ``eagle``: ``eagle.ode.solve(robertson, u0, (0, t1), p=k, method="rosenbrock23", ...)``, the
  Jacobian from ``hawk.jacobian``, the solves from ``hawk.solve``; ratios are taken against
  its ``run()`` alone (``ode_ensemble``'s protocol), and the whole ``solve()`` call is shown;
- ``numba``: ``stiff_peers.rosenbrock23_numba``, the same method, controller, initial step
  and error norm by hand (analytic Jacobian, one 3 x 3 LU per step, a ``prange`` over
  members, scalar locals, no fastmath); its accepted and rejected counts must equal eagle's
  on every member (they do, and its end states are eagle's bit for bit);
- ``scipy_radau``: ``solve_ivp(method="Radau", jac=...)`` member after member, on the first
  ``--scipy-n`` members (one thread: it is a Python loop);
- ``diffrax``: ``jax.jit(jax.vmap(solve_one))`` with ``diffrax.Kvaerno5`` and a
  ``PIDController(rtol, atol)`` (diffrax's defaults otherwise), float64, on the first
  ``--diffrax-n`` members; ``diffrax_map`` (not run unless asked): the same over chunks of
  ``--diffrax-batch`` members (``jax.lax.map``).

Protocol, table and JSON: ``ode_ensemble.measure`` (every arm's first call timed apart, then
``--rounds`` interleaved rounds, the median; ratios per member to eagle's ``run()``, and the
same ratio per round). Checks (a failed one exits non-zero): every member of every arm reaches
``t1``; the Numba peer's step counts equal eagle's on every member; on ``--subset`` members
(evenly spaced within the first ``min(scipy_n, diffrax_n)``) every arm's end state is within
``BOUND`` tolerances of Radau at rtol 1e-10, atol 1e-14 (error in units of ``atol + rtol
|u_ref|``, the largest component).

``--quick``: n = 400, 2 rounds, 3 members checked, 20 for SciPy and 100 for diffrax (unless
given). Writes ``benchmarks/results/stiff_ensemble_t{threads}.json`` (or ``--json``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ode_ensemble  # noqa: E402
import ode_peers  # noqa: E402
import stiff_peers as sp  # noqa: E402

import hawk  # noqa: E402

ARMS = ("eagle", "numba", "scipy_radau", "diffrax", "diffrax_map")
DEFAULT_ARMS = ("eagle", "numba", "scipy_radau", "diffrax")
QUICK = dict(n=400, rounds=2, subset=3, scipy_n=20, diffrax_n=100)
BOUND = 1e3  # tolerances: the largest end-state error against the Radau reference


@hawk.func
def robertson(u, t, k):
    """Robertson's right-hand side, ``k`` the three rates; ``stiff_peers.robertson``'s
    arithmetic."""
    r1 = k[0] * u[0]
    r2 = k[1] * u[1] * u[1]
    r3 = k[2] * u[1] * u[2]
    return hawk.vec3(-r1 + r3, r1 - r2 - r3, r2)


class Arms(ode_ensemble.Arms):
    """``ode_ensemble.Arms`` on Robertson's problem, with SciPy's Radau loop."""

    def __init__(self, ens: ode_peers.Ensemble, args):
        super().__init__(ens, args, f=robertson, integrator=sp.rosenbrock23_numba,
                         field=sp.robertson_field, method="rosenbrock23", solver=sp.kvaerno5)

    def scipy_radau(self) -> ode_peers.Solution:
        a = self.args
        return sp.solve_radau(self.ens, a.t1, a.rtol, a.atol, indices=range(a.scipy_n))


def _fail(message: str) -> None:
    raise SystemExit(f"stiff_ensemble: {message}")


def check(final: dict, ens: ode_peers.Ensemble, args) -> dict:
    """The checks of the module's docstring; returns what they measured."""
    rtol, atol = args.rtol, args.atol
    out = dict(bound=BOUND)
    for arm, sol in final.items():
        if not sol.done.all():
            _fail(f"{arm}: {int((~sol.done).sum())} members did not reach t1 = {args.t1}")
    nb = final["numba"]
    out["per_member"] = {arm: dict(
        n=int(sol.accepted.size), accepted=float(sol.accepted.mean()),
        rejected=float(sol.rejected.mean()) if (sol.rejected >= 0).all() else None,
        accepted_range=[int(sol.accepted.min()), int(sol.accepted.max())])
        for arm, sol in final.items()}
    if "eagle" in final:
        e = final["eagle"]
        differ = (e.accepted != nb.accepted) | (e.rejected != nb.rejected)
        out["eagle_numba"] = dict(
            counts_differ=int(differ.sum()), max_abs=float(np.abs(e.u - nb.u).max()),
            bit_identical=int((e.u == nb.u).all(axis=0).sum()), n=int(nb.u.shape[1]))
        if differ.any():
            _fail(f"the Numba peer's step counts differ from eagle's on {int(differ.sum())} "
                  f"members (the first: {int(np.flatnonzero(differ)[0])})")
    last = min(sol.u.shape[1] for sol in final.values())
    subset = np.unique(np.linspace(0, last - 1, args.subset).astype(np.int64))
    out["subset"] = subset.tolist()
    ref = sp.reference_radau(ens, args.t1, subset)
    out["vs_radau"] = {}
    for arm, sol in final.items():
        err = np.abs(sol.u[:, subset] - ref)
        tols = (err / (atol + rtol * np.abs(ref))).max(axis=0)
        out["vs_radau"][arm] = dict(max_abs=float(err.max()), max_tolerances=float(tols.max()),
                                    median_tolerances=float(np.median(tols)))
        if tols.max() > BOUND:
            _fail(f"{arm}: an end state is {tols.max():.3g} tolerances from the Radau "
                  f"reference (bound {BOUND:g}) on member {subset[tols.argmax()]}")
    return out


def report(results: dict) -> str:
    a, c, m = results["settings"], results["checks"], results["meta"]
    out = [f"Robertson ensemble (k = (0.04, 3e7, 1e4) x U(0.5, 2) each), rtol {a['rtol']:g}, "
           f"atol {a['atol']:g}, t1 = {a['t1']:g}, n = {a['n']:,} (scipy_radau "
           f"{a['scipy_n']:,}, diffrax {a['diffrax_n']:,}); {a['threads']} thread(s); "
           f"{a['rounds']} interleaved rounds after a warm-up",
           *ode_ensemble.arm_table(results), "",
           "per member: median time (ms), steps accepted / rejected (mean), accepted "
           "[min-max]:"]
    for arm, r in results["arms"].items():
        s = c["per_member"][arm]
        rejected = "n/a" if s["rejected"] is None else f"{s['rejected']:.2f}"
        out.append(f"  {arm:<12} {1e3 * r['median_s'] / r['n']:9.4f} ms   "
                   f"{s['accepted']:8.2f} / {rejected:<8} "
                   f"[{s['accepted_range'][0]}-{s['accepted_range'][1]}]")
    if "eagle_numba" in c:
        en = c["eagle_numba"]
        out.append(f"numba vs eagle on all {en['n']:,} members: step counts differ on "
                   f"{en['counts_differ']}, end states bit-identical on "
                   f"{en['bit_identical']:,}, largest difference {en['max_abs']:.3g}")
    out.append(f"end state vs Radau (rtol 1e-10, atol 1e-14) on {len(c['subset'])} members, "
               f"largest error in tolerances (atol + rtol |u_ref|; bound {c['bound']:g}): " +
               ", ".join(f"{k} {v['max_tolerances']:.3g} (median {v['median_tolerances']:.3g})"
                         for k, v in c["vs_radau"].items()))
    out.append("scipy_radau's rejected steps are not counted by SciPy (n/a); its accepted "
               "steps are len(sol.t) - 1")
    out.append(f"load average at start {m['loadavg_start']}, at end {m.get('loadavg_end')}")
    return "\n".join(out)


def _options(parser) -> None:
    parser.add_argument("--scipy-n", type=int, default=None,
                        help=f"run scipy_radau on the first N members only (default 200; "
                             f"{QUICK['scipy_n']} with --quick)")


def main(argv=None) -> None:
    args = ode_ensemble.parse(argv, description=__doc__.splitlines()[0], t1=sp.T1, tol=1e-6,
                              atol=1e-10, name="stiff_ensemble", arms=DEFAULT_ARMS,
                              choices=ARMS, n=10_000, quick=QUICK, diffrax_n=1_000,
                              extra=_options)
    if args.scipy_n is None:
        args.scipy_n = QUICK["scipy_n"] if args.quick else 200
    args.scipy_n = min(args.scipy_n, args.n)
    if args.scipy_n < 1:
        raise SystemExit("stiff_ensemble: --scipy-n: expected a positive integer")
    if "scipy_radau" in args.arms:
        args.subset = min(args.subset, args.scipy_n)
    ens = sp.robertson_ensemble(args.n, args.seed)
    ode_ensemble.measure(
        args, lambda: Arms(ens, args),
        dict(model="robertson", rates=sp.RATES, spread=sp.SPREAD, scipy_n=args.scipy_n,
             u0=[1.0, 0.0, 0.0], reference=dict(method="Radau", rtol=1e-10, atol=1e-14),
             diffrax_solver="Kvaerno5, PIDController(rtol, atol)"),
        lambda final: check(final, ens, args), report)


if __name__ == "__main__":
    main()
