"""The performance card: reading the device after every step vs recording the loop once.

``python -m eagle bench [--quick] [--out DIR] [--repeats K] [--n N]`` runs, in one process on
the same data, on every device present:

- ``numpy_eager`` (CPU) / ``cupy_eager`` (GPU): a plain array loop, the host checks "anyone
  still running?" after every step, which is what one writes without eagle;
- ``eager_loop``: eagle's compiled step, one launch per step, the host reads the finished count
  after every one (``until_done(..., steps_per_launch=1, eager=True)``);
- ``eagle_graph``: ``until_done(...).run()``, the loop recorded once (a CUDA graph on a GPU,
  the fused host loop on the CPU);

for the ``uniform`` (the spec's oscillator) and ``spread-1000`` (sample i stops after between 1
and 1000 steps) configurations. Every arm's final arrays must equal every other's bit for bit.

Why the card can be trusted as published: every arm is timed ``repeats`` times (5 by default,
``--quick`` included) after one untimed warm-up run that compiles; the card shows the median
with the min-max spread and keeps every raw sample in ``card.json``; the NumPy arm on the CPU,
the slowest by far, runs at a smaller N in the full card (``EAGER_N_CPU``), and its row says so;
the machine, OS, CPU model, thread count, versions, date and commit are in ``card.json`` and are
the caption of ``card.md`` and of ``card.png``; the chart's bars are linear and labelled with
their ratio to the fastest arm (a log axis makes a 21x gap look like 3x). Progress goes to
stderr while it runs, the card to stdout.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

import hawk
from hawk import Mutable, Param, Scalar, Terminated

from . import __version__
from .backend import HOST, backend_for, backends
from .plan import deploy
from .runner import until_done
from .threads import get_num_threads

__all__ = ["run_card", "metadata", "caption", "markdown", "chart", "figure", "main", "ARMS",
           "CONFIGS"]

DT = 1e-3
MAX_STEPS = 10_000
REPEATS = 5
EAGER_N_CPU = 100_000  # the NumPy arm's N in the full card (about 4 s a run at N = 1,000,000)
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


def t_end_of(n: int, config: str) -> np.ndarray:
    """Each sample's ``t_end``: ``uniform`` (1000 steps), ``spread-K`` (sample i stops after
    1..K steps), ``tail-scattered`` and ``tail-sorted`` (99% stop after 100 steps and 1% after
    10,000, at random places or packed together at the end)."""
    if config == "uniform":
        return np.full(n, 1.0)
    if config.startswith("tail-"):
        steps = np.full(n, 100)
        steps[: max(1, n // 100)] = 10_000
        scattered = config == "tail-scattered"
        steps = np.random.default_rng(2024).permutation(steps) if scattered else np.sort(steps)
        return (steps - 0.5) * DT  # t reaches t_end after exactly that many steps
    k = int(config.split("-")[1])
    return DT * (1 + (k - 1) * np.arange(n) / max(n - 1, 1))


def initial(n: int, config: str) -> dict[str, np.ndarray]:
    """The spec's oscillator state, with ``t_end_of(n, config)``."""
    return dict(x=np.ones(n), v=np.zeros(n), t=np.zeros(n), omega=np.linspace(1.0, 3.0, n),
                t_end=t_end_of(n, config))


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


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _time_arm(backend, device, xp, run, host, repeats, progress=None, label=""
              ) -> tuple[list[float], dict]:
    """One untimed warm-up run (it compiles), then ``repeats`` timed runs from fresh arrays."""
    samples = []
    for k in range(repeats + 1):
        s = {key: xp.asarray(value.copy()) for key, value in host.items()}
        backend.synchronize(device)
        t0 = time.perf_counter()
        run(s)
        backend.synchronize(device)
        if k:
            samples.append(time.perf_counter() - t0)
        if progress is not None:
            progress(f"eagle bench: {label}: " + (f"run {k}/{repeats}" if k else "warm-up"))
    final = {key: np.asarray(s[key].get() if hasattr(s[key], "get") else s[key])
             for key in ("x", "v", "t")}
    return samples, final


