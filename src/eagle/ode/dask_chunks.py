"""A dask-input solve's chunks: made, integrated and finished on the workers (``run``).

``run`` hands the ensemble to ``eagle.distributed.run_on_cluster``: each chunk's blocks of the
dask inputs (``u0``, ``p``, ``args``, per-sample ``t_span``, tolerances, steps: those
``eagle.ode.dask_inputs`` found) are computed on the workers, from whatever graph made them (a
Zarr store, ``da.random``, ``map_blocks`` of the user's own function), and given to
``chunk_arrays`` there, which makes the chunk's every array with the very code a local solve
uses (``eagle.ode.ensemble``, ``arguments.per_sample``, ``model_args.pack``) and takes each
sample's first step; the chunk is integrated there and its results stay there. The
``Solution``'s per-sample arrays are dask arrays over those results, so a reduction
(``sol.u.mean(axis=-1).compute()``) runs on the workers and only its value comes back.

What a local solve does after its run, sample by sample, runs on the workers too, chunk by
chunk (``LazyRun.per_chunk``): a sensitivity's terminal-event correction
(``event_correction_kernel``) and a pure recording's event location
(``events.locate_recorded``), each a kernel built once on the client and sent as its IR, each
chunk's ``p`` and ``t_end`` made again from its blocks by the same code. So every number is the
local solve's, bit for bit.

Why dask arrays out for dask arrays in (rather than a ``gather=`` switch): a ``Solution``'s
arrays are on the device of ``u0`` (NumPy for NumPy, CuPy for CuPy), and a dask ``u0`` says its
numbers live on the cluster, so the results do too, as every ``dask.array`` function does.
``.compute()`` (or ``dask.compute(sol.u, sol.t)``) gathers them; ``.to_zarr`` writes them from
the workers. A worker that dies has its chunk's blocks made again from the graph, and
``checkpoint=`` keeps finished chunks for a rerun, both as ``run_on_cluster`` does.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial

import numpy as np

import hawk
from hawk.ir import Role

from ..runner import simulate
from . import adjoint as adjoints
from . import arguments, ensemble, events, model_args
from .dask_inputs import PER_SAMPLE_NUMBERS, LazyInputs

__all__ = ["ChunkRecipe", "LazyRun", "chunk_arrays", "chunk_bounds", "chunk_layout", "chunk_p",
           "chunk_times", "sample_blocks", "run"]

#: the roles bound to one value shared by every sample (sent whole, never cut)
_WHOLE = (Role.PARAM, Role.TABLE)


@dataclass(frozen=True)
class ChunkRecipe:
    """What a worker needs besides a chunk's blocks to make its arrays (it travels to every
    worker, kernels as their IR).

    Attributes:
        layout: the arrays' shared numbers (``ensemble.Layout``).
        numbers: the per-sample arguments given as numbers, by argument name.
        prepare: the first-step kernel (None for the fixed-step methods).
        memory: ``(kernel, w)`` starting the carried event memory ``c`` (a pure recording:
            ``events.memory_kernel``), or None.
        tables: the tables the kernels read.
        shared_p: whether ``p`` is bound as one value for every sample; then ``p`` is that
            value as ``solve`` bound it.
        p: else ``p`` as given when it does not come in blocks (a sequence of numbers), or
            None.
        args: ``args`` as given, its per-sample arguments None (they come in blocks), or None;
            ``args_per_sample`` which of them are per sample.
        per_sample: the names of the main kernel's per-sample arrays (what ``chunk_arrays``
            returns).
        adjoint_steps: with ``adjoint=True``, the accepted steps each sample records (its
            chunk's rows made beside the arrays: ``adjoint.scratch``); else None.
        least_steps: with it, whether the samples must be able to reach their end in those
            rows (no terminal event): ``adjoint.check_least_steps`` before the run.
    """

    layout: ensemble.Layout
    numbers: dict
    prepare: hawk.Kernel | None
    memory: tuple | None
    tables: dict
    shared_p: bool
    p: object
    args: tuple | None
    args_per_sample: tuple[bool, ...] | None
    per_sample: tuple[str, ...]
    adjoint_steps: int | None = None
    least_steps: bool = False


def chunk_times(recipe: ChunkRecipe, m: int, blocks: dict) -> tuple:
    """A chunk's ``t`` and ``t_end`` ``(m,)`` in the integration's variable (negated in
    backward time), each sample's checked as a local solve checks it."""
    layout = recipe.layout
    t, t_end = (_each(recipe, name, m, blocks) for name in ("t_span[0]", "t_span[1]"))
    if not bool(((t_end < t) if layout.backward else (t_end > t)).all()):
        raise ValueError("t_span: t_end must differ from t0 on the same side for every sample "
                         "(all forward in time, t_end > t0, or all backward, t_end < t0)")
    return (-t, -t_end) if layout.backward else (t, t_end)


def chunk_p(recipe: ChunkRecipe, m: int, blocks: dict):
    """A chunk's ``p`` as the main kernel binds it, made as ``solve`` makes it for the whole
    ensemble (``arguments.params``, ``model_args.pack``)."""
    dtype = recipe.layout.dtype
    if recipe.shared_p:
        return recipe.p
    if recipe.args is not None:
        given = tuple(np.asarray(blocks[f"args_{i}"]) if per_sample else value
                      for i, (value, per_sample) in enumerate(zip(
                          recipe.args, recipe.args_per_sample, strict=True)))
        return model_args.pack(given, np, m, dtype,
                               per_sample_args=recipe.args_per_sample)[0]
    given = np.asarray(blocks["p"]) if "p" in blocks else recipe.p
    return arguments.params(given, np, m, dtype)[0]


def chunk_arrays(recipe: ChunkRecipe, lo: int, hi: int, **blocks) -> dict:
    """Samples ``lo`` to ``hi - 1``'s arrays for the solve's main kernel, from their
    ``blocks`` of the dask inputs, made by the local solve's code (``ensemble``) and
    first-stepped: run on a Dask worker (``run_on_cluster``'s ``init``)."""
    layout, m = recipe.layout, hi - lo
    try:  # each sample's values checked as a local solve checks them
        t, t_end = chunk_times(recipe, m, blocks)
        p = chunk_p(recipe, m, blocks)
        if layout.adaptive:
            numbers_of = dict(rtol=_each(recipe, "rtol", m, blocks, positive=True),
                              atol=_each(recipe, "atol", m, blocks, positive=True),
                              max_step=_each(recipe, "max_step", m, blocks, positive=True,
                                             infinite=True))
        else:
            numbers_of = dict(dt=_each(recipe, "dt", m, blocks, positive=True))
        if recipe.least_steps:  # as a local adjoint solve checks before its run
            adjoints.check_least_steps(
                recipe.adjoint_steps, np, t, t_end, numbers_of["max_step"],
                layout.save_count - ensemble.first_saves(chunk_layout(layout, lo, hi), np, t)
                if layout.saveat else None)
    except ValueError as error:  # say where: "sample k" counts within this chunk
        raise ValueError(f"{error} (in the chunk of samples {lo} to {hi - 1}, its samples "
                         f"counted from 0)") from None
    u = ensemble.start_state(layout, np.asarray(blocks["u0"]), np, m)
    arrays = ensemble.make(chunk_layout(layout, lo, hi), np, m, u0=u, p=p, t=t, t_end=t_end,
                           **numbers_of)
    if recipe.memory is not None:
        arrays["c"] = events.memory_from(recipe.memory, np, p, arrays["u"], t, recipe.tables)
    if recipe.adjoint_steps is not None:  # the rows each accepted step is recorded into
        arrays.update(adjoints.scratch(np, recipe.adjoint_steps, arrays["u"].shape,
                                       layout.dtype))
    if recipe.prepare is not None:
        simulate(recipe.prepare, max_steps=1, **ensemble.first_step_bindings(arrays, np, m),
                 **recipe.tables)
    return {name: arrays[name] for name in recipe.per_sample}


def chunk_layout(layout: ensemble.Layout, lo: int, hi: int) -> ensemble.Layout:
    """``layout`` for samples ``lo`` to ``hi - 1``: ``saveat`` times per sample ``(T, n)``
    cut to their columns (each sample's first recorded time is found in its own; the kernel
    is still bound to the whole table, which it reads by the global sample index)."""
    listed = layout.save_every
    if isinstance(listed, np.ndarray) and listed.ndim == 2:
        return replace(layout, save_every=listed[:, lo:hi])
    return layout


def _each(recipe: ChunkRecipe, name: str, m: int, blocks: dict, **checks):
    """Argument ``name``'s ``(m,)`` values: its block, or the number given for every sample."""
    key = PER_SAMPLE_NUMBERS[name]
    value = np.asarray(blocks[key]) if key in blocks else recipe.numbers[name]
    return arguments.per_sample(name, value, np, m, recipe.layout.dtype, **checks)


@dataclass
class LazyRun:
    """A dask-input solve's integration, done: ``arrays`` the main kernel's written arrays as
    dask arrays held on the workers, ``report`` the ``DistributedReport``, and what
    ``per_chunk`` needs to run more on each chunk there."""

    arrays: dict
    report: object
    recipe: ChunkRecipe
    lazy: LazyInputs

    def per_chunk(self, function, results: dict, outputs: list, inputs=None) -> list:
        """``function(recipe, m, results, blocks)`` run on each chunk's blocks of ``results``
        (the run's dask arrays) and of the dask inputs (not ``u0``; only those named in
        ``inputs`` where given), on the workers; it returns one array per entry of
        ``outputs`` (``(lead, dtype)``: its shape before the sample axis), each given back as
        one dask array over the chunks."""
        from dask import array as da
        from dask import delayed

        sizes = self.lazy.chunks
        given = {name: value for name, value in self.lazy.blocks.items()
                 if name != "u0" and (inputs is None or name in inputs)}
        results = {name: sample_blocks(value, sizes) for name, value in results.items()}
        given = {name: sample_blocks(value, sizes) for name, value in given.items()}
        parts = [[] for _ in outputs]
        for k, (lo, hi) in enumerate(chunk_bounds(sizes)):
            made = delayed(_on_chunk, pure=True, nout=len(outputs))(
                function, self.recipe, hi - lo,
                {name: blocks[k] for name, blocks in results.items()},
                {name: blocks[k] for name, blocks in given.items()})
            for j, (lead, dtype) in enumerate(outputs):
                parts[j].append(da.from_delayed(made[j], (*lead, hi - lo), dtype))
        return [da.concatenate(chunks, axis=-1) for chunks in parts]


def chunk_bounds(sizes) -> list[tuple[int, int]]:
    """Each chunk's ``(lo, hi)``: samples ``lo`` to ``hi - 1``, for chunks of ``sizes``."""
    edges = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64).tolist()
    return list(zip(edges[:-1], edges[1:], strict=True))


