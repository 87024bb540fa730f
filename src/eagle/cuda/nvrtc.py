"""CUDA C++ to cubin or PTX with NVRTC, and PTX to cubin with nvJitLink. No GPU needed.

A cubin is built for one ``sm_XY`` and loads on any driver of the same CUDA major version;
PTX is JIT-compiled by the driver, which refuses a PTX ISA newer than it knows (NVRTC 13.5
writes PTX 9.5, a CUDA 13.0 driver reads at most 9.0). So eagle loads cubins, emits PTX only
for artifacts, and turns PTX into a cubin with nvJitLink before loading it.

The decide kernel's ``cudaGraphSetConditional`` stays an undefined symbol in the cubin, as in a
cubin nvcc writes for the same call: the driver resolves it when the module is loaded (like
``vprintf``), so no device runtime library is linked.

PTX written for someone else (an artifact) is portable to newer GPUs, not to older toolchains:
NVRTC writes its own PTX ISA (13.5 writes 9.5) and the consumer's nvJitLink refuses a newer ISA
than it knows (13.0 reads at most 9.0). ``lower_ptx_isa`` writes an older ``.version`` and proves
the result by linking it here: ptxas refuses any instruction the older ISA lacks and any target
it cannot name, so a lowered PTX that links here links with that older nvJitLink too.
``OLDEST_PTX_ISA`` is the ISA of the oldest nvJitLink the ``[cuda]`` extra allows, which
artifacts target by default.

Compiled code is cached on disk; the key covers the source, the options, the architecture and
the NVRTC version.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .. import cache
from ..errors import BackendUnavailable, CompileFailed
from .driver import check

__all__ = ["compile_source", "ptx_to_cubin", "nvrtc_version", "nvjitlink_version", "CompileFailed",
           "arch_name", "OLDEST_PTX_ISA", "ptx_isa_of", "readable_ptx_isa", "lower_ptx_isa",
           "newest_readable_ptx_isa", "PTX_ISA_RELEASE", "check_driver_loads", "Resources",
           "resource_usage", "blocks_per_sm", "occupancy"]

#: The PTX ISA nvJitLink 13.0 reads, the oldest the ``[cuda]`` extra installs
#: (``nvidia-nvjitlink>=13.0``); artifacts are written at this ISA unless asked otherwise.
OLDEST_PTX_ISA = "9.0"
#: The CUDA release that introduced each PTX ISA, from NVIDIA's PTX ISA release notes (the table
#: cuda-bindings 13.5 carries; 13.0's stops at 9.0). eagle keeps its own, so which ISA a
#: toolchain reads does not depend on the cuda-bindings installed beside it.
PTX_ISA_RELEASE = {
    "6.0": (9, 0), "6.1": (9, 1), "6.2": (9, 2), "6.3": (10, 0), "6.4": (10, 1), "6.5": (10, 2),
    "7.0": (11, 0), "7.1": (11, 1), "7.2": (11, 2), "7.3": (11, 3), "7.4": (11, 4),
    "7.5": (11, 5), "7.6": (11, 6), "7.7": (11, 7), "7.8": (11, 8),
    "8.0": (12, 0), "8.1": (12, 1), "8.2": (12, 2), "8.3": (12, 3), "8.4": (12, 4),
    "8.5": (12, 5), "8.6": (12, 7), "8.7": (12, 8), "8.8": (12, 9),
    "9.0": (13, 0), "9.1": (13, 1), "9.2": (13, 2), "9.3": (13, 3), "9.4": (13, 4),
    "9.5": (13, 5),
}  # fmt: skip
#: The first driver branch of each CUDA major version.
_DRIVER_BRANCH = {12: 525, 13: 580}
_VERSION_LINE = re.compile(rb"^(\s*\.version\s+)(\d+\.\d+)", re.M)


def _nvrtc():
    try:
        from cuda.bindings import nvrtc
    except ImportError as exc:
        raise BackendUnavailable(
            "compiling for a GPU needs NVIDIA's cuda-bindings and NVRTC: "
            "pip install 'eagle-hawk[cuda]'") from exc
    return nvrtc


def nvrtc_version() -> tuple[int, int]:
    nvrtc = _nvrtc()
    return tuple(check(nvrtc.nvrtcVersion(), "nvrtcVersion"))


def nvjitlink_version() -> tuple[int, int]:
    """The local nvJitLink's (major, minor)."""
    try:
        from cuda.bindings import nvjitlink
    except ImportError as exc:
        raise BackendUnavailable("linking PTX needs nvJitLink: pip install 'eagle-hawk[cuda]'") \
            from exc
    return tuple(nvjitlink.version())


