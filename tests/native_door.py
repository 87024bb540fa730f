"""The native door in this process, for the suites written against the ``cuda.bindings`` door.

``tests/fake_driver.py`` and ``tests/emulated_gpu.py`` stand in for ``cuda.bindings.driver``
under eagle's Python GPU layer. The same suites also run through the native door
(``use_native_door``, what ``EAGLE_CUDA_NATIVE=1`` selects), where
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
already loaded the library without the stand-in skips these tests (no test in this process
should load it so: test_docs_outputs points ``eagle info`` at no library).
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

#: the ids of a ``door`` parameter: both doors, in one pytest process (the native one is the
#: slow tier: it builds native/); ``EAGLE_TEST_DOORS=bindings`` or ``=native`` runs one.
#: (They ran in separate processes for a while after 4 full runs crashed with a corrupted heap
#: once both had run; that crash was not reproduced since, in runs of these suites and the
#: emulated-GPU ones after them under glibc's malloc checks and under ASan, and the door no
#: longer follows ``os.environ``: see ``opened``.)
DOORS = [pytest.param(door, marks=pytest.mark.slow) if door == "native" else door
         for door in os.environ.get("EAGLE_TEST_DOORS", "bindings,native").split(",")]

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
        self.lib.fakecuda_set_host_modules.argtypes = [ctypes.c_char_p]
        self.lib.fakecuda_set_host_modules(str(folder).encode())
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

    def forget(self) -> None:
        """Start the call log and the counters afresh."""
        self.lib.fakecuda_reset()

    @property
    def waits(self) -> list[tuple[int, int]]:
        """(waiting stream, stream the event was last recorded on), as ``FakeDriver.waits``."""
        recorded, out = {}, []
        for line in self.log:
            if line.startswith(("cuEventRecord(", "cuStreamWaitEvent(")):
                name = line.split("(", 1)[0]
                detail = self._pointers(line)
                if name == "cuEventRecord":
                    recorded[detail["event"]] = detail["stream"]
                else:
                    out.append((detail["stream"], recorded.get(detail["event"])))
        return out

    @staticmethod
    def _pointers(line: str) -> dict[str, int]:
        detail = line[line.index("(") + 1:line.index(")")]
        return {key: 0 if value == "(nil)" else int(value, 16)
                for key, value in (p.split("=") for p in detail.split())}

    @property
    def graph_launch_streams(self) -> list[int]:
        """The stream of every ``cuGraphLaunch``, as ``FakeDriver.graph_launch_streams``."""
        return [self._pointers(line)["stream"] for line in self.log
                if line.startswith("cuGraphLaunch(")]

    @property
    def context_errors(self) -> list[str]:
        """The calls refused for want of a current context, as ``FakeDriver.context_errors``."""
        return [line.split("(", 1)[0] for line in self.log
                if "CUDA_ERROR_INVALID_CONTEXT" in line]

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


_loaded: list[str | None] = []  # why the native layer cannot run over the stand-in, or None


def load_over_the_standin() -> str | None:
    """Load ``libeagle_cuda`` over the stand-in, once per process; return why the native door
    cannot open here, or None. The library and the stand-in read ``EAGLE_CUDA_LIBRARY`` and
    ``EAGLE_LIBCUDA`` when they load and never again, so those two are set for that moment
    only: before any native object exists, with no run going on in any thread. The door
    itself is chosen by ``use_native_door`` and the stand-in's folder of host builds by
    ``fakecuda_set_host_modules``: nothing here writes the environment while runs go on."""
    if not _loaded:
        from eagle.cuda import _native

        names = {"EAGLE_CUDA_LIBRARY": str(LIBRARY), "EAGLE_LIBCUDA": str(STANDIN)}
        saved = {name: os.environ.get(name) for name in names}
        os.environ.update(names)
        try:
            _loaded.append(_native.unavailable())
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
    return _loaded[0]


@contextmanager
def opened(folder: Path):
    """The native door (``use_native_door``) over the stand-in, with a CUDA backend that
    builds kernels for the host in ``folder``, for the ``with`` block; yields a
    ``NativeDevice``."""
    build()
    from eagle.backend import registered
    from eagle.cuda._native import use_native_door
    from eagle.cuda.backend import CudaBackend
    from eagle.cuda.hostbuild import host_module_compiler

    why = load_over_the_standin()
    if why:
        pytest.skip(f"the native layer was loaded in this process without the stand-in "
                    f"libcuda: {why}")
    device = NativeDevice(folder)
    with use_native_door(), registered(CudaBackend(host_module_compiler(folder))):
        yield device


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


def forget(driver) -> None:
    """Forget what ``driver`` (a fake driver or a ``NativeDevice``) recorded so far: its waits,
    calls and graph launches' streams."""
    if isinstance(driver, NativeDevice):
        driver.forget()
    else:
        driver.waits.clear()
        driver.calls.clear()
        driver.graph_launch_streams.clear()


def bindings_door_only(driver, why: str) -> None:
    """Skip a case that cannot apply to the native door, saying why."""
    if isinstance(driver, NativeDevice):
        pytest.skip(f"not a case of the native door: {why}")


def loop_stream(runner) -> int:
    """The handle of the stream ``runner``'s GPU loop runs on, through either door."""
    loop = runner._loop.graph_loop()
    if hasattr(loop, "stream"):  # the Python layer's GraphLoop
        return int(loop.stream.handle)
    from eagle.cuda._native import current_stream

    return (loop._stream or current_stream(loop.kernel.ordinal)).handle


def control_of(runner) -> np.ndarray:
    """``runner``'s control block as its last run left it (``CONTROL_FIELDS``' order): the
    Python layer's host copy, or the C++ RunLoop's block read back."""
    loop = runner._loop.graph_loop()
    if hasattr(loop, "host_control"):
        return loop.host_control
    from eagle.cuda import _native
    from eagle.cuda.emit import CONTROL_FIELDS

    out = np.zeros(len(CONTROL_FIELDS), np.int64)
    lib = _native.library()
    _native.check(lib.eagle_memory_to_host(loop.kernel.ordinal, out.ctypes.data,
                                           lib.eagle_loop_control(loop._loop._ptr), out.nbytes))
    return out


def progress_address(runner) -> int:
    """The device address of the pinned memory ``runner``'s loop writes its progress to."""
    loop = runner._loop.graph_loop()
    if hasattr(loop, "progress"):
        return loop.progress.device_ptr
    from eagle.cuda import _native

    return _native.library().eagle_hostmapped_device(loop._progress._ptr)


def user_stream(driver, fake_handle: int) -> int:
    """A stream handle a user's library made: ``fake_handle`` for a fake driver (any number
    does), a real stream of the stand-in for the native door (kept alive with the door)."""
    if not isinstance(driver, NativeDevice):
        return fake_handle
    from eagle.cuda._native import Stream

    stream = Stream(0, non_blocking=True)
    driver.streams = [*getattr(driver, "streams", []), stream]
    return stream.handle
