"""``deploy``: a kernel bound to a device, compiled per dtype signature on first use."""

from __future__ import annotations

import re

import hawk

from .bindings import Bound
from .errors import BackendUnavailable

__all__ = ["Plan", "deploy"]

_DEVICE = re.compile(r"^(cpu|gpu|cuda(:\d+)?)$")


class Plan:
    """A kernel and the device it runs on (``None``: chosen from the arrays at bind time).

    Attributes:
        kernel: the hawk kernel.
        device: ``"cpu"``, ``"cuda:K"`` or None.
    """

    def __init__(self, kernel: hawk.Kernel, device: str | None, fmad: bool = False):
        self.kernel = kernel
        self.device = device
        self.fmad = fmad

    def resolve_device(self, bound_device: str) -> str:
        device = self.device or bound_device
        if device != "cpu":
            from .cuda.driver import unavailable_reason

            reason = unavailable_reason()
            if reason:
                raise BackendUnavailable(
                    f"{self.kernel.name} was asked to run on {device}, but no CUDA device can "
                    f"be used here: {reason}. Deploy with device='cpu' and pass NumPy arrays")
        return device

    def compile(self, bound: Bound):
        """The backend's compiled kernel for ``bound``'s dtypes (CPU or GPU)."""
        program = self.kernel.specialize(bound.dtypes)
        if bound.device == "cpu":
            from .cpu.backend import compile_program

            return compile_program(program, bound)
        from .cuda.backend import compile_program as compile_for_gpu

        return compile_for_gpu(program, bound.device, self.fmad)

    def __repr__(self) -> str:
        return f"<eagle.Plan {self.kernel.name} on {self.device or 'the arrays device'}>"


def deploy(kernel: hawk.Kernel, device: str | None = None, *, fmad: bool = False) -> Plan:
    """Prepare ``kernel`` to run on ``device`` (``"cpu"``, ``"gpu"``, ``"cuda:K"``, or None to
    follow the arrays). Compilation happens on first use for each dtype signature and is cached
    on disk under ``$EAGLE_CACHE_DIR``.

    ``fmad=True`` lets the GPU compiler fuse multiply-adds: slightly faster, but results then
    differ from the CPU backend and the reference in the last bits. Off by default."""
    if not isinstance(kernel, hawk.Kernel):
        raise TypeError(f"deploy() takes a @hawk.kernel function, got {type(kernel).__name__}")
    if device is not None:
        if not isinstance(device, str) or not _DEVICE.match(device):
            raise ValueError(f"deploy(device=...) must be 'cpu', 'gpu', 'cuda' or 'cuda:K', "
                             f"got {device!r}")
        device = "cuda:0" if device in ("gpu", "cuda") else device
    return Plan(kernel, device, bool(fmad))
