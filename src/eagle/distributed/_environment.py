"""The environment guard: every worker must read and compile a chunk as the client would.

A chunk's bits depend on the code that compiles and runs it: a worker with another llvmlite or
an edited compiler would give different bits for its chunks, silently, and one whose hawk IR
format differs cannot even read the chunk's kernel. Version strings do not tell (an edited
``hawk/ir.py`` keeps its version), so ``environment()`` holds, besides the packages' versions,
what decides the bits: the digest of the IR format (``hawk.wire.ir_format_digest``) and a digest
of the compiler's own source (every ``.py`` file of hawk and of the host backend's package).

Before a run the client asks every worker for ``environment()`` (``client.run``) and refuses
the run, naming each mismatched worker and what differs, before any work is given out; each
chunk checks again on the worker that runs it (a worker that joined later is refused there,
by name, with the same message), and a kernel whose IR a worker cannot read is refused while it
is unpickled (``hawk.wire.IRFormatError``), never left to stall the run.

The scheduler runs no chunk but unpickles the task graph (current Dask does), so it must be
able to import eagle (``check_scheduler``); the chunks' description passes it sealed, unread
(``_chunk.SealedSpec``), so it needs none of the user's modules, and a graph it still cannot read
(a dask input built with a function of such a module) is reported as the scheduler's failure,
with its cause (``scheduler_failure``). ``check_readable`` has every worker unpickle the run's
description before it is submitted and names each that cannot, with the cause; a worker that
joins later opens it only after its environment check, so it fails its chunk by name at once,
never leaving the run to stall.
"""

from __future__ import annotations

import functools
import hashlib
import platform
import sys
from pathlib import Path

from ..errors import EagleError

__all__ = ["WorkerEnvironmentError", "environment", "mismatch", "check_workers",
           "check_scheduler", "check_readable", "scheduler_failure", "source_digest"]


class WorkerEnvironmentError(EagleError, RuntimeError):
    """A Dask worker (or the scheduler) cannot take part in a run: it compiles with other code
    than the client (versions, IR format, compiler source), or cannot read the run's tasks."""


@functools.cache
def source_digest(*folders: str) -> str:
    """A digest of every ``.py`` file under ``folders`` (their paths relative to the folder
    and their bytes): two processes agree on it exactly when they run the same source."""
    digest = hashlib.sha256()
    for folder in folders:
        root = Path(folder)
        for path in sorted(root.rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def environment() -> dict[str, str]:
    """What decides a chunk's bits in this process: package versions, the IR format's digest
    and the compiler's source digest."""
    import llvmlite
    import numpy

    import hawk
    from hawk import wire

    from .. import backend as backends

    # The host backend's code generator, found through the registry (nothing here imports a
    # backend by name): the package of the module that defines the host backend.
    host = sys.modules[type(backends.backend_for(backends.HOST)).__module__]
    emitter = getattr(host, "EMITTER_VERSION", "?")
    compiler = source_digest(str(Path(hawk.__file__).parent), str(Path(host.__file__).parent))
    eagle = sys.modules.get("eagle")
    return {"eagle": str(getattr(eagle, "__version__", "?")), "hawk": str(hawk.__version__),
            "llvmlite": llvmlite.__version__, "numpy": numpy.__version__,
            "cpu emitter": str(emitter), "hawk IR format": wire.ir_format_digest(),
            "compiler source": compiler,
            "python": ".".join(platform.python_version_tuple()[:2])}


def mismatch(expected: dict[str, str], found: dict[str, str]) -> str:
    """``"eagle 0.2.0 (the client has 0.1.0), ..."`` for each field that differs, or ``""``."""
    return ", ".join(f"{key} {found.get(key, 'missing')} (the client has {value})"
                     for key, value in expected.items() if found.get(key) != value)


_SAME = ("eagle, hawk (its IR format and compiler source included), llvmlite and code "
         "generator")


def check_workers(client, expected: dict[str, str]) -> list[str]:
    """Ask every worker for its environment; return their addresses, or raise
    ``WorkerEnvironmentError`` naming each worker that differs from ``expected``."""
    found = client.run(environment)
    bad = {worker: mismatch(expected, env) for worker, env in found.items()}
    bad = {worker: text for worker, text in bad.items() if text}
    if bad:
        lines = "; ".join(f"worker {worker} runs {text}" for worker, text in sorted(bad.items()))
        raise WorkerEnvironmentError(
            f"refusing to run: {lines}. Every worker must run the client's {_SAME}, or its "
            "chunks would come out with other bits (or not be read at all); install the same "
            "there, or stop that worker")
    return sorted(found)


def check_scheduler(client) -> None:
    """Raise ``WorkerEnvironmentError`` if the scheduler cannot import eagle."""
    try:
        client.run_on_scheduler(environment)
    except Exception as exc:  # what an unpickling failure arrives as depends on Dask's version
        raise WorkerEnvironmentError(
            f"the Dask scheduler at {_address(client)} could not run "
            f"eagle.distributed.environment ({_cause(exc)}); current Dask unpickles task graphs "
            "on the scheduler, so eagle-hawk must be installed there too") from exc


def _read(blob: bytes) -> None:
    """Run on each worker: unpickle a run's description."""
    import pickle

    pickle.loads(blob)


def check_readable(client, description) -> None:
    """Have every worker unpickle ``description`` (what the run's tasks carry besides the
    samples: the kernel, ``init``, ``reduce``, the uniforms) before anything is submitted;
    ``WorkerEnvironmentError`` naming each worker that cannot, with the cause (a module of the
    user's that only the client can import, most often). The scheduler is not asked: the spec
    passes it sealed (``_chunk.SealedSpec``), unread."""
    import cloudpickle

    blob = cloudpickle.dumps(description)
    found = client.run(_read, blob, on_error="return")
    bad = {worker: _cause(value) for worker, value in found.items()
           if isinstance(value, BaseException)}
    if bad:
        lines = "; ".join(f"Dask worker {worker} cannot read this run's tasks: {text}"
                          for worker, text in sorted(bad.items()))
        raise WorkerEnvironmentError(
            f"refusing to run: {lines}. What the tasks carry (init=, reduce=, and what they "
            "name) must be importable on every worker: install it there, or define it in the "
            "script itself")


def scheduler_failure(exc: BaseException, client) -> WorkerEnvironmentError | None:
    """The scheduler's own failure to read a task graph, as an error that says so with its
    cause, or None if ``exc`` is not one (Dask reports it as each task's error)."""
    if "deserialization of the task graph" not in str(exc):
        return None
    return WorkerEnvironmentError(
        f"the Dask scheduler at {_address(client)} could not read the run's task graph: "
        f"{_cause(exc)}; no chunk ran. What the tasks carry must be importable on the "
        "scheduler and every worker")


def _cause(exc: BaseException) -> str:
    """``exc``'s innermost cause as ``Type: message``."""
    for _ in range(20):  # the chain, as far as it goes (Dask chains the unpickling error)
        inner = exc.__cause__ or exc.__context__
        if inner is None:
            break
        exc = inner
    return f"{type(exc).__name__}: {exc}"


def _address(client) -> str:
    return getattr(client.scheduler, "address", "(unknown address)")


def check_here(expected: dict[str, str], worker: str) -> None:
    """On a worker, before a chunk: refuse it if this process differs from the client."""
    text = mismatch(expected, environment())
    if text:
        raise WorkerEnvironmentError(
            f"refusing to run on worker {worker}: it runs {text}; every worker must run the "
            f"client's {_SAME}")
