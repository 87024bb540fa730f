"""``run_on_cluster``: an ensemble split along its samples over a Dask cluster's workers.

The client sends descriptions, not data. Each chunk is one task whose inputs are made where it
runs: by ``init(lo, hi)`` on the worker (``init(lo, hi, **blocks)`` from the chunk's blocks of
``init_inputs``), or as blocks of dask arrays computed on the workers
(the client never allocates a full-size array); only NumPy inputs (fine for ensembles that fit
on the client) ride in the tasks. The whole run is one ``client.compute`` call. The results stay
on the workers, behind dask arrays (``ClusterResult.arrays``), until the user gathers them,
writes them to Zarr from the workers (``ClusterResult.to_zarr``) or keeps only a per-chunk
reduction made on the workers (``reduce=``, ``keep=False``). Read-only inputs never come back.
A ``Table`` is never cut along the samples: like a ``Param`` it rides whole in every chunk's
task (a NumPy array; a dask one is refused: ``.compute()`` it first).
What does come back is a report per chunk and, with ``reduce=``, the reductions: bytes that do
not grow with the samples.

While the run goes on the client watches it: a tqdm bar of samples done across the cluster
(``progress=True``; the workers log their live counts as Dask events), the first failing chunk
raised at once with the chunk and its worker named (the rest cancelled), ``timeout=``, and a
clear error when no worker is left. With ``checkpoint=folder`` every finished chunk is written
there by its worker, and a rerun skips the chunks already there (``_checkpoint``).

Dask does the scheduling and the retries: a worker that dies mid-chunk has its chunk run again
elsewhere from the same description, so the result does not change. Before anything is sent,
the bindings are checked exactly as ``eagle.until_done`` checks them (on one-sample stand-ins),
every worker's environment (versions, the IR format's and the compiler source's digests) is
compared with the client's, and the scheduler and every worker unpickle the run's description
once, so that one that cannot is named before anything is submitted (``_environment``).
"""

from __future__ import annotations

import numbers
import os
import time
import uuid
from collections.abc import Callable

import numpy as np

import hawk
from hawk.ir import Role
from hawk.kernel import ProgramKernel

from ..arrays import is_array_like
from ..backend import HOST
from ..bindings import bind, check_max_steps, check_steps_per_launch
from ..errors import BindingTypeError, BindingValueError, EagleError
from ..plan import Plan, deploy
from ..progress import progress_bar
from . import _checkpoint
from ._chunk import ChunkSpec, SealedSpec, run_chunk
from ._devices import host_inputs
from ._environment import (
    check_readable,
    check_scheduler,
    check_workers,
    environment,
    scheduler_failure,
)
from ._reports import DistributedReport
from ._scattered import Scattered

__all__ = ["run_on_cluster", "ClusterResult", "NoWorkersLeft"]

POLL_S = 0.2  # how often the client looks at the run while it waits
RESULT_WAIT_S = 5.0  # the longest the client waits for a finished chunk's summary to arrive
WORKERS_EVERY_S = 1.0  # how often it asks the scheduler whether any worker is left


class NoWorkersLeft(EagleError, RuntimeError):
    """Every Dask worker is gone and none came back within ``no_workers_timeout``."""


