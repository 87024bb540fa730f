"""eagle now against eagle at an earlier commit, on the same CPU workload ("at least 2x today").

    python benchmarks/cpu_then_now.py --rev baee73e [--workload lorenz] [--threads 1 2]

The earlier commit is checked out into a temporary git worktree; each arm runs in fresh Python
processes (that commit's ``src`` first on ``PYTHONPATH``, a cache folder of its own), the arms
interleaved round by round, each process timing ``until_done(...)`` plus ``run()`` after one
untimed run (the compile). The workloads are defined here, in the kernel language both
commits accept, so that neither arm depends on the other's benchmark code:

- ``lorenz``: ``cpu_loop.py``'s Lorenz ensemble (Euler, dt = 2e-3, stop at ``|z - 27| <
  0.025``, 1,300 steps at most; about 8% of samples never stop);
- ``oscillator``: the README's oscillator, every sample stopping after 1,000 steps.

Both arms must end with the same state, bit for bit (a SHA-256 of it is compared).
Reported: each arm's median time and useful sample-steps per second, and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r'''
import hashlib, json, sys, time
import numpy as np
import eagle, hawk
from hawk import Mutable, Param, Scalar, Terminated

@hawk.kernel
def lorenz(sigma: Param, rho: Param, beta: Param, dt: Param, tol: Param, terminated: Terminated,
           x: Mutable[Scalar], y: Mutable[Scalar], z: Mutable[Scalar]):
    dx = sigma * (y - x)
    dy = x * (rho - z) - y
    dz = x * y - beta * z
    x = x + dt * dx
    y = y + dt * dy
    z = z + dt * dz
    terminated = abs(z - 27.0) < tol

@hawk.kernel
def oscillator(omega: Scalar, t_end: Param, dt: Param, terminated: Terminated,
               x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    x0 = x
    v0 = v
    x = x0 + dt * v0
    v = v0 - dt * omega * omega * x0
    t += dt
    terminated = t >= t_end

workload, n, threads, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
if workload == "lorenz":
    rng = np.random.default_rng(13)
    master = dict(x=rng.uniform(-15, 15, n), y=rng.uniform(-15, 15, n), z=rng.uniform(5, 40, n))
    values = dict(sigma=10.0, rho=28.0, beta=8.0 / 3.0, dt=2e-3, tol=0.025)
    kernel, max_steps = lorenz, 1300
else:
    master = dict(x=np.ones(n), v=np.zeros(n), t=np.zeros(n), omega=np.linspace(1.0, 3.0, n))
    kernel, values, max_steps = oscillator, dict(dt=1e-3, t_end=1.0), 10_000
eagle.set_num_threads(threads)
times = []
for _ in range(repeats + 1):
    arrays = {k: v.copy() for k, v in master.items()}
    terminated = np.zeros(n, bool)
    start = time.perf_counter()
    report = eagle.until_done(eagle.deploy(kernel, "cpu"), max_steps=max_steps, **arrays,
                              **values, terminated=terminated).run()
    times.append(time.perf_counter() - start)
state = hashlib.sha256(b"".join(a.tobytes() for a in arrays.values()) + terminated.tobytes())
print(json.dumps(dict(times=times[1:], steps=report.steps, state=state.hexdigest())))
'''


def useful_steps(workload: str, n: int) -> int:
    """The sample-steps the samples take, summed (by NumPy, one step of all live samples at a
    time: the same float64 operations in the same order as the kernels)."""
    import numpy as np

    if workload == "oscillator":
        return 1000 * n
    rng = np.random.default_rng(13)
    x, y, z = rng.uniform(-15, 15, n), rng.uniform(-15, 15, n), rng.uniform(5, 40, n)
    live = np.ones(n, bool)
    total = 0
    for _ in range(1300):
        idx = np.flatnonzero(live)
        if idx.size == 0:
            break
        xs, ys, zs = x[idx], y[idx], z[idx]
        dx, dy, dz = 10.0 * (ys - xs), xs * (28.0 - zs) - ys, xs * ys - (8.0 / 3.0) * zs
        x[idx], y[idx], z[idx] = xs + 2e-3 * dx, ys + 2e-3 * dy, zs + 2e-3 * dz
        total += idx.size
        live[idx[np.abs(z[idx] - 27.0) < 0.025]] = False
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", required=True, help="the earlier commit")
    parser.add_argument("--workload", choices=["lorenz", "oscillator"], default="lorenz")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per process")
    parser.add_argument("--n", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        then = Path(scratch) / "then"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(then),
                        args.rev], check=True)
        try:
            arms = {"then": then / "src", "now": ROOT / "src"}
            child = Path(scratch) / "child.py"  # a file: hawk reads a kernel's source
            child.write_text(CHILD)
            useful = useful_steps(args.workload, args.n)
            for threads in args.threads:
                times: dict[str, list[float]] = {arm: [] for arm in arms}
                states = set()
                for _ in range(args.rounds):
                    for arm, src in arms.items():
                        env = dict(os.environ, PYTHONPATH=str(src),
                                   EAGLE_CACHE_DIR=str(Path(scratch) / f"cache-{arm}"))
                        done = subprocess.run(
                            [sys.executable, str(child), args.workload, str(args.n),
                             str(threads), str(args.repeats)],
                            env=env, capture_output=True, text=True)
                        if done.returncode != 0:
                            sys.exit(f"the {arm} arm failed:\n{done.stderr}")
                        result = json.loads(done.stdout.splitlines()[-1])
                        times[arm] += result["times"]
                        states.add(result["state"])
                if len(states) != 1:
                    sys.exit(f"the arms disagree on the final state: {sorted(states)}")
                then_s, now_s = (statistics.median(times[arm]) for arm in arms)
                print(f"{args.workload}, n = {args.n:,}, {threads} thread(s), "
                      f"{args.rounds} x {args.repeats} runs per arm: "
                      f"{args.rev} {then_s:.3f} s ({useful / then_s / 1e9:.2f} G/s), "
                      f"now {now_s:.3f} s ({useful / now_s / 1e9:.2f} G/s): "
                      f"{then_s / now_s:.2f}x; same final state, bit for bit")
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(then)],
                           check=False)


if __name__ == "__main__":
    main()
