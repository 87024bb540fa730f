"""``adjoint=True`` with dask inputs: the recorded steps kept on the workers, ``vjp`` run there.

A dask-input solve with ``adjoint=True`` runs the recording kernel chunk by chunk as
``eagle.ode.dask_chunks`` runs the plain one: each chunk's accepted steps (``steps_u``,
``steps_t``, ``steps_h``) are written on its worker and stay there, behind the ``Solution``'s
dask arrays; nothing of them comes to the client. ``vjp`` then runs each chunk's backward pass
(``adjoint.run_backward``, the local code) as one task beside its recording: Dask places a task
with its largest inputs, the recorded steps, so only the chunk's cotangents travel to it (a
dask ``du``/``dsaved``'s blocks made on the workers, or a NumPy one's pieces scattered from the
client straight to a worker).

What is per sample (the cotangents of ``u0``, of a per-sample ``p`` and of the per-sample
arguments of ``args``) comes back as dask arrays over those tasks. What is shared by every
sample (a shared ``p``, the shared arguments, the tables' values) is summed over the samples
left to right, as the local ``vjp`` sums it (``np.cumsum(..., axis=-1)[..., -1]``: each total
is the previous one plus the next sample's share): chunk ``k``'s small task takes chunk
``k - 1``'s running totals (``P`` numbers) and adds its samples' shares to them one by one, so
the sums are the local ones bit for bit, and only ``P`` numbers per chunk move between workers.

The gradients are dask arrays, persisted on the workers when ``vjp`` returns (the backward pass
runs once, whichever of them is computed first); ``.compute()`` gathers one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import numpy as np

from . import adjoint as adjoints
from . import arguments as args
from . import ensemble
from .adjoint import Gradients, Record
from .dask_chunks import (
    LazyRun,
    chunk_bounds,
    chunk_layout,
    chunk_p,
    chunk_times,
    sample_blocks,
)
from .dask_inputs import LazyInputs, is_dask

__all__ = ["first_saves", "check_budget", "vjp"]

#: the recording kernel's written arrays a chunk's backward pass reads
RECORDED = ("steps_u", "steps_t", "steps_h", "t", "saves", "status", "accepted", "theta_end")


def first_saves(lazy: LazyInputs, layout: ensemble.Layout):
    """Each sample's first recorded ``saveat`` time's index as a dask array ``(n,)`` made on
    the workers from the chunk's ``t0`` (what a local adjoint solve copies of ``saves`` before
    its run)."""
    from dask import array as da
    from dask import delayed

    parts = []
    starts = sample_blocks(lazy.blocks["t0"], lazy.chunks) if "t0" in lazy.blocks else None
    for k, (lo, hi) in enumerate(chunk_bounds(lazy.chunks)):
        t0 = lazy.numbers["t_span[0]"] if starts is None else starts[k]
        made = delayed(_first_saves, pure=True)(chunk_layout(layout, lo, hi), t0, hi - lo)
        parts.append(da.from_delayed(made, (hi - lo,), np.int64))
    return da.concatenate(parts)


def _first_saves(layout: ensemble.Layout, t0, m: int):
    t = args.per_sample("t_span[0]", np.asarray(t0) if np.ndim(t0) else t0, np, m,
                        layout.dtype)
    return ensemble.first_saves(layout, np, -t if layout.backward else t)


def check_budget(run: LazyRun, steps: int) -> None:
    """``adjoint.check_budget`` for a dask solve: the samples that used every row before they
    were done, found on the workers chunk by chunk; only their count, the first's index and
    how far the shortest-reaching went come to the client."""
    import dask

    arrays = run.arrays
    short, covered = run.per_chunk(
        partial(_short_of_rows, steps),
        {name: arrays[name] for name in ("status", "accepted", "t", "steps_t")},
        [((), bool), ((), run.recipe.layout.dtype)], inputs=("t0", "t_end"))
    count, first, least = dask.compute(short.sum(), short.argmax(),
                                       covered.min() if covered.size else np.inf)
    states = arrays["u"].shape[0] if arrays["u"].ndim == 2 else 1
    adjoints.refuse_budget(steps, int(count), int(short.shape[0]), int(first), float(least),
                           (states + 2) * np.dtype(arrays["u"].dtype).itemsize)


def _short_of_rows(steps, recipe, m, results, blocks):
    """A chunk's samples still running with every row used, and the part of its span each
    covered (``inf`` for the others)."""
    from hawk import ode as hawk_ode

    short = (np.asarray(results["status"]) == hawk_ode.STATUS_RUNNING) & \
        (np.asarray(results["accepted"]) >= steps)
    _, t_end = chunk_times(recipe, m, blocks)
    start = np.asarray(results["steps_t"])[0]
    covered = np.where(short, (np.asarray(results["t"]) - start) / (t_end - start), np.inf)
    return short, covered


@dataclass(frozen=True)
class _Shared:
    """What of a chunk's per-sample cotangents is summed over the samples, in the order the
    local ``vjp`` sums it: every row of ``mu`` flattened ``(width, m)`` (``whole_p``: a shared
    ``p``), or the ``rows`` of the shared arguments of ``args``; then, with ``tables``, every
    table element's."""

    whole_p: bool
    rows: tuple
    tables: bool

    @property
    def any(self) -> bool:
        return self.whole_p or bool(self.rows) or self.tables


