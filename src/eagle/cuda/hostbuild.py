"""A host build of an artifact: eagle's generated CUDA C++ compiled for the host CPU.

``python -m eagle compile K.py:k --target ptx --host-build`` writes ``k.host.so`` beside
``k.ptx``. The stand-in libcuda (``native/tests/fakecuda``) runs it when it is asked to load
that PTX (it finds the build by the SHA-256 the build records, in the folders
``FAKECUDA_HOST_MODULES`` lists), so the native layer, its graphs and WHILE nodes run end to end
on a machine without a GPU, on the same generated source the PTX was compiled from.

The prelude gives the CUDA built-ins their meaning for blocks of one thread (what
``tests/host_cuda.py`` and the emulated GPU do): ``__syncthreads_count(p)`` is ``p``, a warp
shuffle returns the thread's own value, ``__ballot_sync`` is lane 0's bit, atomics are plain
read-modify-writes. The host's IEEE arithmetic with ``-ffp-contract=off`` is what the GPU
computes with ``--fmad=false``, so kernels without library math functions give the CPU
backend's bits.

The build's ABI (what the stand-in reads): ``eagle_host_module_image_sha256`` (the SHA-256 of
the PTX text, up to its terminating NUL), ``eagle_host_module_kernels`` (one line per kernel:
its name, then its parameters' sizes in bytes, comma-separated), ``eagle_condition_hook`` (set
by the stand-in; ``cudaGraphSetConditional`` calls it) and ``host_launch_NAME(void** params,
long long threads)``, which runs thread ``g`` of the grid as block ``g`` of one thread.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from pathlib import Path

from hawk.ir import Program

from .emit import emit_cuda

__all__ = ["KEYWORDS", "ONE_THREAD", "BITS", "PRELUDE", "host_build_source",
           "write_host_build", "host_compiler", "host_module_compiler"]

# The prelude's pieces, which tests/host_cuda.py's preludes (blocks of one thread that count
# their atomics, and real blocks of host threads) share with this one.
#: CUDA's keywords as plain C++
KEYWORDS = r"""
#include <math.h>
#include <string.h>
#define __global__
#define __device__
#define __forceinline__ inline
#define __cudart_builtin__
#define CUDARTAPI
#define __launch_bounds__(...)
"""
#: blocks of one thread: no barrier to wait at; a shuffle and a ballot see only this thread
ONE_THREAD = r"""
#define __shared__
static inline void __syncthreads() {}
struct EagleDim { unsigned long long x; };
static EagleDim threadIdx = {0}, blockIdx = {0}, blockDim = {1};
static inline int __syncthreads_count(int p) { return p != 0; }
static inline long long __shfl_down_sync(unsigned, long long v, int) { return v; }
static inline unsigned int __ballot_sync(unsigned, int p) { return p != 0 ? 1u : 0u; }
"""
#: the bit helpers
BITS = r"""
static inline int __popc(unsigned int v) { return __builtin_popcount(v); }
static inline double __longlong_as_double(unsigned long long v) {
    double d; memcpy(&d, &v, 8); return d; }
"""
PRELUDE = KEYWORDS + ONE_THREAD + r"""
static inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) {
    unsigned long long o = *a; *a = o + v; return o; }
static inline unsigned long long atomicMax(unsigned long long* a, unsigned long long v) {
    unsigned long long o = *a; if (v > o) *a = v; return o; }
""" + BITS

_KERNEL = re.compile(r'extern\s+"C"\s+__global__\s+void\s+'
                     r"(?:__launch_bounds__\(\d+(?:,\s*\d+)?\)\s+)?"
                     r"(\w+)\s*\(([^)]*)\)\s*\{", re.S)
_SIZES = {"double": 8, "float": 4, "long long": 8, "int": 4, "unsigned int": 4, "bool": 1,
          "unsigned long long": 8, "eagle_u64": 8, "cudaGraphConditionalHandle": 8}


def _parameters(params: str) -> list[str]:
    """The C types of a kernel's parameter list (``const double*``, ``long long``)."""
    types = []
    for param in (p.strip() for p in params.split(",") if p.strip()):
        text = param.replace("__restrict__", " ")
        types.append(" ".join(text.split()[:-1]).replace(" *", "*"))
    return types


