"""The native layer (``libeagle_cuda``, ``native/``) from Python: ctypes over its C facade.

``native/include/eagle/cuda/c_api.h`` is declared here function by function (``PROTOTYPES``; a
test compares the two). ``library()`` finds and loads the library once: ``$EAGLE_CUDA_LIBRARY``,
else the installed ``eagle-hawk-cuda`` distribution (``eagle_cuda_native.library_path()``), else
a checkout's ``build/native/install`` (``make native``). ``check(rc)`` turns a facade status
into the exception the Python layer raises today (``CudaError`` with the ``CUresult`` name and
the call, ``BackendUnavailable``, ``CaptureError``, ``ArtifactError``, ``BindingTypeError``).

The switch: with ``EAGLE_CUDA_NATIVE=1`` (read once, when the GPU path first asks;
``use_native_door`` chooses for a block instead, without writing the environment),
``GraphPipeline`` captures and replays through the C++
``StreamCapturer``/``Graph``/``GraphExec``, ``LoadedVector`` loads and launches through the
C++ ``LoadedVector`` (its bindings still checked by Python's ``bind``) and ``repeat_while`` on a
GPU array records its body and runs the C++ ``repeat_while``, ``GraphComposer`` forks and
joins its pipelines' streams through C++ events, and ``until_done`` on a GPU runs its graph
loop as the C++ ``RunLoop`` (``Kernel`` and ``Loop`` below: the kernel compiled as before, loaded
and run by the C++ layer; ``eager=True``, ``stream=``, ``run(progress=True)`` and a runner
inside a ``GraphComposer`` too). NVRTC stays in Python. The default stays on NVIDIA's
``cuda.bindings``, and so does the default, until a device
run has passed with the native layer (``docs/native.md``). ``python -m eagle info`` names the
library and why the GPU is or is not usable through it.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import threading
from pathlib import Path

from ..backend import DeviceLoop
from ..errors import ArtifactError, BackendUnavailable, BindingTypeError, CaptureError, CudaError
from ..paths import shown

__all__ = ["ABI_VERSION", "PROTOTYPES", "library_path", "library", "check", "describe",
           "enabled", "Stream", "Event", "current_stream", "wait_for_producers",
           "StreamCapturer", "Graph", "GraphExec", "Loaded", "Buffer", "repeat_while", "Kernel",
           "Loop", "device_full", "unavailable", "clear", "to_host", "use_native_door"]

ABI_VERSION = 1


class Error(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_int), ("cu_result", ctypes.c_int), ("name", ctypes.c_char_p),
                ("call", ctypes.c_char_p), ("message", ctypes.c_char_p)]


class Value(ctypes.Structure):
    _fields_ = [("is_float", ctypes.c_int), ("f64", ctypes.c_double), ("i64", ctypes.c_int64)]


_p, _i, _sz, _u64, _i64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_uint64, \
    ctypes.c_int64
_pp, _str, _strs = ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)
_ip = ctypes.POINTER(ctypes.c_int)

#: name: (restype, argtypes), in c_api.h's order
PROTOTYPES = {
    "eagle_cuda_abi_version": (_i, []),
    "eagle_cuda_version": (_str, []),
    "eagle_last_error": (ctypes.POINTER(Error), []),
    "eagle_unavailable_reason": (_i, [_str, _sz]),
    "eagle_driver_version": (_i, [_ip]),
    "eagle_device_count": (_i, [_ip]),
    "eagle_device_info": (_i, [_i, _str, _sz, _ip, _ip, _ip]),
    "eagle_device_synchronize": (_i, [_i]),
    "eagle_stream_create": (_i, [_i, _i, _pp]),
    "eagle_stream_wrap": (_i, [_u64, _i, _pp]),
    "eagle_stream_current": (_i, [_i, _pp]),
    "eagle_stream_handle": (_u64, [_p]),
    "eagle_stream_synchronize": (_i, [_p]),
    "eagle_stream_push_current": (_i, [_p]),
    "eagle_stream_pop_current": (_i, [_i]),
    "eagle_stream_wait": (_i, [_p, _p]),
    "eagle_stream_capture_status": (_i, [_p, _ip]),
    "eagle_event_create": (_i, [_i, _pp]),
    "eagle_event_record": (_i, [_p, _p]),
    "eagle_capture_begin": (_i, [_p, _i, _pp]),
    "eagle_capture_status": (_i, [_p, _ip, ctypes.POINTER(_sz)]),
    "eagle_capture_end": (_i, [_p, _pp]),
    "eagle_graph_node_count": (_i, [_p, ctypes.POINTER(_sz)]),
    "eagle_graph_instantiate": (_i, [_p, _pp]),
    "eagle_exec_upload": (_i, [_p, _p]),
    "eagle_exec_launch": (_i, [_p, _p, _u64]),
    "eagle_repeat_while": (_i, [_i, _p, _u64, _str, _u64, _i64, _pp]),
    "eagle_module_load": (_i, [_i, _p, _sz, _pp]),
    "eagle_module_max_blocks": (_i, [_p, _str, ctypes.c_uint, _ip]),
    "eagle_loop_create": (_i, [_p, _str, _str, _i64, ctypes.c_uint, _i64, _i64, _i64, _i64, _pp]),
    "eagle_loop_control": (_u64, [_p]),
    "eagle_loop_set_args": (_i, [_p, _ip, ctypes.POINTER(Value), _sz]),
    "eagle_loop_build": (_i, [_p]),
    "eagle_loop_run": (_i, [_p, _i64, _i64, _i, _p, ctypes.POINTER(_i64),
                            ctypes.POINTER(_i64), ctypes.POINTER(_i64), ctypes.POINTER(_i64)]),
    "eagle_loop_prepare_for_capture": (_i, [_p, _i64, _i64]),
    "eagle_loop_append_to": (_i, [_p, _p]),
    "eagle_loop_read_counters": (_i, [_p, ctypes.POINTER(_i64), ctypes.POINTER(_i64),
                                      ctypes.POINTER(_i64)]),
    "eagle_loop_set_progress": (_i, [_p, _u64]),
    "eagle_hostmapped_alloc": (_i, [_i, _sz, _pp]),
    "eagle_hostmapped_host": (_p, [_p]),
    "eagle_hostmapped_device": (_u64, [_p]),
    "eagle_launcher_create": (_i, [_p, _str, _ip, _sz, ctypes.c_uint, _pp]),
    "eagle_launcher_launch": (_i, [_p, ctypes.c_uint, ctypes.POINTER(Value), _sz, _p]),
    "eagle_buffer_alloc": (_i, [_i, _sz, _pp]),
    "eagle_buffer_ptr": (_u64, [_p]),
    "eagle_buffer_upload": (_i, [_p, _p, _sz]),
    "eagle_buffer_download": (_i, [_p, _p, _sz]),
    "eagle_memory_zero": (_i, [_i, _u64, _sz]),
    "eagle_memory_to_host": (_i, [_i, _p, _u64, _sz]),
    "eagle_artifact_check": (_i, [_str]),
    "eagle_loaded_open": (_i, [_str, _i, _pp]),
    "eagle_loaded_control": (_u64, [_p]),
    "eagle_loaded_launch_values": (_i, [_p, ctypes.c_uint, ctypes.POINTER(Value), _sz, _p]),
    "eagle_loaded_run": (_i, [_p, _strs, ctypes.POINTER(_u64), ctypes.POINTER(_i64), _ip, _sz,
                              _strs, ctypes.POINTER(ctypes.c_double), _sz, _i64, _i64,
                              ctypes.POINTER(_i64), ctypes.POINTER(_i64),
                              ctypes.POINTER(_i64)]),
    "eagle_release": (None, [_p]),
}

_KINDS = {2: BackendUnavailable, 3: CaptureError, 4: ArtifactError, 5: BindingTypeError}


def library_path() -> Path | None:
    """Where ``libeagle_cuda.so`` is (see the module docstring), or None."""
    if os.environ.get("EAGLE_CUDA_LIBRARY"):
        return Path(os.environ["EAGLE_CUDA_LIBRARY"])
    try:
        import eagle_cuda_native
    except ImportError:
        checkout = Path(__file__).resolve().parents[3] / "build" / "native" / "install" / "lib"
        path = checkout / "libeagle_cuda.so"
        return path if path.exists() else None
    return eagle_cuda_native.library_path()


@functools.lru_cache(maxsize=1)
def library() -> ctypes.CDLL:
    """The loaded library with every prototype declared; ``BackendUnavailable`` saying what to
    install when it is missing or of another ABI."""
    path = library_path()
    if path is None or not path.exists():
        raise BackendUnavailable("eagle's native layer (libeagle_cuda) is not installed: "
                                 "pip install eagle-hawk-cuda, or make native in a checkout")
    lib = ctypes.CDLL(str(path))
    for name, (restype, argtypes) in PROTOTYPES.items():
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes
    abi = lib.eagle_cuda_abi_version()
    if abi != ABI_VERSION:
        raise BackendUnavailable(f"{path} has ABI {abi}; this eagle needs ABI {ABI_VERSION}: "
                                 "install the eagle-hawk-cuda of eagle's own version")
    return lib


def check(rc: int) -> None:
    """Raise the eagle error a facade status ``rc`` stands for (nothing for 0)."""
    if rc == 0:
        return
    error = library().eagle_last_error().contents
    name, call, message = ((s or b"").decode() for s in (error.name, error.call, error.message))
    if rc == 1:
        raise CudaError(name, call)
    raise _KINDS.get(rc, RuntimeError)(message)


def describe() -> list[str]:
    """``python -m eagle info``'s lines: which native library, and whether a GPU is usable
    through it (and why not)."""
    try:
        lib = library()
    except BackendUnavailable as exc:
        return [f"native layer: none ({exc})"]
    except OSError as exc:
        return [f"native layer: {shown(library_path())} does not load ({exc})"]
    reason = ctypes.create_string_buffer(1024)
    check(lib.eagle_unavailable_reason(reason, len(reason)))
    why = reason.value.decode()
    driver = os.environ.get("EAGLE_LIBCUDA") or "libcuda.so.1"
    head = (f"native layer: libeagle_cuda {lib.eagle_cuda_version().decode()} (ABI "
            f"{lib.eagle_cuda_abi_version()}) at {shown(library_path())}")
    if why:
        return [head, f"  through it, GPU: none usable ({why})"]
    version = ctypes.c_int()
    check(lib.eagle_driver_version(ctypes.byref(version)))
    return [head, f"  through it, GPU: usable ({driver}, driver {version.value // 1000}."
                  f"{version.value % 1000 // 10}; the Python GPU path does not use it yet)"]


_door_lock = threading.Lock()
_from_environment: list[bool] = []  # EAGLE_CUDA_NATIVE == "1", read once, at first use
_selected: list[bool] = []  # use_native_door's choices, innermost last


def enabled() -> bool:
    """Whether the native layer serves the GPU path: the innermost ``use_native_door`` in
    force, else ``EAGLE_CUDA_NATIVE=1``, read once, at the first call (see the module
    docstring). Read once because one operation asks several times (allocate, compile, copy
    back): a door that followed ``os.environ`` at each call would change under a live run
    when any thread set the variable, handing one door's memory to the other."""
    with _door_lock:
        if _selected:
            return _selected[-1]
        if not _from_environment:
            _from_environment.append(os.environ.get("EAGLE_CUDA_NATIVE") == "1")
        return _from_environment[0]


