"""The GPU backend: a hawk program compiled for one device, and its loop recorded as one graph.

``CudaBackend.compile`` emits CUDA C++ (``emit``), compiles it with NVRTC to a cubin for the
device's own architecture (cached on disk), loads it and resolves its kernels, all before any
graph is recorded (a module loaded during capture invalidates the capture).

``GraphLoop`` records ``until_done``'s loop once:

- ``graph-while`` (driver 12.4 or newer): a WHILE node whose body is ``eagle_step`` then
  ``eagle_decide``; the decide kernel sets the node's condition on the device, so one graph
  launch runs the whole loop with no host round trip;
- ``graph-unrolled`` (older drivers): a graph of ``UNROLLED`` (step, decide) pairs replayed from
  the host until the control block says the run is over; a step past the end does nothing.

The control block (``emit.CONTROL_FIELDS``) is uploaded before a run and read back once after
it: ``launches``, ``steps`` and the live count come from device counters. Beside it each loop
holds the two lists of ``n`` sample indices (8 bytes each) that the step kernel compacts the
live samples into between launches (``emit``'s docstring); the graph's grid stays sized for
``n``, and the blocks past the live count return at once. Launch sizes follow
``emit``'s adaptive schedule (first ``INITIAL_STEPS_PER_LAUNCH``, doubling up to
``MAX_STEPS_PER_LAUNCH`` while that keeps the work balanced) unless ``until_done`` fixed one;
the device's "full" count comes from the CUDA occupancy calculator for the step kernel. It has
not been timed on a GPU yet: ``benchmarks/gpu_loop.py`` compares it with fixed sizes there.

Every entry point that touches the device (``build``, ``run``, ``run_host_loop``,
``read_counters``) makes the device's context current on the calling thread, so a runner built
on one thread runs on another. Before each run the loop's stream waits on the streams the
arrays' producers declared (``memory.wait_for_producers``). Pinned host memory for the progress
bar is allocated, and the device writes to it, only for ``run(progress=True)``.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

import numpy as np

from hawk.ir import Program

from ..backend import DeviceLoop
from . import emit
from .arguments import INITIAL_STEPS_PER_LAUNCH, MAX_STEPS_PER_LAUNCH, step_arguments
from .driver import activate, call, device_info, driver
from .emit import (
    BLOCK_SIZE,
    CONTROL_FIELDS,
    DECIDE_KERNEL,
    START_KERNEL,
    STEP_KERNEL,
    emit_cuda,
)
from .graph import Graph, add_kernel_node, add_while_node, condition_handle
from .launcher import Launcher, Module, pack
from .memory import DeviceBuffer, HostMapped, wait_for_producers
from .nvrtc import check_driver_loads, compile_source, nvrtc_version
from .stream import Stream

if TYPE_CHECKING:
    from ..bindings import Bound

__all__ = ["CudaBackend", "CudaLoop", "CudaKernel", "GraphLoop", "step_arguments",
           "INITIAL_STEPS_PER_LAUNCH", "MAX_STEPS_PER_LAUNCH", "UNROLLED"]

UNROLLED = 8
_FIELD = {name: k for k, name in enumerate(CONTROL_FIELDS)}
_DECIDE = ["ptr", "u64", "int"]  # control, condition handle, set it?
_lock = threading.Lock()


class CudaKernel:
    """One program loaded on one device, with its kernel functions resolved."""

    def __init__(self, program: Program, ordinal: int, fmad: bool, compiler=compile_source):
        self.program = program
        self.ordinal = ordinal
        info = device_info(ordinal)
        self.arch = info.arch
        if compiler is compile_source:
            check_driver_loads(nvrtc_version(), "NVRTC", info.driver_version)
        self.min_blocks = emit.MIN_BLOCKS_PER_SM
        self._load(program, ordinal, fmad, compiler)
        if self.min_blocks > 1 and self.local_bytes > emit.LOCAL_BYTES_FOR_ONE_BLOCK:
            self.min_blocks = 1  # a wide model: spilling to fit two blocks costs more
            self._load(program, ordinal, fmad, compiler)
        self.while_nodes = info.supports_while_nodes
        blocks = call(driver().cuOccupancyMaxActiveBlocksPerMultiprocessor, self.step,
                      BLOCK_SIZE, 0)
        #: live samples at which every SM is full, and one block per SM (the schedule's marks)
        self.full = max(int(blocks or 1), 1) * info.multiprocessors * BLOCK_SIZE
        self.spread = info.multiprocessors * BLOCK_SIZE

    def _load(self, program: Program, ordinal: int, fmad: bool, compiler) -> None:
        """Emit, compile and load ``program`` at ``self.min_blocks`` blocks per SM; note the
        step kernel's local memory per thread (its spills and stack)."""
        self.source = emit_cuda(program, self.min_blocks)
        self.cubin = compiler(self.source, self.arch, fmad=fmad, name=f"{program.name}.cu")
        self.module = Module(self.cubin, ordinal)
        self.step = self.module.function(STEP_KERNEL)
        self.decide = self.module.function(DECIDE_KERNEL)
        self.start = self.module.function(START_KERNEL)
        self.local_bytes = int(call(driver().cuFuncGetAttribute, driver().CUfunction_attribute
                                    .CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, self.step))