class ClusterResult:
    """What ``run_on_cluster`` returns.

    Made by ``run_on_cluster``, with the Dask ``client`` it ran on and the ``futures`` of the
    chunks' results (held so the workers keep them).

    Attributes:
        arrays: the final state of every written parameter (``Mutable``, ``Out``,
            ``Series``, ``Terminated``) as a dask array whose blocks are the chunks' results,
            held on the workers (empty with ``keep=False``). Computing one brings it to the
            client.
        reduced: the per-chunk values of ``reduce=`` in sample order (None without it).
        report: the merged ``DistributedReport``.
        device: the GPU the per-sample inputs were on (``gather`` returns arrays there), or
            None (host inputs).

    The chunks' arrays stay in the workers' memory while this object (or an array made from
    it) lives; ``release()`` frees them at once.
    """

    def __init__(self, client, arrays: dict, reduced: list | None, report: DistributedReport,
                 futures: list, device: str | None = None):
        self.client = client
        self.device = device
        self.arrays = arrays
        self.reduced = reduced
        self.report = report
        self._futures = futures

    def gather(self, *names: str) -> dict[str, np.ndarray]:
        """Bring ``names`` (default: every array) to the client as NumPy arrays, or as arrays
        on the GPU the inputs were on (``device``: CuPy)."""
        names = names or tuple(self.arrays)
        self._require(names)
        values = self.client.compute([self.arrays[name] for name in names], sync=True)
        if self.device is not None:
            from .. import backend as backends

            backend = backends.backend_for(self.device)
            values = [backend.from_host(value, self.device) for value in values]
        return dict(zip(names, values, strict=True))

    def gather_into(self, arrays: dict) -> None:
        """Write each chunk's result into ``arrays`` (full-size NumPy arrays by written
        parameter name, cut along their last axis as the run was), fetched from the worker
        that holds it straight to the client (not through the scheduler), one chunk at a time
        (the client holds the full arrays and one chunk's results at most)."""
        self._require(tuple(arrays))
        for future, chunk in zip(self._futures, self.report.chunks, strict=True):
            output = self.client.gather(future, direct=True)
            for name, target in arrays.items():
                target[..., chunk.start:chunk.stop] = output.arrays[name]

    def to_zarr(self, url, *names: str, overwrite: bool = False) -> str:
        """Write ``names`` (default: every array) to the Zarr store ``url``, one array per name
        (``url/<name>``), each chunk written by the worker that holds it; nothing passes
        through the client. ``url`` must be reachable from every worker (a shared file system
        or an object store). Returns ``url``. ``overwrite=True`` replaces arrays already
        there (passed to ``dask.array.to_zarr``; default False)."""
        from dask import array as da

        names = names or tuple(self.arrays)
        self._require(names)
        writes = [da.to_zarr(self.arrays[name], url, component=name, overwrite=overwrite,
                             compute=False) for name in names]
        self.client.compute(writes, sync=True)
        return str(url)

    def release(self) -> None:
        """Free the chunks' arrays on the workers (``arrays`` can no longer be computed)."""
        for future in self._futures:
            future.release()
        self._futures = []
        self.arrays = {}

    def _require(self, names) -> None:
        missing = [name for name in names if name not in self.arrays]
        if missing:
            why = ("the run kept no arrays (keep=False or release())" if not self.arrays else
                   f"the written parameters are {', '.join(self.arrays)}")
            raise KeyError(f"no result array {missing[0]!r}: {why}")

    def __repr__(self) -> str:
        return f"<eagle.distributed.ClusterResult {self.report}>"


