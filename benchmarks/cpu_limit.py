"""The bit-exact float64 limit of this machine's cores for the oscillator's step, measured.

One step of the oscillator is 3 adds, 2 multiplies and 1 compare per sample (``x + dt*v``,
``v - k*x``, ``t + dt``, ``t >= t_end``; ``k = dt*omega*omega`` is per sample, not per step). A
finished sample is frozen by selects that AVX-512 folds into merge-masked adds and a masked
compare, so those 6 floating-point operations are all a step needs; without FMA contraction or
reassociation (bit-exactness forbids both) nothing can make them fewer.

How it is measured: a hand-written Numba kernel of exactly that recurrence (the alive form of
``peer_numba.py``, ``x = x_n if a else x``, ``a &= not (t >= t_end)``), with no control flow
but the lane loop, on ``lanes`` samples held in L1 (each lane visited ``unroll`` steps at a
time, thousands of visits, ``t_end = inf`` so every lane stays live and does every step; with
2 streams each iteration of the lane loop carries two independent lanes, i and i + lanes/2).
LLVM vectorises the lane loop to zmm registers with merge-masked adds and masked compares (no
blends: ``limit_kernel_shape`` reads the assembly), and out-of-order execution overlaps the
independent lane vectors that hide the latency of a step (mul then add, twice, per step).
Each shape of a small grid (unroll x streams x lanes) is timed ``REPEATS`` times, on each of
``threads`` threads (each its own lanes); the limit is the best rate seen, in sample-steps/s:
a ceiling, since noise on a shared machine can only lower it. ``cpu_loop.py`` measures it on 1
and on 2 threads, before and after its workloads, and takes the best rate per thread as the
limit per core (k threads: k times it); ``python benchmarks/cpu_limit.py`` prints the grid.
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np
from peer_numba import load_source

__all__ = ["measure_limit", "limit_kernel_shape"]

def _source(unroll: int, streams: int) -> str:
    """The limit kernel: ``streams`` independent lanes per iteration of the lane loop (lanes i and
    i + q, ...), each taking ``unroll`` steps of the oscillator in the alive form."""
    lane = ["x", "v", "t", "k", "t_end", "a"]
    arrays = {"x": "xs", "v": "vs", "t": "ts", "k": "ks", "t_end": "t_ends", "a": "alive"}
    body = []
    for w in range(streams):
        body.append(f"j{w} = i + np.uint64({w}) * q")
        body += [f"{name}{w} = {arrays[name]}[j{w}]" for name in lane]
    for _ in range(unroll):
        for w in range(streams):
            body += [f"x_n{w} = x{w} + dt * v{w}", f"v_n{w} = v{w} - k{w} * x{w}",
                     f"t_n{w} = t{w} + dt", f"x{w} = x_n{w} if a{w} else x{w}",
                     f"v{w} = v_n{w} if a{w} else v{w}", f"t{w} = t_n{w} if a{w} else t{w}",
                     f"a{w} = a{w} & (not (t{w} >= t_end{w}))"]
    for w in range(streams):
        body += [f"{arrays[name]}[j{w}] = {name}{w}" for name in ("x", "v", "t", "a")]
    return _SOURCE.format(body="\n".join("        " + line for line in body))


_SOURCE = """
@njit(nogil=True, error_model="numpy", cache=True)
def visit(q, xs, vs, ts, alive, ks, t_ends, dt):
    for i in range(np.uint64(0), np.uint64(q)):
{body}


