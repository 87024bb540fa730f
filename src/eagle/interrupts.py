"""Ctrl-C during a run stops at a launch boundary, never in the middle of one's bookkeeping."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

__all__ = ["deferred_interrupts"]


class _Deferred:
    def __init__(self):
        self.pending = False

    def check(self) -> None:
        """Raise the KeyboardInterrupt that arrived since the last check, if one did."""
        if self.pending:
            self.pending = False
            raise KeyboardInterrupt


@contextmanager
def deferred_interrupts():
    """Hold SIGINT until the body calls ``check()`` at a consistent point.

    Outside the main thread (where Python delivers no signals) this is a no-op guard.
    """
    guard = _Deferred()
    if threading.current_thread() is not threading.main_thread():
        yield guard
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.default_int_handler:  # someone else handles Ctrl-C; leave it
        yield guard
        return

    def hold(signum, frame):
        guard.pending = True

    signal.signal(signal.SIGINT, hold)
    try:
        yield guard
    finally:
        signal.signal(signal.SIGINT, previous)
    guard.check()
