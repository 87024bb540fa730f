"""A stand-in for ``cuda.bindings.driver`` on a machine without a GPU, to run eagle's GPU code
paths for their plumbing: every call first goes to the real binding, which checks its
arguments' types and count before it looks for the driver library (so a wrong call fails here
exactly as it would on a GPU), then answers as a driver would. Device memory is emulated
(allocations are host buffers; copies move bytes); kernels and graphs do nothing, so results
are not computed: tests/test_gpu.py checks those on a real device.

It also keeps what a driver keeps per thread and per stream, so the tests can see what eagle
asked for: each thread's current context (a call that needs one fails with
``CUDA_ERROR_INVALID_CONTEXT`` on a thread that has none, as the driver's does), the flags each
stream was created with, and which stream each event was recorded on and who waited on it.
"""

from __future__ import annotations

import ctypes
import gc
import itertools
import threading
from contextlib import contextmanager

import numpy as np
from cuda.bindings import driver as real

try:
    from cuda.pathfinder._dynamic_libs.load_dl_common import DynamicLibNotFoundError
except ImportError:  # pragma: no cover - older cuda-pathfinder
    DynamicLibNotFoundError = OSError

OK = real.CUresult.CUDA_SUCCESS

#: Calls that act in the calling thread's current context (the rest name their object).
NEEDS_CONTEXT = {
    "cuMemAlloc", "cuMemFree", "cuMemHostAlloc", "cuMemFreeHost", "cuMemcpyHtoD",
    "cuMemcpyDtoH", "cuMemcpyHtoDAsync", "cuMemcpyDtoHAsync", "cuMemsetD8", "cuStreamCreate",
    "cuEventCreate", "cuModuleLoadData", "cuLaunchKernel", "cuGraphInstantiate", "cuGraphLaunch",
    "cuGraphUpload", "cuCtxSynchronize", "cuStreamSynchronize", "cuEventRecord",
    "cuStreamWaitEvent", "cuStreamDestroy", "cuEventDestroy", "cuGraphExecDestroy",
}


