"""``eagle.ode.solve`` over dask arrays: an ensemble made, integrated and kept on the workers.

``solve(f, u0, t_span, p, client=client)`` with ``u0`` (and a per-sample ``p``) as dask arrays
never brings a member's numbers to the client. The client checks the arguments and builds the
kernels on the ensemble's first sample (``inputs``: one sample of each input is computed and
sent here), then ``run`` hands the rest to ``eagle.distributed.run_on_cluster``: each chunk's
blocks of ``u0`` and ``p`` are computed on the workers (from whatever graph made them: a Zarr
store, ``da.random``, ``map_blocks`` of the user's own function) and given to ``chunk_arrays``
there, which makes the chunk's every array with the very code a local solve uses
(``eagle.ode.ensemble``) and takes each sample's first step; the chunk is integrated there and
its results stay there. The ``Solution``'s per-sample arrays are dask arrays over those results,
so a reduction (``sol.u.mean(axis=-1).compute()``) runs on the workers and only its value comes
back; ``ts`` and the ``report`` are small and concrete.

Why dask arrays out for dask arrays in (rather than a ``gather=`` switch): a ``Solution``'s arrays
are on the device of ``u0`` (NumPy for NumPy, CuPy for CuPy), and a dask ``u0`` says its
numbers live on the cluster, so the results do too, as every ``dask.array`` function does.
``.compute()`` (or ``dask.compute(sol.u, sol.t)``) gathers them; ``.to_zarr`` writes them from
the workers. The chunks are ``u0``'s own sample chunks unless ``chunks=`` says how many.

Because every chunk's arrays come out of the local solve's code, sample by sample, the results
are the local solve's bits for the same numbers. A worker that dies has its chunk's blocks made
again from the graph, and ``checkpoint=`` keeps finished chunks for a rerun, both as
``run_on_cluster`` does.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

import hawk
from hawk.ir import Role

from ..runner import simulate
from . import arguments, ensemble

__all__ = ["LazyInputs", "inputs", "run", "chunk_arrays", "array_module"]

#: the arguments that must be numbers beside a dask ``u0`` (per-sample arrays of them would
#: pass through the client)
_NUMBERS_ONLY = ("t_span[0]", "t_span[1]", "rtol", "atol", "max_step", "dt")


@dataclass(frozen=True)
class LazyInputs:
    """A solve's dask inputs: the ``client``, ``u0`` and ``p`` as given, their first sample
    computed here (``first_u0``, ``first_p``: what ``solve`` checks and compiles for), the
    samples ``n`` and the sample-axis ``chunks``; ``numbers`` the per-sample arguments given
    as numbers."""

    client: object
    u0: object
    p: object
    n: int
    chunks: tuple[int, ...]
    first_u0: np.ndarray
    first_p: object
    numbers: dict


def is_dask(value) -> bool:
    return type(value).__module__.startswith("dask.array")


def array_module():
    """``dask.array``: the module of a dask solve's per-sample results."""
    from dask import array as da

    return da


def inputs(client, chunks, u0, p, *, t_span, rtol, atol, max_step, dt, args, saveat,
           sensitivity, event, record_events) -> LazyInputs | None:
    """None unless ``u0`` or ``p`` is a dask array; else what ``solve`` needs of them, after
    refusing by name what a dask solve cannot serve yet."""
    if not (is_dask(u0) or is_dask(p)):
        return None
    if client is None:
        raise ValueError("u0 or p is a dask array: pass client= (a distributed.Client) to "
                         "solve on its workers, or .compute() them to solve here")
    if not is_dask(u0):
        raise ValueError("p is a dask array: pass u0 as a dask array too (its chunks cut the "
                         "samples on the workers)")
    refused = {"args": args, "sensitivity= with an event": (sensitivity and event) or None,
               "saveat as times per sample": getattr(saveat, "ndim", 0) == 2 or None}
    for name, value in refused.items():
        if value is not None:
            raise ValueError(f"{name} does not go with a dask u0 yet: pass NumPy arrays")
    try:
        t0, t_end = t_span
    except (TypeError, ValueError):
        raise ValueError(f"t_span must be a pair (t0, t_end), got {t_span!r}") from None
    given = dict(zip(_NUMBERS_ONLY, (t0, t_end, rtol, atol, max_step, dt), strict=True))
    for name, value in given.items():
        if not (value is None or isinstance(value, numbers.Real)):
            raise ValueError(f"{name} must be a number beside a dask u0 (one value for every "
                             f"sample), got {type(value).__name__}")
    if u0.ndim not in (1, 2):
        raise ValueError(f"u0 must have shape (n,) or (k, n), got {tuple(u0.shape)}")
    n = int(u0.shape[-1])
    if is_dask(p) and (p.ndim == 0 or p.shape[-1] != n):
        raise ValueError(f"p as a dask array is per sample: its last axis must be u0's {n} "
                         f"samples, got shape {tuple(p.shape)} (pass a p shared by every "
                         "sample as a NumPy array)")
    sequence = isinstance(p, tuple | list)
    if sequence and not all(isinstance(v, numbers.Real) for v in p):
        raise ValueError("p as a sequence beside a dask u0 must be numbers: pass per-sample "
                         "values as one dask array (k, n)")
    last = np.shape(p)[-1] if not (is_dask(p) or sequence or np.ndim(p) == 0) else None
    if last == n:
        raise ValueError(f"p of shape {np.shape(p)} is per sample: beside a dask u0 pass it "
                         "as a dask array too (da.from_array(p, chunks=...), or made on the "
                         "workers)")
    # the first samples solve checks and compiles for: as many as tell a shared p's shape
    # from a per-sample one (its last axis is not their count)
    first = min(n, 2 if last == 1 else 1)
    if isinstance(chunks, int) and not isinstance(chunks, bool) and 1 <= chunks:
        if chunks > n:
            raise ValueError(f"chunks must be at most the {n} samples, got {chunks}")
        edges = np.linspace(0, n, chunks + 1).round().astype(np.int64)
        sizes = tuple(np.diff(edges).tolist())
    else:
        sizes = tuple(int(c) for c in u0.chunks[-1])
    firsts = client.compute([u0[..., :first]] + ([p[..., :first]] if is_dask(p) else []),
                            sync=True)
    return LazyInputs(client=client, u0=u0, p=p, n=n, chunks=sizes, first_u0=firsts[0],
                      first_p=firsts[1] if is_dask(p) else p, numbers=given)


