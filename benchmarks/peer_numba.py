"""The hand-written Numba peers that ``cpu_loop.py`` measures eagle against.

They are what a skilled user would write by hand in Numba for "advance every sample until it is
done": not shaped like eagle's generated code, and each agrees bit for bit with the NumPy
reference executor (``hawk.reference``): no fastmath, no FMA contraction (Numba does not
contract unless asked), ``error_model="numpy"``, every expression in the kernel's own order.

A recurrence is described once (``Recurrence``: its state, per-sample inputs, shared values,
the step as Python lines and the stop condition) and the two peers are generated from it:

**The lane-blocked peer** (``make_lane_peer``). Samples are cut into blocks of ``block`` lanes,
dealt cyclically to the threads (``for b in range(tid, nblocks, nthreads)``, inside a
``prange`` over thread ids), so ragged workloads stay balanced. Per block:

* the block is copied into per-thread scratch once: its state, ``alive = not terminated``, and
  the per-sample values the step reads, with per-sample invariants (``dt * omega * omega``)
  computed there once instead of at every step or visit;
* a *visit* is one pass over the block's lanes that takes ``unroll`` steps per lane, written
  out, with the lane's state in registers. A finished lane is frozen by the alive mask written
  as ``x = new if alive else x`` and ``alive &= not stop`` (the stop flag read from the state
  after the select). LLVM turns the lane loop into AVX-512 code in which these selects are
  merge-masked adds and the flag a masked compare: 3 adds, 2 muls and 1 compare per oscillator
  step, nothing else. There is no per-lane step counter;
* the visit returns whether any lane of the block is still alive (an OR of the alive flags:
  the block's live count, down to the one bit its loop needs), and the block stops when none
  is. An int64 ``live += alive`` count costs more than it looks: in float32 its 64-bit
  accumulators made LLVM halve the vector width (8 lanes in ymm instead of 16 in zmm);
* the lane index is unsigned (``np.uint64``): with a signed index Numba's wraparound check keeps
  LLVM from vectorising the loop; a visit is its own small function, which LLVM vectorises
  reliably, and the block loop picks the call by a parity flag rather than swapping the
  buffers' array variables (each swap is reference-count traffic: 1.2x slower at 256 lanes);
* **exact steps without counters**: the visit reads one copy of the block's state and writes
  the other (ping-pong buffers), so the state at the start of the last visit is still there for
  free. When a visit ends with no lane alive, the block's last lane finished somewhere in those
  ``unroll`` steps; the peer redoes that one visit from its start one step at a time (in place)
  until no lane is alive, which gives the exact step, and, being the same operations on the
  same values, the same final state bit for bit. That costs at most ``unroll`` single-step
  passes per block per call; everything else is counter-free. Steps reported: the largest over
  blocks, i.e. the steps the slowest sample took (``max_steps`` if one is still alive).

**The per-sample peer** (``make_sample_peer``): one sample at a time, an inner ``while`` that
``break``s when the sample is done, samples dealt to threads in cyclic chunks of ``chunk``
(``prange`` over thread ids). Scalar and latency-bound, but it does no work for finished
samples: the peer that wins when a few samples run much longer than the rest. With
``counts=True`` it also writes each sample's steps (used once per workload to count the useful
sample-steps; the timed peer does not).

``python benchmarks/peer_numba.py [--n N] [--threads K]`` runs the lane-blocked peer of the
oscillator over a grid of unroll and block sizes (the search behind ``cpu_loop.py``'s
candidates).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np

__all__ = ["Recurrence", "make_lane_peer", "make_sample_peer", "load_source", "OSCILLATOR"]

# Generated sources are written here and imported, so that Numba's own cache (cache=True) keeps
# their machine code between runs (a parallel peer takes seconds to compile).
CACHE_DIR = Path(os.environ.get("PEER_CACHE_DIR",
                                Path(__file__).resolve().parent / "results" / "peer_cache"))


@dataclass(frozen=True)
class Recurrence:
    """One step of one sample, by hand, in the names the peers generate code around.

    ``state``: the per-sample state (arrays read and written); ``inputs``: per-sample read-only
    arrays; ``uniforms``: values shared by every sample (passed as scalars); ``invariants``:
    ``(name, expression)`` computed once per sample from inputs and uniforms; ``lane``: the
    per-sample values the step reads (inputs or invariants); ``update``: the step's lines,
    computing ``<state>_n``, the new value of each state variable, from the current ones;
    ``stop``: the sample is done when this holds of the state after the step; ``dtype``: the
    floating type of the state; ``dtypes``: ``(name, dtype)`` for state or lane values of
    another type (an integer random state: ``(("seed", "uint64"),)``). The lines may call
    ``math`` functions (``math.sin(x)``: the C library's, as ``hawk.reference`` and eagle's CPU
    code call) and ``np``: write an integer constant beside a uint64 as ``np.uint64(...)``, as
    Numba types a bare int as int64, and uint64 with int64 as float64."""

    name: str
    state: tuple[str, ...]
    update: tuple[str, ...]
    stop: str
    inputs: tuple[str, ...] = ()
    uniforms: tuple[str, ...] = ()
    invariants: tuple[tuple[str, str], ...] = ()
    lane: tuple[str, ...] = ()
    dtype: str = "float64"
    dtypes: tuple[tuple[str, str], ...] = ()

    def dtype_of(self, name: str) -> str:
        """The dtype of the state or lane value ``name``."""
        return dict(self.dtypes).get(name, self.dtype)

    def arguments(self) -> str:
        """The peers' arguments after ``max_steps`` and the block or chunk size."""
        return ", ".join([*(f"arr_{s}" for s in self.state), *(f"arr_{s}" for s in self.inputs),
                          *self.uniforms, "terminated"])


