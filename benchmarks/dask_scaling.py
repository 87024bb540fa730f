"""What a sharded ensemble moves and costs: the old path (inputs from the client, results
gathered) against the new one (inputs made on the workers, results left there or reduced).

It starts a real cluster of separate processes on 127.0.0.1 (``python -m dask scheduler`` and
``--workers`` ``python -m dask worker`` processes, one thread each, every one counting its TCP
bytes with ``--preload eagle.distributed.traffic``) and runs the spread oscillator
(``spread-K``: sample i stops after about ``1 + (K-1) i/(n-1)`` steps) for each n in ``--n``,
with these arms, interleaved, on the same samples:

- ``client-arrays``: what ``eagle.distributed.until_done(..., compute=True)`` did: NumPy inputs
  made on the client ride in the tasks, the final state is gathered to the client (now via the
  deprecated wrapper, which no longer sends read-only inputs back);
- ``on-workers``: ``run_on_cluster(init=...)``: inputs made on the workers, results left there
  (released after the run);
- ``reduced``: the same with ``reduce=`` (a histogram of ``x``) and ``keep=False``.

For each it prints the bytes through the client, the scheduler and the workers (sent plus
received, from the comms' counters), the CPU seconds of the client and of the scheduler per
chunk, the workers' CPU seconds, and the wall time, checks that the arms agree bit for bit
(the gathered state of ``client-arrays`` against the reduction and one gathered ``on-workers``
run), and writes JSON.

``--ode`` measures ``eagle.ode.solve(..., client=, chunks=)`` instead: a Lorenz parameter sweep
(rho from 0.5 to 50, dopri5, rtol = atol = 1e-8, to t = 5 with 11 saved times) solved locally
in the client process (one thread, and every thread it may use) and on clusters of each size in
``--ode-workers`` (one thread per worker), in ``--chunks`` and 8x as many chunks (the extra
chunks' cost is the per-chunk cost); each cluster Solution is checked byte for byte against
the local one.

    python benchmarks/dask_scaling.py [--n 1000000 10000000] [--workers 2] [--chunks 8]
    python benchmarks/dask_scaling.py --ode [--n 100000] [--ode-workers 1 2] [--chunks 8]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

import eagle
import eagle.distributed as ed
from eagle.bench import oscillator as spread_oscillator
from eagle.distributed import traffic

ROOT = Path(__file__).resolve().parents[1]
DT = 1e-3
BINS = np.linspace(-1.5, 1.5, 33)


def make_spread(lo: int, hi: int, n: int, k: int) -> dict:
    """``init``: samples lo..hi-1 of the spread-k ensemble of n samples."""
    i = np.arange(lo, hi)
    return dict(x=np.ones(hi - lo), v=np.zeros(hi - lo), t=np.zeros(hi - lo),
                omega=1.0 + 2.0 * i / (n - 1), t_end=DT * (1 + (k - 1) * i / (n - 1)))


def histogram(arrays: dict, lo: int, hi: int) -> np.ndarray:
    return np.histogram(arrays["x"], bins=BINS)[0]


def cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


class Cluster:
    """``python -m dask scheduler`` and workers on 127.0.0.1, killed on exit."""

    def __init__(self, workers: int, folder: Path):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(ROOT / "src"), str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH", "")]))
        self.file = folder / "scheduler.json"
        common = ["--preload", "eagle.distributed.traffic", "--no-dashboard"]
        self.processes = [subprocess.Popen(
            [sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port", "0",
             "--scheduler-file", str(self.file), *common], env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
        while not self.file.exists():
            time.sleep(0.1)
        self.processes += [subprocess.Popen(
            [sys.executable, "-m", "dask", "worker", "--scheduler-file", str(self.file),
             "--host", "127.0.0.1", "--nthreads", "1", "--no-nanny", *common], env=env,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(workers)]

    def close(self) -> None:
        for process in self.processes:
            process.kill()
            process.wait()


def snapshot(client) -> dict:
    here, scheduler = traffic.counts(), client.run_on_scheduler(traffic.counts)
    workers = client.run(traffic.counts)
    return {"client_bytes": here["sent"] + here["received"],
            "scheduler_bytes": scheduler["sent"] + scheduler["received"],
            "workers_bytes": sum(w["sent"] + w["received"] for w in workers.values()),
            "client_cpu_s": cpu_seconds(),
            "scheduler_cpu_s": client.run_on_scheduler(cpu_seconds),
            "workers_cpu_s": sum(client.run(cpu_seconds).values()),
            "wall_s": time.perf_counter()}


def measured(client, arm) -> tuple[dict, object]:
    before = snapshot(client)
    value = arm()
    after = snapshot(client)
    return {k: after[k] - before[k] for k in before}, value


def main() -> None:
    from distributed import Client

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--k", type=int, default=100, help="spread-K: the slowest sample's "
                        "steps (the bytes do not depend on it)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--chunks", type=int, default=8)
    out = Path(os.environ["OUT"]) if os.environ.get("OUT") else Path("benchmarks/results")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--ode", action="store_true", help="measure eagle.ode.solve(client=)")
    parser.add_argument("--ode-workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    traffic.install()
    if args.ode:
        from ode_scaling import run_ode

        rows = run_ode(Cluster, snapshot, args.n, args.ode_workers, args.chunks)
        path = args.json or out / "dask_scaling_ode.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(dict(rows=rows), indent=2))
        print(f"every cluster Solution equals the local one byte for byte; wrote {path}")
        return
    args.json = args.json or out / "dask_scaling.json"
    plan = eagle.deploy(spread_oscillator, "cpu")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        cluster = Cluster(args.workers, Path(folder))
        try:
            with Client(scheduler_file=str(cluster.file)) as client:
                client.wait_for_workers(args.workers, timeout=120)
                for n in args.n:
                    rows += run_one(client, plan, n, args.k, args.chunks)
        finally:
            cluster.close()
    print(f"spread-{args.k} oscillator, {args.workers} workers x 1 thread, {args.chunks} "
          "chunks; bytes are sent + received through each process's TCP comms")
    print(f"{'n':>11} {'arm':<14} {'chunks':>6} {'client MB':>10} {'sched MB':>9} "
          f"{'workers MB':>10} "
          f"{'client ms/chunk':>15} {'sched ms/chunk':>14} {'workers cpu s':>13} "
          f"{'wall s':>7}")
    for r in rows:
        print(f"{r['n']:>11,} {r['arm']:<14} {r['chunks']:>6} {r['client_bytes'] / 1e6:>10.3f} "
              f"{r['scheduler_bytes'] / 1e6:>9.3f} {r['workers_bytes'] / 1e6:>10.3f} "
              f"{r['client_cpu_s'] / r['chunks'] * 1e3:>15.1f} "
              f"{r['scheduler_cpu_s'] / r['chunks'] * 1e3:>14.1f} {r['workers_cpu_s']:>13.2f} "
              f"{r['wall_s']:>7.2f}")
    for n in args.n:  # what one more chunk costs on the new path: 8x the chunks, same n
        few, many = (next(r for r in rows if r["n"] == n and r["arm"] == "on-workers"
                          and r["chunks"] == c) for c in (args.chunks, 8 * args.chunks))
        extra = many["chunks"] - few["chunks"]
        print(f"n = {n:,}, on-workers, per extra chunk: client "
              f"{(many['client_bytes'] - few['client_bytes']) / extra / 1e3:.2f} kB and "
              f"{(many['client_cpu_s'] - few['client_cpu_s']) / extra * 1e3:.2f} ms CPU, "
              f"scheduler {(many['scheduler_bytes'] - few['scheduler_bytes']) / extra / 1e3:.2f}"
              f" kB and {(many['scheduler_cpu_s'] - few['scheduler_cpu_s']) / extra * 1e3:.2f} "
              "ms CPU")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(dict(k=args.k, workers=args.workers, rows=rows), indent=2))
    print(f"all arms agree bit for bit; wrote {args.json}")


def run_one(client, plan, n: int, k: int, chunks: int) -> list[dict]:
    init = functools.partial(make_spread, n=n, k=k)
    options = dict(n_samples=n, chunks=chunks, max_steps=10 * k, init=init, dt=DT)
    # warm up: every worker compiles (or loads) the kernel, the scheduler sees the functions
    ed.run_on_cluster(plan, client, **{**options, "n_samples": 4 * chunks,
                                       "init": functools.partial(make_spread, n=4 * chunks,
                                                                 k=k)}).release()

    def client_arrays():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.filterwarnings("ignore", message=".*large graph.*")  # the point of it
            return ed.until_done(plan, client, chunks=chunks, max_steps=10 * k, compute=True,
                                 dt=DT, **make_spread(0, n, n, k)).arrays

    def on_workers():
        result = ed.run_on_cluster(plan, client, **options)
        result.release()
        return result.report

    def reduced():
        return ed.run_on_cluster(plan, client, reduce=histogram, keep=False, **options).reduced

    def on_workers_many():  # the per-chunk cost: the same run cut 8x finer
        result = ed.run_on_cluster(plan, client, **{**options, "chunks": 8 * chunks})
        result.release()
        return result.report

    rows = []
    results = {}
    for name, arm, arm_chunks in (("client-arrays", client_arrays, chunks),
                                  ("on-workers", on_workers, chunks),
                                  ("reduced", reduced, chunks),
                                  ("on-workers", on_workers_many, 8 * chunks)):
        cost, results[name, arm_chunks] = measured(client, arm)
        rows.append(dict(n=n, arm=name, chunks=arm_chunks, **cost))
    results = {name: value for (name, _), value in results.items()}
    # the same bits: the reduction of the gathered state, and one gathered run on the workers
    full = results["client-arrays"]
    if not np.array_equal(sum(results["reduced"]), np.histogram(full["x"], bins=BINS)[0]):
        raise SystemExit(f"n={n}: the reduced run disagrees with the gathered one")
    kept = ed.run_on_cluster(plan, client, **options).gather("x", "t")
    for key in ("x", "t"):
        if not np.array_equal(kept[key], full[key]):
            raise SystemExit(f"n={n}: on-workers disagrees with client-arrays on {key}")
    assert results["on-workers"].done == n
    return rows


if __name__ == "__main__":
    main()