class GraphLoop:
    """``until_done``'s loop for one runner, recorded once as a graph on first use."""

    def __init__(self, kernel: CudaKernel, bound: Bound, steps_per_launch: int | None,
                 stream: Stream | None = None):
        self.kernel = kernel
        self.bound = bound
        self.fixed = steps_per_launch is not None
        self.steps_per_launch = steps_per_launch or INITIAL_STEPS_PER_LAUNCH
        self.context = activate(kernel.ordinal)
        self.stream = stream or Stream(kernel.ordinal)  # blocking; or the user's
        self.control = DeviceBuffer(8 * len(CONTROL_FIELDS), kernel.ordinal)
        # the in- and out-lists of live sample indices the step kernel compacts into
        self.lists = DeviceBuffer(8 * 2 * bound.n, kernel.ordinal)
        #: False: no lists, every launch takes sample i in thread i (benchmarks/gpu_loop.py
        #: times compaction against that, arms interleaved, from the next run on)
        self.compact = True
        self.host_control = np.zeros(len(CONTROL_FIELDS), dtype=np.int64)
        self.mode = "graph-while" if kernel.while_nodes else "graph-unrolled"
        self.graph = None
        self.exec = None
        self._keep = []  # packed arguments the graph's nodes point into
        # (live, steps) written by the decide kernel into pinned host memory, for a progress
        # bar: allocated on the first run(progress=True), written only while one is shown
        self.progress: HostMapped | None = None
        self.watching = False

    def watch(self, enabled: bool) -> None:
        """Have the next runs write the live count to host memory (``live_now``) or not."""
        self.watching = bool(enabled)
        if self.watching and self.progress is None:
            self.progress = HostMapped(16, self.kernel.ordinal)

    def build(self) -> float:
        """Record and instantiate the graph; return the seconds it took."""
        start = time.perf_counter()
        activate(self.kernel.ordinal)
        grid = -(-self.bound.n // BLOCK_SIZE)
        types, values = step_arguments(self.kernel.program.slots, self.bound, self.control,
                                       self.kernel.program.counters)
        step_args = pack(types, values)
        self.graph = Graph()
        if self.mode == "graph-while":
            _, handle, body = add_while_node(self.graph.handle, self.context)
            decide_args = pack(_DECIDE, [self.control.ptr, int(handle), 1])
            step = add_kernel_node(body, self.kernel.step, grid, BLOCK_SIZE, step_args)
            add_kernel_node(body, self.kernel.decide, 1, 1, decide_args, [step])
        else:
            decide_args = pack(_DECIDE, [self.control.ptr, 0, 0])
            previous = []
            for _ in range(UNROLLED):
                step = add_kernel_node(self.graph.handle, self.kernel.step, grid, BLOCK_SIZE,
                                       step_args, previous)
                previous = [add_kernel_node(self.graph.handle, self.kernel.decide, 1, 1,
                                            decide_args, [step])]
        self._keep = [step_args, decide_args]
        self.exec = self.graph.instantiate(self.kernel.ordinal)
        self.exec.upload(self.stream)
        self.stream.synchronize()
        return time.perf_counter() - start

    def prepare_for_capture(self, steps: int, max_steps: int) -> None:
        """Set the control block for ``append_to_capture`` (before the capture begins: a copy
        from host memory may not happen while a capture is open)."""
        self._start(steps, max_steps)
        self.stream.synchronize()

    def append_to_capture(self, stream: Stream) -> None:
        """Record this loop into the graph ``stream`` is capturing, at the top level (CUDA
        refuses conditional nodes inside child graphs): a start kernel, then the WHILE node.
        Each replay of that graph continues the run from where the last one stopped."""
        d = driver()
        info = call(d.cuStreamGetCaptureInfo, stream.handle)
        status, graph, dependencies = info[0], info[2], list(info[3] or [])
        if int(status) != 1:
            raise RuntimeError("append_to_capture() needs a stream that is capturing")
        grid = -(-self.bound.n // BLOCK_SIZE)
        types, values = step_arguments(self.kernel.program.slots, self.bound, self.control,
                                       self.kernel.program.counters)
        step_args = pack(types, values)
        start_args = pack(["ptr"], [self.control.ptr])
        start = add_kernel_node(graph, self.kernel.start, 1, 1, start_args, dependencies)
        handle = condition_handle(graph, self.context)
        node, _, body = add_while_node(graph, self.context, [start], handle)
        decide_args = pack(_DECIDE, [self.control.ptr, int(handle), 1])
        step = add_kernel_node(body, self.kernel.step, grid, BLOCK_SIZE, step_args)
        add_kernel_node(body, self.kernel.decide, 1, 1, decide_args, [step])
        self._keep += [step_args, start_args, decide_args]
        call(d.cuStreamUpdateCaptureDependencies, stream.handle, [node], None, 1,
             int(d.CUstreamUpdateCaptureDependencies_flags.CU_STREAM_SET_CAPTURE_DEPENDENCIES))

    def read_counters(self) -> tuple[int, int, int]:
        """(launches of the last replay, steps since reset, live samples), read back now."""
        c = self.control.download(self.host_control, self.stream)
        self.stream.synchronize()
        return int(c[_FIELD["launches"]]), int(c[_FIELD["steps"]]), int(c[_FIELD["last_live"]])

    def _start(self, steps: int, max_steps: int) -> np.ndarray:
        c = self.host_control
        c[:] = 0
        c[_FIELD["nsteps"]] = min(self.steps_per_launch, max_steps - steps)
        c[_FIELD["steps"]] = steps
        c[_FIELD["max_steps"]] = max_steps
        c[_FIELD["steps_per_launch"]] = self.steps_per_launch
        c[_FIELD["last_live"]] = -1
        c[_FIELD["grow_until"]] = 0 if self.fixed else MAX_STEPS_PER_LAUNCH
        c[_FIELD["full"]] = self.kernel.full
        c[_FIELD["spread"]] = self.kernel.spread
        c[_FIELD["progress"]] = self.progress.device_ptr if self.watching else 0
        # list_in 0: the first launch takes every sample
        c[_FIELD["lists"]] = self.lists.ptr if self.compact else 0
        self.control.upload(c, self.stream)
        return c

    def _finish(self, c: np.ndarray, steps: int) -> tuple[int, int, int]:
        self.last_steps_per_launch = int(c[_FIELD["steps_per_launch"]])
        return int(c[_FIELD["launches"]]), int(c[_FIELD["steps"]]) - steps, int(
            c[_FIELD["last_live"]])

    def live_now(self) -> int | None:
        """The live count the device last wrote to host memory (progress only), or None."""
        if self.progress is None or not self.watching:
            return None
        live = int(self.progress.as_array(np.int64, 2)[0])
        return live if live >= 0 else None

    def run(self, steps: int, max_steps: int) -> tuple[int, int, int]:
        """Run from ``steps`` taken until done or ``max_steps``; return (launches, steps taken
        in this run, live samples)."""
        activate(self.kernel.ordinal)
        if self.watching:
            self.progress.as_array(np.int64, 2)[:] = -1
        c = self._start(steps, max_steps)
        wait_for_producers(self.stream, self.bound.arrays.values())
        while True:
            self.exec.launch(self.stream)
            self.control.download(c, self.stream)
            self.stream.synchronize()
            if self.mode == "graph-while" or c[_FIELD["nsteps"]] <= 0:
                break
        return self._finish(c, steps)

    def run_host_loop(self, steps: int, max_steps: int) -> tuple[int, int, int]:
        """The same loop with the host deciding: launch, read the control block back, decide,
        launch again (the eager loop a graph replaces; ``until_done(..., loop="host")``)."""
        activate(self.kernel.ordinal)
        grid = -(-self.bound.n // BLOCK_SIZE)
        if not hasattr(self, "_host_launch"):
            types, values = step_arguments(self.kernel.program.slots, self.bound, self.control,
                                       self.kernel.program.counters)
            self._host_launch = (
                Launcher(self.kernel.step, types, BLOCK_SIZE, self.kernel.ordinal),
                pack(types, values),
                Launcher(self.kernel.decide, _DECIDE, 1, self.kernel.ordinal),
                pack(_DECIDE, [self.control.ptr, 0, 0]))
        step, step_args, decide, decide_args = self._host_launch
        c = self._start(steps, max_steps)
        wait_for_producers(self.stream, self.bound.arrays.values())
        while True:
            step.launch_packed(grid, step_args, self.stream)
            decide.launch_packed(1, decide_args, self.stream)
            self.control.download(c, self.stream)
            self.stream.synchronize()  # the host round trip after every launch
            if c[_FIELD["nsteps"]] <= 0:
                break
        return self._finish(c, steps)


class CudaLoop(DeviceLoop):
    """``until_done``'s loop on a GPU (the ``eagle.backend.DeviceLoop`` of ``CudaBackend``): the
    kernel is compiled and loaded when the runner is made, so ``build`` (on the first run) is
    the cost of recording and instantiating the graph alone. ``eager=True`` launches from a
    host loop that reads the live count back after every launch (the loop a graph replaces)."""

    sees_launches = False
    threads = 0

    def __init__(self, kernel: CudaKernel, bound: Bound, steps_per_launch: int | None,
                 eager: bool):
        self.kernel = kernel
        self.bound = bound
        self.fixed_steps_per_launch = steps_per_launch
        self.steps_per_launch = steps_per_launch or INITIAL_STEPS_PER_LAUNCH
        self.eager = eager
        self.mode = "host-loop" if eager else (
            "graph-while" if kernel.while_nodes else "graph-unrolled")
        self._graph_loop: GraphLoop | None = None
        self._stream: Stream | None = None

    def use_stream(self, stream) -> None:
        """Run on the user's ``stream`` (``until_done(..., stream=...)``): any library's
        stream or a handle (``stream.stream_handle``)."""
        from .stream import stream_handle

        handle = stream_handle(stream, "until_done(stream=...)")
        if self._graph_loop is not None:
            raise RuntimeError("use_stream() must come before the loop is first used")
        self._stream = Stream.wrap(handle, self.kernel.ordinal)

    def graph_loop(self) -> GraphLoop:
        """The recorded loop (made on first use): what ``GraphComposer`` records."""
        if self._graph_loop is None:
            self._graph_loop = GraphLoop(self.kernel, self.bound, self.fixed_steps_per_launch,
                                         self._stream)
        return self._graph_loop

    def build(self) -> float:
        """Allocate the loop's control block and record and instantiate its graph (the eager
        loop records nothing: 0); return the seconds it took, 0 once done."""
        start = time.perf_counter()
        loop = self.graph_loop()
        if self.eager or loop.exec is not None:
            return 0.0
        loop.build()
        return time.perf_counter() - start

    def watch(self, enabled: bool) -> None:
        """Called by the runner before each run: whether a progress bar reads ``live_now``
        (only then is pinned memory allocated and written by the device)."""
        self.graph_loop().watch(enabled)

    def run(self, counters, after_launch) -> None:
        self.build()
        loop = self.graph_loop()
        if not counters.finished:
            run = loop.run_host_loop if self.eager else loop.run
            launches, taken, live = run(counters.steps, counters.max_steps)
            counters.record(launches, taken, live)
            self.steps_per_launch = loop.last_steps_per_launch

    def live_now(self) -> int | None:
        return None if self._graph_loop is None else self._graph_loop.live_now()


def _ordinal_of_array(value) -> int:
    """The device index of an array exporting ``__cuda_array_interface__`` (CuPy's
    ``.device.id``, PyTorch's ``.device.index``; 0 when it does not say)."""
    device = getattr(value, "device", None)
    ordinal = getattr(device, "id", None)
    if ordinal is None:
        ordinal = getattr(device, "index", None)
    return int(ordinal or 0)


class CudaBackend:
    """NVIDIA GPUs through the CUDA driver API: arrays that export
    ``__cuda_array_interface__`` or DLPack (CuPy, PyTorch, JAX) viewed in place, kernels
    compiled by NVRTC, and the loop recorded as one CUDA graph.

    ``compiler`` turns CUDA source into a loadable image (NVRTC's ``compile_source``; the
    tests' emulated GPU passes the source itself). Loaded kernels are kept per backend."""

    family = "cuda"

    def __init__(self, compiler=compile_source):
        self.compiler = compiler
        self._loaded: dict[tuple, CudaKernel] = {}
        self._condition_modules: dict[int, Module] = {}

    def unavailable_reason(self) -> str | None:
        from . import _native
        from .driver import unavailable_reason

        reason = _native.unavailable() if _native.enabled() else unavailable_reason()
        return f"no CUDA device can be used here: {reason}" if reason else None

    def normalize(self, device: str) -> str:
        _, _, ordinal = device.partition(":")
        return f"cuda:{int(ordinal or 0)}"

    def default_device(self) -> str:
        return "cuda:0"

    def device_of(self, value) -> str | None:
        if hasattr(value, "__cuda_array_interface__"):
            return f"cuda:{_ordinal_of_array(value)}"
        if hasattr(value, "__dlpack_device__") and not isinstance(value, np.ndarray):
            kind, ordinal = value.__dlpack_device__()
            if int(kind) in (2, 3, 13):  # kDLCUDA, kDLCUDAHost, kDLCUDAManaged
                return f"cuda:{int(ordinal)}"
        return None

    def view(self, value, device: str):
        from .memory import as_device_array

        return as_device_array(value, device)

    def full(self, shape, value, dtype, device: str):
        from . import _native
        from .memory import device_full

        if _native.enabled():
            return _native.device_full(shape, value, dtype, device)
        return device_full(shape, value, dtype, device)

    def shares_memory(self, a, b) -> bool:
        return a.overlaps(b)

    def to_host(self, array) -> np.ndarray:
        from . import _native
        from .memory import as_device_array, to_host

        array = as_device_array(array, self.device_of(array) or "cuda:0")
        return _native.to_host(array) if _native.enabled() else to_host(array)

    def from_host(self, array: np.ndarray, device: str):
        from .driver import ordinal_of

        cupy = self.array_module()
        with cupy.cuda.Device(ordinal_of(device)):
            return cupy.asarray(array)

    def upload(self, array: np.ndarray, device: str):
        from .memory import device_copy

        return device_copy(array, device)

    def clear(self, array) -> None:
        from . import _native
        from .memory import clear

        (_native.clear if _native.enabled() else clear)(array)

    def compile(self, program: Program, device: str, *, fmad: bool = False) -> CudaKernel:
        from . import _native
        from .driver import ordinal_of

        ordinal = ordinal_of(device)
        native = _native.enabled()  # EAGLE_CUDA_NATIVE=1: loaded by the C++ layer
        key = (program.digest(), ordinal, fmad, native)
        with _lock:
            if key not in self._loaded:
                self._loaded[key] = (_native.Kernel if native else CudaKernel)(
                    program, ordinal, fmad, self.compiler)
            return self._loaded[key]

    def loop(self, program: Program, bound: Bound, steps_per_launch: int | None, *,
             eager: bool, fmad: bool) -> CudaLoop:
        from . import _native

        kernel = self.compile(program, bound.device, fmad=fmad)
        if isinstance(kernel, _native.Kernel):  # the C++ RunLoop
            return _native.Loop(kernel, bound, steps_per_launch, eager)
        return CudaLoop(kernel, bound, steps_per_launch, eager)

    def repeat_while(self, condition, body, max_iterations: int | None, device: str) -> int:
        from . import _native
        from .driver import ordinal_of
        from .loop import condition_module, repeat_while_on_gpu

        if _native.enabled():  # EAGLE_CUDA_NATIVE=1: the C++ repeat_while (_native.py)
            return _native.repeat_while(condition, body, max_iterations, device)

        ordinal = ordinal_of(device)
        with _lock:
            if ordinal not in self._condition_modules:
                self._condition_modules[ordinal] = condition_module(ordinal, self.compiler)
        return repeat_while_on_gpu(condition, body, max_iterations, device,
                                   self._condition_modules[ordinal])

    def array_module(self):
        try:
            import cupy
        except ImportError as exc:
            raise ImportError("plain array code on a GPU needs CuPy: pip install "
                              "'eagle-hawk[cupy]' (or cupy-cuda13x)") from exc
        return cupy

    def synchronize(self, device: str) -> None:
        from . import _native
        from .driver import activate, ordinal_of

        if _native.enabled():
            _native.check(_native.library().eagle_device_synchronize(ordinal_of(device)))
            return
        activate(ordinal_of(device))
        call(driver().cuCtxSynchronize)

    def describe(self) -> list[str]:
        from .driver import device_count, device_info, unavailable_reason

        reason = unavailable_reason()
        lines = [f"GPU: none usable ({reason})"] if reason else []
        for ordinal in range(0 if reason else device_count()):
            d = device_info(ordinal)
            lines.append(
                f"GPU {ordinal}: {d.name}, compute capability {d.compute_capability[0]}."
                f"{d.compute_capability[1]} ({d.arch}), {d.total_memory / 2**30:.1f} GiB, "
                f"driver {d.driver_version[0]}.{d.driver_version[1]}, "
                f"{'WHILE nodes' if d.supports_while_nodes else 'no WHILE nodes (unrolled)'}")
        try:
            from .nvrtc import nvrtc_version

            lines.append(f"NVRTC {'.'.join(map(str, nvrtc_version()))} (CUDA code generation "
                         "works without a GPU)")
        except Exception as exc:
            lines.append(f"NVRTC: not available ({exc})")
        try:
            from .nvrtc import newest_readable_ptx_isa, nvjitlink_version

            linker = nvjitlink_version()
            lines.append(f"nvJitLink {linker[0]}.{linker[1]} (links PTX ISA "
                         f"{newest_readable_ptx_isa(linker)} and older)")
        except Exception as exc:
            lines.append(f"nvJitLink: not available ({exc})")
        return lines