def _size(ctype: str) -> int:
    return 8 if ctype.endswith("*") else _SIZES[ctype.removeprefix("const ").strip()]


def host_build_source(program: Program | str, image_sha256: str) -> str:
    """The C++ source of the host build of ``program`` (or of generated CUDA source),
    recording ``image_sha256``."""
    source = program if isinstance(program, str) else emit_cuda(program)
    table, wrappers = [], []
    for name, params in _KERNEL.findall(source):
        types = _parameters(params)
        table.append(f"{name} {','.join(str(_size(t)) for t in types)}")
        arguments = ", ".join(f"*({t}*)p[{k}]" for k, t in enumerate(types))
        wrappers.append(f'extern "C" void host_launch_{name}(void** p, long long threads) {{\n'
                        f"    for (long long g = 0; g < threads; ++g) {{ blockIdx.x = g; "
                        f"{name}({arguments}); }}\n}}\n")
    kernels = "".join(f"{line}\\n" for line in table)
    return (PRELUDE + source + f"""
extern "C" void (*eagle_condition_hook)(unsigned long long, unsigned int) = 0;
extern "C" void cudaGraphSetConditional(unsigned long long h, unsigned int v) {{
    eagle_condition_hook(h, v); }}
extern "C" const char eagle_host_module_image_sha256[] = "{image_sha256}";
extern "C" const char eagle_host_module_kernels[] = "{kernels}";
""" + "".join(wrappers))


def host_compiler() -> str | None:
    return shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")


def _build(source: str, library: Path) -> None:
    compiler = host_compiler()
    if compiler is None:
        raise RuntimeError("a host build needs a host C++ compiler (g++, c++ or clang++)")
    cpp = library.with_suffix(".cpp")
    cpp.write_text(source)
    done = subprocess.run([compiler, "-std=c++17", "-O1", "-ffp-contract=off", "-fno-fast-math",
                           "-shared", "-fPIC", "-w", str(cpp), "-o", str(library)],
                          capture_output=True, text=True)
    cpp.unlink()
    if done.returncode != 0:
        raise RuntimeError(f"the host compiler refused the generated CUDA source:\n"
                           f"{done.stderr[:4000]}")


def host_module_compiler(folder: Path):
    """A ``compiler`` for ``CudaBackend`` (NVRTC's ``compile_source``'s signature) that builds
    generated CUDA for the host in ``folder`` and returns the image the stand-in libcuda loads
    as that host build (``EAGLE-HOST-MODULE\\n<path>``): eagle's GPU runner over the native
    layer, end to end on a machine without a GPU."""
    folder = Path(folder)

    def compile_for_host(source: str, arch: str = "sm_90", target: str = "cubin",
                         fmad: bool = False, name: str = "kernel.cu") -> bytes:
        digest = hashlib.sha256(source.encode()).hexdigest()[:16]
        library = folder / f"{Path(name).stem}_{digest}.host.so"
        if not library.exists():
            _build(host_build_source(source, ""), library)
        return b"EAGLE-HOST-MODULE\n" + str(library).encode() + b"\0"

    return compile_for_host


def write_host_build(program: Program, artifact: Path) -> Path:
    """Compile ``program``'s host build to ``NAME.host.so`` beside ``artifact`` (a PTX file);
    return its path. Raises ``RuntimeError`` without a host C++ compiler or when it fails."""
    artifact = Path(artifact)
    image = artifact.read_bytes().split(b"\0")[0]  # what the driver reads of a PTX string
    library = artifact.with_suffix(".host.so")
    _build(host_build_source(program, hashlib.sha256(image).hexdigest()), library)
    return library
