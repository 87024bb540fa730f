"""Checkpoints: a runner's whole state in one file, written so a crash never leaves a bad one.

A checkpoint holds every bound array (state, inputs, tables and the terminated flags), the
uniform values, the step and launch counters, ``max_steps`` and the identity of the plan
(kernel name, IR digest of the specialisation, dtypes). It is an ``.npz`` file streamed by
``np.savez`` into a temporary file beside the target (so a large state is never built in memory
first), flushed to disk, renamed into place, and the folder flushed too (so the rename itself
survives a power cut). A reader finds either the previous checkpoint or the new one, whole.

A write that was killed leaves its temporary behind; the next write to the same path, and
``Runner.restore`` of it, remove every such orphan whose writer is gone (``eagle.atomic_files``
says how it tells, and never touches a write in progress).

``load`` trusts nothing in the file: every metadata field is checked against ``SCHEMA`` (type
and range), and the arrays against the metadata (dtype, ``n`` samples, flags of shape
``(n,)``); a field that does not fit raises ``CheckpointError`` naming it. ``load_for`` (what
``Runner.restore`` reads) then refuses a checkpoint made by a different kernel.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import hawk
from hawk.ir import MAX_WIDTH, Role

from .atomic_files import remove_orphans, write_atomic
from .backend import backend_for
from .errors import CheckpointError

__all__ = ["save", "load", "load_for", "remove_orphans", "CheckpointError", "FORMAT", "SCHEMA"]

FORMAT = "eagle-checkpoint/1"
_DTYPES = ("bool", "int32", "int64", "uint32", "uint64", "float32", "float64")
_MAX_COUNT = np.iinfo(np.int64).max // 2  # the bound ``until_done`` puts on max_steps

#: every metadata field and the rule its value must follow
SCHEMA = {
    "format": f"the string {FORMAT!r}",
    "kernel": "a non-empty string (the kernel's name)",
    "digest": "a non-empty string (the IR digest of the specialisation)",
    "device": "a non-empty string (where the runner ran)",
    "n": "an int >= 1 (samples; every array holds n)",
    "steps": f"an int in [0, {_MAX_COUNT}]",
    "launches": f"an int in [0, {_MAX_COUNT}]",
    "live": "null (never run) or an int in [0, n]",
    "max_steps": f"an int in [1, {_MAX_COUNT}]",
    "steps_per_launch": f"null (adaptive) or an int in [1, {_MAX_COUNT}]",
    "dtypes": f"an object from parameter name to one of {', '.join(_DTYPES)}",
    "uniforms": "an object from Param name to [dtype, value], the value of that dtype",
    "seed": "null (no seed) or an int in [0, 2**64) (the random streams' seed)",
    "tables": "a list of the names of the arrays that are Table parameters (any shape of 1 to "
              "3 dimensions, each size >= 1, instead of n samples)",
}
#: fields a checkpoint written before they existed may lack (read as null; "tables" as [])
OPTIONAL = {"seed", "tables"}

def save(runner, path: str | Path) -> Path:
    """Write ``runner``'s state to ``path`` atomically; return the path. The caller makes sure
    the state does not change meanwhile (``Runner.checkpoint`` does)."""
    path = Path(path)
    program = runner.plan.kernel.specialize(runner.bound.dtypes)
    meta = dict(format=FORMAT, kernel=program.name, digest=program.digest(),
                dtypes={k: v.value for k, v in runner.bound.dtypes.items()},
                uniforms={k: [v.dtype.name, v.tolist()]  # NumPy scalars, or (K,)/(R, C) arrays
                          for k, v in runner.bound.uniforms.items()},
                steps=runner.steps, launches=runner.launches, live=runner.live,
                max_steps=runner.max_steps, steps_per_launch=runner.fixed_steps_per_launch,
                n=runner.n, device=runner.device, seed=runner.bound.seed,
                tables=[p.name for p in program.params if p.role is Role.TABLE])
    to_host = backend_for(runner.device).to_host
    arrays = {f"array:{k}": to_host(v) for k, v in runner.bound.arrays.items()}
    arrays["flags"] = to_host(runner.bound.flags)
    encoded = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_orphans(path)
    write_atomic(path, lambda f: np.savez(f, meta=encoded, **arrays))
    return path


def load(path: str | Path) -> tuple[dict, dict[str, np.ndarray], np.ndarray]:
    """(metadata, arrays by parameter name, flags) from a checkpoint file, every field checked
    (``SCHEMA``); ``CheckpointError`` naming the first field that does not fit."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(bytes(data["meta"]).decode())
            arrays = {k.split(":", 1)[1]: data[k] for k in data.files if k.startswith("array:")}
            flags = data["flags"]
    except FileNotFoundError:
        raise
    except Exception as exc:
        raise CheckpointError(f"{path} is not a readable eagle checkpoint "
                              f"({type(exc).__name__}: {exc})") from None
    if not isinstance(meta, dict):
        raise CheckpointError(f"{path}: the metadata must be an object of fields, got "
                              f"{type(meta).__name__}")
    if meta.get("format") != FORMAT:
        raise CheckpointError(f"{path} has format {meta.get('format')!r}, expected {FORMAT!r}")
    _validate(path, meta, arrays, flags)
    return meta, arrays, flags


