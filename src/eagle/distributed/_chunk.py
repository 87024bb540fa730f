"""What runs on a Dask worker: one chunk of samples, ``lo`` to ``hi - 1``, from inputs to result.

``run_chunk`` makes the chunk's inputs (``init(lo, hi)``, on the worker), or takes the pieces
its task was given (slices of NumPy arrays, or dask-array blocks computed on the workers), runs
them to the end with a local runner and returns a ``ChunkOutput``: the written parameters only
(``Mutable``, ``Out``, ``Terminated``; read-only inputs never travel back), the chunk's report
and, with ``reduce=``, the user's reduction of its arrays. Everything it needs travels in one
small, picklable ``ChunkSpec`` (the kernel as its IR, so workers need neither the kernel's file
nor its module), so the task can be run again anywhere after a worker dies and gives the same
bits: the chunk's inputs are a pure function of ``(lo, hi)``.

A kernel that draws random numbers gets the chunk's first global sample index ``lo`` as its
runner's ``bound.first_sample``, so each sample draws the stream of its global index.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from hawk.kernel import ProgramKernel

from . import _checkpoint
from ._devices import to_host
from ._environment import check_here
from ._reports import ChunkReport

__all__ = ["ChunkSpec", "SealedSpec", "ChunkOutput", "run_chunk"]

# One chunk steps at a time in a worker process, on a host team as large as the worker's
# ``nthreads`` (its share of the machine): Dask may hand a worker ``nthreads`` chunks at once,
# and ``nthreads`` chunks each on ``nthreads`` threads would oversubscribe its cores.
_ONE_AT_A_TIME = threading.Lock()
PROGRESS_EVERY_S = 0.5


@dataclass(frozen=True)
class ChunkSpec:
    """Everything a chunk needs besides its samples' bounds and input pieces.

    Attributes:
        kernel: the kernel specialised for the run's dtypes, as IR.
        device: the plan's device (None: the worker's default, its GPU if it has one; a
            dask-cuda worker sees its assigned GPU as ``cuda:0``).
        fmad: the plan's ``fmad`` (GPU compilers' fused multiply-add).
        max_steps, steps_per_launch: as for ``eagle.until_done``.
        uniforms: the ``Param`` values and the numbers a ``Scalar`` shares.
        written: the parameters that come back (Mutable, Out and Terminated, in kernel order).
        init: ``init(lo, hi) -> {name: array}``, run on the worker, or None.
        reduce: ``reduce(arrays, lo, hi) -> small value``, run on the worker, or None.
        keep: keep the chunk's arrays on the worker (behind the result's dask arrays).
        checkpoint: the folder of per-chunk results, or None.
        token: the run's fingerprint (checkpoint files of another run are not reused).
        environment: the client's ``environment()``, checked again on the worker.
        progress_topic: the Dask event topic that samples-done counts are logged to, or None.
        seed: the random streams' seed (a kernel that draws), or None.
    """

    kernel: ProgramKernel
    device: str | None
    fmad: bool
    max_steps: int
    steps_per_launch: int | None
    uniforms: dict
    written: tuple[str, ...]
    init: Callable | None
    reduce: Callable | None
    keep: bool
    checkpoint: str | None
    token: str
    environment: dict
    progress_topic: str | None = None
    seed: int | None = None


@dataclass(frozen=True)
class SealedSpec:
    """A ``ChunkSpec`` as it travels: pickled bytes beside the client's environment.

    The scheduler passes it on without reading it (so it needs none of the modules ``init``
    or ``reduce`` come from), and a worker checks its environment before it opens the spec:
    a worker that cannot read it (another IR format, a module it cannot import) fails its
    chunk at once with its name and the cause, instead of failing to unpickle the task, which
    Dask retries elsewhere or leaves waiting until the run's ``timeout``.
    """

    environment: dict
    blob: bytes

    @classmethod
    def seal(cls, spec: ChunkSpec) -> SealedSpec:
        import cloudpickle

        return cls(spec.environment, cloudpickle.dumps(spec))

    def open(self) -> ChunkSpec:
        import pickle

        return pickle.loads(self.blob)


@dataclass(frozen=True)
class ChunkOutput:
    """A chunk's result: ``arrays`` (None unless the spec keeps them), ``report``, ``reduced``."""

    arrays: dict | None
    report: ChunkReport
    reduced: object = None


def _worker():
    try:
        from distributed import get_worker

        return get_worker()
    except (ImportError, ValueError):
        return None


