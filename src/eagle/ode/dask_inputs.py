"""``eagle.ode.solve`` over dask arrays: which inputs come in blocks, checked on the client.

``solve(f, u0, t_span, p, client=client)`` with ``u0`` as a dask array never brings a member's
numbers to the client. Every argument that has a value per sample may be a dask array with the
samples on its last axis: ``u0``, ``p``, each of ``args``, ``t_span[0]``, ``t_span[1]``,
``rtol``, ``atol``, ``max_step`` and ``dt``. ``inputs`` checks them here by name and computes
their first samples (one or two, from the cluster): ``solve`` checks the rest of its arguments
and builds the kernels on those, exactly as for a local solve of that many samples. Then
``eagle.ode.dask_chunks`` makes, integrates and keeps every chunk on the workers.

A per-sample argument beside a dask ``u0`` must be a dask array itself (a NumPy array of every
sample would pass through the client; ``da.from_array`` says so explicitly): one whose last
axis has the ``n`` samples is refused naming it. Arguments shared by every sample (a number, a
shared ``p`` or a shared argument of ``args``) are sent whole in the tasks. The checks a local
solve makes of each sample's value (``rtol`` positive, ``t_end`` on the same side of ``t0``
for every sample) run on the worker that makes the chunk, and are refused by the same name.

``saveat`` as times per sample is a NumPy ``(T, n)`` array (its times are a table the kernels
read by each sample's global index, sent once per run to every worker); a dask ``saveat`` is
refused by name. ``adjoint=True`` keeps each chunk's recorded steps on its worker and runs
``Solution.vjp``'s backward pass there (``eagle.ode.dask_adjoint``).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

__all__ = ["LazyInputs", "inputs", "array_module", "is_dask", "PER_SAMPLE_NUMBERS"]

#: the per-sample numbers a dask solve takes as a number or as a dask array ``(n,)``: each
#: argument's name (in messages) and the keyword its blocks reach a chunk by
PER_SAMPLE_NUMBERS = {"t_span[0]": "t0", "t_span[1]": "t_end", "rtol": "rtol",
                      "atol": "atol", "max_step": "max_step", "dt": "dt"}


@dataclass(frozen=True)
class LazyInputs:
    """A solve's dask inputs, checked.

    Attributes:
        client: the ``distributed.Client``.
        n: the samples; ``chunks`` the sample-axis chunk sizes the solve runs in.
        blocks: every per-sample dask input by the keyword a chunk receives its block by
            (``u0``, ``p``, ``args_0``..., ``t0``, ``t_end``, ``rtol``...).
        first: the same inputs' first samples, computed here (NumPy).
        numbers: the per-sample numbers given as numbers, by argument name (``rtol``...).
        p: ``p`` as given when it is not a dask array (shared: bound on the client).
        args: ``args`` as given (its per-sample arguments dask arrays), or None.
        args_per_sample: for each of ``args``, whether it has a value per sample.
    """

    client: object
    n: int
    chunks: tuple[int, ...]
    blocks: dict
    first: dict
    numbers: dict
    p: object
    args: tuple | None
    args_per_sample: tuple[bool, ...] | None

    def first_arguments(self, u0, p, args, t_span, rtol, atol, max_step, dt):
        """``solve``'s arguments with every dask input replaced by its first samples."""
        first = self.first
        if args is not None:
            args = tuple(first[f"args_{i}"] if per_sample else value for i, (value, per_sample)
                         in enumerate(zip(args, self.args_per_sample, strict=True)))
        given = dict(zip(PER_SAMPLE_NUMBERS.values(), (*t_span, rtol, atol, max_step, dt),
                         strict=True))
        taken = {key: first.get(key, value) for key, value in given.items()}
        return (first["u0"], first.get("p", p), args, (taken["t0"], taken["t_end"]),
                taken["rtol"], taken["atol"], taken["max_step"], taken["dt"])


def is_dask(value) -> bool:
    return type(value).__module__.startswith("dask.array")


def array_module():
    """``dask.array``: the module of a dask solve's per-sample results."""
    from dask import array as da

    return da


def _dask_names(u0, p, args, t_span, others: dict) -> list[str]:
    """The names of the arguments given as dask arrays."""
    given = {"u0": u0, "p": p, **others}
    if isinstance(t_span, tuple | list) and len(t_span) == 2:
        given.update({"t_span[0]": t_span[0], "t_span[1]": t_span[1]})
    if isinstance(args, tuple | list):
        given.update({f"args[{i}]": value for i, value in enumerate(args)})
    return [name for name, value in given.items() if is_dask(value)]


