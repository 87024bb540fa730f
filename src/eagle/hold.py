"""Who holds a runner: one loop at a time, and checkpoints asked for from other threads.

A runner is held by one thread for one thing at a time: ``"run"``, ``"checkpoint"`` or
``"reset"``. A second ``run()`` or a ``reset()`` while a run holds it raises ``RunnerBusy`` (two
loops over the same arrays would give wrong results, and waiting would hide that); a checkpoint
or a reset, which are short, is waited for. A ``checkpoint()`` from another thread while a run
holds the runner is queued as a ``Snapshot`` and written by the running thread at its next launch
boundary (``serve``), so a checkpoint is never torn; where the host sees no launch boundary (a
GPU's whole loop is one graph launch) it is refused instead.
"""

from __future__ import annotations

import threading
from pathlib import Path

from .errors import CheckpointError, RunnerBusy

__all__ = ["Hold", "Snapshot"]


class Snapshot:
    """A checkpoint another thread asked for while a run holds the runner."""

    def __init__(self, path):
        self.path = path
        self._done = threading.Event()
        self._path: Path | None = None
        self._error: BaseException | None = None

    def finish(self, path: Path | None = None, error: BaseException | None = None) -> None:
        self._path, self._error = path, error
        self._done.set()

    def wait(self) -> Path:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._path


class Hold:
    """The hold on one runner (``runner``: its ``_save(path)``, ``_loop.sees_launches``,
    ``device`` and ``repr`` are what this reads)."""

    def __init__(self, runner):
        self.runner = runner
        # Who holds the runner: None, or (what, thread) with what "run", "checkpoint" or
        # "reset"; checkpoint requests from other threads wait in snapshots for a boundary.
        self._guard = threading.Condition()
        self._holder: tuple[str, threading.Thread] | None = None
        self.snapshots: list[Snapshot] = []

    def acquire(self, what: str) -> None:
        """Hold the runner for ``what`` ("run", "reset"); ``RunnerBusy`` while a run holds it;
        wait while a checkpoint or reset does (they are short)."""
        me = threading.current_thread()
        with self._guard:
            while self._holder is not None and self._holder[0] != "run":
                self._guard.wait()
            if self._holder is not None:
                thread = self._holder[1]
                where = ("in this same thread (from inside its own run)" if thread is me
                         else f"in thread {thread.name!r}")
                raise RunnerBusy(f"{what}(): {self.runner!r} is already running {where}; one "
                                 "runner runs one loop at a time: wait for that run() to "
                                 "return, or give each thread its own runner over its own "
                                 "arrays")
            self._holder = (what, me)

    def release(self, consistent: bool = True) -> None:
        """Let go of the runner, first writing the checkpoints other threads asked for
        meanwhile (or failing them where the state is not at a launch boundary)."""
        try:
            while True:
                with self._guard:
                    if not self.snapshots:
                        break
                self.serve(None if consistent else CheckpointError(
                    f"{self.runner!r}: the run stopped in the middle of a launch, so there is "
                    "no consistent state to checkpoint"))
        finally:
            with self._guard:
                self._holder = None
                self._guard.notify_all()

    def serve(self, error: BaseException | None = None) -> None:
        """On the running thread, at a launch boundary: write the requested checkpoints."""
        with self._guard:
            pending, self.snapshots = self.snapshots, []
        for request in pending:
            if error is not None:
                request.finish(error=error)
                continue
            try:
                request.finish(path=self.runner._save(request.path))
            except BaseException as exc:
                request.finish(error=exc)
                if not isinstance(exc, Exception):
                    raise

    def checkpoint(self, path) -> Path:
        """``Runner.checkpoint``'s work: hold the runner and save it, or, while another
        thread's run holds it, queue a ``Snapshot`` for its next launch boundary and wait."""
        runner = self.runner
        me = threading.current_thread()
        request, held = None, False
        with self._guard:
            while True:
                if self._holder is None:
                    self._holder, held = ("checkpoint", me), True
                    break
                what, thread = self._holder
                if thread is me:  # the running thread itself, between launches
                    break
                if what == "run":
                    if not runner._loop.sees_launches:
                        raise RunnerBusy(f"checkpoint(): {runner!r} is running in thread "
                                         f"{thread.name!r} on {runner.device}, whose whole loop "
                                         "runs on the device with no launch boundary the host "
                                         "sees; checkpoint after run() returns")
                    request = Snapshot(path)
                    self.snapshots.append(request)
                    break
                self._guard.wait()  # another checkpoint or a reset: wait for it
        if request is not None:
            return request.wait()
        if not held:  # this thread holds the runner already, between two of its launches
            return runner._save(path)
        try:
            return runner._save(path)
        finally:
            self.release()
