"""Shared test set-up: a private compilation cache, and the GPU marker's skip."""

from __future__ import annotations

import os
import tempfile

import pytest

if not os.environ.get("EAGLE_CACHE_DIR"):
    os.environ["EAGLE_CACHE_DIR"] = tempfile.mkdtemp(prefix="eagle-test-cache-")


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