def ptx_isa_of(ptx: bytes) -> str | None:
    """The ``.version`` of a PTX text ("9.0"), or None when it has none."""
    found = _VERSION_LINE.search(ptx[:8192])
    return found.group(2).decode() if found else None


def _isa_key(isa: str) -> tuple[int, int]:
    major, _, minor = isa.partition(".")
    return int(major), int(minor or 0)


def readable_ptx_isa(isa: str, toolchain: tuple[int, int]) -> bool:
    """Whether an nvJitLink (or driver) of CUDA ``toolchain`` (major, minor) reads PTX ISA
    ``isa``. An ISA ``PTX_ISA_RELEASE`` does not know is newer than every release it lists:
    refused by those, left to the linker's own word by a newer one."""
    needed = PTX_ISA_RELEASE.get(isa)
    if needed is None:
        return tuple(toolchain) > max(PTX_ISA_RELEASE.values())
    return needed <= tuple(toolchain)


def newest_readable_ptx_isa(toolchain: tuple[int, int]) -> str | None:
    """The newest PTX ISA an nvJitLink of CUDA ``toolchain`` reads (None if none is known)."""
    readable = [isa for isa, release in PTX_ISA_RELEASE.items() if release <= tuple(toolchain)]
    return max(readable, key=_isa_key, default=None)


def check_driver_loads(made_by: tuple[int, int], tool: str, driver: tuple[int, int]) -> None:
    """The toolchain policy, asked before a cubin ``tool`` (``"NVRTC"`` or ``"nvJitLink"``) of
    CUDA ``made_by`` wrote is loaded by a driver of CUDA ``driver``.

    eagle hands the driver only cubins built for the device's own ``sm_XY`` (by NVRTC, or by
    nvJitLink from PTX), never PTX to JIT, so a toolkit newer than the driver within one CUDA
    major version is fine: a cubin loads on every driver of its major version (CUDA's minor
    version compatibility; NVRTC 13.5's cubins on a 13.0 driver). A toolkit of a newer major
    than the driver is refused here, saying what to do, before the driver's own bare
    ``CUDA_ERROR_UNSUPPORTED_PTX_VERSION``."""
    if made_by[0] > driver[0]:
        raise BackendUnavailable(
            f"{tool} {made_by[0]}.{made_by[1]} writes cubins for CUDA {made_by[0]} drivers, but "
            f"this machine's NVIDIA driver runs CUDA {driver[0]}.{driver[1]}: update the driver "
            f"(CUDA {made_by[0]} needs R{_DRIVER_BRANCH.get(made_by[0], '?')} or newer), or "
            f"install the CUDA {driver[0]} toolchain eagle's [cuda] extra allows")


def lower_ptx_isa(ptx: bytes, isa: str, arch: str) -> bytes:
    """``ptx`` declared as PTX ISA ``isa`` (no newer than it is), proven by linking it here for
    ``arch``; ``CompileFailed`` saying what to do when the code needs a newer ISA."""
    if not re.fullmatch(r"\d+\.\d+", str(isa)):
        raise ValueError(f"ptx_isa must look like '9.0', got {isa!r}")
    native = ptx_isa_of(ptx)
    if native is None:
        raise CompileFailed("NO_VERSION", "lower_ptx_isa", "the PTX has no .version line")
    if _isa_key(isa) > _isa_key(native):
        raise ValueError(f"ptx_isa={isa} is newer than the PTX ISA {native} this NVRTC writes; "
                         "ask for an ISA at or below it")
    if isa == native:
        return ptx
    lowered = _VERSION_LINE.sub(lambda m: m.group(1) + isa.encode(), ptx, count=1)
    try:
        ptx_to_cubin(lowered, arch)
    except CompileFailed as exc:
        raise CompileFailed(exc.name, "lower_ptx_isa",
                            f"the PTX cannot be declared as ISA {isa} (NVRTC wrote {native}): "
                            f"{exc}\nAsk for a newer --ptx-isa (at most {native}), or "
                            "compile with an NVRTC as old as the consumer's nvJitLink, or ship "
                            "a cubin (--target cubin --arch sm_XY)") from None
    return lowered


def arch_name(arch: str | int | tuple[int, int]) -> str:
    """``"sm_90"`` from ``"sm_90"``, ``90``, ``"90"`` or ``(9, 0)``."""
    if isinstance(arch, tuple):
        return f"sm_{arch[0]}{arch[1]}"
    text = str(arch)
    if text.startswith(("sm_", "compute_")):
        return "sm_" + text.split("_", 1)[1]
    if text.isdigit():
        return f"sm_{text}"
    raise ValueError(f"arch must look like 'sm_90' or 90 or (9, 0), got {arch!r}")


