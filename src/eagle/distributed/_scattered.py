"""Per-sample inputs already cut into a run's chunks and sent to the workers: ``Scattered``.

``run_on_cluster`` takes a NumPy input (its slices ride in the tasks, through the scheduler) or
a dask array (its blocks made on the workers). An input that exists only on the client and is
too big for the scheduler to carry is a third kind: ``scatter`` cuts it into the run's chunks
and sends each piece from the client straight to a worker (``client.scatter(direct=True)``),
and a ``Scattered`` stands for the pieces: a task of the run names its chunk's piece by key
only. Cheaper than a dask array over the same futures (one key per piece, no concatenate or
rechunk tasks: tens of kilobytes of graph less per chunk for a solve's twenty inputs).

Scattered data is the one thing Dask cannot make again: when a worker that holds a piece dies,
the run that needs it is cancelled. The caller holds the whole arrays, so it sends them again
(``eagle.ode.cluster`` does). Its ``token`` names it by its pieces' contents, so that a
checkpointed run that sends the same arrays again (from a new client) finds its chunks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Scattered", "scatter"]


@dataclass(frozen=True, eq=False)
class Scattered:
    """One per-sample input of shape ``shape`` (samples on the last axis) as one future per
    chunk, in sample order; ``sizes`` are the chunks' sample counts, ``token`` a digest of
    the pieces' contents (what names the input in a checkpoint's fingerprint)."""

    futures: tuple
    shape: tuple[int, ...]
    dtype: np.dtype
    sizes: tuple[int, ...]
    token: str = ""  # what names it in a checkpoint's fingerprint: its pieces' contents

    def release(self) -> None:
        """Free the pieces on the workers."""
        for future in self.futures:
            future.release()


def scatter(client, arrays: dict, bounds) -> dict[str, Scattered]:
    """Each chunk's slices of ``arrays`` (NumPy, samples on the last axis), sent from the client
    straight to one worker (round robin, so a chunk's inputs sit together)."""
    from ._checkpoint import fingerprint

    workers = sorted(client.nthreads()) or [None]
    names = list(arrays)
    futures = {name: [] for name in names}
    tokens = {name: [] for name in names}
    for index, (lo, hi) in enumerate(bounds):
        pieces = [np.ascontiguousarray(arrays[name][..., lo:hi]) for name in names]
        for name, piece in zip(names, pieces, strict=True):
            tokens[name].append(fingerprint(piece))
        where = workers[index % len(workers)]
        # a list, not a dict: scatter would take a dict's names as the keys of every chunk
        sent = client.scatter(pieces, direct=True, hash=False,
                              workers=None if where is None else [where])
        for name, future in zip(names, sent, strict=True):
            futures[name].append(future)
    sizes = tuple(hi - lo for lo, hi in bounds)
    return {name: Scattered(tuple(futures[name]), tuple(arrays[name].shape),
                            np.dtype(arrays[name].dtype), sizes,
                            "scattered:" + fingerprint(tokens[name])) for name in names}
