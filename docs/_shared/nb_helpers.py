"""Helpers every documentation notebook imports (from ``../../_shared`` of its own folder)."""

from __future__ import annotations

__all__ = ["gpu_available", "xp_for"]


def gpu_available() -> bool:
    """True only when a CUDA device is present *and* eagle can run kernels on it."""
    try:
        from eagle.cuda import is_available
    except ImportError:
        return False
    try:
        return bool(is_available())
    except Exception:
        return False


def xp_for(device: str):
    """The array module for ``device``: NumPy for ``"cpu"``, CuPy for ``"gpu"``."""
    if device == "cpu":
        import numpy

        return numpy
    if device in ("gpu", "cuda") or device.startswith("cuda:"):
        try:
            import cupy
        except ImportError as exc:
            raise ImportError("xp_for('gpu') needs CuPy: pip install 'eagle-hawk[cupy]'") from exc
        return cupy
    raise ValueError(f"xp_for(device): device must be 'cpu' or 'gpu', got {device!r}")
