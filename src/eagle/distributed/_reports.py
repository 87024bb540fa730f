"""What a cluster run reports: one ``ChunkReport`` per chunk, merged into a ``DistributedReport``.

Reports are a few hundred bytes per chunk, so they always come back to the client, whatever
happens to the arrays (left on the workers, written to Zarr, reduced or released).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..report import counted

__all__ = ["ChunkReport", "DistributedReport"]


@dataclass(frozen=True)
class ChunkReport:
    """What one chunk did, and where.

    Attributes:
        index: the chunk's position in sample order.
        start, stop: its samples, ``start`` to ``stop - 1`` (global sample indices).
        worker: the Dask worker's address that ran (or reloaded) it.
        device: where it stepped (``"cpu"``, ``"cuda:0"``).
        launches, steps, done, build_s: the chunk's local ``Report`` fields.
        wall_s: seconds on the worker, making inputs and compiling included.
        threads: the host team's size (the worker's ``nthreads``; 0 on a GPU).
        resumed: the chunk was read back from the run's checkpoint folder, not run again.
    """

    index: int
    start: int
    stop: int
    worker: str
    device: str
    launches: int
    steps: int
    done: int
    build_s: float
    wall_s: float
    threads: int = 0
    resumed: bool = False


@dataclass(frozen=True)
class DistributedReport:
    """The merged report: totals, and every chunk's own report in sample order.

    Attributes:
        n: samples in all.
        done: samples whose terminated flag is set at the end.
        truncated: some chunk reached ``max_steps`` with samples still running.
        wall_s: wall-clock seconds of the whole run, as the client saw it.
        chunks: every chunk's ``ChunkReport``, in sample order.
    """

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
    def resumed(self) -> int:
        """Chunks read back from the checkpoint folder instead of run."""
        return sum(c.resumed for c in self.chunks)

    @property
    def workers(self) -> dict[str, list[int]]:
        """Which chunks each worker ran."""
        out: dict[str, list[int]] = {}
        for c in self.chunks:
            out.setdefault(c.worker, []).append(c.index)
        return out

    def __str__(self) -> str:
        resumed = f" ({self.resumed} resumed from the checkpoint)" if self.resumed else ""
        workers = len(self.workers)
        return (f"{self.done}/{self.n} done in {counted(len(self.chunks), 'chunk')}{resumed} on "
                f"{counted(workers, 'worker')}: {self.wall_s * 1e3:.1f} ms, "
                f"{counted(self.launches, 'launch', 'launches')} in all, slowest sample "
                f"{counted(self.steps, 'step')}")
