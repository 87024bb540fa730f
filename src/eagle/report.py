"""``Report``: what one ``Runner.run()`` call did, and the warning a truncated run gives."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from .errors import TruncationWarning

__all__ = ["Report", "counted", "warn_if_truncated"]


@dataclass(frozen=True)
class Report:
    """What one ``Runner.run()`` call did.

    Attributes:
        build_s: one-time cost of this call: compiling or loading the kernel on the CPU;
            recording and instantiating the graph on a GPU (where the kernel is compiled by
            ``until_done``); 0 on every later call of the same runner.
        launches: kernel launches during this call.
        steps: steps taken by the slowest sample during this call.
        done: samples whose terminated flag is set, after this call.
        n: samples in all.
        truncated: ``max_steps`` was reached with samples still running (after any run
            that reached ``max_steps`` of a kernel without ``Terminated``, whose samples
            never finish; that alone gives no ``TruncationWarning``).
        wall_s: wall-clock time of this call, build included.
        device: where it ran (``"cpu"``, ``"cuda:0"``).
        mode: how the loop ran: ``"host-loop"`` (CPU), ``"graph-while"`` (a GPU graph whose
            WHILE node loops on the device) or ``"graph-unrolled"`` (drivers before 12.4).
        threads: host threads used (0 where the device computes, a GPU).
        steps_per_launch: the launch size last used.
    """

    build_s: float
    launches: int
    steps: int
    done: int
    n: int
    truncated: bool
    wall_s: float
    device: str
    mode: str
    threads: int
    steps_per_launch: int

    def __str__(self) -> str:
        state = f"{self.done}/{self.n} done" + (" (truncated at max_steps)" if self.truncated
                                                 else "")
        how = f"{self.mode}, {counted(self.threads, 'thread')}" if self.threads else self.mode
        return (f"{state} after {counted(self.steps, 'step')} in "
                f"{counted(self.launches, 'launch', 'launches')} on {self.device} "
                f"({how}): {self.wall_s * 1e3:.2f} ms, build {self.build_s * 1e3:.2f} ms")


def counted(k: int, one: str, many: str | None = None) -> str:
    """``k`` things in words: ``1 launch``, ``6 launches`` (``many``: default ``one + "s"``)."""
    return f"{k} {one if k == 1 else many or one + 's'}"


def warn_if_truncated(runner, report: Report, stacklevel: int) -> None:
    """``TruncationWarning`` when a run of ``runner`` ended at ``max_steps`` with samples still
    running, unless the kernel has no ``Terminated`` parameter: its samples cannot finish
    earlier, so running exactly ``max_steps`` is what it was asked to do (a Monte Carlo payoff
    evaluated once with ``max_steps=1``), not a limit it ran into. ``Report.truncated`` still
    says so. ``stacklevel`` counts from this function, as ``warnings.warn``'s does."""
    if not report.truncated or runner.plan.kernel.program.terminated_param is None:
        return
    live = report.n - report.done
    warnings.warn(f"{runner.plan.kernel.name}: {live} of {report.n} samples were still running "
                  f"at max_steps={runner.max_steps}; raise runner.max_steps and run() again to "
                  "continue them (or pass a larger max_steps)", TruncationWarning,
                  stacklevel=stacklevel)