OSCILLATOR = Recurrence(
    name="oscillator", state=("x", "v", "t"), inputs=("omega", "t_end"), uniforms=("dt",),
    invariants=(("k", "dt * omega * omega"),), lane=("k", "t_end"),
    update=("x_n = x + dt * v", "v_n = v - k * x", "t_n = t + dt"), stop="t >= t_end")


def _indent(lines, depth: int) -> list[str]:
    return [" " * (4 * depth) + line for line in lines]


def _step_alive(r: Recurrence) -> list[str]:
    lines = list(r.update)
    lines += [f"{s} = {s}_n if a else {s}" for s in r.state]
    return lines + [f"a = a & (not ({r.stop}))"]


_JIT = '@njit(nogil=True, error_model="numpy", cache=True)'
_PARALLEL = '@njit(parallel=True, nogil=True, error_model="numpy", cache=True)'


def _visit(r: Recurrence, name: str, steps: int) -> list[str]:
    src = [f"p_{s}" for s in r.state] + ["p_alive"]
    dst = [f"q_{s}" for s in r.state] + ["q_alive"]
    scratch = [f"s_{v}" for v in r.lane]
    args = ", ".join(["m", *src, *scratch, *r.uniforms, *dst])
    body = [f"{s} = p_{s}[i]" for s in r.state] + [f"{v} = s_{v}[i]" for v in r.lane]
    body.append("a = p_alive[i]")
    for _ in range(steps):
        body += _step_alive(r)
    body += [f"q_{s}[i] = {s}" for s in r.state] + ["q_alive[i] = a", "live |= a"]
    return [_JIT, f"def {name}({args}):", "    live = False",
            "    for i in range(np.uint64(0), np.uint64(m)):", *_indent(body, 2),
            "    return live", "", ""]


