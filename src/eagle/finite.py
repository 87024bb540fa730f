"""``check_finite``: the check a runner made with ``until_done(..., check_finite=True)`` runs
after each launch (where the host sees launches) or at the end of ``run()`` (where it does not),
raising ``eagle.NonFiniteState`` at the first live sample whose state became NaN or infinite."""

from __future__ import annotations

import numpy as np

from hawk.ir import Role

from .errors import NonFiniteState

__all__ = ["FiniteCheck"]


class FiniteCheck:
    """``check_finite``: the float state arrays (``Mutable``/``Out``) of the samples that were
    live before the last check, looked at for NaN/inf; the first sample (lowest index) and its
    first such parameter named."""

    def __init__(self, runner):
        self.runner = runner
        self.to_host = runner.backend.to_host
        self.names = [p.name for p in runner.plan.kernel.params
                      if p.role in (Role.MUTABLE, Role.OUT)
                      and runner.bound.arrays[p.name].dtype.kind == "f"]
        self.live = ~np.array(self.to_host(runner.bound.flags), dtype=bool)

    def check(self) -> None:
        runner = self.runner
        first = None
        for name in self.names:
            state = self.to_host(runner.bound.arrays[name])
            bad = ~np.isfinite(state)
            if bad.ndim == 2:
                bad = bad.any(axis=0)
            hits = np.flatnonzero(bad & self.live)
            if hits.size and (first is None or hits[0] < first[0]):
                first = (int(hits[0]), name, state)
        self.live = ~np.array(self.to_host(runner.bound.flags), dtype=bool)
        if first is None:
            return
        index, name, state = first
        value = state[..., index]
        value = float(value) if value.ndim == 0 else next(float(v) for v in value
                                                         if not np.isfinite(v))
        when = (f"after launch {runner.launches} (step {runner.steps}); the arrays and counters "
                f"hold that launch boundary" if runner._loop.sees_launches
                else f"at the end of run() (step {runner.steps}; on {runner.device} the loop is "
                     "checked once, at its end)")
        raise NonFiniteState(f"sample {index}'s {name!r} is {value} {when}: "
                             f"{runner.plan.kernel.name} produced a NaN or infinity in a live "
                             "sample (until_done(..., check_finite=True))", index, name, value)
