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

    def __init__(self, kernel: hawk.Kernel, device: str | None):
        self.kernel = kernel
        self.device = device

    def resolve_device(self, bound_device: str) -> str:
        device = self.device or bound_device
        if device != "cpu":
            raise BackendUnavailable(
                f"{self.kernel.name} was asked to run on {device}, but this version of eagle "
                "runs kernels on the CPU only (the GPU backend is not built yet); deploy with "
                "device='cpu' and pass NumPy arrays")
        return device

    def compile(self, bound: Bound):
        """The backend's compiled kernel for ``bound``'s dtypes."""
        from .cpu.backend import compile_program

        return compile_program(self.kernel.specialize(bound.dtypes), bound)

    def __repr__(self) -> str:
        return f"<eagle.Plan {self.kernel.name} on {self.device or 'the arrays device'}>"


def deploy(kernel: hawk.Kernel, device: str | None = None) -> Plan:
    """Prepare ``kernel`` to run on ``device`` (``"cpu"``, ``"gpu"``, ``"cuda:K"``, or None to
    follow the arrays). Compilation happens on first use for each dtype signature and is cached
    on disk under ``$EAGLE_CACHE_DIR``."""
    if not isinstance(kernel, hawk.Kernel):
        raise TypeError(f"deploy() takes a @hawk.kernel function, got {type(kernel).__name__}")
    if device is not None:
        if not isinstance(device, str) or not _DEVICE.match(device):
            raise ValueError(f"deploy(device=...) must be 'cpu', 'gpu', 'cuda' or 'cuda:K', "
                             f"got {device!r}")
        device = "cuda:0" if device in ("gpu", "cuda") else device
    return Plan(kernel, device)
