"""Ctrl-C during a run stops at a launch boundary, never inside a lock, a write or a draw.

Python raises ``KeyboardInterrupt`` between any two bytecodes of the main thread. Raised inside
a locked section that is not a single ``with`` (tqdm's write lock takes two locks one after the
other) it leaves a lock held, and the next draw of a progress bar, or the bar's monitor thread,
waits for it forever; raised between a runner's bookkeeping steps it leaves counters that do
not match the arrays. So eagle holds SIGINT for the whole of ``run()``, ``checkpoint()``,
``reset()`` and a compile, and raises it only at points where everything is consistent: the
launch boundaries (``check()``) and the end of the outermost held section.

Held sections nest: an inner ``deferred_interrupts()`` shares the outer one's guard, so a
``check()`` deep inside a backend's loop raises a Ctrl-C that arrived while the outer section
was drawing the progress bar.
"""

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


_held: _Deferred | None = None  # the main thread's outermost held section, while one is open


@contextmanager
def deferred_interrupts():
    """Hold SIGINT until the body calls ``check()`` at a consistent point, or ends.

    A Ctrl-C held and not yet checked is raised when the outermost section ends normally;
    when the body ends with an exception (a KeyboardInterrupt from ``check()`` among them) it
    is dropped, since one interrupt is already on its way. Outside the main thread (where
    Python delivers no signals), and where the program handles SIGINT itself (a handler other
    than Python's default), this holds nothing.
    """
    global _held
    if threading.current_thread() is not threading.main_thread():
        yield _Deferred()
        return
    if _held is not None:
        yield _held
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.default_int_handler:
        yield _Deferred()
        return
    guard = _Deferred()

    def hold(signum, frame):
        guard.pending = True

    signal.signal(signal.SIGINT, hold)
    _held = guard
    try:
        yield guard
    finally:
        _held = None
        signal.signal(signal.SIGINT, previous)
    guard.check()
