"""What a user waits for before the README kernel runs on the CPU: first compile, cached start.

    python benchmarks/cpu_start.py [--repeats 5]

Each measurement is a fresh Python process (``sys.executable``), so nothing is shared but the
files on disk; the arms are interleaved, repetition by repetition:

- ``import numba``: the floor every Numba-based tool pays (``python -c "import numba"``);
- ``numba cached``: ``import numba`` and one trivial ``@njit(cache=True)`` function loaded from
  Numba's cache and called: loading any cached function makes Numba refresh its target's
  registries (its array math, which looks for SciPy's BLAS), the floor of a cached start;
- ``cached start``: ``import eagle, hawk``, define the README's oscillator, ``until_done`` and
  ``run()`` at n = 1,000 with a warm cache (``EAGLE_CACHE_DIR`` filled by an untimed run);
- ``first compile``: the same with an empty cache folder; the kernel's ``Report.build_s`` is
  printed too (the compile alone, without the imports).

Every process runs with Python's bytecode cache on (``PYTHONDONTWRITEBYTECODE`` removed from its
environment, and one untimed run of each first), as in an installed package, whose ``.pyc``
files pip writes: without it each process would compile eagle's and hawk's modules from
source again (about 40 ms here), which no user of an installed eagle pays.

Reported: the median wall time of each process [min-max], and the cached start's excess over
``import numba`` (issue 13's target: at most 0.15 s; the first compile's: under 2.5 s). The
first compile's process CPU time over its wall time says whether it had a core to itself (a
compile is one thread; under 0.9, other processes held part of the core and the wall times
are not this machine's).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

PROGRAM = """
import time
t0 = time.perf_counter()
import numpy as np
import eagle, hawk
from hawk import Mutable, Param, Scalar, Terminated

@hawk.kernel
def oscillator(omega: Scalar, t_end: Param, dt: Param, terminated: Terminated,
               x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    x0, v0 = x, v
    x = x0 + dt * v0
    v = v0 - dt * omega * omega * x0
    t += dt
    terminated = t >= t_end

n = 1000
report = eagle.until_done(eagle.deploy(oscillator, "cpu"), max_steps=10_000, x=np.ones(n),
                          v=np.zeros(n), t=np.zeros(n), omega=np.linspace(1.0, 3.0, n),
                          t_end=1.0, dt=1e-3).run()
assert report.done == n
print(report.build_s)
"""


NUMBA_CACHED = """
import numba
import numpy as np

@numba.njit(cache=True)
def total(a):
    s = 0.0
    for x in a:
        s += x
    return s

print(total(np.ones(10)))
"""


_cpu_seconds: list[float] = []  # each timed process's CPU time (user + system)


def timed(arguments: list[str], env: dict) -> tuple[float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(arguments, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"{arguments[:2]} failed:\n{done.stderr}")
    _cpu_seconds.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return wall, done.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    with tempfile.TemporaryDirectory() as folder:
        script = os.path.join(folder, "readme_kernel.py")
        with open(script, "w") as f:
            f.write(PROGRAM)
        floor = os.path.join(folder, "numba_cached.py")
        with open(floor, "w") as f:
            f.write(NUMBA_CACHED)
        environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        warm = dict(environment, EAGLE_CACHE_DIR=os.path.join(folder, "warm"))
        timed([sys.executable, script], warm)  # fills the warm cache
        timed([sys.executable, floor], warm)  # and Numba's, beside the script
        walls: dict[str, list[float]] = {"import numba": [], "numba cached": [],
                                         "cached start": [], "first compile": []}
        builds = []
        shares = []
        for r in range(args.repeats):
            print(f"round {r + 1}/{args.repeats}", file=sys.stderr)
            walls["import numba"].append(timed([sys.executable, "-c", "import numba"], warm)[0])
            walls["numba cached"].append(timed([sys.executable, floor], warm)[0])
            walls["cached start"].append(timed([sys.executable, script], warm)[0])
            cold = dict(environment, EAGLE_CACHE_DIR=os.path.join(folder, f"cold{r}"))
            wall, build = timed([sys.executable, script], cold)
            walls["first compile"].append(wall)
            builds.append(float(build))
            shares.append(_cpu_seconds[-1] / wall)
    print(f"fresh processes, {args.repeats} interleaved rounds, median [min-max]:")
    for name, values in walls.items():
        print(f"  {name:14s} {statistics.median(values):6.2f} s "
              f"[{min(values):.2f}-{max(values):.2f}]")
    print(f"  first compile's build_s (compile alone): {statistics.median(builds):.2f} s "
          f"[{min(builds):.2f}-{max(builds):.2f}]")
    busy = " (under 0.9: other processes held part of a core)" \
        if statistics.median(shares) < 0.9 else ""
    print(f"  first compile's process CPU time / wall: median {statistics.median(shares):.2f} "
          f"[{min(shares):.2f}-{max(shares):.2f}]{busy}")
    excess = [c - i for c, i in zip(walls["cached start"], walls["import numba"], strict=True)]
    print(f"cached start - import numba, per round: median {statistics.median(excess):.3f} s "
          f"[{min(excess):.3f}-{max(excess):.3f}]")
    excess = [c - i for c, i in zip(walls["cached start"], walls["numba cached"], strict=True)]
    print(f"cached start - numba cached, per round: median {statistics.median(excess):.3f} s "
          f"[{min(excess):.3f}-{max(excess):.3f}]")


if __name__ == "__main__":
    main()
