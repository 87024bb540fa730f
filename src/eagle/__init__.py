"""eagle: advance many independent samples step by step until each is done.

``deploy`` compiles a hawk kernel for a device, ``until_done`` binds it to arrays, and
``Runner.run()`` crosses into the device (or the host team) once and returns when every sample
is done or ``max_steps`` is reached.
"""

from .errors import (
    ArtifactError,
    BackendUnavailable,
    BindingError,
    BindingTypeError,
    BindingValueError,
    CaptureError,
    CheckpointError,
    CompileFailed,
    CudaError,
    EagleError,
    NonFiniteState,
    RunnerBusy,
    TruncationWarning,
)
from .loop import repeat_while
from .plan import Plan, deploy
from .runner import Report, Runner, simulate, until_done
from .threads import get_num_threads, set_num_threads

__all__ = [
    "deploy", "until_done", "simulate", "repeat_while", "Plan", "Runner", "Report",
    "set_num_threads", "get_num_threads",
    "EagleError", "BindingError", "BindingTypeError", "BindingValueError", "BackendUnavailable",
    "CudaError", "CaptureError", "CompileFailed", "CheckpointError", "ArtifactError",
    "RunnerBusy", "NonFiniteState", "TruncationWarning",
]  # fmt: skip


# Subpackages reachable as attributes after ``import eagle`` (``eagle.ode.solve(...)``), each
# imported on first use (PEP 562) so that ``import eagle`` stays as quick as it is.
_SUBMODULES = ("ode", "distributed", "cuda", "pipeline", "compose", "loaded")


def __getattr__(name: str):
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    if name == "__version__":  # one distribution (eagle-hawk), one version: hawk reads it
        import hawk

        globals()["__version__"] = version = hawk.__version__
        return version
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_SUBMODULES})


def _apply_environment() -> None:
    from .threads import apply_environment

    apply_environment()


_apply_environment()