@contextlib.contextmanager
def use_native_door(on: bool = True):
    """Inside the block the GPU path goes through the native layer (``on``) or through
    ``cuda.bindings`` (not ``on``), whatever ``EAGLE_CUDA_NATIVE`` says, in every thread; no
    environment variable is written (a ``setenv`` from Python races every ``getenv`` in C:
    glibc's environment is not thread-safe). Blocks nest."""
    with _door_lock:
        _selected.append(bool(on))
    try:
        yield
    finally:
        with _door_lock:
            _selected.pop()


class _Handle:
    """One facade object, released (from any thread) when the Python object goes."""

    _ptr = None

    def __del__(self):
        if self._ptr:
            try:
                library().eagle_release(self._ptr)
            except Exception:  # noqa: BLE001 (interpreter shutdown: the library may be gone)
                pass
            self._ptr = None


def _out() -> ctypes.c_void_p:
    return ctypes.c_void_p()


class Stream(_Handle):
    """``eagle::cuda::Stream``: a new stream on device ``ordinal`` (blocking unless asked)."""

    def __init__(self, ordinal: int = 0, non_blocking: bool = False):
        out = _out()
        check(library().eagle_stream_create(ordinal, int(non_blocking), ctypes.byref(out)))
        self._ptr, self.ordinal, self.non_blocking = out, ordinal, non_blocking

    @classmethod
    def wrap(cls, handle: int, ordinal: int = 0) -> Stream:
        """Another library's stream ``handle`` (or CUDA's 1 and 2), borrowed: never destroyed."""
        out = _out()
        check(library().eagle_stream_wrap(int(handle), ordinal, ctypes.byref(out)))
        stream = cls.__new__(cls)
        stream._ptr, stream.ordinal, stream.non_blocking = out, ordinal, None
        return stream

    @property
    def handle(self) -> int:
        return library().eagle_stream_handle(self._ptr)

    def synchronize(self) -> None:
        check(library().eagle_stream_synchronize(self._ptr))

    def wait(self, event: Event) -> None:
        """Later work on this stream waits for ``event`` (inside a capture: a fork or a join)."""
        check(library().eagle_stream_wait(self._ptr, event._ptr))

    def capturing(self) -> bool:
        """Whether a capture is recording this stream's work (an invalidated one too)."""
        status = ctypes.c_int()
        check(library().eagle_stream_capture_status(self._ptr, ctypes.byref(status)))
        return status.value != 0

    @contextlib.contextmanager
    def as_current(self):
        """This stream is the C++ layer's current stream on this thread inside the block."""
        check(library().eagle_stream_push_current(self._ptr))
        try:
            yield self
        finally:
            check(library().eagle_stream_pop_current(self.ordinal))


