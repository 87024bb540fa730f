"""``GraphPipeline``: record raw launches once, replay them as one graph.

Each step is a zero-argument callable that issues exactly one launch on eagle's current stream
(``Launcher.launch``, ``LoadedVector.launch``). ``build()`` captures the steps in order into a
graph and instantiates it; ``launch(n)`` replays it ``n`` times with no Python per step.

Nothing inside a captured step may allocate device memory or synchronise: those calls fail or
silently break a capture. ``build()`` checks after every step and names the step that broke a
rule (``eagle.CaptureError``); the partial graph is discarded and the stream stays usable.

The capture runs on a non-blocking stream, so another thread's work on the legacy default
stream cannot invalidate it; the replays run on a blocking stream, so they stay ordered after
the work a user queued on the legacy default stream (CuPy's and PyTorch's default) and before
what they queue next.
"""

from __future__ import annotations

from .errors import CaptureError

__all__ = ["GraphPipeline"]


def _describe(step) -> str:
    name = getattr(step, "__qualname__", None) or type(step).__name__
    code = getattr(step, "__code__", None)
    where = f" at {code.co_filename}:{code.co_firstlineno}" if code is not None else ""
    return f"{name}{where}"


def run_captured(capture, what: str, action, rule: str) -> None:
    """Call ``action`` inside an open ``capture``; an error it raises, or a capture it broke,
    becomes a ``CaptureError`` naming ``what`` and the ``rule``."""
    try:
        action()
    except CaptureError:
        raise
    except Exception as exc:
        raise CaptureError(f"{what} failed while being captured: {type(exc).__name__}: {exc}. "
                           f"{rule[0].upper()}{rule[1:]}") from exc
    if capture.status() == "invalidated":
        raise CaptureError(f"{what} broke the capture: {rule}")


class GraphPipeline:
    """A sequence of one-launch steps captured into one CUDA graph.

    Args:
        device: the GPU the steps launch on (``"cuda:K"``, default ``"cuda:0"``).
    """

    def __init__(self, device: str = "cuda:0"):
        from .cuda.driver import ordinal_of

        self.device = device
        self.ordinal = ordinal_of(device)
        self.steps: list = []
        self.graph = None
        self._exec = None
        self._stream = None

    def add(self, step) -> GraphPipeline:
        """Append a step; return the pipeline (so calls chain).

        Args:
            step: a zero-argument callable that issues exactly one launch on eagle's current
                stream (e.g. ``lambda: launcher.launch(grid, values)``); anything not callable
                is a ``TypeError``.
        """
        if not callable(step):
            raise TypeError(f"GraphPipeline.add() takes a zero-argument callable that issues "
                            f"one launch, got {type(step).__name__}")
        self.steps.append(step)
        self.graph = self._exec = None  # a new step means a new graph
        return self

    def build(self) -> GraphPipeline:
        """Capture every step into a graph and instantiate it; return the pipeline."""
        from .cuda import _native

        if _native.enabled():  # the C++ StreamCapturer, Graph and GraphExec (_native.py)
            Stream, StreamCapturer = _native.Stream, _native.StreamCapturer
        else:
            from .cuda.stream import Stream, StreamCapturer
        if not self.steps:
            raise ValueError("GraphPipeline.build(): add() at least one step first")
        with StreamCapturer(Stream(self.ordinal, non_blocking=True)) as capture:
            for index, step in enumerate(self.steps):
                self._capture_step(capture, index, step)
        self.graph = capture.graph
        self._exec = self.graph.instantiate(self.ordinal)
        stream = Stream(self.ordinal)  # the replays' stream: blocking
        self._exec.upload(stream)
        stream.synchronize()
        self._stream = stream
        return self

    @staticmethod
    def _capture_step(capture, index: int, step) -> None:
        before = capture.node_count()
        run_captured(capture, f"step {index} ({_describe(step)})", step,
                     "nothing inside a captured step may allocate device memory or synchronise; "
                     "allocate every buffer before build()")
        issued = capture.node_count() - before
        if issued != 1:
            raise CaptureError(f"step {index} ({_describe(step)}) issued {issued} operations; "
                               "each step must issue exactly one launch on eagle's current "
                               "stream")

    def launch(self, n: int = 1) -> None:
        """Replay the graph ``n`` times on the pipeline's stream (asynchronously), from any
        thread.

        Means::

            for _ in range(n):
                for step in steps:
                    step()      # the launch each step recorded, with the arguments it had
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"GraphPipeline.launch(n=...) takes an int >= 0, got {n!r}")
        if self._exec is None:
            raise RuntimeError("GraphPipeline.launch(): call build() first")
        for _ in range(n):
            self._exec.launch(self._stream)

    def synchronize(self) -> None:
        """Wait until every replay issued so far has finished."""
        if self._stream is not None:
            self._stream.synchronize()
