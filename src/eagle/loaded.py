"""``LoadedVector``: a kernel loaded from a compiled artifact, with no hawk source.

``LoadedVector(path)`` reads ``NAME.ptx`` (or ``.cubin``) and its sidecar ``NAME.json``
(validated: format, fields, SHA-256; a PTX ISA newer than this machine's nvJitLink reads is
refused with what to do, before any GPU is looked for), links PTX into a cubin for the device
with nvJitLink (the driver is never asked to JIT a PTX newer than it knows), loads it and
resolves the entry, all at construction, so nothing loads later inside a graph capture. With
``EAGLE_CUDA_NATIVE=1`` the C++ ``eagle::cuda::LoadedVector`` loads it (the driver's JIT reads
PTX) and launches it; the bindings are still checked here (``eagle/cuda/_native.py``).
``launch(**bindings)`` checks the bindings against the sidecar exactly as ``until_done`` checks
them against a kernel, then issues one launch (every live sample takes one step) on eagle's
current stream, so it can be a ``GraphPipeline`` step; outside a capture that stream first
waits on the streams the arrays' producers declare (CUDA Array Interface v3).
``accumulate: true`` kernels add into their ``Out`` buffers. A table is bound to a GPU array
(a host one is refused: the launch may be recorded into a graph that outlives a copy).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hawk.ir import Role, slots

from .arrays import is_array_like
from .bindings import bind
from .cuda.artifact import Artifact, check_ptx_isa, read_artifact
from .errors import BindingTypeError

__all__ = ["LoadedVector"]


def _release(text) -> tuple[int, int]:
    """``(13, 5)`` from a sidecar's ``"13.5"``; ``(0, 0)`` (nothing to refuse) if unreadable."""
    try:
        major, minor = str(text).split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        return 0, 0


def _check_tables(artifact: Artifact, bindings: dict) -> None:
    """A table must already live on the GPU: a launch may be recorded into a graph that is
    replayed long after, so a copy made for one launch could be gone by then."""
    from .backend import HOST, device_of

    for p in artifact.params:
        if p.role is Role.TABLE and p.name in bindings \
                and is_array_like(bindings[p.name]) and device_of(bindings[p.name]) == HOST:
            raise BindingTypeError(f"{p.name!r} ({p.annotation}) is a host array; "
                                   f"LoadedVector.launch reads a table from GPU memory: pass "
                                   f"cupy.asarray({p.name}) (copied once, kept by you)")


class LoadedVector:
    """One artifact loaded on one GPU; ``launch(**bindings)`` runs one step of it.

    Args:
        path: the artifact, ``NAME.ptx`` or ``NAME.cubin`` with its sidecar ``NAME.json``
            beside it; a missing, malformed or tampered one is an ``ArtifactError``.
        device: the GPU to load it on, ``"cuda:K"`` (default ``"cuda:0"``).
    """

    def __init__(self, path: str | Path, device: str = "cuda:0"):
        from .cuda import _native
        from .cuda.driver import device_info, ordinal_of, require
        from .cuda.emit import CONTROL_FIELDS
        from .cuda.launcher import Module
        from .cuda.memory import DeviceBuffer
        from .cuda.nvrtc import check_driver_loads, nvjitlink_version, ptx_to_cubin

        self.artifact: Artifact = read_artifact(path)  # refused before anything is loaded
        self.device = device
        self.ordinal = ordinal_of(device)
        self.block = int(self.artifact.meta["block_size"])
        self._native = None
        if _native.enabled():  # the C++ LoadedVector: its own checks, the driver's JIT for PTX
            self._native = _native.Loaded(self.artifact.path, self.ordinal)
            return
        check_ptx_isa(self.artifact)
        require()
        info = device_info(self.ordinal)
        meta = self.artifact.meta
        if meta["target"] == "ptx":
            check_driver_loads(nvjitlink_version(), "nvJitLink", info.driver_version)
            cubin = ptx_to_cubin(self.artifact.data, info.arch)
        else:
            check_driver_loads(_release(meta.get("nvrtc_version")), "NVRTC", info.driver_version)
            cubin = self.artifact.data
        self.module = Module(cubin, self.ordinal)
        self._function = self.module.function(meta["entry"])
        fields = list(meta["control_fields"])  # the layout the artifact was written with
        control = np.zeros(max(len(fields), len(CONTROL_FIELDS)), dtype=np.int64)
        control[fields.index("nsteps")] = 1  # one step per launch; no lists: thread i, sample i
        self._control = DeviceBuffer(control.nbytes, self.ordinal)
        self._control.upload(control)

    @property
    def name(self) -> str:
        return self.artifact.name

    @property
    def params(self):
        return self.artifact.params

    def launch(self, **bindings) -> None:
        """Check ``bindings`` against the sidecar, then advance every live sample one step."""
        from .cuda.arguments import step_arguments
        from .cuda.launcher import Launcher

        _check_tables(self.artifact, bindings)
        bound = bind(self.artifact, bindings, self.device, caller=f"{self.name}.launch")
        grid = -(-bound.n // self.block)
        if self._native is not None:  # on the current stream of the C++ layer (a capture's)
            from types import SimpleNamespace

            from .cuda import _native

            types, values = step_arguments(slots(self.artifact.params), bound,
                                           SimpleNamespace(ptr=self._native.control))
            _native.wait_for_producers(_native.current_stream(self.ordinal),
                                       bound.arrays.values())
            self._native.launch(grid, types, values)
            return
        types, values = step_arguments(slots(self.artifact.params), bound, self._control)
        from .cuda.memory import wait_for_producers
        from .cuda.stream import current_stream

        launcher = Launcher(self._function, types, self.block, self.ordinal)
        stream = current_stream(self.ordinal)
        wait_for_producers(stream, bound.arrays.values())
        self._keep = launcher.launch(grid, *values, stream=stream)

    def __repr__(self) -> str:
        return f"<eagle.LoadedVector {self.name} from {self.artifact.path.name} on {self.device}>"

