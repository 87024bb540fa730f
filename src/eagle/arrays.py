"""Turning what a user binds into arrays eagle can run on, without copying.

NumPy arrays pass as they are; objects that export ``__array_interface__``, the buffer protocol
or DLPack (PyTorch CPU tensors, JAX CPU arrays) become NumPy views of the same memory. Which
device an array lives on is the backends' to say (``eagle.backend.device_of``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["as_host_array", "is_array_like"]


def is_array_like(value) -> bool:
    if isinstance(value, np.generic):  # a NumPy scalar is a number, not an array
        return False
    return (isinstance(value, np.ndarray) or hasattr(value, "__array_interface__")
            or hasattr(value, "__cuda_array_interface__") or hasattr(value, "__dlpack__")
            or isinstance(value, memoryview))  # fmt: skip


def as_host_array(value) -> np.ndarray:
    """A NumPy view of a host array-like value (no copy)."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__array_interface__") or isinstance(value, memoryview):
        return np.asarray(value)
    if hasattr(value, "__dlpack__"):
        return np.from_dlpack(value)
    raise TypeError(f"{type(value).__name__} is not an array")
