"""``eagle.ode.solve(..., client=client, chunks=K)``: a solve's integration spread over Dask.

``solve`` does everything but the integration as it does for a local solve, on the client:
checks the arguments, builds the kernels, makes the arrays, prepares each sample's first step
(one step per sample) and, after the run, shapes the ``Solution`` (backward time, ``saveat``
times, recorded events, sensitivities and a terminal event's time correction). Only the
integration (the kernel run until every sample is done: nearly all of a solve's time) comes
here: ``run`` cuts the samples into ``K`` chunks and runs them with
``eagle.distributed.run_on_cluster``, each chunk on a worker from the kernel's IR (the workers
need neither the model's file nor the modules the script imports), then writes each chunk's
result into the very arrays a local run would have filled. A sample's integration depends on
nothing but its own inputs, and every worker compiles the same IR with the same compiler (the
environment guard), so the ``Solution`` is the local solve's, bit for bit, whatever ``K``.

What moves: each chunk's per-sample inputs are scattered from the client straight to a worker,
and each chunk's results are gathered straight from its worker (the client must be able to
connect to the workers), so the scheduler carries task descriptions and reports only, bytes
that do not grow with the number of samples. Scattered
data is not something Dask can make again: when a worker that held a chunk's inputs dies, the
run is cancelled, and ``run`` sends the inputs again from the client (which still holds them
all) and runs again, up to ``SEND_ATTEMPTS`` times in all, giving the same bits.

With ``checkpoint=folder`` each finished chunk is written there by its worker and a rerun of
the same solve reads it back (``eagle.distributed``'s checkpoint; the inputs are named in its
fingerprint by their contents, so a new client with the same arrays finds them).

A CuPy ``u0``: the solve's arrays are made and each sample's first step is taken on the
client's GPU; each per-sample array is then copied to host memory once, its chunks go to the
workers as above, and every worker moves its chunk onto its own GPU (the device ``cuda``: with
dask-cuda, one worker per GPU, each sees its GPU as ``cuda:0``), runs it with eagle's CUDA
backend and sends its results back, which are written into the solve's CuPy arrays; the
``Solution`` is CuPy, the local GPU solve's bit for bit (the same CUDA kernel on the same
inputs; ``fmad`` as the plan's). What it costs on top of a NumPy cluster solve: one
device-to-host copy of the inputs and one host-to-device copy of the results on the client, and
the same two per chunk on its worker (``eagle.distributed._devices``).

This path suits ensembles whose arrays fit on the client: every member's inputs go out and its
results come back through it. With dask-array inputs nothing of a member comes to the client
(``eagle.ode.dask_inputs`` checks them, ``eagle.ode.dask_chunks`` runs them).

Why this split rather than the whole ``solve`` on each chunk: the Solution's post-processing
and the checks stay in one place (``solver``), the funcs never travel (only the kernels' IR
does), and the result is the local one by construction rather than by a second code path.
"""

from __future__ import annotations

import numbers
from concurrent.futures import CancelledError

import numpy as np

from hawk.ir import Role

from .. import backend as backends
from ..arrays import is_array_like
from ..backend import HOST
from ..plan import Plan, deploy

__all__ = ["check_options", "run", "SEND_ATTEMPTS"]

#: runs tried in all when workers holding the scattered inputs die (each attempt sends them
#: again from the client)
SEND_ATTEMPTS = 3

#: the roles bound to one value shared by every sample (sent whole, never cut)
_WHOLE = (Role.PARAM, Role.TABLE)


def check_options(client, chunks, checkpoint=None) -> None:
    """Refuse ``client``/``chunks``/``checkpoint`` that cannot be served, by name, before
    anything is made."""
    if client is None:
        if chunks is not None:
            raise ValueError("chunks= splits a solve over a Dask cluster: pass client= too")
        if checkpoint is not None:
            raise ValueError("checkpoint= keeps a cluster solve's finished chunks: pass "
                             "client= too")
        return
    if not (hasattr(client, "scatter") and hasattr(client, "compute")):
        raise TypeError(f"client must be a distributed.Client, got {type(client).__name__}")
    if chunks is not None and (isinstance(chunks, bool)
                               or not isinstance(chunks, numbers.Integral) or chunks < 1):
        raise ValueError(f"chunks must be a positive int (the number of chunks), got "
                         f"{chunks!r}")


def run(plan: Plan, client, chunks, arrays: dict, tables: dict, *, max_steps: int, seed,
        progress: bool, checkpoint=None):
    """Run ``plan`` (the solve's main kernel) over the cluster on ``arrays`` and ``tables``,
    writing the results into ``arrays`` in place; returns the ``DistributedReport``.

    Means (each chunk on some worker, in parallel)::

        for lo, hi in chunks:
            part = {name: a[..., lo:hi] for each per-sample a in arrays}
            eagle.until_done(plan, max_steps=max_steps, seed=seed, **part, **shared).run()
            arrays[name][..., lo:hi] = part[name] for every array the kernel writes
    """
    from ..distributed import run_on_cluster
    from ..distributed._devices import to_host
    from ..distributed._scattered import scatter

    kernel = plan.kernel
    roles = {p.name: p.role for p in kernel.params}
    per_sample = {name: value for name, value in arrays.items()
                  if roles[name] not in _WHOLE and is_array_like(value)}
    device = {backends.device_of(value) for value in per_sample.values()}.pop()
    if device != HOST:  # a CuPy u0: the chunks go from host memory to the workers' GPUs
        on_gpu, backend = per_sample, backends.backend_for(device)
        per_sample = {name: backend.to_host(value) for name, value in on_gpu.items()}
    n = next(iter(per_sample.values())).shape[-1]
    count = chunks if chunks is not None else min(n, max(1, sum(client.nthreads().values())))
    if count > n:
        raise ValueError(f"chunks must be at most the {n} samples, got {count}")
    edges = np.linspace(0, n, int(count) + 1).round().astype(np.int64).tolist()
    bounds = list(zip(edges[:-1], edges[1:], strict=True))
    shared = {name: to_host(value) for name, value in arrays.items()  # GPU ones: host copies
              if name not in per_sample}
    tables = {name: to_host(value) for name, value in tables.items()}  # sent whole in the tasks
    runs_on = HOST if device == HOST else device.split(":")[0]  # each worker's own GPU
    sizes = tuple(hi - lo for lo, hi in bounds)
    attempt = 1
    while True:
        sent = scatter(client, per_sample, bounds)
        try:
            result = run_on_cluster(deploy(kernel, runs_on, fmad=plan.fmad), client,
                                    max_steps=max_steps,
                                    chunks=sizes, seed=seed, progress=progress,
                                    checkpoint=checkpoint, **sent,
                                    **shared, **tables)
            try:
                result.gather_into({name: per_sample[name] for name in result.arrays
                                    if name in per_sample})
            finally:
                result.release()
            if device != HOST:  # the results back into the solve's GPU arrays
                for name, target in on_gpu.items():
                    if roles[name].written:
                        target[...] = backend.from_host(per_sample[name], device)
            return result.report
        except CancelledError:
            # a worker holding scattered inputs died: Dask cannot make them again, but the
            # client holds them all; send them again and run again (the same bits)
            lost = any(f.status != "finished" for s in sent.values() for f in s.futures)
            if attempt == SEND_ATTEMPTS or not lost:
                raise
            attempt += 1
        finally:
            for pieces in sent.values():
                pieces.release()
