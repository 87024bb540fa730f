"""The GPU backend: a hawk program compiled for one device, and its loop recorded as one graph.

``compile_program`` emits CUDA C++ (``emit``), compiles it with NVRTC to a cubin for the
device's own architecture (cached on disk), loads it and resolves its kernels, all before any
graph is recorded (a module loaded during capture invalidates the capture).

``GraphLoop`` records ``until_done``'s loop once:

- ``graph-while`` (driver 12.4 or newer): a WHILE node whose body is ``eagle_step`` then
  ``eagle_decide``; the decide kernel sets the node's condition on the device, so one graph
  launch runs the whole loop with no host round trip;
- ``graph-unrolled`` (older drivers): a graph of ``UNROLLED`` (step, decide) pairs replayed from
  the host until the control block says the run is over; a step past the end does nothing.

The control block (``emit.CONTROL_FIELDS``) is uploaded before a run and read back once after
it: ``launches``, ``steps`` and the live count come from device counters.
"""

from __future__ import annotations

import threading
import time

import numpy as np

from hawk.ir import Program, Role

from ..bindings import Bound
from .driver import activate, call, device_info, driver
from .emit import (
    BLOCK_SIZE,
    CONTROL_FIELDS,
    DECIDE_KERNEL,
    START_KERNEL,
    STEP_KERNEL,
    emit_cuda,
)
from .emit import kernel_arguments as _kernel_arguments
from .graph import Graph, add_kernel_node, add_while_node, condition_handle
from .launcher import Launcher, Module, pack
from .memory import DeviceBuffer, HostMapped
from .nvrtc import compile_source
from .stream import Stream

__all__ = ["CudaKernel", "compile_program", "GraphLoop", "DEFAULT_STEPS_PER_LAUNCH", "UNROLLED"]

#: GPU launches are cheap inside a graph; 64 steps per launch keeps each launch short enough
#: that samples finishing early waste little: the spec's oscillator (1000 steps) takes 16.
DEFAULT_STEPS_PER_LAUNCH = 64
UNROLLED = 8
_FIELD = {name: k for k, name in enumerate(CONTROL_FIELDS)}
_DECIDE = ["ptr", "u64", "int", "ptr"]  # control, condition handle, set it?, progress or 0
_loaded: dict[tuple, CudaKernel] = {}
_lock = threading.Lock()


class CudaKernel:
    """One program loaded on one device, with its kernel functions resolved."""

    def __init__(self, program: Program, ordinal: int, fmad: bool):
        self.program = program
        self.ordinal = ordinal
        info = device_info(ordinal)
        self.arch = info.arch
        self.source = emit_cuda(program)
        self.cubin = compile_source(self.source, self.arch, fmad=fmad,
                                    name=f"{program.name}.cu")
        self.module = Module(self.cubin, ordinal)
        self.step = self.module.function(STEP_KERNEL)
        self.decide = self.module.function(DECIDE_KERNEL)
        self.start = self.module.function(START_KERNEL)
        self.while_nodes = info.supports_while_nodes


def compile_program(program: Program, device: str, fmad: bool = False) -> CudaKernel:
    from .driver import ordinal_of

    ordinal = ordinal_of(device)
    key = (program.digest(), ordinal, fmad)
    with _lock:
        if key not in _loaded:
            _loaded[key] = CudaKernel(program, ordinal, fmad)
        return _loaded[key]


def step_arguments(kernel: CudaKernel, bound: Bound, control: DeviceBuffer):
    """The step kernel's argument types and values for ``bound``."""
    types, values = ["long long", "ptr", "ptr"], [bound.n, control.ptr, bound.flags.ptr]
    for _, ctype, (param, component) in _kernel_arguments(kernel.program):
        p = kernel.program.param(param)
        if p.role is Role.PARAM:
            types.append(ctype)
            values.append(bound.uniforms[param].item())
        else:
            array = bound.arrays[param]
            types.append("ptr")
            values.append(array.row(component) if component is not None else array.ptr)
    return types, values


