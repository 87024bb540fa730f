"""GPU memory: buffers eagle allocates, and views of the arrays users bring.

``DeviceArray`` describes memory that already lives on a GPU (a CuPy array, a PyTorch tensor,
anything with ``__cuda_array_interface__``; DLPack-only arrays such as JAX's go through CuPy's
``from_dlpack`` when CuPy is installed). It has the attributes the binding checks read from a
NumPy array (``shape``, ``dtype``, ``flags``) and a device pointer; it keeps its owner alive and
never copies.

Producers' streams are honoured. A CUDA Array Interface v3 export names the stream its data is
ready on (``stream``: a handle, 1 for the legacy default stream, 2 for the per-thread default
stream, None for "nothing to wait for"); the consumer must order its work after that stream.
``DeviceArray.stream`` keeps it and ``wait_for_producers`` makes eagle's stream wait on an event
recorded there before each run (no host wait). A DLPack export is asked for with
``__dlpack__(stream=1)``: the producer orders its pending work before the legacy default stream,
and the view then declares that stream like a CAI v3 producer would.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from .driver import activate, call, driver, release

__all__ = ["DeviceBuffer", "DeviceArray", "as_device_array", "device_full", "HostMapped", "clear",
           "to_host", "producer_streams", "wait_for_producers"]

#: The stream DLPack producers are asked to make their data ready on: the legacy default
#: stream (DLPack's and CAI's 1), which eagle's blocking streams are ordered after.
DLPACK_STREAM = 1


class DeviceBuffer:
    """``nbytes`` of device memory owned by eagle, freed with the object."""

    def __init__(self, nbytes: int, ordinal: int = 0):
        activate(ordinal)
        self.nbytes = max(int(nbytes), 1)
        self.ordinal = ordinal
        self.ptr = int(call(driver().cuMemAlloc, self.nbytes))

    def upload(self, host: np.ndarray, stream=None) -> None:
        activate(self.ordinal)
        host = np.ascontiguousarray(host)
        d = driver()
        if stream is None:
            call(d.cuMemcpyHtoD, self.ptr, host.ctypes.data, host.nbytes)
        else:
            call(d.cuMemcpyHtoDAsync, self.ptr, host.ctypes.data, host.nbytes, stream.handle)

    def download(self, host: np.ndarray, stream=None) -> np.ndarray:
        activate(self.ordinal)
        d = driver()
        if stream is None:
            call(d.cuMemcpyDtoH, host.ctypes.data, self.ptr, host.nbytes)
        else:
            call(d.cuMemcpyDtoHAsync, host.ctypes.data, self.ptr, host.nbytes, stream.handle)
        return host

    def __del__(self):
        ptr, self.ptr = getattr(self, "ptr", 0), 0
        release("cuMemFree", ptr, getattr(self, "ordinal", 0))


class HostMapped:
    """Pinned host memory the device can write to directly (a progress counter, say)."""

    def __init__(self, nbytes: int, ordinal: int = 0):
        activate(ordinal)
        d = driver()
        self.nbytes = nbytes
        self.ordinal = ordinal
        self.host_ptr = int(call(d.cuMemHostAlloc, nbytes, d.CU_MEMHOSTALLOC_DEVICEMAP))
        self.device_ptr = int(call(d.cuMemHostGetDevicePointer, self.host_ptr, 0))

    def as_array(self, dtype, count: int) -> np.ndarray:
        import ctypes

        buffer = (ctypes.c_char * self.nbytes).from_address(self.host_ptr)
        return np.frombuffer(buffer, dtype=dtype, count=count)

    def __del__(self):
        ptr, self.host_ptr = getattr(self, "host_ptr", 0), 0
        release("cuMemFreeHost", ptr, getattr(self, "ordinal", 0))


@dataclass
class DeviceArray:
    """A view of GPU memory with NumPy's metadata; ``owner`` keeps the memory alive."""

    ptr: int
    shape: tuple[int, ...]
    dtype: np.dtype
    strides: tuple[int, ...]  # in bytes
    readonly: bool
    device: str
    owner: object = None
    stream: int | None = None  # the producer's stream (CAI v3), None: nothing to wait for

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * self.dtype.itemsize

    @property
    def flags(self):
        return SimpleNamespace(writeable=not self.readonly, c_contiguous=self._contiguous())

    def _contiguous(self) -> bool:
        expected = self.dtype.itemsize
        for size, stride in zip(reversed(self.shape), reversed(self.strides), strict=True):
            if size > 1 and stride != expected:
                return False
            expected *= size
        return True

    def offset(self, index: tuple[int, ...]) -> int:
        """The device pointer of the sub-array at ``index`` along the leading axes (a vector
        component ``(k,)``, a matrix element ``(r, c)``)."""
        return self.ptr + sum(i * s for i, s in zip(index, self.strides[:len(index)], strict=True))

    def overlaps(self, other: DeviceArray) -> bool:
        return (self.device == other.device and self.ptr < other.ptr + other.nbytes
                and other.ptr < self.ptr + self.nbytes)


