"""What a terminal event costs a run: located in every step, or after the run.

    python benchmarks/terminal_event.py [--n 20000] [--rounds 5] [--threads 1]

Two ensembles, each solved three ways, in one process, interleaved round by round (the first
call of each, the compile, is timed apart):

- ``no event``: the solve without the event (the floor);
- ``in the step``: the event located inside every step, as ``eagle.ode.solve`` did before
  ``locate_after`` (``solver.locates_after`` patched to say no): the step evaluates ``g``
  ``event_samples`` times to find a crossing and ``event_iterations`` (12) more to locate it,
  branch-free, crossed or not;
- ``after``: today's solve: the run only finds the crossing step; the step is taken again, and
  the event located, once per sample after the run.

The ensembles: ``ball``, falling balls with drag (a cheap model and a cheap ``g = height``,
which no sample reaches within the span, so every arm takes the same steps); ``pendulum``, the
driven pendulum of ``record_events.py`` with ``g = sin(Omega t) - 2`` (a transcendental
``g`` that never reaches zero). Printed: CPU time per arm (``time.process_time``, which a
loaded machine inflates least), each arm's ratio to ``no event``, and the load. A check (a
failed one exits non-zero): ``in the step`` and ``after`` end in the same bits.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time

import numpy as np

import eagle
import eagle.ode
import hawk
from eagle.ode import solver


@hawk.func
def fall(u, t, p):
    return hawk.vec2(u[1], -9.81 - p * u[1] * abs(u[1]))


@hawk.func
def below_ground(u, t, p):
    return u[0] + 1e9


@hawk.func
def pendulum(u, t, p):
    return hawk.vec2(u[1], -p[0] * u[1] - math.sin(u[0]) + p[1] * math.cos(p[2] * t))


@hawk.func
def never_two(u, t, p):
    return math.sin(p[2] * t) - 2.0


def ensembles(n: int) -> dict:
    ball = (fall, np.stack([np.linspace(10.0, 100.0, n), np.zeros(n)]),
            np.full(n, 0.01), 300.0, below_ground)
    drive = np.stack([np.full(n, 0.5), np.linspace(0.9, 1.5, n), np.full(n, 2.0 / 3.0)])
    swing = (pendulum, np.zeros((2, n)), drive, 30 * 3 * math.pi, never_two)
    return {"ball": ball, "pendulum": swing}


def solve(case, arm: str, threads):
    f, u0, p, t_end, event = case
    options = dict(rtol=1e-8, atol=1e-8, threads=threads)
    if arm == "no event":
        return eagle.ode.solve(f, u0, (0.0, t_end), p, **options)
    if arm == "in the step":
        saved = solver.locates_after
        solver.locates_after = lambda *_: False
        try:
            return eagle.ode.solve(f, u0, (0.0, t_end), p, event=event, **options)
        finally:
            solver.locates_after = saved
    return eagle.ode.solve(f, u0, (0.0, t_end), p, event=event, **options)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    arms = ("no event", "in the step", "after")
    failures = []
    for name, case in ensembles(args.n).items():
        results = {arm: solve(case, arm, args.threads) for arm in arms}  # compiled
        cpu = {arm: [] for arm in arms}
        for r in range(args.rounds):
            for arm in (arms if r % 2 == 0 else reversed(arms)):
                start = time.process_time()
                results[arm] = solve(case, arm, args.threads)
                cpu[arm].append(time.process_time() - start)
        base = statistics.median(cpu["no event"])
        print(f"{name}: n={args.n}, threads={args.threads}, median of {args.rounds} rounds, "
              f"{results['no event'].accepted.mean():.0f} steps per sample")
        for arm in arms:
            median = statistics.median(cpu[arm])
            print(f"  {arm:12s} {median:8.4f} s CPU  {median / base:5.2f}x no event")
        before, after = results["in the step"], results["after"]
        if not all(np.array_equal(getattr(before, k), getattr(after, k))
                   for k in ("u", "t", "status", "accepted", "rejected", "events")):
            failures.append(f"{name}: the two ways of locating end in different bits")
    print("load average (1, 5, 15 min): " + ", ".join(f"{v:.2f}" for v in os.getloadavg()))
    for failure in failures:
        print("CHECK FAILED:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