class FakeDriver:
    def __init__(self):
        self.calls: list[str] = []
        self.memory: dict[int, ctypes.Array] = {}
        self.capturing: dict[int, int] = {}  # stream -> operations captured
        self.captures_invalidated: set[int] = set()
        self.launches = 0
        self.graph_launches = 0
        self.functions: dict[int, bytes] = {}  # handle -> kernel name
        self.capture_events: set[int] = set()
        self.stream_flags: dict[int, int] = {}  # stream -> cuStreamCreate flags
        self.event_stream: dict[int, int] = {}  # event -> stream it was last recorded on
        self.waits: list[tuple[int, int]] = []  # (waiting stream, stream the event was on)
        self.context_errors: list[str] = []  # calls refused for want of a current context
        self.captured_streams: list[int] = []  # every stream a capture began on
        self.graph_launch_streams: list[int] = []  # the stream of every cuGraphLaunch
        self._current = threading.local()  # .stack: this thread's contexts, innermost last
        self._checking = threading.local()  # .active: inside a real binding's call
        self._ids = itertools.count(1)

    def __getattr__(self, name):
        attribute = getattr(real, name)
        if not name.startswith("cu") or not callable(attribute):
            return attribute
        fake = getattr(self, "_" + name, None)

        def call(*args):
            # The real binding's argument checks. With no driver, each call tries to load
            # libcuda under cuda-pathfinder's lock; a finaliser (DeviceBuffer.__del__) that the
            # garbage collector runs inside that load calls the driver again on this thread,
            # and waiting for the same lock would hang the process: a nested call skips them.
            if not getattr(self._checking, "active", False):
                self._checking.active = True
                try:
                    attribute(*args)
                except DynamicLibNotFoundError:
                    pass
                except RuntimeError as exc:  # no driver: cuda-bindings 13.5 ("... driver ...")
                    message = str(exc).lower()  # and 13.0 ("Failed to dlopen libcuda.so.1")
                    if "driver" not in message and "libcuda" not in message:
                        raise
                finally:
                    self._checking.active = False
            self.calls.append(name)
            if name in NEEDS_CONTEXT and not self._stack():
                self.context_errors.append(name)
                return (real.CUresult.CUDA_ERROR_INVALID_CONTEXT,)
            return fake(*args) if fake else (OK,)

        call.__name__ = name
        return call

    def _new(self) -> int:
        return next(self._ids)

    def _allocate(self, nbytes: int) -> int:
        buffer = (ctypes.c_char * max(int(nbytes), 1))()
        address = ctypes.addressof(buffer)
        self.memory[address] = buffer
        return address

    # devices and contexts
    def _cuDeviceGetCount(self):
        return OK, 1

    def _cuDeviceGet(self, ordinal):
        return OK, real.CUdevice(ordinal)

    def _cuDeviceGetAttribute(self, attribute, device):
        a = real.CUdevice_attribute
        return OK, {a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: 9,
                    a.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: 0,
                    a.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: 132}.get(attribute, 1)

    def _cuDeviceGetName(self, length, device):
        return OK, b"Fake GPU (no device)".ljust(length, b"\0")

    def _cuDriverGetVersion(self):
        return OK, 13000

    def _cuDeviceTotalMem(self, device):
        return OK, 1 << 37

    def _cuDevicePrimaryCtxRetain(self, device):
        return OK, real.CUcontext(self._new())

    def _stack(self) -> list:
        if not hasattr(self._current, "stack"):
            self._current.stack = []
        return self._current.stack

    def _cuCtxSetCurrent(self, context):
        stack = self._stack()
        if stack:
            stack[-1] = int(context)
        else:
            stack.append(int(context))
        return (OK,)

    def _cuCtxPushCurrent(self, context):
        self._stack().append(int(context))
        return (OK,)

    def _cuCtxPopCurrent(self):
        stack = self._stack()
        return OK, real.CUcontext(stack.pop() if stack else 0)

    def _cuCtxGetCurrent(self):
        stack = self._stack()
        return OK, real.CUcontext(stack[-1] if stack else 0)

    def _cuOccupancyMaxActiveBlocksPerMultiprocessor(self, function, block, shared):
        return OK, 8

    def _cuFuncGetAttribute(self, attribute, function):
        if attribute == real.CUfunction_attribute.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
            return OK, self.local_bytes(function)
        return OK, 0

    def local_bytes(self, function) -> int:
        """A kernel's local memory per thread: none (a test overrides this)."""
        return 0

    # memory
    def _cuMemAlloc(self, nbytes):
        if self.capturing:  # thread-local capture mode: allocating breaks the capture
            self.captures_invalidated.update(self.capturing)
            return real.CUresult.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, None
        return OK, real.CUdeviceptr(self._allocate(nbytes))

    def _cuMemFree(self, pointer):
        self.memory.pop(int(pointer), None)
        return (OK,)

    def _cuMemHostAlloc(self, nbytes, flags):
        return OK, self._allocate(nbytes)

    def _cuMemHostGetDevicePointer(self, pointer, flags):
        return OK, real.CUdeviceptr(int(pointer))

    def _copy(self, destination, source, nbytes):
        ctypes.memmove(int(destination), int(source), int(nbytes))
        return (OK,)

    def _cuMemcpyHtoD(self, destination, source, nbytes):
        return self._copy(destination, source, nbytes)

    def _cuMemcpyHtoDAsync(self, destination, source, nbytes, stream):
        return self._copy(destination, source, nbytes)

    def _cuMemcpyDtoH(self, destination, source, nbytes):
        return self._copy(destination, source, nbytes)

    def _cuMemcpyDtoHAsync(self, destination, source, nbytes, stream):
        return self._copy(destination, source, nbytes)

    # streams, events, capture
    def _cuStreamCreate(self, flags):
        handle = self._new()
        self.stream_flags[handle] = int(flags)
        return OK, real.CUstream(handle)

    def _cuEventCreate(self, flags):
        return OK, real.CUevent(self._new())

    def _cuStreamBeginCapture(self, stream, mode):
        self.capturing[int(stream)] = 0
        self.captured_streams.append(int(stream))
        return (OK,)

    def _cuStreamIsCapturing(self, stream):
        s = real.CUstreamCaptureStatus
        if int(stream) in self.captures_invalidated:
            return OK, s.CU_STREAM_CAPTURE_STATUS_INVALIDATED
        active = int(stream) in self.capturing
        return OK, (s.CU_STREAM_CAPTURE_STATUS_ACTIVE if active
                    else s.CU_STREAM_CAPTURE_STATUS_NONE)

    def _cuStreamGetCaptureInfo(self, stream):
        _, status = self._cuStreamIsCapturing(stream)
        return OK, status, 1, real.CUgraph(self._new()), [], [], 0

    def _cuEventRecord(self, event, stream):
        if int(stream) in self.capturing:
            self.capture_events.add(int(event))
        self.event_stream[int(event)] = int(stream)
        return (OK,)

    def _cuStreamWaitEvent(self, stream, event, flags):
        if int(event) in self.capture_events:  # the stream joins the capture (a fork)
            self.capturing.setdefault(int(stream), 0)
        self.waits.append((int(stream), self.event_stream.get(int(event), -1)))
        return (OK,)

    def _cuStreamEndCapture(self, stream):
        self.capturing.clear()  # the origin's end also ends every stream forked from it
        self.capture_events.clear()
        if int(stream) in self.captures_invalidated:
            self.captures_invalidated.discard(int(stream))
            return real.CUresult.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, None
        return OK, real.CUgraph(self._new())

    def _cuStreamSynchronize(self, stream):
        if int(stream) in self.capturing:  # what the driver does: it breaks the capture
            self.captures_invalidated.add(int(stream))
            return (real.CUresult.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED,)
        return (OK,)

    def _cuGraphGetNodes(self, graph, count=0):
        captured = sum(self.capturing.values())
        return OK, [], captured

    # kernels and graphs
    def _cuModuleLoadData(self, image):
        return OK, real.CUmodule(self._new())

    def _cuModuleGetFunction(self, module, name):
        handle = self._new()
        self.functions[handle] = bytes(name)
        return OK, real.CUfunction(handle)

    def _cuLaunchKernel(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        self.launches += 1
        if self.functions.get(int(function)) == b"eagle_decide" and \
                int(stream) not in self.capturing:
            # Play a decide kernel that ends the run: nsteps (the control's first field) = 0.
            argument = ctypes.cast(int(params), ctypes.POINTER(ctypes.c_void_p))[0]
            control = ctypes.cast(argument, ctypes.POINTER(ctypes.c_uint64))[0]
            ctypes.cast(control, ctypes.POINTER(ctypes.c_int64))[0] = 0
        if int(stream) in self.capturing:
            self.capturing[int(stream)] += 1
        return (OK,)

    def _cuGraphCreate(self, flags):
        return OK, real.CUgraph(self._new())

    def _cuGraphAddKernelNode(self, graph, dependencies, count, params):
        return OK, real.CUgraphNode(self._new())

    def _cuGraphAddNode(self, graph, dependencies, data, count, params):
        return OK, real.CUgraphNode(self._new())

    def _cuGraphAddChildGraphNode(self, graph, dependencies, count, child):
        return OK, real.CUgraphNode(self._new())

    def _cuGraphConditionalHandleCreate(self, graph, context, default, flags):
        return OK, real.CUgraphConditionalHandle(self._new())

    def _cuGraphInstantiate(self, graph, flags):
        return OK, real.CUgraphExec(self._new())

    def _cuGraphLaunch(self, executable, stream):
        self.graph_launches += 1
        self.graph_launch_streams.append(int(stream))
        return (OK,)


@contextmanager
def installed(driver: FakeDriver, compiler=None):
    """Make ``driver`` the one eagle's CUDA layer talks to, and a fresh CUDA backend (compiling
    with ``compiler``, NVRTC by default) the one serving ``cuda`` devices."""
    from eagle.backend import registered
    from eagle.cuda.backend import CudaBackend
    from eagle.cuda.driver import use_driver

    backend = CudaBackend() if compiler is None else CudaBackend(compiler)
    with use_driver(driver), registered(backend):
        try:
            yield driver
        finally:
            # what a test made on this driver is freed by it, here: a finaliser that the
            # garbage collector runs later would call the next test's driver, maybe from one
            # of its threads, where that driver has no context current
            gc.collect()


class GpuArray:
    """A copy of a host array in the stand-in's device memory, exported like CuPy exports
    one; ``get()`` copies it back."""

    def __init__(self, driver: FakeDriver, host):
        host = np.ascontiguousarray(host)
        self.address = driver._allocate(host.nbytes)
        self.shape, self.dtype = host.shape, host.dtype
        driver._copy(self.address, host.ctypes.data, host.nbytes)
        self.__cuda_array_interface__ = dict(data=(self.address, False), shape=host.shape,
                                             typestr=host.dtype.str, strides=None, version=3,
                                             stream=None)

    def get(self) -> np.ndarray:
        out = np.empty(self.shape, self.dtype)
        ctypes.memmove(out.ctypes.data, self.address, out.nbytes)
        return out
