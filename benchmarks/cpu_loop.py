"""eagle's CPU loop against the fastest kernels we could write by hand in Numba.

    python benchmarks/cpu_loop.py [--quick] [--json PATH] [--threads 1 2] [--repeats 5]
                                  [--only WORKLOAD ...]

Arms, every one on the same data in one process, bit for bit equal:

- ``eagle``: ``eagle.until_done(eagle.deploy(kernel, "cpu"), ...).run()`` of a hawk kernel
  defined in this file (the runner's creation is inside the timing, as a user pays it);
- ``lane``: the hand-written lane-blocked peer (``peer_numba.make_lane_peer``): alive mask
  without per-lane step counters, blocks dealt cyclically to threads, ``U`` steps per lane
  visit, per-sample invariants computed once, exact step count by redoing a block's last visit
  one step at a time from its ping-pong copy. For each workload and thread count it is tuned
  first: U in (4, 8) x block in (1024, 2048, 4096, 8192), each timed twice on every 4th sample
  (every 8th at n >= 1e6), and the fastest is kept;
- ``sample``: the hand-written per-sample peer (``peer_numba.make_sample_peer``): one sample at a
  time, ``while`` ... ``break`` when it is done, chunks of 64 samples dealt cyclically.

Workloads (n = 1,000,000; ``--quick``: 100,000), float64 unless said:

- ``osc-uniform``: the README's oscillator, t_end = 1.0, dt = 1e-3 (1000 steps each);
- ``osc-spread``: the oscillator with sample i stopping after 1..1000 steps (``spread-1000``);
- ``lorenz``: sigma = 10, rho = 28, beta = 8/3, explicit Euler, dt = 2e-3, from random points;
  a sample stops when ``|z - 27| < 0.025`` after a step; about 8% never do within
  ``max_steps = 1300``;
- ``bounce-if``: a ball falling under gravity, an ``if`` reflecting it off the floor with
  restitution c (0.2..0.6 over the samples), stopping when its energy falls below 1% of the
  start (about 320 to 830 steps, dt = 2e-3);
- ``tail-scattered``: the oscillator, 99% of samples stop at 100 steps and 1% at 10,000, the
  long ones at random positions; ``tail-sorted``: the same targets in ascending order;
- ``osc-uniform-f32``: the README's oscillator in float32;
- steps dominated by math functions or integer work (issue 27; the two of library calls on a
  tenth of n, a hundred times longer a step), each written as a user would,
  with ``@hawk.func`` helpers: ``pendulum-rk4``: a driven damped pendulum,
  ``theta'' = -sin(theta) - gamma theta' + A cos(wd t)`` (gamma = 0.5, wd = 2/3, A = 0.9..1.5
  over the samples), classic RK4 with dt = 0.02 (4 sin and 4 cos a step), 500 steps each;
  ``brownian-lcg``: a first passage, ``x += 0.1 (u - 0.5)`` with ``u`` from the top 53 bits
  of a per-sample uint64 LCG (``state = state * 6364136223846793005 + 1442695040888963407``,
  wrapping), stopping at ``|x| > 1`` (65 to 5000 steps, median about 940, mean about 1230;
  0.9% never do within ``max_steps = 5000``); ``gbm-barrier``: geometric Brownian motion,
  ``S *= exp((mu - sigma^2/2) dt + sigma sqrt(dt) z)`` (mu = 0.05, sigma = 0.1..0.5 over the
  samples, dt = 1e-3), ``z`` by Box-Muller (log, sqrt, cos) from two draws of the same LCG,
  knocked out when ``S > 1.3`` (a third of the samples, from step 19 on: 6% at sigma = 0.1,
  53% at 0.5), else stopped at t = 1 (1000 steps).

Protocol: before anything is timed, every arm (both unrolls, small and ragged blocks, one and
two threads) is run on a small instance (n = 1061) and checked bit for bit against
``hawk.reference`` (state, flags, the slowest sample's steps and, for the per-sample peer,
every sample's steps). At full n, a counting run of the per-sample peer gives the useful
sample-steps (steps actually taken, summed over samples) and the state every timed run must
equal bit for bit, arm by arm, repetition by repetition. Per workload and thread count: the
lane peer's tuning, one untimed warm-up round, then ``--repeats`` rounds of eagle, lane,
sample (interleaved). Reported: the median wall time as G sample-steps/s (useful steps over
the median time), its min-max spread, eagle's speed over each peer's (>1: eagle faster), and
each as a fraction of the machine's bit-exact float64 limit.

The limit is measured on the machine that runs this (``cpu_limit.py``): a tight hand-written
Numba kernel of the oscillator's step (3 adds + 2 muls + 1 compare per step, alive-masked
selects that AVX-512 folds into merge-masked adds, no per-lane counters), on lanes held in L1,
each lane taking many steps per visit; the best rate per thread of a small grid of shapes, run
on 1 and on 2 threads, before and after the workloads, is the limit per core (a ceiling: noise
only lowers it), and k threads' limit is k times it. Process CPU time is recorded beside wall
time: on this shared machine a median CPU share under 1 (printed) means other tenants held part
of the cores during that thread count's runs. Nothing is printed until every check has passed;
progress goes to stderr; the first run compiles the peers (minutes), later runs load them from
Numba's cache (``benchmarks/results/peer_cache``). ``--json`` writes the raw
samples (wall and process CPU seconds per run), the tuning, the limit's shapes and the machine
(CPU model, flags, versions, threads, load, date, git commit).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numba  # noqa: E402
from cpu_limit import measure_limit  # noqa: E402
from peer_numba import OSCILLATOR, Recurrence, make_lane_peer, make_sample_peer  # noqa: E402

import eagle  # noqa: E402
import hawk  # noqa: E402
from eagle.bench import oscillator as spread_oscillator  # noqa: E402  (t_end per sample)
from eagle.bench import t_end_of  # noqa: E402
from hawk import Mutable, Param, Scalar, Terminated  # noqa: E402

DT = 1e-3
MAX_STEPS = 10_000
UNROLLS = (4, 8)
BLOCKS = (1024, 2048, 4096, 8192)
CHUNK = 64  # the per-sample peer's chunk of samples dealt to a thread at a time
CHECK_N = 1061  # the small instance checked against hawk.reference (ragged blocks)
ARMS = ("eagle", "lane", "sample")


# ---------------------------------------------------------------------------------------------
# The hawk kernels (eagle's arm)

@hawk.kernel
def oscillator(omega: Scalar, t_end: Param, dt: Param, terminated: Terminated,
               x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    x0, v0 = x, v
    x = x0 + dt * v0
    v = v0 - dt * omega * omega * x0
    t += dt
    terminated = t >= t_end


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
def bounce(c: Scalar, g: Param, dt: Param, e_stop: Param, terminated: Terminated,
           y: Mutable[Scalar], vy: Mutable[Scalar]):
    vy = vy - dt * g
    y = y + dt * vy
    if y < 0.0:
        y = -y
        vy = -c * vy
    terminated = 0.5 * vy * vy + g * y < e_stop


# The LCG's per-sample state is named ``state``: ``seed`` is a keyword of eagle.until_done.
LCG_MUL, LCG_ADD = 6364136223846793005, 1442695040888963407  # Knuth's MMIX LCG, mod 2**64


@hawk.func
def lcg(seed):
    """The next state of a 64-bit LCG (wrapping) and a uniform in [0, 1) from its top 53 bits."""
    seed = seed * LCG_MUL + LCG_ADD
    return seed, float(seed >> 11) * 2.0**-53


@hawk.func
def pendulum_accel(theta, omega, t, drive, gamma, wd):
    return -math.sin(theta) - gamma * omega + drive * math.cos(wd * t)


@hawk.kernel
def pendulum(drive: Scalar, gamma: Param, wd: Param, dt: Param, t_end: Param,
             terminated: Terminated, theta: Mutable[Scalar], omega: Mutable[Scalar],
             t: Mutable[Scalar]):
    h2 = 0.5 * dt
    k1x = omega
    k1v = pendulum_accel(theta, omega, t, drive, gamma, wd)
    k2x = omega + h2 * k1v
    k2v = pendulum_accel(theta + h2 * k1x, k2x, t + h2, drive, gamma, wd)
    k3x = omega + h2 * k2v
    k3v = pendulum_accel(theta + h2 * k2x, k3x, t + h2, drive, gamma, wd)
    k4x = omega + dt * k3v
    k4v = pendulum_accel(theta + dt * k3x, k4x, t + dt, drive, gamma, wd)
    theta = theta + dt / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)
    omega = omega + dt / 6.0 * (k1v + 2.0 * k2v + 2.0 * k3v + k4v)
    t += dt
    terminated = t >= t_end


@hawk.kernel(dtypes={"state": "uint64"})
def brownian_lcg(sd: Param, barrier: Param, terminated: Terminated, state: Mutable[Scalar],
                 x: Mutable[Scalar]):
    state, u = lcg(state)
    x = x + sd * (u - 0.5)
    terminated = abs(x) > barrier


@hawk.kernel(dtypes={"state": "uint64"})
def gbm_barrier(sigma: Scalar, mu: Param, dt: Param, barrier: Param, t_end: Param,
                terminated: Terminated, state: Mutable[Scalar], price: Mutable[Scalar],
                t: Mutable[Scalar]):
    state, u1 = lcg(state)
    state, u2 = lcg(state)
    z = math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)  # Box-Muller
    price = price * math.exp((mu - 0.5 * sigma * sigma) * dt + sigma * math.sqrt(dt) * z)
    t += dt
    terminated = price > barrier or t >= t_end


# ---------------------------------------------------------------------------------------------
# The same steps by hand (the peers'), in the kernels' own order of operations

OSC_PARAM = Recurrence(
    name="oscillator_param", state=("x", "v", "t"), inputs=("omega",), uniforms=("dt", "t_end"),
    invariants=(("k", "dt * omega * omega"),), lane=("k",),
    update=("x_n = x + dt * v", "v_n = v - k * x", "t_n = t + dt"), stop="t >= t_end")
OSC_PARAM_F32 = replace(OSC_PARAM, name="oscillator_param_f32", dtype="float32")
LORENZ = Recurrence(
    name="lorenz", state=("x", "y", "z"), uniforms=("sigma", "rho", "beta", "dt", "tol"),
    update=("dx = sigma * (y - x)", "dy = x * (rho - z) - y", "dz = x * y - beta * z",
            "x_n = x + dt * dx", "y_n = y + dt * dy", "z_n = z + dt * dz"),
    stop="abs(z - 27.0) < tol")
BOUNCE = Recurrence(
    name="bounce", state=("y", "vy"), inputs=("c",), uniforms=("g", "dt", "e_stop"), lane=("c",),
    update=("w = vy - dt * g", "h = y + dt * w", "hit = h < 0.0",
            "y_n = -h if hit else h", "vy_n = -c * w if hit else w"),
    stop="0.5 * vy * vy + g * y < e_stop")


def _lcg(new: str, seed: str, u: str) -> tuple[str, str]:
    """``lcg`` by hand: Numba types a bare int as int64 (and uint64 with int64 as float64), so
    the constants are written as uint64."""
    return (f"{new} = {seed} * np.uint64({LCG_MUL}) + np.uint64({LCG_ADD})",
            f"{u} = np.float64({new} >> np.uint64(11)) * 2.0**-53")


def _accel(theta: str, omega: str, t: str) -> str:
    """``pendulum_accel`` by hand, of the expressions ``theta``, ``omega`` and ``t``."""
    return f"-math.sin({theta}) - gamma * ({omega}) + drive * math.cos(wd * ({t}))"


PENDULUM = Recurrence(
    name="pendulum_rk4", state=("theta", "omega", "t"), inputs=("drive",),
    uniforms=("gamma", "wd", "dt", "t_end"), lane=("drive",),
    update=("h2 = 0.5 * dt", "k1x = omega", f"k1v = {_accel('theta', 'omega', 't')}",
            "k2x = omega + h2 * k1v", f"k2v = {_accel('theta + h2 * k1x', 'k2x', 't + h2')}",
            "k3x = omega + h2 * k2v", f"k3v = {_accel('theta + h2 * k2x', 'k3x', 't + h2')}",
            "k4x = omega + dt * k3v", f"k4v = {_accel('theta + dt * k3x', 'k4x', 't + dt')}",
            "theta_n = theta + dt / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x)",
            "omega_n = omega + dt / 6.0 * (k1v + 2.0 * k2v + 2.0 * k3v + k4v)", "t_n = t + dt"),
    stop="t >= t_end")
BROWNIAN_LCG = Recurrence(
    name="brownian_lcg", state=("state", "x"), uniforms=("sd", "barrier"),
    dtypes=(("state", "uint64"),),
    update=(*_lcg("state_n", "state", "u"), "x_n = x + sd * (u - 0.5)"),
    stop="abs(x) > barrier")
GBM_BARRIER = Recurrence(
    name="gbm_barrier", state=("state", "price", "t"), inputs=("sigma",),
    uniforms=("mu", "dt", "barrier", "t_end"), lane=("sigma",), dtypes=(("state", "uint64"),),
    update=(*_lcg("state1", "state", "u1"), *_lcg("state_n", "state1", "u2"),
            "z = math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)",
            "price_n = price * math.exp((mu - 0.5 * sigma * sigma) * dt"
            " + sigma * math.sqrt(dt) * z)",
            "t_n = t + dt"),
    stop="price > barrier or t >= t_end")


def _oscillator_arrays(n: int, dtype=np.float64, t_end=None) -> dict:
    arrays = dict(x=np.ones(n, dtype), v=np.zeros(n, dtype), t=np.zeros(n, dtype),
                  omega=np.linspace(1.0, 3.0, n).astype(dtype))
    if t_end is not None:
        arrays["t_end"] = t_end
    return arrays


def _seeds(n: int) -> np.ndarray:
    return np.random.default_rng(27).integers(0, 2**64 - 1, n, np.uint64, endpoint=True)


def _lorenz_arrays(n: int) -> dict:
    rng = np.random.default_rng(13)
    return dict(x=rng.uniform(-15, 15, n), y=rng.uniform(-15, 15, n), z=rng.uniform(5, 40, n))


@dataclass
class Workload:
    name: str
    what: str
    kernel: object
    recurrence: Recurrence
    max_steps: int
    arrays: Callable[[int], dict]  # n -> the state and per-sample inputs, by name
    uniforms: dict
    # of n, the samples this workload runs: a step of library calls is a hundred times longer
    # than the oscillator's, and a tenth of the samples still takes a second per run
    share: float = 1.0

    def peer_arguments(self, arrays: dict, terminated: np.ndarray) -> tuple:
        r = self.recurrence
        return (*(arrays[s] for s in r.state), *(arrays[v] for v in r.inputs),
                *(self.uniforms[u] for u in r.uniforms), terminated)


WORKLOADS = [
    Workload("osc-uniform", "oscillator, t_end = 1.0, dt = 1e-3", oscillator, OSC_PARAM,
             MAX_STEPS, _oscillator_arrays, dict(dt=DT, t_end=1.0)),
    Workload("osc-spread", "oscillator, sample i stops after 1..1000 steps", spread_oscillator,
             OSCILLATOR, MAX_STEPS,
             lambda n: _oscillator_arrays(n, t_end=t_end_of(n, "spread-1000")), dict(dt=DT)),
    Workload("lorenz", "Lorenz, Euler dt = 2e-3, stop |z - 27| < 0.025", lorenz, LORENZ, 1300,
             _lorenz_arrays, dict(sigma=10.0, rho=28.0, beta=8.0 / 3.0, dt=2e-3, tol=0.025)),
    Workload("bounce-if", "bouncing ball (an if), stop at 1% energy", bounce, BOUNCE, MAX_STEPS,
             lambda n: dict(y=np.ones(n), vy=np.zeros(n), c=np.linspace(0.2, 0.6, n)),
             dict(g=9.81, dt=2e-3, e_stop=0.01 * 9.81)),
    Workload("tail-scattered", "oscillator, 99% stop at 100 steps, 1% at 10,000, random places",
             spread_oscillator, OSCILLATOR, MAX_STEPS,
             lambda n: _oscillator_arrays(n, t_end=t_end_of(n, "tail-scattered")), dict(dt=DT)),
    Workload("tail-sorted", "the same targets, sorted", spread_oscillator, OSCILLATOR, MAX_STEPS,
             lambda n: _oscillator_arrays(n, t_end=t_end_of(n, "tail-sorted")), dict(dt=DT)),
    Workload("osc-uniform-f32", "oscillator in float32", oscillator, OSC_PARAM_F32, MAX_STEPS,
             lambda n: _oscillator_arrays(n, np.float32),
             dict(dt=np.float32(DT), t_end=np.float32(1.0))),
    Workload("pendulum-rk4", "driven damped pendulum, RK4 (4 sin + 4 cos a step), 500 steps;"
             " n / 10 samples", pendulum, PENDULUM, MAX_STEPS,
             lambda n: dict(theta=np.full(n, 0.2), omega=np.zeros(n), t=np.zeros(n),
                            drive=np.linspace(0.9, 1.5, n)),
             dict(gamma=0.5, wd=2.0 / 3.0, dt=0.02, t_end=499.5 * 0.02), share=0.1),
    Workload("brownian-lcg", "uniform-step walk from a uint64 LCG, stop at |x| > 1",
             brownian_lcg, BROWNIAN_LCG, 5000,
             lambda n: dict(state=_seeds(n), x=np.zeros(n)), dict(sd=0.1, barrier=1.0)),
    Workload("gbm-barrier", "GBM, LCG Box-Muller, knocked out above 1.3, 1000 steps;"
             " n / 10 samples", gbm_barrier, GBM_BARRIER, MAX_STEPS,
             lambda n: dict(state=_seeds(n), price=np.ones(n), t=np.zeros(n),
                            sigma=np.linspace(0.1, 0.5, n)),
             dict(mu=0.05, dt=1e-3, barrier=1.3, t_end=999.5e-3), share=0.1),
]


# ---------------------------------------------------------------------------------------------
# Arms

class Arms:
    """The three arms of one workload; each call runs one on ``arrays`` in place and returns the
    steps the slowest sample took."""

    def __init__(self, w: Workload):
        self.w = w
        self.lanes = {u: make_lane_peer(w.recurrence, u) for u in UNROLLS}
        self.sample = make_sample_peer(w.recurrence)
        self.counting = make_sample_peer(w.recurrence, counts=True)
        self.unroll, self.block = UNROLLS[-1], BLOCKS[1]

    def eagle(self, arrays: dict, terminated: np.ndarray) -> int:
        runner = eagle.until_done(eagle.deploy(self.w.kernel, "cpu"), max_steps=self.w.max_steps,
                                  **arrays, **self.w.uniforms, terminated=terminated)
        return runner.run().steps

    def lane(self, arrays: dict, terminated: np.ndarray, unroll=None, block=None) -> int:
        return int(self.lanes[unroll or self.unroll](
            numba.get_num_threads(), self.w.max_steps, block or self.block,
            *self.w.peer_arguments(arrays, terminated)))

    def per_sample(self, arrays: dict, terminated: np.ndarray) -> int:
        return int(self.sample(numba.get_num_threads(), self.w.max_steps, CHUNK,
                               *self.w.peer_arguments(arrays, terminated)))

    def count(self, arrays: dict, terminated: np.ndarray) -> tuple[int, np.ndarray]:
        counts = np.zeros(len(terminated), np.int64)
        steps = self.counting(numba.get_num_threads(), self.w.max_steps, CHUNK,
                              *self.w.peer_arguments(arrays, terminated), counts)
        return int(steps), counts

    def run(self, arm: str, arrays: dict, terminated: np.ndarray) -> int:
        return {"eagle": self.eagle, "lane": self.lane, "sample": self.per_sample}[arm](
            arrays, terminated)


def set_threads(k: int) -> None:
    eagle.set_num_threads(k)
    numba.set_num_threads(k)


def fresh(master: dict) -> tuple[dict, np.ndarray]:
    n = len(next(iter(master.values())))
    return {k: v.copy() for k, v in master.items()}, np.zeros(n, np.bool_)


def bits(array: np.ndarray) -> np.ndarray:
    return array.view(f"u{array.dtype.itemsize}")


def same(a: dict, ta: np.ndarray, b: dict, tb: np.ndarray) -> bool:
    """Bit for bit: every array's bytes (so -0.0 != 0.0 and NaN payloads count) and the flags."""
    return np.array_equal(ta, tb) and a.keys() == b.keys() and all(
        a[k].dtype == b[k].dtype and np.array_equal(bits(a[k]), bits(b[k])) for k in a)