def sample_blocks(value, sizes) -> list:
    """A dask array's blocks along its last axis (the samples), cut as ``sizes`` (its other
    axes whole), as one ``Delayed`` each: a task given one runs where that block is, and
    nothing is concatenated on the way (a slice ``value[..., lo:hi]`` passed to ``delayed``
    would be made whole by a task of its own, anywhere, moving the block to it)."""
    whole = {axis: -1 for axis in range(value.ndim - 1)}
    value = value.rechunk({**whole, value.ndim - 1: tuple(sizes)})
    return list(value.to_delayed(optimize_graph=False).reshape(-1))


def _on_chunk(function, recipe, m, results, blocks):
    return tuple(function(recipe, m, results, blocks))


def run(lazy: LazyInputs, layout: ensemble.Layout, plan, prepare, tables: dict, bound_p, *,
        memory, max_steps: int, seed, progress: bool, checkpoint, adjoint_steps=None,
        least_steps: bool = False) -> LazyRun:
    """Integrate the ensemble on the workers; ``bound_p`` is ``p`` as ``solve`` binds it (for
    the first samples only, if per sample), ``memory`` the carried event memory's
    ``(kernel, w)`` or None; with ``adjoint_steps`` (``plan`` the recording kernel) each chunk
    records its accepted steps there (``ChunkRecipe``)."""
    from ..distributed import run_on_cluster

    m = lazy.first["u0"].shape[-1]
    ones = np.ones(m)
    stand_in = ensemble.make(  # the first samples, to tell per-sample arrays from shared ones
        chunk_layout(layout, 0, m), np, m,
        u0=ensemble.start_state(layout, lazy.first["u0"], np, m), p=bound_p, t=np.zeros(m),
        t_end=ones, rtol=ones, atol=ones, max_step=ones, dt=ones)
    if memory is not None:
        stand_in["c"] = np.empty((1 + memory[1], m), dtype=layout.dtype)
    if adjoint_steps is not None:
        stand_in.update(adjoints.scratch(np, adjoint_steps, stand_in["u"].shape, layout.dtype))
    roles = {p.name: p.role for p in plan.kernel.params}
    stand_in = {name: value for name, value in stand_in.items() if name in roles}
    per_sample = tuple(name for name, value in stand_in.items()
                       if isinstance(value, np.ndarray) and roles[name] not in _WHOLE)
    shared = {name: value for name, value in stand_in.items() if name not in per_sample}
    shared["save_every"] = layout.save_every  # saveat times per sample: the whole table
    shared_p = roles["p"] in _WHOLE
    recipe = ChunkRecipe(
        layout=layout, numbers=lazy.numbers, prepare=prepare, memory=memory, tables=tables,
        shared_p=shared_p, p=bound_p if shared_p else lazy.p,
        args=None if lazy.args is None else tuple(
            None if per else value for value, per in zip(lazy.args, lazy.args_per_sample,
                                                         strict=True)),
        args_per_sample=lazy.args_per_sample, per_sample=per_sample,
        adjoint_steps=adjoint_steps, least_steps=least_steps)
    result = run_on_cluster(plan, lazy.client, max_steps=max_steps, chunks=lazy.chunks,
                            init=partial(chunk_arrays, recipe), init_inputs=lazy.blocks,
                            seed=seed, progress=progress, checkpoint=checkpoint, **shared,
                            **tables)
    return LazyRun(arrays=dict(result.arrays), report=result.report, recipe=recipe, lazy=lazy)