class Event(_Handle):
    """``eagle::cuda::Event`` (no timing): ``record(stream)``, then ``stream.wait(event)``."""

    def __init__(self, ordinal: int = 0):
        out = _out()
        check(library().eagle_event_create(ordinal, ctypes.byref(out)))
        self._ptr = out

    def record(self, stream: Stream) -> Event:
        check(library().eagle_event_record(self._ptr, stream._ptr))
        return self


def wait_for_producers(stream: Stream, arrays) -> int:
    """``memory.wait_for_producers`` over the C++ layer: ``stream`` waits, on the device, for
    the work queued on each producer stream the ``arrays`` declare; nothing while ``stream`` is
    being captured (a capture cannot wait on outside work; the graph's launch is ordered)."""
    from .memory import producer_streams

    producers = producer_streams(stream.handle, arrays)
    if not producers or stream.capturing():
        return 0
    for producer in producers:
        stream.wait(Event(stream.ordinal).record(Stream.wrap(producer, stream.ordinal)))
    return len(producers)


def current_stream(ordinal: int = 0) -> Stream:
    """This thread's current stream in the C++ layer (a capture's stream while one is open)."""
    out = _out()
    check(library().eagle_stream_current(ordinal, ctypes.byref(out)))
    stream = Stream.__new__(Stream)
    stream._ptr, stream.ordinal, stream.non_blocking = out, ordinal, None
    return stream


