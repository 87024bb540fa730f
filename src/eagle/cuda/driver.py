"""The CUDA driver API through NVIDIA's ``cuda.bindings``: results, devices and contexts.

Every call goes through ``call(function, *args)``, which turns a failed ``CUresult`` into an
``eagle.CudaError`` carrying the error's name and the call. eagle works in each device's primary
context, the one CuPy, PyTorch and the CUDA runtime use, so arrays and streams pass between
them freely.

A CUDA context is current per thread, and a runner may be built on one thread and run on
another (a thread pool, an in-process Dask worker, a notebook's kernel thread): every operation
that touches a device calls ``activate`` itself rather than trusting a constructor to have done
it on the same thread. Finalisers may run on whatever thread the garbage collector is on, so
``release`` pushes the primary context for the one call and pops it again, leaving that thread
as it found it.
"""

from __future__ import annotations

import functools
import threading
from contextlib import contextmanager
from dataclasses import dataclass

from ..errors import BackendUnavailable, CudaError

__all__ = ["driver", "call", "check", "release", "is_available", "unavailable_reason",
           "device_count", "DeviceInfo", "device_info", "activate", "ordinal_of", "use_driver",
           "per_process"]

_override = None  # a stand-in for cuda.bindings.driver (tests), set by use_driver


def driver():
    """``cuda.bindings.driver``, or ``BackendUnavailable`` saying how to get it."""
    if _override is not None:
        return _override
    try:
        from cuda.bindings import driver as cuda_driver
    except ImportError as exc:
        raise BackendUnavailable(
            "eagle's GPU backend needs NVIDIA's cuda-bindings: "
            "pip install 'eagle-hawk[cuda]'") from exc
    return cuda_driver


def call(function, *args):
    """``function(*args)`` from ``cuda.bindings.driver``; its values, or ``CudaError``."""
    return check(function(*args), function.__name__)


def check(result, call: str):
    """The values after a ``cuda.bindings`` result code (driver, NVRTC, nvJitLink): None, one
    value or a tuple; ``CudaError`` naming the error and ``call`` when the code is not 0."""
    err, values = (result[0], tuple(result[1:])) if isinstance(result, tuple) else (result, ())
    if int(err) != 0:
        raise CudaError(getattr(err, "name", str(err)), call)
    if not values:
        return None
    return values[0] if len(values) == 1 else values


def release(function_name: str, handle, ordinal: int | None = 0) -> None:
    """Free a driver object from a finaliser (``__del__``) on any thread: the device's primary
    context is pushed for the call and popped after it (``ordinal=None``: objects that need no
    context, such as graphs). Nothing to free is a no-op, and it never raises (at interpreter
    shutdown the driver may be gone already)."""
    if handle is None or (isinstance(handle, int) and handle == 0):
        return
    try:
        d = driver()
        context = _contexts.get(ordinal) if ordinal is not None else None
        if context is not None and int(d.cuCtxPushCurrent(context)[0]) != 0:
            context = None
        try:
            getattr(d, function_name)(handle)
        finally:
            if context is not None:
                d.cuCtxPopCurrent()
    except Exception:
        pass


@functools.cache
def unavailable_reason() -> str | None:
    """Why no CUDA device can be used here, or None when one can."""
    try:
        d = driver()
    except BackendUnavailable as exc:
        return str(exc)
    import cuda.bindings

    major = int(cuda.bindings.__version__.split(".")[0])
    if major < 13:  # eagle calls the CUDA 13 forms (cuGraphAddNode with edge data, ...)
        return (f"eagle needs cuda-bindings >= 13 (this is {cuda.bindings.__version__}): "
                "pip install -U 'cuda-bindings>=13'")
    try:
        call(d.cuInit, 0)
        count = call(d.cuDeviceGetCount)
    except CudaError as exc:
        return f"the CUDA driver did not start ({exc.name})"
    except Exception as exc:  # no driver library at all: cuda.bindings cannot load libcuda
        return f"no NVIDIA driver found ({type(exc).__name__}: {exc})"
    return None if count > 0 else "the CUDA driver reports no devices"


def is_available() -> bool:
    """True when a CUDA device and the ``[cuda]`` extra are usable."""
    return unavailable_reason() is None


def device_count() -> int:
    reason = unavailable_reason()
    return 0 if reason else call(driver().cuDeviceGetCount)


