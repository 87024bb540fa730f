"""Ensembles sharded over a Dask cluster: ``eagle.distributed.until_done``.

Samples are independent, so an ensemble splits along the sample axis: each chunk of every
per-sample binding goes to a worker, which runs it with a local runner (on its GPU when it has
one, else on its host team) and sends the final state back. Dask does the scheduling, the data
movement and the retries: a worker that dies mid-chunk has its chunk run again elsewhere, from
the same inputs (the chunk's inputs are part of its task, not data held by one worker), so the
result does not change. The kernel travels as its IR (``hawk.ProgramKernel``), so workers need
neither the kernel's source file nor its module; each compiles it once (then cached on disk).
"""

from __future__ import annotations

import socket
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

import hawk
from hawk.ir import Role
from hawk.kernel import ProgramKernel

from .backend import HOST
from .bindings import bind, check_max_steps, check_steps_per_launch
from .plan import Plan, deploy

__all__ = ["until_done", "DistributedReport", "ChunkReport", "DistributedResult"]


@dataclass(frozen=True)
class ChunkReport:
    """What one chunk did, and where."""

    index: int
    start: int  # first sample
    stop: int  # one past the last sample
    worker: str
    device: str
    launches: int
    steps: int
    done: int
    build_s: float
    wall_s: float  # on the worker, compile included


@dataclass(frozen=True)
class DistributedReport:
    """The merged report: totals, and every chunk's own report in sample order."""

    n: int
    done: int
    truncated: bool
    wall_s: float
    chunks: tuple[ChunkReport, ...] = field(default=())

    @property
    def launches(self) -> int:
        return sum(c.launches for c in self.chunks)

    @property
    def steps(self) -> int:
        """Steps taken by the slowest sample of the whole ensemble."""
        return max((c.steps for c in self.chunks), default=0)

    @property
    def workers(self) -> dict[str, list[int]]:
        """Which chunks each worker ran."""
        out: dict[str, list[int]] = {}
        for c in self.chunks:
            out.setdefault(c.worker, []).append(c.index)
        return out

    def __str__(self) -> str:
        return (f"{self.done}/{self.n} done in {len(self.chunks)} chunks on "
                f"{len(self.workers)} workers: {self.wall_s * 1e3:.1f} ms, "
                f"{self.launches} launches in all, slowest sample {self.steps} steps")


@dataclass(frozen=True)
class DistributedResult:
    """``arrays``: the final state by parameter name (dask arrays, or NumPy with
    ``compute=True``); ``report``: the merged ``DistributedReport``."""

    arrays: dict
    report: DistributedReport


def _run_chunk(kernel: hawk.Kernel, device: str | None, arrays: dict, uniforms: dict,
               max_steps: int, steps_per_launch: int | None, index: int, start: int):
    """On a worker: run one chunk to the end; return its final arrays and its report."""
    from . import backend as backends
    from . import runner as runner_module

    t0 = time.perf_counter()
    device = device or backends.default_device()
    backend = backends.backend_for(device)
    on_device = {k: backend.from_host(v, device) for k, v in arrays.items()}
    runner = runner_module.until_done(deploy(kernel, device), max_steps=max_steps,
                                      steps_per_launch=steps_per_launch, **on_device, **uniforms)
    report = runner.run()
    final = {k: backend.to_host(v) for k, v in on_device.items()}
    final["__flags__"] = backend.to_host(runner.bound.flags)
    try:
        from distributed import get_worker

        worker = get_worker().address
    except (ImportError, ValueError):
        worker = socket.gethostname()
    n = next(iter(final.values())).shape[-1]
    return final, ChunkReport(index=index, start=start, stop=start + n, worker=worker,
                              device=device, launches=report.launches, steps=report.steps,
                              done=report.done, build_s=report.build_s,
                              wall_s=time.perf_counter() - t0)


def _bounds(n: int, chunks) -> list[tuple[int, int]]:
    if isinstance(chunks, bool) or not isinstance(chunks, int | tuple | list):
        raise TypeError(f"chunks must be a number of chunks (int) or a tuple of chunk sizes, "
                        f"got {chunks!r}")
    if isinstance(chunks, int):
        if not 1 <= chunks <= n:
            raise ValueError(f"chunks must be between 1 and the {n} samples, got {chunks}")
        edges = np.linspace(0, n, chunks + 1).round().astype(int)
        return list(zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True))
    sizes = [int(c) for c in chunks]
    if sum(sizes) != n or min(sizes) < 1:
        raise ValueError(f"chunk sizes {tuple(sizes)} must be positive and add up to the {n} "
                         "samples")
    edges = np.cumsum([0, *sizes])
    return list(zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True))