class GraphExec(_Handle):
    def __init__(self, ptr, graph):
        self._ptr, self._graph = ptr, graph

    def upload(self, stream: Stream) -> None:
        check(library().eagle_exec_upload(self._ptr, stream._ptr))

    def launch(self, stream: Stream, times: int = 1) -> None:
        check(library().eagle_exec_launch(self._ptr, stream._ptr, times))


class Graph(_Handle):
    def __init__(self, ptr):
        self._ptr = ptr

    def node_count(self) -> int:
        count = ctypes.c_size_t()
        check(library().eagle_graph_node_count(self._ptr, ctypes.byref(count)))
        return count.value

    def instantiate(self, ordinal: int = 0) -> GraphExec:
        out = _out()
        check(library().eagle_graph_instantiate(self._ptr, ctypes.byref(out)))
        return GraphExec(out, self)


class StreamCapturer(_Handle):
    """``eagle::cuda::StreamCapturer`` with ``eagle.cuda.stream.StreamCapturer``'s face: the
    ``with`` block records the work issued on ``stream`` (made the current stream, in C++, for
    the block); ``graph`` holds the ``Graph`` after a clean exit; a block that raised, or a
    capture that was invalidated, leaves no graph and a usable stream."""

    def __init__(self, stream: Stream):
        self.stream = stream
        self.graph = None

    def __enter__(self) -> StreamCapturer:
        out = _out()
        check(library().eagle_capture_begin(self.stream._ptr, 1, ctypes.byref(out)))  # thread-local
        self._ptr = out
        return self

    def _status(self) -> tuple[int, int]:
        status, nodes = ctypes.c_int(), ctypes.c_size_t()
        check(library().eagle_capture_status(self._ptr, ctypes.byref(status),
                                             ctypes.byref(nodes)))
        return status.value, nodes.value

    def status(self) -> str:
        """``"active"``, ``"invalidated"`` or ``"none"``."""
        return {0: "none", 1: "active", 2: "invalidated"}[self._status()[0]]

    def node_count(self) -> int:
        """How many operations the capture has recorded so far (-1 once it is not active)."""
        status, nodes = self._status()
        return nodes if status == 1 else -1

    def __exit__(self, kind, error, traceback) -> bool:
        if kind is not None:  # the C++ destructor ends the capture and drops the graph
            library().eagle_release(self._ptr)
            self._ptr = None
            return False
        invalidated = self.status() == "invalidated"
        out = _out()
        rc = library().eagle_capture_end(self._ptr, ctypes.byref(out))
        library().eagle_release(self._ptr)
        self._ptr = None
        if invalidated:
            raise CaptureError("the capture was invalidated: nothing inside a captured step may "
                               "allocate device memory or synchronise")
        check(rc)
        self.graph = Graph(out)
        return False


