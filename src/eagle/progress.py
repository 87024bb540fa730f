"""The progress bar of ``run(progress=True)``, ``simulate`` and ``run_on_cluster``: one tqdm bar,
chosen here for every caller.

tqdm's own choice (``tqdm.auto``) draws a widget in Jupyter, but where ipywidgets is missing it
warns on import (``TqdmWarning: IProgress not found...``) with the path of tqdm's file in the
user's environment, and a notebook shows that in its output. Here the widget is used only where
it can be drawn, and the text bar otherwise, with no warning: the bar is the same either way.
tqdm is imported only when a bar is asked for (it is optional for everything else).
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = ["progress_bar"]


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