def _options(arch: str, target: str, fmad: bool) -> list[bytes]:
    kind = "sm" if target == "cubin" else "compute"
    return [f"--gpu-architecture={kind}_{arch.split('_')[1]}".encode(),
            f"--fmad={'true' if fmad else 'false'}".encode(), b"--std=c++17",
            b"-default-device"]


def _numbered(source: str) -> str:
    return "\n".join(f"{k:4d}  {line}" for k, line in enumerate(source.splitlines(), 1))


def compile_source(source: str, arch: str = "sm_90", target: str = "cubin", fmad: bool = False,
                   name: str = "eagle_kernel.cu", use_cache: bool = True) -> bytes:
    """Compile CUDA C++ ``source`` to a cubin (or PTX) for ``arch``.

    ``fmad=False`` forbids contracting ``a * b + c`` into one fused multiply-add, so results
    equal the CPU backend and the reference executor bit for bit (arithmetic kernels).
    Raises ``CompileFailed`` with NVRTC's whole log and the numbered source on an error.
    """
    if target not in ("cubin", "ptx"):
        raise ValueError(f"target must be 'cubin' or 'ptx', got {target!r}")
    arch = arch_name(arch)
    nvrtc = _nvrtc()
    version = nvrtc_version()
    options = _options(arch, target, fmad)
    key = cache.key("cuda", hashlib.sha256(source.encode()).hexdigest(), target, arch, fmad,
                    version, [o.decode() for o in options])
    folder = cache.entry_dir("cuda", key) if use_cache else None  # None: the cache is unusable
    path = folder / f"kernel.{target}" if folder is not None else None
    if path is not None:
        cache.keep_only(folder, {path.name, path.with_suffix(".seal").name})
        data = _cached(path, key)
        if data is not None:
            return data
    with _compiled(source, name, arch, options) as (program, _):
        if target == "cubin":
            size = check(nvrtc.nvrtcGetCUBINSize(program), "nvrtcGetCUBINSize")
            data = b" " * size
            check(nvrtc.nvrtcGetCUBIN(program, data), "nvrtcGetCUBIN")
        else:
            size = check(nvrtc.nvrtcGetPTXSize(program), "nvrtcGetPTXSize")
            data = b" " * size
            check(nvrtc.nvrtcGetPTX(program, data), "nvrtcGetPTX")
    if path is not None:
        try:
            cache.store(path, data)
            cache.store(path.with_suffix(".seal"), cache.seal(key, path.name, data).encode())
        except OSError:
            pass  # not kept for the next process; this one has what it needs
    return data


@contextmanager
def _compiled(source: str, name: str, arch: str, options: list[bytes]):
    """``(program, log)``: ``source`` compiled by NVRTC with ``options``, and its log as text;
    ``CompileFailed`` with the whole log and the numbered source on an error. The program is
    destroyed on leaving."""
    nvrtc = _nvrtc()
    program = check(nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []),
                    "nvrtcCreateProgram")
    try:
        (result,) = nvrtc.nvrtcCompileProgram(program, len(options), options)
        size = check(nvrtc.nvrtcGetProgramLogSize(program), "nvrtcGetProgramLogSize")
        log = b" " * size
        check(nvrtc.nvrtcGetProgramLog(program, log), "nvrtcGetProgramLog")
        text = log.decode(errors="replace").rstrip(chr(0))
        if int(result) != 0:
            raise CompileFailed(result.name, "nvrtcCompileProgram",
                                f"NVRTC could not compile {name} for {arch}:\n{text.strip()}"
                                f"\n\ngenerated source:\n{_numbered(source)}")
        yield program, text
    finally:
        nvrtc.nvrtcDestroyProgram(program)


def _cached(path: Path, key: str) -> bytes | None:
    """The cached cubin or PTX at ``path`` if the seal beside it (``cache.seal``) says it was
    written for the entry ``key``: a file copied from another entry does not verify."""
    seal = cache.read_file(path.with_suffix(".seal"), limit=256)
    data = cache.read_file(path)
    if seal is None or data is None:
        return None
    return data if cache.sealed(seal.decode(errors="replace").strip(), key, path.name, data) \
        else None