def until_done(plan: Plan | hawk.Kernel, client, chunks, max_steps: int,
               steps_per_launch: int | None = None, *, compute: bool = False,
               **bindings) -> DistributedResult:
    """Run an ensemble split along its samples over the Dask ``client``'s workers.

    Every per-sample binding (NumPy or dask arrays) is cut into ``chunks`` (a number of chunks,
    or their sizes); ``Param`` values go to every chunk. Each chunk runs to the end on one
    worker (its accelerator if it has one, unless ``plan`` names a device). Bindings are checked
    here first, exactly as ``eagle.until_done`` checks them. Returns the final state as dask
    arrays backed by the workers' results (NumPy arrays with ``compute=True``) and the merged
    report. A chunk that fails re-raises its original error, with the chunk's index and
    samples added as a note.
    """
    from dask import array as da
    from dask import delayed
    from distributed import wait

    if isinstance(plan, hawk.Kernel):
        plan = deploy(plan)
    if not isinstance(plan, Plan):
        raise TypeError(f"until_done() takes a plan or a hawk kernel, got {type(plan).__name__}")
    max_steps = check_max_steps(max_steps)
    steps_per_launch = check_steps_per_launch(steps_per_launch)
    lazy = {k: v for k, v in bindings.items() if isinstance(v, da.Array)}
    # Check every binding now (dask inputs by their metadata: a small stand-in).
    standins = {k: np.empty(v.shape, v.dtype) for k, v in lazy.items()}  # never written
    bound = bind(plan.kernel, {**bindings, **standins}, HOST, caller="distributed.until_done")
    program = plan.kernel.specialize(bound.dtypes)
    kernel = ProgramKernel(program)
    per_sample = [p.name for p in program.params
                  if p.role is not Role.PARAM and p.name in bindings]
    uniforms = {k: v for k, v in bindings.items() if k not in per_sample}
    start_time = time.perf_counter()
    tasks = []
    for index, (lo, hi) in enumerate(_bounds(bound.n, chunks)):
        pieces = {}
        for name in per_sample:
            value = bindings[name]
            if not hasattr(value, "shape") or np.ndim(value) == 0:
                pieces[name] = value  # a number a Scalar shares: every chunk gets it
                continue
            piece = value[..., lo:hi]
            pieces[name] = client.compute(piece) if name in lazy else np.ascontiguousarray(piece)
        with warnings.catch_warnings():
            # The chunk's inputs ride in its task on purpose: if its worker dies, the
            # scheduler can run it again elsewhere (data scattered to that worker would be lost).
            warnings.filterwarnings("ignore", message=".*large graph.*")
            tasks.append((index, lo, hi, client.submit(
                _run_chunk, kernel, plan.device, pieces, uniforms, max_steps, steps_per_launch,
                index, lo, pure=False,
                key=f"eagle-chunk-{program.name}-{index}-{time.time_ns()}")))
    wait([future for *_, future in tasks])
    for index, lo, hi, future in tasks:
        if future.status == "error":
            try:
                future.result()
            except Exception as exc:
                exc.add_note(f"in eagle.distributed chunk {index} (samples {lo} to {hi - 1})")
                for *_, other in tasks:
                    other.cancel()
                raise
    flag_name = program.terminated_param.name if program.terminated_param else None
    names = [name for name in per_sample if hasattr(bindings[name], "shape")
             and np.ndim(bindings[name]) > 0]
    if flag_name and flag_name not in names:
        names.append(flag_name)
    if compute:  # everything back in one round trip
        results = client.gather([future for *_, future in tasks])
        reports = [report for _, report in results]
        arrays = {name: np.concatenate([_part(r, name, flag_name) for r in results], axis=-1)
                  for name in names}
    else:  # the state stays on the workers, behind dask arrays
        reports = client.gather([client.submit(_report_of, future, pure=False)
                                 for *_, future in tasks])
        arrays = {}
        for name in names:
            shape = bound.arrays[name].shape if name in bound.arrays else (bound.n,)
            dtype = bound.arrays[name].dtype if name in bound.arrays else np.dtype(bool)
            arrays[name] = da.concatenate(
                [da.from_delayed(delayed(_part)(future, name, flag_name),
                                 (*shape[:-1], hi - lo), dtype)
                 for _, lo, hi, future in tasks], axis=-1)
    done = sum(r.done for r in reports)
    steps = max((r.steps for r in reports), default=0)
    report = DistributedReport(n=bound.n, done=done,
                               truncated=done < bound.n and steps >= max_steps,
                               wall_s=time.perf_counter() - start_time, chunks=tuple(reports))
    return DistributedResult(arrays, report)


def _report_of(result):
    return result[1]


def _part(result, name: str, flag_name: str | None):
    final = result[0]
    return final["__flags__"] if name == flag_name and name not in final else final[name]
