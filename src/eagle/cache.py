"""The on-disk compilation cache: where it lives, whom it trusts, and how it heals.

Every entry is a folder named by a key that hashes everything the compiled code depends on (the
IR, the dtypes, the backend and toolchain versions). Files are written to a temporary name,
flushed to disk and renamed into place, so a reader sees either no file or a complete one.

Nothing read back is trusted for being there: a backend verifies each file against a digest
(``read_verified``: of what it would write, or one recorded with the file), keeps in an entry
only the files it knows (``keep_only``), and whatever does not verify, whatever its shape (a
file where a folder belongs, a folder where a file belongs, bad bytes, a piece missing), is
removed (``discard``) and written again.

The cache is used only where nobody else could have written it, as OpenSSH asks of ``~/.ssh``:
the root must be a folder of this user's that neither group nor others may write. A root that
is not (or cannot be created, or is read-only) is not used: ``root()`` warns once, naming
``EAGLE_CACHE_DIR``, and returns None, and the backends then compile in memory. Folders below
the root that fail the same test are the cache's own and are removed and made again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import tempfile
import threading
import warnings
from pathlib import Path

from .interrupts import deferred_interrupts

__all__ = ["ENV_VAR", "cache_dir", "root", "entry_dir", "private_folder", "key", "write_atomic",
           "store", "read_verified", "discard", "keep_only"]

ENV_VAR = "EAGLE_CACHE_DIR"
_PARTIAL = ".tmp"  # the suffix of a file ``write_atomic`` has not finished (its name: .<name>.*)
_warned: set[str] = set()
_warn_lock = threading.Lock()


def _configured() -> Path:
    """``$EAGLE_CACHE_DIR`` or the platform's user cache folder (nothing is created)."""
    folder = os.environ.get(ENV_VAR)
    if not folder:
        import platformdirs

        folder = platformdirs.user_cache_dir("eagle", appauthor=False)
    return Path(folder)


def cache_dir() -> Path:
    """``$EAGLE_CACHE_DIR`` or the platform's user cache folder, created private to the user
    where it can be (what ``python -m eagle info`` shows; ``root()`` says if it is used)."""
    path = _configured()
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        pass
    return path


def root() -> Path | None:
    """The cache folder if it can be used, created private to the user if missing; None (after
    one warning per folder and process) where it cannot: it cannot be created, is not a folder,
    is read-only, or group, others or another user may write it."""
    path = _configured()
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        problem = _untrusted(os.stat(path), follow=True)
    except OSError as exc:
        problem = f"cannot be created ({exc.strerror or exc})"
    if problem is None and not os.access(path, os.W_OK | os.X_OK):
        problem = "is read-only"
    if problem is None:
        return path
    _warn_once(path, problem)
    return None


def _warn_once(path: Path, problem: str) -> None:
    with _warn_lock:
        if str(path) in _warned:
            return
        _warned.add(str(path))
    where = f"${ENV_VAR}" if os.environ.get(ENV_VAR) else f"the default (${ENV_VAR} is not set)"
    warnings.warn(f"eagle does not use the compile cache {path} ({where}): it {problem}. "
                  f"Kernels are compiled in memory and not kept for the next process; set "
                  f"{ENV_VAR} to a folder of your own that only you can write.", RuntimeWarning,
                  stacklevel=2)


def _untrusted(st: os.stat_result, follow: bool = False) -> str | None:
    if not stat.S_ISDIR(st.st_mode):
        return "is not a folder" if follow else "is not a folder (or is a link)"
    if os.name != "posix":  # elsewhere the mode bits do not say who may write
        return None
    if st.st_uid != _uid():
        return f"is owned by another user (uid {st.st_uid})"
    if st.st_mode & 0o022:
        return f"may be written by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _uid() -> int:
    return os.geteuid() if hasattr(os, "geteuid") else 0


def key(*parts: object) -> str:
    """A short stable hash of ``parts`` (their JSON form)."""
    text = json.dumps([str(p) for p in parts])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def entry_dir(backend: str, entry_key: str) -> Path | None:
    """The folder of one cache entry, every level of it private to the user (made again if it
    is not); None when the cache cannot be used (``root``)."""
    base = root()
    if base is None:
        return None
    path = base
    try:
        for part in (backend, entry_key):
            path = private_folder(path / part)
    except OSError as exc:
        _warn_once(base, f"cannot hold an entry ({exc.strerror or exc})")
        return None
    return path


def private_folder(path: Path) -> Path:
    """Make ``path`` a folder of this user's that nobody else may write: whatever else is
    there (a file, a link, a folder of others or open to them) is removed first."""
    for _ in range(3):  # another process may be making or removing it at the same moment
        try:
            if _untrusted(os.lstat(path)) is None:
                return path
            discard(path)
        except FileNotFoundError:
            pass
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            continue
    if _untrusted(os.lstat(path)) is not None:
        raise PermissionError(f"{path} cannot be made a private folder")
    return path


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that no reader ever sees a partial file (a Ctrl-C
    meanwhile is raised once the file is in place)."""
    with deferred_interrupts():
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=_PARTIAL)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def store(path: Path, data: bytes) -> None:
    """``write_atomic`` into the cache, removing first whatever is in the way (a folder)."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            discard(path)
    except FileNotFoundError:
        pass
    write_atomic(path, data)


def read_verified(path: Path, digest: str) -> bytes | None:
    """The file's bytes if it is one and its SHA-256 is ``digest``; None otherwise."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return data if hashlib.sha256(data).hexdigest() == digest else None


def discard(path: Path) -> None:
    """Remove whatever is at ``path`` (a file, a link, a folder and all in it); nothing there
    is fine, and so is another process removing it at the same time."""
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink()
    except FileNotFoundError:
        pass


def keep_only(folder: Path, names: set[str]) -> None:
    """Remove whatever else is in the entry ``folder`` (a planted ``__pycache__``, files of an
    older version), leaving files being written (``write_atomic``) to their writers."""
    try:
        found = os.listdir(folder)
    except OSError:
        return
    for name in found:
        if name not in names and not (name.startswith(".") and name.endswith(_PARTIAL)):
            discard(folder / name)
