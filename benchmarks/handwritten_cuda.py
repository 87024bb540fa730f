"""The hand-written CUDA peers of ``gpu_ode_peers.py`` (sources in ``cuda_peers/*.cu``), built
three ways from the same text:

- ``cupy_module(name)``: NVRTC through CuPy's ``RawModule`` (``--fmad=false``, as eagle
  compiles by default, so a peer takes eagle's steps; ``fmad=True`` for the contracted build a
  CUDA programmer gets by default), on the device;
- ``cubin(name, arch)``: NVRTC through eagle's own binding (``eagle.cuda.nvrtc``) to a cubin,
  without a GPU: the compile check of the tests;
- ``HostPeers(name)``: the host C++ compiler behind a prelude that gives ``__global__``,
  ``threadIdx``, ``blockIdx`` and ``atomicAdd`` their one-thread meaning (blocks of one thread,
  run in index order; ``-ffp-contract=off``, IEEE double on x86-64 as on a GPU with
  ``--fmad=false``), so the peers run on a machine without a GPU: the rehearsal, and the tests
  that check they take eagle's steps.

``source(name)`` is the ``.cu`` file with its ``#include "..."`` lines replaced by the files
they name (each once), so NVRTC needs no include path. Importing this module needs neither
CuPy nor a GPU.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

FOLDER = Path(__file__).resolve().parent / "cuda_peers"
#: the adaptive kernels in models.cu (each also as NAME_saveat), by workload
ODE_KERNELS = {"lorenz": "lorenz_tsit5", "kepler": "kepler_dopri5", "fpu16": "fpu16_tsit5",
               "robertson": "robertson_rodas5p"}
#: the arguments of every adaptive kernel (solve.cuh's PEER_KERNELS), as C types
ODE_SIGNATURE = ("long long", "const double*", "const double*", "double", "double", "double",
                 "double", "long long", "double", "double", "long long", "double*", "double*",
                 "long long*", "long long*", "long long*", "double*")
#: oscillator.cu's kernel
CARD_KERNEL = "oscillator_steps"
CARD_SIGNATURE = ("long long", "double*", "double*", "double*", "const double*", "const double*",
                  "double", "long long", "long long", "long long*", "unsigned long long*")
BLOCK = 256

_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.M)


def source(name: str) -> str:
    """``cuda_peers/NAME`` with its local includes inlined (each file once: ``#pragma once``)."""
    seen: set[str] = set()

    def expand(file: str) -> str:
        if file in seen:
            return ""
        seen.add(file)
        text = (FOLDER / file).read_text()
        text = text.replace("#pragma once\n", "")
        return _INCLUDE.sub(lambda m: expand(m.group(1)), text)

    return expand(name)


def cubin(name: str, arch: str = "sm_90", fmad: bool = False) -> bytes:
    """NVRTC's cubin of ``cuda_peers/NAME`` for ``arch`` (no GPU needed)."""
    from eagle.cuda import nvrtc

    return nvrtc.compile_source(source(name), arch, target="cubin", fmad=fmad, name=name,
                                use_cache=False)


def cupy_module(name: str, fmad: bool = False):
    """``cupy.RawModule`` of ``cuda_peers/NAME``, compiled by NVRTC for the current device."""
    import cupy as cp

    return cp.RawModule(code=source(name), backend="nvrtc",
                        options=(f"--fmad={'true' if fmad else 'false'}",))


# -- the host build -----------------------------------------------------------------------------

PRELUDE = r"""
#include <math.h>
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__
struct PeerDim { unsigned long long x; };
static PeerDim threadIdx = {0}, blockIdx = {0}, blockDim = {1};
static inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) {
    unsigned long long o = *a; *a = o + v; return o; }
"""

_CTYPES = {"long long": ctypes.c_longlong, "unsigned long long": ctypes.c_ulonglong,
           "double": ctypes.c_double}


def _wrapper(kernel: str, signature: tuple[str, ...]) -> str:
    params = ", ".join(f"{c} a{k}" for k, c in enumerate(signature))
    names = ", ".join(f"a{k}" for k in range(len(signature)))
    return (f'extern "C" void host_{kernel}(long long threads, {params}) {{\n'
            f"    for (long long g = 0; g < threads; ++g) {{\n"
            f"        blockIdx.x = g;\n        {kernel}({names});\n    }}\n"
            "}\n")


def host_compiler() -> str | None:
    return shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")


def _cache_folder() -> Path:
    base = os.environ.get("EAGLE_CACHE_DIR") or tempfile.gettempdir()
    folder = Path(base) / "handwritten_cuda"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class HostPeers:
    """``cuda_peers/NAME`` built by the host C++ compiler; ``launch(kernel, threads, *args)``
    runs ``threads`` one-thread blocks of a kernel (arguments: NumPy arrays for pointers,
    numbers for the rest, as the kernel's signature says)."""

    def __init__(self, name: str, kernels: dict[str, tuple[str, ...]]):
        self.kernels = kernels
        text = PRELUDE + source(name) + "".join(_wrapper(k, s) for k, s in kernels.items())
        compiler = host_compiler()
        if compiler is None:
            raise RuntimeError("no host C++ compiler (g++, c++ or clang++) to build the peers")
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        library = _cache_folder() / f"{Path(name).stem}_{digest}.so"
        if not library.exists():
            path = library.with_suffix(".cpp")
            path.write_text(text)
            partial = library.with_suffix(f".{os.getpid()}.so")
            done = subprocess.run([compiler, "-std=c++17", "-O1", "-ffp-contract=off",
                                   "-fno-fast-math", "-shared", "-fPIC", "-w", str(path), "-o",
                                   str(partial)], capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"the host compiler refused cuda_peers/{name}:\n"
                                   f"{done.stderr[:4000]}")
            partial.replace(library)  # whole or not at all, for a second process
        self.library = ctypes.CDLL(str(library))

    def launch(self, kernel: str, threads: int, *args) -> None:
        signature = self.kernels[kernel]
        values = [ctypes.c_longlong(threads)]
        for kind, value in zip(signature, args, strict=True):
            if kind.endswith("*"):
                assert isinstance(value, np.ndarray) and value.flags.c_contiguous, kind
                values.append(ctypes.c_void_p(value.ctypes.data))
            else:
                values.append(_CTYPES[kind](value))
        getattr(self.library, f"host_{kernel}")(*values)


def ode_kernels() -> dict[str, tuple[str, ...]]:
    """models.cu's kernels and their signature."""
    return {f"{k}{s}": ODE_SIGNATURE for k in ODE_KERNELS.values() for s in ("", "_saveat")}


def card_kernels() -> dict[str, tuple[str, ...]]:
    return {CARD_KERNEL: CARD_SIGNATURE}