@njit(parallel=True, nogil=True, error_model="numpy", cache=True)
def limit(nthreads, visits, m, streams, dt):
    check = np.zeros(nthreads)
    q = np.uint64(m // streams)
    for tid in prange(nthreads):
        xs = np.ones(m); vs = np.zeros(m); ts = np.zeros(m); alive = np.ones(m, np.bool_)
        ks = np.empty(m); t_ends = np.full(m, np.inf)
        for i in range(m):
            omega = 1.0 + 2.0 * i / m
            ks[i] = dt * omega * omega
        for _ in range(visits):
            visit(q, xs, vs, ts, alive, ks, t_ends, dt)
        check[tid] = xs.sum() + vs.sum() + ts.sum() + alive.sum()
    return check.sum()
"""

# (unroll, streams) and lanes; 1024 lanes x 41 bytes fit in a 48 KiB L1
SHAPES = ((4, 1), (8, 1), (4, 2), (8, 2))
LANES = (512, 1024)
REPEATS = 5
_kernels: dict[tuple[int, int], tuple] = {}


def _kernel(unroll: int, streams: int):
    if (unroll, streams) not in _kernels:
        module = load_source(_source(unroll, streams), f"limit_u{unroll}_w{streams}")
        module.limit(1, 1, 64, streams, 1e-3)
        _kernels[unroll, streams] = (module.limit, module.visit)
    return _kernels[unroll, streams]


def limit_kernel_shape(unroll: int, streams: int) -> dict:
    """What a limit kernel's compiled lane loop is made of: zmm or not, blends, masked ops (from
    a fresh compile of its lane loop: a cached one carries no assembly)."""
    namespace = {"np": np, "njit": numba.njit}
    source = _source(unroll, streams).split("@njit(parallel=True")[0].replace(", cache=True", "")
    exec(compile(source, f"<limit lane loop U={unroll} W={streams}>", "exec"), namespace)
    visit, m = namespace["visit"], 64
    ones = np.ones(m)
    visit(np.uint64(m // streams), ones.copy(), ones.copy(), ones.copy(), np.ones(m, np.bool_),
          ones.copy(), ones.copy(), 1e-3)
    asm = "\n".join(visit.inspect_asm().values())
    ops = [line.split()[0] for line in asm.splitlines() if line.startswith("\t")]
    return dict(zmm="zmm" in asm, blends=sum(op.startswith(("vblendm", "vpblendm")) for op in ops),
                masked=asm.count("{%k"), vmulpd=ops.count("vmulpd"), vaddpd=ops.count("vaddpd"),
                vsubpd=ops.count("vsubpd"), vcmppd=sum(op.startswith("vcmp") for op in ops))


def measure_limit(threads: int, seconds_per_shape: float = 0.04) -> dict:
    """The best sample-steps/s of the limit kernels on ``threads`` threads, and every shape's."""
    numba.set_num_threads(threads)
    shapes = []
    for unroll, streams in SHAPES:
        limit = _kernel(unroll, streams)[0]
        for lanes in LANES:
            visits = max(1, int(seconds_per_shape * 8e9 / (lanes * unroll)))
            best = 0.0
            for _ in range(REPEATS):
                start = time.perf_counter()
                limit(threads, visits, lanes, streams, 1e-3)
                elapsed = time.perf_counter() - start
                best = max(best, threads * visits * lanes * unroll / elapsed)
            shapes.append(dict(unroll=unroll, streams=streams, lanes=lanes,
                               sample_steps_per_s=best))
    top = max(shapes, key=lambda s: s["sample_steps_per_s"])
    return dict(threads=threads, sample_steps_per_s=top["sample_steps_per_s"],
                unroll=top["unroll"], streams=top["streams"], lanes=top["lanes"],
                code=limit_kernel_shape(top["unroll"], top["streams"]), shapes=shapes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    args = parser.parse_args()
    for threads in args.threads:
        r = measure_limit(threads)
        print(f"{threads} thread(s): {r['sample_steps_per_s'] / 1e9:.2f} G sample-steps/s "
              f"(unroll {r['unroll']}, {r['streams']} stream(s), {r['lanes']} lanes; {r['code']})")
        for s in r["shapes"]:
            print(f"    unroll {s['unroll']:>2}, {s['streams']} stream(s), {s['lanes']:>4} lanes: "
                  f"{s['sample_steps_per_s'] / 1e9:5.2f}")


if __name__ == "__main__":
    main()
