"""The performance card: reading the device after every step vs recording the loop once.

``python -m eagle bench [--quick] [--out DIR]`` runs, in one process on the same data, on every
device present:

- ``numpy_eager`` (CPU) / ``cupy_eager`` (GPU): a plain array loop, the host checks "anyone
  still running?" after every step, which is what one writes without eagle;
- ``eager_loop``: eagle's compiled step, one launch per step, the host reads the finished count
  after every one (``until_done(..., steps_per_launch=1, eager=True)``);
- ``eagle_graph``: ``until_done(...).run()``, the loop recorded once (a CUDA graph on a GPU,
  the fused host loop on the CPU);

for the ``uniform`` (the spec's oscillator) and ``spread-1000`` (sample i stops after between 1
and 1000 steps) configurations. Every arm's final arrays must equal every other's bit for bit.
Writes ``card.json``, ``card.md`` (the spec's table: Arm | What it does | Wall time) and
``card.png`` (a bar chart; needs matplotlib).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

import hawk
from hawk import Mutable, Param, Scalar, Terminated

from . import __version__
from .backend import HOST, backend_for, backends
from .plan import deploy
from .runner import until_done
from .threads import get_num_threads

__all__ = ["run_card", "main", "ARMS"]

DT = 1e-3
MAX_STEPS = 10_000
CONFIGS = ("uniform", "spread-1000")
ARMS = {
    "numpy_eager": "a NumPy loop, the host checks after every step",
    "cupy_eager": "a CuPy loop, the host checks after every step",
    "eager_loop": "one launch per step, host reads the finished count after every one",
    "eagle_graph": "the same step, captured once into a graph with its own stop condition",
}


@hawk.kernel
def oscillator(omega: Scalar, t_end: Scalar, dt: Param, terminated: Terminated,
               x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
    x0, v0 = x, v
    x = x0 + dt * v0
    v = v0 - dt * omega * omega * x0
    t += dt
    terminated = t >= t_end  # noqa: F841 (a hawk kernel assigns its outputs)


def initial(n: int, config: str) -> dict[str, np.ndarray]:
    """The spec's oscillator state; ``spread-K``: sample i stops after 1..K steps."""
    if config == "uniform":
        t_end = np.full(n, 1.0)
    else:
        k = int(config.split("-")[1])
        t_end = DT * (1 + (k - 1) * np.arange(n) / max(n - 1, 1))
    return dict(x=np.ones(n), v=np.zeros(n), t=np.zeros(n), omega=np.linspace(1.0, 3.0, n),
                t_end=t_end)


def array_eager(xp, s: dict) -> None:
    """What one writes without eagle: masked array updates, a host check after every step."""
    x, v, t, omega, t_end = s["x"], s["v"], s["t"], s["omega"], s["t_end"]
    done = xp.zeros(x.shape[0], dtype=bool)
    for _ in range(MAX_STEPS):
        alive = ~done
        if not bool(alive.any()):
            return
        xn, vn, tn = x + DT * v, v - DT * omega * omega * x, t + DT
        x[...] = xp.where(alive, xn, x)
        v[...] = xp.where(alive, vn, v)
        t[...] = xp.where(alive, tn, t)
        done |= alive & (tn >= t_end)


def _arms(device: str, xp):
    def eagle_arm(**options):
        def run(s):
            plan = deploy(oscillator, device)
            run.report = until_done(plan, max_steps=MAX_STEPS, dt=DT, **options, **s).run()
        return run

    return {f"{xp.__name__}_eager": lambda s: array_eager(xp, s),
            "eager_loop": eagle_arm(steps_per_launch=1, eager=True),
            "eagle_graph": eagle_arm()}