def run_card(n_cpu: int, n_gpu: int, repeats: int = REPEATS, devices: list[str] | None = None,
             *, configs: tuple[str, ...] = CONFIGS, arms: tuple[str, ...] | None = None,
             eager_n_cpu: int | None = None,
             progress: Callable[[str], None] | None = _say) -> list[dict]:
    """Time every arm on every device; return one row per (device, config, arm).

    Args:
        n_cpu: samples on the CPU.
        n_gpu: samples on a GPU.
        repeats: timed runs per arm (each after one untimed warm-up run); at least 1.
        devices: the devices to measure (default: the host only).
        configs: a subset of ``CONFIGS``.
        arms: a subset of the arm names (``None``: all three of each device).
        eager_n_cpu: the NumPy arm's N on the CPU (default ``n_cpu``); its final arrays are
            then checked against an extra, untimed ``eagle_graph`` run at that N.
        progress: called with one line per timed run (default: print to stderr); None: quiet.

    Each row has ``samples_s`` (every timed run, in seconds), ``median_s``, ``min_s``, ``max_s``
    and ``runs``. ``SystemExit`` if two arms' final arrays differ in any bit.
    """
    if repeats < 1:
        raise ValueError(f"run_card(repeats): expected at least 1 timed run, got {repeats!r}")
    rows = []
    for device in devices or [HOST]:
        backend = backend_for(device)
        xp = backend.array_module()
        n = n_cpu if device == HOST else n_gpu
        for config in configs:
            finals = {}
            chosen = {a: r for a, r in _arms(device, xp).items() if arms is None or a in arms}
            for arm, run in chosen.items():
                arm_n = (eager_n_cpu or n) if arm == "numpy_eager" else n
                host = initial(arm_n, config)
                samples, final = _time_arm(backend, device, xp, run, host, repeats, progress,
                                           f"{device} {config} {arm} (N = {arm_n:,})")
                if arm_n == n:
                    finals[arm] = final
                else:  # checked against eagle at the same N (one untimed run)
                    _, reference = _time_arm(backend, device, xp, _arms(device, xp)["eagle_graph"],
                                             host, 0)
                    _check({arm: final, "eagle_graph": reference}, device, config, arm_n)
                report = getattr(run, "report", None)
                what = ARMS[arm] if (arm, device) != ("eagle_graph", HOST) else \
                    "the same step, the whole loop fused and run by the host team"
                rows.append(dict(device=device, n=arm_n, config=config, arm=arm, what=what,
                                 median_s=float(np.median(samples)), min_s=min(samples),
                                 max_s=max(samples), runs=len(samples), samples_s=samples,
                                 launches=report.launches if report else None,
                                 build_s=report.build_s if report else None,
                                 mode=report.mode if report else "host-loop"))
            _check(finals, device, config, n)
    return rows


def _check(finals: dict, device: str, config: str, n: int) -> None:
    if not finals:
        return
    first = next(iter(finals.values()))
    for arm, final in finals.items():
        for key in final:
            if not np.array_equal(final[key], first[key]):
                raise SystemExit(f"eagle bench: {arm} disagrees with the other arms on "
                                 f"{key} ({device}, {config}, n={n})")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU model"


