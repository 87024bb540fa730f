"""Streams, the current stream, and capturing a stream's work into a graph.

The streams eagle runs and replays on are blocking streams (created without
``CU_STREAM_NON_BLOCKING``), so work a user queued on the legacy default stream (CuPy's and
PyTorch's default) finishes before eagle's starts, and eagle's finishes before theirs continues:
no user-visible race, no extra sync. Work on other streams is ordered by the stream each array
declares (``memory.wait_for_producers``).

The streams eagle *captures* on are non-blocking (``Stream(non_blocking=True)``), as PyTorch's
capture streams are: another thread's legacy-default-stream work during a capture would
otherwise synchronise implicitly with the capturing stream and invalidate the capture
(``CUDA_ERROR_STREAM_CAPTURE_IMPLICIT``). A graph captured there is then replayed on a
blocking stream.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from ..errors import CaptureError, CudaError
from .driver import activate, call, driver, per_process, release
from .graph import Graph

__all__ = ["Stream", "StreamCapturer", "Event", "current_stream", "stream_handle"]

_local = threading.local()
_default_streams: dict[int, Stream] = per_process({})  # restored by driver.use_driver


class Stream:
    """A CUDA stream on one device (eagle's own, or a wrapped handle from another library).

    Args:
        ordinal: the device's index, K of ``"cuda:K"`` (default 0).
        handle: a ``CUstream`` handle (an int) owned elsewhere to wrap, or None (default) to
            create a stream that this object owns.
        non_blocking: create it with ``CU_STREAM_NON_BLOCKING`` (no implicit ordering with
            the legacy default stream); default False. Ignored for a wrapped handle.
    """

    def __init__(self, ordinal: int = 0, handle: int | None = None, non_blocking: bool = False):
        activate(ordinal)
        self.ordinal = ordinal
        self._owned = handle is None
        self.non_blocking = non_blocking
        d = driver()
        flags = int(d.CUstream_flags.CU_STREAM_NON_BLOCKING) if non_blocking else 0
        self.handle = call(d.cuStreamCreate, flags) if handle is None else d.CUstream(handle)

    @classmethod
    def wrap(cls, handle: int, ordinal: int = 0) -> Stream:
        """A ``Stream`` over a ``handle`` (an int) owned elsewhere (e.g.
        ``cupy.cuda.Stream().ptr``), on device ``ordinal`` (default 0); the owner keeps it
        alive."""
        return cls(ordinal, int(handle))

    def synchronize(self) -> None:
        """Wait on the host until every piece of work queued on this stream has finished."""
        activate(self.ordinal)
        call(driver().cuStreamSynchronize, self.handle)

    def wait(self, event: Event) -> None:
        """Order this stream's later work after ``event`` (no host wait)."""
        activate(self.ordinal)
        call(driver().cuStreamWaitEvent, self.handle, event.handle, 0)

    def capturing(self) -> bool:
        """Whether a capture is recording this stream's work now."""
        status = call(driver().cuStreamIsCapturing, self.handle)
        return int(status) != 0

    @contextmanager
    def as_current(self):
        """Make this the stream eagle's launches use on this thread, inside the block."""
        stack = _stack()
        stack.append(self)
        try:
            yield self
        finally:
            stack.pop()

    def __int__(self) -> int:
        return int(self.handle)

    def __del__(self):
        if getattr(self, "_owned", False):
            release("cuStreamDestroy", self.handle, self.ordinal)


class Event:
    """A CUDA event without timing: ``record(stream)``, then ``stream.wait(event)`` elsewhere
    (inside a capture this forks and joins streams)."""

    def __init__(self, ordinal: int = 0):
        activate(ordinal)
        self.ordinal = ordinal
        d = driver()
        self.handle = call(d.cuEventCreate, int(d.CUevent_flags.CU_EVENT_DISABLE_TIMING))

    def record(self, stream) -> Event:
        """Record on ``stream``: a ``Stream`` or a raw handle (another library's stream)."""
        activate(self.ordinal)
        handle = stream.handle if isinstance(stream, Stream) else stream
        call(driver().cuEventRecord, self.handle, handle)
        return self

    def __del__(self):
        handle, self.handle = getattr(self, "handle", None), None
        release("cuEventDestroy", handle, getattr(self, "ordinal", 0))


def stream_handle(value, name: str = "stream") -> int:
    """The ``CUstream`` handle of a stream from any library: eagle's ``Stream``, an object with
    the ``__cuda_stream__`` protocol (cuda.core), a PyTorch stream (``cuda_stream``), a CuPy
    stream (``ptr``) or an int; ``TypeError`` naming ``name`` otherwise."""
    if isinstance(value, Stream):
        return int(value.handle)
    protocol = getattr(value, "__cuda_stream__", None)
    if protocol is not None:
        return int(protocol()[1])
    for attribute in ("cuda_stream", "ptr"):
        handle = getattr(value, attribute, None)
        if isinstance(handle, int) and not isinstance(handle, bool):
            return handle
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise TypeError(f"{name} must be a CUDA stream (eagle.cuda.Stream, a CuPy or PyTorch "
                    f"stream, an object with __cuda_stream__, or a handle), got "
                    f"{type(value).__name__}")


def _stack() -> list[Stream]:
    if not hasattr(_local, "streams"):
        _local.streams = []
    return _local.streams


def current_stream(ordinal: int = 0) -> Stream:
    """The innermost ``Stream.as_current()`` on this thread, else eagle's stream for the
    device."""
    stack = _stack()
    if stack:
        activate(stack[-1].ordinal)
        return stack[-1]
    if ordinal not in _default_streams:
        _default_streams[ordinal] = Stream(ordinal)
    activate(ordinal)
    return _default_streams[ordinal]


class StreamCapturer:
    """Records the work issued on ``stream`` inside a ``with`` block into a graph.

    On leaving the block the capture is always ended. If the block raised, or the capture was
    invalidated (something allocated or synchronised), the partial graph is destroyed and the
    stream is left usable; the error is re-raised (invalidation as ``CaptureError``). Otherwise
    ``graph`` holds the recorded ``Graph``.

    Args:
        stream: the ``Stream`` whose work is recorded.
    """

    def __init__(self, stream: Stream):
        self.stream = stream
        self.graph = None
        self._current = None

    def __enter__(self) -> StreamCapturer:
        activate(self.stream.ordinal)
        d = driver()
        call(d.cuStreamBeginCapture, self.stream.handle,
             d.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        self._current = self.stream.as_current()
        self._current.__enter__()
        return self

    def status(self) -> str:
        """``"active"``, ``"invalidated"`` or ``"none"``."""
        status = call(driver().cuStreamIsCapturing, self.stream.handle)
        return {0: "none", 1: "active", 2: "invalidated"}[int(status)]

    def node_count(self) -> int:
        """How many operations the capture has recorded so far."""
        d = driver()
        info = d.cuStreamGetCaptureInfo(self.stream.handle)
        if int(info[0]) != 0 or int(info[1]) != 1:
            return -1
        graph = info[3]
        return int(call(d.cuGraphGetNodes, graph, 0)[1])

    def __exit__(self, kind, error, traceback) -> bool:
        self._current.__exit__(None, None, None)
        d = driver()
        invalidated = self.status() == "invalidated"
        result = d.cuStreamEndCapture(self.stream.handle)
        graph = result[1] if int(result[0]) == 0 else None
        if kind is not None or invalidated or graph is None:
            if graph is not None:
                d.cuGraphDestroy(graph)
            if kind is not None:
                return False
            raise CaptureError("the capture was invalidated: nothing inside a captured step may "
                               "allocate device memory or synchronise") if invalidated else \
                CudaError(getattr(result[0], "name", str(result[0])), "cuStreamEndCapture")
        self.graph = Graph(graph)
        return False