def run_on_cluster(plan: Plan | hawk.Kernel, client, *, max_steps: int, chunks=None,
                   n_samples: int | None = None, init: Callable | None = None,
                   init_inputs: dict | None = None, steps_per_launch: int | None = None,
                   reduce: Callable | None = None,
                   keep: bool = True, checkpoint=None, progress: bool = False,
                   timeout: float | None = None, no_workers_timeout: float = 60.0,
                   workers=None, resources: dict | None = None, seed: int | None = None,
                   **bindings) -> ClusterResult:
    """Run an ensemble split along its samples over the Dask ``client``'s workers.

    Means::

        for lo, hi in chunks:                      # each on some worker, in parallel
            arrays = init(lo, hi, **init_inputs[lo:hi]) | bindings[lo:hi]
            eagle.until_done(plan, max_steps=max_steps, **arrays).run()
            keep arrays[written] there; reduced[chunk] = reduce(arrays[written], lo, hi)

    Args:
        plan: a ``Plan`` (its device and ``fmad`` go to the workers; no device: each worker's
            default, its GPU if it has one) or a hawk kernel. With GPU inputs a plan without a
            device runs every chunk on its worker's own GPU (``cuda``; ``_devices``).
        client: a ``distributed.Client``.
        max_steps, steps_per_launch: as for ``eagle.until_done``, per chunk.
        chunks: a number of chunks (of equal size, give or take one) or their sizes; default:
            the sample-axis chunking of the dask-array inputs.
        n_samples: the number of samples (needed when no per-sample array is bound).
        init: ``init(lo, hi) -> {name: array}`` making the per-sample inputs of samples ``lo``
            to ``hi - 1`` on the worker (arrays of shape ``(hi - lo,)`` or ``(3, hi - lo)``).
            It must be a pure function of ``(lo, hi)`` (and its inputs): a chunk is made again
            after a worker dies. It is called once here as ``init(0, 1)`` to check names and
            dtypes.
        init_inputs: arrays that ``init`` makes a chunk's inputs from (not the kernel's
            parameters), samples on the last axis: each chunk's block of each is passed to
            ``init`` as a keyword, ``init(lo, hi, **blocks)``; a dask array's blocks are
            computed on the workers, so its samples never reach the client (only its first
            sample does, for the ``init(0, 1, ...)`` check). How ``eagle.ode.solve`` makes a
            chunk's arrays from its blocks of a dask ``u0``.
        reduce: ``reduce(arrays, lo, hi) -> value`` run on the worker on each finished chunk's
            written arrays; the values come back in ``ClusterResult.reduced``.
        keep: keep the chunks' arrays on the workers (``ClusterResult.arrays``); with
            ``keep=False`` only reports and reductions remain.
        checkpoint: a folder every worker can see; each finished chunk is written there, and a
            rerun with the same folder and the same run skips it.
        progress: a tqdm bar of samples done across the cluster.
        timeout: seconds for the whole run, else ``TimeoutError`` (the rest is cancelled).
        no_workers_timeout: seconds with no worker connected before ``NoWorkersLeft``.
        workers, resources: where chunks may run (Dask's ``client.compute`` options): e.g.
            ``resources={"GPU": 1}`` to keep chunks on workers started with that resource.
        seed: the random streams' seed of a kernel that draws (as for ``eagle.until_done``).
            A draw depends on the sample's global index, so the results are the same bits
            however the samples are cut into chunks.
        **bindings: as for ``eagle.until_done``: per-sample arrays (NumPy, dask or GPU
            arrays such as CuPy, cut along the last axis; all on one device), numbers, and
            ``Param`` values. GPU inputs travel through the client's host memory and each
            chunk runs on its worker's GPU; ``gather`` returns GPU arrays (``_devices``).

    Bindings are checked before anything is sent, as ``eagle.until_done`` checks them; the
    user's arrays are never written. The first chunk that fails re-raises its own error, with
    notes naming the chunk, its samples and its worker.
    """
    run_start = time.perf_counter()
    try:
        import distributed  # noqa: F401
    except ImportError as exc:
        raise ImportError("eagle.distributed.run_on_cluster needs Dask's distributed "
                          "scheduler: pip install 'eagle-hawk[dask]'") from exc
    if isinstance(plan, hawk.Kernel):
        plan = deploy(plan)
    if not isinstance(plan, Plan):
        raise TypeError(f"run_on_cluster() takes a plan or a hawk kernel, got "
                        f"{type(plan).__name__}")
    max_steps = check_max_steps(max_steps)
    steps_per_launch = check_steps_per_launch(steps_per_launch)
    _check_options(init, reduce, keep, progress, timeout, no_workers_timeout)
    roles = {p.name: p.role for p in plan.kernel.params}
    plan, bindings, device = host_inputs(  # GPU inputs: each chunk on its worker's GPU
        plan, bindings, lambda name, value: roles.get(name) not in (None, *_WHOLE))
    init_inputs = _check_init_inputs(init, init_inputs)
    _check_tables(plan.kernel, bindings)
    n = _sample_count(plan.kernel, bindings, n_samples, init, init_inputs)
    probe = _probe(init, plan.kernel, bindings, _first_samples(client, init_inputs))
    bound = bind(plan.kernel, {**_standins(plan.kernel, bindings), **probe}, HOST,
                 caller="run_on_cluster", seed=seed)
    program = plan.kernel.specialize(bound.dtypes)
    params = {p.name: p for p in program.params}
    written = tuple(p.name for p in program.params if p.role.written)
    arrays_in = {k: v for k, v in bindings.items()  # a Table goes whole to every chunk
                 if params[k].role not in _WHOLE and _is_array(v)}
    uniforms = {k: v for k, v in bindings.items() if k not in arrays_in}
    bounds = _bounds(n, chunks if chunks is not None else _dask_chunks(arrays_in, n))
    folder = None if checkpoint is None else os.fspath(checkpoint)
    token = "" if folder is None else _checkpoint.fingerprint(
        program.digest(), sorted((k, v.value) for k, v in bound.dtypes.items()), max_steps,
        steps_per_launch, sorted(uniforms.items()), _input_tokens(arrays_in), _token_of(init),
        _input_tokens(init_inputs), bound.seed)

    expected = environment()
    check_scheduler(client)
    check_workers(client, expected)
    run_id = uuid.uuid4().hex[:10]
    spec = ChunkSpec(kernel=ProgramKernel(program), device=plan.device, fmad=plan.fmad,
                     max_steps=max_steps, steps_per_launch=steps_per_launch, uniforms=uniforms,
                     written=written, init=init, reduce=reduce, keep=keep, checkpoint=folder,
                     token=token, environment=expected,
                     progress_topic=f"eagle-progress-{run_id}" if progress else None,
                     seed=bound.seed)
    check_readable(client, spec)
    mains, summaries = _submit(client, spec, program.name, run_id, bounds, arrays_in,
                               init_inputs, folder, token, workers, resources)
    try:
        outputs = _watch(client, summaries, bounds, n, spec, timeout, no_workers_timeout,
                         folder)
    except BaseException:
        client.cancel(mains + summaries)
        raise
    reports = tuple(report for report, _ in outputs)
    done = sum(r.done for r in reports)
    steps = max((r.steps for r in reports), default=0)
    report = DistributedReport(n=n, done=done, truncated=done < n and steps >= max_steps,
                               wall_s=time.perf_counter() - run_start, chunks=reports)
    for future in summaries:
        future.release()
    if not keep:
        client.cancel(mains)
        mains = []
    arrays = _lazy_arrays(mains, bounds, written, params, bound) if keep else {}
    reduced = [value for _, value in outputs] if reduce is not None else None
    return ClusterResult(client, arrays, reduced, report, mains, device)


