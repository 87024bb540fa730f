"""The CPU compiler's cost by kernel size: first run() in a fresh process, cold and warm cache.

    python benchmarks/compile_scaling.py [--rev feb45f5 | --now-only] [--k 4 16 64 128 256 512]
                                         [--kernels chain oscillator ode] [--repeats 1]
                                         [--warm-repeats 3] [--json PATH]
    python benchmarks/compile_scaling.py --now-only --widths 3 6 12 24 48 64

Kernels (defined here, in the kernel language both commits accept):

- ``chain K``: ``for i in range(K): s = s * 0.999 + math.sin(q) * a; q = q * 0.5 + s * 0.25``
  (unrolled by hawk: about 7 ops per iteration), every sample stopping after 10 steps;
- ``oscillator``: the README's kernel, every sample stopping after 1,000 steps;
- ``ode``: the first ``eagle.ode.solve`` of a Lorenz ensemble (64 samples, t from 0 to 1,
  dopri5): it compiles two kernels, DP5's first-step kernel and its step kernel (its ops
  are the two programs' together).

``--widths K ...`` (issue 28: the compile cost of wide kernels) measures, at each state width
K (a ``hawk.Vector[K]``; the kernels are written out for K into a file, as a user would):

- ``ode_width K``: the first ``eagle.ode.solve`` of a linear chain of K species, ``u0' = -p
  u0``, ``ui' = p (u{i-1} - ui)``, one rate ``p`` per sample (an array ``(n,)``), 64 samples
  from t = 0 to 1, dopri5 (both kernels, as ``ode``);
- ``vector_width K``: a plain kernel with a ``Mutable[Vector[K]]`` and a ``Vector[K]`` input,
  five elementwise ops per component and a dot product, every sample stopping after 10 steps.

(``--kernels ode_width vector_width`` picks them too; ``--widths`` alone picks both.)

Each measurement is a fresh Python process: ``cold`` on an empty cache folder (a new
``EAGLE_CACHE_DIR``), then ``warm``: ``--warm-repeats`` (3) more processes, one after another,
on the folder the cold one filled. Two times are taken of each: ``in``, from
``time.perf_counter()`` on the child's first line (before ``import eagle``) to the end of the
first ``run()`` (or ``solve``), and ``wall``, the whole subprocess as the parent sees it
(interpreter start and exit included). The wall time of ``python -c "import numpy"`` is printed
as the baseline of a cached start ("warm-numpy": warm wall minus it).

Arms: eagle at ``--rev`` ("then", checked out in a temporary git worktree, its ``src`` first on
``PYTHONPATH``) against the working tree ("now"); ``--now-only`` skips the then arm. Each arm
imports eagle once, untimed, before anything is measured (so neither pays for writing
``.pyc`` files); then, kernel by kernel, ``--repeats`` rounds run each arm's cold and warm
processes in turn (interleaved). Reported: the median of each time, the ops of each kernel's
hawk IR program (``len(program.ops)``) and those computed every step (not hoisted as
invariants by ``eagle.codegen.invariant_ops``; loads count as per-step), and then/now ratios
of the wall times. Every process of every arm must end with the same state, bit for bit (a
SHA-256 of its arrays is compared), or the script exits non-zero. A warm process that added
files to the cache folder compiled again (a cache miss): the script notes it under the table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r'''
import time
START = time.perf_counter()
import hashlib, json, math, sys
import numpy as np
import eagle, hawk
from hawk import Mutable, Param, Scalar, Terminated

WORKLOAD, K, COUNT_OPS = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "ops"
N = 1024


def chain_kernel():
    @hawk.kernel
    def chain(a: Scalar, t_end: Param, terminated: Terminated, s: Mutable[Scalar],
              q: Mutable[Scalar], t: Mutable[Scalar]):
        for i in range(K):
            s = s * 0.999 + math.sin(q) * a
            q = q * 0.5 + s * 0.25
        t += 1.0
        terminated = t >= t_end

    return chain


def oscillator_kernel():
    @hawk.kernel
    def oscillator(omega: Scalar, t_end: Param, dt: Param, terminated: Terminated,
                   x: Mutable[Scalar], v: Mutable[Scalar], t: Mutable[Scalar]):
        x0, v0 = x, v
        x = x0 + dt * v0
        v = v0 - dt * omega * omega * x0
        t += dt
        terminated = t >= t_end

    return oscillator


def run_kernel():
    """The first run of the chain or the oscillator: (its arrays, the programs that ran)."""
    if WORKLOAD == "chain":
        kernel, max_steps = chain_kernel(), 100
        arrays = dict(a=np.linspace(0.1, 1.0, N), s=np.zeros(N), q=np.linspace(0.0, 1.0, N),
                      t=np.zeros(N))
        values = dict(t_end=10.0)
    else:
        kernel, max_steps = oscillator_kernel(), 10_000
        arrays = dict(x=np.ones(N), v=np.zeros(N), t=np.zeros(N),
                      omega=np.linspace(1.0, 3.0, N))
        values = dict(t_end=1.0, dt=1e-3)
    terminated = np.zeros(N, bool)
    runner = eagle.until_done(eagle.deploy(kernel, "cpu"), max_steps=max_steps, **arrays,
                              **values, terminated=terminated)
    runner.run()
    done = time.perf_counter()
    arrays["terminated"] = terminated
    return done, arrays, lambda: [runner.plan.kernel.specialize(runner.bound.dtypes)]


def solve_ode():
    """The first ``eagle.ode.solve`` of a Lorenz ensemble: (its arrays, the programs)."""
    @hawk.func
    def lorenz(u, t, p):
        return hawk.vec3(p.x * (u.y - u.x), u.x * (p.y - u.z) - u.y, u.x * u.y - p.z * u.z)

    rng = np.random.default_rng(7)
    n = 64
    p = np.stack([rng.uniform(9, 11, n), rng.uniform(20, 30, n), rng.uniform(2.5, 3, n)])
    u0 = 1.0 + 0.1 * rng.normal(size=(3, n))
    sol = eagle.ode.solve(lorenz, u0, (0.0, 1.0), p=p)
    done = time.perf_counter()
    arrays = dict(u=sol.u, t=sol.t, status=sol.status, accepted=sol.accepted,
                  rejected=sol.rejected)

    def programs():
        start = hawk.ode.dopri5_start_kernel(lorenz, hawk.Vec3, hawk.Vec3)  # functools.cache
        return [start.program, sol.runner.plan.kernel.specialize(sol.runner.bound.dtypes)]

    return done, arrays, programs


def width_module(source: str, name: str):
    """Import ``source`` from a file named for it next to the cache folder (hawk reads a
    kernel's source; the same path in every process of a measurement, so a warm process finds
    the cold one's kernels), and return its ``name``."""
    import importlib.util
    import os

    path = os.path.join(os.path.dirname(os.environ["EAGLE_CACHE_DIR"]), f"{name}_{K}.py")
    if not os.path.exists(path):
        with open(path, "w") as out:
            out.write(source)
    spec = importlib.util.spec_from_file_location(f"{name}_{K}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def solve_ode_width():
    """The first ``eagle.ode.solve`` of a chain of K species: (its arrays, the programs)."""
    terms = ", ".join(["-p * u[0]"] + [f"p * (u[{i - 1}] - u[{i}])" for i in range(1, K)])
    chain = width_module(f"import hawk\n\n@hawk.func\ndef chain(u, t, p):\n"
                         f"    return hawk.vector({terms})\n", "chain")
    n = 64
    p = np.linspace(0.5, 2.0, n)
    u0 = np.vstack([np.ones(n), np.zeros((K - 1, n))])
    sol = eagle.ode.solve(chain, u0, (0.0, 1.0), p=p)
    done = time.perf_counter()
    arrays = dict(u=sol.u, t=sol.t, status=sol.status, accepted=sol.accepted,
                  rejected=sol.rejected)

    def programs():
        start = hawk.ode.dopri5_start_kernel(chain, hawk.Vector[K], hawk.Scalar)
        return [start.program, sol.runner.plan.kernel.specialize(sol.runner.bound.dtypes)]

    return done, arrays, programs


def run_vector_width():
    """The first run of a kernel on a Mutable[Vector[K]]: (its arrays, the programs)."""
    kernel = width_module(f"""import hawk
from hawk import Mutable, Param, Scalar, Terminated

@hawk.kernel
def wide(a: hawk.Vector[{K}], s: Param, t_end: Param, terminated: Terminated,
         v: Mutable[hawk.Vector[{K}]], t: Mutable[Scalar], norm: Mutable[Scalar]):
    w = v * s + a
    v = w - 0.01 * w * w * a
    norm = hawk.dot(v, v)
    t += 1.0
    terminated = t >= t_end
""", "wide")
    arrays = dict(a=np.linspace(0.0, 1.0, K * N).reshape(K, N), v=np.ones((K, N)),
                  t=np.zeros(N), norm=np.zeros(N))
    terminated = np.zeros(N, bool)
    runner = eagle.until_done(eagle.deploy(kernel, "cpu"), max_steps=100, s=0.9, t_end=10.0,
                              terminated=terminated, **arrays)
    runner.run()
    done = time.perf_counter()
    arrays["terminated"] = terminated
    return done, arrays, lambda: [runner.plan.kernel.specialize(runner.bound.dtypes)]


WORKLOADS = dict(ode=lambda: solve_ode(), ode_width=solve_ode_width,
                 vector_width=run_vector_width)


def op_counts(programs):
    """``[all ops, ops per step]`` summed over the programs (per step: None where this
    commit has no ``eagle.codegen.invariant_ops``)."""
    total = sum(len(p.ops) for p in programs)
    try:
        from eagle.codegen import invariant_ops
    except ImportError:
        return [total, None]
    return [total, total - sum(len(invariant_ops(p)) for p in programs)]


imported = time.perf_counter()
done, arrays, programs = WORKLOADS.get(WORKLOAD, run_kernel)()
state = hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in arrays.values()))
print(json.dumps(dict(import_s=imported - START, first_s=done - START, eagle=eagle.__file__,
                      ops=op_counts(programs()) if COUNT_OPS else None,
                      state=state.hexdigest())))
