"""A Monte Carlo kernel with two normal draws per step, on the CPU: eagle against NumPy and Numba.

The model is a two-factor Gaussian recurrence (a coupled Ornstein-Uhlenbeck pair), which is
about the least arithmetic a step of a Monte Carlo model can do besides drawing, so the
comparison measures the random numbers more than the model:

    z1, z2 = normal(), normal()
    x = x + a * y + b * z1
    y = y - c * y + b * (0.6 * z1 + 0.8 * z2)

Arms, all in this process, on the same samples and steps, interleaved (each arm runs once per
round, ``--rounds`` rounds, the best round kept: noise on a shared machine only slows):

- ``eagle``: ``hawk.normal()`` twice per step (Philox4x32-10 + Box-Muller, ``hawk.philox``),
  ``eagle.until_done(...).run()`` on eagle's host team;
- ``numba_lanes`` and ``numba_sample``: the fastest Numba kernels we could write drawing the same
  numbers (the same Philox counters and Box-Muller operations, with the very draw functions
  eagle's emitter writes, so the results are checked equal to eagle's bit for bit): blocks of
  lanes with the step loop outside and the lane loop inside (what LLVM vectorises), and a
  per-sample loop with the state in registers; both ``prange``
  over blocks on the same number of threads;
- ``numpy``: what a user writes without eagle, ``Generator.standard_normal(n)`` twice per step
  (PCG64, not the same numbers: only the speed is compared) and array arithmetic.

Measured (2026-12-03, a shared 2-core AVX-512 machine, 2 threads, defaults): eagle 81.1 M
sample-steps/s, numba_lanes 65.6 M, numba_sample 11.6 M, numpy 15.4 M.

Prints sample-steps/s per arm; ``--json PATH`` writes them. Usage:
``python benchmarks/rng_mc.py [--samples N] [--steps K] [--threads T] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numba
import numpy as np
from numba import njit, prange

import eagle
import hawk
from eagle.cpu.emit import _RANDOM_HELPERS
from hawk import Mutable, Param, Scalar

A, B, C = 1e-3, 0.03, 2e-3


@hawk.kernel
def two_factor(x: Mutable[Scalar], y: Mutable[Scalar], a: Param, b: Param, c: Param):
    z1 = hawk.normal()
    z2 = hawk.normal()
    x = x + a * y + b * z1
    y = y - c * y + b * (0.6 * z1 + 0.8 * z2)


# -- the Numba peers: the same Philox counters and Box-Muller operations as hawk.philox ---------

# The draw functions eagle's CPU emitter writes (Philox4x32-10, hawk.philox.log53 and cos53),
# defined here as plain @njit(inline="always") functions: the peers draw with the same code and
# differ only in how they loop.
exec(compile("import math\nimport numpy as np\nfrom numba import njit\n" + _RANDOM_HELPERS,
             "<eagle.cpu.emit random helpers>", "exec"), globals())
_normal = globals()["draw_normal64"]


@njit(nogil=True, error_model="numpy", parallel=True)
def numba_lanes(x, y, a, b, c, seed, steps, block):
    n = x.shape[0]
    nblocks = (n + block - 1) // block
    for blk in prange(nblocks):
        lo = blk * block
        hi = min(lo + block, n)
        for k in range(steps):
            for i in range(np.uint64(lo), np.uint64(hi)):
                z1 = _normal(seed, np.int64(i), np.int64(k), np.uint64(0))
                z2 = _normal(seed, np.int64(i), np.int64(k), np.uint64(1))
                xi, yi = x[i], y[i]
                x[i] = xi + a * yi + b * z1
                y[i] = yi - c * yi + b * (0.6 * z1 + 0.8 * z2)


@njit(nogil=True, error_model="numpy", parallel=True)
def numba_sample(x, y, a, b, c, seed, steps, block):
    n = x.shape[0]
    nblocks = (n + block - 1) // block
    for blk in prange(nblocks):
        for i in range(blk * block, min(blk * block + block, n)):
            xi, yi = x[i], y[i]
            for k in range(steps):
                z1 = _normal(seed, np.int64(i), np.int64(k), np.uint64(0))
                z2 = _normal(seed, np.int64(i), np.int64(k), np.uint64(1))
                xi, yi = xi + a * yi + b * z1, yi - c * yi + b * (0.6 * z1 + 0.8 * z2)
            x[i], y[i] = xi, yi


# -- the arms ------------------------------------------------------------------------------------


def run_eagle(x, y, steps, seed, plan):
    runner = eagle.until_done(plan, max_steps=steps, seed=seed, x=x, y=y, a=A, b=B, c=C)
    runner.run()  # no Terminated: it runs exactly `steps`, with no TruncationWarning


def run_numpy(x, y, steps, seed):
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        z1 = rng.standard_normal(x.shape[0])
        z2 = rng.standard_normal(x.shape[0])
        x_new = x + A * y + B * z1
        y[:] = y - C * y + B * (0.6 * z1 + 0.8 * z2)
        x[:] = x_new


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=200_000)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--threads", type=int, default=eagle.get_num_threads())
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    n, steps, seed = args.samples, args.steps, args.seed
    eagle.set_num_threads(args.threads)
    numba.set_num_threads(args.threads)
    plan = eagle.deploy(two_factor, "cpu")

    def fresh():
        rng = np.random.default_rng(1)
        return rng.normal(size=n), rng.normal(size=n)

    # compile everything once, on a few samples, and check the peers draw eagle's numbers
    x0, y0 = fresh()
    results = {}
    for name in ("eagle", "numba_lanes", "numba_sample"):
        x, y = x0[:5000].copy(), y0[:5000].copy()
        if name == "eagle":
            run_eagle(x, y, 7, seed, plan)
        else:
            globals()[name](x, y, A, B, C, np.uint64(seed), 7, 1024)
        results[name] = (x, y)
    for name in ("numba_lanes", "numba_sample"):
        for a, e in zip(results[name], results["eagle"], strict=True):
            assert np.array_equal(a.view(np.int64), e.view(np.int64)), f"{name} != eagle"
    run_numpy(*(v[:100].copy() for v in fresh()), 2, seed)

    arms = {
        "eagle": lambda x, y: run_eagle(x, y, steps, seed, plan),
        "numba_lanes": lambda x, y: numba_lanes(x, y, A, B, C, np.uint64(seed), steps, 1024),
        "numba_sample": lambda x, y: numba_sample(x, y, A, B, C, np.uint64(seed), steps, 1024),
        "numpy": lambda x, y: run_numpy(x, y, steps, seed),
    }
    best = {name: math.inf for name in arms}
    final = {}
    for _ in range(args.rounds):
        for name, arm in arms.items():
            x, y = fresh()
            start = time.perf_counter()
            arm(x, y)
            best[name] = min(best[name], time.perf_counter() - start)
            final[name] = (x, y)
    for name in ("numba_lanes", "numba_sample"):  # full size, bit for bit
        for a, e in zip(final[name], final["eagle"], strict=True):
            assert np.array_equal(a.view(np.int64), e.view(np.int64)), f"{name} != eagle"
    rates = {name: n * steps / seconds for name, seconds in best.items()}
    print(f"two normal draws per step, {n} samples x {steps} steps, {args.threads} threads, "
          f"best of {args.rounds} (numba peers equal to eagle bit for bit)")
    for name, rate in rates.items():
        print(f"  {name:13s} {rate / 1e6:8.2f} M sample-steps/s  ({best[name]:.3f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(samples=n, steps=steps, threads=args.threads, rounds=args.rounds,
                           seconds=best, sample_steps_per_s=rates), f, indent=2)


if __name__ == "__main__":
    main()