def _check_options(init, reduce, keep, progress, timeout, no_workers_timeout) -> None:
    if init is not None and not callable(init):
        raise TypeError(f"init must be a function init(lo, hi) -> dict of arrays, got "
                        f"{type(init).__name__}")
    if reduce is not None and not callable(reduce):
        raise TypeError(f"reduce must be a function reduce(arrays, lo, hi), got "
                        f"{type(reduce).__name__}")
    for name, value in (("keep", keep), ("progress", progress)):
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be True or False, got {value!r}")
    for name, value in (("timeout", timeout), ("no_workers_timeout", no_workers_timeout)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real)
                                  or not value > 0):
            raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")


#: the roles bound to one value that every chunk takes whole, never cut along the samples
_WHOLE = (Role.PARAM, Role.TABLE)


def _check_tables(kernel: hawk.Kernel, bindings: dict) -> None:
    """A table travels whole to every chunk, in the task: it must be a concrete array."""
    for p in kernel.params:
        if p.role is Role.TABLE and _is_dask(bindings.get(p.name)):
            raise BindingTypeError(f"{p.name!r} ({p.annotation}) is a dask array; a table is "
                                   f"sent whole to every chunk: pass {p.name}.compute()")


def _is_array(value) -> bool:
    return is_array_like(value) or _is_dask(value) or isinstance(value, Scattered)


def _is_dask(value) -> bool:
    return type(value).__module__.startswith("dask.array")


def _check_init_inputs(init, init_inputs) -> dict:
    if init_inputs is None:
        return {}
    if init is None:
        raise TypeError("init_inputs are init's inputs: pass init= too")
    if not isinstance(init_inputs, dict) or not all(_is_array(v) and getattr(v, "ndim", 0)
                                                    for v in init_inputs.values()):
        raise TypeError("init_inputs must be a dict of arrays (NumPy or dask, samples on the "
                        "last axis) by init's keyword")
    return dict(init_inputs)


def _first_samples(client, init_inputs: dict) -> dict:
    """Each of ``init_inputs``' first sample, here (a dask array's computed on the cluster)."""
    lazy = [name for name, value in init_inputs.items() if _is_dask(value)]
    computed = client.compute([init_inputs[name][..., :1] for name in lazy],
                              sync=True) if lazy else []
    firsts = {name: np.asarray(value[..., :1]) for name, value in init_inputs.items()}
    return {**firsts, **dict(zip(lazy, computed, strict=True))}


