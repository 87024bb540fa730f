"""``eagle.distributed.until_done``: the first interface, kept as a thin deprecated wrapper.

It shared its name with the local ``eagle.until_done`` but ran at once and returned arrays
rather than updating the user's; its inputs rode in the tasks and its results were gathered on
the client. It now warns (``DeprecationWarning``) and calls ``run_on_cluster``; what it
returns is what it returned before: ``DistributedResult(arrays, report)`` with every
per-sample binding in ``arrays`` (the read-only ones are the caller's own inputs, not copies
that travelled back), as dask arrays, or NumPy arrays with ``compute=True``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ._reports import DistributedReport

__all__ = ["until_done", "DistributedResult"]


@dataclass(frozen=True)
class DistributedResult:
    """``arrays``: the final state by parameter name (dask arrays, or NumPy with
    ``compute=True``); ``report``: the merged ``DistributedReport``."""

    arrays: dict
    report: DistributedReport


def until_done(plan, client, chunks, max_steps: int, steps_per_launch: int | None = None, *,
               compute: bool = False, **bindings) -> DistributedResult:
    """Deprecated: use ``eagle.distributed.run_on_cluster`` (same chunks and bindings; its
    results stay on the workers and read-only inputs do not come back).

    Args:
        plan, client, chunks, max_steps, steps_per_launch: as for ``run_on_cluster``.
        **bindings: as for ``run_on_cluster``.
        compute: True: bring every array to the client as NumPy arrays; False (default):
            return dask arrays.
    """
    from ._run import _is_array, run_on_cluster

    warnings.warn("eagle.distributed.until_done is deprecated; use "
                  "eagle.distributed.run_on_cluster, which returns a ClusterResult whose "
                  "arrays stay on the workers", DeprecationWarning, stacklevel=2)
    result = run_on_cluster(plan, client, chunks=chunks, max_steps=max_steps,
                            steps_per_launch=steps_per_launch, **bindings)
    arrays = result.gather() if compute else dict(result.arrays)
    for name, value in bindings.items():
        if name not in arrays and _is_array(value):  # read-only inputs: the caller's own
            arrays[name] = (np.asarray(client.compute(value, sync=True))
                            if compute and not isinstance(value, np.ndarray) else value)
    return DistributedResult(arrays, result.report)
