"""The CPU backend: compile a hawk program with LLVM, cache its machine code, run launches.

``CpuBackend`` is the ``eagle.backend.Backend`` of the host: NumPy views of the user's arrays,
the compiled launch (``CpuKernel``), and ``CpuLoop``, the host loop that ``until_done`` runs
with its adaptive launch size.

The emitted LLVM IR (``cpu.emit``) is compiled by llvmlite into a C function, with no Python
source and no type inference in between; the object code is kept in the cache entry
(``cpu.native``), and a later process links it in a few milliseconds instead of compiling. The
entry's key covers the program, the launch's shape, the compiler's own source, the
llvmlite/NumPy/Python versions and the CPU the code was compiled for. What runs is what was
verified:

- the module is compiled from the emitter's own text, never read back from a file; the ``.ll``
  beside it is for the reader, and is rewritten whenever it is not exactly that text;
- the object code is used only from a folder of this user's that nobody else may write, only
  if it is a regular file that is whole and sealed to this entry (``cache.seal`` of the entry's
  key, the symbol called, the source's SHA-256 and the code: an object copied from another
  entry, or edited with its digest recomputed, does not verify) and only if every symbol it
  needs resolves in this process; anything else is compiled again and the entry rewritten;
- where the cache cannot be used at all (``cache.root``: one warning naming
  ``EAGLE_CACHE_DIR``), the launch is compiled in memory.

Ctrl-C during a compile is held until the compile is over, then raised.
"""

from __future__ import annotations

import ctypes
import functools
import sys
import threading
import time

import numpy as np

from hawk.ir import Program, Role, series_field, uniform_value

from .. import cache
from ..arrays import as_host_array
from ..interrupts import deferred_interrupts
from ..threads import get_num_threads
from . import native
from .emit import SYMBOL, emit_launch, emit_modules
from .layout import LaunchInterface, Shape, launch_interface
from .team import team

__all__ = ["CpuBackend", "CpuLoop", "CpuKernel", "compile_program", "launch_arguments",
           "EMITTER_VERSION"]

# The adaptive launch size. A launch reads and writes every live sample's state once (its
# blocks are stepped in cache), which at n = 1e6 costs about as much as 50 steps: so launches
# are long, about TARGET_LAUNCH_S each, which still keeps Ctrl-C and progress responsive. The
# first is sized by a probe (``_probe``: the launch run on a copy of PROBE_SAMPLES samples, in
# runs of PROBE_RUN spread evenly, until it takes PROBE_S), so that a run that fits in
# TARGET_LAUNCH_S is one launch and pays that pass once; a run of at most FIRST_LAUNCH_WORK
# sample-steps is not probed, and a kernel is probed once per process (``_rates``). Each next
# launch grows towards the target by what the last one measured (at most MAX_GROWTH times) and
# halves when a launch took more than twice the target.
FIRST_STEPS_PER_LAUNCH = 16  # the fewest steps of a first launch
FIRST_LAUNCH_WORK = 1 << 27
PROBE_SAMPLES = 2048
# Contiguous samples per run of the probe's: a strided pick of single samples reads a page per
# sample and per array (1-2 ms at n = 1e6, some 5% of a 2-thread run of the oscillator).
PROBE_RUN = 64
PROBE_S = 3e-4
TARGET_LAUNCH_S = 0.2
MAX_GROWTH = 8
MAX_STEPS_PER_LAUNCH = 1 << 20
SPLIT_WORK = 1 << 18  # sample-steps below which a launch runs on the calling thread alone
_DLPACK_CPU = 1
_ALIGN = 64  # bytes: each scratch array starts on a cache line

EMITTER_VERSION = 23
_loaded: dict[str, CpuKernel] = {}  # by generated module name (program digest and versions)
# (id(program), shape) -> (program, its compiled launch); the program is kept so its id stays
# its own
_by_program: dict[tuple[int, Shape | None], tuple[Program, CpuKernel]] = {}
# A kernel's rate (sample-steps per second on one thread) from its first probe in this process:
# a later run sizes its first launch by it without probing again (the probe costs 0.5-1 ms, a
# few per cent of a short run; a rate that is off only makes the first launch longer or
# shorter than the target, and the next launches adapt to what it measured).
_rates: dict[CpuKernel, float] = {}
_lock = threading.Lock()
_C_TYPES = {"int64": ctypes.c_int64, "voidptr": ctypes.c_void_p, "float64": ctypes.c_double,
            "float32": ctypes.c_float, "int32": ctypes.c_int32, "uint32": ctypes.c_uint32,
            "uint64": ctypes.c_uint64, "boolean": ctypes.c_bool}


