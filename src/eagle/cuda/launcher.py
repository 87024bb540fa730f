"""Loaded GPU code: a ``Module`` from a cubin, and a ``Launcher`` that packs and launches.

A kernel's arguments are given by C type; ``Launcher`` turns arrays (anything with a device
pointer) and numbers into the array of pointers ``cuLaunchKernel`` wants, and keeps every packed
value alive as long as the packing is (a graph node copies them when it is made).
"""

from __future__ import annotations

import ctypes

import numpy as np

from .driver import activate, call, driver
from .stream import current_stream

__all__ = ["Module", "Launcher", "KernelArguments", "pack"]

_SCALARS = {"double": ctypes.c_double, "float": ctypes.c_float, "long long": ctypes.c_longlong,
            "int": ctypes.c_int, "bool": ctypes.c_bool, "u64": ctypes.c_uint64,
            "unsigned int": ctypes.c_uint32, "unsigned long long": ctypes.c_uint64}  # fmt: skip


class Module:
    """A cubin loaded on one device."""

    def __init__(self, cubin: bytes, ordinal: int = 0):
        activate(ordinal)
        self.ordinal = ordinal
        image = np.frombuffer(cubin, dtype=np.uint8)
        self.handle = call(driver().cuModuleLoadData, image.ctypes.data)
        self._functions = {}

    def function(self, name: str):
        activate(self.ordinal)
        if name not in self._functions:
            self._functions[name] = call(driver().cuModuleGetFunction, self.handle,
                                         name.encode())
        return self._functions[name]


def _pointer(value) -> int:
    for attribute in ("ptr", "device_ptr"):
        if hasattr(value, attribute) and isinstance(getattr(value, attribute), int):
            return getattr(value, attribute)
    interface = getattr(value, "__cuda_array_interface__", None)
    if interface is not None:
        return int(interface["data"][0])
    if isinstance(value, int | np.integer):
        return int(value)
    raise TypeError(f"a pointer argument needs a GPU array or an address, got "
                    f"{type(value).__name__}")


class KernelArguments:
    """Packed kernel arguments: ``address`` is the ``void**`` cuLaunchKernel takes.

    Args:
        ctypes_: the arguments' C types, as for ``Launcher``.
        values: one value per type, as for ``Launcher.launch``; a different count is a
            ``TypeError``.
    """

    def __init__(self, ctypes_: list[str], values: list):
        if len(ctypes_) != len(values):
            raise TypeError(f"the kernel takes {len(ctypes_)} arguments, got {len(values)}")
        self.values = []
        for ctype, value in zip(ctypes_, values, strict=True):
            if ctype.endswith("*") or ctype == "ptr":
                self.values.append(ctypes.c_uint64(_pointer(value)))
            else:
                self.values.append(_SCALARS[ctype](value))
        self.pointers = (ctypes.c_void_p * max(len(self.values), 1))(
            *[ctypes.addressof(v) for v in self.values])
        self.address = ctypes.addressof(self.pointers)


def pack(ctypes_: list[str], values: list) -> KernelArguments:
    return KernelArguments(ctypes_, values)


class Launcher:
    """A kernel function with its argument types; ``launch`` packs and launches it.

    Args:
        function: the ``CUfunction`` (a loaded module's entry).
        ctypes_: the C types of its arguments in order: ``"double"``, ``"float"``,
            ``"long long"``, ``"int"``, ``"bool"``, ``"u64"``, ``"unsigned int"``,
            ``"unsigned long long"``, or a pointer (``"double*"``, ``"ptr"``...).
        block: threads per block (default 256).
        ordinal: the device's index (default 0).
    """

    def __init__(self, function, ctypes_: list[str], block: int = 256, ordinal: int = 0):
        self.function = function
        self.ctypes = list(ctypes_)
        self.block = block
        self.ordinal = ordinal

    def launch(self, grid: int, *values, stream=None) -> KernelArguments:
        """Launch on ``stream`` (default: the current stream); return the packed arguments,
        which must stay alive until the launch has been issued (they are, here).

        Args:
            grid: the number of blocks (at least 1 is launched).
            *values: one value per argument type: a number for a scalar type; for a pointer
                a GPU array (``__cuda_array_interface__``, ``.ptr``) or an int address. A wrong
                count or an unusable value is a ``TypeError``.
            stream: the ``Stream`` to launch on, or None (default) for eagle's current one.
        """
        arguments = pack(self.ctypes, list(values))
        self.launch_packed(grid, arguments, stream)
        return arguments

    def launch_packed(self, grid: int, arguments: KernelArguments, stream=None) -> None:
        """Launch with arguments packed beforehand (no per-launch packing cost)."""
        stream = stream or current_stream(self.ordinal)
        activate(self.ordinal)
        call(driver().cuLaunchKernel, self.function, max(int(grid), 1), 1, 1, self.block, 1, 1,
             0, stream.handle, arguments.address, 0)
