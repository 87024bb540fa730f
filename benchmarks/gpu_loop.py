"""The GPU loop benchmark: eager loops vs eagle's graph, and a Lorenz ensemble vs JAX.

Needs a CUDA GPU and CuPy (JAX optional). All arms run in one process on the same data:

- card (n = 1,000,000, ``uniform`` and ``spread-1000``):
  ``cupy_eager`` (a CuPy masked loop, the host checks "anyone live?" after every step),
  ``eager_loop`` (eagle's kernel, one step per launch, the host reads the live count after
  each: ``until_done(..., steps_per_launch=1, eager=True)``), ``eagle_graph``
  (``until_done(...).run()``: one graph launch); all checked bit for bit against eagle's CPU
  backend;
- Lorenz (8,388,608 trajectories, 1000 RK4 steps, float32 and float64): ``eagle_graph`` vs
  JAX ``jit(vmap(lax.while_loop))``, checked to agree to rounding.

Prints a table and writes JSON (``$OUT/gpu_loop.json`` when ``$OUT`` is set).

    python benchmarks/gpu_loop.py [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX shares the GPU politely

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu_loop import DT, MAX_STEPS, oscillator, spread_oscillator, t_end_of  # noqa: E402

import eagle  # noqa: E402
import hawk  # noqa: E402
from eagle.bench import array_eager  # noqa: E402
from hawk import Mutable, Param, Scalar, Terminated  # noqa: E402

SIGMA, BETA, LORENZ_DT = 10.0, 8.0 / 3.0, 0.01


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


def timed(function, repeats: int) -> tuple[float, object]:
    """Median seconds of ``repeats`` calls after one warm-up, and the last result."""
    import cupy as cp

    samples, result = [], None
    for _ in range(repeats + 1):
        cp.cuda.runtime.deviceSynchronize()
        t0 = time.perf_counter()
        result = function()
        cp.cuda.runtime.deviceSynchronize()
        samples.append(time.perf_counter() - t0)
    return float(np.median(samples[1:])), result


def copy_bandwidth() -> float:
    """Bytes per second of a device-to-device copy (read + write counted), the practical peak."""
    import cupy as cp

    a = cp.ones(1 << 28, dtype=cp.float32)  # 1 GiB
    b = cp.empty_like(a)
    seconds, _ = timed(lambda: b.__setitem__(Ellipsis, a), 5)
    return 2 * a.nbytes / seconds


def card(n: int, repeats: int) -> list[dict]:
    return [row for config in ("uniform", "spread-1000") for row in card_rows(n, config, repeats)]


def card_rows(n: int, config: str, repeats: int) -> list[dict]:
    import cupy as cp

    rows = []
    kernel = oscillator if config == "uniform" else spread_oscillator
    t_end_host = 1.0 if config == "uniform" else t_end_of(n, config)

    omega_host = np.linspace(1.0, 3.0, n)  # built once on the host: every arm sees the same bits

    def fresh():
        t_end = t_end_host if config == "uniform" else cp.asarray(t_end_host)
        return dict(x=cp.ones(n), v=cp.zeros(n), t=cp.zeros(n), omega=cp.asarray(omega_host),
                    t_end=t_end, dt=DT)

    def eagle_arm(**options):
        def run():
            s = fresh()
            report = eagle.until_done(eagle.deploy(kernel, "gpu"), max_steps=MAX_STEPS,
                                      **options, **s).run()
            return s, report
        return run

    def cupy_eager():  # the card's array loop, a host round trip after every step
        s = fresh()
        if config == "uniform":
            s["t_end"] = cp.full(n, 1.0)
        array_eager(cp, s)
        return s, None

    arms = {"cupy_eager": cupy_eager,
            "eager_loop": eagle_arm(steps_per_launch=1, eager=True),
            "eagle_graph": eagle_arm()}
    # The ground truth: eagle's CPU backend, itself bit-exact against the reference.
    cpu = dict(x=np.ones(n), v=np.zeros(n), t=np.zeros(n), omega=omega_host.copy(),
               t_end=t_end_host, dt=DT)
    eagle.simulate(kernel, max_steps=MAX_STEPS, device="cpu", **cpu)
    for arm, arm_run in arms.items():
        seconds, (s, report) = timed(arm_run, repeats)
        exact = all(np.array_equal(cp.asnumpy(s[k]), cpu[k]) for k in ("x", "v", "t"))
        row = dict(n=n, config=config, arm=arm, median_s=seconds, exact_vs_cpu=exact)
        if report is not None:
            row.update(launches=report.launches, steps=report.steps, mode=report.mode)
            if arm == "eagle_graph":
                build = eagle.until_done(eagle.deploy(kernel, "gpu"), max_steps=MAX_STEPS,
                                         **fresh()).run().build_s
                row["graph_build_s"] = build
        rows.append(row)
    return rows


def lorenz_initial(n: int, dtype):
    rng = np.random.default_rng(7)
    return dict(x=np.full(n, 1.0, dtype), y=np.zeros(n, dtype), z=np.zeros(n, dtype),
                rho=rng.uniform(0.0, 21.0, n).astype(dtype))


def lorenz_rows(n: int, steps: int, repeats: int, peak: float) -> list[dict]:
    return [row for dtype in (np.float32, np.float64)
            for row in lorenz_dtype_rows(n, steps, dtype, repeats, peak)]


def lorenz_dtype_rows(n: int, steps: int, dtype, repeats: int, peak: float) -> list[dict]:
    import cupy as cp

    rows = []
    host = lorenz_initial(n, dtype)

    def run_eagle():
        s = {k: cp.asarray(v) for k, v in host.items()}
        s["k"] = cp.zeros(n, dtype)
        report = eagle.until_done(eagle.deploy(lorenz, "gpu"), max_steps=steps + 1,
                                  sigma=dtype(SIGMA), beta=dtype(BETA), dt=dtype(LORENZ_DT),
                                  steps=dtype(steps), **s).run()
        return s, report

    seconds, (s, report) = timed(run_eagle, repeats)
    per_sample = 5 * np.dtype(dtype).itemsize + 4 * np.dtype(dtype).itemsize + 2  # r + w
    moved = report.launches * n * per_sample
    rows.append(dict(workload="lorenz", dtype=np.dtype(dtype).name, n=n, steps=steps,
                     arm="eagle_graph", median_s=seconds, launches=report.launches,
                     bandwidth_fraction=moved / seconds / peak))
    eagle_x = cp.asnumpy(s["x"])
    try:
        jax_seconds, jax_x = lorenz_jax(host, steps, dtype, repeats)
    except ImportError as exc:
        rows.append(dict(workload="lorenz", dtype=np.dtype(dtype).name, arm="jax",
                         skipped=str(exc)))
        return rows
    moved_jax = n * (4 * np.dtype(dtype).itemsize) * 2  # state in and out, once
    rows.append(dict(workload="lorenz", dtype=np.dtype(dtype).name, n=n, steps=steps,
                     arm="jax_vmap_while", median_s=jax_seconds,
                     speedup_of_eagle=jax_seconds / seconds,
                     bandwidth_fraction=moved_jax / jax_seconds / peak,
                     max_abs_diff_vs_eagle=float(np.max(np.abs(jax_x - eagle_x)))))
    return rows


def lorenz_jax(host: dict, steps: int, dtype, repeats: int):
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    sigma, beta, dt = dtype(SIGMA), dtype(BETA), dtype(LORENZ_DT)

    def f(x, y, z, rho):
        return sigma * (y - x), x * (rho - z) - y, x * y - beta * z

    def solve(x, y, z, rho):
        def body(c):
            k, x, y, z = c
            ax, ay, az = f(x, y, z, rho)
            bx, by, bz = f(x + 0.5 * dt * ax, y + 0.5 * dt * ay, z + 0.5 * dt * az, rho)
            cx, cy, cz = f(x + 0.5 * dt * bx, y + 0.5 * dt * by, z + 0.5 * dt * bz, rho)
            dx, dy, dz = f(x + dt * cx, y + dt * cy, z + dt * cz, rho)
            sixth = dt / dtype(6.0)
            return (k + 1, x + sixth * (ax + 2 * bx + 2 * cx + dx),
                    y + sixth * (ay + 2 * by + 2 * cy + dy),
                    z + sixth * (az + 2 * bz + 2 * cz + dz))

        _, x, y, z = jax.lax.while_loop(lambda c: c[0] < steps, body, (0, x, y, z))
        return x

    solver = jax.jit(jax.vmap(solve))
    args = [jnp.asarray(host[k]) for k in ("x", "y", "z", "rho")]
    samples, out = [], None
    for _ in range(repeats + 1):
        t0 = time.perf_counter()
        out = solver(*args).block_until_ready()
        samples.append(time.perf_counter() - t0)
    return float(np.median(samples[1:])), np.asarray(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, smaller Lorenz")
    out_dir = Path(os.environ["OUT"]) if os.environ.get("OUT") else Path("benchmarks/results")
    parser.add_argument("--json", type=Path, default=out_dir / "gpu_loop.json")
    args = parser.parse_args()
    from eagle.cuda import device_info

    info = device_info(0)
    repeats = 3 if args.quick else 5
    peak = copy_bandwidth()
    print(f"{info.name} ({info.arch}, driver {info.driver_version}), copy bandwidth "
          f"{peak / 1e12:.2f} TB/s")
    rows = card(1_000_000, repeats)
    print(f"{'config':<12} {'arm':<12} {'median ms':>10} {'launches':>9} {'exact':>6}")
    for r in rows:
        print(f"{r['config']:<12} {r['arm']:<12} {r['median_s'] * 1e3:>10.2f} "
              f"{r.get('launches', '-'):>9} {str(r['exact_vs_cpu']):>6}")
    for config in ("uniform", "spread-1000"):
        by_arm = {r["arm"]: r for r in rows if r["config"] == config}
        print(f"{config}: eager_loop / eagle_graph = "
              f"{by_arm['eager_loop']['median_s'] / by_arm['eagle_graph']['median_s']:.1f}x, "
              f"graph build {by_arm['eagle_graph']['graph_build_s'] * 1e3:.3f} ms")
    n_lorenz = 1 << 20 if args.quick else 8_388_608
    lorenz = lorenz_rows(n_lorenz, 1000, repeats, peak)
    for r in lorenz:
        print({k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in r.items()})
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(dict(device=info.name, arch=info.arch,
                                         driver=info.driver_version, copy_bandwidth=peak,
                                         card=rows, lorenz=lorenz), indent=2))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
