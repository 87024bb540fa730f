"""A Vern9 ensemble at a tight tolerance: eagle against a hand-written Numba per-sample
integrator of the same method.

    python benchmarks/vern9_ensemble.py [--n 20000] [--rounds 5] [--threads 1] [--json PATH]

The peer is ``ode_peers.make_dopri5_numba`` given Verner's 9(8) tableau
(``ode_peers.verner_tableau(hawk.ode.tableaus.VERN9)``): every state component, stage and
parameter a scalar local, ``prange`` over trajectories, no fastmath, and eagle's step logic
(the initial step, the step clamped to ``t1``, the PI controller with Vern9's exponents), so it
takes eagle's accepted and rejected steps on every sample (checked) and ends bit for bit where
eagle ends. Models, at rtol = atol = 1e-12 (Vern9's use: tight tolerances on smooth problems):

- ``lorenz (3)``: Lorenz, t from 0 to 5 (``ode_peers.lorenz_ensemble``);
- ``kepler (6)``: 3D Kepler orbits over one period (``kepler_peers.kepler_ensemble``).

Each round runs eagle (``run()`` alone: the solve's wall time less its build) then Numba,
interleaved; printed: the medians and Numba's time over eagle's (> 1: eagle faster).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kepler_peers as kp  # noqa: E402
import numba  # noqa: E402
import ode_peers  # noqa: E402
from cpu_loop import _loadavg  # noqa: E402
from kepler_ensemble import kepler  # noqa: E402
from ode_ensemble import limit_cpus, lorenz  # noqa: E402
from ode_width_gap import interleaved  # noqa: E402

import eagle  # noqa: E402
from hawk.ode.tableaus import VERN9  # noqa: E402


def cases(n: int, seed: int):
    """(name, hawk func, Numba peer, ensemble, t1) of each model."""
    tableau = ode_peers.verner_tableau(VERN9)
    return [
        ("lorenz (3)", lorenz,
         ode_peers.make_dopri5_numba(ode_peers.lorenz, 3, 3, "lorenz_vern9", tableau),
         ode_peers.lorenz_ensemble(n, seed), 5.0),
        ("kepler (6)", kepler,
         ode_peers.make_dopri5_numba(kp.kepler_rhs, 6, 1, "kepler_vern9", tableau),
         kp.kepler_ensemble(n, seed), kp.PERIOD),
    ]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
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
    tol = 1e-12
    out = dict(settings=vars(args) | dict(json=str(args.json), pinned_cpus=pinned, tol=tol),
               loadavg_start=_loadavg(), cases=[])
    print(f"Vern9 at rtol = atol = {tol:g}; n = {args.n:,}, {args.threads} thread(s), "
          f"{args.rounds} rounds after a warm-up; load average {out['loadavg_start']}")
    print(f"  {'model':<15} {'M attempted':>11} {'eagle s':>8} {'numba s':>8} "
          f"{'numba/eagle':>11}  per round")
    out["cases"] = interleaved([(*case, tol) for case in cases(args.n, args.seed)],
                               args.rounds, method="vern9")
    out["loadavg_end"] = _loadavg()
    print(f"numba/eagle > 1: eagle faster; the same accepted and rejected steps on every "
          f"sample; load average at the end {out['loadavg_end']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
