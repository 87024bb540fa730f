"""Files written so that a crash never leaves a bad one, and what killed writes leave behind.

``write_atomic`` streams into a temporary beside the target, flushes it, renames it into place
and flushes the folder (so the rename itself survives a power cut): a reader finds either the
previous file or the new one, whole. Checkpoints and the compile cache both write this way.

Temporaries are named ``.NAME.eagle-HOST-PID-TOKEN.tmp``, and their writer holds an exclusive
``flock`` on each while it writes. A write that was killed leaves its temporary behind;
``remove_orphans(path)`` removes every such orphan of ``path`` whose writer is gone: written on
this host, no lock held on it (the kernel drops a dead process's locks), and its process no
longer running (exited, or a zombie its parent has not reaped yet) or the file older than a
minute (the process number reused); and those named the way ``tempfile.mkstemp`` names them
(``.NAME.XXXXXXXX.tmp``, how eagle wrote them before). A temporary of a live writer, or of
another host, is left alone: it may be a write in progress.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
import threading
import time
from pathlib import Path

try:
    import fcntl
except ImportError:  # not POSIX: a writer's process number alone says if it is gone
    fcntl = None

__all__ = ["write_atomic", "remove_orphans", "is_temporary", "fsync_folder"]

_HOST = re.sub(r"[^A-Za-z0-9]", "-", socket.gethostname()) or "host"
_in_flight: set[Path] = set()  # this process's temporaries being written now
_in_flight_lock = threading.Lock()


def is_temporary(name: str) -> bool:
    """Whether a file name is one ``write_atomic`` (or an earlier eagle) gives a temporary."""
    return name.startswith(".") and name.endswith(".tmp")


def write_atomic(path: Path, write) -> None:
    """``write(file)`` into a temporary beside ``path``, flushed, renamed to ``path``, and the
    folder flushed; the temporary removed if anything fails."""
    tmp = path.parent / f".{path.name}.eagle-{_HOST}-{os.getpid()}-{secrets.token_hex(4)}.tmp"
    with _in_flight_lock:
        _in_flight.add(tmp)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                     0o600)
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)  # held until the file is closed, or this process dies
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fsync_folder(path.parent)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        with _in_flight_lock:
            _in_flight.discard(tmp)


def fsync_folder(folder: Path) -> None:
    """Flush a folder's entries (the rename) to disk, where the platform can (POSIX)."""
    if os.name == "nt":
        return
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    except OSError:  # some file systems cannot flush a folder; the rename is still atomic
        pass
    finally:
        os.close(fd)


_ORPHAN_AGE_S = 60.0  # no write holds its temporary unlocked this long after creating it


def remove_orphans(path: Path) -> None:
    """Remove the temporaries that killed writes to ``path`` left behind (module docstring)."""
    path = Path(path)
    ours = re.compile(rf"\.{re.escape(path.name)}\.eagle-([A-Za-z0-9-]+)-(\d+)-[0-9a-f]{{8}}\.tmp")
    legacy = re.compile(rf"\.{re.escape(path.name)}\.[A-Za-z0-9_]{{8}}\.tmp")
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return
    for entry in entries:
        tmp = path.parent / entry.name
        match = ours.fullmatch(entry.name)
        if match:
            with _in_flight_lock:
                if tmp in _in_flight:
                    continue
            if match.group(1) != _HOST or not _writer_gone(tmp, int(match.group(2))):
                continue
        elif not legacy.fullmatch(entry.name):
            continue
        try:
            tmp.unlink()
        except OSError:  # gone already, or not a file: not ours to force
            pass


def _writer_gone(tmp: Path, pid: int) -> bool:
    """Whether the process that made ``tmp`` on this host has stopped writing it for good."""
    if fcntl is None:
        return pid == os.getpid() or not _running(pid)
    try:
        fd = os.open(tmp, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False  # gone already, or a link: not ours to judge
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # its writer holds it: a write in progress
        if pid == os.getpid() or not _running(pid):
            return True
        return time.time() - os.fstat(fd).st_mtime > _ORPHAN_AGE_S  # the number was reused
    finally:
        os.close(fd)


def _running(pid: int) -> bool:
    """Whether a process ``pid`` runs on this host (assumed so where that cannot be asked). A
    zombie (exited, not yet reaped by its parent) does not."""
    if os.name == "nt":
        return True  # os.kill(pid, 0) would send CTRL_C_EVENT there
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it runs, as another user
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):  # no /proc (macOS): kill(pid, 0) said it exists
        return True
    return state not in (b"Z", b"X")