def lane_peer_source(r: Recurrence, unroll: int) -> str:
    """The Python source of the lane-blocked peer of ``r`` (see the module docstring)."""
    buffers = {p: [f"{p}_{s}" for s in r.state] + [f"{p}_alive"] for p in "ab"}
    scratch = [f"s_{v}" for v in r.lane]

    def call(fn: str, src: str, dst: str) -> str:
        arguments = ["m", *buffers[src], *scratch, *r.uniforms, *buffers[dst]]
        return f"live = {fn}({', '.join(arguments)})"

    def by_parity(fn: str, same: bool) -> list[str]:
        return ["if parity == 0:", f"    {call(fn, 'a', 'a' if same else 'b')}",
                "else:", f"    {call(fn, 'b', 'b' if same else 'a')}"]

    alloc = [f"{p}_{s} = np.empty(block, np.{r.dtype_of(s)})" for p in "ab" for s in r.state]
    alloc += [f"{p}_alive = np.empty(block, np.bool_)" for p in "ab"]
    alloc += [f"s_{v} = np.empty(block, np.{r.dtype_of(v)})" for v in r.lane]
    copy_in = [f"a_{s}[j] = arr_{s}[i]" for s in r.state]
    copy_in += [f"{v} = arr_{v}[i]" for v in r.inputs]
    copy_in += [f"{name} = {expression}" for name, expression in r.invariants]
    copy_in += [f"s_{v}[j] = {v}" for v in r.lane]
    copy_in += ["a_alive[j] = not terminated[i]", "live |= a_alive[j]"]

    def copy_out(p: str) -> list[str]:
        return ["for j in range(m):", "    i = lo + j",
                *_indent([f"arr_{s}[i] = {p}_{s}[j]" for s in r.state], 1),
                f"    terminated[i] = not {p}_alive[j]"]

    block_loop = [
        "lo = b * block",
        "m = min(block, n - lo)",
        "live = False",
        "for j in range(m):",
        "    i = lo + j",
        *_indent(copy_in, 1),
        "done = 0",
        "parity = 0",
        "while live and done < max_steps:",
        f"    if max_steps - done >= {unroll}:",
        *_indent(by_parity(f"visit_{unroll}", same=False), 2),
        "        if live:",
        "            parity = 1 - parity",
        f"            done += {unroll}",
        "        else:",
        "            # the block's last lane finished in this visit: redo it from its start,",
        "            # still in the source buffers, one step at a time, to find the exact step",
        "            live = True",
        "            while live:",
        *_indent(by_parity("visit_1", same=True), 4),
        "                done += 1",
        "    else:",
        *_indent(by_parity("visit_1", same=True), 2),
        "        done += 1",
        "if parity == 0:",
        *_indent(copy_out("a"), 1),
        "else:",
        *_indent(copy_out("b"), 1),
        "most = max(most, done)",
    ]
    driver = [
        _PARALLEL,
        f"def peer(threads, max_steps, block, {r.arguments()}):",
        "    n = terminated.shape[0]",
        "    nblocks = (n + block - 1) // block",
        "    nthreads = max(1, min(threads, nblocks))",
        "    thread_steps = np.zeros(nthreads, np.int64)",
        "    for tid in prange(nthreads):",
        *_indent(alloc, 2),
        "        most = 0",
        "        for b in range(tid, nblocks, nthreads):",
        *_indent(block_loop, 3),
        "        thread_steps[tid] = most",
        "    return thread_steps.max()",
    ]
    visits = _visit(r, f"visit_{unroll}", unroll) + _visit(r, "visit_1", 1)
    return "\n".join(visits + driver) + "\n"


