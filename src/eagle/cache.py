"""The on-disk compilation cache: where it lives, its keys, and writes that are never seen torn.

Every entry is a folder named by a key that hashes everything the compiled code depends on (the
IR, the dtypes, the backend and toolchain versions). Files are written to a temporary name,
flushed to disk and renamed into place, so a reader sees either no file or a complete one.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

__all__ = ["cache_dir", "entry_dir", "key", "write_atomic", "read_verified"]


def cache_dir() -> Path:
    """``$EAGLE_CACHE_DIR`` or the platform's user cache folder, created private to the user."""
    root = os.environ.get("EAGLE_CACHE_DIR")
    if not root:
        import platformdirs

        root = platformdirs.user_cache_dir("eagle", appauthor=False)
    path = Path(root)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def key(*parts: object) -> str:
    """A short stable hash of ``parts`` (their JSON form)."""
    text = json.dumps([str(p) for p in parts])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def entry_dir(backend: str, entry_key: str) -> Path:
    """The folder of one cache entry, every level of it private to the user."""
    path = cache_dir()
    for part in (backend, entry_key):
        path = path / part
        path.mkdir(mode=0o700, exist_ok=True)
    return path


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that no reader ever sees a partial file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_verified(path: Path, digest: str) -> bytes | None:
    """The file's bytes if it exists and its SHA-256 is ``digest``; None otherwise."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return data if hashlib.sha256(data).hexdigest() == digest else None