def _value(ctype: str, value) -> Value:
    if ctype in ("double", "float"):
        return Value(1, float(value), 0)
    value = int(value)
    return Value(0, 0.0, value - (1 << 64) if value >= 1 << 63 else value)


class Loaded(_Handle):
    """``eagle::cuda::LoadedVector``: the artifact at ``path`` loaded on device ``ordinal``
    (the C++ reader's checks, the driver's JIT for PTX)."""

    def __init__(self, path, ordinal: int = 0):
        out = _out()
        check(library().eagle_loaded_open(str(path).encode(), ordinal, ctypes.byref(out)))
        self._ptr = out

    @property
    def control(self) -> int:
        """The device address of the control block its launches pass."""
        return library().eagle_loaded_control(self._ptr)

    def launch(self, grid: int, types: list[str], values: list) -> None:
        """One launch of ``values`` (in the sidecar's argument order) on the current stream."""
        array = (Value * len(values))(*[_value(t, v) for t, v in zip(types, values, strict=True)])
        check(library().eagle_loaded_launch_values(self._ptr, grid, array, len(values), None))


class Buffer(_Handle):
    """``eagle::cuda::DeviceBuffer`` of ``nbytes``; ``ptr`` is its device address."""

    def __init__(self, nbytes: int, ordinal: int = 0):
        out = _out()
        check(library().eagle_buffer_alloc(ordinal, nbytes, ctypes.byref(out)))
        self._ptr, self.nbytes = out, nbytes

    @property
    def ptr(self) -> int:
        return library().eagle_buffer_ptr(self._ptr)

    def upload(self, host) -> None:
        check(library().eagle_buffer_upload(self._ptr, host.ctypes.data, host.nbytes))

    def download(self, host) -> None:
        check(library().eagle_buffer_download(self._ptr, host.ctypes.data, host.nbytes))