def _probe(init, kernel: hawk.Kernel, bindings: dict, first_inputs: dict) -> dict:
    """``init(0, 1)``'s arrays, checked: known, per-sample, not also bound, one sample long."""
    if init is None:
        return {}
    made = init(0, 1, **first_inputs)
    if not isinstance(made, dict):
        raise TypeError(f"init(lo, hi) must return a dict of arrays by parameter name; "
                        f"init(0, 1) returned {type(made).__name__}")
    params = {p.name: p for p in kernel.params}
    probe = {}
    for name, value in made.items():
        if name not in params:
            raise BindingTypeError(f"init(0, 1) made {name!r}, which is not a parameter of "
                                   f"{kernel.name} ({', '.join(params)})")
        if params[name].role in _WHOLE:
            raise BindingTypeError(f"init(0, 1) made {name!r}, a {params[name].annotation} "
                                   "(one value for every sample); pass it as a binding "
                                   "instead")
        if name in bindings:
            raise BindingTypeError(f"{name!r} is both bound and made by init; choose one")
        value = np.asarray(value)
        lead = _lead(params[name], value.shape)
        if value.shape != (*lead, 1):
            raise BindingValueError(f"init(0, 1) made {name!r} of shape {value.shape}; "
                                    f"init(lo, hi) must make shape "
                                    f"{(*lead, 'hi - lo')}".replace("'", ""))
        probe[name] = value
    return probe


def _sample_count(kernel: hawk.Kernel, bindings: dict, n, init, init_inputs: dict) -> int:
    """The samples, from the per-sample arrays' last axis, ``init_inputs``' and
    ``n_samples=`` (which must agree)."""
    params = {p.name: p for p in kernel.params}
    counts = {f"init_inputs[{name!r}]": int(value.shape[-1])
              for name, value in init_inputs.items()}
    for name, value in bindings.items():
        p = params.get(name)
        if p is None or p.role in _WHOLE or not _is_array(value):
            continue
        shape = tuple(value.shape)
        lead = _lead(p, shape)
        if len(shape) != len(lead) + 1 or shape[:-1] != lead:
            raise BindingValueError(f"{name!r} must have shape "
                                    f"{(*lead, 'n')}".replace("'", "") + f", got {shape}")
        counts[name] = shape[-1]
    if n is not None:
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            raise BindingValueError(f"n_samples must be a positive int (the number of "
                                    f"samples), got {n!r}")
        counts["n_samples="] = int(n)
    if len(set(counts.values())) > 1:
        raise BindingValueError("the per-sample arrays disagree on the number of samples: " +
                                ", ".join(f"{k} {v}" for k, v in counts.items()))
    if not counts:
        raise BindingValueError("no per-sample array is bound, so pass n_samples= (the "
                                "number of samples)" + (" for init to make" if init else ""))
    return next(iter(counts.values()))


def _lead(p, shape: tuple) -> tuple:
    """The axes before the sample axis that parameter ``p`` takes: ``(k,)`` for a vector,
    ``(r, c)`` for a matrix, a Series' rows (``T`` read from ``shape``) before those."""
    lead = p.dims
    if p.role is Role.SERIES:
        lead = (shape[0] if shape else 0, *lead)
    return lead


def _standins(kernel: hawk.Kernel, bindings: dict) -> dict:
    """The bindings with every per-sample array replaced by a one-sample array of its dtype,
    so that ``bind`` checks names, roles and dtypes without a full-size allocation."""
    params = {p.name: p for p in kernel.params}
    out = {}
    for name, value in bindings.items():
        p = params.get(name)
        if p is not None and p.role not in _WHOLE and _is_array(value) \
                and hasattr(value, "dtype"):
            out[name] = np.zeros((*tuple(value.shape)[:-1], 1), np.dtype(value.dtype))
        else:
            out[name] = value
    return out


def _bounds(n: int, chunks) -> list[tuple[int, int]]:
    if isinstance(chunks, bool) or not isinstance(chunks, int | tuple | list):
        raise TypeError(f"chunks must be a number of chunks (int) or a tuple of chunk sizes, "
                        f"got {chunks!r}")
    if isinstance(chunks, int):
        if not 1 <= chunks <= n:
            raise ValueError(f"chunks must be between 1 and the {n} samples, got {chunks}")
        edges = np.linspace(0, n, chunks + 1).round().astype(np.int64)
        return list(zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True))
    sizes = [int(c) for c in chunks]
    if not sizes or sum(sizes) != n or min(sizes) < 1:
        raise ValueError(f"chunk sizes {tuple(sizes)} must be positive and add up to the {n} "
                         "samples")
    edges = np.cumsum([0, *sizes])
    return list(zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True))


