"""The stiff methods' compile cost by state count, and what LLVM's vectorisers buy (issue 42).

    python benchmarks/stiff_compile.py [--states 4 8 16 32 64 128] [--method rodas5p]
                                       [--arms auto no-once both none none-nosched ...]
                                       [--members 64]
                                       [--timeout 900] [--json PATH]

For each state count (the Brusselator of ``benchmarks/stiff_models.py``, ``states / 2``
cells) and each arm (which of LLVM's vectorisers the steps' module gets: ``both``, ``slp``
only, ``loop`` only, ``none``), one fresh Python process on an empty cache folder runs
``eagle.ode.solve`` (``--method``, ``--members`` samples, diffusion 0.02 +- 20 %, t from 0 to
10, rtol = atol = 1e-6, one thread) twice, and reports:

- ``ops``: the hawk IR ops of the kernels compiled (``len(program.ops)``, summed);
- ``instr``: the instructions of their LLVM steps' modules (``native.instructions``), summed;
- ``first``: the first ``solve`` (hawk, LLVM, and the run);
- ``llvm``: the time inside ``native.compile_ir`` (parse, the pass pipeline, code generation);
- ``1st llvm``: the part of ``llvm`` spent on the first-step kernel (``dopri5_prepare``, run
  once per sample);
- ``hawk``: ``first - llvm - run`` (tracing, passes, emitting LLVM IR);
- ``object``: the object code's bytes;
- ``run``: the best of three later ``solve`` calls of the same ensemble (compiled code cached
  in the process), and ``per member`` that over ``--members``;
- ``cached``: the first ``solve`` of a second fresh process on the cache the first one filled
  (a cached start: hawk's tracing, the cache look-up and linking, and the run).

An arm ``X-nosched`` is ``X`` with LLVM's machine scheduler off in code generation; ``auto``
is what ``eagle.cpu.native.pipeline`` chooses by size; ``written`` and ``loops`` are ``auto``
with every solve written out op by op, or every solve as loops (``hawk.linalg``'s "Sizes",
whatever ``UNROLLED_SIDE`` says: what chose it); ``no-once`` is ``auto`` with the kernels whose
samples take one step each (``hawk.ir.Program.runs_once``: the first-step kernel) compiled as
every other kernel (-O2, the vectorisers by size) rather than through the -O1 passes without
vectorisers and -O0 code generation: the cost before that rule. The arm is forced by replacing
``native.pipeline`` in the child. Every arm of a state count must end on the same state bit
for bit (vectorising reorders nothing in IEEE arithmetic here: no fast-math flags), or the
script says so. A process past ``--timeout`` seconds is stopped and its row marked.
``uptime``'s load is printed with the table (the machine is shared: repeat and compare).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r'''
import hashlib, json, sys, time
sys.path.insert(0, sys.argv[5])
import numpy as np
import eagle.ode
import eagle.cpu.backend as backend
import eagle.cpu.native as native
import stiff_models

states, method, arm, members = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
ARMS = {"both": (True, True), "slp": (False, True), "loop": (True, False),
        "none": (False, False)}
if arm == "no-once":  # the first-step kernel compiled as every other (before runs_once)
    import hawk.ir
    hawk.ir.Program.runs_once = property(lambda program: False)
# written/loops: every solve so, whatever its size
if arm in ("auto", "loops", "written", "no-once"):
    chosen = native.pipeline
    import hawk.linalg
    hawk.linalg.UNROLLED_SIDE = {"loops": 0, "written": 128}.get(arm,
                                                                  hawk.linalg.UNROLLED_SIDE)
else:
    vectorise = ARMS[arm.removesuffix("-nosched")]
    chosen = lambda steps: (*vectorise, not arm.endswith("-nosched"))
native.pipeline = lambda steps: found.setdefault("pipeline", []).append(chosen(steps)) \
    or chosen(steps)
found = {"ops": 0, "instr": 0, "llvm": 0.0, "first_step_llvm": 0.0, "object": 0}
emit, compile_ir = backend.emit_modules, native.compile_ir

def counting_emit(program, shape):
    found["ops"] += len(program.ops)
    return emit(program, shape)

def timed_compile(steps, machinery, name, once=False):
    start = time.perf_counter()
    code = compile_ir(steps, machinery, name, once=once)
    found["llvm"] += time.perf_counter() - start
    if name == "dopri5_prepare":
        found["first_step_llvm"] += time.perf_counter() - start
    found["instr"] += native.instructions(steps)
    found["object"] += len(code)
    return code

backend.emit_modules, native.compile_ir = counting_emit, timed_compile
f = stiff_models.load(states // 2, sys.argv[6])
a = 0.02 * np.linspace(0.8, 1.2, members)
u0 = np.repeat(stiff_models.brusselator_start(states // 2)[:, None], members, axis=1)

def run():
    return eagle.ode.solve(f, u0, (0.0, 10.0), p=a, method=method, rtol=1e-6, atol=1e-6,
                           threads=1)

start = time.perf_counter()
sol = run()
first = time.perf_counter() - start
runs = []
for _ in range(3):
    start = time.perf_counter()
    again = run()
    runs.append(time.perf_counter() - start)
assert np.array_equal(again.u, sol.u)
found.update(first=first, run=min(runs), done=bool((sol.status == 1).all()),
             steps=int(sol.accepted.sum()),
             digest=hashlib.sha256(np.ascontiguousarray(sol.u).tobytes()).hexdigest()[:16])
print("RESULT", json.dumps(found))
'''


def measure(states: int, method: str, arm: str, members: int, timeout: float) -> dict:
    """One row: a fresh process on an empty cache, then (``cached``) a second fresh process
    on the cache the first filled."""
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as models:
        found = _child(states, method, arm, members, timeout, cache, models)
        if "first" in found:
            again = _child(states, method, arm, members, timeout, cache, models)
            found["cached"] = again.get("first")
    return found


def _child(states: int, method: str, arm: str, members: int, timeout: float, cache: str,
           models: str) -> dict:
    env = {**os.environ, "EAGLE_CACHE_DIR": cache,
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, str(states), method, arm,
                               str(members), str(ROOT / "benchmarks"), models],
                              env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"timeout": timeout}
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    return {"error": done.stderr.strip().splitlines()[-1:] or ["no output"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--states", type=int, nargs="+", default=[4, 8, 16, 32, 64, 128])
    parser.add_argument("--method", default="rodas5p")
    parser.add_argument("--arms", nargs="+", default=["auto", "both", "none", "none-nosched"])
    parser.add_argument("--members", type=int, default=64)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--json")
    args = parser.parse_args()
    rows = []
    print(f"{args.method}, {args.members} members, Brusselator; load: "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    print(f"{'states':>6} {'arm':>7} {'ops':>8} {'instr':>8} {'first s':>8} {'hawk s':>7} "
          f"{'llvm s':>7} {'1st llvm':>8} {'cached s':>8} {'object':>9} {'run ms':>8} "
          f"{'us/member':>9}  digest", flush=True)
    for states in args.states:
        digests = set()
        for arm in args.arms:
            load = os.getloadavg()[0]  # before the row, and after it below
            found = measure(states, args.method, arm, args.members, args.timeout)
            found.update(states=states, arm=arm, load=max(load, os.getloadavg()[0]))
            rows.append(found)
            if "first" not in found:
                print(f"{states:>6} {arm:>7}  {found}", flush=True)
                continue
            digests.add(found["digest"])
            hawk = found["first"] - found["llvm"] - found["run"]
            cached = found.get("cached")
            cached = f"{cached:>8.2f}" if cached is not None else f"{'-':>8}"
            print(f"{states:>6} {arm:>7} {found['ops']:>8} {found['instr']:>8} "
                  f"{found['first']:>8.2f} {hawk:>7.2f} {found['llvm']:>7.2f} "
                  f"{found['first_step_llvm']:>8.2f} {cached} "
                  f"{found['object']:>9} {found['run'] * 1e3:>8.2f} "
                  f"{found['run'] / args.members * 1e6:>9.1f}  {found['digest']} "
                  f"(load {found['load']:.2f})", flush=True)
        if len(digests) > 1:
            print(f"  states {states}: the arms ended on different states: {digests}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