'''


def kernel_cases(args) -> list[tuple[str, str, int]]:
    """(label, workload, K) of every kernel asked for, in order."""
    cases = []
    for workload in args.kernels:
        if workload == "chain":
            cases += [(f"chain K={k}", "chain", k) for k in args.k]
        elif workload.endswith("_width"):
            cases += [(f"{workload.removesuffix('_width')} K={k}", workload, k)
                      for k in args.widths]
        else:
            cases.append((workload, workload, 0))
    return cases


def timed_process(command: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Run ``command``; (its wall time, its stdout). Exits on failure, with its stderr."""
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed (exit {done.returncode}):\n{done.stderr}")
    return wall, done.stdout


def child_environment(**values: str) -> dict[str, str]:
    """This process's environment with ``values``, bytecode writing allowed: an installed
    package has its ``.pyc`` files, and a child that compiled every module from source at each
    start (``PYTHONDONTWRITEBYTECODE`` set, as on the development machine) would measure
    Python's compiler, not a start."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, **values}


def numpy_baseline(repeats: int = 5) -> float:
    """The median wall time of ``python -c "import numpy"``."""
    return statistics.median(timed_process([sys.executable, "-c", "import numpy"],
                                           child_environment())[0] for _ in range(repeats))


def measure(child: Path, src: Path, cache: Path, workload: str, k: int, count_ops: bool):
    """One child process on ``src`` with ``cache`` as its cache folder: its result (a dict)
    with ``wall_s`` added. Exits if it imported eagle from anywhere but ``src``."""
    env = child_environment(PYTHONPATH=str(src), EAGLE_CACHE_DIR=str(cache))
    wall, stdout = timed_process(
        [sys.executable, str(child), workload, str(k), "ops" if count_ops else "-"], env)
    result = json.loads(stdout.splitlines()[-1])
    if not Path(result["eagle"]).resolve().is_relative_to(src.resolve()):
        sys.exit(f"the child imported eagle from {result['eagle']}, not from {src}")
    return dict(result, wall_s=wall)


def warm_up(src: Path, scratch: Path) -> None:
    """Import eagle, its ODE solver and its CPU backend once, so that no measured process
    writes ``.pyc`` files."""
    env = child_environment(PYTHONPATH=str(src), EAGLE_CACHE_DIR=str(scratch / "warm-up"))
    timed_process([sys.executable, "-c", "import eagle, eagle.ode, eagle.cpu, hawk, hawk.ode"],
                  env)


def run_case(arms: dict[str, Path], child: Path, scratch: Path, label: str, workload: str,
             k: int, repeats: int, warm_repeats: int) -> dict:
    """``repeats`` rounds of a cold process and ``warm_repeats`` warm ones per arm, the arms
    interleaved: every sample, the ops per arm and the one final state they all agree on."""
    samples = {arm: {"cold": [], "warm": []} for arm in arms}
    files = {arm: {"cold": [], "warm": []} for arm in arms}  # in the cache folder, after
    ops, states = {}, set()
    for round_ in range(repeats):
        for arm, src in arms.items():
            print(f"{label}: {arm}, round {round_ + 1} of {repeats}", file=sys.stderr, flush=True)
            cache = scratch / f"cache-{arm}-{workload}-{k}-{round_}"
            for kind in ("cold", *["warm"] * warm_repeats):
                result = measure(child, src, cache, workload, k, count_ops=kind == "cold")
                samples[arm][kind].append({key: result[key]
                                           for key in ("import_s", "first_s", "wall_s")})
                files[arm][kind].append(count_files(cache))
                states.add(result["state"])
                ops[arm] = result["ops"] or ops.get(arm)
    if len(states) != 1:
        sys.exit(f"{label}: the processes disagree on the final state: {sorted(states)}")
    return dict(kernel=label, workload=workload, k=k, ops=ops, samples=samples,
                cache_files=files, state=states.pop())


def count_files(folder: Path) -> int:
    """The files under ``folder``: a warm process that adds some compiled again."""
    return sum(len(names) for _, _, names in os.walk(folder))


def median(samples: list[dict], key: str) -> float:
    return statistics.median(s[key] for s in samples)


def print_table(cases: list[dict], baseline: float, rev: str) -> None:
    arms = list(cases[0]["samples"])
    first = cases[0]["samples"][arms[0]]
    print(f"median of {len(first['cold'])} cold and {len(first['warm'])} warm process(es); "
          f"'in' from the child's first line, 'wall' the whole process; "
          f'python -c "import numpy": {baseline:.3f} s wall')
    header = (f"{'kernel':<14} {'ops':>11} {'per step':>10} {'arm':<8} {'cold in':>8} "
              f"{'cold wall':>9} {'warm in':>8} {'warm wall':>9} {'warm-numpy':>10}")
    if len(arms) == 2:
        header += f" {'then/now cold':>13} {'then/now warm':>13}"
    print(header)
    for case in cases:
        for arm in arms:
            cold, warm = case["samples"][arm]["cold"], case["samples"][arm]["warm"]
            total, per_step = case["ops"][arm]
            name = rev if arm == "then" else "now"
            line = (f"{case['kernel'] if arm == arms[0] else '':<14} {total:>11,} "
                    f"{per_step if per_step is not None else '?':>10} {name:<8} "
                    f"{median(cold, 'first_s'):>8.2f} {median(cold, 'wall_s'):>9.2f} "
                    f"{median(warm, 'first_s'):>8.3f} {median(warm, 'wall_s'):>9.3f} "
                    f"{median(warm, 'wall_s') - baseline:>10.3f}")
            if len(arms) == 2 and arm == "now":
                then = case["samples"]["then"]
                line += (f" {median(then['cold'], 'wall_s') / median(cold, 'wall_s'):>12.2f}x"
                         f" {median(then['warm'], 'wall_s') / median(warm, 'wall_s'):>12.2f}x")
            print(line)
    for case in cases:
        for arm in arms:
            files = case["cache_files"][arm]
            if files["warm"][-1] != files["cold"][-1]:
                print(f"note: {case['kernel']}, {arm}: the warm processes compiled again (cache "
                      f"files after cold {files['cold']}, after each warm {files['warm']})")
    same = "every arm and process" if len(arms) == 2 else "every process"
    print(f"same final state, bit for bit, in {same} of each kernel (SHA-256 of its arrays)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default="feb45f5", help="the earlier commit (the then arm)")
    parser.add_argument("--now-only", action="store_true", help="skip the then arm")
    parser.add_argument("--kernels", nargs="+",
                        choices=["chain", "oscillator", "ode", "ode_width", "vector_width"],
                        default=None, help="default: chain oscillator ode; with --widths, "
                        "ode_width vector_width")
    parser.add_argument("--k", type=int, nargs="+", default=[4, 16, 64, 128, 256, 512],
                        help="the chain kernel's loop lengths")
    parser.add_argument("--repeats", type=int, default=1,
                        help="cold processes per arm and kernel (each on a new cache folder)")
    parser.add_argument("--warm-repeats", type=int, default=3,
                        help="warm processes after each cold one, on its cache folder")
    parser.add_argument("--json", type=Path, help="write every sample here")
    parser.add_argument("--widths", type=int, nargs="+", default=None,
                        help="the state widths K of ode_width and vector_width (2..64)")
    args = parser.parse_args()
    if args.kernels is None:
        args.kernels = ["ode_width", "vector_width"] if args.widths else \
            ["chain", "oscillator", "ode"]
    if args.widths is None:
        args.widths = [3, 6, 12, 24, 48, 64]
    if not all(2 <= k <= 64 for k in args.widths):
        parser.error(f"--widths: every width must be in 2..64, got {args.widths}")
    if args.repeats < 1 or args.warm_repeats < 1:
        parser.error("--repeats and --warm-repeats must be at least 1")
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        arms = {"now": ROOT / "src"}
        if not args.now_only:
            then = scratch / "then"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q",
                            str(then), args.rev], check=True)
            arms = {"then": then / "src", **arms}
        try:
            child = scratch / "child.py"  # a file: hawk reads a kernel's source
            child.write_text(CHILD)
            for src in arms.values():
                warm_up(src, scratch)
            baseline = numpy_baseline()
            cases = [run_case(arms, child, scratch, label, workload, k, args.repeats,
                              args.warm_repeats)
                     for label, workload, k in kernel_cases(args)]
        finally:
            if not args.now_only:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                str(then)], check=False)
    print_table(cases, baseline, args.rev)
    if args.json:
        args.json.write_text(json.dumps(dict(
            rev=None if args.now_only else args.rev, repeats=args.repeats,
            warm_repeats=args.warm_repeats,
            numpy_import_wall_s=baseline, load_average=os.getloadavg(), cases=cases), indent=1))


if __name__ == "__main__":
    main()
