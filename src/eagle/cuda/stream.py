"""Streams, the current stream, and capturing a stream's work into a graph.

eagle's streams are blocking streams (created without ``CU_STREAM_NON_BLOCKING``), so work a
user queued on the legacy default stream (CuPy's and PyTorch's default) finishes before eagle's
starts, and eagle's finishes before theirs continues: no user-visible race, no extra sync.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from ..errors import CaptureError, CudaError
from .driver import activate, call, driver, release

__all__ = ["Stream", "StreamCapturer", "Event", "current_stream"]

_local = threading.local()
_default_streams: dict[int, Stream] = {}


class Stream:
    """A CUDA stream on one device (eagle's own, or a wrapped handle from another library)."""

    def __init__(self, ordinal: int = 0, handle: int | None = None):
        activate(ordinal)
        self.ordinal = ordinal
        self._owned = handle is None
        d = driver()
        self.handle = call(d.cuStreamCreate, 0) if handle is None else d.CUstream(handle)

    @classmethod
    def wrap(cls, handle: int, ordinal: int = 0) -> Stream:
        """A ``Stream`` over a handle owned elsewhere (e.g. ``cupy.cuda.Stream().ptr``)."""
        return cls(ordinal, int(handle))

    def synchronize(self) -> None:
        call(driver().cuStreamSynchronize, self.handle)

    def wait(self, event: Event) -> None:
        """Order this stream's later work after ``event`` (no host wait)."""
        call(driver().cuStreamWaitEvent, self.handle, event.handle, 0)

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
            release("cuStreamDestroy", self.handle)


class Event:
    """A CUDA event without timing: ``record(stream)``, then ``stream.wait(event)`` elsewhere
    (inside a capture this forks and joins streams)."""

    def __init__(self, ordinal: int = 0):
        activate(ordinal)
        d = driver()
        self.handle = call(d.cuEventCreate, int(d.CUevent_flags.CU_EVENT_DISABLE_TIMING))

    def record(self, stream: Stream) -> Event:
        call(driver().cuEventRecord, self.handle, stream.handle)
        return self

    def __del__(self):
        handle, self.handle = getattr(self, "handle", None), None
        release("cuEventDestroy", handle)


def _stack() -> list[Stream]:
    if not hasattr(_local, "streams"):
        _local.streams = []
    return _local.streams


def current_stream(ordinal: int = 0) -> Stream:
    """The innermost ``Stream.as_current()`` on this thread, else eagle's stream for the
    device."""
    stack = _stack()
    if stack:
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
    """

    def __init__(self, stream: Stream):
        self.stream = stream
        self.graph = None
        self._current = None

    def __enter__(self) -> StreamCapturer:
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
        from .graph import Graph

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
