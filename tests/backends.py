"""The devices that the every-backend tests run on, each behind one small interface.

A ``Target`` says whether it can run here (else the reason its tests skip), moves a test's
bindings onto its device and back, and states its capabilities, so a test skips by what a
backend can do (``exact_math``, ``one_graph_launch``), never by its name:

- ``cpu``: the host backend, NumPy arrays;
- ``emulated-cuda``: the CUDA backend end to end on the host (``emulated_gpu``: the generated
  kernels compiled by the host C++ compiler, graphs and WHILE nodes replayed), registered as
  the backend serving ``cuda`` devices;
- ``cuda``: a real GPU with CuPy arrays.
"""

from __future__ import annotations

import copy
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pytest


@dataclass(frozen=True)
class Target:
    name: str
    device: str
    mode: str  # what a run's report says of how the loop ran
    exact_math: bool  # math library calls equal the C library's bit for bit
    one_graph_launch: bool  # a run is one graph launch, counted by the stand-in driver

    def reason_to_skip(self) -> str | None:
        return _REASONS[self.name]()

    @contextmanager
    def session(self, tmp_path_factory):
        """Yields a ``Session`` with this target in place."""
        if self.name == "cpu":
            yield Session(self, None)
        elif self.name == "emulated-cuda":
            from emulated_gpu import EmulatedDriver
            from fake_driver import installed

            def source_as_image(source, arch="sm_90", target="cubin", **options):
                return source.encode() + b"\0"

            with installed(EmulatedDriver(tmp_path_factory.mktemp("emulated")),
                           compiler=source_as_image) as driver:
                yield Session(self, driver)
        else:
            yield Session(self, pytest.importorskip("cupy"))


class Session:
    """One target in use: ``put`` copies host bindings to the device, ``get`` copies back."""

    def __init__(self, target: Target, handle):
        self.target = target
        self.handle = handle  # the emulated driver, or the cupy module

    def put(self, bindings: dict) -> dict:
        bindings = copy.deepcopy(bindings)
        if self.target.name == "cpu":
            return bindings
        if self.target.name == "emulated-cuda":
            from fake_driver import GpuArray

            return {k: GpuArray(self.handle, v) if isinstance(v, np.ndarray) else v
                    for k, v in bindings.items()}
        return {k: self.handle.asarray(v) if isinstance(v, np.ndarray) else v
                for k, v in bindings.items()}

    def get(self, arrays: dict) -> dict:
        return {k: v.get() if hasattr(v, "get") else v for k, v in arrays.items()}

    @property
    def graph_launches(self) -> int | None:
        return getattr(self.handle, "graph_launches", None)


def _cpu() -> str | None:
    return None


def _emulated() -> str | None:
    try:
        import cuda.bindings.driver  # noqa: F401
    except ImportError:
        return "cuda-bindings is not installed (the stand-in driver checks calls against it)"
    from eagle.cuda import driver
    from host_cuda import compiler

    if driver.is_available():
        return "a real GPU is present: the 'cuda' target runs instead"
    return None if compiler() else "no host C++ compiler to emulate the GPU with"


def _cuda() -> str | None:
    try:
        from eagle.cuda import is_available
    except ImportError as exc:
        return f"eagle.cuda is not importable ({exc})"
    if not is_available():
        return "needs a GPU: no usable CUDA device"
    try:
        import cupy  # noqa: F401
    except ImportError:
        return "needs CuPy for the GPU's arrays"
    return None


_REASONS = {"cpu": _cpu, "emulated-cuda": _emulated, "cuda": _cuda}

TARGETS = [
    Target("cpu", "cpu", "host-loop", exact_math=True, one_graph_launch=False),
    Target("emulated-cuda", "cuda:0", "graph-while", exact_math=True, one_graph_launch=True),
    Target("cuda", "cuda:0", "graph-while", exact_math=False, one_graph_launch=False),
]


@pytest.fixture(params=[pytest.param(t, id=t.name, marks=[pytest.mark.gpu] if t.name == "cuda"
                                     else []) for t in TARGETS])
def target(request, tmp_path_factory):
    """Every test taking ``target`` runs once per device; a device missing here skips."""
    reason = request.param.reason_to_skip()
    if reason:
        pytest.skip(reason)
    with request.param.session(tmp_path_factory) as session:
        yield session
