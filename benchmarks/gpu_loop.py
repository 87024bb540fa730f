"""The GPU loop benchmark: ``run()`` alone against the device's FP64 limit, eager vs graph,
a scattered tail against a sorted one, and a Lorenz ensemble vs JAX ``vmap(while_loop)``.

Needs a CUDA GPU and CuPy (JAX optional); without one it says so, writes its JSON with the
reason, and exits 0. Importing it needs neither. All arms run in one process on the same data,
their repeats interleaved (arm A, arm B, ..., then again), and every timed region is
``run()`` alone: the runner is built, its graph recorded (``build_s``, timed apart) and its
arrays re-initialised on the device before the clock starts. Reported per arm:

- the card (n = 1,000,000, ``uniform`` and ``spread-1000``, eagle.bench's oscillator):
  ``eager_loop`` (one step per launch, the host reads the live count after each),
  ``eagle_graph`` (the adaptive launch schedule), ``graph_fixed64`` (the old fixed 64 steps per
  launch, to measure the schedule against), ``graph_fmad`` (``deploy(fmad=True)``: fused
  multiply-adds, fast and not bit-exact), ``graph_no_compaction`` (every launch takes every
  sample: what the GPU's compaction of live samples gains or costs); the set-up (arrays to
  the device), ``until_done`` (bind, compile, load) and ``build_s`` (record the graph) apart
  from ``run_s``; useful
  sample-steps per second; the fraction of the FP64 issue limit that ``run_s`` reaches
  (``FP64_OPS_PER_STEP`` FP64 instructions per sample-step against SMs x FP64 units per SM x
  clock); eager / graph; every exact arm checked bit for bit against the others (and against
  eagle's CPU backend without ``--quick``);
- the tail (n = 1,000,000: 99% of samples stop after 100 steps, 1% after 10,000), scattered at
  random places and sorted together: ``eagle_graph`` and ``graph_no_compaction`` ``run()``
  alone, each against the sorted tail with compaction (what scattering costs);
- Lorenz (8,388,608 trajectories, RK4): ``eagle_graph`` ``run()`` alone vs JAX
  ``jit(vmap(lax.while_loop))`` after its compile, agreeing to rounding.

    python benchmarks/gpu_loop.py [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

import eagle
import hawk
from eagle.bench import DT, MAX_STEPS, initial
from eagle.bench import oscillator as card_kernel
from hawk import Mutable, Param, Scalar, Terminated

SIGMA, BETA, LORENZ_DT = 10.0, 8.0 / 3.0, 0.01
#: FP64 instructions in one step of the card's oscillator: x + dt v (2), v - (dt w w) x (2,
#: dt w w hoisted out of the loop), t + dt (1); the stop test is a compare
FP64_OPS_PER_STEP = 5
#: FP64 units per SM by compute capability (data-centre parts; consumer parts have 2)
FP64_UNITS_PER_SM = {(6, 0): 32, (7, 0): 32, (8, 0): 32, (9, 0): 64, (10, 0): 64}
CARD_ARMS = ("eager_loop", "eagle_graph", "graph_fixed64", "graph_fmad", "graph_no_compaction")
EXACT_ARMS = ("eager_loop", "eagle_graph", "graph_fixed64", "graph_no_compaction")


@hawk.kernel
def lorenz(rho: Scalar, sigma: Param, beta: Param, dt: Param, steps: Param,
           terminated: Terminated, x: Mutable[Scalar], y: Mutable[Scalar], z: Mutable[Scalar],
           k: Mutable[Scalar]):
    ax = sigma * (y - x)
    ay = x * (rho - z) - y
    az = x * y - beta * z
    x2, y2, z2 = x + 0.5 * dt * ax, y + 0.5 * dt * ay, z + 0.5 * dt * az
    bx = sigma * (y2 - x2)
    by = x2 * (rho - z2) - y2
    bz = x2 * y2 - beta * z2
    x3, y3, z3 = x + 0.5 * dt * bx, y + 0.5 * dt * by, z + 0.5 * dt * bz
    cx = sigma * (y3 - x3)
    cy = x3 * (rho - z3) - y3
    cz = x3 * y3 - beta * z3
    x4, y4, z4 = x + dt * cx, y + dt * cy, z + dt * cz
    dx = sigma * (y4 - x4)
    dy = x4 * (rho - z4) - y4
    dz = x4 * y4 - beta * z4
    x = x + dt / 6.0 * (ax + 2.0 * bx + 2.0 * cx + dx)
    y = y + dt / 6.0 * (ay + 2.0 * by + 2.0 * cy + dy)
    z = z + dt / 6.0 * (az + 2.0 * bz + 2.0 * cz + dz)
    k += 1.0
    terminated = k >= steps


def fp64_issue_rate(info) -> tuple[float, str]:
    """FP64 instructions per second the device can issue, and how that was derived."""
    from eagle.cuda.driver import call, driver

    d = driver()

    clock_khz = call(d.cuDeviceGetAttribute,
                     d.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_CLOCK_RATE,
                     call(d.cuDeviceGet, info.ordinal))
    units = FP64_UNITS_PER_SM.get(info.compute_capability, 2)
    rate = info.multiprocessors * units * clock_khz * 1e3
    return rate, f"{info.multiprocessors} SMs x {units} FP64 units x {clock_khz / 1e6:.2f} GHz"


class Arm:
    """One timed way of running: a runner built once, whose arrays are re-initialised before
    each timed ``run()``."""

    def __init__(self, cp, name: str, kernel, bindings: dict, max_steps: int, **options):
        self.cp, self.name = cp, name
        fmad = options.pop("fmad", False)
        compact = options.pop("compact", True)
        t0 = time.perf_counter()
        self.state = {k: cp.asarray(v) if isinstance(v, np.ndarray) else v
                      for k, v in bindings.items()}
        self.initial = {k: v.copy() for k, v in self.state.items() if isinstance(v, cp.ndarray)}
        cp.cuda.runtime.deviceSynchronize()
        self.setup_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        self.runner = eagle.until_done(eagle.deploy(kernel, "gpu", fmad=fmad),
                                       max_steps=max_steps, **options, **self.state)
        self.until_done_s = time.perf_counter() - t0
        self.runner._loop.graph_loop().compact = compact  # an A/B of the GPU's compaction
        self.build_s = self.runner.run().build_s  # the first run records the graph
        self.samples: list[float] = []
        self.report = None

    def once(self) -> None:
        for key, value in self.initial.items():
            self.state[key][...] = value
        self.runner.reset()
        self.cp.cuda.runtime.deviceSynchronize()
        t0 = time.perf_counter()
        self.report = self.runner.run()
        self.cp.cuda.runtime.deviceSynchronize()
        self.samples.append(time.perf_counter() - t0)

    @property
    def run_s(self) -> float:
        return float(np.median(self.samples))


def interleaved(arms: list, repeats: int) -> None:
    for _ in range(repeats):
        for arm in arms:
            arm.once()


def card_rows(cp, n: int, config: str, repeats: int, fp64_rate: float,
              check_cpu: bool) -> list[dict]:
    host = dict(initial(n, config), dt=DT)
    options = {"eager_loop": dict(steps_per_launch=1, eager=True), "eagle_graph": {},
               "graph_fixed64": dict(steps_per_launch=64), "graph_fmad": dict(fmad=True),
               "graph_no_compaction": dict(compact=False)}
    arms = [Arm(cp, name, card_kernel, host, MAX_STEPS, **options[name]) for name in CARD_ARMS]
    interleaved(arms, repeats)
    finals = {a.name: {k: cp.asnumpy(a.state[k]) for k in ("x", "v", "t")} for a in arms}
    truth = finals["eagle_graph"]
    if check_cpu:
        cpu = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in host.items()}
        eagle.simulate(card_kernel, max_steps=MAX_STEPS, device="cpu", **cpu)
        truth = {k: cpu[k] for k in ("x", "v", "t")}
    sample_steps = int(np.rint(truth["t"] / DT).sum())  # the steps every sample took
    rows = []
    for arm in arms:
        exact = all(np.array_equal(finals[arm.name][k], truth[k]) for k in truth)
        rows.append(dict(
            workload="card", n=n, config=config, arm=arm.name, run_s=arm.run_s,
            runs_s=arm.samples, setup_s=arm.setup_s, until_done_s=arm.until_done_s,
            build_s=arm.build_s, launches=arm.report.launches, steps=arm.report.steps,
            mode=arm.report.mode, sample_steps=sample_steps,
            sample_steps_per_s=sample_steps / arm.run_s,
            fp64_limit_fraction=sample_steps * FP64_OPS_PER_STEP / fp64_rate / arm.run_s,
            exact=exact if arm.name in EXACT_ARMS else None,
            exact_reference="cpu" if check_cpu else "eagle_graph"))
    graph = next(r for r in rows if r["arm"] == "eagle_graph")
    for row in rows:
        row["vs_eagle_graph"] = row["run_s"] / graph["run_s"]
    return rows


def tail_rows(cp, n: int, repeats: int, fp64_rate: float) -> list[dict]:
    """The scattered tail against the same lifetimes sorted (the long-lived samples packed into
    whole warps, the best a GPU can do): their time ratio is what scattering costs."""
    arms = []
    for config in ("tail-scattered", "tail-sorted"):
        host = dict(initial(n, config), dt=DT)
        for arm, compact in (("eagle_graph", True), ("graph_no_compaction", False)):
            arms.append(Arm(cp, arm, card_kernel, host, 20_000, compact=compact))
            arms[-1].config = config
    interleaved(arms, repeats)
    rows = []
    for arm in arms:
        sample_steps = int(np.rint(cp.asnumpy(arm.state["t"]) / DT).sum())
        rows.append(dict(workload="tail", n=n, config=arm.config, arm=arm.name,
                         run_s=arm.run_s, runs_s=arm.samples, build_s=arm.build_s,
                         launches=arm.report.launches, steps=arm.report.steps,
                         sample_steps=sample_steps, sample_steps_per_s=sample_steps / arm.run_s,
                         fp64_limit_fraction=sample_steps * FP64_OPS_PER_STEP / fp64_rate
                         / arm.run_s))
    sorted_tail = next(r for r in rows if r["config"] == "tail-sorted" and
                       r["arm"] == "eagle_graph")
    for row in rows:
        row["vs_eagle_graph"] = row["run_s"] / sorted_tail["run_s"]  # the sorted tail's
    return rows


def lorenz_rows(cp, n: int, steps: int, repeats: int, fp64_rate: float) -> list[dict]:
    rng = np.random.default_rng(7)
    host = dict(x=np.ones(n), y=np.zeros(n), z=np.zeros(n), k=np.zeros(n),
                rho=rng.uniform(0.0, 21.0, n))  # below the chaotic range: rounding stays small
    arm = Arm(cp, "eagle_graph", lorenz, dict(host, sigma=SIGMA, beta=BETA, dt=LORENZ_DT,
                                              steps=float(steps)), steps + 1)
    interleaved([arm], repeats)
    row = dict(workload="lorenz", n=n, steps=steps, arm="eagle_graph", run_s=arm.run_s,
               runs_s=arm.samples, build_s=arm.build_s, launches=arm.report.launches,
               sample_steps_per_s=n * steps / arm.run_s)
    rows = [row]
    try:
        jax_s, jax_x, compile_s, platform = lorenz_jax(host, steps, repeats)
    except ImportError as exc:
        rows.append(dict(workload="lorenz", arm="jax_vmap_while", skipped=str(exc)))
        return rows
    if platform != "gpu":  # a peer on the host is no peer of a GPU run
        rows.append(dict(workload="lorenz", arm="jax_vmap_while",
                         skipped=f"JAX ran on its {platform} backend, not the GPU"))
        return rows
    rows.append(dict(workload="lorenz", n=n, steps=steps, arm="jax_vmap_while", run_s=jax_s,
                     jax_platform=platform,
                     compile_s=compile_s, sample_steps_per_s=n * steps / jax_s,
                     eagle_speedup=jax_s / arm.run_s,
                     max_abs_diff_vs_eagle=float(np.max(np.abs(
                         jax_x - cp.asnumpy(arm.state["x"]))))))
    return rows


def lorenz_jax(host: dict, steps: int, repeats: int):
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # share the GPU politely
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    sigma, beta, dt = SIGMA, BETA, LORENZ_DT

    def f(x, y, z, rho):
        return sigma * (y - x), x * (rho - z) - y, x * y - beta * z

    def solve(x, y, z, rho):
        def body(c):
            k, x, y, z = c
            ax, ay, az = f(x, y, z, rho)
            bx, by, bz = f(x + 0.5 * dt * ax, y + 0.5 * dt * ay, z + 0.5 * dt * az, rho)
            cx, cy, cz = f(x + 0.5 * dt * bx, y + 0.5 * dt * by, z + 0.5 * dt * bz, rho)
            dx, dy, dz = f(x + dt * cx, y + dt * cy, z + dt * cz, rho)
            return (k + 1, x + dt / 6.0 * (ax + 2.0 * bx + 2.0 * cx + dx),
                    y + dt / 6.0 * (ay + 2.0 * by + 2.0 * cy + dy),
                    z + dt / 6.0 * (az + 2.0 * bz + 2.0 * cz + dz))

        _, x, y, z = jax.lax.while_loop(lambda c: c[0] < steps, body, (0, x, y, z))
        return x

    solver = jax.jit(jax.vmap(solve))
    args = [jax.device_put(jnp.asarray(host[k])) for k in ("x", "y", "z", "rho")]
    t0 = time.perf_counter()
    solver(*args).block_until_ready()  # compile + first run, not timed below
    compile_s = time.perf_counter() - t0
    samples, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = solver(*args).block_until_ready()
        samples.append(time.perf_counter() - t0)
    platform = {device.platform for device in out.devices()}
    return float(np.median(samples)), np.asarray(out), compile_s, ",".join(sorted(platform))


def gpu_reason() -> str | None:
    """Why this machine cannot run the benchmark, or None."""
    from eagle.cuda import unavailable_reason

    reason = unavailable_reason()
    if reason:
        return f"no GPU: {reason}"
    try:
        import cupy  # noqa: F401
    except ImportError:
        return "no CuPy: pip install 'eagle-hawk[cupy]'"
    return None


def print_rows(rows: list[dict]) -> None:
    print(f"{'workload':<8} {'config':<12} {'arm':<15} {'run ms':>9} {'launches':>8} "
          f"{'Gsample-steps/s':>15} {'FP64 limit':>10} {'vs graph':>8} {'exact':>6}")
    for r in rows:
        if "skipped" in r:
            print(f"{r['workload']:<8} {'':<12} {r['arm']:<15} skipped: {r['skipped']}")
            continue
        limit = r.get("fp64_limit_fraction")
        config = r.get("config", "n=" + str(r.get("n")))
        print(f"{r['workload']:<8} {config:<12} {r['arm']:<15} "
              f"{r['run_s'] * 1e3:>9.3f} {r.get('launches', '-'):>8} "
              f"{r['sample_steps_per_s'] / 1e9:>15.2f} "
              f"{'-' if limit is None else f'{limit:.1%}':>10} "
              f"{r.get('vs_eagle_graph', r.get('eagle_speedup', 0)):>8.2f} "
              f"{str(r.get('exact', '-')):>6}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="3 repeats, Lorenz for 100 steps, float64 only, no CPU check")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed runs per arm, the median reported (default 3 with --quick, 7)")
    out_dir = Path(os.environ["OUT"]) if os.environ.get("OUT") else Path("benchmarks/results")
    parser.add_argument("--json", type=Path, default=out_dir / "gpu_loop.json")
    parser.add_argument("--n", type=int, default=1_000_000, help="card samples")
    parser.add_argument("--lorenz-n", type=int, default=8_388_608)
    args = parser.parse_args(argv)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    reason = gpu_reason()
    if reason:
        print(f"gpu_loop: {reason}; nothing measured")
        args.json.write_text(json.dumps(dict(skipped=reason), indent=2) + "\n")
        return 0
    import cupy as cp

    from eagle.cuda import device_info

    info = device_info(0)
    fp64_rate, derived = fp64_issue_rate(info)
    repeats = args.repeats or (3 if args.quick else 7)
    print(f"{info.name} ({info.arch}, driver {info.driver_version[0]}.{info.driver_version[1]}),"
          f" FP64 issue limit {fp64_rate / 1e12:.1f} T instructions/s ({derived})")
    result = dict(device=info.name, arch=info.arch, driver=list(info.driver_version),
                  fp64_issue_rate=fp64_rate, fp64_issue_rate_from=derived,
                  fp64_ops_per_step=FP64_OPS_PER_STEP, quick=args.quick, card=[], tail=[],
                  lorenz=[])

    def save():
        args.json.write_text(json.dumps(result, indent=2) + "\n")

    for config in ("spread-1000", "uniform"):  # the issue's configuration first
        result["card"] += card_rows(cp, args.n, config, repeats, fp64_rate, not args.quick)
        save()
    print_rows(result["card"])
    result["tail"] = tail_rows(cp, args.n, repeats, fp64_rate)
    save()
    print_rows(result["tail"])
    result["lorenz"] = lorenz_rows(cp, args.lorenz_n, 100 if args.quick else 1000,
                                   repeats, fp64_rate)
    save()
    print_rows(result["lorenz"])
    missed = [f"{r['workload']} {r['arm']}: {r['skipped']}"
              for r in result["card"] + result["tail"] + result["lorenz"] if "skipped" in r]
    if missed:  # gpu-check fails a bench step whose JSON names something skipped
        result["skipped"] = "; ".join(missed)
        save()
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
