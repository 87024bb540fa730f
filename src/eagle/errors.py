"""eagle's errors: one hierarchy, each message naming what was wrong and where."""

from __future__ import annotations

__all__ = ["EagleError", "BindingError", "BindingTypeError", "BindingValueError", "CudaError",
           "CaptureError", "CompileFailed", "BackendUnavailable", "CheckpointError",
           "ArtifactError", "RunnerBusy", "NonFiniteState", "TruncationWarning"]  # fmt: skip


class EagleError(Exception):
    """Base of every error eagle raises on its own account."""


class BindingError(EagleError):
    """A binding passed to ``until_done``/``simulate`` does not fit the kernel's parameter."""


class BindingTypeError(BindingError, TypeError):
    """A binding is missing, unknown, or of the wrong kind or dtype."""


class BindingValueError(BindingError, ValueError):
    """A binding has the right kind but a wrong shape, sample count, layout or value."""


class BackendUnavailable(EagleError, RuntimeError):
    """The requested device cannot be used here; the message says what is missing."""


class CudaError(EagleError, RuntimeError):
    """A CUDA call failed; ``name`` is the CUDA error's name and ``call`` the failing call.

    Args:
        name: the CUDA error's name (e.g. ``"CUDA_ERROR_OUT_OF_MEMORY"``), kept as ``name``.
        call: the failing call, kept as ``call``.
        detail: what more is known (the error's description, a log); default "".
    """

    def __init__(self, name: str, call: str, detail: str = ""):
        self.name, self.call = name, call
        super().__init__(f"{call} failed with {name}" + (f": {detail}" if detail else ""))


class CaptureError(EagleError, RuntimeError):
    """Something inside a captured step broke a rule of graph capture (allocate, synchronize)."""


class CompileFailed(CudaError):
    """NVRTC or nvJitLink rejected the code; the message holds the full log.

    Args:
        name, call, detail: as for ``CudaError``: the error's name, the failing call, and
            the compiler's log.
    """


class CheckpointError(EagleError, ValueError):
    """A checkpoint is unreadable, damaged, or belongs to another kernel."""


class ArtifactError(EagleError, ValueError):
    """An artifact or its sidecar is missing, malformed, of an unknown format, or tampered."""


class RunnerBusy(EagleError, RuntimeError):
    """A ``Runner`` was asked to ``run()`` (or ``reset()``) while it is already running in
    another thread (or, on a device whose loop the host does not see, to ``checkpoint()``
    during a run). One runner runs one loop at a time; the message names the runner and the
    thread that holds it."""


class NonFiniteState(EagleError, FloatingPointError):
    """``until_done(..., check_finite=True)``: a live sample's state became NaN or infinite.

    Args:
        message: the error's text, naming the sample, the parameter and the value.
        sample, parameter, value: kept as the attributes below.

    Attributes:
        sample: the index of the first such sample.
        parameter: the name of the first such state parameter of that sample.
        value: the value found there.
    """

    def __init__(self, message: str, sample: int, parameter: str, value: float):
        self.sample, self.parameter, self.value = sample, parameter, value
        super().__init__(message)

    def __reduce__(self):  # picklable (a Dask worker sends it back)
        return type(self), (str(self), self.sample, self.parameter, self.value)


class TruncationWarning(RuntimeWarning):
    """``run()`` (or ``simulate``) reached ``max_steps`` with samples still running, of a kernel
    with a ``Terminated`` parameter (one without it can only stop at ``max_steps``: no
    warning)."""
