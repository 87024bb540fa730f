"""Ensembles too big for one machine, run over a Dask cluster: ``eagle.distributed``.

``run_on_cluster(plan, client, ...)`` splits an ensemble along its samples into chunks, makes
each chunk's inputs on the worker that runs it (``init(lo, hi)``, or blocks of dask arrays),
runs the chunk there with a local runner and leaves its result there (a ``ClusterResult`` whose
arrays are dask arrays), or writes it to Zarr from the workers, or keeps only a reduction made
on the workers. The client and the scheduler carry descriptions and reports, not samples.

``until_done`` (the first version of this module, which carried every sample through the
client and the scheduler) is kept for a release as a thin wrapper over ``run_on_cluster`` that
warns with a ``DeprecationWarning``. ``traffic`` counts the bytes a Dask process moves through
its TCP comms (``--preload eagle.distributed.traffic``), for measuring a run.

Importing this module needs no Dask; running needs ``dask[distributed]`` (the ``[dask]``
extra; ``run_on_cluster`` says so when it is missing) on the client, the scheduler (current Dask
unpickles task graphs there) and every worker, with the same eagle, hawk (its IR format and
compiler source), llvmlite and CPU emitter everywhere (checked before each run).
No worker needs Numba (the CPU backend compiles with llvmlite).
"""

from ._chunk import ChunkSpec
from ._environment import WorkerEnvironmentError, environment
from ._legacy import DistributedResult, until_done
from ._reports import ChunkReport, DistributedReport
from ._run import ClusterResult, NoWorkersLeft, run_on_cluster

__all__ = ["run_on_cluster", "ClusterResult", "DistributedReport", "ChunkReport",
           "NoWorkersLeft", "WorkerEnvironmentError", "environment", "until_done",
           "DistributedResult", "ChunkSpec"]