def repeat_while(condition, body, max_iterations: int | None, device: str) -> int:
    """``eagle.repeat_while`` on a GPU array over the C++ layer: ``body`` recorded once on a
    non-blocking stream, then ``eagle::cuda::repeat_while``'s graph launched once on a blocking
    one; the iterations read back at the end."""
    import numpy as np

    from .driver import ordinal_of
    from .repeat import CONDITION_TYPES, condition_flag, record_body

    ordinal = ordinal_of(device)
    flag, key = condition_flag(condition, device)
    graph = record_body(body, StreamCapturer, Stream(ordinal, non_blocking=True))
    counter = Buffer(8, ordinal)
    iterations = np.zeros(1, np.int64)
    counter.upload(iterations)
    out = _out()
    check(library().eagle_repeat_while(ordinal, graph._ptr, flag.ptr,
                                       CONDITION_TYPES[key][0].encode(), counter.ptr,
                                       -1 if max_iterations is None else max_iterations,
                                       ctypes.byref(out)))
    executable = GraphExec(out, graph)
    stream = Stream(ordinal)  # blocking: ordered with the user's default-stream work
    wait_for_producers(stream, [flag])
    executable.launch(stream)
    stream.synchronize()
    counter.download(iterations)
    return int(iterations[0])


def unavailable() -> str | None:
    """Why no GPU is usable through the native layer, or None."""
    try:
        lib = library()
    except BackendUnavailable as exc:
        return str(exc)
    reason = ctypes.create_string_buffer(1024)
    check(lib.eagle_unavailable_reason(reason, len(reason)))
    return reason.value.decode() or None


def device_full(shape, value, dtype, device: str):
    """A new device array of ``shape`` filled with ``value`` (native memory)."""
    import numpy as np

    from .driver import ordinal_of
    from .memory import DeviceArray

    host = np.full(shape, value, dtype=dtype)
    buffer = Buffer(max(host.nbytes, 1), ordinal_of(device))
    buffer.upload(host)
    return DeviceArray(buffer.ptr, tuple(host.shape), host.dtype, host.strides, False, device,
                       buffer, None)


_ARG_TYPES = {"double": 0, "float": 1, "long long": 2, "int": 3, "unsigned int": 4, "u64": 5,
              "unsigned long long": 5, "bool": 6, "ptr": 7}


