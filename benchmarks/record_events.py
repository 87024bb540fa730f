"""What recording events costs: a driven pendulum's Poincaré section (issue 43, item 4).

    python benchmarks/record_events.py [--n 400] [--periods 100] [--keep 100] [--rounds 5]
                                       [--threads T] [--method dopri5] [--event-samples 4]

The ensemble: ``n`` damped pendulums driven at frequency ``Omega`` with amplitudes spread over
``[0.9, 1.5]`` (regular and chaotic members), ``theta'' = -gamma theta' - sin(theta) +
A cos(Omega t)``, from rest for ``periods`` drive periods. The section is the state once per
period: the event ``sin(Omega t)`` rising through zero (``direction=1``, not terminal).

The arms, one process, interleaved round by round (``--rounds``; each arm's first call, the
compile, is timed apart):

- ``plain``: ``eagle.ode.solve(..., event=section, direction=1, terminal=False)``: the event
  watched, nothing kept;
- ``recorded``: the same with ``record_events=keep``: each member's first ``keep`` crossings
  in ``t_events``/``u_events``.

``--event-samples``: the points each step is looked at (``solve``'s ``event_samples``; 4 by
default, 1 for the step's ends only, SciPy's rule), in both arms.

Printed: each round's times and ratio, the median ratio (recorded / plain), the same for the
process's CPU time (``time.process_time``: what a loaded machine inflates least, since another
job's time slices are not counted), the machine's load (``os.getloadavg``), and checks (a
failed one exits non-zero): both arms end in the same bits (a non-terminal event changes no
step), and every member recorded ``min(keep, periods)`` crossings, each within 1e-9 of
``2 pi k / Omega``.
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


@hawk.func
def pendulum(u, t, p):
    """``p = (gamma, A, Omega)``."""
    return hawk.vec2(u[1], -p[0] * u[1] - math.sin(u[0]) + p[1] * math.cos(p[2] * t))


@hawk.func
def section(u, t, p):
    """Zero, rising, once per drive period."""
    return math.sin(p[2] * t)


def ensemble(n: int):
    gamma, omega = 0.5, 2.0 / 3.0
    p = np.stack([np.full(n, gamma), np.linspace(0.9, 1.5, n), np.full(n, omega)])
    return np.zeros((2, n)), p, omega


def solve(u0, p, t_end, keep, args):
    return eagle.ode.solve(pendulum, u0, (0.0, t_end), p, method=args.method, rtol=1e-8,
                           atol=1e-8, event=section, direction=1, terminal=False,
                           record_events=keep, threads=args.threads,
                           event_samples=args.event_samples)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=400)
    parser.add_argument("--periods", type=int, default=100)
    parser.add_argument("--keep", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--method", default="dopri5")
    parser.add_argument("--event-samples", type=int, default=4)
    args = parser.parse_args(argv)
    u0, p, omega = ensemble(args.n)
    # a little past the last period, so its crossing is inside the span
    t_end = (args.periods + 0.25) * 2 * math.pi / omega
    arms = {"plain": 0, "recorded": args.keep}
    print(f"driven pendulum, n={args.n}, {args.periods} periods, keep={args.keep}, "
          f"method={args.method}, event_samples={args.event_samples}, "
          f"threads={args.threads or eagle.get_num_threads()}")
    results = {}
    for name, keep in arms.items():
        start = time.perf_counter()
        results[name] = solve(u0, p, t_end, keep, args)
        print(f"  first call (compile + run) {name:9s} {time.perf_counter() - start:7.2f} s")
    times = {name: [] for name in arms}
    cpu = {name: [] for name in arms}
    for r in range(args.rounds):
        order = list(arms) if r % 2 == 0 else list(reversed(arms))
        for name in order:
            start, start_cpu = time.perf_counter(), time.process_time()
            results[name] = solve(u0, p, t_end, arms[name], args)
            times[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
        print(f"  round {r}: plain {times['plain'][-1]:7.3f} s, recorded "
              f"{times['recorded'][-1]:7.3f} s, ratio "
              f"{times['recorded'][-1] / times['plain'][-1]:.2f}; CPU time ratio "
              f"{cpu['recorded'][-1] / cpu['plain'][-1]:.2f}")
    for what, samples in (("median", times), ("CPU time median", cpu)):
        ratios = [b / a for a, b in zip(samples["plain"], samples["recorded"], strict=True)]
        print(f"{what}: plain {statistics.median(samples['plain']):.3f} s, recorded "
              f"{statistics.median(samples['recorded']):.3f} s, ratio recorded/plain "
              f"{statistics.median(ratios):.2f} (per round {min(ratios):.2f} to "
              f"{max(ratios):.2f})")
    print("load average (1, 5, 15 min): " + ", ".join(f"{v:.2f}" for v in os.getloadavg()))

    plain, recorded = results["plain"], results["recorded"]
    failures = []
    if not (np.array_equal(plain.u, recorded.u) and np.array_equal(plain.t, recorded.t)):
        failures.append("the two arms' end states differ")
    kept = min(args.keep, args.periods)
    expected = 2 * math.pi / omega * np.arange(1, kept + 1)
    found = recorded.t_events[:kept]
    if np.isnan(found).any() or np.abs(found - expected[:, None]).max() > 1e-9:
        failures.append(f"recorded crossings are not at 2 pi k / Omega: largest error "
                        f"{np.nanmax(np.abs(found - expected[:, None])):.3g}")
    for failure in failures:
        print("CHECK FAILED:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