def as_device_array(value, device: str) -> DeviceArray:
    """A ``DeviceArray`` of ``value`` (no copy)."""
    if isinstance(value, DeviceArray):
        return value
    interface = getattr(value, "__cuda_array_interface__", None)
    if interface is None and hasattr(value, "__dlpack__"):
        try:
            import cupy
        except ImportError:
            raise TypeError(f"{type(value).__name__} lives on a GPU but exports only DLPack; "
                            "install CuPy (pip install 'eagle-hawk[cupy]'; eagle reads DLPack "
                            "through cupy.from_dlpack) or pass a CuPy array or PyTorch "
                            "tensor") from None
        value = cupy.from_dlpack(_OnLegacyStream(value))
        # ready on the legacy stream: waited on like a CAI producer's (a user's non-blocking
        # stream, until_done(stream=...), is not ordered after it by itself)
        interface = dict(value.__cuda_array_interface__, version=3, stream=DLPACK_STREAM)
    if interface is None:
        raise TypeError(f"{type(value).__name__} is not a GPU array")
    dtype = np.dtype(interface["typestr"])
    shape = tuple(int(s) for s in interface["shape"])
    strides = interface.get("strides")
    if strides is None:  # C-contiguous
        strides, step = [], dtype.itemsize
        for size in reversed(shape):
            strides.insert(0, step)
            step *= size
    ptr, readonly = interface["data"]
    stream = interface.get("stream") if int(interface.get("version", 0)) >= 3 else None
    if stream is not None and (isinstance(stream, bool) or not isinstance(stream, int)
                               or stream == 0):
        raise TypeError(f"{type(value).__name__}'s __cuda_array_interface__ has stream "
                        f"{stream!r}; CAI v3 allows None, 1, 2 or a stream handle (never 0)")
    return DeviceArray(int(ptr or 0), shape, dtype, tuple(int(s) for s in strides),
                       bool(readonly), device, value, stream)


class _OnLegacyStream:
    """A DLPack producer asked for its capsule on the legacy default stream, whatever stream
    the consumer (``cupy.from_dlpack``) would ask for: eagle's run streams follow that one."""

    def __init__(self, value):
        self.value = value

    def __dlpack_device__(self):
        return self.value.__dlpack_device__()

    def __dlpack__(self, stream=None, **keywords):
        return self.value.__dlpack__(stream=DLPACK_STREAM, **keywords)


def producer_streams(stream_handle: int, arrays) -> list[int]:
    """The producer streams the ``arrays`` (``DeviceArray``) declare, other than the stream
    ``stream_handle`` itself, in order (what ``wait_for_producers`` waits on, in either layer)."""
    producers = {a.stream for a in arrays if isinstance(a, DeviceArray) and a.stream}
    producers.discard(int(stream_handle))
    return sorted(producers)


def wait_for_producers(stream, arrays) -> int:
    """Make ``stream`` (eagle's ``Stream``) wait, on the device, for the work queued on each
    producer stream the ``arrays`` (``DeviceArray``) declare; return how many it waits on.
    Nothing to do while ``stream`` is being captured (a capture cannot wait on outside work;
    the graph's launch is ordered instead)."""
    from .stream import Event

    producers = producer_streams(stream.handle, arrays)
    if not producers or stream.capturing():
        return 0
    for producer in producers:
        stream.wait(Event(stream.ordinal).record(driver().CUstream(producer)))
    return len(producers)


def device_full(shape: tuple[int, ...], value, dtype, device: str) -> DeviceArray:
    """A new contiguous device array filled with ``value`` (for a broadcast Scalar or flags)."""
    from .driver import ordinal_of

    host = np.full(shape, value, dtype=dtype)
    buffer = DeviceBuffer(host.nbytes, ordinal_of(device))
    buffer.upload(host)
    return DeviceArray(buffer.ptr, host.shape, host.dtype, host.strides, False, device, buffer)


def device_copy(host: np.ndarray, device: str) -> DeviceArray:
    """A new read-only device array holding the C-contiguous host array ``host`` (a table)."""
    from .driver import ordinal_of

    host = np.ascontiguousarray(host)
    buffer = DeviceBuffer(max(host.nbytes, 1), ordinal_of(device))
    buffer.upload(host)
    return DeviceArray(buffer.ptr, host.shape, host.dtype, host.strides, True, device, buffer)


def clear(array: DeviceArray) -> None:
    """Set every byte of a contiguous device array to zero (and wait for it)."""
    from .driver import ordinal_of

    activate(ordinal_of(array.device))
    call(driver().cuMemsetD8, array.ptr, 0, array.nbytes)
    call(driver().cuCtxSynchronize)


def to_host(array: DeviceArray) -> np.ndarray:
    """A NumPy copy of a contiguous device array."""
    from .driver import ordinal_of

    if not array.flags.c_contiguous:
        raise ValueError("to_host() needs a contiguous device array")
    activate(ordinal_of(array.device))
    host = np.empty(array.shape, dtype=array.dtype)
    call(driver().cuMemcpyDtoH, host.ctypes.data, array.ptr, array.nbytes)
    return host