def _fail(message: str) -> None:
    raise SystemExit(f"cpu_loop: {message}")


def reference(w: Workload, n: int) -> tuple[dict, np.ndarray, np.ndarray]:
    """The final state, flags and per-sample steps from hawk.reference (the NumPy executor)."""
    arrays, terminated = fresh(w.arrays(n))
    program = w.kernel.specialize({k: v.dtype for k, v in arrays.items()} | {
        k: np.asarray(v).dtype for k, v in w.uniforms.items()})
    bound = {**arrays, **w.uniforms, program.terminated_param.name: terminated}
    steps = np.zeros(n, np.int64)
    for _ in range(w.max_steps):
        alive = ~terminated
        if not alive.any():
            break
        hawk.reference.step(program, bound)
        steps += alive
    return arrays, terminated, steps


def check_small(w: Workload, arms: Arms, threads: list[int]) -> dict:
    """Every arm against hawk.reference on a small instance; raises on any difference."""
    ref_arrays, ref_term, ref_steps = reference(w, CHECK_N)
    slowest = int(ref_steps.max())
    variants = [("eagle", arms.eagle)]
    variants += [(f"lane U={u} B={b}", lambda a, t, u=u, b=b: arms.lane(a, t, u, b))
                 for u in UNROLLS for b in (64, 1024)]
    variants += [("sample", arms.per_sample)]
    for k in threads:
        set_threads(k)
        for label, run in variants:
            arrays, terminated = fresh(w.arrays(CHECK_N))
            steps = run(arrays, terminated)
            if not same(arrays, terminated, ref_arrays, ref_term):
                _fail(f"{w.name}: {label} ({k} threads) differs from hawk.reference (n={CHECK_N})")
            if steps != slowest:
                _fail(f"{w.name}: {label} ({k} threads) reports {steps} steps, the reference "
                      f"{slowest}")
        arrays, terminated = fresh(w.arrays(CHECK_N))
        steps, counts = arms.count(arrays, terminated)
        if not np.array_equal(counts, ref_steps) or steps != slowest:
            _fail(f"{w.name}: the per-sample peer's step counts differ from the reference")
    return dict(n=CHECK_N, slowest=slowest, useful=int(ref_steps.sum()))


