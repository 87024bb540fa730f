"""Run eagle's generated CUDA C++ on the host, to check what it computes without a GPU.

The emitted source is compiled by the host C++ compiler behind a small prelude that gives the
CUDA built-ins their one-thread meaning (blocks of one thread: ``__syncthreads_count(p)`` is
``p``, a warp shuffle returns the thread's own value, ``__ballot_sync(mask, p)`` is lane 0's bit,
atomics are plain read-modify-writes). ``HostKernel.run`` then plays the device loop a WHILE
graph plays: step kernel over the grid of ``n`` threads, decide kernel, again until the decide
kernel sets ``nsteps`` to 0, with the two lists of sample indices the step kernel compacts the
live samples into, as ``GraphLoop`` allocates them. The blocks run in thread order, so the
lists keep the samples in index order (on a GPU the blocks' order in the lists varies). IEEE
arithmetic on x86-64 (SSE2, no contraction) is what the GPU computes with ``--fmad=false``, so
for kernels without library math functions the results must equal the reference executor bit
for bit.

The prelude also defines the emitted ``EAGLE_OBSERVE_STEPS(thread, taken)`` hook (empty in the
real build): ``run(observe=True)`` records, for every launch, the thread ``j`` that ran a live
sample and the steps it took, so a test can count the lane-steps a GPU's warps would execute.
"""

from __future__ import annotations

import ctypes
import hashlib
import shutil
import subprocess
from pathlib import Path

import numpy as np

from eagle.cuda.emit import BLOCK_SIZE, CONTROL_FIELDS, emit_cuda, slot_ctype
from eagle.cuda.hostbuild import BITS, KEYWORDS, ONE_THREAD
from hawk.ir import Program, Role, series_field, uniform_value

# Both preludes start from the host build's pieces (eagle.cuda.hostbuild: CUDA's keywords as
# plain C++, blocks of one thread, the bit helpers), adding the observation hook and counted
# atomics here.
PRELUDE = KEYWORDS + ONE_THREAD + (
    'extern "C" { long long* eagle_observed = 0; long long eagle_observations = 0; }') + r"""
static inline void eagle_observe(long long thread, long long taken) {
    if (eagle_observed == 0) return;
    eagle_observed[2 * eagle_observations] = thread;
    eagle_observed[2 * eagle_observations + 1] = taken;
    ++eagle_observations; }
#define EAGLE_OBSERVE_STEPS(thread, taken) eagle_observe(thread, taken)
extern "C" { long long eagle_atomic_adds = 0, eagle_atomic_maxes = 0; }
static inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) {
    ++eagle_atomic_adds; unsigned long long o = *a; *a = o + v; return o; }
static inline unsigned long long atomicMax(unsigned long long* a, unsigned long long v) {
    ++eagle_atomic_maxes; unsigned long long o = *a; if (v > o) *a = v; return o; }
""" + BITS

# Real blocks of BLOCK_SIZE threads: one host thread per CUDA thread, the blocks run one after
# the other (so ``__shared__`` is ``static``), barriers span the block or the warp, and a warp's
# ballot and shuffle exchange values through memory between two barriers.
BLOCK_PRELUDE = KEYWORDS + r"""
#include <stdio.h>
#include <stdlib.h>
#include <atomic>
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>
#define __shared__ static
#define EAGLE_THREADS @BLOCK@
struct EagleDim { unsigned long long x; };
static thread_local EagleDim threadIdx = {0}, blockIdx = {0};
static const EagleDim blockDim = {EAGLE_THREADS};
static std::unique_ptr<std::barrier<>> eagle_block, eagle_warp[EAGLE_THREADS / 32];
static std::mutex eagle_atomics;
static inline void eagle_warp_sync() { eagle_warp[threadIdx.x >> 5]->arrive_and_wait(); }
static inline void __syncthreads() { eagle_block->arrive_and_wait(); }
static std::atomic<int> eagle_votes{0};
static inline int __syncthreads_count(int p) {
    if (p != 0) ++eagle_votes;
    __syncthreads();
    const int count = eagle_votes.load();
    __syncthreads();
    if (threadIdx.x == 0) eagle_votes = 0;
    __syncthreads();
    return count; }
static std::atomic<unsigned int> eagle_ballots[EAGLE_THREADS / 32];
static inline unsigned int __ballot_sync(unsigned, int p) {
    std::atomic<unsigned int>& ballot = eagle_ballots[threadIdx.x >> 5];
    if (p != 0) ballot.fetch_or(1u << (threadIdx.x & 31));
    eagle_warp_sync();
    const unsigned int lanes = ballot.load();
    eagle_warp_sync();
    if ((threadIdx.x & 31) == 0) ballot = 0;
    eagle_warp_sync();
    return lanes; }
static long long eagle_lanes[EAGLE_THREADS];
static inline long long __shfl_down_sync(unsigned, long long v, int offset) {
    eagle_lanes[threadIdx.x] = v;
    eagle_warp_sync();
    const long long other = (threadIdx.x & 31) + offset < 32 ? eagle_lanes[threadIdx.x + offset]
                                                              : v;
    eagle_warp_sync();
    return other; }
extern "C" { long long* eagle_observed = 0; long long eagle_observations = 0; }
static inline void eagle_observe(long long thread, long long taken) {
    if (eagle_observed == 0) return;
    std::lock_guard<std::mutex> hold(eagle_atomics);
    eagle_observed[2 * eagle_observations] = thread;
    eagle_observed[2 * eagle_observations + 1] = taken;
    ++eagle_observations; }
#define EAGLE_OBSERVE_STEPS(thread, taken) eagle_observe(thread, taken)
extern "C" { long long eagle_atomic_adds = 0, eagle_atomic_maxes = 0; }
static inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) {
    std::lock_guard<std::mutex> hold(eagle_atomics);
    ++eagle_atomic_adds; unsigned long long o = *a; *a = o + v; return o; }
static inline unsigned long long atomicMax(unsigned long long* a, unsigned long long v) {
    std::lock_guard<std::mutex> hold(eagle_atomics);
    ++eagle_atomic_maxes; unsigned long long o = *a; if (v > o) *a = v; return o; }
""".replace("@BLOCK@", str(BLOCK_SIZE)) + BITS