def _commit() -> str | None:
    """The git commit of the source this eagle was imported from (``+dirty`` if it has
    uncommitted changes), or None for an installed copy."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=here,
                              capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--", ".."], cwd=here,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + ("+dirty" if dirty else "")


def metadata(devices: list[str], repeats: int, quick: bool = False) -> dict:
    """Where and when the card was measured: machine, OS, CPU model, cores, threads, the
    versions of everything timed, the date (UTC) and the commit.

    Args:
        devices: the devices measured (as given to ``run_card``); a GPU among them adds its
            description and CuPy's version.
        repeats: timed runs per arm, recorded as is.
        quick: the card was made with ``--quick`` (recorded, so a quick card says so).
    """
    import llvmlite

    meta = dict(date=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                commit=_commit(), machine=platform.machine(), os=platform.platform(),
                cpu_model=_cpu_model(), cpu_cores=os.cpu_count(), threads=get_num_threads(),
                eagle=__version__, python=platform.python_version(), numpy=np.__version__,
                llvmlite=llvmlite.__version__, devices=list(devices), repeats=repeats, quick=quick)
    gpus = [d for d in devices if d != HOST]
    if gpus:
        meta["gpu"] = [line.strip() for line in backend_for(gpus[0]).describe()]
        try:
            import cupy

            meta["cupy"] = cupy.__version__
        except ImportError:
            pass
    return meta


def caption(meta: dict) -> str:
    """One line naming the machine, the versions, the date and what the numbers are, from
    ``meta`` (a ``metadata()`` dict)."""
    gpu = f"; GPU: {meta['gpu'][0]}" if meta.get("gpu") else ""
    commit = f", commit {meta['commit']}" if meta.get("commit") else ""
    return (f"Measured {meta['date']} on {meta['cpu_model']} ({meta['machine']}, "
            f"{meta['cpu_cores']} cores, eagle on {meta['threads']} threads){gpu}; {meta['os']}; "
            f"eagle {meta['eagle']}{commit}, Python {meta['python']}, NumPy {meta['numpy']}, "
            f"llvmlite {meta['llvmlite']}. Wall time: median of {meta['repeats']} runs after a "
            f"warm-up run, with the fastest and slowest run in brackets.")


def _groups(rows: list[dict]) -> list[tuple[str, str, list[dict]]]:
    groups = []
    for device in dict.fromkeys(r["device"] for r in rows):
        for config in dict.fromkeys(r["config"] for r in rows):
            chosen = [r for r in rows if r["device"] == device and r["config"] == config]
            if chosen:
                groups.append((device, config, chosen))
    return groups


def _n_of(chosen: list[dict]) -> int:
    return max(r["n"] for r in chosen)


def markdown(rows: list[dict], meta: dict | None = None) -> str:
    """The spec's table (Arm | What it does | Wall time) for each device and configuration,
    the wall time as ``median ms (min-max)``, with ``caption(meta)`` below when given.

    Args:
        rows: ``run_card``'s rows.
        meta: a ``metadata()`` dict, or None (default) for no caption.
    """
    lines = []
    for device, config, chosen in _groups(rows):
        n = _n_of(chosen)
        lines += [f"**{device}, N = {n:,}, {config}**", "",
                  "| Arm | What it does | Wall time |", "|---|---|---|"]
        for r in chosen:
            at_n = f" (at N = {r['n']:,})" if r["n"] != n else ""
            lines.append(f"| {r['arm']} | {r['what']}{at_n} | {r['median_s'] * 1e3:.1f} ms "
                         f"({r['min_s'] * 1e3:.1f}\u2013{r['max_s'] * 1e3:.1f}) |")
        lines.append("")
    if meta is not None:
        lines.append(caption(meta))
    return "\n".join(lines)


def chart(rows: list[dict], path: Path, meta: dict | None = None) -> bool:
    """Write ``figure(rows, meta)`` to ``path`` (PNG); False without matplotlib. ``rows`` and
    ``meta`` are as for ``markdown``."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig = figure(rows, meta)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def figure(rows: list[dict], meta: dict | None = None):
    """Linear bars of the median wall time, whiskers from the fastest to the slowest run,
    each bar labelled with its ratio to the fastest arm (``x21.0``), ``caption(meta)`` below:
    a matplotlib ``Figure``, one panel per device and configuration. ``rows`` are
    ``run_card``'s; ``meta`` (a ``metadata()`` dict) adds the caption, None leaves it out."""
    import textwrap

    import matplotlib.pyplot as plt

    groups = _groups(rows)
    fig, axes = plt.subplots(1, len(groups), figsize=(4.2 * len(groups), 3.2), squeeze=False)
    for ax, (device, config, chosen) in zip(axes[0], groups, strict=True):
        median = np.array([r["median_s"] for r in chosen]) * 1e3
        low = median - np.array([r["min_s"] for r in chosen]) * 1e3
        high = np.array([r["max_s"] for r in chosen]) * 1e3 - median
        labels = [r["arm"] + (f"\n(N = {r['n']:,})" if r["n"] != _n_of(chosen) else "")
                  for r in chosen]
        ax.barh(labels, median, xerr=[low, high], capsize=3,
                color=[f"C{k}" for k in range(len(chosen))])
        ax.invert_yaxis()
        fastest, right = median.min(), (median + high).max()
        for k, value in enumerate(median):
            ax.text(value + high[k] + right * 0.03, k,
                    f"{value:.1f} ms  \u00d7{value / fastest:.1f}", va="center", fontsize=8)
        ax.set_xlim(0, right * 1.5)
        ax.set_xlabel("wall time, ms (linear axis)")
        ax.set_title(f"{device}, {config}, N = {_n_of(chosen):,}\n"
                     "\u00d7: time relative to the fastest arm", fontsize=9)
    if meta is not None:
        text = "\n".join(textwrap.wrap(caption(meta), 60 * len(groups) + 30))
        fig.text(0.01, 0.01, text, fontsize=6.5, va="bottom", ha="left")
        fig.tight_layout(rect=(0, 0.04 * (text.count("\n") + 1) + 0.04, 1, 1))
    else:
        fig.tight_layout()
    return fig


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line and exit 2, not the usage block
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m eagle bench",
                     description="the eager-loop vs graph performance card")
    parser.add_argument("--quick", action="store_true",
                        help="N = 100,000 on the CPU (full: 1,000,000, NumPy arm 100,000)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/card"),
                        help="folder for card.json, card.md, card.png")
    parser.add_argument("--cpu-only", action="store_true", help="skip the GPU even if present")
    parser.add_argument("--n", type=_positive, default=None,
                        help="samples on the CPU, every arm (overrides --quick's and the full N)")
    parser.add_argument("--repeats", type=_positive, default=REPEATS,
                        help=f"timed runs per arm after one warm-up (default {REPEATS})")
    args = parser.parse_args(argv)
    devices = [HOST] + [b.default_device() for b in backends()[1:]
                        if b.unavailable_reason() is None and not args.cpu_only]
    n_cpu = args.n or (100_000 if args.quick else 1_000_000)
    eager_n = None if (args.n or args.quick) else EAGER_N_CPU
    rows = run_card(n_cpu, 1_000_000, args.repeats, devices, eager_n_cpu=eager_n)
    meta = metadata(devices, args.repeats, args.quick)
    table = markdown(rows, meta)
    print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "card.json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=2))
    (args.out / "card.md").write_text(table + "\n")
    drew = chart(rows, args.out / "card.png", meta)
    print(f"all arms agree bit for bit; wrote {args.out}/card.json, card.md"
          + (", card.png" if drew else " (no card.png: matplotlib is not installed)"))
    return 0
