"""``dask_scaling.py --ode``: ``eagle.ode.solve`` on a Dask cluster against a local solve.

A Lorenz parameter sweep (rho from 0.5, a stable fixed point, to 50, chaos), dopri5 at
rtol = atol = 1e-8 to t = 5 with 11 saved times, for each n: solved in the client process (one
thread, then every thread it may use), then on a cluster of each size in ``workers`` (separate
``dask worker`` processes, one thread each, started by ``dask_scaling.Cluster``) in ``chunks``
and 8x as many chunks, each twice: with NumPy inputs (``cluster``: each chunk's inputs sent from
the client, its results gathered back) and with ``u0`` and ``p`` as dask arrays made on the
workers block by block (``dask inputs``: the Solution's arrays stay there; ``saved``'s mean
over the samples is computed there and only it comes back, inside the measured span). Each
cluster solve is checked byte for byte against the local one (after the measured span); the
extra chunks' cost (client and scheduler CPU, scheduler bytes, wall) is the per-chunk cost.
On a machine shared with other work the wall times carry its load: the table says how many
CPUs the client process may use.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np

import eagle
import eagle.ode
import hawk

FIELDS = ("u", "t", "status", "accepted", "rejected", "saved")


@hawk.func
def lorenz(u, t, p):
    sigma, rho, beta = p
    return hawk.vec3(sigma * (u.y - u.x), u.x * (rho - u.z) - u.y, u.x * u.y - beta * u.z)


def sweep(n: int) -> tuple[np.ndarray, dict]:
    rho = np.linspace(0.5, 50.0, n)
    p = np.stack([np.full(n, 10.0), rho, np.full(n, 8.0 / 3.0)])
    return np.ones((3, n)), dict(p=p, saveat=(4.0, 5.0, 11), rtol=1e-8, atol=1e-8)


def _sweep_block(which: str, n: int, block_info=None) -> np.ndarray:
    """``sweep(n)``'s ``u0`` or ``p``, the block at ``block_info``'s samples: made on a worker,
    the same bits as ``sweep``'s (the same ``np.linspace``, cut)."""
    lo, hi = block_info[None]["array-location"][-1]
    u0, options = sweep(n)
    return np.ascontiguousarray((u0 if which == "u0" else options["p"])[:, lo:hi])


def dask_sweep(n: int, chunks: int):
    """``sweep(n)`` as dask arrays of ``chunks`` sample chunks, made on the workers."""
    from functools import partial

    from dask import array as da

    edges = np.linspace(0, n, chunks + 1).round().astype(np.int64)
    shape = ((3,), tuple(np.diff(edges).tolist()))
    u0, p = (da.map_blocks(partial(_sweep_block, which, n), chunks=shape, dtype=np.float64,
                           meta=np.empty((0, 0))) for which in ("u0", "p"))
    return u0, p


def run_ode(cluster_type, snapshot, sizes, workers, chunks) -> list[dict]:
    from distributed import Client

    cpus = len(os.sched_getaffinity(0))
    rows, local = [], {}
    for n in sizes:
        u0, options = sweep(n)
        eagle.ode.solve(lorenz, u0[:, :64], (0.0, 5.0), **{**options,
                                                           "p": options["p"][:, :64]})
        for threads in sorted({1, cpus}):
            start = time.perf_counter()
            local[n] = eagle.ode.solve(lorenz, u0, (0.0, 5.0), threads=threads, **options)
            rows.append(dict(n=n, arm=f"local, {threads} thread(s)", workers=0, chunks=1,
                             wall_s=time.perf_counter() - start))
    for count in workers:
        with tempfile.TemporaryDirectory() as folder:
            cluster = cluster_type(count, Path(folder))
            try:
                with Client(scheduler_file=str(cluster.file)) as client:
                    client.wait_for_workers(count, timeout=120)
                    for n in sizes:
                        rows += _on_cluster(client, snapshot, n, count, chunks, local[n])
            finally:
                cluster.close()
    _print(rows, cpus)
    return rows