def _shared_rows(record: Record) -> _Shared:
    rows = ()
    if record.arguments is not None:
        (positions, _, _), per_sample = record.arguments
        rows = tuple(row for (offset, shape), samples in zip(positions, per_sample,
                                                                strict=True)
                     if not samples for row in range(offset, offset + math.prod(shape)))
    return _Shared(whole_p=record.shared and record.arguments is None, rows=rows,
                   tables=record.table_sizes is not None)


def _cotangent_pieces(name: str, value, expected: tuple, run: LazyRun) -> list:
    """``value`` (``du`` or ``dsaved``) as one piece per chunk (reshaped as the kernel binds
    it on the worker): a dask one's blocks, a NumPy one's slices scattered from the client
    straight to the worker that ran the chunk (where its recorded steps are, if it is still
    there); refused naming ``name`` unless it is real numbers shaped ``expected`` (a dask one
    chunked along the samples as the solve was)."""
    sizes, client = run.lazy.chunks, run.lazy.client
    args.numeric(name, value)
    what = "Solution.u" if name == "du" else "Solution.saved"
    shape = tuple(getattr(value, "shape", np.shape(value)))
    if shape != expected:
        raise ValueError(f"{name} must be shaped as {what}, {expected}, got {shape}")
    bounds = chunk_bounds(sizes)
    if is_dask(value):
        if tuple(value.chunks[-1]) != tuple(sizes):
            raise ValueError(f"{name} as a dask array must be chunked along its last axis as "
                             f"the solve's samples, {tuple(sizes)}, got "
                             f"{tuple(value.chunks[-1])} ({name}.rechunk({{-1: "
                             f"{tuple(sizes)}}}))")
        return sample_blocks(value, sizes)
    host = np.asarray(value)
    alive = set(client.nthreads())
    ran_on = {chunk.index: chunk.worker for chunk in run.report.chunks}
    pieces = []
    for k, (lo, hi) in enumerate(bounds):
        where = ran_on.get(k)
        (piece,) = client.scatter([np.ascontiguousarray(host[..., lo:hi])], direct=True,
                                  hash=False, workers=[where] if where in alive else None)
        pieces.append(piece)
    return pieces


def vjp(solution, du=None, dsaved=None) -> Gradients:
    """``Solution.vjp`` of a dask-input solve: each chunk's backward pass on the workers, the
    gradients dask arrays (see the module docstring)."""
    from dask import array as da
    from dask import delayed

    adjoints.check_request(solution, du, dsaved)
    record = solution.adjoint
    run: LazyRun = record.cluster
    sizes, client = run.lazy.chunks, run.lazy.client
    arrays = solution.arrays
    u = arrays["u"]
    dtype = u.dtype
    du_pieces = None if du is None else _cotangent_pieces(
        "du", du, tuple(solution.u.shape), run)
    dsaved_pieces = None if dsaved is None else _cotangent_pieces(
        "dsaved", dsaved, tuple(solution.saved.shape), run)
    back = adjoints.backward_pass(record, dsaved is not None)
    travelling = record.travelling()
    shared = _shared_rows(record)
    p_inputs = {name: value for name, value in run.lazy.blocks.items()
                if name == "p" or name.startswith("args_")}
    recorded = {name: sample_blocks(arrays[name], sizes) for name in RECORDED}
    p_blocks = {name: sample_blocks(value, sizes) for name, value in p_inputs.items()}
    first_save = None if record.first_save is None else sample_blocks(record.first_save, sizes)
    lams, mus, total = [], [], None
    for k, (lo, hi) in enumerate(chunk_bounds(sizes)):
        m = hi - lo
        made = delayed(_backward_chunk, pure=True, nout=3)(
            back, travelling, run.recipe, shared, lo, hi,
            {name: blocks[k] for name, blocks in recorded.items()},
            {name: blocks[k] for name, blocks in p_blocks.items()},
            None if first_save is None else first_save[k],
            None if du_pieces is None else du_pieces[k],
            None if dsaved_pieces is None else dsaved_pieces[k])
        lams.append(da.from_delayed(made[0], (*u.shape[:-1], m), dtype))
        mus.append(made[1])
        if shared.any:
            total = delayed(_running_total, pure=True)(total, made[2])
    u0_bar = da.concatenate(lams, axis=-1)
    if record.column:
        u0_bar = u0_bar[None]
    summed = None
    if total is not None:
        width = _shared_width(record, shared)
        summed = da.from_delayed(total, (width,), dtype)
    per_sample = None
    if not record.shared or record.arguments is not None:
        lead = _per_sample_lead(record)
        per_sample = da.concatenate(
            [da.from_delayed(mu, (*lead, hi - lo), dtype)
             for mu, (lo, hi) in zip(mus, chunk_bounds(sizes), strict=True)], axis=-1)
    gradients = _assembled(record, u0_bar, per_sample, summed)
    return _persisted(client, gradients)