def run_chunk(spec: ChunkSpec | SealedSpec, index: int, lo: int, hi: int,
              pieces: dict, init_inputs: dict | None = None) -> ChunkOutput:
    """Run samples ``lo`` to ``hi - 1`` (see the module docstring); ``init_inputs`` are the
    chunk's blocks that ``init`` takes. On failure the error gets a note naming this chunk and
    this worker."""
    worker = _worker()
    where = worker.address if worker is not None else socket.gethostname()
    try:
        check_here(spec.environment, where)
        if isinstance(spec, SealedSpec):
            spec = spec.open()
        if spec.checkpoint is not None:
            loaded = _checkpoint.load(spec.checkpoint, lo, hi, spec.token)
            if loaded is not None:
                arrays, report = loaded
                return _finish(spec, arrays, replace(report, worker=where, resumed=True), lo, hi)
        arrays, report = _run(spec, index, lo, hi, pieces, init_inputs or {}, worker, where)
        if spec.checkpoint is not None:
            _checkpoint.save(spec.checkpoint, lo, hi, spec.token, arrays, report)
        return _finish(spec, arrays, report, lo, hi)
    except Exception as exc:
        exc.add_note(f"on Dask worker {where}, running eagle.distributed chunk {index} "
                     f"(samples {lo} to {hi - 1})")
        raise


def _finish(spec: ChunkSpec, arrays: dict, report: ChunkReport, lo: int,
            hi: int) -> ChunkOutput:
    reduced = spec.reduce(arrays, lo, hi) if spec.reduce is not None else None
    return ChunkOutput(arrays if spec.keep else None, report, reduced)


def _inputs(spec: ChunkSpec, lo: int, hi: int, pieces: dict, init_inputs: dict) -> dict:
    """The chunk's per-sample arrays: its pieces (copied where the kernel writes them: a
    piece may be a dask block another task still holds; made contiguous where a block is a
    strided view) and what ``init`` makes (from its ``init_inputs`` blocks, if any)."""
    pieces = {name: to_host(value) for name, value in pieces.items()}  # a CuPy dask block
    arrays = {name: np.array(value) if name in spec.written else np.ascontiguousarray(value)
              for name, value in pieces.items()}
    if spec.init is not None:
        made = spec.init(lo, hi, **init_inputs)
        if not isinstance(made, dict):
            raise TypeError(f"init({lo}, {hi}) must return a dict of arrays by parameter name, "
                            f"got {type(made).__name__}")
        arrays.update({name: np.asarray(to_host(value)) for name, value in made.items()})
    return arrays


def _run(spec: ChunkSpec, index: int, lo: int, hi: int, pieces: dict, init_inputs: dict,
         worker, where: str) -> tuple[dict, ChunkReport]:
    from .. import backend as backends
    from .. import runner as runner_module
    from ..plan import deploy
    from ..threads import _cpus, set_num_threads

    t0 = time.perf_counter()
    arrays = _inputs(spec, lo, hi, pieces, init_inputs)
    device = spec.device or backends.default_device()
    backend = backends.backend_for(device)
    on_device = {k: backend.from_host(v, device) for k, v in arrays.items()}
    threads = min(worker.state.nthreads, _cpus()) if worker is not None else _cpus()
    with _ONE_AT_A_TIME:
        set_num_threads(threads)  # read by the CPU loop when run() starts
        runner = runner_module.until_done(deploy(spec.kernel, device, fmad=spec.fmad),
                                          max_steps=spec.max_steps,
                                          steps_per_launch=spec.steps_per_launch,
                                          seed=spec.seed, **on_device, **spec.uniforms)
        runner.bound.first_sample = lo  # draws follow the sample's global index
        with _progress(spec, worker, index, runner):
            report = runner.run()
    final = {name: backend.to_host(runner.bound.arrays[name]) for name in spec.written}
    return final, ChunkReport(
        index=index, start=lo, stop=hi, worker=where, device=device, launches=report.launches,
        steps=report.steps, done=report.done, build_s=report.build_s,
        wall_s=time.perf_counter() - t0, threads=report.threads)


class _progress:
    """While a chunk runs, log its samples-done count to the run's Dask event topic every
    ``PROGRESS_EVERY_S`` (read from the runner's live count, which each launch updates)."""

    def __init__(self, spec: ChunkSpec, worker, index: int, runner):
        self.active = spec.progress_topic is not None and worker is not None
        self.topic, self.worker, self.index, self.runner = (spec.progress_topic, worker,
                                                            index, runner)
        self.stop = threading.Event()

    def _post(self):
        while not self.stop.wait(PROGRESS_EVERY_S):
            live = self.runner.live
            if live is not None:
                self.worker.log_event(self.topic, [self.index, self.runner.n - live])

    def __enter__(self):
        if self.active:
            self.thread = threading.Thread(target=self._post, daemon=True,
                                           name="eagle-chunk-progress")
            self.thread.start()
        return self

    def __exit__(self, *exc):
        if self.active:
            self.stop.set()
            self.thread.join()
