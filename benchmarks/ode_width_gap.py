"""How eagle's DP5 ensemble compares with the hand-written Numba peer as the state widens.

    python benchmarks/ode_width_gap.py [--n 100000] [--rounds 5] [--threads 1] [--json PATH]

``kepler_ensemble.py`` found the Numba per-sample peer ahead of eagle on 6-state Kepler orbits
by more than on 3-state Lorenz. This script separates width from the right-hand side's cost:
eagle (``eagle.ode.solve``, ``run()`` alone) against ``ode_peers.make_dopri5_numba``'s peer of
the same right-hand side (the same steps, checked: equal accepted and rejected counts on every
sample) on

- ``lorenz (3)``: Lorenz at rtol = atol = 1e-6, t from 0 to 5 (``ode_peers.lorenz_ensemble``);
- ``kepler 2D (4)``: planar Kepler orbits (``sqrt`` and a division per evaluation), the 3D
  ensemble's radii and speeds, one period at 1e-8;
- ``oscillator (6)``: ``r'' = -p r`` in 3D (no ``sqrt``, no division), the 3D Kepler ensemble's
  states, ``t1 = 2 pi`` at 1e-8;
- ``kepler (6)``: the benchmark's 3D Kepler orbits.

Each round runs eagle then Numba (interleaved); printed: the medians, Numba's time over eagle's
(< 1: Numba faster) and each round's ratio. ``--threads 1`` (default) pins the process to one
CPU, so a shared machine's load changes less between the arms.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kepler_peers as kp  # noqa: E402
import numba  # noqa: E402
import ode_peers  # noqa: E402
from cpu_loop import _loadavg  # noqa: E402
from kepler_ensemble import kepler  # noqa: E402
from numba import njit  # noqa: E402
from ode_ensemble import limit_cpus, lorenz  # noqa: E402

import eagle  # noqa: E402
import hawk  # noqa: E402


@hawk.func
def oscillator6(u, t, p):
    return hawk.vector(u[3], u[4], u[5], -p * u[0], -p * u[1], -p * u[2])


@njit(inline="always")
def oscillator6_rhs(t, x, y, z, vx, vy, vz, w):
    return vx, vy, vz, -w * x, -w * y, -w * z


@hawk.func
def kepler2(u, t, p):
    r = math.sqrt(u[0] * u[0] + u[1] * u[1])
    d = p / (r * r * r)
    return hawk.vector(u[2], u[3], -d * u[0], -d * u[1])


@njit(inline="always")
def kepler2_rhs(t, x, y, vx, vy, mu):
    r = math.sqrt(x * x + y * y)
    d = mu / (r * r * r)
    return vx, vy, -d * x, -d * y


def cases(n: int, seed: int):
    """(name, hawk func, Numba peer, ensemble, t1, tol) of every variant."""
    lorenz_ens = ode_peers.lorenz_ensemble(n, seed)
    ens6 = kp.kepler_ensemble(n, seed)
    zero = np.zeros(n)
    planar = np.vstack([np.sqrt((ens6.u0[:3] ** 2).sum(axis=0)), zero, zero,
                        np.sqrt((ens6.u0[3:] ** 2).sum(axis=0))])  # periapsis on x, v along y
    ens2 = ode_peers.Ensemble(np.ascontiguousarray(planar), ens6.p)
    return [
        ("lorenz (3)", lorenz, ode_peers.make_dopri5_numba(ode_peers.lorenz, 3, 3, "lorenz3"),
         lorenz_ens, 5.0, 1e-6),
        ("kepler 2D (4)", kepler2, ode_peers.make_dopri5_numba(kepler2_rhs, 4, 1, "kepler4"),
         ens2, kp.PERIOD, 1e-8),
        ("oscillator (6)", oscillator6,
         ode_peers.make_dopri5_numba(oscillator6_rhs, 6, 1, "oscillator6"), ens6, kp.PERIOD,
         1e-8),
        ("kepler (6)", kepler, kp.kepler_numba, ens6, kp.PERIOD, 1e-8),
    ]


def interleaved(cases, rounds: int, method: str = "dopri5") -> list[dict]:
    """Each case ``(name, hawk func, Numba peer, ensemble, t1, tol)`` timed: eagle's
    ``eagle.ode.solve(..., method=method)`` (``run()`` alone: wall less build) then the peer,
    interleaved over ``rounds`` rounds after a warm-up; exits if the peer's step counts differ
    from eagle's. Prints a line per case; returns what the JSON keeps."""
    results = []
    for name, f, peer, ens, t1, tol in cases:
        p = ens.p[0] if ens.p.shape[0] == 1 else ens.p
        times = dict(eagle=[], numba=[])
        for round_ in range(rounds + 1):  # round 0: compile, warm up
            sol = eagle.ode.solve(f, ens.u0, (0.0, t1), p=p, rtol=tol, atol=tol,
                                  method=method)
            start = time.perf_counter()
            peer_sol = ode_peers.solve_numba(ens, t1, tol, tol, integrator=peer)
            numba_s = time.perf_counter() - start
            if round_:
                times["eagle"].append(sol.report.wall_s - sol.report.build_s)
                times["numba"].append(numba_s)
        if not (np.array_equal(sol.accepted, peer_sol.accepted)
                and np.array_equal(sol.rejected, peer_sol.rejected)):
            sys.exit(f"{name}: the Numba peer's step counts differ from eagle's")
        per_round = [b / a for a, b in zip(times["eagle"], times["numba"], strict=True)]
        e, nb = float(np.median(times["eagle"])), float(np.median(times["numba"]))
        attempted = int((peer_sol.accepted + peer_sol.rejected).sum())
        identical = bool((sol.u == peer_sol.u).all())
        results.append(dict(model=name, attempted=attempted, eagle_s=times["eagle"],
                            numba_s=times["numba"], ratio=nb / e, bit_identical=identical))
        print(f"  {name:<15} {attempted / 1e6:>11.2f} {e:>8.3f} {nb:>8.3f} {nb / e:>11.2f}  "
              + " ".join(f"{r:.2f}" for r in per_round) + f"  (bit-identical: {identical})",
              flush=True)
    return results


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if min(args.n, args.rounds, args.threads) < 1:
        parser.error("--n, --rounds and --threads must be positive")
    pinned = limit_cpus(args.threads)
    eagle.set_num_threads(args.threads)
    numba.set_num_threads(args.threads)
    out = dict(settings=vars(args) | dict(json=str(args.json), pinned_cpus=pinned),
               loadavg_start=_loadavg(), cases=[])
    print(f"n = {args.n:,}, {args.threads} thread(s), {args.rounds} rounds after a warm-up; "
          f"load average {out['loadavg_start']}")
    print(f"  {'model':<15} {'M attempted':>11} {'eagle s':>8} {'numba s':>8} {'numba/eagle':>11}"
          f"  per round")
    out["cases"] = interleaved(cases(args.n, args.seed), args.rounds)
    out["loadavg_end"] = _loadavg()
    print(f"numba/eagle < 1: the Numba peer is faster; the same accepted and rejected steps on "
          f"every sample; load average at the end {out['loadavg_end']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
