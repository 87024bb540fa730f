"""The progress bar of ``run(progress=True)``, ``simulate`` and ``run_on_cluster``: one tqdm bar,
chosen here for every caller, and how a run keeps it up to date (``run_progress``, ``polling``).

tqdm's own choice (``tqdm.auto``) draws a widget in Jupyter, but where ipywidgets is missing it
warns on import (``TqdmWarning: IProgress not found...``) with the path of tqdm's file in the
user's environment, and a notebook shows that in its output. Here the widget is used only where
it can be drawn, and the text bar otherwise, with no warning: the bar is the same either way.
tqdm is imported only when a bar is asked for (it is optional for everything else).
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from contextlib import contextmanager

__all__ = ["progress_bar", "run_progress", "polling"]


def _in_jupyter() -> bool:
    """Running in a Jupyter kernel, not a console (the test tqdm.auto makes)."""
    return "ipykernel.zmqshell" in sys.modules and not any(
        name == "QT_API" or name.startswith("SPYDER") for name in os.environ)


def progress_bar(what: str, **options):
    """A tqdm bar with ``options`` (``total``, ``desc``, ``unit``...): Jupyter's widget where
    ipywidgets can draw it, else tqdm's text bar (on stderr).

    Args:
        what: the call that asked for it, named if tqdm is missing (``"run(progress=True)"``).
        **options: tqdm's arguments.
    """
    try:
        from tqdm import std
    except ImportError as exc:
        raise ImportError(f"{what} needs tqdm: pip install tqdm") from exc
    if _in_jupyter():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", std.TqdmWarning)
            from tqdm import notebook
        if getattr(notebook, "IProgress", None) is not None:
            return notebook.tqdm(**options)
    return std.tqdm(**options)


@contextmanager
def run_progress(runner, enabled: bool):
    """``run(progress=True)``'s bar of ``runner``'s samples done (None when not ``enabled``),
    brought up to date and closed when the body ends."""
    if not enabled:
        yield None
        return
    done = runner.n - (runner.live if runner.live is not None else runner.n)
    bar = progress_bar("run(progress=True)", total=runner.n, initial=done, unit="sample",
                       desc=runner.plan.kernel.name)
    try:
        yield bar
    finally:
        if runner.live is not None:
            bar.update(runner.n - runner.live - bar.n)
        bar.close()


@contextmanager
def polling(bar, loop, n: int, interval: float = 0.05):
    """While the body runs, copy the live count the device writes to host memory into ``bar``
    from a thread: the graph itself never waits for the host. (A loop whose launches the host
    sees updates the bar after each launch instead.)"""
    if bar is None or loop.sees_launches:
        yield
        return
    stop = threading.Event()

    def poll():
        while not stop.wait(interval):
            live = loop.live_now()
            if live is not None:
                bar.update(n - live - bar.n)

    thread = threading.Thread(target=poll, name="eagle-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