@dataclass(frozen=True)
class DeviceInfo:
    """What the driver says about one CUDA device (``device_info``).

    Attributes:
        ordinal: the device's index, K of ``"cuda:K"``.
        name: the device's name, e.g. ``"NVIDIA H100 80GB HBM3"``.
        compute_capability: ``(major, minor)``, e.g. ``(9, 0)``.
        driver_version: the driver's CUDA version, ``(major, minor)``, e.g. ``(12, 4)``.
        total_memory: the device's memory in bytes.
        multiprocessors: its number of streaming multiprocessors.
    """

    ordinal: int
    name: str
    compute_capability: tuple[int, int]
    driver_version: tuple[int, int]
    total_memory: int
    multiprocessors: int

    @property
    def arch(self) -> str:
        """The ``sm_XY`` this device runs natively."""
        return f"sm_{self.compute_capability[0]}{self.compute_capability[1]}"

    @property
    def supports_while_nodes(self) -> bool:
        """Conditional WHILE nodes need a 12.4 driver or newer."""
        return self.driver_version >= (12, 4)


def ordinal_of(device: str) -> int:
    """0 for ``"cuda"``/``"gpu"``, K for ``"cuda:K"``."""
    _, _, ordinal = device.partition(":")
    return int(ordinal or 0)


@functools.cache
def device_info(ordinal: int = 0) -> DeviceInfo:
    """The ``DeviceInfo`` of CUDA device ``ordinal`` (an int, default 0; cached).
    ``BackendUnavailable`` when CUDA is unusable here or there is no such device."""
    require()
    d = driver()
    count = call(d.cuDeviceGetCount)
    if not 0 <= ordinal < count:
        raise BackendUnavailable(f"there is no CUDA device {ordinal} (this machine has {count})")
    dev = call(d.cuDeviceGet, ordinal)
    attribute = d.CUdevice_attribute
    major = call(d.cuDeviceGetAttribute, attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                 dev)
    minor = call(d.cuDeviceGetAttribute, attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                 dev)
    sms = call(d.cuDeviceGetAttribute, attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)
    name = call(d.cuDeviceGetName, 256, dev)
    version = call(d.cuDriverGetVersion)
    return DeviceInfo(ordinal=ordinal, name=name.split(b"\0", 1)[0].decode(),
                      compute_capability=(major, minor),
                      driver_version=(version // 1000, version % 1000 // 10),
                      total_memory=int(call(d.cuDeviceTotalMem, dev)), multiprocessors=sms)


def require() -> None:
    reason = unavailable_reason()
    if reason:
        raise BackendUnavailable(f"no usable CUDA device: {reason}")


_contexts: dict[int, object] = {}
_lock = threading.Lock()
#: per-process GPU state kept by the modules above this one (``stream``'s default streams),
#: which ``use_driver`` empties for a stand-in and restores after: registered by those modules
#: (``per_process``), so that this one imports none of them
_per_process: list[dict] = [_contexts]


def per_process(state: dict) -> dict:
    """Register a module's per-process GPU state (a dict ``use_driver`` empties for a stand-in
    driver and restores after); returns it."""
    _per_process.append(state)
    return state


def activate(ordinal: int = 0):
    """Make device ``ordinal``'s primary context current on this thread; return it. Cheap
    (one ``cuCtxSetCurrent``) after the first call, so every device operation calls it."""
    context = _contexts.get(ordinal)
    if context is None:
        require()
        d = driver()
        with _lock:
            if ordinal not in _contexts:
                device_info(ordinal)  # a clear error for a device that does not exist
                _contexts[ordinal] = call(d.cuDevicePrimaryCtxRetain,
                                          call(d.cuDeviceGet, ordinal))
            context = _contexts[ordinal]
    call(driver().cuCtxSetCurrent, context)
    return context


@contextmanager
def use_driver(stand_in):
    """Inside the block every call of eagle's CUDA layer goes to ``stand_in`` (an object with
    ``cuda.bindings.driver``'s functions), with the per-process GPU state (contexts, default
    streams, device queries) fresh: how the tests run the GPU path without a GPU."""
    global _override
    saved = _override, [dict(state) for state in _per_process]
    _override = stand_in
    for state in _per_process:
        state.clear()
    unavailable_reason.cache_clear()
    device_info.cache_clear()
    try:
        yield stand_in
    finally:
        _override = saved[0]
        for state, kept in zip(_per_process, saved[1], strict=True):
            state.clear()
            state.update(kept)
        unavailable_reason.cache_clear()
        device_info.cache_clear()
