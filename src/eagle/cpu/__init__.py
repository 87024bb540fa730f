"""eagle's CPU backend: hawk programs emitted as LLVM IR (``emit``: the step in ``visit``, the
lane machinery in ``scheduler``), compiled by llvmlite and cached as object code (``native``,
``backend``), and run by eagle's own team of host threads (``team``)."""

from .backend import CpuBackend, CpuKernel, CpuLoop

__all__ = ["CpuBackend", "CpuKernel", "CpuLoop"]
