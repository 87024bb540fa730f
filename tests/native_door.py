"""The native door in this process, for the suites written against the ``cuda.bindings`` door.

``tests/fake_driver.py`` and ``tests/emulated_gpu.py`` stand in for ``cuda.bindings.driver``
under eagle's Python GPU layer. The same suites also run with ``EAGLE_CUDA_NATIVE=1``, where
``until_done``'s runner, ``GraphPipeline``, ``GraphComposer``, ``LoadedVector`` and
``repeat_while`` go through ``libeagle_cuda`` (``native/``) to the stand-in libcuda
(``native/tests/fakecuda``), which runs the generated kernels from host builds
(``eagle.cuda.hostbuild``). A suite's fixture takes a ``door`` parameter and, for ``native``,
uses ``opened()``: ``NativeDevice`` answers the questions those suites ask of their fake
driver (launches, graph launches, which entry points were called) from the stand-in's counters
and call log, and ``NativeArray`` is device memory of the native layer exported as CuPy exports
an array.

The library and the stand-in are loaded once per process (the driver table is read on first
use), so the first test that opens the native door decides for the process; a process that
already loaded the library without the stand-in skips these tests.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
NATIVE = ROOT / "build" / "native"
LIBRARY = NATIVE / "install" / "lib" / "libeagle_cuda.so"
STANDIN = NATIVE / "install" / "lib" / "libfakecuda.so"

#: the ids of a ``door`` parameter: the native one is the slow tier (it builds native/)
DOORS = ["bindings", pytest.param("native", marks=pytest.mark.slow)]

_built: list[str] = []  # "" once make native passed in this process, else why it did not


def build() -> None:
    """``make native`` once per process (incremental); skips where it cannot build."""
    if not _built:
        venv = Path(sys.executable).parent
        if (shutil.which("cmake") is None and not (venv / "cmake").exists()) \
                or shutil.which("g++") is None:
            _built.append("the native layer needs cmake and g++")
        else:
            done = subprocess.run(["make", "-s", "native", f"PYTHON={sys.executable}"],
                                  cwd=ROOT, capture_output=True, text=True,
                                  env={**os.environ, "PATH": f"{venv}:{os.environ['PATH']}"})
            if done.returncode != 0:
                raise AssertionError(f"make native failed:\n{done.stdout[-3000:]}\n"
                                     f"{done.stderr[-3000:]}")
            _built.append("")
    if _built[0]:
        pytest.skip(_built[0])


class NativeDevice:
    """The stand-in libcuda under the native layer, asked what a ``FakeDriver`` is asked."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.lib = ctypes.CDLL(str(STANDIN))
        self.lib.fakecuda_log.restype = ctypes.c_char_p
        self.lib.fakecuda_counter.restype = ctypes.c_longlong
        self.lib.fakecuda_counter.argtypes = [ctypes.c_char_p]
        self.lib.fakecuda_reset()

    def counter(self, name: str) -> int:
        return self.lib.fakecuda_counter(name.encode())

    @property
    def log(self) -> list[str]:
        """The stand-in's call log since the door opened: ``cuX(detail) -> RESULT``."""
        return self.lib.fakecuda_log().decode().splitlines()

    @property
    def calls(self) -> list[str]:
        """The driver entry points called since the door opened, in order."""
        return [line.split("(", 1)[0] for line in self.log if line.startswith("cu")]

    @property
    def launches(self) -> int:
        return self.counter("launches")

    @property
    def graph_launches(self) -> int:
        return self.counter("graph launches")


class NativeArray:
    """A copy of a host array in the native layer's device memory (host memory under the
    stand-in), exported as CuPy exports one; ``get()`` copies it back."""

    def __init__(self, host):
        from eagle.cuda._native import Buffer

        host = np.ascontiguousarray(host)
        self.shape, self.dtype = host.shape, host.dtype
        self.buffer = Buffer(max(host.nbytes, 1))
        self.buffer.upload(host)
        self.address = self.buffer.ptr
        self.__cuda_array_interface__ = dict(data=(self.address, False), shape=host.shape,
                                             typestr=host.dtype.str, strides=None, version=3,
                                             stream=None)

    def get(self) -> np.ndarray:
        out = np.empty(self.shape, self.dtype)
        self.buffer.download(out)
        return out


@contextmanager
def opened(folder: Path):
    """``EAGLE_CUDA_NATIVE=1`` over the stand-in, with a CUDA backend that builds kernels for
    the host in ``folder``, for the ``with`` block; yields a ``NativeDevice``."""
    build()
    from eagle.backend import registered
    from eagle.cuda import _native
    from eagle.cuda.backend import CudaBackend
    from eagle.cuda.hostbuild import host_module_compiler

    saved = {k: os.environ.get(k) for k in ("EAGLE_CUDA_NATIVE", "EAGLE_CUDA_LIBRARY",
                                             "EAGLE_LIBCUDA", "FAKECUDA_HOST_MODULES")}
    os.environ.update(EAGLE_CUDA_NATIVE="1", EAGLE_CUDA_LIBRARY=str(LIBRARY),
                      EAGLE_LIBCUDA=str(STANDIN), FAKECUDA_HOST_MODULES=str(folder))
    try:
        why = _native.unavailable()
        if why:
            pytest.skip(f"the native layer was loaded in this process without the stand-in "
                        f"libcuda: {why}")
        with registered(CudaBackend(host_module_compiler(folder))):
            yield NativeDevice(folder)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def door_opened(door: str, folder: Path, bindings_driver, compiler=None):
    """The ``door`` a test runs through: ``"bindings"``, the Python GPU layer over
    ``bindings_driver`` (a ``FakeDriver``); ``"native"``, ``opened(folder)``."""
    if door == "native":
        with opened(folder) as device:
            yield device
        return
    from fake_driver import installed

    with installed(bindings_driver, compiler=compiler) as driver:
        yield driver


def device_array(driver, host):
    """``host`` copied to the device of ``driver`` (a fake driver or a ``NativeDevice``)."""
    if isinstance(driver, NativeDevice):
        return NativeArray(host)
    from fake_driver import GpuArray

    return GpuArray(driver, host)
