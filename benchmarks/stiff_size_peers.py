"""Stiff ensembles at size (issue 42): eagle's ``rodas5p`` and ``rosenbrock23`` against a
hand-written Numba Rosenbrock23 and Rodas5P, SciPy's Radau and BDF per member and diffrax's
``Kvaerno5`` under ``jit(vmap)``, on the Brusselator at 20, 32 and 64 states and the 20-species
pollution problem POLL, at matched accuracy, on the CPU.

    python benchmarks/stiff_size_peers.py [--states 20 32 64] [--tols 1e-6 1e-8]
                                          [--members N] [--scipy-n 4] [--diffrax-n 16]
                                          [--threads 1 2] [--rounds 3] [--check 4]
                                          [--arms ...] [--poll] [--json PATH] [--quick]

The ensemble: the Brusselator of ``stiff_models`` (``states / 2`` cells), the start
``brusselator_start``, one diffusion per member ``a = 0.02 U(0.8, 1.2)``
(``default_rng(--seed)``), from t = 0 to 10, at ``rtol = atol = tol`` for each ``--tols``.
With ``--poll``, also POLL (``stiff_poll``: the Bari test set's problem, ``k_1`` times ``U(0.8,
1.2)`` per member, t from 0 to 60; ``--states`` with no count runs POLL alone).

The arms (``ARMS``; ``_tN``: on N threads, for each ``--threads``):

- ``eagle_rodas5p_tN``, ``eagle_rosenbrock23_tN``: ``eagle.ode.solve(f, u0, (0, 10), p=a,
  method=..., rtol, atol, threads=N)``, the Jacobian from ``hawk.jacobian``, the whole call
  timed (binding and copies included);
- ``numba_rodas5p_tN``, ``numba_rosenbrock23_tN``: ``stiff_numba.BRUSSELATOR``, the same
  methods by hand (analytic banded Jacobian into a dense array, a dense LU with partial
  pivoting once per step, ``prange`` over members on ``numba.set_num_threads(N)``); their step
  counts are compared with eagle's on every member (they have been equal, end states bit for
  bit);
- ``scipy_radau``, ``scipy_bdf``: ``solve_ivp(method=..., jac=brusselator_jacobian)`` member
  after member on the first ``--scipy-n`` members (one thread);
- ``diffrax``: ``jax.jit(jax.vmap(...))`` of ``diffrax.Kvaerno5`` with ``PIDController(rtol,
  atol)`` (``stiff_peers.kvaerno5``), float64 on the CPU, on the first ``--diffrax-n`` members
  (XLA picks its own threads).

Protocol: per state count and tolerance, every arm is called once untimed (compiles; its time
is shown as ``first``), then ``--rounds`` rounds call the arms in turn (interleaved, one
process) and the median is kept; ``us/member`` is that over the arm's members, ``x eagle`` the
ratio to ``eagle_rodas5p`` on the same threads (one thread for SciPy and diffrax). Accuracy:
on the first ``--check`` members, each arm's end state against ``solve_ivp(method="Radau",
rtol=1e-12, atol=1e-12)`` in tolerance units, ``|u - u_ref| / (atol + rtol |u_ref|)``, the
largest over components and members (``err``). The load (``os.getloadavg``) is recorded
before and after each block and printed with it: the machine may be shared.

Each model is a ``Model`` record (its ensemble, eagle's func, SciPy's functions, the Numba
peers and diffrax's field), so another is a function giving one.

At matched accuracy (``matched``): each arm's run against the cheapest ``eagle_rodas5p_t1``
run at least as accurate; Radau and Kvaerno5 land far inside their tolerance, so eagle needs a
tighter one to match them (``--tols 1e-10 --arms eagle_rodas5p``, then ``--summarise`` both
files).

``--quick``: 20 states, tol 1e-6, 64 members, 2 rounds, 2 SciPy and 4 diffrax members.
Writes JSON to ``--json`` (default ``benchmarks/results/stiff_size_peers.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ode_peers  # noqa: E402
import stiff_models  # noqa: E402
import stiff_numba  # noqa: E402
import stiff_peers  # noqa: E402

import eagle.ode  # noqa: E402

#: eagle's methods measured: its implicit ones; those with a Numba peer get Numba arms
METHODS = eagle.ode.IMPLICIT

T1 = 10.0
DIFFUSION, SPREAD = 0.02, (0.8, 1.2)
REFERENCE = dict(method="Radau", rtol=1e-12, atol=1e-12)
PEERS = ("scipy_radau", "scipy_bdf", "diffrax")
#: members for eagle and Numba by state count, unless --members (cost grows about as states^2
#: to states^3 per member)
MEMBERS = {20: 512, 32: 256, 64: 64}
QUICK = dict(states=[20], tols=[1e-6], members=64, rounds=2, scipy_n=2, diffrax_n=4, check=2)


@dataclass(frozen=True)
class Model:
    """One benchmarked model: ``label`` (printed), ``states``, ``t1`` (from 0), ``ensemble(n,
    seed)``, ``load(folder)`` its ``@hawk.func f(u, t, p)``, ``numpy`` and ``jacobian`` for
    ``solve_ivp`` (``(t, y, p)``), ``peers`` the Numba integrators by method
    (``stiff_numba.make_peers``) and ``field`` diffrax's right-hand side."""

    label: str
    states: int
    t1: float
    ensemble: Callable
    load: Callable
    numpy: Callable
    jacobian: Callable
    peers: dict
    field: Callable