def _on_cluster(client, snapshot, n, count, chunks, local) -> list[dict]:
    u0, options = sweep(n)
    warm = {**options, "p": options["p"][:, :4 * chunks]}
    eagle.ode.solve(lorenz, u0[:, :4 * chunks], (0.0, 5.0), client=client, chunks=chunks,
                    **warm)  # every worker compiles (or loads) the kernel first
    rows = []
    lazy = {key: value for key, value in options.items() if key != "p"}
    for k in (chunks, 8 * chunks):
        for arm in ("cluster", "dask inputs"):
            before = snapshot(client)
            if arm == "cluster":
                solution = eagle.ode.solve(lorenz, u0, (0.0, 5.0), client=client, chunks=k,
                                           **options)
            else:
                start, p = dask_sweep(n, k)
                solution = eagle.ode.solve(lorenz, start, (0.0, 5.0), p=p, client=client,
                                           **lazy)
                solution.saved.mean(axis=-1).compute()  # a reduction made on the workers
            after = snapshot(client)
            for name in FIELDS:
                if np.asarray(getattr(solution, name)).tobytes() != \
                        getattr(local, name).tobytes():
                    raise SystemExit(f"n={n}, {count} workers, {k} chunks, {arm}: {name} "
                                     "differs from the local solve")
            chunk_s = [c.wall_s for c in solution.report.chunks]
            rows.append(dict(n=n, arm=arm, workers=count, chunks=k,
                             chunk_wall_s_median=float(np.median(chunk_s)),
                             **{key: after[key] - before[key] for key in before}))
    return rows


def _print(rows, cpus) -> None:
    print(f"Lorenz sweep, dopri5 1e-8, t = 5, 11 saved times; the client process may use "
          f"{cpus} CPU(s), and shares the machine with whatever else runs on it")
    print(f"{'n':>9} {'arm':<22} {'workers':>7} {'chunks':>6} {'wall s':>7} {'sched MB':>9} "
          f"{'client MB':>9} {'client ms/chunk':>15} {'sched ms/chunk':>14} "
          f"{'chunk s (median)':>16}")
    for r in rows:
        cluster = r["workers"] > 0
        print(f"{r['n']:>9,} {r['arm']:<22} {r['workers']:>7} {r['chunks']:>6} "
              f"{r['wall_s']:>7.2f} "
              + (f"{r['scheduler_bytes'] / 1e6:>9.3f} {r['client_bytes'] / 1e6:>9.2f} "
                 f"{r['client_cpu_s'] / r['chunks'] * 1e3:>15.1f} "
                 f"{r['scheduler_cpu_s'] / r['chunks'] * 1e3:>14.1f} "
                 f"{r['chunk_wall_s_median']:>16.3f}" if cluster else ""))
    for r in rows:
        if r["workers"] == 0 or r["chunks"] == min(x["chunks"] for x in rows
                                                   if x["workers"] > 0):
            continue
        few = next(x for x in rows if x["arm"] == r["arm"] and x["n"] == r["n"]
                   and x["workers"] == r["workers"] and x["chunks"] < r["chunks"])
        extra = r["chunks"] - few["chunks"]
        print(f"n = {r['n']:,}, {r['arm']}, {r['workers']} worker(s), per extra chunk: wall "
              f"{(r['wall_s'] - few['wall_s']) / extra * 1e3:.1f} ms, client CPU "
              f"{(r['client_cpu_s'] - few['client_cpu_s']) / extra * 1e3:.1f} ms, scheduler "
              f"CPU {(r['scheduler_cpu_s'] - few['scheduler_cpu_s']) / extra * 1e3:.1f} ms and "
              f"{(r['scheduler_bytes'] - few['scheduler_bytes']) / extra / 1e3:.1f} kB")
