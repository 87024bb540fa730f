"""Which pays for a sparse stiff model (issue 42): ``linsolve="lu"`` (partial pivoting; above
``hawk.linalg.UNROLLED_SIDE`` states as loops that skip a zero coefficient at run time) or
``linsolve="sparse"`` (``hawk.sparse_lu``: the structural nonzeros and their fill only, in a
Markowitz order fixed at compile time, written out, no pivoting).

    python benchmarks/stiff_sparse.py [--models poll bruss32 bruss64] [--method rodas5p]
                                      [--members 128] [--rounds 5] [--tol 1e-6]
                                      [--no-compile] [--numba] [--json PATH]

Three tables, each with the load (``os.getloadavg``) it was taken at (the machine is shared):

1. **Fill**: per model, the nonzeros of ``W`` (the Jacobian's pattern plus the diagonal, read
   from the model's NumPy Jacobian at a random positive state), of ``L + U`` and the
   factorisation's multiply-subtracts in the natural order and in the Markowitz order (dense:
   ``n**2`` and ``(n - 1) n (2 n - 1) / 6``), and the hawk IR ops of the ``--method`` step
   kernel (``dopri5_kernel(...).specialize({})``) for each ``linsolve``. The ``"lu"`` kernel's
   LU above 8 states is a few whole-matrix ops rendered as loops, so its op count says nothing
   of its run time.
2. **Compile**: the first ``eagle.ode.solve`` (one member, the model's whole time span) in a
   fresh Python process on an empty cache folder, per model and ``linsolve``: hawk, LLVM and
   that short run.
3. **Run**: one process; each arm is called once (compiles), then ``--rounds`` rounds call the
   arms in turn (interleaved) and the median is kept: ``eagle.ode.solve`` of ``--members``
   members on one thread, the whole call timed, for ``"lu"`` and ``"sparse"`` (and with
   ``--numba`` the hand-written Numba Rodas5P of ``stiff_numba``: a dense LU with partial
   pivoting per step). Accuracy: the first 2 members' end states against SciPy's Radau at
   rtol = atol = 1e-12, in tolerance units ``|u - u_ref| / (tol + tol |u_ref|)``, and the
   largest relative difference between the two linsolves' end states.

The models are ``stiff_size_peers``' (POLL: 20 species, t to 60, ``k_1`` times ``U(0.8, 1.2)``
per member; the Brusselator at 32 and 64 states, t to 10, the diffusion per member) and
``gri53``, ``stiff_gri30``'s isothermal GRI-Mech 3.0 (53 species, t to 2 ms, its chain
branching scaled by ``U(0.8, 1.2)`` per member; no Numba peer). ``--models`` picks; the
default is all four.
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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ode_peers  # noqa: E402
import stiff_gri30  # noqa: E402
import stiff_size_peers  # noqa: E402

import eagle.ode  # noqa: E402
import hawk  # noqa: E402
from hawk.sparse_lu import SparsePlan  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MODELS = {"poll": stiff_size_peers.poll, "bruss32": lambda: stiff_size_peers.brusselator(32),
          "bruss64": lambda: stiff_size_peers.brusselator(64), "gri53": stiff_gri30.model}
LINSOLVES = ("lu", "sparse")

CHILD = r'''
import json, sys, tempfile, time
sys.path.insert(0, sys.argv[1])
import numpy as np
import stiff_sparse
import eagle.ode

model = stiff_sparse.MODELS[sys.argv[2]]()
ens = model.ensemble(1, 0)
f = model.load(tempfile.mkdtemp())
start = time.perf_counter()
sol = eagle.ode.solve(f, ens.u0, (0.0, model.t1), p=ens.p[0], method=sys.argv[3],
                      rtol=1e-6, atol=1e-6, threads=1, linsolve=sys.argv[4])
first = time.perf_counter() - start
start = time.perf_counter()
eagle.ode.solve(f, ens.u0, (0.0, model.t1), p=ens.p[0], method=sys.argv[3], rtol=1e-6,
                atol=1e-6, threads=1, linsolve=sys.argv[4])
print("RESULT", json.dumps(dict(first=first, again=time.perf_counter() - start,
                                done=bool((sol.status == 1).all()))))
'''


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def pattern_of(model) -> set[tuple[int, int]]:
    """``W``'s nonzeros: the model's Jacobian at a random positive state, plus the diagonal."""
    y = np.random.default_rng(1).uniform(0.1, 1.0, model.states)
    ens = model.ensemble(1, 0)
    jac = np.asarray(model.jacobian(0.0, y, float(ens.p[0, 0])))
    return {(int(i), int(j)) for i, j in zip(*np.nonzero(jac), strict=True)} | {
        (k, k) for k in range(model.states)}


def fill_row(name: str, model, method: str) -> dict:
    """Table 1's row for one model."""
    n, pattern = model.states, pattern_of(model)
    natural, markowitz = SparsePlan.of(pattern, n, tuple(range(n))), SparsePlan.of(pattern, n)
    row = dict(model=name, states=n, nnz_w=len(pattern), dense_nnz=n * n,
               dense_madds=(n - 1) * n * (2 * n - 1) // 6,
               natural_nnz=len(natural.filled), natural_madds=natural.multiply_adds,
               markowitz_nnz=len(markowitz.filled), markowitz_madds=markowitz.multiply_adds)
    f = model.load(tempfile.mkdtemp())
    for linsolve in LINSOLVES:
        kernel = hawk.ode.dopri5_kernel(f, hawk.Vector[n], hawk.Scalar, method=method,
                                        linsolve=linsolve)
        row[f"ops_{linsolve}"] = len(kernel.specialize({}).ops)
    return row


