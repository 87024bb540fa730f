"""Hand-written Numba "peer arm" for the oscillator benchmark.

What: the fastest plain-Numba kernel we could write for the oscillator
recurrence (per sample, float64, frozen once terminated)::

    x, v = x + dt*v, v - dt*omega*omega*x;  t += dt;  terminated = t >= t_end

It is the baseline eagle is compared against, so it follows the best known
hand-tuned recipe rather than anything eagle-specific:

* ``parallel=True``, no fastmath (results are bit-identical to a plain NumPy
  masked loop; no FMA contraction).
* Samples are cut into blocks of ``block`` lanes, dealt to threads cyclically
  (``for b in range(tid, nblocks, nthreads)``) so that the ragged
  "spread" workload stays balanced (a plain prange split does not).
* Inside a block the step loop is outermost and the lane loop innermost and
  branch-free: a finished lane is frozen by a select, so LLVM's loop
  vectoriser turns the lane loop into AVX2 (ymm, 4 lanes) code.  ``unroll``
  steps are written out textually per lane visit so lane state stays in
  registers.  A block stops as soon as none of its lanes is live.
* The lane index is ``np.uint64``: with a signed index Numba emits a
  negative-index wraparound select, LLVM then cannot compute the access
  ranges ("unsafe indirect dependence") and the lane loop stays scalar.

Each call advances every live sample by up to ``nsteps`` steps and returns
``(live, steps)``: samples still live, and steps taken by the slowest block
(a step counts when some lane of the block was live at its start).

Run ``python benchmarks/peer_numba.py`` for the G sample-steps/s table.
"""

import time

import numba
import numpy as np
from numba import njit, prange

_STEP = """\
                        c += 1 - d
                        xn = x0 + dt * v0
                        vn = v0 - k * x0
                        tn = t0 + dt
                        x0 = x0 if d else xn
                        v0 = v0 if d else vn
                        t0 = t0 if d else tn
                        d = d | (tn >= te)
"""

_LANES = """\
                    for i in range(np.uint64(lo), np.uint64(hi)):
                        x0 = x[i]; v0 = v[i]; t0 = t[i]; te = t_end[i]
                        k = dt * omega[i] * omega[i]
                        d = terminated[i]
                        c = 0
{steps}\
                        x[i] = x0; v[i] = v0; t[i] = t0; terminated[i] = d
                        live += 1 - d
                        taken = max(taken, c)
"""

_KERNEL = """
def peer_oscillator(nsteps, x, v, t, omega, t_end, dt, terminated):
    n = x.shape[0]
    nblocks = (n + {block} - 1) // {block}
    nthreads = max(1, min(numba.get_num_threads(), nblocks))
    live_t = np.zeros(nthreads, np.int64)
    steps_t = np.zeros(nthreads, np.int64)
    for tid in prange(nthreads):
        for b in range(tid, nblocks, nthreads):
            lo = b * {block}
            hi = min(lo + {block}, n)
            live = 0
            for i in range(np.uint64(lo), np.uint64(hi)):
                live += 1 - terminated[i]
            done = 0
            while live > 0 and done < nsteps:
                live = 0
                taken = 0
                if nsteps - done >= {unroll}:
{unrolled}\
                else:
{single}\
                done += taken
            live_t[tid] += live
            steps_t[tid] = max(steps_t[tid], done)
    return live_t.sum(), steps_t.max()
"""


def make_peer_oscillator(block=2048, unroll=4):
    """Compile the peer kernel ``(nsteps, x, v, t, omega, t_end, dt,
    terminated) -> (live, steps)`` for a block size and step unroll."""
    src = _KERNEL.format(
        block=int(block),
        unroll=int(unroll),
        unrolled=_LANES.format(steps=_STEP * int(unroll)),
        single=_LANES.format(steps=_STEP),
    )
    namespace = {"np": np, "numba": numba, "prange": prange}
    exec(compile(src, f"<peer_oscillator B={block} U={unroll}>", "exec"), namespace)
    return njit(parallel=True, nogil=True, error_model="numpy")(
        namespace["peer_oscillator"]
    )


# --------------------------------------------------------------------------
# Benchmark

DT = 1e-3
MAX_STEPS = 10000


def initial_state(n, config):
    x, v, t = np.ones(n), np.zeros(n), np.zeros(n)
    omega = np.linspace(1.0, 3.0, n)
    if config == "uniform":
        t_end = np.full(n, 1.0)
    else:  # "spread-1000": finishes after 1..1000 steps
        t_end = DT * (1 + 999 * np.arange(n) / (n - 1))
    return x, v, t, omega, t_end, np.zeros(n, np.bool_)


def numpy_reference(n, config):
    """Plain masked NumPy loop; returns final state and per-sample steps."""
    x, v, t, omega, t_end, term = initial_state(n, config)
    steps = np.zeros(n, np.int64)
    for _ in range(MAX_STEPS):
        live = ~term
        if not live.any():
            break
        xn = x + DT * v
        vn = v - DT * omega * omega * x
        tn = t + DT
        x = np.where(live, xn, x)
        v = np.where(live, vn, v)
        t = np.where(live, tn, t)
        term = term | (live & (tn >= t_end))
        steps += live
    return (x, v, t, term), steps


def measure(kernel, n, config, per_call, reference, repeats=7):
    """Median G sample-steps/s over ``repeats`` runs (after one warm-up)."""
    (rx, rv, rt, rterm), rsteps = reference
    times = []
    for rep in range(repeats + 1):
        x, v, t, omega, t_end, term = initial_state(n, config)
        start = time.perf_counter()
        while True:
            live, _ = kernel(per_call, x, v, t, omega, t_end, DT, term)
            if live == 0:
                break
        elapsed = time.perf_counter() - start
        if rep:
            times.append(elapsed)
    exact = all(np.array_equal(a, b) for a, b in ((x, rx), (v, rv), (t, rt), (term, rterm)))
    return rsteps.sum() / np.median(times) / 1e9, exact


def main():
    kernel = make_peer_oscillator(block=2048, unroll=4)
    print(f"peer_numba B=2048 U=4, {numba.get_num_threads()} threads, G sample-steps/s (median)")
    print(f"{'n':>9} {'config':<12} {'per call':>8} {'G/s':>6}  exact")
    for n in (100_000, 1_000_000):
        for config in ("uniform", "spread-1000"):
            reference = numpy_reference(n, config)
            for per_call in (10000, 64):
                gps, exact = measure(kernel, n, config, per_call, reference)
                print(f"{n:>9} {config:<12} {per_call:>8} {gps:6.2f}  {exact}")


if __name__ == "__main__":
    main()