def run_card(n_cpu: int, n_gpu: int, repeats: int, devices: list[str]) -> list[dict]:
    """Time every arm on every device; return one row per (device, config, arm)."""
    rows = []
    for device in devices:
        backend = backend_for(device)
        xp, n = backend.array_module(), n_cpu if device == HOST else n_gpu
        for config in CONFIGS:
            finals, host = {}, initial(n, config)
            for arm, run in _arms(device, xp).items():
                samples = []
                arm_repeats = 1 if arm.endswith("_eager") and device == HOST else repeats
                for _ in range(arm_repeats + 1):  # the first run compiles and warms up
                    s = {k: xp.asarray(v.copy()) for k, v in host.items()}
                    backend.synchronize(device)
                    t0 = time.perf_counter()
                    run(s)
                    backend.synchronize(device)
                    samples.append(time.perf_counter() - t0)
                finals[arm] = {k: np.asarray(s[k].get() if hasattr(s[k], "get") else s[k])
                               for k in ("x", "v", "t")}
                report = getattr(run, "report", None)
                what = ARMS[arm] if (arm, device) != ("eagle_graph", HOST) else \
                    "the same step, the whole loop fused and run by the host team"
                rows.append(dict(device=device, n=n, config=config, arm=arm,
                                 what=what, median_s=float(np.median(samples[1:])),
                                 runs=arm_repeats,
                                 launches=report.launches if report else None,
                                 build_s=report.build_s if report else None,
                                 mode=report.mode if report else "host-loop"))
            first = next(iter(finals.values()))
            for arm, final in finals.items():
                for key in final:
                    if not np.array_equal(final[key], first[key]):
                        raise SystemExit(f"eagle bench: {arm} disagrees with the other arms on "
                                         f"{key} ({device}, {config}, n={n})")
    return rows


def markdown(rows: list[dict]) -> str:
    lines = []
    for device in dict.fromkeys(r["device"] for r in rows):
        for config in CONFIGS:
            chosen = [r for r in rows if r["device"] == device and r["config"] == config]
            if not chosen:
                continue
            lines += [f"**{device}, N = {chosen[0]['n']:,}, {config}**", "",
                      "| Arm | What it does | Wall time |", "|---|---|---|"]
            lines += [f"| {r['arm']} | {r['what']} | {r['median_s'] * 1e3:.1f} ms |"
                      for r in chosen]
            lines.append("")
    return "\n".join(lines)


def chart(rows: list[dict], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        return False
    groups = [(d, c) for d in dict.fromkeys(r["device"] for r in rows) for c in CONFIGS]
    fig, axes = plt.subplots(1, len(groups), figsize=(4 * len(groups), 3), squeeze=False)
    for ax, (device, config) in zip(axes[0], groups, strict=True):
        chosen = [r for r in rows if r["device"] == device and r["config"] == config]
        times = [r["median_s"] * 1e3 for r in chosen]
        ax.barh([r["arm"] for r in chosen], times, color=[f"C{k}" for k in range(len(chosen))])
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlim(min(times) / 3, max(times) * 6)
        for k, value in enumerate(times):
            ax.text(value * 1.15, k, f"{value:.1f} ms", va="center", fontsize=8)
        ax.set_xlabel("wall time (ms, log scale)")
        ax.set_title(f"{device}, {config}, N = {chosen[0]['n']:,}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eagle bench",
                                     description="the eager-loop vs graph performance card")
    parser.add_argument("--quick", action="store_true", help="N = 100,000 on the CPU, 1 repeat")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/card"))
    parser.add_argument("--cpu-only", action="store_true", help="skip the GPU even if present")
    parser.add_argument("--n", type=int, default=None, help="samples on the CPU (overrides)")
    args = parser.parse_args(argv)
    devices = [HOST] + [b.default_device() for b in backends()[1:]
                        if b.unavailable_reason() is None and not args.cpu_only]
    n_cpu = args.n or (100_000 if args.quick else 1_000_000)
    rows = run_card(n_cpu, 1_000_000, 1 if args.quick else 3, devices)
    table = markdown(rows)
    print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    meta = dict(eagle=__version__, machine=platform.machine(), processor=platform.processor(),
                threads=get_num_threads(), python=platform.python_version(), devices=devices,
                quick=args.quick)
    (args.out / "card.json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=2))
    (args.out / "card.md").write_text(table)
    drew = chart(rows, args.out / "card.png")
    print(f"all arms agree bit for bit; wrote {args.out}/card.json, card.md"
          + (", card.png" if drew else " (no card.png: matplotlib is not installed)"))
    return 0
