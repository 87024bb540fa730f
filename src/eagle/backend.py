"""The backend protocol: what a device family gives eagle, and the registry that finds one.

A backend is one object per device family (``"cpu"``, ``"cuda"``), found by the part of a
device name before the colon (``"cuda:1"`` -> the ``"cuda"`` backend). Everything above the
backends (``until_done``, ``Runner``, ``bind``, checkpoints, ``repeat_while``, Dask chunks) asks
the backend and never which device it is, so a new backend (HIP, Metal, another CPU strategy)
is one new module that implements ``Backend`` and one ``register`` call.

The path of a run, and who does what::

    until_done(plan, **bindings)
      bind()                      validates only; asks backend.device_of/view/full/shares_memory
      Runner(plan, bound)
        backend.loop(program, bound, ...)        a Loop: compiles, owns the launch schedule
      runner.run()
        loop.watch(progress)      a DeviceLoop only: write the live count for a progress bar
        loop.build()              one-time cost (compile on the CPU, record a graph on a GPU)
        loop.run(runner, after_launch)           advances samples, reports through runner.record

A loop's optional features are a protocol of their own, ``DeviceLoop`` (a user's stream, the
live count written for a progress bar, the loop as a graph records it): the runner and
``GraphComposer`` ask ``isinstance(loop, DeviceLoop)`` rather than probing for methods.

Backends are registered lazily by module path, so ``import eagle`` never imports a GPU
library; ``backend_for`` imports a backend's module the first time it is asked for.
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from hawk.ir import Program

from .errors import BackendUnavailable

__all__ = ["Backend", "Loop", "DeviceLoop", "RunCounters", "register", "registered",
           "backend_for", "backends", "device_of", "normalize_device", "default_device", "HOST"]

#: the device every host array lives on; always available
HOST = "cpu"


class RunCounters(Protocol):
    """The counters a loop advances (a ``Runner``): steps since reset, ``max_steps``, the
    live count after the last launch (None before the first), and ``record`` to add to them."""

    steps: int
    max_steps: int
    live: int | None

    @property
    def finished(self) -> bool: ...

    def record(self, launches: int, taken: int, live: int) -> None: ...


@runtime_checkable
class Loop(Protocol):
    """``until_done``'s loop for one runner on one backend.

    Attributes:
        mode: how the loop runs (``"host-loop"``, ``"graph-while"``, ...), for the report.
        threads: host threads a launch uses (0 where the host does not compute).
        steps_per_launch: the launch size last used.
        sees_launches: the host sees every launch boundary, so ``after_launch`` is called after
            each one (progress per launch, periodic checkpoints, Ctrl-C between launches);
            False where the whole loop runs on the device.
    """

    mode: str
    threads: int
    steps_per_launch: int
    sees_launches: bool

    def build(self) -> float:
        """Do the one-time work (compile, record); return its seconds (0 once done)."""

    def run(self, counters: RunCounters, after_launch: Callable[[], None]) -> None:
        """Advance every live sample until all are done or ``counters.max_steps``, recording
        each launch (or the whole run) with ``counters.record``; where ``sees_launches``, call
        ``after_launch()`` (no arguments) after each launch's ``record``."""

    def live_now(self) -> int | None:
        """The live count while ``run`` is going on (read from another thread), or None.
        A loop that needs to prepare for that (a GPU writing to pinned host memory) is a
        ``DeviceLoop``: the runner calls its ``watch`` before each run."""


@runtime_checkable
class DeviceLoop(Loop, Protocol):
    """A ``Loop`` that runs on a device's streams (a GPU's): the optional features a runner
    uses where its loop has them, and refuses (naming the device) where it has not.

    A loop has all three or none; the runner asks ``isinstance(loop, DeviceLoop)``, once.
    """

    def use_stream(self, stream) -> None:
        """Run on the user's ``stream`` (``until_done(..., stream=...)``: any library's stream
        or a raw handle); called once, before the loop is first used."""

    def watch(self, enabled: bool) -> None:
        """Called by the runner before each run: whether a progress bar will read
        ``live_now`` (only then need the device write its live count to host memory)."""

    def graph_loop(self) -> Any:
        """The loop as a graph records it (made on first use): what ``GraphComposer`` records,
        with ``prepare_for_capture``, ``append_to_capture`` and ``read_counters``."""


