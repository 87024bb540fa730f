"""The on-disk compilation cache: where it lives, whom it trusts, and how it heals.

Every entry is a folder named by a key that hashes everything the compiled code depends on (the
IR, the dtypes, the backend and toolchain versions). Files are written to a temporary name,
flushed to disk and renamed into place, so a reader sees either no file or a complete one.

Nothing read back is trusted for being there:

- a file is read only if it is a regular file of a bounded size (``read_file``: never a link, a
  FIFO or a device, so a read can neither block nor run without end);
- what a backend runs is sealed to its entry: ``seal`` is an HMAC-SHA-256, under a key of this
  cache's own (``seal.key`` in the root, readable only by the user), of the entry's key, the
  file's role, and every byte the backend will act on (for the CPU, the symbol it calls and the
  object code). A file copied in from another entry, another kernel's code under a valid
  header, a symbol changed, or a bit flipped with its SHA-256 recomputed does not verify, and is
  compiled and written again, never run. (Whoever can read the key can forge a seal; they can
  also edit eagle's own installed source: the seal guards against files that moved or changed,
  not against the user's own account.)
- a backend keeps in an entry only the files it knows (``keep_only``), and the temporaries that
  killed writes left there are removed as those beside checkpoints are (``eagle.atomic_files``);
  whatever does not verify, whatever its shape (a file where a folder belongs, a folder where a
  file belongs, bad bytes, a piece missing), is removed (``discard``) and written again.

The cache is used only where nobody else could have written it, as OpenSSH asks of ``~/.ssh``:
the root must be a folder of this user's that neither group nor others may write. A root that
is not (or cannot be created, or is read-only) is not used: ``root()`` warns once, naming
``EAGLE_CACHE_DIR``, and returns None, and the backends then compile in memory. Folders below
the root that fail the same test are the cache's own and are removed and made again.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import shutil
import stat
import threading
import warnings
from pathlib import Path

from . import atomic_files
from .interrupts import deferred_interrupts

__all__ = ["ENV_VAR", "cache_dir", "root", "entry_dir", "private_folder", "key", "write_atomic",
           "store", "read_file", "read_verified", "seal", "sealed", "discard", "keep_only",
           "MAX_FILE_BYTES"]

ENV_VAR = "EAGLE_CACHE_DIR"
#: the largest file the cache reads back (object code, cubins and PTX are far smaller)
MAX_FILE_BYTES = 1 << 30
_KEY_NAME = "seal.key"  # in the root: the key of every seal in this cache
_KEY_BYTES = 32
_warned: set[str] = set()
_warn_lock = threading.Lock()
_keys: dict[str, bytes] = {}
_key_lock = threading.Lock()


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
        atomic_files.write_atomic(path, lambda f: f.write(data))


def store(path: Path, data: bytes) -> None:
    """``write_atomic`` into the cache, removing first whatever is in the way (a folder)."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            discard(path)
    except FileNotFoundError:
        pass
    write_atomic(path, data)


def read_file(path: Path, limit: int = MAX_FILE_BYTES) -> bytes | None:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes; None for
    anything else (missing, a link, a FIFO, a device, a folder, larger), without blocking."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) \
        | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, size = [], 0
        while size <= limit:  # to the end, not to fstat's size: the file may be growing
            chunk = os.read(fd, min(1 << 24, limit + 1 - size))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
        return None
    except OSError:
        return None
    finally:
        os.close(fd)


def read_verified(path: Path, digest: str) -> bytes | None:
    """The file's bytes if it is one (``read_file``) and its SHA-256 is ``digest``; None
    otherwise."""
    data = read_file(path)
    return data if data is not None and hashlib.sha256(data).hexdigest() == digest else None


def seal(entry_key: str, role: str, *parts: bytes) -> str:
    """The seal of ``parts`` in the entry ``entry_key`` as its ``role`` (a file's name): an
    HMAC-SHA-256 under this cache's key (module docstring), hex. Each part is length-prefixed,
    so no two different lists of parts have one seal."""
    mac = hmac.new(_seal_key(), digestmod="sha256")
    for part in (entry_key.encode(), role.encode(), *parts):
        mac.update(len(part).to_bytes(8, "little"))
        mac.update(part)
    return mac.hexdigest()


def sealed(digest: object, entry_key: str, role: str, *parts: bytes) -> bool:
    """Whether ``digest`` is the seal of ``parts`` in ``entry_key`` as ``role``."""
    return isinstance(digest, str) and hmac.compare_digest(digest, seal(entry_key, role, *parts))


def _seal_key() -> bytes:
    """This cache's key (``seal.key`` in the root), made on first use: 32 random bytes in a
    regular file of this user's that nobody else may read or write. A key file that is not
    that is replaced (what it sealed is then compiled again). Where the cache cannot be used,
    a key for this process alone."""
    base = root()
    where = str(base) if base is not None else ""
    with _key_lock:
        if where not in _keys:
            _keys[where] = _read_or_make_key(base) if base is not None \
                else secrets.token_bytes(_KEY_BYTES)
        return _keys[where]


def _read_or_make_key(base: Path) -> bytes:
    path = base / _KEY_NAME
    for _ in range(3):  # another process may be making it at the same moment
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            st = None
        if st is not None:
            data = read_file(path, _KEY_BYTES)
            private = stat.S_ISREG(st.st_mode) and st.st_uid == _uid() \
                and not st.st_mode & 0o077
            if data is not None and len(data) == _KEY_BYTES and (private or os.name != "posix"):
                return data
            discard(path)
        tmp = base / f".{_KEY_NAME}.{secrets.token_hex(8)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                         0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(secrets.token_bytes(_KEY_BYTES))
                f.flush()
                os.fsync(f.fileno())
            os.link(tmp, path)  # whole or not at all; fails if another process got there first
        except FileExistsError:
            continue
        except OSError:
            break
        finally:
            Path(tmp).unlink(missing_ok=True)
    return secrets.token_bytes(_KEY_BYTES)  # nothing sealed now is found by a later process


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
    older version, temporaries of other names), and the temporaries of ``names`` whose writers
    are gone (``atomic_files.remove_orphans``), leaving writes in progress to their writers."""
    try:
        found = os.listdir(folder)
    except OSError:
        return
    for name in found:
        if name in names or (atomic_files.is_temporary(name)
                             and any(name.startswith(f".{kept}.") for kept in names)):
            continue
        discard(folder / name)
    for name in names:
        atomic_files.remove_orphans(folder / name)