def sample_peer_source(r: Recurrence, counts: bool = False) -> str:
    """The Python source of the per-sample peer of ``r`` (see the module docstring)."""
    arguments = r.arguments() + (", counts" if counts else "")
    loads = [f"{s} = arr_{s}[i]" for s in r.state] + [f"{v} = arr_{v}[i]" for v in r.inputs]
    loads += [f"{name} = {expression}" for name, expression in r.invariants]
    step = [*r.update, *(f"{s} = {s}_n" for s in r.state), "steps += 1",
            f"if {r.stop}:", "    stop = True", "    break"]
    sample = [
        "if terminated[i]:",
        *(["    counts[i] = 0"] if counts else []),
        "    continue",
        *loads,
        "steps = 0",
        "stop = False",
        "while steps < max_steps:",
        *_indent(step, 1),
        *(f"arr_{s}[i] = {s}" for s in r.state),
        "terminated[i] = stop",
        *(["counts[i] = steps"] if counts else []),
        "most = max(most, steps)",
    ]
    lines = [
        _PARALLEL,
        f"def peer(threads, max_steps, chunk, {arguments}):",
        "    n = terminated.shape[0]",
        "    nchunks = (n + chunk - 1) // chunk",
        "    nthreads = max(1, min(threads, nchunks))",
        "    thread_steps = np.zeros(nthreads, np.int64)",
        "    for tid in prange(nthreads):",
        "        most = 0",
        "        for c in range(tid, nchunks, nthreads):",
        "            for i in range(c * chunk, min(c * chunk + chunk, n)):",
        *_indent(sample, 4),
        "        thread_steps[tid] = most",
        "    return thread_steps.max()",
    ]
    return "\n".join(lines) + "\n"


def load_source(source: str, label: str):
    """Import the Python ``source`` (Numba functions decorated with ``cache=True``) as a module
    written once to ``CACHE_DIR``; ``label`` names it."""
    # ``import math`` only where a line calls it, so that the other peers' sources (and the
    # cache keys of their compiled code) stay as they were.
    header = "import math\n" if "math." in source else ""
    header += "import numba\nimport numpy as np\nfrom numba import njit, prange\n\n\n"
    text = header + source
    key = hashlib.sha256(f"{text}{numba.__version__}{np.__version__}".encode()).hexdigest()
    name = f"{label}_{key[:16]}"
    path = CACHE_DIR / f"{name}.py"
    if not path.exists() or path.read_text() != text:
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(text)
        partial.replace(path)
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs: Numba names a function's module through sys.modules, and a
    # cached parallel function whose module it cannot import again fails to load.
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def make_lane_peer(r: Recurrence, unroll: int):
    """``peer(threads, max_steps, block, *state, *inputs, *uniforms, terminated) -> steps``:
    advances every live sample until it stops or ``max_steps``, in place, on ``threads`` threads
    (at most ``numba.get_num_threads()``: the ``prange`` runs one iteration per thread); returns
    the steps the slowest sample took."""
    return load_source(lane_peer_source(r, unroll), f"lane_{r.name}_u{unroll}").peer


def make_sample_peer(r: Recurrence, counts: bool = False):
    """``peer(threads, max_steps, chunk, *state, *inputs, *uniforms, terminated[, counts])
    -> steps``, as ``make_lane_peer``; with ``counts`` each sample's steps are written to
    ``counts``."""
    label = f"sample_{r.name}" + ("_counts" if counts else "")
    return load_source(sample_peer_source(r, counts), label).peer


def _oscillator_state(n: int):
    return (np.ones(n), np.zeros(n), np.zeros(n), np.linspace(1.0, 3.0, n), np.full(n, 1.0))


def main() -> None:
    parser = argparse.ArgumentParser(description="the lane-blocked peer's unroll x block grid")
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    numba.set_num_threads(args.threads)
    dt, useful = 1e-3, 1000 * args.n
    print(f"oscillator, n={args.n}, {args.threads} threads, G sample-steps/s "
          f"(median of {args.repeats})")
    for unroll in (4, 8, 16):
        peer = make_lane_peer(OSCILLATOR, unroll)
        for block in (256, 512, 1024, 2048, 4096, 8192):
            times = []
            for _ in range(args.repeats + 1):
                x, v, t, omega, t_end = _oscillator_state(args.n)
                terminated = np.zeros(args.n, np.bool_)
                start = time.perf_counter()
                steps = peer(args.threads, 10_000, block, x, v, t, omega, t_end, dt, terminated)
                times.append(time.perf_counter() - start)
            assert steps == 1000 and terminated.all()
            print(f"  U={unroll:<2} B={block:<5} {useful / np.median(times[1:]) / 1e9:6.2f}")


if __name__ == "__main__":
    main()