class Kernel:
    """One program compiled (by ``compiler``, as ``CudaKernel`` does) and loaded on device
    ``ordinal`` by the C++ layer, with the occupancy marks of eagle's launch schedule."""

    def __init__(self, program, ordinal: int, fmad: bool, compiler):
        from .emit import BLOCK_SIZE, MIN_BLOCKS_PER_SM, STEP_KERNEL, emit_cuda

        self.program, self.ordinal = program, ordinal
        name, sm = ctypes.create_string_buffer(256), ctypes.c_int()
        processors, while_nodes = ctypes.c_int(), ctypes.c_int()
        check(library().eagle_device_info(ordinal, name, len(name), ctypes.byref(sm),
                                          ctypes.byref(processors), ctypes.byref(while_nodes)))
        self.arch, self.while_nodes = f"sm_{sm.value}", bool(while_nodes.value)
        from .nvrtc import check_driver_loads, compile_source, nvrtc_version

        if compiler is compile_source:  # the toolchain policy, as CudaKernel asks it
            version = ctypes.c_int()
            check(library().eagle_driver_version(ctypes.byref(version)))
            check_driver_loads(nvrtc_version(), "NVRTC",
                               (version.value // 1000, version.value % 1000 // 10))
        self.source = emit_cuda(program, MIN_BLOCKS_PER_SM)
        image = compiler(self.source, self.arch, fmad=fmad, name=f"{program.name}.cu")
        out = _out()
        check(library().eagle_module_load(ordinal, image, len(image), ctypes.byref(out)))
        self._module = _Module(out)
        blocks = ctypes.c_int()
        check(library().eagle_module_max_blocks(out, STEP_KERNEL.encode(), BLOCK_SIZE,
                                                ctypes.byref(blocks)))
        self.full = max(blocks.value, 1) * processors.value * BLOCK_SIZE
        self.spread = processors.value * BLOCK_SIZE


class _Module(_Handle):
    def __init__(self, ptr):
        self._ptr = ptr


class _RunLoop(_Handle):
    def __init__(self, ptr):
        self._ptr = ptr


class Loop(DeviceLoop):
    """``until_done``'s loop on a GPU over the C++ ``RunLoop`` (an ``eagle.backend.DeviceLoop``):
    ``WHILE { eagle_step ; eagle_decide }`` recorded once, one graph launch per ``run()``, the
    counters read back once (what ``CudaLoop`` does over ``cuda.bindings``)."""

    sees_launches = False
    threads = 0

    def __init__(self, kernel: Kernel, bound, steps_per_launch: int | None, eager: bool):
        from .arguments import INITIAL_STEPS_PER_LAUNCH

        if not kernel.while_nodes and not eager:
            raise BackendUnavailable("the native layer's GPU loop needs WHILE graph nodes "
                                     "(a CUDA 12.4 driver or newer)")
        self.kernel, self.bound = kernel, bound
        self.fixed = steps_per_launch is not None
        self.steps_per_launch = steps_per_launch or INITIAL_STEPS_PER_LAUNCH
        self.eager = eager
        self.mode = "host-loop" if eager else "graph-while"
        self._loop = None
        self._built = False
        self._stream = None
        self._progress, self._watching = None, False

    def build(self) -> float:
        """Allocate the control block and record and instantiate the graph (the eager loop
        records nothing); return the seconds it took, 0 once done."""
        import time

        if self._built:
            return 0.0
        start = time.perf_counter()
        self._create()
        self._built = True
        if self.eager:
            return 0.0
        check(library().eagle_loop_build(self._loop._ptr))
        return time.perf_counter() - start

    def _create(self) -> None:
        """The C++ RunLoop with its control block and the step's arguments (once)."""
        from types import SimpleNamespace

        from .arguments import MAX_STEPS_PER_LAUNCH, step_arguments
        from .emit import BLOCK_SIZE, DECIDE_KERNEL, STEP_KERNEL

        if self._loop is not None:
            return
        out = _out()
        check(library().eagle_loop_create(
            self.kernel._module._ptr, STEP_KERNEL.encode(), DECIDE_KERNEL.encode(),
            self.bound.n, BLOCK_SIZE, self.steps_per_launch,
            0 if self.fixed else MAX_STEPS_PER_LAUNCH, self.kernel.full, self.kernel.spread,
            ctypes.byref(out)))
        loop = _RunLoop(out)
        control = SimpleNamespace(ptr=library().eagle_loop_control(out))
        types, values = step_arguments(self.kernel.program.slots, self.bound, control,
                                       self.kernel.program.counters)
        codes = (ctypes.c_int * len(types))(*[_ARG_TYPES[t] for t in types])
        packed = (Value * len(values))(*[_value(t, v) for t, v in zip(types, values, strict=True)])
        check(library().eagle_loop_set_args(out, codes, packed, len(values)))
        self._loop = loop

    def run(self, counters, after_launch) -> None:
        self.build()
        if counters.finished:
            return
        launches, taken, live, size = (ctypes.c_int64() for _ in range(4))
        wait_for_producers(self._stream or current_stream(self.kernel.ordinal),
                           self.bound.arrays.values())
        check(library().eagle_loop_run(self._loop._ptr, counters.steps, counters.max_steps,
                                       int(self.eager), self._stream and self._stream._ptr,
                                       ctypes.byref(launches), ctypes.byref(taken),
                                       ctypes.byref(live), ctypes.byref(size)))
        counters.record(launches.value, taken.value, live.value)
        self.steps_per_launch = size.value

    def watch(self, enabled: bool) -> None:
        """Have the next runs write (live, steps) to pinned host memory (``live_now``) or not
        (called by the runner before each run: ``run(progress=True)``)."""
        self._create()
        if enabled and self._progress is None:
            out = _out()
            check(library().eagle_hostmapped_alloc(self.kernel.ordinal, 16, ctypes.byref(out)))
            self._progress = _Handle.__new__(_Handle)
            self._progress._ptr = out
            self._progress_view = (ctypes.c_int64 * 2).from_address(
                library().eagle_hostmapped_host(out))
        self._watching = bool(enabled)
        if enabled:
            self._progress_view[0] = self._progress_view[1] = -1
        device = library().eagle_hostmapped_device(self._progress._ptr) if enabled else 0
        check(library().eagle_loop_set_progress(self._loop._ptr, device))

    def live_now(self) -> int | None:
        """The live count the device last wrote to host memory (progress only), or None."""
        if not self._watching:
            return None
        live = int(self._progress_view[0])
        return live if live >= 0 else None

    def graph_loop(self) -> Loop:
        """The loop as ``GraphComposer`` records it (itself, its arguments set)."""
        self._create()
        return self

    def prepare_for_capture(self, steps: int, max_steps: int) -> None:
        """Set the control block for ``append_to_capture`` (before the capture begins)."""
        self._create()
        check(library().eagle_loop_prepare_for_capture(self._loop._ptr, steps, max_steps))

    def append_to_capture(self, stream: Stream) -> None:
        """Record ``eagle_start -> WHILE { step ; decide }`` at the top level of the graph
        ``stream`` (a C++ layer stream) is capturing; each replay continues the run."""
        check(library().eagle_loop_append_to(self._loop._ptr, stream._ptr))

    def read_counters(self) -> tuple[int, int, int]:
        """(launches of the last replay, steps since reset, live samples), read back now."""
        launches, steps, live = (ctypes.c_int64() for _ in range(3))
        check(library().eagle_loop_read_counters(self._loop._ptr, ctypes.byref(launches),
                                                 ctypes.byref(steps), ctypes.byref(live)))
        return launches.value, steps.value, live.value

    def use_stream(self, stream) -> None:
        """Run on the user's ``stream`` (``until_done(..., stream=...)``): any library's stream
        or a handle, borrowed by the C++ layer."""
        from .stream import stream_handle

        if self._loop is not None:
            raise RuntimeError("use_stream() must come before the loop is first used")
        self._stream = Stream.wrap(stream_handle(stream, "until_done(stream=...)"),
                                   self.kernel.ordinal)


def clear(array) -> None:
    """Zero a contiguous device array (and wait for it)."""
    from .driver import ordinal_of

    check(library().eagle_memory_zero(ordinal_of(array.device), array.ptr, array.nbytes))


def to_host(array):
    """A NumPy copy of a contiguous device array."""
    import numpy as np

    from .driver import ordinal_of

    out = np.empty(array.shape, array.dtype)
    check(library().eagle_memory_to_host(ordinal_of(array.device), out.ctypes.data, array.ptr,
                                         out.nbytes))
    return out