def inputs(client, chunks, u0, p, *, t_span, rtol, atol, max_step, dt, args,
           saveat) -> LazyInputs | None:
    """None unless ``u0`` or another argument is a dask array; else what ``solve`` needs of
    them, after refusing by name what a dask solve cannot serve."""
    named = _dask_names(u0, p, args, t_span, dict(rtol=rtol, atol=atol, max_step=max_step,
                                                  dt=dt, saveat=saveat))
    if not named:
        return None
    which = f"{', '.join(named)} {'is a dask array' if len(named) == 1 else 'are dask arrays'}"
    if client is None:
        raise ValueError(f"{which}: pass client= (a distributed.Client) to solve on its "
                         "workers, or .compute() them to solve here")
    if not is_dask(u0):
        raise ValueError(f"{which}: pass u0 as a dask array too (its chunks cut the samples "
                         "on the workers)")
    if is_dask(saveat):
        raise ValueError("saveat as a dask array: pass its times as a NumPy array, (T,) or "
                         "(T, n) (the kernels read the times whole, by each sample's global "
                         "index)")
    if u0.ndim not in (1, 2):
        raise ValueError(f"u0 must have shape (n,) or (k, n), got {tuple(u0.shape)}")
    n = int(u0.shape[-1])
    blocks = {"u0": u0}
    try:
        t0, t_end = t_span
    except (TypeError, ValueError):
        raise ValueError(f"t_span must be a pair (t0, t_end), got {t_span!r}") from None
    given = dict(zip(PER_SAMPLE_NUMBERS, (t0, t_end, rtol, atol, max_step, dt), strict=True))
    for name, value in given.items():
        if is_dask(value):
            if value.shape != (n,):
                raise ValueError(f"{name} as a dask array is per sample: it must have shape "
                                 f"({n},) (u0's samples), got {tuple(value.shape)}")
            blocks[PER_SAMPLE_NUMBERS[name]] = value
        elif not (value is None or isinstance(value, numbers.Real)):
            raise ValueError(f"{name} must be a number or a dask array ({n},) beside a dask "
                             f"u0 (a NumPy array of every sample would pass through the "
                             f"client: da.from_array it), got {type(value).__name__}")
    numbers_given = {name: value for name, value in given.items() if not is_dask(value)}
    last = _check_p(p, n)
    if is_dask(p):
        blocks["p"] = p
    args_per_sample = None
    if isinstance(args, tuple | list):
        args_per_sample = tuple(_check_argument(f"args[{i}]", value, n)
                                for i, value in enumerate(args))
        blocks.update({f"args_{i}": value for i, value in enumerate(args) if is_dask(value)})
    # the first samples solve checks and compiles for: as many as tell a shared p's shape
    # from a per-sample one (its last axis is not their count)
    first = min(n, 2 if last == 1 else 1)
    sizes = _chunk_sizes(chunks, n, u0)
    names = list(blocks)
    computed = client.compute([blocks[name][..., :first] for name in names], sync=True)
    return LazyInputs(client=client, n=n, chunks=sizes, blocks=blocks,
                      first=dict(zip(names, computed, strict=True)), numbers=numbers_given,
                      p=None if is_dask(p) else p,
                      args=tuple(args) if isinstance(args, tuple | list) else None,
                      args_per_sample=args_per_sample)


def _check_p(p, n: int):
    """Refuse a ``p`` that cannot go beside a dask ``u0``; the last axis of a shared array
    ``p`` (None for a dask one, a number or a sequence)."""
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
    return last


def _check_argument(name: str, value, n: int) -> bool:
    """Whether ``args[i]`` beside a dask ``u0`` is per sample (a dask array whose last axis
    has the ``n`` samples); refuses a NumPy array of every sample, naming it."""
    if is_dask(value):
        if value.ndim == 0 or value.shape[-1] != n:
            raise ValueError(f"{name} as a dask array is per sample: its last axis must be "
                             f"u0's {n} samples, got shape {tuple(value.shape)} (pass an "
                             "argument shared by every sample as a NumPy array)")
        return True
    if np.ndim(value) >= 1 and np.shape(value)[-1] == n:
        raise ValueError(f"{name} of shape {np.shape(value)} is per sample: beside a dask u0 "
                         "pass it as a dask array too (da.from_array(...), or made on the "
                         "workers)")
    return False


def _chunk_sizes(chunks, n: int, u0) -> tuple[int, ...]:
    """The sample-axis chunk sizes: ``chunks`` equal ones (give or take one), else ``u0``'s."""
    if isinstance(chunks, int) and not isinstance(chunks, bool) and 1 <= chunks:
        if chunks > n:
            raise ValueError(f"chunks must be at most the {n} samples, got {chunks}")
        edges = np.linspace(0, n, chunks + 1).round().astype(np.int64)
        return tuple(np.diff(edges).tolist())
    return tuple(int(c) for c in u0.chunks[-1])