class GraphLoop:
    """``until_done``'s loop for one runner, recorded once as a graph on first use."""

    def __init__(self, kernel: CudaKernel, bound: Bound, steps_per_launch: int | None,
                 progress: bool = True):
        self.kernel = kernel
        self.bound = bound
        self.steps_per_launch = steps_per_launch or DEFAULT_STEPS_PER_LAUNCH
        self.context = activate(kernel.ordinal)
        self.stream = Stream(kernel.ordinal)
        self.control = DeviceBuffer(8 * len(CONTROL_FIELDS), kernel.ordinal)
        self.host_control = np.zeros(len(CONTROL_FIELDS), dtype=np.int64)
        self.mode = "graph-while" if kernel.while_nodes else "graph-unrolled"
        self.graph = None
        self.exec = None
        self._keep = []  # packed arguments the graph's nodes point into
        # (live, steps) written by the decide kernel into pinned host memory, for progress bars
        self.progress = HostMapped(16, kernel.ordinal) if progress else None
        self._progress_ptr = self.progress.device_ptr if progress else 0

    def build(self) -> float:
        """Record and instantiate the graph; return the seconds it took."""
        start = time.perf_counter()
        grid = -(-self.bound.n // BLOCK_SIZE)
        types, values = step_arguments(self.kernel, self.bound, self.control)
        step_args = pack(types, values)
        self.graph = Graph()
        if self.mode == "graph-while":
            _, handle, body = add_while_node(self.graph.handle, self.context)
            decide_args = pack(_DECIDE, [self.control.ptr, int(handle), 1, self._progress_ptr])
            step = add_kernel_node(body, self.kernel.step, grid, BLOCK_SIZE, step_args)
            add_kernel_node(body, self.kernel.decide, 1, 1, decide_args, [step])
        else:
            decide_args = pack(_DECIDE, [self.control.ptr, 0, 0, self._progress_ptr])
            previous = []
            for _ in range(UNROLLED):
                step = add_kernel_node(self.graph.handle, self.kernel.step, grid, BLOCK_SIZE,
                                       step_args, previous)
                previous = [add_kernel_node(self.graph.handle, self.kernel.decide, 1, 1,
                                            decide_args, [step])]
        self._keep = [step_args, decide_args]
        self.exec = self.graph.instantiate()
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
        types, values = step_arguments(self.kernel, self.bound, self.control)
        step_args = pack(types, values)
        start_args = pack(["ptr"], [self.control.ptr])
        start = add_kernel_node(graph, self.kernel.start, 1, 1, start_args, dependencies)
        handle = condition_handle(graph, self.context)
        node, _, body = add_while_node(graph, self.context, [start], handle)
        decide_args = pack(_DECIDE, [self.control.ptr, int(handle), 1, self._progress_ptr])
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
        self.control.upload(c, self.stream)
        return c

    def _finish(self, c: np.ndarray, steps: int) -> tuple[int, int, int]:
        return int(c[_FIELD["launches"]]), int(c[_FIELD["steps"]]) - steps, int(
            c[_FIELD["last_live"]])

    def live_now(self) -> int | None:
        """The live count the device last wrote to host memory (progress only), or None."""
        if self.progress is None:
            return None
        live = int(self.progress.as_array(np.int64, 2)[0])
        return live if live >= 0 else None

    def run(self, steps: int, max_steps: int) -> tuple[int, int, int]:
        """Run from ``steps`` taken until done or ``max_steps``; return (launches, steps taken
        in this run, live samples)."""
        if self.progress is not None:
            self.progress.as_array(np.int64, 2)[:] = -1
        c = self._start(steps, max_steps)
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
        grid = -(-self.bound.n // BLOCK_SIZE)
        if not hasattr(self, "_host_launch"):
            types, values = step_arguments(self.kernel, self.bound, self.control)
            self._host_launch = (
                Launcher(self.kernel.step, types, BLOCK_SIZE, self.kernel.ordinal),
                pack(types, values),
                Launcher(self.kernel.decide, _DECIDE, 1, self.kernel.ordinal),
                pack(_DECIDE, [self.control.ptr, 0, 0, self._progress_ptr]))
        step, step_args, decide, decide_args = self._host_launch
        c = self._start(steps, max_steps)
        while True:
            step.launch_packed(grid, step_args, self.stream)
            decide.launch_packed(1, decide_args, self.stream)
            self.control.download(c, self.stream)
            self.stream.synchronize()  # the host round trip after every launch
            if c[_FIELD["nsteps"]] <= 0:
                break
        return self._finish(c, steps)
