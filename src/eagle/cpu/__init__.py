"""eagle's CPU backend: hawk programs emitted as Numba source (``emit``), compiled and cached
(``backend``), and run by eagle's own team of host threads (``team``)."""

from .backend import CpuBackend, CpuKernel, CpuLoop

__all__ = ["CpuBackend", "CpuKernel", "CpuLoop"]