_CTYPES = {"double": ctypes.c_double, "float": ctypes.c_float, "long long": ctypes.c_longlong,
           "bool": ctypes.c_bool}
_FIELD = {name: k for k, name in enumerate(CONTROL_FIELDS)}


def compiler() -> str | None:
    return shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")


_ONE_THREAD_BLOCKS = """
extern "C" void host_step(@PARAMS@) {
    for (long long b = 0; b < n; ++b) { blockIdx.x = b; eagle_step(@NAMES@); }
}
"""
_REAL_BLOCKS = r"""
extern "C" void host_step(@PARAMS@) {
    eagle_block = std::make_unique<std::barrier<>>(EAGLE_THREADS);
    for (auto& warp : eagle_warp) warp = std::make_unique<std::barrier<>>(32);
    // A barrier some thread never reaches (a __syncthreads in divergent code) hangs a GPU;
    // here it ends the process with a message after a minute instead of hanging the tests.
    std::mutex watch;
    std::condition_variable finished;
    bool done = false;
    std::thread watchdog([&] {
        std::unique_lock<std::mutex> hold(watch);
        if (!finished.wait_for(hold, std::chrono::seconds(60), [&] { return done; })) {
            fprintf(stderr, "host_cuda: a launch did not finish in a minute: a barrier in "
                    "divergent code?\n");
            abort();
        }
    });
    std::vector<std::thread> team;
    for (unsigned long long t = 0; t < EAGLE_THREADS; ++t) {
        team.emplace_back([&, t] {
            threadIdx.x = t;
            for (long long b = 0; b < (n + EAGLE_THREADS - 1) / EAGLE_THREADS; ++b) {
                blockIdx.x = b;
                eagle_step(@NAMES@);
                __syncthreads();  // the next block reuses the shared memory
            }
        });
    }
    for (auto& thread : team) thread.join();
    { std::lock_guard<std::mutex> hold(watch); done = true; }
    finished.notify_one();
    watchdog.join();
}
"""


