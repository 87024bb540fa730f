"""A path as a log or a published page should show it: the user's home written ``~``, and a
path in the current folder's checkout written relative to it, so that neither the user's name nor a
build machine's folders end up in a page (``python -m eagle info`` in the docs)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["shown"]

def shown(path: str | os.PathLike) -> str:
    """``path`` under the home folder as ``~/...``; else, where it shares a folder two levels
    deep or more with the current folder (the same checkout), relative to the current folder
    (``../build/native/...``); else as it is."""
    path = Path(path)
    try:
        return str(Path("~") / path.relative_to(Path.home()))
    except (ValueError, RuntimeError, OSError):  # not under home, or no home folder
        pass
    try:
        here = Path.cwd()
        common = Path(os.path.commonpath([path.absolute(), here]))
    except (ValueError, OSError):  # another drive, or no current folder
        return str(path)
    return os.path.relpath(path, here) if len(common.parts) > 2 else str(path)