@runtime_checkable
class Backend(Protocol):
    """A device family: its arrays, its compiler and its loop.

    Attributes:
        family: the device-name prefix this backend serves (``"cpu"``, ``"cuda"``).
    """

    family: str

    def unavailable_reason(self) -> str | None:
        """Why this family cannot be used here (what to install or attach), or None."""

    def normalize(self, device: str) -> str:
        """The canonical name of ``device`` (``"cuda"`` -> ``"cuda:0"``); ValueError if it
        names no device of this family."""

    def default_device(self) -> str:
        """The device used when a caller asks for this family without an index."""

    def device_of(self, value) -> str | None:
        """The device an array-like ``value`` lives on, if it is this family's; else None."""

    def view(self, value, device: str):
        """A view of a user's array ``value`` on ``device`` (never a copy) with NumPy's
        ``shape``, ``dtype``, ``flags`` and ``ndim``; ``TypeError`` saying why when it cannot
        be viewed."""

    def full(self, shape: tuple[int, ...], value, dtype: np.dtype, device: str):
        """A new array of ``shape`` and ``dtype`` on ``device`` filled with ``value``
        (broadcast inputs, flags)."""

    def shares_memory(self, a, b) -> bool:
        """Whether the views ``a`` and ``b`` may overlap."""

    def to_host(self, array) -> np.ndarray:
        """A NumPy array of the view ``array``'s contents (the view itself on the host)."""

    def from_host(self, array: np.ndarray, device: str):
        """A new array on ``device`` holding ``array``'s values, bindable by ``until_done``."""

    def upload(self, array: np.ndarray, device: str):
        """A read-only copy of the C-contiguous host array ``array`` on ``device``, as ``view``
        gives one (the host: ``array`` itself): a NumPy table for a GPU run, copied once per
        binding."""

    def clear(self, array) -> None:
        """Set every element of the view ``array`` to zero (False)."""

    def compile(self, program: Program, device: str, *, fmad: bool = False) -> Any:
        """``program`` compiled and loaded for ``device`` (cached in memory and on disk);
        ``fmad=True`` lets a GPU compiler fuse multiply-adds (see ``eagle.deploy``)."""

    def loop(self, program: Program, bound, steps_per_launch: int | None, *, eager: bool,
             fmad: bool) -> Loop:
        """``until_done``'s loop of ``program`` over ``bound`` (``bind``'s result), with
        ``until_done``'s ``steps_per_launch`` (None: the backend's schedule) and ``eager``, and
        the plan's ``fmad``."""

    def repeat_while(self, condition, body: Callable[[], None], max_iterations: int | None,
                     device: str) -> int:
        """``eagle.repeat_while`` with a ``condition`` that lives on ``device``, one of this
        family's; ``body`` and ``max_iterations`` are ``repeat_while``'s, already checked."""

    def array_module(self):
        """The array library a user of this family writes plain array code in (NumPy, CuPy):
        what the performance card's eager arm is written in."""

    def synchronize(self, device: str) -> None:
        """Wait until all work issued to ``device`` is done (for timing)."""

    def describe(self) -> list[str]:
        """Lines for ``python -m eagle info``: versions and devices."""


# family -> the backend object, or "module:attribute" until first asked for
_registry: dict[str, Backend | str] = {}
_aliases = {"gpu": "cuda"}
_lock = threading.Lock()
_DEVICE = re.compile(r"^([a-z]+)(?::(\d+))?$")


def register(family: str, backend: Backend | str) -> Backend | str | None:
    """Make ``backend`` (or the ``"module:attribute"`` that makes it) serve ``family``;
    return what served it before. Later registrations are asked first by ``device_of``."""
    with _lock:
        previous = _registry.pop(family, None)
        _registry[family] = backend
    return previous


class registered:
    """``with registered(backend):`` -- ``backend`` serves its family inside the block (how
    the tests put an emulated GPU in place of the real one)."""

    def __init__(self, backend: Backend):
        self.backend = backend

    def __enter__(self) -> Backend:
        self.previous = register(self.backend.family, self.backend)
        return self.backend

    def __exit__(self, *exc) -> None:
        if self.previous is None:
            _registry.pop(self.backend.family, None)
        else:
            register(self.backend.family, self.previous)


def _load(family: str) -> Backend:
    with _lock:
        entry = _registry[family]
        if isinstance(entry, str):
            module, _, attribute = entry.partition(":")
            entry = getattr(importlib.import_module(module), attribute)()
            _registry[family] = entry
        return entry


def backends() -> list[Backend]:
    """Every registered backend, the host's first."""
    return [_load(family) for family in sorted(_registry, key=lambda f: f != HOST)]


def _family(device: str) -> str:
    match = _DEVICE.match(device) if isinstance(device, str) else None
    family = _aliases.get(match.group(1), match.group(1)) if match else None
    if family not in _registry:
        known = ", ".join(f"'{f}'" for f in sorted(_registry))
        raise ValueError(f"device must be one of the families {known} (or 'gpu'), optionally "
                         f"with ':K' for device K, got {device!r}")
    return family


def backend_for(device: str) -> Backend:
    """The backend serving ``device`` (``"cpu"``, ``"cuda:0"``, ``"gpu"``)."""
    return _load(_family(device))


def normalize_device(device: str) -> str:
    """The canonical name of ``device`` (``"gpu"`` -> ``"cuda:0"``); ValueError otherwise."""
    family = _family(device)
    device = device.replace(device.split(":")[0], family, 1)
    return _load(family).normalize(device)


def device_of(value) -> str:
    """The device an array-like ``value`` lives on (the host for anything no backend claims)."""
    for family in sorted(_registry, key=lambda f: f == HOST):  # the host claims last
        entry = _registry[family]
        if isinstance(entry, str) and not _may_be_foreign(value):
            continue  # a backend not loaded yet cannot own a plain host array
        found = _load(family).device_of(value)
        if found is not None:
            return found
    return HOST


def _may_be_foreign(value) -> bool:
    return not isinstance(value, np.ndarray | np.generic)


def default_device() -> str:
    """The first usable accelerator's default device, else the host."""
    for backend in backends()[1:]:
        if backend.unavailable_reason() is None:
            return backend.default_device()
    return HOST


def require(device: str, what: str) -> Backend:
    """The backend of ``device``, or ``BackendUnavailable`` saying why ``what`` cannot run."""
    backend = backend_for(device)
    reason = backend.unavailable_reason()
    if reason:
        raise BackendUnavailable(f"{what} was asked to run on {device}, but {reason}. Deploy "
                                 f"with device='{HOST}' and pass NumPy arrays")
    return backend


register(HOST, "eagle.cpu.backend:CpuBackend")
register("cuda", "eagle.cuda.backend:CudaBackend")