def ptx_to_cubin(ptx: bytes, arch: str) -> bytes:
    """Link PTX into a cubin for ``arch`` with nvJitLink (the driver is never asked to JIT)."""
    try:
        from cuda.bindings import nvjitlink
    except ImportError as exc:
        raise BackendUnavailable("loading PTX needs nvJitLink: pip install 'eagle-hawk[cuda]'") \
            from exc
    arch = arch_name(arch)
    ptx = ptx if ptx.endswith(b"\0") else ptx + b"\0"
    handle = nvjitlink.create(1, [f"-arch={arch}"])
    try:
        try:
            nvjitlink.add_data(handle, nvjitlink.InputType.PTX, ptx, len(ptx), "artifact.ptx")
            nvjitlink.complete(handle)
        except nvjitlink.nvJitLinkError as exc:
            size = nvjitlink.get_error_log_size(handle)
            log = bytearray(size)
            nvjitlink.get_error_log(handle, log)
            raise CompileFailed(type(exc).__name__, "nvJitLinkComplete",
                                f"nvJitLink could not link PTX for {arch}:\n"
                                f"{bytes(log).decode(errors='replace').rstrip(chr(0))}") from exc
        size = nvjitlink.get_linked_cubin_size(handle)
        cubin = bytearray(size)
        nvjitlink.get_linked_cubin(handle, cubin)
        return bytes(cubin)
    finally:
        nvjitlink.destroy(handle)


@dataclass(frozen=True)
class Resources:
    """What ptxas gave one kernel: registers per thread, spills and stack in bytes, static
    shared memory in bytes."""

    kernel: str
    registers: int
    spill_stores: int
    spill_loads: int
    stack: int
    shared: int


_ENTRY = re.compile(r"Compiling entry function '(\w+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers(?:.*?(\d+) bytes smem)?")


def resource_usage(source: str, arch: str = "sm_90", fmad: bool = False) -> list[Resources]:
    """Each kernel's registers, spills, stack and shared memory as ptxas reports them when
    NVRTC compiles ``source`` for ``arch`` (``--ptxas-options=-v``; no GPU, no cache).

    Where a driver is installed, NVRTC keeps compiled programs in the CUDA compute cache, and a
    program it finds there has an empty log (cuda-python issue 1124; on an H200 a second call
    returned no kernels). The cache's key holds the program's name, so each call names its
    program afresh."""
    arch = arch_name(arch)
    options = [*_options(arch, "cubin", fmad), b"--ptxas-options=-v"]
    with _compiled(source, f"eagle_info_{uuid.uuid4().hex}.cu", arch, options) as (_, log):
        lines = log.splitlines()  # ptxas's report, one kernel after another
    found, kernel, frame = [], None, (0, 0, 0)
    for line in lines:
        if entry := _ENTRY.search(line):
            kernel, frame = entry.group(1), (0, 0, 0)
        elif (sizes := _FRAME.search(line)) and kernel:
            frame = tuple(int(v) for v in sizes.groups())
        elif (used := _USED.search(line)) and kernel:
            found.append(Resources(kernel, int(used.group(1)), frame[1], frame[2], frame[0],
                                   int(used.group(2) or 0)))
            kernel = None
    if not found and "__global__" in source:
        raise CompileFailed("NVRTC_SUCCESS", "nvrtcGetProgramLog",
                            f"ptxas reported no kernel for {arch} (its log: {log[:500]!r})")
    return found


#: Per architecture: registers per SM, threads per SM, blocks per SM (CUDA's occupancy
#: calculator's limits; 256 registers is the allocation unit per warp on all of them).
_SM_LIMITS = {"sm_75": (65536, 1024, 16), "sm_80": (65536, 2048, 32), "sm_86": (65536, 1536, 16),
              "sm_87": (65536, 2048, 16), "sm_89": (65536, 1536, 24), "sm_90": (65536, 2048, 32),
              "sm_100": (65536, 2048, 32), "sm_120": (65536, 1536, 32)}


def blocks_per_sm(registers: int, block: int, arch: str = "sm_90") -> int | None:
    """How many blocks of ``block`` threads using ``registers`` each fit on one SM of ``arch``
    by registers and threads (None for an architecture not in the table); what
    ``cuOccupancyMaxActiveBlocksPerMultiprocessor`` says on a device, without one."""
    limits = _SM_LIMITS.get(arch_name(arch))
    if limits is None:
        return None
    per_sm, threads, most = limits
    per_warp = -(-max(registers, 1) * 32 // 256) * 256
    warps = -(-block // 32)
    return min(per_sm // per_warp // warps, threads // block, most)


def occupancy(registers: int, block: int, arch: str = "sm_90") -> float | None:
    """The share of an SM's warps that blocks of ``block`` threads using ``registers`` each
    keep resident (None for an architecture not in the table)."""
    blocks = blocks_per_sm(registers, block, arch)
    if blocks is None:
        return None
    return blocks * -(-block // 32) / (_SM_LIMITS[arch_name(arch)][1] // 32)