def _dask_chunks(arrays: dict, n: int):
    for value in arrays.values():
        if isinstance(value, Scattered):
            return value.sizes
        if _is_dask(value):
            return tuple(value.chunks[-1])
    raise TypeError("chunks= is needed (a number of chunks or their sizes) when no dask array "
                    "gives the chunking")


def _input_tokens(arrays: dict) -> list:
    return [(name, value.name if _is_dask(value) else value.token
             if isinstance(value, Scattered) else _checkpoint.fingerprint(value))
            for name, value in sorted(arrays.items())]


def _token_of(init) -> str | None:
    """``init`` as cloudpickle writes it: by module and name for a module-level function
    (stable across processes), by value (code, closure, defaults, a partial's arguments) for
    the rest."""
    if init is None:
        return None
    import cloudpickle

    try:
        return _checkpoint.fingerprint(cloudpickle.dumps(init))
    except Exception:  # a function that does not pickle could not reach the workers either
        return _checkpoint.fingerprint(getattr(init, "__module__", None),
                                       getattr(init, "__qualname__", repr(init)))


def _pieces(arrays: dict, bounds) -> list[dict]:
    """Per chunk, its slice of every per-sample input: dask arrays rechunked to the chunk
    bounds and cut into delayed blocks (made on the workers), NumPy arrays sliced here."""
    sizes = tuple(hi - lo for lo, hi in bounds)
    blocks = {}
    for name, value in arrays.items():
        if _is_dask(value):
            axes = {value.ndim - 1: sizes, **{axis: -1 for axis in range(value.ndim - 1)}}
            blocks[name] = value.rechunk(axes).to_delayed().reshape(-1)
    for name, value in arrays.items():
        if isinstance(value, Scattered):
            if value.sizes != sizes:
                raise ValueError(f"{name!r} was scattered in chunks of {value.sizes} samples; "
                                 f"the run's chunks are {sizes}")
            blocks[name] = value.futures
    out = []
    for index, (lo, hi) in enumerate(bounds):
        out.append({name: blocks[name][index] if name in blocks
                    else np.ascontiguousarray(value[..., lo:hi])
                    for name, value in arrays.items()})
    return out


def _summary(output):
    return output.report, output.reduced


def _submit(client, spec: ChunkSpec, name: str, run_id: str, bounds, arrays: dict,
            init_inputs: dict, folder, token: str, workers, resources):
    """One ``client.compute`` for the whole run: per chunk its task, and a tiny task taking
    its report and reduction (what the client waits on and gathers)."""
    from dask import delayed

    shared_spec = delayed(SealedSpec.seal(spec), name=f"eagle-spec-{name}-{run_id}")
    mains, summaries = [], []
    for index, ((lo, hi), pieces, made_from) in enumerate(zip(
            bounds, _pieces(arrays, bounds), _pieces(init_inputs, bounds), strict=True)):
        if folder is not None and _checkpoint.is_done(folder, lo, hi, token):
            # finished before: the worker reads it back, its inputs are not made
            pieces, made_from = {}, {}
        main = delayed(run_chunk, pure=False)(
            shared_spec, index, lo, hi, pieces, made_from,
            dask_key_name=f"eagle-chunk-{name}-{run_id}-{index}")
        mains.append(main)
        summaries.append(delayed(_summary, pure=False)(
            main, dask_key_name=f"eagle-report-{name}-{run_id}-{index}"))
    futures = client.compute(mains + summaries, workers=workers, resources=resources,
                             optimize_graph=False)
    return futures[:len(mains)], futures[len(mains):]


