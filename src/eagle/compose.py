"""``GraphComposer``: independent pieces of GPU work, each on its own stream, in one graph.

``add`` takes a ``GraphPipeline`` (its steps), a GPU ``Runner`` from ``until_done`` (its whole
loop), or a zero-argument callable that issues launches. ``build()`` captures them into one
graph: the origin stream forks to one stream per piece (an event each piece's stream waits on)
and joins them back (an event per piece the origin waits on), so the pieces overlap on the
device. ``launch(n)`` replays the whole graph ``n`` times.

CUDA refuses a conditional node inside a child graph, so a runner's WHILE loop is not embedded
as a child graph: it is recorded at the top level of the one capture, on its piece's stream
(``GraphLoop.append_to_capture``). Each replay continues each runner's run from where the last
one stopped; ``runner.sync_from_device()`` reads its counters back afterwards.

Every stream of the capture is non-blocking (another thread's legacy-default-stream work would
otherwise invalidate it); the replays run on a blocking stream, ordered with the legacy default
stream like the rest of eagle's work.
"""

from __future__ import annotations

from .pipeline import GraphPipeline, _describe, run_captured

__all__ = ["GraphComposer"]


class GraphComposer:
    """Several independent pipelines or runners captured into one graph that overlaps them.

    Args:
        device: the GPU everything runs on (``"cuda:K"``, default ``"cuda:0"``).
    """

    def __init__(self, device: str = "cuda:0"):
        from .cuda.driver import ordinal_of

        self.device = device
        self.ordinal = ordinal_of(device)
        self.pieces: list = []
        self.graph = None
        self._exec = None
        self._origin = None

    def add(self, piece) -> GraphComposer:
        """Append a piece; return the composer (so calls chain).

        Args:
            piece: a ``GraphPipeline``, a GPU ``Runner`` (its whole loop) or a zero-argument
                callable issuing launches; a CPU runner or anything else is a ``TypeError``.
        """
        from .backend import DeviceLoop
        from .runner import Runner

        if isinstance(piece, Runner):
            if not isinstance(piece._loop, DeviceLoop):
                raise TypeError(f"GraphComposer.add(): this runner runs on {piece.device}, "
                                "whose loop is not recorded as a graph; a composer records GPU "
                                "work (deploy for a GPU and pass GPU arrays)")
        elif not isinstance(piece, GraphPipeline) and not callable(piece):
            raise TypeError(f"GraphComposer.add() takes a GraphPipeline, a GPU Runner or a "
                            f"callable, got {type(piece).__name__}")
        self.pieces.append(piece)
        self.graph = self._exec = None
        return self

    def build(self) -> GraphComposer:
        """Capture every piece on its own forked stream into one graph; return the composer."""
        from .cuda import _native

        if _native.enabled():  # the C++ Stream, Event and StreamCapturer (_native.py)
            Event, Stream, StreamCapturer = _native.Event, _native.Stream, _native.StreamCapturer
        else:
            from .cuda.stream import Event, Stream, StreamCapturer
        if not self.pieces:
            raise ValueError("GraphComposer.build(): add() at least one piece first")
        loops = [self._loop_of(piece) for piece in self.pieces]  # load and allocate now
        for piece, loop in zip(self.pieces, loops, strict=True):
            if loop is not None:
                loop.prepare_for_capture(piece.steps, piece.max_steps)
        origin = Stream(self.ordinal, non_blocking=True)
        streams = [Stream(self.ordinal, non_blocking=True) for _ in self.pieces]
        events = []
        with StreamCapturer(origin) as capture:
            fork = Event(self.ordinal).record(origin)
            events.append(fork)
            for index, (piece, loop, stream) in enumerate(zip(self.pieces, loops, streams,
                                                              strict=True)):
                stream.wait(fork)
                with stream.as_current():
                    self._record(index, piece, loop, stream, capture)
                joined = Event(self.ordinal).record(stream)
                events.append(joined)
                origin.wait(joined)
        self.graph = capture.graph
        self._exec = self.graph.instantiate(self.ordinal)
        replay = Stream(self.ordinal)  # blocking
        self._exec.upload(replay)
        replay.synchronize()
        self._origin, self._streams, self._events = replay, streams, events
        return self

    @staticmethod
    def _loop_of(piece):
        from .runner import Runner

        return piece.graph_loop() if isinstance(piece, Runner) else None

    @staticmethod
    def _record(index: int, piece, loop, stream, capture) -> None:
        from .runner import Runner

        if isinstance(piece, Runner):
            def action():
                loop.append_to_capture(stream)
        elif isinstance(piece, GraphPipeline):
            def action():
                for step in piece.steps:
                    step()
        else:
            action = piece
        run_captured(capture, f"piece {index} ({_describe(piece)})", action,
                     "nothing inside a captured piece may allocate device memory or "
                     "synchronise")

    def launch(self, n: int = 1) -> None:
        """Replay the composed graph ``n`` times (asynchronously, on the origin stream)."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"GraphComposer.launch(n=...) takes an int >= 0, got {n!r}")
        if self._exec is None:
            raise RuntimeError("GraphComposer.launch(): call build() first")
        for _ in range(n):
            self._exec.launch(self._origin)

    def synchronize(self) -> None:
        """Wait until every replay issued so far has finished."""
        if self._origin is not None:
            self._origin.synchronize()