def _shared_width(record: Record, shared: _Shared) -> int:
    width = adjoints.gradient_type(record.params).width if shared.whole_p else len(shared.rows)
    if shared.tables:
        width += sum(record.table_sizes)
    return width


def _per_sample_lead(record: Record) -> tuple:
    """The per-sample ``mu``'s shape before the samples: the packed ``p``'s ``(width,)`` for
    ``args`` (cut per argument on the client), else as the local ``vjp`` makes it."""
    gradient = adjoints.gradient_type(record.params)
    if record.arguments is not None:
        return (record.arguments[0][2],)
    if gradient.width == 1:
        return ()
    columns = gradient.columns
    return (gradient.width // columns, columns) if columns else (gradient.width,)


def _backward_chunk(back, record: Record, recipe, shared: _Shared, lo: int, hi: int,
                    recorded: dict, blocks: dict, first_save, du, dsaved) -> tuple:
    """Samples ``lo`` to ``hi - 1``'s backward pass, on the worker that holds their recorded
    steps: ``(lam, mu, shares)``, the cotangents of ``u0`` and of the bound ``p`` per sample
    (``mu`` flat ``(width, m)`` for ``args``; None for a shared ``p``) and the per-sample
    shares of what is summed over the samples, ``(P, m)`` (None without)."""
    m = hi - lo
    dtype = recipe.layout.dtype
    arrays = {name: np.asarray(value) for name, value in recorded.items()}
    shape = arrays["steps_u"].shape[1:]  # the state's as the kernel binds it
    arrays.update(p=chunk_p(recipe, m, blocks), save_first=recipe.layout.save_first,
                  save_every=chunk_layout(recipe.layout, lo, hi).save_every,  # its columns
                  u=np.empty(shape, dtype=dtype))
    lam = np.zeros(shape, dtype=dtype) if du is None else \
        np.array(np.asarray(du), dtype=dtype, copy=True, order="C").reshape(shape)
    rows = np.zeros((1, *shape), dtype=dtype) if dsaved is None else \
        np.array(np.asarray(dsaved), dtype=dtype, copy=True, order="C").reshape(-1, *shape)
    lam, mu, mu_tables = adjoints.run_backward(
        back, record, arrays, lam, rows, None if first_save is None else np.asarray(first_save),
        np)
    flat = mu.reshape(-1, m)
    parts = []
    if shared.whole_p:
        parts.append(flat)
    elif shared.rows:
        parts.append(flat[list(shared.rows)])
    if shared.tables:
        parts.append(mu_tables.reshape(-1, m))
    shares = np.concatenate(parts) if parts else None
    if record.arguments is not None:
        return lam, flat, shares
    return lam, None if record.shared else mu, shares


def _running_total(previous, shares):
    """``previous`` (the running totals after the chunks before, or None for the first) plus
    this chunk's ``shares`` ``(P, m)`` added one sample at a time, left to right: the local
    ``np.cumsum(..., axis=-1)[..., -1]``'s additions in the same order."""
    if previous is None:
        return np.cumsum(shares, axis=-1)[:, -1]
    return np.cumsum(np.concatenate([previous[:, None], shares], axis=1), axis=-1)[:, -1]


def _assembled(record: Record, u0_bar, per_sample, summed) -> Gradients:
    """``Gradients`` shaped as the local ``vjp``'s: ``summed`` (the shared totals, in
    ``_shared_rows``' order) cut into the shared ``p`` or arguments and the tables."""
    offset = 0
    tables = None
    gradient_p, gradient_args = None, None
    if record.arguments is not None:
        (positions, _, _), per_sample_flags = record.arguments
        out = []
        for (start, shape), samples in zip(positions, per_sample_flags, strict=True):
            size = math.prod(shape)
            if samples:
                out.append(per_sample[start:start + size].reshape(*shape,
                                                                  per_sample.shape[-1]))
            else:
                out.append(summed[offset:offset + size].reshape(shape))
                offset += size
        gradient_args = tuple(out)
    elif record.shared:
        width = adjoints.gradient_type(record.params).width
        lead = _per_sample_lead(record)
        gradient_p = summed[:width].reshape(lead)
        offset = width
    else:
        gradient_p = per_sample
    if record.table_sizes is not None:
        tables = adjoints.per_table(summed[offset:], record)
    return Gradients(p=gradient_p, u0=u0_bar, args=gradient_args, tables=tables)


def _persisted(client, gradients: Gradients) -> Gradients:
    """``gradients``' dask arrays persisted together on the workers (one backward pass)."""
    fields = [(name, value) for name, value in gradients._asdict().items() if value is not None]
    flat = []
    for _, value in fields:
        flat.extend(value if isinstance(value, tuple) else [value])
    persisted = iter(client.persist(flat))
    out = {}
    for name, value in fields:
        out[name] = tuple(next(persisted) for _ in value) if isinstance(value, tuple) \
            else next(persisted)
    return gradients._replace(**out)