def correct_event_time(kernel, columns: int, recipe: ChunkRecipe, m: int, results: dict,
                       blocks: dict) -> tuple:
    """A chunk's sensitivity moved with its terminal event's time, as ``solve`` corrects the
    whole ensemble's: ``(big, dt)`` (``per_chunk``'s function, with ``kernel`` the
    ``event_correction_kernel``)."""
    big = np.array(results["u"], copy=True, order="C")
    moved = np.empty((columns, m) if columns > 1 else m, dtype=recipe.layout.dtype)
    simulate(kernel, max_steps=1, p=chunk_p(recipe, m, blocks),
             t=np.ascontiguousarray(results["t"]),
             status=np.ascontiguousarray(results["status"]), big=big, dt=moved,
             terminated=np.zeros(m, dtype=bool), **recipe.tables)
    return big, moved


def locate_recorded(kernel, per_sample: bool, lead: tuple, one_component: bool,
                    recipe: ChunkRecipe, m: int, results: dict, blocks: dict) -> tuple:
    """A chunk's pure recording located, as ``solve`` locates the whole ensemble's:
    ``(t_events, u_events, which_events)`` (``per_chunk``'s function)."""
    which = np.array(results["which_events"], copy=True)
    _, t_end = chunk_times(recipe, m, blocks)
    located = events.locate_recorded(kernel, np, chunk_p(recipe, m, blocks), per_sample,
                                     np.ascontiguousarray(results["t_events"]),
                                     np.ascontiguousarray(results["u_events"]), which,
                                     (*lead, m), recipe.tables, one_component, t_end)
    return (*located, which)
