"""One local runner vs an ensemble sharded over Dask workers, and the fixed cost of a chunk.

On a ``LocalCluster`` (loopback only; 2 worker processes with 1 thread each by default) it
times, on the same data (the spec's oscillator, ``spread-1000``, n = 2,000,000):

- ``local``: ``eagle.until_done(...).run()`` in this process (the host team: all cores);
- ``dask``: ``eagle.distributed.until_done(..., chunks=K)`` for a few K, results gathered;

checks they agree bit for bit, prints sample-steps per second, and estimates the fixed cost per
chunk from runs of tiny chunks (1 sample, 1 step each). Writes JSON.

    python benchmarks/dask_scaling.py [--n N] [--workers W] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_loop import DT, spread_oscillator, t_end_of  # noqa: E402

import eagle  # noqa: E402
import eagle.distributed as ed  # noqa: E402


def state(n: int) -> dict:
    return dict(x=np.ones(n), v=np.zeros(n), t=np.zeros(n), omega=np.linspace(1.0, 3.0, n),
                t_end=t_end_of(n, "spread-1000"), dt=DT)


def median_time(function, repeats: int) -> tuple[float, object]:
    samples, result = [], None
    for _ in range(repeats + 1):  # the first run compiles / warms the workers
        t0 = time.perf_counter()
        result = function()
        samples.append(time.perf_counter() - t0)
    return float(np.median(samples[1:])), result


def main() -> None:
    from distributed import Client, LocalCluster

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2_000_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    out = Path(os.environ["OUT"]) if os.environ.get("OUT") else Path("benchmarks/results")
    parser.add_argument("--json", type=Path, default=out / "dask_scaling.json")
    args = parser.parse_args()
    n = args.n
    plan = eagle.deploy(spread_oscillator, "cpu")

    def local():
        s = state(n)
        eagle.until_done(plan, max_steps=10_000, **s).run()
        return s

    seconds, expected = median_time(local, args.repeats)
    steps_taken = float(np.round(expected["t"] / DT).sum())
    rows = [dict(arm="local", threads=eagle.get_num_threads(), chunks=1, median_s=seconds,
                 g_sample_steps_per_s=steps_taken / seconds / 1e9)]
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      host="127.0.0.1", dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        for chunks in (args.workers, 4 * args.workers):
            def sharded(chunks=chunks):
                return ed.until_done(plan, client, chunks=chunks, max_steps=10_000,
                                     compute=True, **state(n))

            seconds, result = median_time(sharded, args.repeats)
            for key in ("x", "v", "t"):
                if not np.array_equal(result.arrays[key], expected[key]):
                    raise SystemExit(f"dask with {chunks} chunks disagrees on {key}")
            rows.append(dict(arm="dask", workers=args.workers, chunks=chunks, median_s=seconds,
                             g_sample_steps_per_s=steps_taken / seconds / 1e9))
        # The fixed cost of a chunk: many chunks of one sample taking one step each.
        tiny_chunks = 64

        def tiny():
            s = state(tiny_chunks)
            s["t_end"] = np.full(tiny_chunks, DT / 2)  # done after one step
            return ed.until_done(plan, client, chunks=tiny_chunks, max_steps=1, compute=True,
                                 **s)

        seconds, _ = median_time(tiny, args.repeats)
        per_chunk = seconds / tiny_chunks * args.workers  # chunks run on `workers` in parallel
    print(f"n = {n:,}, spread-1000, {steps_taken:,.0f} sample-steps")
    print(f"{'arm':<6} {'chunks':>6} {'median ms':>10} {'G sample-steps/s':>17}")
    for r in rows:
        print(f"{r['arm']:<6} {r['chunks']:>6} {r['median_s'] * 1e3:>10.1f} "
              f"{r['g_sample_steps_per_s']:>17.3f}")
    print(f"fixed cost per chunk: {per_chunk * 1e3:.2f} ms (a worker's time for a chunk of one "
          f"sample and one step, {tiny_chunks} such chunks on {args.workers} workers)")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(dict(n=n, rows=rows, per_chunk_s=per_chunk), indent=2))
    print(f"all arms agree bit for bit; wrote {args.json}")


if __name__ == "__main__":
    main()