def compile_row(name: str, method: str, linsolve: str, timeout: float) -> dict:
    """Table 2's cell: a fresh process on an empty cache folder."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "EAGLE_CACHE_DIR": cache,
               "PYTHONPATH": os.pathsep.join([str(ROOT / "src"),
                                              os.environ.get("PYTHONPATH", "")])}
        load = _load()
        try:
            done = subprocess.run([sys.executable, "-c", CHILD, str(ROOT / "benchmarks"), name,
                                   method, linsolve], env=env, capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            return dict(timeout=timeout, load=load)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return dict(json.loads(line[len("RESULT "):]), load=max(load, _load()))
    return dict(error=(done.stderr.strip().splitlines() or ["no output"])[-1])


def run_block(name: str, model, args) -> dict:
    """Table 3's rows for one model (interleaved arms, one process)."""
    ens = model.ensemble(args.members, args.seed)
    f = model.load(tempfile.mkdtemp())
    tol = args.tol

    def call(arm: str) -> np.ndarray:
        if arm == "numba_rodas5p":
            return ode_peers.solve_numba(ens, model.t1, tol, tol,
                                         integrator=model.peers["rodas5p"]).u
        sol = eagle.ode.solve(f, ens.u0, (0.0, model.t1), p=ens.p[0], method=args.method,
                              rtol=tol, atol=tol, threads=1, linsolve=arm)
        assert (sol.status == 1).all(), f"{arm}: not every member done"
        return np.asarray(sol.u)

    arms = list(LINSOLVES) + (["numba_rodas5p"] if args.numba and "rodas5p" in model.peers
                              and args.method == "rodas5p" else [])
    load_start = _load()
    ends, first, times = {}, {}, {arm: [] for arm in arms}
    for arm in arms:
        start = time.perf_counter()
        ends[arm] = call(arm)
        first[arm] = time.perf_counter() - start
    for _ in range(args.rounds):
        for arm in arms:
            start = time.perf_counter()
            call(arm)
            times[arm].append(time.perf_counter() - start)
    load_end = _load()
    ref = stiff_size_peers.reference(model, ens, 2)
    out = dict(model=name, members=args.members, tol=tol, load=[load_start, load_end],
               rounds=args.rounds, arms={})
    for arm in arms:
        err = np.abs(ends[arm][:, :2] - ref) / (tol + tol * np.abs(ref))
        median = statistics.median(times[arm])
        out["arms"][arm] = dict(first_s=first[arm], median_s=median, times_s=times[arm],
                                us_per_member=1e6 * median / args.members,
                                err_units=float(err.max()))
    scale = np.maximum(np.abs(ends["lu"]), 1e-300)
    out["sparse_vs_lu_rel"] = float(np.max(np.abs(ends["sparse"] - ends["lu"]) / scale))
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--method", default="rodas5p", choices=sorted(eagle.ode.IMPLICIT))
    parser.add_argument("--members", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tol", type=float, default=1e-6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--no-run", action="store_true")
    parser.add_argument("--numba", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    results: dict = dict(method=args.method, fill=[], compile=[], run=[])
    print(f"1. fill ({args.method}; load {_load()})")
    print(f"{'model':>8} {'n':>4} {'nnz W':>6} {'LU dense':>9} {'LU natural':>11} "
          f"{'LU Markowitz':>13} {'madds dense':>12} {'natural':>8} {'Markowitz':>10} "
          f"{'IR ops lu':>10} {'IR ops sparse':>14}", flush=True)
    for name in args.models:
        r = fill_row(name, MODELS[name](), args.method)
        results["fill"].append(r)
        print(f"{name:>8} {r['states']:>4} {r['nnz_w']:>6} {r['dense_nnz']:>9} "
              f"{r['natural_nnz']:>11} {r['markowitz_nnz']:>13} {r['dense_madds']:>12} "
              f"{r['natural_madds']:>8} {r['markowitz_madds']:>10} {r['ops_lu']:>10} "
              f"{r['ops_sparse']:>14}", flush=True)
    if not args.no_compile:
        print("\n2. first solve, fresh process, empty cache (one member, one thread)")
        print(f"{'model':>8} {'linsolve':>8} {'first s':>8} {'again s':>8}  load", flush=True)
        for name in args.models:
            for linsolve in LINSOLVES:
                r = dict(compile_row(name, args.method, linsolve, args.timeout), model=name,
                         linsolve=linsolve)
                results["compile"].append(r)
                if "first" in r:
                    print(f"{name:>8} {linsolve:>8} {r['first']:>8.2f} {r['again']:>8.3f}  "
                          f"{r['load']}", flush=True)
                else:
                    print(f"{name:>8} {linsolve:>8}  {r}", flush=True)
    if not args.no_run:
        print(f"\n3. run, {args.members} members, tol {args.tol:g}, one thread, median of "
              f"{args.rounds} interleaved rounds")
        print(f"{'model':>8} {'arm':>14} {'median s':>9} {'us/member':>10} {'err units':>10} "
              f"{'first s':>8}  load", flush=True)
        for name in args.models:
            r = run_block(name, MODELS[name](), args)
            results["run"].append(r)
            for arm, a in r["arms"].items():
                print(f"{name:>8} {arm:>14} {a['median_s']:>9.3f} {a['us_per_member']:>10.1f} "
                      f"{a['err_units']:>10.3f} {a['first_s']:>8.2f}  {r['load']}", flush=True)
            print(f"{name:>8} sparse vs lu: largest relative difference of the end states "
                  f"{r['sparse_vs_lu_rel']:.2e}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
