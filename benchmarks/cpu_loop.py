"""The CPU loop benchmark: eager loops vs eagle's fused loop vs a hand-written Numba kernel.

All arms run in one process on the same data and must agree bit for bit:

- ``numpy_eager``: a plain NumPy masked loop, the host checks "anyone live?" after every step;
- ``eager_loop``: eagle's compiled kernel, one step per launch, the host reads the live count
  after each launch (``until_done(..., steps_per_launch=1)``);
- ``eagle_graph``: ``until_done(...).run()`` with its default (adaptive, fused) launches;
- ``peer_numba``: the hand-written lane-blocked Numba kernel (``peer_numba.py``), one call.

Configurations: ``uniform`` (the spec's oscillator, every sample takes the same steps) and
``spread-1000`` (sample i stops after between 1 and 1000 steps). Prints medians and ratios,
and G sample-steps/s (steps actually taken, summed over samples); writes JSON.

    python benchmarks/cpu_loop.py [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_numba import make_peer_oscillator  # noqa: E402

import eagle  # noqa: E402
import hawk  # noqa: E402
from eagle.bench import DT, MAX_STEPS  # noqa: E402
from eagle.bench import oscillator as spread_oscillator  # noqa: E402  (t_end per sample)
from hawk import Mutable, Param, Scalar, Terminated  # noqa: E402


@hawk.kernel
def oscillator(omega: Scalar, t_end: Param, dt: Param, terminated: Terminated,
               x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    x0, v0 = x, v
    x = x0 + dt * v0
    v = v0 - dt * omega * omega * x0
    t += dt
    terminated = t >= t_end


def t_end_of(n: int, config: str) -> np.ndarray:
    if config == "uniform":
        return np.full(n, 1.0)
    k = int(config.split("-")[1])
    return DT * (1 + (k - 1) * np.arange(n) / (n - 1))


def fresh(n: int, config: str) -> dict:
    return dict(x=np.ones(n), v=np.zeros(n), t=np.zeros(n), omega=np.linspace(1.0, 3.0, n),
                t_end=t_end_of(n, config), terminated=np.zeros(n, dtype=bool))


def numpy_eager(s: dict) -> None:
    x, v, t, omega, t_end, done = s["x"], s["v"], s["t"], s["omega"], s["t_end"], s["terminated"]
    for _ in range(MAX_STEPS):
        alive = ~done
        if not alive.any():  # the host round trip after every step
            return
        xn = x + DT * v
        vn = v - DT * omega * omega * x
        tn = t + DT
        x[alive], v[alive], t[alive] = xn[alive], vn[alive], tn[alive]
        done[alive] = tn[alive] >= t_end[alive]


def eagle_arm(steps_per_launch):
    def run(s: dict, config: str) -> None:
        if config == "uniform":
            kernel, t_end = oscillator, 1.0
        else:
            kernel, t_end = spread_oscillator, s["t_end"]
        runner = eagle.until_done(eagle.deploy(kernel), max_steps=MAX_STEPS,
                                  steps_per_launch=steps_per_launch, x=s["x"], v=s["v"],
                                  t=s["t"], omega=s["omega"], t_end=t_end, dt=DT,
                                  terminated=s["terminated"])
        run.last = runner.run()
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 100,000 only, fewer repeats")
    parser.add_argument("--json", type=Path, default=Path("benchmarks/results/cpu_loop.json"))
    args = parser.parse_args()
    sizes = [100_000] if args.quick else [100_000, 1_000_000]
    repeats = 3 if args.quick else 5
    peer = make_peer_oscillator(block=2048)
    arms = {
        "numpy_eager": lambda s, c: numpy_eager(s),
        "eager_loop": eagle_arm(1),
        "eagle_graph": eagle_arm(None),
        "peer_numba": lambda s, c: peer(MAX_STEPS, s["x"], s["v"], s["t"], s["omega"],
                                        s["t_end"], DT, s["terminated"]),
    }
    results = []
    print(f"{'n':>9} {'config':<12} {'arm':<12} {'median ms':>10} {'G steps/s':>10} "
          f"{'vs eagle':>9}")
    for n in sizes:
        for config in ("uniform", "spread-1000"):
            finals, times = {}, {}
            for arm, run in arms.items():
                samples = []
                arm_repeats = 1 if arm == "numpy_eager" and n > 100_000 else repeats
                for _ in range(arm_repeats + 1):  # the first run warms up (compiles)
                    s = fresh(n, config)
                    t0 = time.perf_counter()
                    run(s, config)
                    samples.append(time.perf_counter() - t0)
                times[arm] = float(np.median(samples[1:]))
                finals[arm] = s
            reference = finals["numpy_eager"]
            for arm, s in finals.items():
                for key in ("x", "v", "t", "terminated"):
                    if not np.array_equal(s[key], reference[key]):
                        raise SystemExit(f"{arm} disagrees with numpy_eager on {key} "
                                         f"(n={n}, {config})")
            sample_steps = float(np.round(reference["t"] / DT).sum())
            for arm, seconds in times.items():
                rate = sample_steps / seconds / 1e9
                ratio = seconds / times["eagle_graph"]
                print(f"{n:>9} {config:<12} {arm:<12} {seconds * 1e3:>10.2f} {rate:>10.3f} "
                      f"{ratio:>8.2f}x")
                results.append(dict(n=n, config=config, arm=arm, median_s=seconds,
                                    g_sample_steps_per_s=rate, relative_to_eagle_graph=ratio))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    meta = dict(machine=platform.machine(), processor=platform.processor(),
                threads=eagle.get_num_threads(), python=platform.python_version())
    args.json.write_text(json.dumps(dict(meta=meta, results=results), indent=2))
    print(f"all arms agree bit for bit; wrote {args.json}")


if __name__ == "__main__":
    main()