def load_for(path, plan, xp=None) -> tuple[dict, dict, np.ndarray]:
    """``Runner.restore``'s reading of the checkpoint at ``path`` for ``plan``: (metadata, the
    bindings ``until_done`` takes, flags). Temporaries that killed writes to ``path`` left beside
    it are removed first; ``CheckpointError`` when the file does not fit ``plan`` (another
    kernel, body, dtypes or parameters). The arrays are new NumPy arrays, ``xp.asarray`` of
    them when ``xp`` is given; the flags are among the bindings where the kernel has a
    ``Terminated`` parameter (else they live in the runner: the caller sets them)."""
    remove_orphans(path)  # what killed writes to it left behind
    meta, arrays, flags = load(path)  # every field checked
    if meta["kernel"] != plan.kernel.name:
        raise CheckpointError(f"{path} was made by kernel {meta['kernel']!r}; it cannot "
                              f"continue {plan.kernel.name!r}")
    params = {p.name: p for p in plan.kernel.params}
    stored = set(arrays) | set(meta["uniforms"]) | set(meta["dtypes"])
    if stored != set(params):
        odd = sorted(stored ^ set(params))[0]
        raise CheckpointError(f"{path} holds parameters {sorted(stored)}, but "
                              f"{plan.kernel.name!r} has {list(params)} (first difference: "
                              f"{odd!r})")
    for name, p in params.items():
        if (p.role is Role.TABLE) != (name in meta["tables"]):
            raise CheckpointError(f"{path}: {name!r} is a {p.annotation} of "
                                  f"{plan.kernel.name!r} but the checkpoint holds it as "
                                  f"{'a table' if name in meta['tables'] else 'no table'}")
        if (p.role is Role.PARAM) != (name in meta["uniforms"]):
            raise CheckpointError(f"{path}: {name!r} is a {p.role.value} of "
                                  f"{plan.kernel.name!r} but the checkpoint holds it as "
                                  f"{'a value' if name in meta['uniforms'] else 'an array'}")
    try:
        program = plan.kernel.specialize(meta["dtypes"])
    except (hawk.CompileError, TypeError) as exc:
        raise CheckpointError(f"{path}: field 'dtypes' does not fit {plan.kernel.name!r}: "
                              f"{exc}") from None
    if meta["digest"] != program.digest():
        raise CheckpointError(f"{path} was made by kernel {meta['kernel']!r} with another "
                              f"body or dtypes; it cannot continue {plan.kernel.name!r}")
    bindings = {k: np.array(value, dtype) if isinstance(value, list)  # a vector, a matrix
                else np.dtype(dtype).type(value)
                for k, (dtype, value) in meta["uniforms"].items()}
    bindings.update(arrays)
    flag_param = plan.kernel.program.terminated_param
    if flag_param is not None:
        bindings[flag_param.name] = flags
    if xp is not None:
        bindings = {k: xp.asarray(v) if isinstance(v, np.ndarray) else v
                    for k, v in bindings.items()}
    return meta, bindings, flags