class CpuKernel:
    """One program compiled for the CPU: ``launch(nsteps, nthreads, arguments(bound))``;
    ``source_path`` is the cached file of its generated source (None: compiled in memory)."""

    def __init__(self, program: Program, interface: LaunchInterface, address: int, keep,
                 source_path):
        self.program = program
        self.interface = interface
        self.source_path = source_path
        self._keep = keep  # what holds the machine code (an MCJIT engine)
        self._run_blocks = ctypes.CFUNCTYPE(
            None, *(_C_TYPES[kind] for _, kind in interface.parameters))(address)
        self._scratch = [(np.dtype(a.dtype.numpy).itemsize, a.pool) for a in interface.scratch]
        self._row_strides = _row_strides(program)
        #: the positions among ``arguments()`` of the tables' data, shared by every sample
        #: (a probe neither subsets nor copies them)
        self.shared = frozenset(1 + k for k, slot in enumerate(program.slots) if slot.is_table)

    def arguments(self, bound) -> tuple:
        """The launch's arrays and values (``launch_arguments``) from ``bound``."""
        return launch_arguments(self.program, bound)

    def function(self, nsteps, *arguments, blocks: np.ndarray, nthreads: int = 1,
                 ) -> tuple[int, int]:
        """One thread's share of a launch of ``nsteps`` on ``arguments`` (``arguments()``,
        then the first step where the program reads counters): it claims samples from
        ``blocks`` (a one-element int64 counter of pieces, ``emit.PIECES`` to a block, zero
        at the start of the launch, shared by the ``nthreads`` threads of the launch) until
        none is left, and returns (live samples left in what it claimed, steps its slowest
        took). It allocates the thread's scratch and calls the compiled ``run_blocks``, which
        holds no GIL."""
        n = arguments[0].shape[0]
        block = self.interface.shape.block
        nblocks = -(-n // block)
        # The pool's room: twice a fair share of the blocks' lanes (a thread with more
        # stragglers than that finishes them before it claims another block).
        mine = min(nblocks, max(1, -(-2 * nblocks // nthreads))) * block
        offsets, total = [], 0
        for k, (itemsize, pool) in enumerate(self._scratch):
            offsets.append(total)
            # Each array a few cache lines past a multiple of 4 KiB from the last: the lane
            # loops read and write all of them at the same index, and arrays a multiple of
            # 4 KiB apart would compete for the same L1 sets (and stall stores on loads).
            total += -(-itemsize * (mine if pool else block) // _ALIGN) * _ALIGN
            total += _ALIGN * (1 + k % 7)
        scratch = np.empty(total + _ALIGN, np.uint8)
        base = scratch.ctypes.data
        base += -base % _ALIGN
        values = [_c_value(a) for a in arguments]
        for at, array_at in self._row_strides:  # the array's own, whoever made the arguments
            array = arguments[array_at]
            values[at] = array.strides[0] // array.itemsize
        out = np.zeros(2, np.int64)
        self._run_blocks(int(nsteps), int(nthreads), n, *values, *[base + o for o in offsets], mine,
                         blocks.ctypes.data, out.ctypes.data)
        return int(out[0]), int(out[1])

    def launch(self, nsteps: int, nthreads: int, arguments: tuple, first_step: int = 0,
               ) -> tuple[int, int]:
        """Advance every live sample by up to ``nsteps`` on ``nthreads`` host threads; return
        (live samples, steps taken by the slowest). ``first_step``: the runner's step count
        before the launch, for a program that reads counters (``Program.counters``)."""
        nblocks = -(-arguments[0].shape[0] // self.interface.shape.block)
        nthreads = max(1, min(nthreads, nblocks))
        if self.program.counters:
            arguments = (*arguments, np.int64(first_step))
        share = functools.partial(self.function, blocks=np.zeros(1, np.int64),
                                  nthreads=nthreads)
        live, steps = team.run(share, nthreads, nblocks, (np.int64(nsteps), *arguments))
        return int(live), int(steps)


def _row_strides(program: Program) -> list[tuple[int, int]]:
    """For each Series' row-stride value among ``launch_arguments``, (its position, the
    position of an array of that Series): a call takes the stride from the array it is given
    (the probe's copies have rows closer together than the user's arrays)."""
    arrays = {slot.param.name: 1 + k for k, slot in enumerate(program.slots)
              if slot.param.role is Role.SERIES and not slot.is_uniform}
    return [(1 + k, arrays[slot.param.name]) for k, slot in enumerate(program.slots)
            if slot.field == "row_stride"]


def _c_value(value):
    """A launch argument as ctypes takes it: an array by the address of its first element."""
    if isinstance(value, np.ndarray):
        return value.ctypes.data
    return value.item() if isinstance(value, np.generic) else value


def launch_arguments(program: Program, bound) -> tuple:
    """``bound``'s arrays and values in the order of the generated function's arguments (a
    program that reads counters: then its seed and first sample; ``launch`` adds the step)."""
    values = [bound.flags]
    for slot in program.slots:
        name, component = slot.param.name, slot.component
        if slot.field is not None:  # a Series' row count or row stride, a Table's size
            values.append(series_field(slot, bound.arrays[name]))
        elif slot.is_table:  # the table's data, shared by every lane
            values.append(bound.arrays[name])
        elif slot.is_uniform:  # a Param's value, or one component of it
            values.append(uniform_value(slot, bound.uniforms[name]))
        elif component is None:  # (n,), or a Series' (T, n): the array itself
            values.append(bound.arrays[name])
        elif slot.param.role is Role.SERIES:  # a component of (T, k, n) or (T, r, c, n)
            values.append(bound.arrays[name][(slice(None), *slot.param.index(component))])
        else:  # a component of (k, n) or (r, c, n)
            values.append(bound.arrays[name][slot.param.index(component)])
    if program.counters:
        values += [np.uint64(bound.seed or 0), np.int64(bound.first_sample)]
    return tuple(values)


def _entry(program: Program, shape: Shape) -> tuple[str, str]:
    """The generated module's name and the cache key of ``program``'s launch: the program, the
    launch's shape, the code that turns it into machine code (``_compiler_digest``),
    llvmlite's version and the CPU it is for."""
    import llvmlite

    key = cache.key("cpu", program.digest(), EMITTER_VERSION, shape.block, shape.unroll,
                    _compiler_digest(), llvmlite.__version__, sys.version_info[:2],
                    np.__version__, *native.target())
    return f"eagle_cpu_{program.name}_{key[:16]}", key


@functools.cache
@functools.cache
def _compiler_digest() -> str:
    """The SHA-256 of the source of the modules that write and compile a launch (and of this
    one, which calls it): an edited emitter never meets an entry the old one wrote, whether
    or not ``EMITTER_VERSION`` was bumped (read once per process; eagle's version would cost
    an ``importlib.metadata`` import at every start)."""
    import hashlib
    from pathlib import Path

    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for name in ("backend.py", "emit.py", "layout.py", "llvm_ops.py", "llvm_random.py",
                 "native.py", "../codegen.py"):
        try:
            digest.update((here / name).read_bytes())
        except OSError:  # installed without its source: EMITTER_VERSION alone tells them apart
            digest.update(name.encode())
    return digest.hexdigest()


def compile_program(program: Program, shape: Shape | None = None) -> CpuKernel:
    """The compiled launch of ``program`` (``shape``: ``layout.shape_for(program)``; tests
    pass small blocks), from memory, from disk, or new. A Ctrl-C meanwhile is raised once the
    compile is over. A program compiled once in this process costs a dictionary look-up: no
    emitting, no hashing."""
    known = _by_program.get((id(program), shape))
    if known is not None and known[0] is program:
        return known[1]
    with deferred_interrupts(), _lock:
        interface = launch_interface(program, shape)
        module_name, key = _entry(program, interface.shape)
        kernel = _loaded.get(module_name)
        if kernel is None:
            address, keep, path = _build(program, interface.shape, module_name, key)
            kernel = _loaded[module_name] = CpuKernel(program, interface, address, keep, path)
        _by_program[(id(program), shape)] = (program, kernel)
    return kernel


def _build(program: Program, shape: Shape, module_name: str, key: str):
    """(address of the launch, what holds its code, the cached LLVM IR file or None): linked
    from the cache entry, else emitted, compiled and stored there. A linked entry's ``.ll``
    (for the reader) is checked against the digest its object code records, and only a
    missing or damaged one makes the text again: a cached start emits nothing."""
    kernel = program.name
    folder = cache.entry_dir("cpu", key)
    path = None if folder is None else folder / f"{module_name}.ll"
    code_path = None if folder is None else folder / "run_blocks.o"
    if folder is not None:
        cache.keep_only(folder, {path.name, code_path.name})
        loaded, digest = _linked(code_path, key)
        if loaded is not None:
            return (*loaded, _reader_copy(path, digest, program, shape))
    modules = emit_modules(program, shape)
    text = "\n".join(modules)  # emit_launch's text
    digest = _sha256(text)
    path = _reader_copy(path, digest, program, shape, text)
    code = native.compile_ir(*modules, kernel, once=program.runs_once)
    if code_path is not None:
        try:
            seal = cache.seal(key, code_path.name, SYMBOL.encode(), digest.encode(), code)
            cache.store(code_path, native.pack(code, SYMBOL, digest, seal))
        except OSError:
            pass  # not kept for the next process; this one has what it needs
    loaded = native.load(code, SYMBOL)
    if loaded is None:
        raise RuntimeError(f"eagle could not link the launch it compiled for kernel {kernel!r}: "
                           "a C library function it calls is missing in this process")
    return (*loaded, path)


def _reader_copy(path, digest: str | None, program: Program, shape: Shape,
                 text: str | None = None):
    """``path`` once it holds the launch's LLVM IR (whose SHA-256 is ``digest``), rewritten
    if it does not; None where it cannot be written."""
    if path is None:
        return None
    try:
        if digest is None or cache.read_verified(path, digest) is None:
            text = text if text is not None else emit_launch(program, shape)
            cache.store(path, text.encode())
    except OSError:
        return None
    return path


def _linked(code_path, key: str) -> tuple[tuple[int, object] | None, str | None]:
    """(the launch linked from the cached object at ``code_path``, the SHA-256 of the LLVM IR
    it records); (None, None) where there is none that is a regular file, whole, calls
    ``SYMBOL``, is sealed to the entry ``key`` and loads (it is then compiled and stored
    again)."""
    data = cache.read_file(code_path)
    unpacked = None if data is None else native.unpack(data)
    if unpacked is None:
        return None, None
    code, symbol = unpacked
    meta = native.header(data)
    source = meta.get("source")
    if symbol != SYMBOL or not isinstance(source, str) or not cache.sealed(
            meta.get("seal"), key, code_path.name, symbol.encode(), source.encode(), code):
        return None, None
    try:
        loaded = native.load(code, symbol)
    except Exception:  # llvmlite refused it: compiled anew
        return None, None
    return loaded, source


def _sha256(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


class CpuLoop:
    """``until_done``'s loop on the host: one compiled launch per iteration of a host loop,
    each launch sized so that it takes about ``TARGET_LAUNCH_S`` (unless the runner fixed the
    size), Ctrl-C deferred to the next launch boundary."""

    mode = "host-loop"
    sees_launches = True

    def __init__(self, program: Program, bound, steps_per_launch: int | None):
        self.program = program
        self.bound = bound
        self.fixed_steps_per_launch = steps_per_launch
        self.steps_per_launch = steps_per_launch or _first_launch(bound.n)
        self.threads = get_num_threads()
        self.kernel: CpuKernel | None = None
        self._arguments: tuple = ()
        self._sized = False  # the first launch sized (by a probe, where one is worth it)

    def build(self) -> float:
        """Compile (or load from the cache) the launch; 0 once done."""
        if self.kernel is not None:
            return 0.0
        start = time.perf_counter()
        self.kernel = compile_program(self.program)
        self._arguments = self.kernel.arguments(self.bound)
        return time.perf_counter() - start

    def run(self, counters, after_launch) -> None:
        self.build()
        self.threads = get_num_threads()
        condition = np.array([0 if counters.finished else 1], dtype=np.int64)
        with deferred_interrupts() as interrupts:

            def one_launch():
                if not self._sized:
                    self._sized = True
                    self._size_first_launch(counters.max_steps - counters.steps, counters.steps)
                k = min(self.steps_per_launch, counters.max_steps - counters.steps)
                live = counters.live if counters.live is not None else self.bound.n
                # A launch too short to split costs more in the hand-over than it saves.
                threads = self.threads if live * k >= SPLIT_WORK else 1
                t0 = time.perf_counter()
                live, taken = self.kernel.launch(k, threads, self._arguments, counters.steps)
                counters.record(1, taken, live)
                self._adapt(k, taken, time.perf_counter() - t0)
                condition[0] = not counters.finished
                after_launch()
                interrupts.check()

            host_repeat_while(condition, one_launch, None)

    def _size_first_launch(self, steps_left: int, first_step: int) -> None:
        """The first launch's size from a probe of the kernel's speed on these samples, where
        the default first launch would not already cover the run."""
        n = self.bound.n
        if self.fixed_steps_per_launch is not None or self.steps_per_launch >= steps_left \
                or n * steps_left <= FIRST_LAUNCH_WORK:
            return
        rate = _rates.get(self.kernel)
        if rate is None:
            rate, live_share = _probe(self.kernel, self._arguments, n, steps_left, first_step)
            if rate is None:
                return
            _rates[self.kernel] = rate
        else:
            live_share = 1.0 - np.count_nonzero(self._arguments[0]) / n
            if live_share == 0.0:
                return
        threads = self.threads if n >= SPLIT_WORK else 1
        steps = TARGET_LAUNCH_S * rate * threads / max(1.0, n * live_share)
        self.steps_per_launch = int(min(max(steps, FIRST_STEPS_PER_LAUNCH),
                                        MAX_STEPS_PER_LAUNCH))

    def _adapt(self, k: int, taken: int, seconds: float) -> None:
        if self.fixed_steps_per_launch is None and taken == k:
            if seconds < TARGET_LAUNCH_S / 2:
                growth = min(MAX_GROWTH, TARGET_LAUNCH_S / max(seconds, 1e-6))
                self.steps_per_launch = min(int(growth * self.steps_per_launch),
                                            MAX_STEPS_PER_LAUNCH)
            elif seconds > 2 * TARGET_LAUNCH_S:
                self.steps_per_launch = max(1, self.steps_per_launch // 2)

    def live_now(self) -> None:
        return None  # the host sees every launch: progress comes through after_launch


def _probe(kernel: CpuKernel, arguments: tuple, n: int, steps_left: int, first_step: int,
           ) -> tuple[float | None, float]:
    """(sample-steps per second on one thread, share of samples live) of ``kernel`` on these
    samples, from the launch run on copies of PROBE_SAMPLES of them, in runs of PROBE_RUN
    spread evenly over the samples (the user's arrays are not touched): 16 steps, then more
    (by what the last round measured, at most MAX_GROWTH times) until a round after the first
    has run PROBE_S, the samples are all done or the rounds cover the run; (None, 1.0) where
    no probe sample is live.

    A round's work is exact while no sample finishes in it (live count x steps), else the
    average of the live counts before and after times the steps (within 2x of the truth);
    the rate is the best round's, or the marginal rate between two exact rounds (their
    difference has no fixed costs in it; at most twice the round's own): a round's fixed costs
    (the call, the scratch, the copies, about 50 us), a first call's page faults and a
    preemption only make a round look slower. Times are this thread's CPU time: a round of a
    few tenths of a millisecond preempted once by another process would read ten times too
    slow on the wall clock."""
    if n <= PROBE_SAMPLES:
        picked = np.arange(n)
    else:
        length = min(PROBE_RUN, PROBE_SAMPLES)
        runs = PROBE_SAMPLES // length
        starts = np.arange(runs) * (n - length) // max(runs - 1, 1)
        picked = (starts[:, None] + np.arange(length)).ravel()

    def subset(value):
        if isinstance(value, np.ndarray) and value.shape == (n,):
            return value[picked]
        if isinstance(value, np.ndarray) and value.ndim == 2 and value.shape[1] == n:
            return np.ascontiguousarray(value[:, picked])  # a Series
        return value

    originals = tuple(a if k in kernel.shared else subset(a)  # a table: every sample's
                      for k, a in enumerate(arguments))
    start_live = int(np.count_nonzero(~originals[0]))
    if start_live == 0:
        return None, 1.0
    best, rounds, exact = 0.0, 0, None  # exact: (work, seconds) of the last exact round
    k = min(FIRST_STEPS_PER_LAUNCH, steps_left)
    while True:
        copies = tuple(a.copy() if isinstance(a, np.ndarray) and k not in kernel.shared else a
                       for k, a in enumerate(originals))
        t0 = time.thread_time()
        live, taken = kernel.launch(k, 1, copies, first_step)
        seconds = max(time.thread_time() - t0, 1e-9)
        rounds += 1
        work = start_live * taken if live == start_live else (start_live + live) / 2 * taken
        best = max(best, work / seconds)
        if live == start_live:  # exact work: the rate between this round and the last exact
            if exact is not None and seconds > exact[1]:  # one has no fixed costs in it
                marginal = (work - exact[0]) / (seconds - exact[1])
                best = max(best, min(marginal, 2 * work / seconds))
            exact = (work, seconds)
        if (seconds >= PROBE_S and rounds > 1) or taken < k or k >= steps_left:
            break
        k = min(k * int(min(MAX_GROWTH, max(2.0, PROBE_S / seconds))), steps_left)
    return best, start_live / len(originals[0])


def _first_launch(n: int) -> int:
    """The first launch's steps: about FIRST_LAUNCH_WORK sample-steps, a power of two."""
    steps = max(FIRST_STEPS_PER_LAUNCH, FIRST_LAUNCH_WORK // max(n, 1))
    return min(1 << (steps.bit_length() - 1), 4096)


def host_repeat_while(condition, body, max_iterations: int | None) -> int:
    """``eagle.repeat_while`` on the host: the plain Python loop it is defined as."""
    flag = np.asarray(condition)
    if flag.shape not in ((1,), ()) or flag.dtype.kind not in "biu":
        raise TypeError("repeat_while(condition, body): condition must be a one-element integer "
                        f"or bool array, got shape {flag.shape} dtype {flag.dtype}")
    iterations = 0
    while flag.reshape(-1)[0] and (max_iterations is None or iterations < max_iterations):
        body()
        iterations += 1
    return iterations


class CpuBackend:
    """The host: NumPy arrays (and anything exporting ``__array_interface__``, the buffer
    protocol or a CPU DLPack capsule: PyTorch and JAX CPU arrays), LLVM-compiled launches and
    eagle's own team of host threads."""

    family = "cpu"

    def unavailable_reason(self) -> None:
        return None

    def normalize(self, device: str) -> str:
        if device != "cpu":
            raise ValueError(f"the host is device 'cpu', got {device!r}")
        return device

    def default_device(self) -> str:
        return "cpu"

    def device_of(self, value) -> str | None:
        if isinstance(value, np.ndarray | memoryview) or hasattr(value, "__array_interface__"):
            return "cpu"
        if hasattr(value, "__dlpack_device__"):
            kind, _ = value.__dlpack_device__()
            return "cpu" if int(kind) == _DLPACK_CPU else None
        return None

    def view(self, value, device: str) -> np.ndarray:
        return as_host_array(value)

    def full(self, shape, value, dtype, device: str) -> np.ndarray:
        return np.full(shape, value, dtype=dtype)

    def shares_memory(self, a, b) -> bool:
        return bool(np.may_share_memory(a, b))

    def to_host(self, array) -> np.ndarray:
        return as_host_array(array)

    def from_host(self, array: np.ndarray, device: str) -> np.ndarray:
        return np.array(array, copy=True)

    def upload(self, array: np.ndarray, device: str) -> np.ndarray:
        return array

    def clear(self, array) -> None:
        array[...] = 0

    def compile(self, program: Program, device: str, *, fmad: bool = False) -> CpuKernel:
        """The compiled launch of ``program`` for float64/float32 arrays (``fmad`` does not
        apply: the host code never contracts multiply-adds)."""
        return compile_program(program)

    def loop(self, program: Program, bound, steps_per_launch: int | None, *, eager: bool,
             fmad: bool) -> CpuLoop:
        return CpuLoop(program, bound, steps_per_launch)  # the host decides on every launch

    def repeat_while(self, condition, body, max_iterations: int | None, device: str) -> int:
        return host_repeat_while(condition, body, max_iterations)

    def array_module(self):
        return np

    def synchronize(self, device: str) -> None:
        pass  # host launches return when they are done

    def describe(self) -> list[str]:
        import platform

        from ..threads import ENV_VAR

        return [f"CPU: {platform.machine()} {platform.processor() or ''}".rstrip(),
                f"  host team: {get_num_threads()} threads (eagle's own pool over GIL-free "
                f"machine code; set ${ENV_VAR} or eagle.set_num_threads)"]