def lane_utilisation(counts: np.ndarray, block: int) -> float:
    """Useful steps over the lane-steps a lane-blocked kernel with ``block`` lanes computes (a
    block runs until its slowest sample is done)."""
    n = len(counts)
    padded = np.zeros(-(-n // block) * block, counts.dtype)
    padded[:n] = counts
    per_block = padded.reshape(-1, block).max(axis=1)
    sizes = np.minimum(block, n - np.arange(len(per_block)) * block)
    return float(counts.sum() / (per_block * sizes).sum())


def tune(w: Workload, arms: Arms, master: dict, n: int) -> list[dict]:
    """Time every (unroll, block) of the lane peer twice on a strided subset; keep the fastest."""
    stride = 8 if n >= 1_000_000 else 4
    subset = {k: v[::stride].copy() for k, v in master.items()}
    trials = []
    for u in UNROLLS:
        for b in BLOCKS:
            seconds = []
            for _ in range(3):  # the first warms up
                arrays, terminated = fresh(subset)
                start = time.perf_counter()
                arms.lane(arrays, terminated, u, b)
                seconds.append(time.perf_counter() - start)
            trials.append(dict(unroll=u, block=b, seconds=min(seconds[1:])))
    best = min(trials, key=lambda t: t["seconds"])
    arms.unroll, arms.block = best["unroll"], best["block"]
    return trials


def measure(w: Workload, arms: Arms, master: dict, truth: tuple, repeats: int) -> dict:
    """A warm-up round, then ``repeats`` interleaved rounds of every arm; every run checked."""
    samples = {arm: [] for arm in ARMS}
    truth_arrays, truth_term, truth_steps = truth
    for round_ in range(repeats + 1):
        for arm in ARMS:
            arrays, terminated = fresh(master)
            cpu0, start = time.process_time(), time.perf_counter()
            steps = arms.run(arm, arrays, terminated)
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu0
            if not same(arrays, terminated, truth_arrays, truth_term) or steps != truth_steps:
                _fail(f"{w.name}: {arm} disagrees with the other arms (round {round_}, "
                      f"steps {steps} vs {truth_steps})")
            if round_:
                samples[arm].append(dict(wall_s=wall, cpu_s=cpu))
    return samples


# ---------------------------------------------------------------------------------------------
# Machine and output

def machine() -> dict:
    info = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            key = key.strip()
            if key in ("model name", "cpu family", "model", "stepping", "cpu MHz") \
                    and key not in info:
                info[key] = value.strip()
            if key == "flags" and "avx512" not in info:
                flags = value.split()
                info["avx512"] = sorted(f for f in flags if f.startswith("avx512"))
                info["avx2"] = "avx2" in flags
    except OSError:
        pass
    try:
        import llvmlite.binding as llvm

        info["llvm_host_cpu"] = llvm.get_host_cpu_name()
    except Exception:  # pragma: no cover - informational only
        pass

    def git(*args):
        try:
            return subprocess.run(["git", *args], capture_output=True, text=True, timeout=10,
                                  cwd=Path(__file__).resolve().parent).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None

    return dict(cpu=info, machine=platform.machine(), cpus=os.cpu_count(),
                affinity=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                else None,
                python=platform.python_version(), numpy=np.__version__,
                numba=numba.__version__, eagle=eagle.__version__,
                date=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                git_commit=git("rev-parse", "HEAD"), git_dirty=bool(git("status", "--porcelain")),
                loadavg_start=_loadavg())


def _threading_layer() -> str | None:
    try:
        return numba.threading_layer()
    except ValueError:
        return None


def _loadavg() -> list[float] | None:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return None


def _g(rate: float, width: int) -> str:
    """A rate in G/s: two decimals, or three significant digits under 1 (the math-bound
    workloads run at hundredths of a G/s)."""
    return f"{rate:{width}.2f}" if rate >= 1 else f"{rate:{width}.3g}"


def _rate(useful: int, seconds: list[float]) -> tuple[float, float, float]:
    """G sample-steps/s at the median time, and at the slowest and fastest runs."""
    return (useful / np.median(seconds) / 1e9, useful / max(seconds) / 1e9,
            useful / min(seconds) / 1e9)


def report(results: dict) -> str:
    limits = results["limit"]
    out = []
    m = results["meta"]
    cpu = m["cpu"]
    out.append(f"eagle {m['eagle']} vs hand-written Numba peers; {cpu.get('model name', '?')} "
               f"(family {cpu.get('cpu family', '?')} model {cpu.get('model', '?')}, "
               f"LLVM: {cpu.get('llvm_host_cpu', '?')}), numba {m['numba']}, "
               f"n = {results['n']:,}, {results['repeats']} interleaved rounds after a warm-up")
    out.append("")
    per_core = results["limit_per_core"] / 1e9
    out.append(f"Bit-exact float64 limit per core, measured here: {per_core:.2f} G sample-steps/s "
               f"(k threads: k x that)")
    out.append("  cpu_limit.py: the oscillator's step (3 adds + 2 muls + 1 compare) alive-masked, "
               "no counters, lanes in L1; the best rate per")
    out.append("  thread of a grid of shapes, on 1 and on 2 threads, before and after the "
               "workloads (noise only lowers it):")
    for k, lim in sorted(limits.items(), key=lambda kv: int(kv[0])):
        rates = ", ".join(f"{r / 1e9:.2f}" for r in lim["all"])
        out.append(f"  {k} thread(s): {rates} G/s; best shape unroll {lim['unroll']}, "
                   f"{lim['streams']} stream(s), {lim['lanes']} lanes (zmm={lim['code']['zmm']}, "
                   f"blends={lim['code']['blends']}, masked ops={lim['code']['masked']})")
    out.append("")
    out.append("Workloads (useful = steps actually taken, summed over samples; util = useful / "
               "lane-steps of a 2048-lane-block kernel):")
    out.append(f"  {'workload':<16} {'max_steps':>9} {'useful':>9} {'slowest':>7} "
               f"{'never done':>10} {'util':>6}  what")
    for name, wr in results["workloads"].items():
        out.append(f"  {name:<16} {wr['max_steps']:>9} {wr['useful'] / 1e9:>8.3f}G "
                   f"{wr['slowest']:>7} {wr['never_done']:>10} {wr['util_2048']:>6.1%}  "
                   f"{wr['what']}")
    out.append("")
    out.append("G sample-steps/s: median [min-max]; eagle/peer = peer time / eagle time (>1: eagle "
               "faster);")
    out.append("(U, B): the lane peer's tuned unroll and block;")
    out.append("% of the float64 limit (threads x per core); float32 rows are measured against it "
               "too (a zmm holds 16 float32 lanes, 8 float64)")
    header = (f"  {'thr':>3} {'workload':<16} {'eagle':>22} {'lane peer':>22} {'(U, B)':>11} "
              f"{'sample peer':>22} {'e/lane':>7} {'e/sample':>8} {'eagle%':>7} {'lane%':>6}")
    out.append(header)
    for k in results["threads"]:
        for name, wr in results["workloads"].items():
            r = wr["runs"][str(k)]
            lim = per_core * k
            rates = {a: _rate(wr["useful"], [s["wall_s"] for s in r["samples"][a]])
                     for a in ARMS}
            cells = [f"{_g(rates[a][0], 6)} [{_g(rates[a][1], 6)}-{_g(rates[a][2], 6)}]"
                     for a in ARMS]
            shape = f"({r['unroll']}, {r['block']})"
            out.append(f"  {k:>3} {name:<16} {cells[0]:>22} {cells[1]:>22} "
                       f"{shape:>11} {cells[2]:>22} "
                       f"{rates['eagle'][0] / rates['lane'][0]:>6.2f}x "
                       f"{rates['eagle'][0] / rates['sample'][0]:>7.2f}x "
                       f"{rates['eagle'][0] / lim:>7.0%} {rates['lane'][0] / lim:>6.0%}")
    out.append("")
    wl = results["workloads"]
    for k in results["threads"]:
        def ratio(a: str, b: str, arm: str, k=k) -> float:
            def median(name):
                return np.median([s["wall_s"] for s in wl[name]["runs"][str(k)]["samples"][arm]])
            return float(median(a) / median(b))

        notes = []
        if "tail-scattered" in wl and "tail-sorted" in wl:
            t = {arm: ratio("tail-scattered", "tail-sorted", arm) for arm in ARMS}
            notes.append(f"time on tail-scattered / tail-sorted: eagle {t['eagle']:.1f}x, "
                         f"lane peer {t['lane']:.1f}x, sample peer {t['sample']:.1f}x")
        if "osc-uniform" in wl and "osc-uniform-f32" in wl:
            f = {arm: ratio("osc-uniform", "osc-uniform-f32", arm) for arm in ARMS[:2]}
            notes.append(f"float32 / float64 speed: eagle {f['eagle']:.2f}x, "
                         f"lane peer {f['lane']:.2f}x")
        share = [s["cpu_s"] / (s["wall_s"] * k) for wr in wl.values()
                 for arm in ARMS for s in wr["runs"][str(k)]["samples"][arm]]
        busy = " (under 1: other processes had part of the cores)" \
            if np.median(share) < 0.9 else ""
        notes.append(f"process CPU time / (wall x threads): median {np.median(share):.2f}{busy}")
        out.append(f"  {k} thread(s): " + "; ".join(notes))
    out.append(f"  load average at start {m['loadavg_start']}, at end {m.get('loadavg_end')}")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 100,000 (a smoke run)")
    parser.add_argument("--json", type=Path, default=Path("benchmarks/results/cpu_loop.json"))
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", nargs="+", help="run only these workloads")
    args = parser.parse_args()
    n = 100_000 if args.quick else 1_000_000
    workloads = [w for w in WORKLOADS if not args.only or w.name in args.only]
    started = time.perf_counter()

    def progress(message: str) -> None:
        print(f"[{time.perf_counter() - started:6.1f} s] {message}", file=sys.stderr, flush=True)

    results = dict(meta=machine(), n=n, repeats=args.repeats, threads=args.threads,
                   quick=args.quick, limit={}, workloads={})
    limits = {k: [] for k in sorted({1, *args.threads})}

    def measure_limits(when: str) -> None:
        for k in limits:
            progress(f"measuring the float64 limit on {k} thread(s) ({when})")
            limits[k].append(measure_limit(k))

    measure_limits("before")
    for w in workloads:
        progress(f"{w.name}: compiling the peers, checking every arm against hawk.reference")
        arms = Arms(w)
        small = check_small(w, arms, args.threads)
        samples = int(n * w.share)
        master = w.arrays(samples)
        arrays, terminated = fresh(master)
        slowest, counts = arms.count(arrays, terminated)  # the useful steps, and the truth
        truth = (arrays, terminated, slowest)
        wr = dict(what=w.what, max_steps=w.max_steps, useful=int(counts.sum()), slowest=slowest,
                  never_done=int((~terminated).sum()), util_2048=lane_utilisation(counts, 2048),
                  check=small, runs={})
        for k in args.threads:
            set_threads(k)
            progress(f"{w.name}: {k} thread(s): tuning the lane peer")
            trials = tune(w, arms, master, samples)
            progress(f"{w.name}: {k} thread(s): lane peer U={arms.unroll} B={arms.block}; "
                     f"{args.repeats} rounds")
            samples = measure(w, arms, master, truth, args.repeats)
            wr["runs"][str(k)] = dict(unroll=arms.unroll, block=arms.block, tuning=trials,
                                      samples=samples)
        results["workloads"][w.name] = wr
    measure_limits("after")
    for k, runs in limits.items():
        best = max(runs, key=lambda r: r["sample_steps_per_s"])
        results["limit"][str(k)] = dict(best, all=[r["sample_steps_per_s"] for r in runs])
    results["limit_per_core"] = max(lim["sample_steps_per_s"] / int(k)
                                    for k, lim in results["limit"].items())
    results["meta"]["loadavg_end"] = _loadavg()
    results["meta"]["threading_layer"] = _threading_layer()
    results["meta"]["seconds"] = time.perf_counter() - started
    print(report(results))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=1))
    print(f"\nevery arm agreed bit for bit with the others and with hawk.reference; "
          f"wrote {args.json} ({results['meta']['seconds']:.0f} s)")


if __name__ == "__main__":
    main()
