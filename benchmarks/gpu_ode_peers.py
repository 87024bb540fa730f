"""The GPU raced against what a GPU user would pick (issue 39): ``eagle.ode.solve`` against a
hand-written CUDA integrator of the same method and against diffrax ``jit(vmap)``, and the
performance card's oscillator against a hand-written CUDA loop.

Arms, all in one process on the same data, interleaved round by round (arm A, arm B, ...,
then again), each timed alone after an untimed first call (compile, load, capture):

- ``eagle``: ``eagle.ode.solve(f, u0, (t0, t1), p, method=...)`` on CuPy arrays; the whole
  call is timed (``solve_s``: checks, arrays, the first-step kernel, binding, the graph's
  capture and ``run()``), and ``run()`` alone is reported beside it (``run_s``);
- ``cuda``: ``cuda_peers/models.cu``, compiled by NVRTC through CuPy's ``RawKernel`` with
  ``--fmad=false`` (as eagle compiles): one thread per trajectory, its state, stages and
  controller in registers, the whole adaptive solve inside one launch (the MPGOS and
  DiffEqGPU ``EnsembleGPUKernel`` design); the same method, controller, first step and step
  rules as eagle's (Tsit5 or DOPRI5; Rodas5P with a hand-written Jacobian and one LU per step),
  so it takes eagle's steps; the timed region is the launch and its synchronisation (outputs
  allocated before);
- ``cuda_fmad``: the same source compiled with NVRTC's default ``--fmad=true`` (what a CUDA
  programmer gets by default): its steps may differ by rounding, its ends are checked against
  the reference only;
- ``diffrax``: ``jax.jit(jax.vmap(solve_one))`` with ``diffrax.Tsit5``/``Dopri5`` and a
  ``PIDController`` set to Hairer's constants as far as diffrax allows
  (``ode_peers.make_diffrax`` says where it differs), ``Kvaerno5`` with diffrax's default
  controller for Robertson; float64; its platform must be ``gpu`` on the device (otherwise the
  arm is skipped, saying so); the timed region is the call and ``block_until_ready``.

Workloads (``--workloads``): ``lorenz`` (Tsit5, rtol = atol = 1e-8, t in [0, 1]), ``kepler``
(the 6-state two-body ensemble of ``kepler_ensemble.py``, DOPRI5, 1e-8, one period),
``robertson`` (Rodas5P, rtol 1e-6, atol 1e-10, t in [0, 1e5]), ``fpu16`` (an FPU-beta chain of
8 masses, 16 states, Tsit5, 1e-8, t in [0, 10]); each without and with ``saveat`` (11 equally
spaced times); ``card`` (eagle.bench's oscillator, ``spread-1000`` and ``uniform``: eagle's
graph, the graph without compaction of live samples, and ``cuda_loop``:
``cuda_peers/oscillator.cu`` looping every sample to its own stop in one launch, captured in a
CUDA graph and replayed).

Checks (a failure is listed in the JSON and the exit status is 1): the ``cuda`` peer takes
eagle's accepted and rejected steps on every trajectory (``steps_equal``) and ends within
``SAME_STEPS_BOUND * rtol`` of eagle (bit-identity is reported, ``bit_identical``); every
arm's end state on the first ``--check-n`` trajectories is within ``BOUND * rtol`` (relative,
``atol`` as the floor) of a reference: eagle's same method at ``REFERENCE_TOL``; the card's arms
equal each other bit for bit.

Output: ``gpu_ode_peers.json`` (every sample, every check) and ``gpu_ode_peers.md`` (the
summary table) under ``--out`` (default ``$OUT``, else ``benchmarks/results``), rewritten
after each cell so a run cut short keeps what it measured. ``--budget-s`` stops starting new
cells once spent (those are listed as skipped).

``--rehearse``: no GPU needed; eagle on the CPU (NumPy arrays), the hand-written peers built
by the host C++ compiler from the same ``.cu`` files (``handwritten_cuda.HostPeers``), diffrax
on JAX's CPU backend, at tiny sizes: the script's plumbing and checks, not speed.

    python benchmarks/gpu_ode_peers.py [--rehearse] [--out DIR] [--rounds K] [--budget-s S]
        [--workloads lorenz kepler robertson fpu16 card] [--lorenz-n 1e4 1e5 1e6 1e7] ...
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import handwritten_cuda as hc  # noqa: E402
from gpu_loop import FP64_OPS_PER_STEP  # noqa: E402
from gpu_ode_workloads import SAVES, WORKLOADS, Workload  # noqa: E402

import eagle  # noqa: E402
from eagle.bench import DT, MAX_STEPS, initial  # noqa: E402
from eagle.bench import oscillator as card_kernel  # noqa: E402

#: an arm's end state on the check subset, against the reference: at most this many rtol
BOUND = 1e4
#: the cuda peer against eagle where both take the same steps: at most this many rtol
SAME_STEPS_BOUND = 1e-3
#: the reference's tolerances (eagle's same method, tighter): rtol, atol
REFERENCE_TOL = {"lorenz": (1e-12, 1e-12), "kepler": (1e-12, 1e-12), "fpu16": (1e-12, 1e-12),
                 "robertson": (1e-10, 1e-14)}
#: under scripts/gpu-check (GPU_CHECK_STEP_ENDS, its step's end in Unix time), no cell starts
#: later than this before the step's end: the longest cell (diffrax's compile) fits in it
DEADLINE_MARGIN_S = 45.0
NO_HOST_FMAD = "the host build has no contracted variant"
MAX_STEPS_ODE = 1_000_000


# -- the device: the GPU with CuPy, or the host (the rehearsal) ---------------------------------


class Device:
    """Where the arms run: ``gpu`` (CuPy arrays, NVRTC peers) or ``cpu`` (NumPy, host-built
    peers)."""

    def __init__(self, gpu: bool):
        self.gpu = gpu
        if gpu:
            import cupy as cp

            self.xp = cp
        else:
            self.xp = np
        self._host: dict[str, hc.HostPeers] = {}
        self._kernels: dict[tuple, object] = {}

    def sync(self) -> None:
        if self.gpu:
            self.xp.cuda.runtime.deviceSynchronize()

    def to_host(self, a) -> np.ndarray:
        return self.xp.asnumpy(a) if self.gpu else np.asarray(a)

    def kernel(self, file: str, name: str, fmad: bool = False):
        """A callable ``(threads, *args)`` running kernel ``name`` of ``cuda_peers/file``,
        and what is known of its registers."""
        key = (file, name, fmad)
        if key not in self._kernels:
            if self.gpu:
                import cupy as cp

                raw = cp.RawKernel(hc.source(file), name, backend="nvrtc",
                                   options=(f"--fmad={'true' if fmad else 'false'}",))
                signature = hc.CARD_SIGNATURE if name == hc.CARD_KERNEL else hc.ODE_SIGNATURE

                def launch(threads, *args, raw=raw, signature=signature):
                    raw(((threads + hc.BLOCK - 1) // hc.BLOCK,), (hc.BLOCK,),
                        tuple(_cuda_arg(kind, a) for kind, a in zip(signature, args,
                                                                      strict=True)))

                launch.raw = raw
            else:
                if fmad:
                    raise ValueError("the host build has no contracted variant")
                if file not in self._host:
                    kernels = hc.card_kernels() if file == "oscillator.cu" else hc.ode_kernels()
                    self._host[file] = hc.HostPeers(file, kernels)
                host = self._host[file]

                def launch(threads, *args, host=host):
                    host.launch(name, threads, *args)

                launch.raw = None
            self._kernels[key] = launch
        return self._kernels[key]


def _bytes(arrays) -> int:
    """Device memory the arrays hold (each counted once)."""
    return sum({id(a): a.nbytes for a in arrays}.values())


def _cuda_arg(kind: str, value):
    if kind.endswith("*"):
        return value
    return np.float64(value) if kind == "double" else np.int64(value)


def kernel_resources(launch) -> dict:
    """Registers and local (spilled) bytes per thread of a CuPy kernel, where CuPy says."""
    raw = getattr(launch, "raw", None)
    if raw is None:
        return {}
    out = {}
    for key in ("num_regs", "local_size_bytes", "max_threads_per_block"):
        try:
            out[key] = int(getattr(raw, key))
        except Exception:  # noqa: BLE001 - an older CuPy: leave it out
            pass
    return out


# -- the arms -----------------------------------------------------------------------------------


@dataclass
class Result:
    u: np.ndarray
    accepted: np.ndarray | None = None
    rejected: np.ndarray | None = None
    status: np.ndarray | None = None
    saved: np.ndarray | None = None


@dataclass
class Arm:
    name: str
    call: object  # () -> None, the timed region
    fetch: object  # () -> Result
    samples: list = field(default_factory=list)
    extra: list = field(default_factory=list)  # eagle: run() alone per round
    first_s: float = 0.0
    info: dict = field(default_factory=dict)

    def once(self, device: Device, timed: bool = True) -> None:
        device.sync()
        t0 = time.perf_counter()
        self.call()
        device.sync()
        elapsed = time.perf_counter() - t0
        if timed:
            self.samples.append(elapsed)
        else:
            self.first_s = elapsed

    @property
    def median_s(self) -> float:
        return float(np.median(self.samples)) if self.samples else float("nan")


def saveat_of(w: Workload):
    return (0.0, w.t1, SAVES)


def eagle_arm(device: Device, w: Workload, u0, p, saveat: bool, name: str = "eagle",
              rtol=None, atol=None) -> Arm:
    xp = device.xp
    u0d, pd = xp.asarray(u0), xp.asarray(p[0] if p.shape[0] == 1 else p)
    state = {}

    def call():
        state["sol"] = eagle.ode.solve(
            w.f, u0d, (0.0, w.t1), pd, method=w.method, rtol=w.rtol if rtol is None else rtol,
            atol=w.atol if atol is None else atol, saveat=saveat_of(w) if saveat else None,
            max_steps=MAX_STEPS_ODE)

    def fetch():
        sol = state["sol"]
        held = [u0d, pd, *(a for a in sol.arrays.values() if hasattr(a, "nbytes"))]
        arm.info["bytes_per_trajectory"] = _bytes(held) / u0.shape[1]
        return Result(device.to_host(sol.u), device.to_host(sol.accepted),
                      device.to_host(sol.rejected), device.to_host(sol.status),
                      device.to_host(sol.saved) if saveat else None)

    arm = Arm(name, call, fetch)
    arm.state = state
    return arm


def cuda_arm(device: Device, w: Workload, u0, p, saveat: bool, fmad: bool = False) -> Arm:
    xp = device.xp
    k, n = u0.shape
    name = w.kernel + ("_saveat" if saveat else "")
    launch = device.kernel("models.cu", name, fmad=fmad)
    u0d, pd = xp.asarray(u0), xp.asarray(p)
    out = dict(u=xp.empty((k, n)), t=xp.empty(n), accepted=xp.empty(n, dtype=np.int64),
               rejected=xp.empty(n, dtype=np.int64), status=xp.empty(n, dtype=np.int64),
               saved=xp.full((SAVES, k, n) if saveat else (1,), np.nan))
    first, last, count = saveat_of(w)
    every = (last - first) / (count - 1)

    def call():
        if saveat:
            out["saved"].fill(np.nan)  # as solve fills it (NaN where a sample never got)
        launch(n, n, u0d, pd, 0.0, w.t1, w.rtol, w.atol, MAX_STEPS_ODE, first, every,
               count if saveat else 0, out["u"], out["t"], out["accepted"], out["rejected"],
               out["status"], out["saved"])

    def fetch():
        h = {key: device.to_host(v) for key, v in out.items()}
        return Result(h["u"], h["accepted"], h["rejected"], h["status"],
                      h["saved"] if saveat else None)

    arm = Arm("cuda_fmad" if fmad else "cuda", call, fetch)
    arm.info = dict(kernel_resources(launch),
                    bytes_per_trajectory=_bytes([u0d, pd, *out.values()]) / n)
    return arm


def diffrax_arm(device: Device, w: Workload, u0, p, saveat: bool) -> Arm:
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # share the GPU
    import diffrax
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    platform_name = jax.devices()[0].platform
    if device.gpu and platform_name != "gpu":
        raise RuntimeError(f"JAX runs on its {platform_name} backend here, not the GPU: a peer "
                           "on the host is no peer of a GPU run")
    term = diffrax.ODETerm(w.field)
    if w.solver == "Kvaerno5":
        solver = diffrax.Kvaerno5()
        controller = diffrax.PIDController(rtol=w.rtol, atol=w.atol)
    else:
        solver = getattr(diffrax, w.solver)()
        controller = diffrax.PIDController(rtol=w.rtol, atol=w.atol, pcoeff=0.2, icoeff=0.65,
                                           dcoeff=0.0, factormin=0.2, factormax=10.0,
                                           safety=0.9, error_order=5)
    first, last, count = saveat_of(w)
    save = diffrax.SaveAt(ts=jnp.linspace(first, last, count)) if saveat \
        else diffrax.SaveAt(t1=True)

    def solve_one(y0, args):
        sol = diffrax.diffeqsolve(term, solver, 0.0, w.t1, None, y0, args=args,
                                  stepsize_controller=controller, saveat=save,
                                  max_steps=100_000, throw=False)
        return sol.ys, sol.stats["num_accepted_steps"], sol.stats["num_rejected_steps"]

    fn = jax.jit(jax.vmap(solve_one))
    args = (jax.device_put(jnp.asarray(u0.T)), jax.device_put(jnp.asarray(p.T)))
    state = {}

    def call():
        state["out"] = jax.block_until_ready(fn(*args))

    def fetch():
        ys, acc, rej = (np.asarray(a) for a in state["out"])  # ys (n, T, N)
        u = np.ascontiguousarray(ys[:, -1, :].T)
        saved = np.ascontiguousarray(ys.transpose(1, 2, 0)) if saveat else None
        return Result(u, acc.astype(np.int64), rej.astype(np.int64), None, saved)

    arm = Arm("diffrax", call, fetch)
    arm.info = {"jax_platform": platform_name, "jax": jax.__version__,
                "diffrax": diffrax.__version__, "solver": w.solver}
    return arm


# -- the checks ---------------------------------------------------------------------------------


def scaled_error(u, ref, rtol: float, atol: float) -> float:
    """max |u - ref| / (atol + rtol |ref|) over components and trajectories, in units of rtol
    (so 1 is "within the tolerance"): NaN anywhere is inf."""
    e = np.abs(u - ref) / (atol / rtol + np.abs(ref))
    return float(np.max(e) / rtol) if np.all(np.isfinite(e)) else math.inf


def compare(w: Workload, results: dict, reference: Result | None, check: int) -> dict:
    """Every arm against eagle (steps, ends, saved) and against the reference."""
    base = results["eagle"]
    out = {}
    for name, r in results.items():
        row = {}
        if r.accepted is not None:
            row["accepted_mean"] = float(np.mean(r.accepted))
            row["rejected_mean"] = float(np.mean(r.rejected))
        if r.status is not None:
            row["done"] = int(np.sum(r.status == 1))
        if name != "eagle":
            same = (r.accepted == base.accepted) & (r.rejected == base.rejected)
            row["steps_equal"] = float(np.mean(same))
            row["accepted_max_diff"] = int(np.max(np.abs(r.accepted - base.accepted)))
            row["vs_eagle"] = scaled_error(r.u, base.u, w.rtol, w.atol)
            row["bit_identical"] = bool(np.array_equal(r.u, base.u) and (
                r.saved is None or np.array_equal(r.saved, base.saved, equal_nan=True)))
            if r.saved is not None and base.saved is not None:
                row["saved_vs_eagle"] = scaled_error(r.saved, base.saved, w.rtol, w.atol)
        if reference is not None:
            row["vs_reference"] = scaled_error(r.u[:, :check], reference.u, w.rtol, w.atol)
        out[name] = row
    return out


def failures_of(cell: str, checks: dict) -> list[str]:
    bad = []
    for name, row in checks.items():
        if name == "cuda":
            if row["steps_equal"] < 1.0:
                bad.append(f"{cell}: cuda took other steps than eagle on "
                           f"{1 - row['steps_equal']:.2%} of trajectories (accepted differ by "
                           f"up to {row['accepted_max_diff']})")
            elif row["vs_eagle"] > SAME_STEPS_BOUND:
                bad.append(f"{cell}: cuda ends {row['vs_eagle']:.3g} rtol from eagle on the "
                           "same steps")
        if row.get("vs_reference", 0.0) > BOUND:
            bad.append(f"{cell}: {name} ends {row['vs_reference']:.3g} rtol from the reference")
    return bad


# -- a cell: one workload, one size, with or without saveat ----------------------------------------


def ode_cell(device: Device, w: Workload, n: int, saveat: bool, args) -> dict:
    u0, p = w.ensemble(n)
    arms = [eagle_arm(device, w, u0, p, saveat)]
    skipped = {}
    for name, make in (("cuda", lambda: cuda_arm(device, w, u0, p, saveat)),
                       ("cuda_fmad", lambda: cuda_arm(device, w, u0, p, saveat, fmad=True)),
                       ("diffrax", lambda: diffrax_arm(device, w, u0, p, saveat))):
        if name not in args.arms:
            continue
        if name == "cuda_fmad" and not device.gpu:
            skipped[name] = NO_HOST_FMAD
            continue
        if name == "diffrax" and (n not in args.diffrax_n or (saveat and not
                                                               args.diffrax_saveat)):
            continue  # not asked for in this cell (each shape costs diffrax a compile)
        try:
            arms.append(make())
        except Exception as exc:  # noqa: BLE001 - not installed, not on the GPU, ...: said
            skipped[name] = f"{type(exc).__name__}: {exc}"
    for arm in list(arms):
        try:
            arm.once(device, timed=False)
        except Exception as exc:  # noqa: BLE001 - a peer that cannot run is named, not fatal
            if arm.name == "eagle":
                raise
            skipped[arm.name] = f"its first call raised {type(exc).__name__}: {exc}"
            arms.remove(arm)
    for _ in range(args.rounds):
        for arm in arms:
            arm.once(device)
            if arm.name == "eagle":
                report = arm.state["sol"].report
                arm.extra.append(report.wall_s - report.build_s)
    results = {arm.name: arm.fetch() for arm in arms}
    check = min(n, args.check_n)
    reference = None
    if not saveat:  # the reference: eagle's same method, tighter, on the first `check`
        rtol, atol = REFERENCE_TOL[w.name]
        ref_arm = eagle_arm(device, w, u0[:, :check].copy(), p[:, :check].copy(), False,
                            "reference", rtol, atol)
        ref_arm.once(device, timed=False)
        reference = ref_arm.fetch()
    checks = compare(w, results, reference, check)
    eagle_s = arms[0].median_s
    rows = []
    for arm in arms:
        row = dict(workload=w.name, method=w.method, n=n, saveat=saveat, arm=arm.name,
                   time_s=arm.median_s, times_s=arm.samples, first_s=arm.first_s,
                   trajectories_per_s=n / arm.median_s, **arm.info, **checks[arm.name])
        if arm.name == "eagle":
            row["run_s"] = float(np.median(arm.extra))
            row["runs_s"] = arm.extra
        else:
            row["vs_eagle_time"] = arm.median_s / eagle_s
        rows.append(row)
    for name, reason in skipped.items():
        rows.append(dict(workload=w.name, n=n, saveat=saveat, arm=name, skipped=reason))
    cell = f"{w.name} n={n:,}{' saveat' if saveat else ''}"
    # our own kernels must run (diffrax may be missing on a machine: that is only said)
    broken = [f"{cell}: {name} did not run: {reason}" for name, reason in skipped.items()
              if name.startswith("cuda") and reason != NO_HOST_FMAD]
    return dict(cell=cell, rows=rows, failures=broken + failures_of(cell, checks))


def cuda_loop_arm(device: Device, host: dict) -> Arm:
    """``cuda_peers/oscillator.cu`` on the card's arrays ``host``: every sample looped to its own
    stop in one launch (k = MAX_STEPS), captured into a CUDA graph on a GPU and replayed;
    ``arm.steps`` the steps each sample took."""
    xp = device.xp
    n = host["x"].shape[0]
    s = {k: xp.asarray(v.copy()) for k, v in host.items()}
    start = {k: v.copy() for k, v in s.items()}
    steps, live = xp.zeros(n, dtype=np.int64), xp.zeros(1, dtype=np.uint64)
    launch = device.kernel("oscillator.cu", hc.CARD_KERNEL)

    def step_all():
        launch(n, n, s["x"], s["v"], s["t"], s["omega"], s["t_end"], DT, MAX_STEPS, MAX_STEPS,
               steps, live)

    call, mode = step_all, "launch"
    resources = kernel_resources(launch)  # compiles and loads it: nothing of that in a capture
    if device.gpu:
        try:
            stream = xp.cuda.Stream(non_blocking=True)
            with stream:
                stream.begin_capture()
                step_all()
                graph = stream.end_capture()

            def call(graph=graph, stream=stream):
                graph.launch(stream)
                stream.synchronize()

            mode = "graph"
        except Exception as exc:  # noqa: BLE001 - a CuPy without capture: launch directly
            mode = f"launch ({type(exc).__name__}: {exc})"

    def reset():
        for k in ("x", "v", "t"):
            s[k][...] = start[k]
        steps[...] = 0
        live[...] = 0

    arm = Arm("cuda_loop", call, lambda: Result(np.stack([device.to_host(s[k]) for k
                                                          in ("x", "v", "t")])))
    arm.reset, arm.info = reset, dict(mode=mode, **resources)
    arm.steps = steps
    return arm


def card_cell(device: Device, n: int, config: str, args) -> dict:
    """The card's oscillator: eagle's graph (with and without compaction) against the
    hand-written loop kernel captured in a graph; every arm equal to every other bit for bit."""
    xp = device.xp
    host = dict(initial(n, config))
    arms, states = [], {}
    for name in ("eagle_graph", "graph_no_compaction"):
        if name == "graph_no_compaction" and not device.gpu:
            continue  # compaction is the GPU loop's
        s = {k: xp.asarray(v.copy()) for k, v in host.items()}
        start = {k: v.copy() for k, v in s.items()}
        runner = eagle.until_done(eagle.deploy(card_kernel, "gpu" if device.gpu else "cpu"),
                                  max_steps=MAX_STEPS, dt=DT, **s)
        if name == "graph_no_compaction":
            runner._loop.graph_loop().compact = False  # gpu_loop.py's A/B of compaction

        def reset(s=s, start=start, runner=runner):
            for k in ("x", "v", "t"):
                s[k][...] = start[k]
            runner.reset()

        arm = Arm(name, runner.run, lambda s=s: Result(np.stack([device.to_host(s[k]) for k
                                                                 in ("x", "v", "t")])))
        arm.reset, arm.runner = reset, runner
        arms.append(arm)
        states[name] = s
    arm = cuda_loop_arm(device, host)
    arms.append(arm)
    for round_ in range(args.rounds + 1):
        for a in arms:
            a.reset()
            a.once(device, timed=round_ > 0)
    results = {a.name: a.fetch() for a in arms}
    base = results["eagle_graph"].u
    sample_steps = int(device.to_host(arm.steps).sum())
    graph_s = arms[0].median_s
    rows, bad = [], []
    for a in arms:
        exact = bool(np.array_equal(results[a.name].u, base))
        if not exact:
            bad.append(f"card {config} n={n:,}: {a.name} differs from eagle_graph")
        row = dict(workload="card", config=config, n=n, arm=a.name, time_s=a.median_s,
                   times_s=a.samples, first_s=a.first_s, sample_steps=sample_steps,
                   sample_steps_per_s=sample_steps / a.median_s, exact=exact,
                   vs_eagle_time=a.median_s / graph_s, **a.info)
        if getattr(args, "fp64_rate", None):  # gpu_loop.py's measure of the card
            row["fp64_limit_fraction"] = sample_steps * FP64_OPS_PER_STEP / args.fp64_rate \
                / a.median_s
        rows.append(row)
    return dict(cell=f"card {config} n={n:,}", rows=rows, failures=bad)


# -- the table ----------------------------------------------------------------------------------


def markdown(result: dict) -> str:
    kind = "rehearsal on the host: no speed is measured" if result["rehearse"] \
        else "device run"
    lines = [f"# gpu_ode_peers: {result['device']}", "",
             f"{result['when']}, {result['rounds']} timed rounds per arm (median), {kind}.",
             "", "| workload | n | saveat | arm | time ms | vs eagle | accepted (mean) | "
             "steps = eagle | vs eagle (rtol) | vs reference (rtol) | notes |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for cell in result["cells"]:
        for r in cell["rows"]:
            if "skipped" in r:
                saveat = "yes" if r.get("saveat") else ""
                lines.append(f"| {r['workload']} | {r['n']:,} | {saveat} | {r['arm']} | | | | | "
                             f"| | skipped: {r['skipped']} |")
                continue
            note = []
            if "run_s" in r:
                note.append(f"run() {r['run_s'] * 1e3:.3f} ms")
            if "bytes_per_trajectory" in r:
                note.append(f"{r['bytes_per_trajectory']:.0f} B/trajectory")
            if "num_regs" in r:
                note.append(f"{r['num_regs']} regs, {r.get('local_size_bytes', '?')} B local")
            if r.get("bit_identical"):
                note.append("bit-identical")
            if "exact" in r:
                note.append("exact" if r["exact"] else "NOT EXACT")
            if "mode" in r:
                note.append(r["mode"])
            if "fp64_limit_fraction" in r:
                note.append(f"{r['fp64_limit_fraction']:.0%} of the FP64 issue limit")
            if "jax_platform" in r:
                note.append(f"JAX {r['jax_platform']}")
            size = r.get("config", "yes" if r.get("saveat") else "")
            lines.append(
                f"| {r['workload']} | {r['n']:,} | {size} | {r['arm']} | "
                f"{r['time_s'] * 1e3:.3f} | {_fmt(r.get('vs_eagle_time'), '.2f')} | "
                f"{_fmt(r.get('accepted_mean'), '.1f')} | {_fmt(r.get('steps_equal'), '.2%')} | "
                f"{_fmt(r.get('vs_eagle'), '.2g')} | "
                f"{_fmt(r.get('vs_reference'), '.2g')} | {'; '.join(note)} |")
    for cell in result.get("skipped_cells", []):
        lines.append(f"| {cell} | | | | | | | | | | skipped: the time budget was spent |")
    lines.append("")
    lines.append("Failures: " + ("; ".join(result["failures"]) if result["failures"] else "none"))
    return "\n".join(lines) + "\n"


def _fmt(value, spec: str) -> str:
    return "" if value is None else format(value, spec)


# -- the command line ---------------------------------------------------------------------------


def _sizes(text: str) -> int:
    return int(float(text))


def parse(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rehearse", action="store_true",
                        help="no GPU: eagle on the CPU, host-built peers, diffrax on JAX's CPU, "
                             "tiny sizes")
    out = Path(os.environ["OUT"]) if os.environ.get("OUT") else \
        Path(__file__).resolve().parent / "results"
    parser.add_argument("--out", type=Path, default=out)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--budget-s", type=float, default=170.0,
                        help="start no cell once this much time has passed (under "
                             "scripts/gpu-check, also none later than DEADLINE_MARGIN_S before "
                             "its step ends)")
    parser.add_argument("--workloads", nargs="+", default=["card", *WORKLOADS],
                        choices=["card", *WORKLOADS])
    parser.add_argument("--arms", nargs="+", default=["cuda", "cuda_fmad", "diffrax"],
                        choices=["cuda", "cuda_fmad", "diffrax"], help="besides eagle")
    parser.add_argument("--saveat", choices=["both", "off", "on"], default="both")
    parser.add_argument("--lorenz-n", type=_sizes, nargs="+", default=None)
    parser.add_argument("--kepler-n", type=_sizes, nargs="+", default=None)
    parser.add_argument("--robertson-n", type=_sizes, nargs="+", default=None)
    parser.add_argument("--fpu16-n", type=_sizes, nargs="+", default=None)
    parser.add_argument("--card-n", type=_sizes, default=None)
    parser.add_argument("--diffrax-n", type=_sizes, nargs="+", default=None,
                        help="the sizes diffrax runs at (each shape is a compile of tens of "
                             "seconds; default 1e5 and 1e6: Lorenz at both, the others at "
                             "their size)")
    parser.add_argument("--diffrax-saveat", action="store_true",
                        help="diffrax with saveat too (default: without, to save compiles)")
    parser.add_argument("--check-n", type=_sizes, default=1000,
                        help="trajectories checked against the tight reference")
    args = parser.parse_args(argv)
    # device defaults (about 3 minutes on an H200, the estimate in the issue's note) and the
    # rehearsal's (seconds on two CPU cores)
    small = args.rehearse
    defaults = dict(lorenz_n=[40] if small else [10_000, 100_000, 1_000_000, 10_000_000],
                    kepler_n=[24] if small else [1_000_000],
                    robertson_n=[16] if small else [100_000],
                    fpu16_n=[16] if small else [100_000],
                    card_n=300 if small else 1_000_000,
                    diffrax_n=[40, 24, 16] if small else [1_000_000, 100_000])
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if small:
        args.diffrax_saveat = True
        args.rounds = min(args.rounds, 1)
        args.check_n = min(args.check_n, 8)
    return args


def plan_of(args) -> list[tuple]:
    """The cells, in order: ``(workload, n, config)`` for the card, ``(workload, n, saveat)``
    for the others."""
    plan = []
    for name in args.workloads:
        if name == "card":
            plan += [("card", args.card_n, config) for config in ("spread-1000", "uniform")]
            continue
        for n in getattr(args, f"{name}_n"):
            for saveat in {"both": (False, True), "off": (False,), "on": (True,)}[args.saveat]:
                plan.append((name, n, saveat))
    return plan


def gpu_reason() -> str | None:
    from eagle.cuda import unavailable_reason

    reason = unavailable_reason()
    if reason:
        return f"no GPU: {reason}"
    try:
        import cupy  # noqa: F401
    except ImportError:
        return "no CuPy: the eagle and cuda arms hold their arrays in CuPy"
    return None


def main(argv=None) -> int:
    args = parse(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = args.out / "gpu_ode_peers.json", args.out / "gpu_ode_peers.md"
    reason = None if args.rehearse else gpu_reason()
    result = dict(rehearse=args.rehearse, rounds=args.rounds,
                  when=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
                  python=platform.python_version(), argv=sys.argv[1:] if argv is None else argv,
                  cells=[], failures=[], skipped_cells=[])
    if reason:
        print(f"gpu_ode_peers: {reason}; nothing measured (--rehearse runs it on the host)")
        result.update(device="none", skipped=reason)
        json_path.write_text(json.dumps(result, indent=2) + "\n")
        md_path.write_text(f"# gpu_ode_peers\n\nskipped: {reason}\n")
        return 0
    device = Device(gpu=not args.rehearse)
    if device.gpu:
        from eagle.cuda import device_info

        info = device_info(0)
        result["device"] = f"{info.name} ({info.arch})"
        try:
            from gpu_loop import fp64_issue_rate

            args.fp64_rate, result["fp64_issue_rate_from"] = fp64_issue_rate(info)
            result["fp64_issue_rate"] = args.fp64_rate
        except Exception as exc:  # noqa: BLE001 - the card's rows go without it
            result["fp64_issue_rate_from"] = f"unknown ({type(exc).__name__}: {exc})"
    else:
        result["device"] = f"host CPU ({platform.machine()}), rehearsal"
    plan = plan_of(args)
    start = time.perf_counter()
    budget = args.budget_s
    if os.environ.get("GPU_CHECK_STEP_ENDS"):
        budget = min(budget, float(os.environ["GPU_CHECK_STEP_ENDS"]) - time.time()
                     - DEADLINE_MARGIN_S)
    result["budget_s"] = budget
    for name, n, variant in plan:
        label = f"{name} n={n:,} {variant}"
        if time.perf_counter() - start > budget:
            result["skipped_cells"].append(label)
            continue
        t0 = time.perf_counter()
        try:
            if name == "card":
                cell = card_cell(device, n, variant, args)
            else:
                cell = ode_cell(device, WORKLOADS[name], n, variant, args)
        except Exception as exc:  # noqa: BLE001 - one broken cell must not lose the others
            traceback.print_exc()
            cell = dict(cell=label, rows=[], failures=[f"{label}: {type(exc).__name__}: {exc}"])
        cell["wall_s"] = time.perf_counter() - t0
        result["cells"].append(cell)
        result["failures"] += cell["failures"]
        print(f"gpu_ode_peers: {cell['cell']}: {cell['wall_s']:.1f} s; " + ", ".join(
            f"{r['arm']} {r['time_s'] * 1e3:.3f} ms" if "time_s" in r else
            f"{r['arm']} skipped" for r in cell["rows"]), flush=True)
        json_path.write_text(json.dumps(result, indent=2, default=float) + "\n")
        md_path.write_text(markdown(result))
    result["wall_s"] = time.perf_counter() - start
    if result["skipped_cells"]:
        result["skipped"] = f"{len(result['skipped_cells'])} cells past the time budget"
    # arms that could not run (diffrax not installed, JAX not on the GPU): said, not failed
    result["not_measured"] = sorted({f"{r['arm']}: {r['skipped']}" for c in result["cells"]
                                     for r in c["rows"] if "skipped" in r
                                     and r["arm"] != "cuda_fmad"})
    json_path.write_text(json.dumps(result, indent=2, default=float) + "\n")
    md_path.write_text(markdown(result))
    print(markdown(result))
    print(f"wrote {json_path} and {md_path}")
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
