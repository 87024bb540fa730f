"""Per-chunk results on disk, so that a run that dies (client, scheduler, every worker) resumes.

With ``checkpoint=folder`` each chunk's worker writes the chunk's final state (the written
parameters only) and its report to ``folder/chunk-<lo>-<hi>.npz`` once the chunk is done: into
a temporary file first, then renamed, so a file that exists is complete. A rerun with the same
folder reads a finished chunk back instead of running it; its bits are the bits it was written
with, so the whole result is the same as an uninterrupted run.

A file belongs to one run: it holds the run's fingerprint (the kernel's IR digest and dtypes,
``max_steps``, ``steps_per_launch``, the uniform values and a token of every per-sample input:
NumPy arrays by content, dask arrays by name, ``init`` by its module and name and the
closure/defaults it carries), and a file with another fingerprint is run again and overwritten.
The folder must be one that every worker (and, to skip making a finished chunk's inputs, the
client) can see: a shared file system.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path

import numpy as np

from ._reports import ChunkReport

__all__ = ["path_of", "fingerprint", "is_done", "save", "load"]

_FINGERPRINT = "__eagle_fingerprint__"
_REPORT = "__eagle_report__"


def path_of(folder, lo: int, hi: int) -> Path:
    return Path(folder) / f"chunk-{lo:013d}-{hi:013d}.npz"


def fingerprint(*parts) -> str:
    """A stable text token of ``parts`` (dask's ``tokenize``: content hashes for arrays)."""
    from dask.base import tokenize

    return tokenize(*parts)


def _read_fingerprint(path: Path) -> str | None:
    try:
        with np.load(path, allow_pickle=False) as f:
            return str(f[_FINGERPRINT][()])
    except (OSError, KeyError, ValueError, EOFError):
        return None  # missing, or torn by something other than eagle: run the chunk again


def is_done(folder, lo: int, hi: int, token: str) -> bool:
    """Whether ``folder`` holds this run's finished chunk ``lo:hi`` (where the caller can see
    the folder; a worker decides again for itself)."""
    path = path_of(folder, lo, hi)
    return path.exists() and _read_fingerprint(path) == token


def save(folder, lo: int, hi: int, token: str, arrays: dict, report: ChunkReport) -> None:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=".chunk-", suffix=".npz.partial")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays, **{_FINGERPRINT: np.array(token),
                                     _REPORT: np.array(json.dumps(asdict(report)))})
        os.replace(temporary, path_of(folder, lo, hi))
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def load(folder, lo: int, hi: int, token: str) -> tuple[dict, ChunkReport] | None:
    """This run's finished chunk ``lo:hi`` (arrays, report), or None if it is not there."""
    path = path_of(folder, lo, hi)
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as f:
            if str(f[_FINGERPRINT][()]) != token:
                return None
            report = ChunkReport(**json.loads(str(f[_REPORT][()])))
            arrays = {k: f[k] for k in f.files if k not in (_FINGERPRINT, _REPORT)}
    except (OSError, KeyError, ValueError, EOFError):
        return None
    return arrays, report