@dataclass(frozen=True)
class ChunkRecipe:
    """What ``chunk_arrays`` needs besides a chunk's blocks (it travels to every worker): the
    ``layout``, the per-sample arguments given as ``numbers``, the first-step kernel
    (``prepare``, None for the fixed-step methods), the ``tables`` it reads, ``p`` as the
    user gave it when it is not a dask array (a number, a shared array, a sequence of
    numbers: bound for each chunk as ``solve`` binds it; None when ``p`` comes in blocks) and
    the names of the main kernel's per-sample arrays (what ``chunk_arrays`` returns)."""

    layout: ensemble.Layout
    numbers: dict
    prepare: hawk.Kernel | None
    tables: dict
    p: object
    per_sample: tuple[str, ...]


def chunk_arrays(recipe: ChunkRecipe, lo: int, hi: int, u0, p=None) -> dict:
    """Samples ``lo`` to ``hi - 1``'s arrays for the solve's main kernel, from their blocks of
    ``u0`` and ``p``, made by the local solve's code (``ensemble``) and first-stepped: run on
    a Dask worker (``run_on_cluster``'s ``init``)."""
    layout, given, m = recipe.layout, recipe.numbers, hi - lo
    dtype = layout.dtype

    def each(name, **checks):
        return arguments.per_sample(name, given[name], np, m, dtype, **checks)

    t, t_end = each("t_span[0]"), each("t_span[1]")
    if layout.backward:
        t, t_end = -t, -t_end
    bound_p = arguments.params(recipe.p if p is None else np.asarray(p), np, m, dtype)[0]
    numbers_of = {}
    if layout.adaptive:
        numbers_of = dict(rtol=each("rtol", positive=True), atol=each("atol", positive=True),
                          max_step=each("max_step", positive=True, infinite=True))
    else:
        numbers_of = dict(dt=each("dt", positive=True))
    u = ensemble.start_state(layout, np.asarray(u0), np, m)
    arrays = ensemble.make(layout, np, m, u0=u, p=bound_p, t=t, t_end=t_end, **numbers_of)
    if recipe.prepare is not None:
        simulate(recipe.prepare, max_steps=1, **ensemble.first_step_bindings(arrays, np, m),
                 **recipe.tables)
    return {name: arrays[name] for name in recipe.per_sample}


def run(lazy: LazyInputs, layout: ensemble.Layout, plan, prepare, tables: dict, bound_p, *,
        max_steps: int, seed, progress: bool, checkpoint) -> tuple[dict, object]:
    """Integrate the ensemble on the workers: ``(arrays, report)``, ``arrays`` the main
    kernel's written arrays as dask arrays held there, ``report`` the ``DistributedReport``;
    ``bound_p`` is ``p`` as ``solve`` binds it (for the first sample only, if per sample)."""
    from functools import partial

    from ..distributed import run_on_cluster

    if layout.row_width:
        raise ValueError("record_events with nothing acting on the events (a Poincaré "
                         "section) does not go with a dask u0 yet: pass NumPy arrays")
    per_sample_p = is_dask(lazy.p)
    m = lazy.first_u0.shape[-1]
    ones = np.ones(m)
    stand_in = ensemble.make(  # the first samples, to tell per-sample arrays from shared ones
        layout, np, m, u0=ensemble.start_state(layout, lazy.first_u0, np, m), p=bound_p,
        t=np.zeros(m), t_end=ones, rtol=ones, atol=ones, max_step=ones, dt=ones)
    roles = {p.name: p.role for p in plan.kernel.params}
    per_sample = tuple(name for name, value in stand_in.items()
                       if isinstance(value, np.ndarray) and roles[name] not in
                       (Role.PARAM, Role.TABLE))
    shared = {name: value for name, value in stand_in.items() if name not in per_sample}
    recipe = ChunkRecipe(layout=layout, numbers=lazy.numbers, prepare=prepare, tables=tables,
                         p=None if per_sample_p else 0.0 if lazy.p is None else lazy.p,
                         per_sample=per_sample)
    init_inputs = {"u0": lazy.u0, **({"p": lazy.p} if per_sample_p else {})}
    result = run_on_cluster(plan, lazy.client, max_steps=max_steps, chunks=lazy.chunks,
                            init=partial(chunk_arrays, recipe), init_inputs=init_inputs,
                            seed=seed, progress=progress, checkpoint=checkpoint, **shared,
                            **tables)
    return dict(result.arrays), result.report
