"""Compiled kernels as files: CUDA source, PTX or a cubin, with a JSON sidecar.

The sidecar says everything a loader needs to launch the code without the hawk source: the
entry points, the argument list in order (with each parameter's role, width and dtype), the
kernel options (``accumulate``), the control block's layout, the block size, and what it was
built for. ``eagle.loaded.LoadedVector`` reads it; ``python -m hawk compile`` writes it.
"""

from __future__ import annotations

import json
from pathlib import Path

from hawk.ir import Program, Role

from .emit import BLOCK_SIZE, CONTROL_FIELDS, DECIDE_KERNEL, STEP_KERNEL, emit_cuda
from .emit import kernel_arguments as _kernel_arguments

__all__ = ["FORMAT", "sidecar", "write_artifact", "TARGETS"]

FORMAT = "eagle-artifact/1"
TARGETS = ("cuda", "ptx", "cubin")


def sidecar(program: Program, target: str, arch: str | None, fmad: bool) -> dict:
    """The metadata written beside an artifact of ``program``."""
    from .. import __version__

    arguments = [{"name": "n", "kind": "count", "ctype": "long long"},
                 {"name": "control", "kind": "control", "ctype": "EagleControl*"},
                 {"name": "flags", "kind": "terminated", "ctype": "bool*"}]
    for c_name, ctype, (param, component) in _kernel_arguments(program):
        arguments.append({"name": c_name, "kind": "parameter", "parameter": param,
                          "component": component, "ctype": ctype})
    return {
        "format": FORMAT,
        "kernel": program.name,
        "target": target,
        "arch": arch,
        "fmad": fmad,
        "entry": STEP_KERNEL,
        "decide": DECIDE_KERNEL,
        "block_size": BLOCK_SIZE,
        "options": dict(program.options),
        "parameters": [{"name": p.name, "role": p.role.value, "width": p.width,
                        "dtype": p.dtype.value} for p in program.params],
        "terminated": next((p.name for p in program.params if p.role is Role.TERMINATED),
                           None),
        "arguments": arguments,
        "control_fields": list(CONTROL_FIELDS),
        "ir_digest": program.digest(),
        "eagle_version": __version__,
    }


def write_artifact(program: Program, target: str, path: Path, arch: str = "sm_90",
                   fmad: bool = False) -> tuple[Path, Path]:
    """Write ``program`` as CUDA source, PTX or a cubin to ``path`` and its sidecar to
    ``path`` + ``.json``; return both paths."""
    if target not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(TARGETS)}, got {target!r}")
    source = emit_cuda(program)
    if target == "cuda":
        data = source.encode()
    else:
        from .nvrtc import arch_name, compile_source

        arch = arch_name(arch)
        data = compile_source(source, arch, target=target, fmad=fmad)
    path = Path(path)
    path.write_bytes(data)
    meta_path = path.with_name(path.name + ".json")
    meta = sidecar(program, target, None if target == "cuda" else arch, fmad)
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    return path, meta_path
