"""Wide DP5 step kernels on a GPU at one block per SM against two (``__launch_bounds__``).

    python benchmarks/gpu_launch_bounds.py [--n 1000000] [--rounds 5] [--device gpu]

eagle asks ptxas for two 256-thread blocks per SM (``eagle.cuda.emit.MIN_BLOCKS_PER_SM``), so a
step kernel gets at most 128 registers and spills the rest. On an H200 the 3- and 4-state DP5
saveat kernels ran 1.3x faster that way than at one block per SM; this script asks the same of
wider models, whose offline NVRTC reports show spills at 128 registers:

- ``kepler (6)``: 3D two-body orbits, one period at rtol = atol = 1e-8;
- ``chain (12)``: six coupled oscillators (a chain with fixed ends), t = 0..10 at 1e-8.

Each round runs one block, two blocks, and eagle's own choice (two unless the kernel's local
memory passes ``LOCAL_BYTES_FOR_ONE_BLOCK``) interleaved, ``run()`` alone timed after the start
kernel, on fresh copies of the same initial arrays; the final states of the arms are compared bit
for bit (ptxas's register allocation must not change a result). Printed: the median per setting,
one block's time over two blocks' (> 1: two blocks faster), registers and spills per setting,
and eagle's choice with its time.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np

import eagle
import eagle.cuda.emit as emit
import hawk
from eagle.backend import backend_for
from hawk import ode


@hawk.func
def kepler(u, t, p):
    r = math.sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2])
    d = p / (r * r * r)
    return hawk.vector(u[3], u[4], u[5], -d * u[0], -d * u[1], -d * u[2])


@hawk.func
def chain(u, t, p):
    return hawk.vector(u[6], u[7], u[8], u[9], u[10], u[11],
                       p * (u[1] - 2.0 * u[0]), p * (u[0] - 2.0 * u[1] + u[2]),
                       p * (u[1] - 2.0 * u[2] + u[3]), p * (u[2] - 2.0 * u[3] + u[4]),
                       p * (u[3] - 2.0 * u[4] + u[5]), p * (u[4] - 2.0 * u[5]))


def kepler_start(n, rng):
    e = rng.uniform(0.0, 0.6, n)
    return np.vstack([1 - e, np.zeros(n), np.zeros(n), np.zeros(n),
                      np.sqrt((1 + e) / (1 - e)), np.zeros(n)]), np.ones(n), 2 * math.pi


def chain_start(n, rng):
    return (np.vstack([rng.uniform(-1, 1, (6, n)), np.zeros((6, n))]),
            rng.uniform(0.5, 2.0, n), 10.0)


#: arm: (blocks per SM asked first, local bytes above which the backend asks for one); "eagle"
#: is the backend's own policy
ARMS = {"one": (1, math.inf), "two": (2, math.inf),
        "eagle": (emit.MIN_BLOCKS_PER_SM, emit.LOCAL_BYTES_FOR_ONE_BLOCK)}
MODELS = {"kepler (6)": (kepler, 6, kepler_start), "chain (12)": (chain, 12, chain_start)}


def arrays_for(cp, u0, p, t_end, tol):
    n = u0.shape[-1]
    return dict(p=cp.asarray(p), t_end=cp.full(n, t_end), rtol=cp.full(n, tol),
                atol=cp.full(n, tol), max_step=cp.full(n, np.inf), stop_first=0.0,
                stop_every=1.0, save_first=0.0, save_every=1.0, save_count=0.0,
                saved=cp.zeros((0, *u0.shape)), u=cp.asarray(u0), k1=cp.zeros(u0.shape),
                t=cp.zeros(n), h=cp.zeros(n), c=cp.full(n, ode.C_START),
                **{k: cp.zeros(n, np.int64) for k in ("accepted", "rejected", "status",
                                                       "events", "stops", "saves")})


def one_run(cp, kernel, start, device, init):
    """The start kernel, then ``run()`` of the step kernel alone, timed."""
    arrays = {k: v.copy() if hasattr(v, "copy") else v for k, v in init.items()}
    scratch = cp.zeros(arrays["t"].shape, bool)
    eagle.until_done(eagle.deploy(start, device), max_steps=1, terminated=scratch,
                     **{k: arrays[k] for k in ("p", "t_end", "rtol", "atol", "u", "t", "k1",
                                               "h")}).run()
    runner = eagle.until_done(eagle.deploy(kernel, device), max_steps=1_000_000, **arrays)
    cp.cuda.Device().synchronize()
    began = time.perf_counter()
    report = runner.run()
    cp.cuda.Device().synchronize()
    return time.perf_counter() - began, report, arrays


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--device", default="gpu")
    args = parser.parse_args()
    try:
        import cupy as cp

        from eagle.cuda import is_available
        from eagle.cuda.nvrtc import resource_usage
    except ImportError as exc:
        print(f"gpu_launch_bounds: skipped, no GPU ({exc})")
        return
    if not is_available():
        print("gpu_launch_bounds: skipped, no GPU (no usable CUDA device)")
        return

    rng = np.random.default_rng(1)
    for name, (f, k, make) in MODELS.items():
        state = hawk.Vector[k]
        u0, p, t_end = make(args.n, rng)
        init = arrays_for(cp, u0, p, t_end, 1e-8)
        usage = {}
        for blocks in (1, 2):
            kernel = ode.dopri5_kernel(f, state, hawk.Scalar)
            step = [r for r in resource_usage(emit.emit_cuda(kernel.specialize({}), blocks))
                    if r.kernel == emit.STEP_KERNEL][0]
            usage[blocks] = f"{step.registers} registers, {step.spill_stores} B spilled"
        times, finals, chosen = {arm: [] for arm in ARMS}, {}, None
        for _ in range(args.rounds + 1):  # the first round compiles and warms up: not counted
            for arm, (blocks, limit) in ARMS.items():
                emit.MIN_BLOCKS_PER_SM, emit.LOCAL_BYTES_FOR_ONE_BLOCK = blocks, limit
                # The backend keeps one loaded module per program: let it load this arm's.
                loaded = backend_for(args.device)._loaded
                loaded.clear()
                kernel = ode.dopri5_kernel(f, state, hawk.Scalar)
                start = ode.dopri5_start_kernel(f, state, hawk.Scalar)
                seconds, report, arrays = one_run(cp, kernel, start, args.device, init)
                times[arm].append(seconds)
                finals[arm] = cp.asnumpy(arrays["u"])
                if arm == "eagle":
                    chosen = [k.min_blocks for k in loaded.values()
                              if k.program.name == kernel.program.name]
        emit.MIN_BLOCKS_PER_SM, emit.LOCAL_BYTES_FOR_ONE_BLOCK = ARMS["eagle"]
        median = {arm: statistics.median(times[arm][1:]) for arm in ARMS}
        same = all(np.array_equal(finals[arm].view(np.uint8), finals["two"].view(np.uint8))
                   for arm in ARMS)
        print(f"{name}: n = {args.n:,}, {report.steps} steps; one block/SM "
              f"{median['one'] * 1e3:.1f} ms ({usage[1]}), two {median['two'] * 1e3:.1f} ms "
              f"({usage[2]}); one / two = {median['one'] / median['two']:.2f}; eagle's "
              f"choice {chosen} blocks/SM: {median['eagle'] * 1e3:.1f} ms; "
              f"bit-identical: {same}")


if __name__ == "__main__":
    main()
