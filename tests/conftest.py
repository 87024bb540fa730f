"""Shared test set-up: the compilation cache the tests share, and the GPU marker's skip."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEST_CACHE = ROOT / ".eagle-test-cache"  # ignored by git; `make clean` removes it
# What decides the code a compile writes: every backend and emitter, and hawk (its IR).
COMPILERS = [ROOT / "src/eagle/cpu", ROOT / "src/eagle/cuda", ROOT / "src/eagle/codegen.py",
             ROOT / "src/eagle/cache.py", ROOT / "src/hawk"]


def _compilers_digest() -> str:
    digest = hashlib.sha256()
    for root in COMPILERS:
        for path in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _shared_cache() -> Path:
    """The folder of ``TEST_CACHE`` for the compilers as they are now: a test run after
    another compiles only what changed, and a change to a backend, an emitter or hawk starts
    a new folder (never code an older emitter wrote); the folders of older versions go."""
    folder = TEST_CACHE / _compilers_digest()
    if TEST_CACHE.is_dir():
        for old in TEST_CACHE.iterdir():
            if old != folder:
                shutil.rmtree(old, ignore_errors=True)
    TEST_CACHE.mkdir(mode=0o700, exist_ok=True)
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


# CI sets EAGLE_CACHE_DIR itself (.ci/run); tests of the cache itself use folders of their own.
if not os.environ.get("EAGLE_CACHE_DIR"):
    os.environ["EAGLE_CACHE_DIR"] = str(_shared_cache())


def _gpu_reason() -> str | None:
    try:
        from eagle.cuda import is_available
    except ImportError as exc:
        return f"eagle.cuda is not importable ({exc})"
    return None if is_available() else "no usable CUDA device"


def pytest_collection_modifyitems(config, items):
    reason = None
    for item in items:
        if "gpu" in item.keywords:
            reason = reason or _gpu_reason()
            if reason:
                item.add_marker(pytest.mark.skip(reason=f"needs a GPU: {reason}"))
