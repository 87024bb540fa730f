"""The step kernel's parameter space: how many bytes ``emit_cuda``'s signature takes
(``parameter_bytes``), and the refusal, by the kernel's name, of one above what every CUDA
version loads (``check_parameter_space``)."""

from __future__ import annotations

from hawk.ir import DType, Program

from ..errors import CompileFailed

__all__ = ["MAX_PARAMETER_BYTES", "parameter_bytes", "check_parameter_space"]

#: The most bytes of parameters the step kernel takes (``parameter_bytes``): CUDA's limit
#: before 12.1, and on every architecture before Volta. CUDA 12.1 and later (driver and
#: toolkit) take 32,764 bytes on Volta and newer, but a cubin the newer toolkit made for so
#: many would not load on an older driver, so eagle keeps to the limit every version takes.
#: The widest vector (``hawk.ir.MAX_WIDTH``, 128) is sized to fit: the 128-state ``rodas5p``
#: step kernel with ``saveat`` (the state, ``k1``, the recorded rows, the scalars) takes
#: 3,336 bytes. A kernel above it is refused by name (``check_parameter_space``).
MAX_PARAMETER_BYTES = 4096
_C_SIZES = {DType.BOOL: 1, DType.INT64: 8, DType.FLOAT32: 4, DType.FLOAT64: 8, DType.INT32: 4,
            DType.UINT32: 4, DType.UINT64: 8}  # fmt: skip


def parameter_bytes(program: Program) -> int:
    """The bytes of the step kernel's parameters (``emit_cuda``'s signature: the count, the
    control block, the flags, one per slot, the counters), each at its natural alignment as
    the CUDA ABI lays them out."""
    sizes = [8, 8, 8]  # n, control, flags
    for slot in program.slots:
        sizes.append(_C_SIZES[slot.dtype] if slot.is_uniform else 8)
    sizes += [8, 8] if program.counters else []
    end = 0
    for size in sizes:
        end = -(-end // size) * size + size
    return end


def check_parameter_space(program: Program) -> None:
    """Refuse, by the kernel's name, a program whose step kernel would take more than
    ``MAX_PARAMETER_BYTES`` of parameters (NVRTC would stop at "formal parameter space
    overflowed", naming nothing the user wrote)."""
    used = parameter_bytes(program)
    if used > MAX_PARAMETER_BYTES:
        widest = max(program.params, key=lambda p: p.width)
        raise CompileFailed(
            "parameter space overflow", f"compiling kernel {program.name!r} for CUDA",
            f"its arguments take {used:,} bytes of kernel parameters (one per vector "
            f"component: its widest, {widest.name!r}, has {widest.width}), more than the "
            f"{MAX_PARAMETER_BYTES:,} CUDA takes; run it on the CPU, or pass fewer or "
            "narrower arguments (a table for numbers every sample shares)")