def brusselator(states: int) -> Model:
    """The Brusselator of ``states`` states (``stiff_models``; the diffusion ``a`` per
    member)."""
    return Model(f"Brusselator, {states} states", states, T1,
                 lambda n, seed: brusselator_ensemble(states, n, seed),
                 lambda folder: stiff_models.load(states // 2, folder),
                 stiff_models.brusselator_numpy, stiff_models.brusselator_jacobian,
                 stiff_numba.BRUSSELATOR, brusselator_field)


def poll() -> Model:
    """The pollution problem (``stiff_poll``; ``k_1`` times ``U(0.8, 1.2)`` per member)."""
    import stiff_poll

    def ensemble(n, seed):
        s = np.random.default_rng(seed).uniform(*SPREAD, n)
        u0 = np.repeat(stiff_poll.poll_start()[:, None], n, axis=1)
        return ode_peers.Ensemble(np.ascontiguousarray(u0), np.ascontiguousarray(s[None, :]))

    return Model("POLL (pollution), 20 species", stiff_poll.SPECIES, stiff_poll.T1, ensemble,
                 stiff_poll.load, stiff_poll.poll_numpy, stiff_poll.poll_jacobian,
                 stiff_poll.PEERS, stiff_poll.poll_field)


def brusselator_ensemble(states: int, n: int, seed: int) -> ode_peers.Ensemble:
    """``n`` members of the ``states``-state Brusselator: the same start, ``a = 0.02 U(0.8,
    1.2)`` each."""
    if states < 2 or states % 2:
        raise SystemExit(f"stiff_size_peers: --states: expected even counts >= 2, got {states}")
    a = DIFFUSION * np.random.default_rng(seed).uniform(*SPREAD, n)
    u0 = np.repeat(stiff_models.brusselator_start(states // 2)[:, None], n, axis=1)
    return ode_peers.Ensemble(np.ascontiguousarray(u0), np.ascontiguousarray(a[None, :]))


def brusselator_field(t, y, p):
    """``stiff_models.brusselator_numpy`` in jax.numpy, for diffrax (``p`` = (a,))."""
    import jax.numpy as jnp

    cells = y.shape[0] // 2
    one, three = jnp.ones(1, y.dtype), jnp.full(1, 3.0, y.dtype)
    u = jnp.concatenate((one, y[0::2], one))
    v = jnp.concatenate((three, y[1::2], three))
    d = p[0] * float((cells + 1) ** 2)
    ui, vi = u[1:-1], v[1:-1]
    du = 1.0 + ui * ui * vi - 4.0 * ui + d * (u[:-2] - 2.0 * ui + u[2:])
    dv = 3.0 * ui - ui * ui * vi + d * (v[:-2] - 2.0 * vi + v[2:])
    return jnp.stack((du, dv), axis=1).reshape(-1)


def solve_scipy(model: Model, ens: ode_peers.Ensemble, method: str, rtol: float, atol: float,
                members: int) -> ode_peers.Solution:
    """``solve_ivp(method=..., jac=...)`` on the first ``members`` members, one after
    another; accepted steps ``len(t) - 1``, rejected -1 (SciPy does not count them)."""
    from scipy.integrate import solve_ivp

    finals, ts, acc, done = [], [], [], []
    for i in range(members):
        sol = solve_ivp(model.numpy, (0.0, model.t1), ens.u0[:, i], method=method, rtol=rtol,
                        atol=atol, jac=model.jacobian, args=(float(ens.p[0, i]),))
        finals.append(sol.y[:, -1])
        ts.append(sol.t[-1])
        acc.append(len(sol.t) - 1)
        done.append(sol.status == 0)
    return ode_peers.Solution(np.stack(finals, axis=1), np.array(ts), np.array(acc, np.int64),
                              np.full(members, -1, np.int64), np.array(done, np.bool_))


class Arms:
    """The arms of one state count and tolerance; ``run(name)`` gives ``(Solution, seconds)``."""

    def __init__(self, model: Model, ens: ode_peers.Ensemble, f, tol: float, args):
        self.model, self.ens, self.f, self.tol, self.args = model, ens, f, tol, args
        self.diffrax_fn = None
        m = args.diffrax_n
        self.diffrax_ens = ode_peers.Ensemble(np.ascontiguousarray(ens.u0[:, :m]),
                                              np.ascontiguousarray(ens.p[:, :m]))

    def names(self) -> list[str]:
        """The arms asked for, in the order they run each round."""
        out = []
        for kind in ("eagle", "numba"):
            for method in METHODS:
                if kind == "eagle" or method in self.model.peers:
                    out += [f"{kind}_{method}_t{t}" for t in self.args.threads]
        return [a for a in out + list(PEERS) if _chosen(a, self.args.arms)]

    def members(self, name: str) -> int:
        return {"scipy_radau": self.args.scipy_n, "scipy_bdf": self.args.scipy_n,
                "diffrax": self.args.diffrax_n}.get(name, self.ens.n)

    def run(self, name: str) -> tuple[ode_peers.Solution, float]:
        start = time.perf_counter()
        sol = self._call(name)
        return sol, time.perf_counter() - start

    def _call(self, name: str) -> ode_peers.Solution:
        tol, ens = self.tol, self.ens
        if name.startswith(("eagle_", "numba_")):
            kind, method, threads = name.split("_")
            threads = int(threads[1:])
            if kind == "eagle":
                sol = eagle.ode.solve(self.f, ens.u0, (0.0, self.model.t1), p=ens.p[0],
                                      method=method, rtol=tol, atol=tol, threads=threads)
                return ode_peers.Solution(np.asarray(sol.u), np.asarray(sol.t),
                                          np.asarray(sol.accepted), np.asarray(sol.rejected),
                                          np.asarray(sol.status) == 1)
            import numba

            numba.set_num_threads(threads)
            return ode_peers.solve_numba(ens, self.model.t1, tol, tol,
                                         integrator=self.model.peers[method])
        if name.startswith("scipy_"):
            method = {"scipy_radau": "Radau", "scipy_bdf": "BDF"}[name]
            return solve_scipy(self.model, ens, method, tol, tol, self.args.scipy_n)
        if self.diffrax_fn is None:
            solver, controller = stiff_peers.kvaerno5(tol, tol)
            self.diffrax_fn = ode_peers.make_diffrax(self.model.t1, tol, tol,
                                                     vector_field=self.model.field,
                                                     solver=solver, controller=controller)
        return ode_peers.solve_diffrax(self.diffrax_fn, self.diffrax_ens)


def _chosen(name: str, patterns) -> bool:
    return patterns is None or any(name.startswith(p) for p in patterns)


def reference(model: Model, ens: ode_peers.Ensemble, members: int) -> np.ndarray:
    """End states (states, members) of the first ``members`` members by Radau at rtol = atol =
    1e-12."""
    sol = solve_scipy(model, ens, "Radau", REFERENCE["rtol"], REFERENCE["atol"], members)
    if not sol.done.all():
        raise SystemExit("stiff_size_peers: the Radau reference did not reach t1")
    return sol.u


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def block(model: Model, tol: float, args, folder: str) -> dict:
    """Measure every arm on one model and tolerance (the module docstring's protocol)."""
    states = model.states
    n = args.members or MEMBERS.get(states, 64)
    ens = model.ensemble(n, args.seed)
    arms = Arms(model, ens, model.load(folder), tol, args)
    names = arms.names()
    out = dict(model=model.label, states=states, t1=model.t1, tol=tol, members=n,
               load_start=_load(), arms={})
    ref = reference(model, ens, args.check)
    first, final = {}, {}
    for name in names:  # untimed for the medians: compiles
        final[name], first[name] = arms.run(name)
        print(f"  [{states} states, tol {tol:g}] {name}: first call {first[name]:.2f} s",
              flush=True)
    times = {name: [] for name in names}
    for _ in range(args.rounds):
        for name in names:
            final[name], seconds = arms.run(name)
            times[name].append(seconds)
    out["load_end"] = _load()
    for name in names:
        sol, m = final[name], arms.members(name)
        err = np.abs(sol.u[:, :args.check] - ref) / (tol + tol * np.abs(ref))
        median = statistics.median(times[name])
        out["arms"][name] = dict(
            members=m, first_s=first[name], times_s=times[name], median_s=median,
            us_per_member=1e6 * median / m, done=int(sol.done.sum()),
            accepted=float(sol.accepted.mean()),
            rejected=float(sol.rejected.mean()) if (sol.rejected >= 0).all() else None,
            err_max=float(err.max()), err_median=float(np.median(err.max(axis=0))))
    for name, r in out["arms"].items():
        threads = name.rsplit("_t", 1)[1] if name.startswith(("eagle", "numba")) else "1"
        base = out["arms"].get(f"eagle_rodas5p_t{threads}")
        r["x_eagle"] = r["us_per_member"] / base["us_per_member"] if base else None
    for method in METHODS:
        for t in args.threads:
            e, nb = final.get(f"eagle_{method}_t{t}"), final.get(f"numba_{method}_t{t}")
            if e is not None and nb is not None:
                differ = (e.accepted != nb.accepted) | (e.rejected != nb.rejected)
                out.setdefault("numba_vs_eagle", {})[f"{method}_t{t}"] = dict(
                    counts_differ=int(differ.sum()),
                    bit_identical=int((e.u == nb.u).all(axis=0).sum()), members=n)
    return out


def table(r: dict) -> str:
    lines = [f"{r['model']}, rtol = atol = {r['tol']:g}, t 0..{r['t1']:g}, "
             f"{r['members']} members (eagle, numba); load {r['load_start']} -> "
             f"{r['load_end']}",
             f"  {'arm':<24}{'n':>5}{'first s':>9}{'median s':>10}{'us/member':>12}"
             f"{'x eagle':>9}{'acc':>8}{'rej':>6}{'err':>9}{'done':>7}"]
    for name, a in r["arms"].items():
        ratio = "" if a["x_eagle"] is None else f"{a['x_eagle']:.2f}"
        rej = "n/a" if a["rejected"] is None else f"{a['rejected']:.1f}"
        lines.append(f"  {name:<24}{a['members']:>5}{a['first_s']:>9.2f}{a['median_s']:>10.4f}"
                     f"{a['us_per_member']:>12.1f}{ratio:>9}{a['accepted']:>8.1f}{rej:>6}"
                     f"{a['err_max']:>9.3g}{a['done']:>4}/{a['members']:<3}")
    for key, v in r.get("numba_vs_eagle", {}).items():
        lines.append(f"  numba vs eagle {key}: step counts differ on {v['counts_differ']} of "
                     f"{v['members']} members, end states bit-identical on "
                     f"{v['bit_identical']}")
    return "\n".join(lines)


def matched(blocks: list[dict], baseline: str = "eagle_rodas5p_t1") -> list[str]:
    """At matched accuracy: for each arm and tolerance of a model, the cheapest run of
    ``baseline`` (over the tolerances measured) that is at least as accurate (its largest error
    times its tolerance, a relative error, at most the arm's), and the ratio of their times per
    member. Tolerances give different errors on different arms (Radau and Kvaerno5 land well
    inside theirs, rosenbrock23 outside): this compares what each buys at equal error."""
    lines = [f"at matched accuracy, against the cheapest {baseline} at least as accurate "
             f"(relative error = err x tol):"]
    models = dict.fromkeys(b["model"] for b in blocks)
    for model in models:
        runs = [b for b in blocks if b["model"] == model]
        base = [(b["arms"][baseline]["err_max"] * b["tol"], b["arms"][baseline]["us_per_member"],
                 b["tol"]) for b in runs if baseline in b["arms"]]
        for b in runs:
            for name, a in b["arms"].items():
                if name == baseline:
                    continue
                error = a["err_max"] * b["tol"]
                fits = [x for x in base if x[0] <= error]
                if not fits:
                    lines.append(f"  {model}, {name} at tol {b['tol']:g}: relative error "
                                 f"{error:.2g}, no {baseline} run as accurate")
                    continue
                _, us, tol = min(fits, key=lambda x: x[1])
                mine = a["us_per_member"]
                lines.append(f"  {model}, {name} at tol {b['tol']:g}: relative error "
                             f"{error:.2g}, {mine:.0f} us/member; {baseline} at tol {tol:g}: "
                             f"{us:.0f} us/member; ratio {mine / us:.2f}")
    return lines


def parse(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--states", type=int, nargs="*", default=[20, 32, 64],
                   help="the Brusselator's state counts (none: POLL only, with --poll)")
    p.add_argument("--poll", action="store_true", help="also the pollution problem POLL")
    p.add_argument("--tols", type=float, nargs="+", default=[1e-6, 1e-8])
    p.add_argument("--members", type=int, default=None,
                   help=f"eagle and Numba members (default by states: {MEMBERS})")
    p.add_argument("--scipy-n", type=int, default=4)
    p.add_argument("--diffrax-n", type=int, default=16)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--check", type=int, default=4,
                   help="members checked against the Radau reference (at most --scipy-n and "
                        "--diffrax-n)")
    p.add_argument("--arms", nargs="+", default=None,
                   help="run only the arms whose names start so (eagle, numba_rodas5p, ...)")
    p.add_argument("--seed", type=int, default=2024)
    p.add_argument("--json", type=Path,
                   default=Path(__file__).resolve().parent / "results" / "stiff_size_peers.json")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--summarise", type=Path, nargs="+", default=None, metavar="JSON",
                   help="run nothing: print the matched-accuracy summary of these results "
                        "(from runs at different tolerances or arms, together)")
    args = p.parse_args(argv)
    if args.quick:
        for key, value in QUICK.items():
            if p.get_default(key) == getattr(args, key):
                setattr(args, key, value)
    for key in ("scipy_n", "diffrax_n", "rounds", "check"):
        if getattr(args, key) < 1:
            raise SystemExit(f"stiff_size_peers: --{key.replace('_', '-')}: expected a "
                             f"positive integer")
    if args.members is not None and args.members < 1:
        raise SystemExit("stiff_size_peers: --members: expected a positive integer")
    args.check = min(args.check, args.scipy_n, args.diffrax_n, args.members or args.check)
    return args


def main(argv=None) -> None:
    args = parse(argv)
    if args.summarise:
        blocks = [b for path in args.summarise for b in json.loads(path.read_text())["blocks"]]
        print("\n".join(matched(blocks)))
        return
    results = dict(settings={k: (str(v) if isinstance(v, Path) else v)
                             for k, v in vars(args).items()},
                   meta=dict(cpu=platform.processor() or platform.machine(),
                             cores=os.cpu_count(), load_start=_load(),
                             reference=REFERENCE, t1=T1, diffusion=[DIFFUSION, SPREAD]),
                   blocks=[])
    with tempfile.TemporaryDirectory() as folder:
        models = [brusselator(states) for states in args.states] + ([poll()] if args.poll else [])
        for model in models:
            for tol in args.tols:
                r = block(model, tol, args, folder)
                results["blocks"].append(r)
                print(table(r), flush=True)
    results["meta"]["load_end"] = _load()
    print("\n".join(matched(results["blocks"])))
    print("x eagle: per member, against eagle_rodas5p on the same threads (one for SciPy and "
          "diffrax); err: the largest end-state error on the checked members in tolerances "
          "(atol + rtol |u_ref|), reference Radau at rtol = atol = 1e-12; SciPy does not count "
          "rejected steps (n/a)")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=1))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
