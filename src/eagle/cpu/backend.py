"""The CPU backend: compile a hawk program with Numba, cache it on disk, and run launches.

The emitted source (``cpu.emit``) is written into the cache folder and imported from there, so
Numba's own on-disk cache (``cache=True``) keeps the machine code across processes. The entry's
key covers the program, the emitter's shape and the numba/eagle/Python versions; an entry whose
source is not exactly what this version would write is rewritten, and a Numba cache that fails
to load is deleted and rebuilt.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import threading
import warnings
from pathlib import Path

import numpy as np

from hawk.ir import Program, Role

from .. import cache
from ..bindings import Bound
from .emit import BLOCK, UNROLL, emit_launch
from .team import team

__all__ = ["CpuKernel", "compile_program", "launch_arguments", "EMITTER_VERSION"]

EMITTER_VERSION = 3
_loaded: dict[str, CpuKernel] = {}
_lock = threading.Lock()


def _numba():
    try:
        import numba
    except ImportError as exc:  # pragma: no cover - numba is a core dependency
        raise ImportError("eagle's CPU backend needs numba: pip install numba") from exc
    return numba


class CpuKernel:
    """One program compiled for the CPU: ``launch(nsteps, nthreads, arguments(bound))``."""

    def __init__(self, program: Program, function, source_path: Path):
        self.program = program
        self.function = function
        self.source_path = source_path

    def arguments(self, bound: Bound) -> tuple:
        """The generated function's arguments after ``tid, nthreads, nsteps``, from ``bound``."""
        return launch_arguments(self.program, bound)

    def launch(self, nsteps: int, nthreads: int, arguments: tuple) -> tuple[int, int]:
        """Advance every live sample by up to ``nsteps`` on ``nthreads`` host threads; return
        (live samples, steps taken by the slowest)."""
        nblocks = -(-arguments[0].shape[0] // BLOCK)
        live, steps = team.run(self.function, nthreads, nblocks, (np.int64(nsteps), *arguments))
        return int(live), int(steps)


def launch_arguments(program: Program, bound: Bound) -> tuple:
    """``bound``'s arrays and values in the order of the generated function's arguments."""
    values = [bound.flags]
    for p in program.params:
        if p.role is Role.TERMINATED:
            continue
        if p.role is Role.PARAM:
            values.append(bound.uniforms[p.name])
        elif p.is_vector:
            values += [bound.arrays[p.name][k] for k in range(p.width)]
        else:
            values.append(bound.arrays[p.name])
    return tuple(values)


def _entry(program: Program) -> tuple[str, Path, str]:
    numba = _numba()
    from .. import __version__

    key = cache.key("cpu", program.digest(), EMITTER_VERSION, BLOCK, UNROLL, numba.__version__,
                    __version__, sys.version_info[:2], np.__version__)
    folder = cache.entry_dir("cpu", key)
    module = f"eagle_cpu_{program.name}_{key[:16]}"
    return module, folder / f"{module}.py", emit_launch(program)


def compile_program(program: Program, bound: Bound) -> CpuKernel:
    """The compiled launch of ``program`` for ``bound``'s argument types (from memory, from
    disk, or new)."""
    module_name, path, source = _entry(program)
    with _lock:
        if module_name in _loaded:
            return _loaded[module_name]
        if cache.read_verified(path, _sha256(source)) is None:
            shutil.rmtree(path.parent / "__pycache__", ignore_errors=True)
            cache.write_atomic(path, source.encode())
        function = _import(module_name, path).run_blocks
        signature = _signature(launch_arguments(program, bound))
        try:
            function.compile(signature)
        except Exception:  # a damaged Numba cache entry: forget it and compile afresh
            shutil.rmtree(path.parent / "__pycache__", ignore_errors=True)
            sys.modules.pop(module_name, None)
            function = _import(module_name, path).run_blocks
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                function.compile(signature)
        kernel = CpuKernel(program, function, path)
        _loaded[module_name] = kernel
        return kernel


def _sha256(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def _import(module_name: str, path: Path):
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def _signature(example: tuple):
    numba = _numba()
    return (numba.int64, numba.int64, numba.int64, *(numba.typeof(a) for a in example))
