"""Turning what a user binds into arrays eagle can run on, without copying.

NumPy arrays pass as they are; objects that export ``__array_interface__``, the buffer protocol
or DLPack (PyTorch CPU tensors, JAX CPU arrays) become NumPy views of the same memory. Arrays that
live on a GPU (``__cuda_array_interface__``, or a DLPack device other than the CPU) are reported
as such so the binding step can say which device they are on.
"""

from __future__ import annotations

import numpy as np

__all__ = ["device_of", "as_host_array", "is_array_like"]

_DLPACK_CPU = 1


def is_array_like(value) -> bool:
    if isinstance(value, np.generic):  # a NumPy scalar is a number, not an array
        return False
    return (isinstance(value, np.ndarray) or hasattr(value, "__array_interface__")
            or hasattr(value, "__cuda_array_interface__") or hasattr(value, "__dlpack__")
            or isinstance(value, memoryview))  # fmt: skip


def device_of(value) -> str:
    """``"cpu"`` or ``"cuda:K"`` for an array-like value."""
    if isinstance(value, np.ndarray):
        return "cpu"
    if hasattr(value, "__cuda_array_interface__"):
        return f"cuda:{_cuda_ordinal(value)}"
    if hasattr(value, "__dlpack_device__"):
        kind, ordinal = value.__dlpack_device__()
        return "cpu" if int(kind) == _DLPACK_CPU else f"cuda:{int(ordinal)}"
    return "cpu"


def _cuda_ordinal(value) -> int:
    device = getattr(value, "device", None)
    ordinal = getattr(device, "id", None)
    if ordinal is None:
        ordinal = getattr(device, "index", None)
    return int(ordinal or 0)


def as_host_array(value) -> np.ndarray:
    """A NumPy view of a host array-like value (no copy)."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__array_interface__") or isinstance(value, memoryview):
        return np.asarray(value)
    if hasattr(value, "__dlpack__"):
        return np.from_dlpack(value)
    raise TypeError(f"{type(value).__name__} is not an array")
