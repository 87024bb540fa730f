"""Shared test set-up: the compilation cache the tests share, the GPU marker's skip, and the
check that every refusal the suite catches names the user's argument."""

from __future__ import annotations

import hashlib
import os
import re
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


# -- every refusal the suite raises names the user's argument, never a kernel's own --------
# The names ``eagle.ode.solve`` gives its kernels' parameters (the user never wrote them): a
# refusal that quotes one failed to say which of the user's arguments was wrong (issue 40).
INTERNAL_NAMES = re.compile(r"'(k1|s_\w+|saves|stops|save_(first|every|count)|"
                            r"stop_(first|every)|table[0-9])'")
refusals_checked = [0]


def check_refusal(exc: BaseException | None) -> None:
    """``AssertionError`` if ``exc`` (a ``TypeError``/``ValueError``, the binding errors among
    them) quotes an internal name."""
    if not isinstance(exc, TypeError | ValueError):
        return
    refusals_checked[0] += 1
    found = INTERNAL_NAMES.search(str(exc))
    if found:
        raise AssertionError(f"a refusal names the internal parameter {found.group(0)} instead "
                             f"of the user's argument: {type(exc).__name__}: {exc}") from exc


class _CheckedRaises:
    """``pytest.raises``'s context, checking the refusal it caught (``check_refusal``)."""

    def __init__(self, context):
        self.context = context

    def __enter__(self):
        self.info = self.context.__enter__()
        return self.info

    def __exit__(self, kind, value, traceback):
        suppressed = self.context.__exit__(kind, value, traceback)
        if suppressed:
            check_refusal(value)
        return suppressed


_pytest_raises = pytest.raises


def _raises(expected, *args, **kwargs):
    if args and callable(args[0]):  # the call form: pytest.raises(E, func, *args)
        info = _pytest_raises(expected, *args, **kwargs)
        check_refusal(info.value)
        return info
    return _CheckedRaises(_pytest_raises(expected, *args, **kwargs))


pytest.raises = _raises


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"refusals checked for internal names: {refusals_checked[0]}")
