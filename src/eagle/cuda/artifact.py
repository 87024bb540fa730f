"""Compiled kernels as files: CUDA source, PTX or a cubin, with a JSON sidecar.

``NAME.ptx`` (or ``.cubin``/``.cu``) sits beside ``NAME.json``. The sidecar says everything a
loader needs to launch the code without the hawk source: the entry points, every parameter
(role, element type, vector width and layout), the argument list in order, the kernel options
(``accumulate``), the launch shape, the control block's layout, the PTX ISA version and target,
the versions that made it, and the SHA-256 of the artifact. ``docs/artifacts.md`` describes it
for native consumers. Reading a sidecar is JSON only, never code, and is validated.

PTX is written at ``nvrtc.OLDEST_PTX_ISA`` by default (the ISA every nvJitLink the ``[cuda]``
extra allows reads), not at the ISA of the NVRTC that happens to be installed: PTX is portable to
newer GPUs, not to older toolchains. ``check_ptx_isa`` is what a loader asks before linking.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from hawk.ir import TABLE_FIELDS, DType, Parameter, Program, Role, slots

from ..errors import ArtifactError
from .emit import BLOCK_SIZE, CONTROL_FIELDS, DECIDE_KERNEL, STEP_KERNEL, emit_cuda, slot_ctype

__all__ = ["FORMAT", "TARGETS", "sidecar", "write_artifact", "read_artifact", "Artifact",
           "ArtifactError", "check_ptx_isa"]

FORMAT = "eagle-artifact/1"
TARGETS = ("cuda", "ptx", "cubin")
_SUFFIX = {"cuda": ".cu", "ptx": ".ptx", "cubin": ".cubin"}
_REQUIRED = ("format", "kernel", "target", "entry", "decide", "block_size", "options",
             "parameters", "arguments", "control_fields", "sha256", "launch")


def _ptx_header(ptx: bytes) -> dict:
    text = ptx[:4096].decode(errors="replace")
    version = re.search(r"^\s*\.version\s+(\S+)", text, re.M)
    target = re.search(r"^\s*\.target\s+(\S+)", text, re.M)
    return dict(ptx_isa=version.group(1) if version else None,
                ptx_target=target.group(1).rstrip(",") if target else None)


def _layout(p: Parameter) -> str:
    dims = "".join(f"{d}, " for d in p.dims)
    if p.role is Role.PARAM:  # a vector or matrix Param: one by-value argument per component
        return f"({dims.rstrip(', ')}) by value, row-major" if p.is_vector else "scalar"
    if p.role is Role.TABLE:  # element (i, j, k) at p[(i * size1 + j) * size2 + k]
        return (f"the whole table, {p.ndim}-D, C-contiguous, shared by every sample; its "
                "sizes follow it")
    if p.role is Role.SERIES:  # sample i of row r: p[r * row_stride + i]
        return f"(T, {dims}n) rows, the sample axis contiguous"
    return f"({dims}n) SoA" if p.is_vector else "(n,)"


def sidecar(program: Program, target: str, arch: str | None, fmad: bool, data: bytes,
            native_isa: str | None = None) -> dict:
    """The metadata written beside an artifact of ``program`` whose bytes are ``data``."""
    import hawk
    from hawk import __version__

    arguments = [{"name": "n", "kind": "count", "ctype": "long long"},
                 {"name": "control", "kind": "control", "ctype": "EagleControl*"},
                 {"name": "flags", "kind": "terminated", "ctype": "bool*"}]
    for slot in program.slots:
        argument = {"name": slot.name, "kind": "parameter", "parameter": slot.param.name,
                    "component": slot.component, "ctype": slot_ctype(slot)}
        if slot.field is not None:  # a Series' row count or row stride, a Table's size
            argument["field"] = slot.field
        elif slot.is_table:  # the data pointer, then one int64 size per dimension
            argument["kind"] = "table"
            argument["fields"] = list(TABLE_FIELDS[:slot.param.ndim])
        arguments.append(argument)
    meta = {
        "format": FORMAT,
        "kernel": program.name,
        "target": target,
        "arch": arch,
        "fmad": fmad,
        "entry": STEP_KERNEL,
        "decide": DECIDE_KERNEL,
        "block_size": BLOCK_SIZE,
        "launch": f"one thread per sample: grid = ceil(n / {BLOCK_SIZE}) blocks of "
                  f"{BLOCK_SIZE} threads; control->nsteps steps per launch",
        "options": dict(program.options),
        "parameters": [{"name": p.name, "role": p.role.value, "dtype": p.dtype.value,
                        "width": p.width, **({"columns": p.columns} if p.columns else {}),
                        **({"ndim": p.ndim} if p.role is Role.TABLE else {}),
                        "layout": _layout(p)}
                       for p in program.params],
        "arguments": arguments,
        "control_fields": list(CONTROL_FIELDS),
        "ir_digest": program.digest(),
        "source_sha256": hashlib.sha256(emit_cuda(program).encode()).hexdigest(),
        "sha256": hashlib.sha256(data).hexdigest(),
        "hawk_version": hawk.__version__,
        "eagle_version": __version__,
    }
    if target == "ptx":
        meta.update(_ptx_header(data))
        meta["ptx_isa_native"] = native_isa or meta["ptx_isa"]  # what NVRTC itself wrote
    if target != "cuda":
        from .nvrtc import nvrtc_version

        meta["nvrtc_version"] = ".".join(map(str, nvrtc_version()))
    return meta


def write_artifact(program: Program, target: str, path: Path, arch: str = "sm_90",
                   fmad: bool = False, ptx_isa: str | None = None) -> tuple[Path, Path]:
    """Write ``program`` as CUDA source, PTX or a cubin to ``path`` and its sidecar to the
    same name with ``.json``; return both paths.

    ``ptx_isa`` (PTX only): the PTX ISA to declare, ``"native"`` for what the local NVRTC
    writes; default ``OLDEST_PTX_ISA``, so any supported nvJitLink links the file."""
    if target not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(TARGETS)}, got {target!r}")
    if ptx_isa is not None and target != "ptx":
        raise ValueError(f"ptx_isa applies to --target ptx only, not {target!r}")
    if program.counters:  # its launch takes a seed and a first sample the sidecar cannot say
        raise ValueError(f"kernel {program.name!r} draws random numbers or reads "
                         "hawk.sample_index()/hawk.step(); writing it as an artifact is not "
                         "supported yet: run it with eagle.until_done(..., seed=...)")
    source = emit_cuda(program)
    native = None
    if target == "cuda":
        data, arch = source.encode(), None
    else:
        from .nvrtc import OLDEST_PTX_ISA, arch_name, compile_source, lower_ptx_isa, ptx_isa_of

        arch = arch_name(arch)
        data = compile_source(source, arch, target=target, fmad=fmad)
        if target == "ptx":
            native = ptx_isa_of(data)
            wanted = ptx_isa or OLDEST_PTX_ISA
            if wanted != "native":
                data = lower_ptx_isa(data, wanted, arch)
    path = Path(path)
    path.write_bytes(data)
    meta_path = path.with_suffix(".json")
    meta = sidecar(program, target, arch, fmad, data, native)
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    return path, meta_path


def check_ptx_isa(artifact: Artifact) -> None:
    """``ArtifactError`` saying what to do when this machine's nvJitLink cannot read the
    artifact's PTX ISA (needs nvJitLink, not a GPU); nothing for a cubin."""
    if artifact.meta["target"] != "ptx":
        return
    from .nvrtc import newest_readable_ptx_isa, nvjitlink_version, ptx_isa_of, readable_ptx_isa

    isa = ptx_isa_of(artifact.data)
    if isa is None or isa != artifact.meta.get("ptx_isa"):
        raise ArtifactError(f"{artifact.path} declares PTX ISA {isa} but its sidecar says "
                            f"{artifact.meta.get('ptx_isa')}; regenerate the pair")
    linker = nvjitlink_version()
    if not readable_ptx_isa(isa, linker):
        made_by = artifact.meta.get("nvrtc_version", "a newer NVRTC")
        arch = artifact.meta.get("arch") or "sm_XY"
        newest = newest_readable_ptx_isa(linker) or "older"
        raise ArtifactError(
            f"{artifact.path.name} is PTX ISA {isa} (written by NVRTC {made_by}), but this "
            f"machine's nvJitLink {linker[0]}.{linker[1]} reads PTX ISA {newest} at most. PTX "
            "is portable to newer GPUs, not to older toolchains. Rebuild the artifact for this "
            f"toolchain: python -m eagle compile MODULE.py:{artifact.name} --target ptx "
            f"--arch {arch} --ptx-isa {newest if newest != 'older' else 'X.Y'}; or compile it "
            "with an NVRTC no newer than this nvJitLink; or ship a cubin (--target cubin "
            "--arch <this GPU's sm_XY>); or upgrade nvJitLink here (pip install -U "
            "nvidia-nvjitlink)")


