"""A Lorenz ensemble with an adaptive Dormand-Prince 5(4) per trajectory: eagle against Numba and
diffrax on the CPU.

    python benchmarks/ode_ensemble.py [--n 100000] [--t1 5] [--rtol 1e-6] [--atol 1e-6]
                                      [--threads T] [--rounds 5] [--diffrax-n N]
                                      [--diffrax-batch 256] [--arms ...] [--json PATH]
                                      [--quick]

The ensemble (``ode_peers.lorenz_ensemble``): ``n`` trajectories of ``x' = sigma (y - x), y' =
x (rho - z) - y, z' = x y - beta z`` with ``sigma ~ U(9, 11)``, ``rho ~ U(20, 30)``, ``beta ~
U(2.5, 3)`` and ``u0 = (1, 1, 1) + U(-0.1, 0.1)^3``, integrated from 0 to ``t1`` (5: about 180
attempted steps each at rtol = atol = 1e-6, from 140 to 210) by the same method in every arm
(DP5 with scipy's RK45 tableau, FSAL, Hairer's PI controller and initial step; see
``ode_peers``):

- ``eagle``: ``eagle.ode.solve(lorenz, u0, (0, t1), p=params, method="dopri5", ...)`` with a
  ``@hawk.func`` right-hand side; the first call (compile and run) is timed apart. Every
  round calls ``solve`` again (the kernel is cached) and records two times: ``run()`` alone
  (``sol.report.wall_s - build_s``: the loop over steps, what the ratios are taken against)
  and the whole ``solve()`` call (argument checks, arrays, the first-step kernel, binding);
- ``numba``: the hand-written per-sample peer (``ode_peers.dopri5_numba``: ``prange`` over
  trajectories, scalar locals, no fastmath, ``cache=True``), warmed up before timing;
- ``diffrax``: ``jax.jit(jax.vmap(solve_one))`` with ``diffrax.Dopri5`` and a ``PIDController``
  set to Hairer's constants as far as diffrax allows (``ode_peers.make_diffrax`` says where it
  differs), float64, ``SaveAt(t1=True)``, on JAX's CPU backend; the first call (trace, compile
  and run) is timed apart; ``block_until_ready``. ``--diffrax-n`` runs it on the first N
  trajectories only (its rates are per trajectory then; ratios are computed per trajectory);
- ``diffrax_map``: the same ``solve_one`` under ``jax.lax.map(..., batch_size=B)`` (``vmap`` over
  chunks of ``--diffrax-batch`` = 256 trajectories, one chunk after another): what a diffrax
  user does when plain ``vmap`` over the whole ensemble is slow on a CPU (it is, by 4-5x at
  n = 100,000: every vmapped operation streams 100,000-lane arrays through memory, and every
  lane steps until the ensemble's slowest is done). B = 256 was the fastest of 32, 64, 128,
  256, 1024 and 4096 on the machine below (1 thread, n = 100,000).
  XLA's thread pools cannot be sized per call, so at ``--threads T`` below the CPUs available
  the whole process is pinned to T CPUs (``sched_setaffinity``, before JAX is imported) and
  every arm runs on that many cores (at one thread XLA's multi-threaded Eigen is also turned
  off). Each arm's CPU share is reported.

Protocol: every arm is run once untimed (compile/warm-up, timed as "first call"), then
``--rounds`` rounds, each running every arm once in turn (interleaved), wall and process CPU
time recorded. Reported per arm: median wall time [min-max], trajectories/s and attempted
steps/s at the median (attempted = accepted + rejected, summed over the arm's trajectories),
the arm's time over eagle's (>1: eagle faster; per trajectory where ``--diffrax-n`` < n), the
total accepted and rejected steps and the CPU share (process CPU time / (wall x threads)).

Checks (before anything is printed; a failed check exits non-zero):

- every trajectory of every arm reached ``t1``;
- on ``--subset`` trajectories (evenly spaced), every arm's end state is within
  ``(atol + rtol |u_ref|) * GROWTH * exp(LYAPUNOV * t1)`` of ``solve_ivp(method="DOP853",
  rtol=atol=1e-12)``: a tolerance-proportional method's global error grows by a few tolerances
  per unit time (``GROWTH = 10`` is that margin) and Lorenz amplifies earlier errors by at most
  about ``exp(0.91 t)`` (0.91: its largest Lyapunov exponent at the classic parameters);
- on every trajectory the arms agree with each other to twice that bound (each is within it of
  the truth); the largest scaled difference is printed (in practice far below the bound), and
  how many trajectories' accepted or rejected counts differ from the Numba peer's;
- step counts on the subset: the Numba peer's accepted and rejected steps must equal those of
  ``ode_peers.HairerRK45`` (scipy's RK45 stages under Hairer's controller) trajectory by
  trajectory; for eagle the number of trajectories whose counts differ from it is printed;
  every arm's accepted, rejected and attempted totals over scipy's ``solve_ivp(method="RK45")``
  (an I-controller) are printed: the issue asks for accepted steps within 20%.

``--quick``: n = 2,000, 2 rounds, 5 trajectories checked against scipy (each unless given).

Writes ``benchmarks/results/ode_ensemble_t{threads}.json`` (or ``--json``): every raw sample,
the checks, the step counts, the settings and the machine (as ``cpu_loop.py`` records it).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numba  # noqa: E402
import ode_peers  # noqa: E402
from cpu_loop import _loadavg, machine  # noqa: E402

import eagle  # noqa: E402
import hawk  # noqa: E402

GROWTH, LYAPUNOV = 10.0, 0.91
ARMS = ("eagle", "numba", "diffrax", "diffrax_map")
QUICK = dict(n=2_000, rounds=2, subset=5)  # --quick


@hawk.func
def lorenz(u, t, p):
    """The Lorenz right-hand side: ``u`` and ``p = (sigma, rho, beta)`` are Vec3s."""
    return hawk.vec3(p.x * (u.y - u.x), u.x * (p.y - u.z) - u.y, u.x * u.y - p.z * u.z)


class Arms:
    """The arms on one ensemble; each call returns an ``ode_peers.Solution``. The model is
    Lorenz's unless given: ``f`` the ``@hawk.func`` eagle integrates, ``integrator`` the Numba
    peer (``ode_peers.make_dopri5_numba``), ``field`` diffrax's right-hand side (a ``p`` of one
    row is passed to eagle as one number per sample), ``method`` eagle's (``"dopri5"``), and
    ``solver(rtol, atol)`` diffrax's ``(solver, controller)`` (``ode_peers.make_diffrax``'s
    Dopri5 and Hairer-like controller unless given)."""

    def __init__(self, ens: ode_peers.Ensemble, args: argparse.Namespace, f=None,
                 integrator=None, field=None, method: str = "dopri5", solver=None):
        self.ens, self.args = ens, args
        self.f, self.integrator, self.field = f or lorenz, integrator, field
        self.method, self.solver = method, solver
        self.diffrax_ens = ens if args.diffrax_n >= ens.n else ode_peers.Ensemble(
            np.ascontiguousarray(ens.u0[:, :args.diffrax_n]),
            np.ascontiguousarray(ens.p[:, :args.diffrax_n]))
        self.diffrax_fn = {}

    def eagle(self) -> tuple[ode_peers.Solution, dict]:
        import eagle.ode

        a = self.args
        p = self.ens.p[0] if self.ens.p.shape[0] == 1 else self.ens.p
        sol = eagle.ode.solve(self.f, self.ens.u0, (0.0, a.t1), p=p,
                              method=self.method, rtol=a.rtol, atol=a.atol,
                              max_steps=a.max_steps, threads=a.threads)
        report = sol.report  # run() alone: its wall time less the one-time build
        return ode_peers.Solution(np.asarray(sol.u), np.asarray(sol.t),
                                  np.asarray(sol.accepted), np.asarray(sol.rejected),
                                  np.asarray(sol.done)), dict(run_s=report.wall_s -
                                                              report.build_s,
                                                              build_s=report.build_s)

    def numba(self) -> ode_peers.Solution:
        a = self.args
        return ode_peers.solve_numba(self.ens, a.t1, a.rtol, a.atol, max_steps=a.max_steps,
                                     integrator=self.integrator)

    def diffrax(self, batch: int | None = None) -> ode_peers.Solution:
        a = self.args
        if batch not in self.diffrax_fn:
            solver, controller = self.solver(a.rtol, a.atol) if self.solver else (None, None)
            self.diffrax_fn[batch] = ode_peers.make_diffrax(a.t1, a.rtol, a.atol,
                                                            max_steps=a.max_steps, batch=batch,
                                                            vector_field=self.field,
                                                            solver=solver, controller=controller)
        return ode_peers.solve_diffrax(self.diffrax_fn[batch], self.diffrax_ens)

    def diffrax_map(self) -> ode_peers.Solution:
        return self.diffrax(self.args.diffrax_batch)

    def run(self, arm: str) -> tuple[ode_peers.Solution, dict]:
        cpu0, start = time.process_time(), time.perf_counter()
        sol = getattr(self, arm)()
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu0
        sol, extra = sol if isinstance(sol, tuple) else (sol, {})
        return sol, dict(wall_s=wall, cpu_s=cpu, **extra)


def limit_cpus(threads: int) -> list[int] | None:
    """Pin this process to ``threads`` CPUs when it may use more, so that every arm, XLA's
    thread pools included (they cannot be sized per call), runs on that many cores; at one
    thread also turn off XLA's multi-threaded Eigen. Returns the CPUs pinned to, or None."""
    if threads == 1:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                                   " --xla_cpu_multi_thread_eigen=false").strip()
    if not hasattr(os, "sched_getaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    if threads >= len(cpus):
        return None
    os.sched_setaffinity(0, cpus[:threads])
    return cpus[:threads]


def _fail(message: str) -> None:
    raise SystemExit(f"ode_ensemble: {message}")


def _scaled(a: np.ndarray, b: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """Per trajectory, the largest component of |a - b| / (atol + rtol max(|a|, |b|))."""
    return (np.abs(a - b) / (atol + rtol * np.maximum(np.abs(a), np.abs(b)))).max(axis=0)


def check(final: dict, ens: ode_peers.Ensemble, args: argparse.Namespace) -> dict:
    """The checks in the module docstring; returns what they measured, exits on a failure."""
    rtol, atol, t1 = args.rtol, args.atol, args.t1
    bound = GROWTH * math.exp(LYAPUNOV * t1)
    out = dict(bound=bound)
    for arm, sol in final.items():
        if not sol.done.all():
            _fail(f"{arm}: {int((~sol.done).sum())} trajectories did not reach t1 = {t1}")
    subset = np.unique(np.linspace(0, args.diffrax_n - 1, args.subset).astype(np.int64))
    ref = ode_peers.reference_dop853(ens, t1, indices=subset)
    out["subset"] = subset.tolist()
    out["vs_dop853"] = {}
    for arm, sol in final.items():
        err = (np.abs(sol.u[:, subset] - ref) / (atol + rtol * np.abs(ref))).max(axis=0)
        out["vs_dop853"][arm] = float(err.max())
        if err.max() > bound:
            _fail(f"{arm}: an end state is {err.max():.3g} tolerances from DOP853 (bound "
                  f"{bound:.3g}) on trajectory {subset[err.argmax()]}")
    out["cross"] = {}
    for arm, sol in final.items():
        if arm == "numba":
            continue
        k = sol.u.shape[1]
        diff = _scaled(sol.u, final["numba"].u[:, :k], rtol, atol)
        numba_sol = final["numba"]
        out["cross"][f"{arm}-numba"] = dict(
            max=float(diff.max()), median=float(np.median(diff)),
            counts_differ=int(((sol.accepted != numba_sol.accepted[:k])
                               | (sol.rejected != numba_sol.rejected[:k])).sum()))
        if diff.max() > 2 * bound:
            _fail(f"{arm} and numba differ by {diff.max():.3g} tolerances on trajectory "
                  f"{diff.argmax()} (bound {2 * bound:.3g})")
    _, h_acc, h_rej = ode_peers.reference_hairer(ens, t1, rtol, atol, indices=subset)
    _, s_acc, s_rej = ode_peers.reference_rk45(ens, t1, rtol, atol, indices=subset)
    if not (np.array_equal(final["numba"].accepted[subset], h_acc)
            and np.array_equal(final["numba"].rejected[subset], h_rej)):
        _fail("the Numba peer's step counts differ from HairerRK45's")
    counts = dict(hairer=dict(accepted=int(h_acc.sum()), rejected=int(h_rej.sum())),
                  scipy_rk45=dict(accepted=int(s_acc.sum()), rejected=int(s_rej.sum())))
    for arm, sol in final.items():
        acc, rej = sol.accepted[subset], sol.rejected[subset]
        counts[arm] = dict(
            accepted=int(acc.sum()), rejected=int(rej.sum()),
            differ_from_hairer=int(((acc != h_acc) | (rej != h_rej)).sum()),
            accepted_over_scipy=float(acc.sum() / s_acc.sum()),
            rejected_over_scipy=float(rej.sum() / max(s_rej.sum(), 1)),
            attempted_over_scipy=float((acc + rej).sum() / (s_acc + s_rej).sum()))
    out["subset_counts"] = counts
    return out


def report(results: dict) -> str:
    m, a = results["meta"], results["settings"]
    out = [f"Lorenz ensemble, DP5 (scipy's RK45 tableau, Hairer's PI controller), rtol "
           f"{a['rtol']:g}, atol {a['atol']:g}, t1 = {a['t1']:g}, n = {a['n']:,}; "
           f"{a['threads']} thread(s); {a['rounds']} interleaved rounds after a warm-up",
           *arm_table(results)]
    arms, c = results["arms"], results["checks"]
    out.append(f"end state vs DOP853 (rtol 1e-12) on {len(c['subset'])} trajectories, in "
               f"tolerances (bound {c['bound']:.0f}): " + ", ".join(
                   f"{k} {v:.1f}" for k, v in c["vs_dop853"].items()))
    out.append("arms vs the Numba peer on every trajectory: end states in tolerances, and the "
               "trajectories whose step counts differ: " + ", ".join(
                   f"{k} max {v['max']:.3g} (median {v['median']:.3g}), {v['counts_differ']:,}"
                   for k, v in c["cross"].items()))
    sc = c["subset_counts"]
    out.append(f"steps on the subset: scipy RK45 (I-controller) {sc['scipy_rk45']['accepted']} "
               f"accepted / {sc['scipy_rk45']['rejected']} rejected; HairerRK45 "
               f"{sc['hairer']['accepted']} / {sc['hairer']['rejected']}")
    for arm in arms:
        s = sc[arm]
        out.append(f"  {arm:<11} {s['accepted']} / {s['rejected']}: over scipy's accepted "
                   f"{s['accepted_over_scipy']:.3f}, rejected {s['rejected_over_scipy']:.3f}, "
                   f"attempted {s['attempted_over_scipy']:.3f}; trajectories whose counts differ "
                   f"from HairerRK45: {s['differ_from_hairer']}")
    out.append(f"load average at start {m['loadavg_start']}, at end {m.get('loadavg_end')}")
    return "\n".join(out)


def arm_table(results: dict) -> list[str]:
    """The machine's line, then the table of the arms (times, rates, ratios to eagle, steps)
    and its notes."""
    m, a, arms = results["meta"], results["settings"], results["arms"]
    cpu = m["cpu"]
    out = [f"{cpu.get('model name', '?')} (LLVM: {cpu.get('llvm_host_cpu', '?')}), "
           f"{m['cpus']} CPUs, numba {m['numba']}, jax {m.get('jax')}, diffrax "
           f"{m.get('diffrax')}, eagle {m['eagle']}, {m['date']}",
           ""]
    header = (f"  {'arm':<13} {'n':>8} {'first call':>10} {'median s [min-max]':>24} "
              f"{'traj/s':>10} {'M att/s':>8} {'t/eagle':>8} {'rounds':>15} {'accepted':>11} "
              f"{'rejected':>10} {'CPU share':>9}")
    out.append(header)
    base = arms.get("eagle")
    rows = []
    for name, r in arms.items():
        if name == "eagle":  # run() alone, then the whole solve() call
            rows.append(("eagle run()", r, [s["run_s"] for s in r["samples"]]))
            rows.append(("eagle solve()", r, [s["wall_s"] for s in r["samples"]]))
        else:
            rows.append((name, r, [s["wall_s"] for s in r["samples"]]))
    for name, r, walls in rows:
        med = float(np.median(walls))
        ratio = f"{med / r['n'] / (base['median_s'] / base['n']):.2f}x" if base else "-"
        rounds = "-"
        if base:  # each round's time over eagle run()'s in the same round: its load
            per = sorted(w / r["n"] / (s["run_s"] / base["n"])
                         for w, s in zip(walls, base["samples"], strict=True))
            rounds = f"{np.median(per):.2f} [{per[0]:.2f}-{per[-1]:.2f}]"
        share = np.median([s["cpu_s"] / (s["wall_s"] * a["threads"]) for s in r["samples"]])
        counted = r["rejected"] >= 0  # an arm that does not count its rejected steps: -1
        attempted = f"{r['attempted'] / med / 1e6:>8.2f}" if counted else f"{'n/a':>8}"
        rejected = f"{r['rejected']:>10,}" if counted else f"{'n/a':>10}"
        out.append(f"  {name:<13} {r['n']:>8,} {r['first_call_s']:>9.2f}s "
                   f"{med:>9.3f} [{min(walls):.3f}-{max(walls):.3f}] "
                   f"{r['n'] / med:>10.3g} {attempted} "
                   f"{ratio:>8} {rounds:>15} {r['accepted']:>11,} {rejected} "
                   f"{share:>9.2f}")
    out.append("")
    out.append("t/eagle: the arm's median time per trajectory over eagle run()'s (>1: eagle "
               "faster); rounds: the same ratio taken in each round (the arms of a round met "
               "the same load), median [min-max]; CPU share: process CPU time / (wall x "
               "threads) of the whole call, median")
    out.append(f"first call: compile (or load from cache) and run; eagle's build (compile or "
               f"load) {arms['eagle']['build_s']:.2f} s of it" if base else
               "first call: compile (or load from cache) and run")
    if "diffrax_map" in arms:
        out.append(f"diffrax_map: jax.lax.map over chunks of {a['diffrax_batch']} "
                   f"trajectories, each chunk vmapped")
    return out


def parse(argv=None, *, description: str | None = None, t1: float = 5.0, tol: float = 1e-6,
          name: str = "ode_ensemble", arms: tuple = ARMS, n: int = 100_000,
          atol: float | None = None, quick: dict = QUICK, diffrax_n: int | None = None,
          choices: tuple | None = None, extra=None) -> argparse.Namespace:
    """The command line of this benchmark and of ``kepler_ensemble.py`` and
    ``stiff_ensemble.py``: ``t1``, ``tol`` (rtol, and atol unless ``atol``), ``n``,
    ``diffrax_n`` (default: ``n``) and the ``arms`` its defaults, ``choices`` the arms it
    knows (default: ``arms``), ``quick`` what ``--quick`` sets, ``name`` its result file's
    (``results/{name}_t{threads}.json``); ``extra(parser)`` adds a benchmark's own options."""
    parser = argparse.ArgumentParser(description=description or __doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=None,
                        help=f"trajectories (default {n:,}; {quick['n']:,} with --quick)")
    parser.add_argument("--t1", type=float, default=t1)
    parser.add_argument("--rtol", type=float, default=tol)
    parser.add_argument("--atol", type=float, default=tol if atol is None else atol)
    parser.add_argument("--threads", type=int, default=eagle.get_num_threads())
    parser.add_argument("--rounds", type=int, default=None,
                        help=f"interleaved rounds (default 5; {quick['rounds']} with --quick)")
    parser.add_argument("--max-steps", type=int, default=100_000)
    parser.add_argument("--diffrax-n", type=int, default=None,
                        help="run diffrax on the first N trajectories only (default: all)")
    parser.add_argument("--diffrax-batch", type=int, default=256,
                        help="diffrax_map's chunk of trajectories (default 256)")
    parser.add_argument("--subset", type=int, default=None,
                        help=f"trajectories checked against scipy (default 20; "
                             f"{quick['subset']} with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help="a small run: " + ", ".join(f"--{k} {v}" for k, v in quick.items())
                        + " unless given")
    parser.add_argument("--arms", nargs="+", default=list(arms), choices=choices or arms)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--json", type=Path, default=None)
    if extra is not None:
        extra(parser)
    args = parser.parse_args(argv)
    if args.diffrax_n is None:
        args.diffrax_n = quick.get("diffrax_n") if args.quick else diffrax_n
    for key, full in dict(n=n, rounds=5, subset=20).items():
        if getattr(args, key) is None:
            setattr(args, key, quick[key] if args.quick else full)
    for key in ("n", "threads", "rounds", "max_steps", "subset", "diffrax_batch"):
        if getattr(args, key) < 1:
            parser.error(f"--{key.replace('_', '-')}: expected a positive integer, got "
                         f"{getattr(args, key)}")
    if not (args.t1 > 0 and math.isfinite(args.t1)):
        parser.error(f"--t1: expected a positive finite time, got {args.t1}")
    for key in ("rtol", "atol"):
        if not (getattr(args, key) > 0):
            parser.error(f"--{key}: expected a positive tolerance, got {getattr(args, key)}")
    if "numba" not in args.arms:
        parser.error("--arms: the numba arm is the one the others are checked against")
    args.diffrax_n = args.n if args.diffrax_n is None else min(args.diffrax_n, args.n)
    if args.diffrax_n < 1:
        parser.error(f"--diffrax-n: expected a positive integer, got {args.diffrax_n}")
    args.subset = min(args.subset, args.diffrax_n)
    if args.json is None:
        args.json = Path(__file__).resolve().parent / "results" / \
            f"{name}_t{args.threads}{'_quick' if args.quick else ''}.json"
    return args


def measure(args: argparse.Namespace, make_arms, settings: dict, check_arms, report_text):
    """The protocol of the module's docstring, for this benchmark and ``kepler_ensemble.py``:
    pin the CPUs, ``make_arms()`` (an ``Arms``), every arm's first call, ``--rounds``
    interleaved rounds, ``check_arms(final solutions)`` (its dict is stored as ``checks``),
    then print ``report_text(results)`` and write the JSON."""
    pinned = limit_cpus(args.threads)  # before JAX is imported: XLA sizes its pools once
    eagle.set_num_threads(args.threads)
    numba.set_num_threads(args.threads)
    started = time.perf_counter()

    def progress(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f} s] {message}", file=sys.stderr, flush=True)

    arms = make_arms()
    results = dict(meta=machine(), settings=dict(
        n=args.n, t1=args.t1, rtol=args.rtol, atol=args.atol, threads=args.threads,
        rounds=args.rounds, max_steps=args.max_steps, diffrax_n=args.diffrax_n,
        diffrax_batch=args.diffrax_batch, quick=args.quick,
        seed=args.seed, xla_flags=os.environ.get("XLA_FLAGS"), pinned_cpus=pinned,
        **settings), arms={})
    first = {}
    for arm in args.arms:
        progress(f"{arm}: first call (compile and run)")
        _, first[arm] = arms.run(arm)
    samples = {arm: [] for arm in args.arms}
    final = {}
    for round_ in range(args.rounds):
        for arm in args.arms:
            progress(f"round {round_ + 1}/{args.rounds}: {arm}")
            final[arm], sample = arms.run(arm)
            samples[arm].append(sample)
    progress("checking the arms against each other and against scipy")
    results["checks"] = check_arms(final)
    for arm in args.arms:
        sol = final[arm]
        walls = [s.get("run_s", s["wall_s"]) for s in samples[arm]]
        results["arms"][arm] = dict(
            n=int(sol.u.shape[1]), first_call_s=first[arm]["wall_s"],
            first_call_cpu_s=first[arm]["cpu_s"], median_s=float(np.median(walls)),
            samples=samples[arm], accepted=int(sol.accepted.sum()),
            rejected=int(sol.rejected.sum()),
            attempted=int((sol.accepted + sol.rejected).sum()))
        if (sol.rejected < 0).any():  # not counted by this arm
            results["arms"][arm].update(rejected=-1, attempted=-1)
        if "build_s" in first[arm]:
            results["arms"][arm]["build_s"] = first[arm]["build_s"]
    meta = results["meta"]
    meta["loadavg_end"] = _loadavg()
    for module in ("scipy", "jax", "diffrax"):
        try:
            meta[module] = __import__(module).__version__
        except ImportError:
            meta[module] = None
    meta["seconds"] = time.perf_counter() - started
    print(report_text(results))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=1))
    print(f"\nwrote {args.json} ({meta['seconds']:.0f} s)")
    return results


def main(argv=None) -> None:
    args = parse(argv)
    ens = ode_peers.lorenz_ensemble(args.n, args.seed)
    measure(args, lambda: Arms(ens, args), dict(distributions=dict(
        sigma="U(9, 11)", rho="U(20, 30)", beta="U(2.5, 3)", u0="(1, 1, 1) + U(-0.1, 0.1)^3")),
        lambda final: check(final, ens, args), report)


if __name__ == "__main__":
    main()