class HostKernel:
    """A program's generated CUDA source compiled for the host, run in blocks of one thread
    or (``real_blocks``) in blocks of ``BLOCK_SIZE`` host threads with the warp and block
    built-ins of a GPU (slower: for a few blocks)."""

    def __init__(self, program: Program, folder: Path, real_blocks: bool = False):
        self.program = program
        counters = ["unsigned long long seed", "long long first_sample"] if program.counters \
            else []
        params = ", ".join(["long long n", "EagleControl* control", "bool* flags",
                            *[f"{slot_ctype(s)} {s.name}" for s in program.slots], *counters])
        names = ", ".join(["n", "control", "flags", *[s.name for s in program.slots],
                           *[c.split()[-1] for c in counters]])
        launch = (_REAL_BLOCKS if real_blocks else _ONE_THREAD_BLOCKS) \
            .replace("@PARAMS@", params).replace("@NAMES@", names)
        source = (BLOCK_PRELUDE if real_blocks else PRELUDE) + emit_cuda(program) + """
extern "C" { unsigned int eagle_condition = 1; }
extern "C" void cudaGraphSetConditional(cudaGraphConditionalHandle, unsigned int value) {
    eagle_condition = value; }
""" + launch
        digest = hashlib.sha256(source.encode()).hexdigest()[:16]
        library = folder / f"host_{program.name}_{digest}.so"
        if not library.exists():
            path = folder / f"host_{program.name}_{digest}.cpp"
            path.write_text(source)
            standard = ["-std=c++20", "-pthread"] if real_blocks else ["-std=c++17"]
            done = subprocess.run([compiler(), *standard, "-O1", "-ffp-contract=off",
                                   "-fno-fast-math", "-shared", "-fPIC", "-w", str(path), "-o",
                                   str(library)], capture_output=True, text=True)
            if done.returncode != 0:
                raise AssertionError(f"the host compiler refused the generated CUDA source:\n"
                                     f"{done.stderr[:4000]}")
        self.library = ctypes.CDLL(str(library))

    def run(self, arrays: dict, uniforms: dict, flags: np.ndarray, max_steps: int,
            steps_per_launch: int, grow_until: int = 0, full: int = 0,
            spread: int = 0, seed: int = 0, first_sample: int = 0,
            observe: bool = False) -> np.ndarray:
        """Run the device loop to the end; return the control block. ``grow_until`` > 0 plays
        the adaptive schedule (``emit``'s docstring) with a device that is full at ``full``
        live samples and has ``spread`` one-block-per-SM slots; ``seed`` and ``first_sample``:
        the counters of a program that reads them. ``observe``: keep in ``self.observed``, for
        each launch, an array of rows (thread j, steps its sample took) reported by the
        kernel's ``EAGLE_OBSERVE_STEPS`` hook (threads that ran no live sample report none)."""
        n = flags.shape[0]
        control = np.zeros(len(CONTROL_FIELDS), dtype=np.int64)
        self.lists = np.full(2 * n, -1, dtype=np.int64)  # the in- and out-lists, as on a GPU
        control[_FIELD["lists"]] = self.lists.ctypes.data
        control[_FIELD["nsteps"]] = min(steps_per_launch, max_steps)
        control[_FIELD["max_steps"]] = max_steps
        control[_FIELD["steps_per_launch"]] = steps_per_launch
        control[_FIELD["grow_until"]] = grow_until
        control[_FIELD["full"]] = full
        control[_FIELD["spread"]] = spread
        values = [ctypes.c_longlong(flags.shape[0]), ctypes.c_void_p(control.ctypes.data),
                  ctypes.c_void_p(flags.ctypes.data)]
        for slot in self.program.slots:
            param, component = slot.param.name, slot.component
            if slot.field is not None:  # a Series' row count or row stride, a Table's size
                values.append(ctypes.c_longlong(int(series_field(slot, arrays[param]))))
            elif slot.is_uniform:
                value = uniform_value(slot, uniforms[param])
                values.append(_CTYPES[slot_ctype(slot)](value.item()))
            elif slot.param.role is Role.SERIES:  # element [0, k, 0] (or [0, r, c, 0])
                row = arrays[param][(slice(None), *slot.param.index(component))]
                values.append(ctypes.c_void_p(row.ctypes.data))
            else:
                row = arrays[param][slot.param.index(component)]
                values.append(ctypes.c_void_p(row.ctypes.data))
        if self.program.counters:
            values += [ctypes.c_ulonglong(seed), ctypes.c_longlong(first_sample)]
        # A WHILE node: its condition is 1 when the graph starts, then what decide sets.
        condition = ctypes.c_uint.in_dll(self.library, "eagle_condition")
        condition.value = 1
        iterations = 0
        self.sizes = []  # the nsteps of every launch, in order
        self.observed = []
        observed = np.zeros((n, 2), dtype=np.int64) if observe else None
        pointer = ctypes.c_void_p.in_dll(self.library, "eagle_observed")
        count = ctypes.c_longlong.in_dll(self.library, "eagle_observations")
        pointer.value = None if observed is None else observed.ctypes.data
        while condition.value:
            self.sizes.append(int(control[_FIELD["nsteps"]]))
            count.value = 0
            self.library.host_step(*values)
            if observe:
                self.observed.append(observed[:count.value].copy())
            self.library.eagle_decide(ctypes.c_void_p(control.ctypes.data),
                                      ctypes.c_ulonglong(0), ctypes.c_int(1))
            iterations += 1
            assert iterations <= max_steps + 1, "the decide kernel never ended the loop"
        pointer.value = None
        return control

    def atomics(self) -> tuple[int, int]:
        """(atomicAdd, atomicMax) calls the step kernel made so far in this library (blocks
        are one thread here, so each block's atomic is one call)."""
        return (ctypes.c_longlong.in_dll(self.library, "eagle_atomic_adds").value,
                ctypes.c_longlong.in_dll(self.library, "eagle_atomic_maxes").value)