def _validate(path: Path, meta: dict, arrays: dict[str, np.ndarray], flags: np.ndarray) -> None:
    def bad(field: str, got) -> CheckpointError:
        return CheckpointError(f"{path}: checkpoint field {field!r} must be {SCHEMA[field]}, "
                               f"got {got!r}")

    missing = [k for k in SCHEMA if k not in meta and k not in OPTIONAL]
    if missing:
        raise CheckpointError(f"{path}: checkpoint field {missing[0]!r} is missing "
                              f"(it must be {SCHEMA[missing[0]]})")
    unknown = [k for k in meta if k not in SCHEMA]
    if unknown:
        raise CheckpointError(f"{path}: unknown checkpoint field {unknown[0]!r} (a {FORMAT} "
                              f"checkpoint has {', '.join(SCHEMA)})")
    for field in ("kernel", "digest", "device"):
        if not isinstance(meta[field], str) or not meta[field]:
            raise bad(field, meta[field])
    n = meta["n"]
    if not _is_int(n, 1, _MAX_COUNT):
        raise bad("n", n)
    for field, low in (("steps", 0), ("launches", 0), ("max_steps", 1)):
        if not _is_int(meta[field], low, _MAX_COUNT):
            raise bad(field, meta[field])
    if meta["live"] is not None and not _is_int(meta["live"], 0, n):
        raise bad("live", meta["live"])
    seed = meta.setdefault("seed", None)
    if seed is not None and not _is_int(seed, 0, 2**64 - 1):
        raise bad("seed", seed)
    spl = meta["steps_per_launch"]
    if spl is not None and not _is_int(spl, 1, _MAX_COUNT):
        raise bad("steps_per_launch", spl)
    dtypes = meta["dtypes"]
    if not isinstance(dtypes, dict) or not all(
            isinstance(k, str) and v in _DTYPES for k, v in dtypes.items()):
        raise bad("dtypes", dtypes)
    uniforms = meta["uniforms"]
    if not isinstance(uniforms, dict):
        raise bad("uniforms", uniforms)
    for name, entry in uniforms.items():
        if not (isinstance(entry, list) and len(entry) == 2 and entry[0] in _DTYPES
                and _fits_all(entry[0], entry[1]) and dtypes.get(name) == entry[0]):
            raise CheckpointError(f"{path}: checkpoint field 'uniforms' entry {name!r} must be "
                                  f"[dtype, value] with the dtype of 'dtypes' and a value of it "
                                  f"(or nested lists of them, for a vector or matrix), got "
                                  f"{entry!r}")
    tables = meta.setdefault("tables", [])
    if not isinstance(tables, list) or not all(isinstance(t, str) and t in arrays
                                               for t in tables):
        raise bad("tables", tables)
    for name, array in arrays.items():
        if name in tables:  # a table: the whole array, any sizes
            if not 1 <= array.ndim <= 3 or min(array.shape) < 1 or array.dtype == np.bool_:
                raise CheckpointError(f"{path}: table {name!r} has shape {array.shape} and "
                                      f"dtype {array.dtype}: expected 1 to 3 dimensions, each "
                                      "of size >= 1, of numbers")
        if name in uniforms or name not in dtypes:
            raise CheckpointError(f"{path}: array {name!r} is not a per-sample parameter of "
                                  f"the checkpoint's 'dtypes' ({', '.join(dtypes)})")
        if array.dtype != np.dtype(dtypes[name]):
            raise CheckpointError(f"{path}: array {name!r} has dtype {array.dtype}, but field "
                                  f"'dtypes' says {dtypes[name]}")
        if name not in tables and not _per_sample_shape(array.shape, n):
            raise CheckpointError(f"{path}: array {name!r} has shape {array.shape}, but field "
                                  f"'n' says {n} samples: expected ({n},), (k, {n}) for a "
                                  f"vector, (r, c, {n}) for a matrix, or one of these with T "
                                  "rows in front for a Series")
    missing = [k for k in dtypes if k not in arrays and k not in uniforms]
    if missing:
        raise CheckpointError(f"{path}: field 'dtypes' names {missing[0]!r}, which has neither "
                              "an array nor a uniform value in the checkpoint")
    if flags.dtype != np.bool_ or flags.shape != (n,):
        raise CheckpointError(f"{path}: the terminated flags must be a bool array of shape "
                              f"({n},) (field 'n'), got {flags.dtype} {flags.shape}")


def _per_sample_shape(shape: tuple[int, ...], n: int) -> bool:
    """A shape a per-sample array of ``n`` samples may have: ``(n,)``, ``(k, n)`` for a vector
    of k = 2 to 128 components (``MAX_WIDTH``), ``(r, c, n)`` for a matrix, and these with
    ``T`` rows in front for a Series (which parameter is which, and the exact shape, the kernel
    says when the runner is restored: its bindings are checked again)."""
    if not shape or shape[-1] != n or len(shape) > 4:
        return False
    return all(1 <= side <= MAX_WIDTH for side in shape[1:-1])


def _is_int(value, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high


def _fits_all(dtype: str, value) -> bool:
    """``value`` is of ``dtype`` (``_fits``), or non-empty nested lists of such values."""
    if isinstance(value, list):
        return bool(value) and all(_fits_all(dtype, v) for v in value)
    return _fits(dtype, value)


def _fits(dtype: str, value) -> bool:
    if dtype == "bool":
        return type(value) is bool
    if dtype in ("int32", "int64", "uint32", "uint64"):
        info = np.iinfo(dtype)
        return _is_int(value, int(info.min), int(info.max))
    if type(value) not in (int, float):
        return False
    if dtype == "float32" and np.isfinite(value):
        return abs(value) <= float(np.finfo(np.float32).max)
    return True


