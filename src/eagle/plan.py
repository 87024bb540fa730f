"""``deploy``: a kernel bound to a device, compiled per dtype signature on first use."""

from __future__ import annotations

import hawk

from . import backend as backends
from .bindings import Bound

__all__ = ["Plan", "deploy"]


class Plan:
    """A kernel and the device it runs on (``None``: chosen from the arrays at bind time).

    Made by ``eagle.deploy``, which checks the arguments.

    Attributes:
        kernel: the hawk kernel.
        device: ``"cpu"``, ``"cuda:K"`` or None.
        fmad: fuse ``a * b + c`` into one multiply-add on a GPU (see ``deploy``).
    """

    def __init__(self, kernel: hawk.Kernel, device: str | None, fmad: bool = False):
        self.kernel = kernel
        self.device = device
        self.fmad = fmad

    def resolve_device(self, bound_device: str) -> str:
        """The device a run goes to (the plan's, else the arrays'); ``BackendUnavailable``
        saying why when it cannot be used here."""
        device = self.device or bound_device
        backends.require(device, self.kernel.name)
        return device

    def compile(self, bound: Bound):
        """The backend's compiled kernel for ``bound``'s dtypes on ``bound``'s device."""
        program = self.kernel.specialize(bound.dtypes)
        return backends.backend_for(bound.device).compile(program, bound.device, fmad=self.fmad)

    def __repr__(self) -> str:
        return f"<eagle.Plan {self.kernel.name} on {self.device or 'the arrays device'}>"


def deploy(kernel: hawk.Kernel, device: str | None = None, *, fmad: bool = False) -> Plan:
    """Prepare ``kernel`` to run on ``device`` (``"cpu"``, ``"gpu"``, ``"cuda:K"``, or None to
    follow the arrays). Compilation happens on first use for each dtype signature and is cached
    on disk under ``$EAGLE_CACHE_DIR``.

    Args:
        kernel: a ``@hawk.kernel`` function; anything else is a ``TypeError``.
        device: ``"cpu"``, ``"gpu"`` (``"cuda:0"``), ``"cuda:K"``, or None (default) to run
            where the bound arrays live; an unknown name is a ``ValueError``.
        fmad: keyword only. ``fmad=True`` is the fast GPU option: the compiler fuses
            ``a * b + c`` into one multiply-add (one FP64 instruction instead of two), but
            results are then not bit-exact: they differ from the CPU backend, the reference and
            ``fmad=False`` in the last bits. ``fmad=False``, exact, is the default. (The CPU
            backend never fuses.)

    Example::

        plan = eagle.deploy(oscillator, "cpu")
        runner = eagle.until_done(plan, max_steps=10_000, **arrays)
    """
    if not isinstance(kernel, hawk.Kernel):
        raise TypeError(f"deploy() takes a @hawk.kernel function, got {type(kernel).__name__}")
    if device is not None:
        try:
            device = backends.normalize_device(device)
        except ValueError as exc:
            raise ValueError(f"deploy(device=...): {exc}") from None
    return Plan(kernel, device, bool(fmad))