def _ndim(entry: dict) -> int:
    """A sidecar parameter's table dimensions (1 to 3 for a Table, else 0)."""
    if entry["role"] != Role.TABLE.value:
        return 0
    ndim = entry["ndim"]
    if type(ndim) is not int or not 1 <= ndim <= len(TABLE_FIELDS):
        raise ValueError(f"table {entry['name']!r} has ndim {ndim!r}, not 1 to "
                         f"{len(TABLE_FIELDS)}")
    return ndim


@dataclass(frozen=True)
class Artifact:
    """A validated artifact: its metadata, its bytes, and the parameters it binds."""

    path: Path
    meta: dict
    data: bytes

    @property
    def name(self) -> str:
        return self.meta["kernel"]

    @property
    def params(self) -> tuple[Parameter, ...]:
        return tuple(Parameter(p["name"], Role(p["role"]), int(p["width"]), DType(p["dtype"]),
                               int(p.get("columns", 0)), ndim=_ndim(p))
                     for p in self.meta["parameters"])

    @property
    def accumulate(self) -> bool:
        return bool(self.meta["options"].get("accumulate", False))

    def param(self, name: str) -> Parameter:
        return next(p for p in self.params if p.name == name)


def read_artifact(path: str | Path) -> Artifact:
    """Read and validate an artifact and its sidecar (JSON only; nothing is executed)."""
    path = Path(path)
    meta_path = path.with_suffix(".json")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ArtifactError(f"cannot read the artifact {path}: {exc.strerror}") from None
    try:
        meta = json.loads(meta_path.read_text())
    except OSError as exc:
        raise ArtifactError(f"{path} has no readable sidecar {meta_path.name} "
                            f"({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise ArtifactError(f"{meta_path} is not valid JSON: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ArtifactError(f"{meta_path} is not UTF-8 text ({exc.reason} at byte {exc.start}); "
                            "a sidecar is JSON written by python -m eagle compile") from None
    if not isinstance(meta, dict):
        raise ArtifactError(f"{meta_path} must hold a JSON object")
    if meta.get("format") != FORMAT:
        raise ArtifactError(f"{meta_path} has format {meta.get('format')!r}; this eagle reads "
                            f"{FORMAT!r}")
    missing = [key for key in _REQUIRED if key not in meta]
    if missing:
        raise ArtifactError(f"{meta_path} is missing {', '.join(missing)}")
    if meta["target"] not in ("ptx", "cubin") or path.suffix != _SUFFIX[meta["target"]]:
        raise ArtifactError(f"{meta_path} describes a {meta['target']!r} artifact but {path} "
                            "is not one (LoadedVector loads .ptx or .cubin)")
    if hashlib.sha256(data).hexdigest() != meta["sha256"]:
        raise ArtifactError(f"{path} does not match the SHA-256 in {meta_path.name}: the file "
                            "was changed after it was written; regenerate it")
    try:
        artifact = Artifact(path, meta, data)
        params = artifact.params
    except (KeyError, ValueError, TypeError) as exc:
        raise ArtifactError(f"{meta_path} has a malformed parameter list ({exc})") from None
    derived = ["n", "control", "flags", *(slot.name for slot in slots(params))]
    if [a.get("name") for a in meta["arguments"]] != derived:
        raise ArtifactError(f"{meta_path}: the argument list does not match the parameters")
    return artifact
