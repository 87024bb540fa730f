"""Checkpoints: a runner's whole state in one file, written so a crash never leaves a bad one.

A checkpoint holds every bound array (state, inputs and the terminated flags), the uniform
values, the step and launch counters, ``max_steps`` and the identity of the plan (kernel name,
IR digest of the specialisation, dtypes). It is an ``.npz`` file written to a temporary name,
flushed to disk and renamed into place, so a reader finds either the previous checkpoint or
the new one, whole. ``Runner.restore`` refuses a checkpoint made by a different kernel.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np

from . import cache
from .backend import backend_for
from .errors import CheckpointError

__all__ = ["save", "load", "CheckpointError", "FORMAT"]

FORMAT = "eagle-checkpoint/1"


def save(runner, path: str | Path) -> Path:
    """Write ``runner``'s state to ``path`` atomically; return the path."""
    path = Path(path)
    program = runner.plan.kernel.specialize(runner.bound.dtypes)
    meta = dict(format=FORMAT, kernel=program.name, digest=program.digest(),
                dtypes={k: v.value for k, v in runner.bound.dtypes.items()},
                uniforms={k: [v.dtype.name, v.item()]  # bound uniforms are NumPy scalars
                          for k, v in runner.bound.uniforms.items()},
                steps=runner.steps, launches=runner.launches, live=runner.live,
                max_steps=runner.max_steps, steps_per_launch=runner.fixed_steps_per_launch,
                n=runner.n, device=runner.device)
    to_host = backend_for(runner.device).to_host
    arrays = {f"array:{k}": to_host(v) for k, v in runner.bound.arrays.items()}
    arrays["flags"] = to_host(runner.bound.flags)
    buffer = io.BytesIO()
    np.savez(buffer, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)
    path.parent.mkdir(parents=True, exist_ok=True)
    cache.write_atomic(path, buffer.getvalue())
    return path


def load(path: str | Path) -> tuple[dict, dict[str, np.ndarray], np.ndarray]:
    """(metadata, arrays by parameter name, flags) from a checkpoint file."""
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
    if meta.get("format") != FORMAT:
        raise CheckpointError(f"{path} has format {meta.get('format')!r}, expected {FORMAT!r}")
    return meta, arrays, flags