def _watch(client, futures: list, bounds, n: int, spec: ChunkSpec, timeout, no_workers_timeout,
           folder) -> list:
    """Wait for every chunk's summary, showing progress; fail fast, time out, notice when no
    worker is left. Returns the summaries in chunk order."""
    from distributed import wait

    index_of = {future.key: i for i, future in enumerate(futures)}
    results: dict[int, tuple] = {}
    running: dict[int, int] = {}  # samples done so far in chunks still running (events)
    bar = _bar(spec, n, len(bounds)) if spec.progress_topic else None
    if bar is not None:

        def on_event(event):  # on the client's event loop: a running chunk's samples done
            index, done = event[1]
            if index not in results:
                running[index] = done

        client.subscribe_topic(spec.progress_topic, on_event)
    start = time.monotonic()
    no_workers_since = None
    last_look = start
    pending = list(futures)
    try:
        while pending:
            try:
                finished, not_done = wait(pending, timeout=POLL_S, return_when="FIRST_COMPLETED")
                pending = list(not_done)
            except TimeoutError:
                finished = ()
            for future in finished:
                i = index_of[future.key]
                status = future.status
                if status in ("error", "cancelled"):
                    _raise_chunk_error(future, i, bounds[i], client)
                try:
                    if status != "finished":
                        raise TimeoutError
                    # a worker may die between the wait and this read, losing the summary:
                    # never block on it (Dask computes it again), wait for it like the rest
                    results[i] = future.result(timeout=RESULT_WAIT_S)
                    running.pop(i, None)
                except TimeoutError:
                    pending.append(future)
            if bar is not None:
                finished_samples = sum(hi - lo for i, (lo, hi) in enumerate(bounds)
                                       if i in results)
                bar.update(min(n, finished_samples + sum(list(running.values()))) - bar.n)
            if not pending:
                break
            now = time.monotonic()
            if timeout is not None and now - start > timeout:
                raise TimeoutError(
                    f"eagle.distributed.run_on_cluster: {len(pending)} of {len(bounds)} chunks "
                    f"not finished after timeout={timeout} s; "
                    + _resume_hint(folder, len(results)))
            if now - last_look < WORKERS_EVERY_S:
                continue
            last_look = now
            if client.nthreads():
                no_workers_since = None
            elif no_workers_since is None:
                no_workers_since = now
            elif now - no_workers_since > no_workers_timeout:
                raise NoWorkersLeft(
                    f"no Dask worker is connected to the scheduler at "
                    f"{client.scheduler.address} (none for {no_workers_timeout} s), with "
                    f"{len(pending)} of {len(bounds)} chunks not finished; start workers and "
                    "run again: " + _resume_hint(folder, len(results)))
    finally:
        if bar is not None:
            client.unsubscribe_topic(spec.progress_topic)
            bar.close()
    return [results[i] for i in range(len(bounds))]


def _bar(spec: ChunkSpec, n: int, chunks: int):
    return progress_bar("run_on_cluster(progress=True)", total=n, unit="samples",
                        unit_scale=True, desc=f"{spec.kernel.name} ({chunks} chunks)")


def _resume_hint(folder, finished: int) -> str:
    if folder is None:
        return "pass checkpoint=folder to keep finished chunks for a rerun"
    return (f"{finished} chunks finished here and every finished chunk is in {folder}; a rerun "
            "with the same checkpoint= skips them")


def _raise_chunk_error(future, index: int, bounds: tuple[int, int], client) -> None:
    """Re-raise a failed chunk's own error, noting the chunk and its samples unless its worker
    already did (an error in making a dask input comes from another task, with no such note);
    the scheduler's failure to read the graph is reported as the scheduler's, not a chunk's."""
    lo, hi = bounds
    this_chunk = f"chunk {index} (samples {lo} to {hi - 1})"
    try:
        future.result()
    except Exception as exc:
        failure = scheduler_failure(exc, client)
        if failure is not None:
            raise failure from exc
        if not any(this_chunk in note for note in getattr(exc, "__notes__", ())):
            exc.add_note(f"in eagle.distributed {this_chunk}")
        raise
    raise RuntimeError(f"eagle.distributed {this_chunk} ended as {future.status!r}")


def _part(output, name: str):
    return output.arrays[name]


def _lazy_arrays(mains: list, bounds, written, params, bound) -> dict:
    from dask import array as da
    from dask import delayed

    arrays = {}
    for name in written:
        dtype = bound.arrays[name].dtype
        lead = tuple(bound.arrays[name].shape[:-1])  # (k,) for a vector, (T, ...) for a Series
        arrays[name] = da.concatenate(
            [da.from_delayed(delayed(_part, pure=True)(future, name), (*lead, hi - lo), dtype)
             for future, (lo, hi) in zip(mains, bounds, strict=True)], axis=-1)
    return arrays
