"""The environment guard: every worker must run the same eagle, hawk, llvmlite and code generator.

A chunk's bits depend on the code that compiles and runs it: a worker with another llvmlite or a
changed emitter (``EMITTER_VERSION``) would give different bits for its chunks, silently. So
before a run the client asks every worker (``client.run``) for ``environment()`` and refuses
the run, naming each mismatched worker and what differs, if any worker's differs from the
client's; and each chunk checks again on the worker that runs it (a worker that joined later is
refused there, with the same message). The scheduler does not run chunks but unpickles the task
graph (current Dask does), so it must be able to import eagle: ``check_scheduler`` says so
plainly instead of the unpickling error.
"""

from __future__ import annotations

import platform
import sys

from ..errors import EagleError

__all__ = ["WorkerEnvironmentError", "environment", "mismatch", "check_workers",
           "check_scheduler"]


class WorkerEnvironmentError(EagleError, RuntimeError):
    """A Dask worker (or the scheduler) cannot take part in a run: it runs other versions of
    the packages that decide a chunk's bits, or cannot import eagle at all."""


def environment() -> dict[str, str]:
    """What decides a chunk's bits in this process: package versions and the emitter's."""
    import llvmlite
    import numpy

    import hawk

    from .. import backend as backends

    # The host backend's code generator version, found through the registry (nothing here
    # imports a backend by name): the module that defines the host backend holds it.
    host = backends.backend_for(backends.HOST)
    emitter = getattr(sys.modules[type(host).__module__], "EMITTER_VERSION", "?")
    eagle = sys.modules.get("eagle")
    return {"eagle": str(getattr(eagle, "__version__", "?")), "hawk": str(hawk.__version__),
            "llvmlite": llvmlite.__version__, "numpy": numpy.__version__,
            "cpu emitter": str(emitter),
            "python": ".".join(platform.python_version_tuple()[:2])}


def mismatch(expected: dict[str, str], found: dict[str, str]) -> str:
    """``"eagle 0.2.0 (the client has 0.1.0), ..."`` for each field that differs, or ``""``."""
    return ", ".join(f"{key} {found.get(key, 'missing')} (the client has {value})"
                     for key, value in expected.items() if found.get(key) != value)


def check_workers(client, expected: dict[str, str]) -> list[str]:
    """Ask every worker for its environment; return their addresses, or raise
    ``WorkerEnvironmentError`` naming each worker that differs from ``expected``."""
    found = client.run(environment)
    bad = {worker: mismatch(expected, env) for worker, env in found.items()}
    bad = {worker: text for worker, text in bad.items() if text}
    if bad:
        lines = "; ".join(f"worker {worker} runs {text}" for worker, text in sorted(bad.items()))
        raise WorkerEnvironmentError(
            f"refusing to run: {lines}. Every worker must run the client's eagle, hawk, llvmlite "
            "and code generator, or its chunks would come out with other bits; install the "
            "same versions there, or stop that worker")
    return sorted(found)


def check_scheduler(client) -> None:
    """Raise ``WorkerEnvironmentError`` if the scheduler cannot import eagle."""
    try:
        client.run_on_scheduler(environment)
    except Exception as exc:  # what an unpickling failure arrives as depends on Dask's version
        address = getattr(client.scheduler, "address", "the scheduler")
        raise WorkerEnvironmentError(
            f"the Dask scheduler at {address} could not run eagle.distributed.environment "
            f"({type(exc).__name__}: {exc}); current Dask unpickles task graphs on the "
            "scheduler, so eagle-hawk must be installed there too") from exc


def check_here(expected: dict[str, str], worker: str) -> None:
    """On a worker, before a chunk: refuse it if this process differs from the client."""
    text = mismatch(expected, environment())
    if text:
        raise WorkerEnvironmentError(
            f"refusing to run on worker {worker}: it runs {text}; every worker must run the "
            "client's eagle, hawk, llvmlite and code generator")
