"""The events ``solve`` watches: SciPy's list of event funcs made one vector-valued event, each
component's direction and terminal flag, and a pure recording's events located after the run.

A list ``[g0, g1]`` is stacked into one func returning ``concat(g0(...), g1(...))`` (the
kernels watch one vector-valued event), each func's ``.terminal``/``.direction`` read as SciPy
reads them. A pure recording (nothing terminal, no ``on_event``: a Poincaré section) has its
kernel write each crossing's step; ``locate_recorded`` runs
``hawk.ode.recorded.event_location_kernel`` on those rows, one event per sample. Such a
kernel carries ``g`` from one step to the next in ``c`` (``hawk.ode.kernels.carries_event``),
started by ``carried_memory``.
"""

from __future__ import annotations

import functools

import numpy as np

import hawk
from hawk.inline import Func
from hawk.ode.control import C_START
from hawk.ode.kernels import MAX_EVENTS, event_width
from hawk.ode.recorded import event_value_kernel

from ..runner import simulate
from . import probes

__all__ = ["stacked", "as_one_event", "per_component", "locate_recorded", "carried_memory",
           "memory_kernel", "memory_from"]


@functools.cache
def stacked(funcs: tuple[Func, ...]) -> Func:
    """One vector-valued event of the event functions ``funcs``: component ``i`` is
    ``funcs[i](u, t, p, ...)``."""
    if len(funcs) == 1:
        return funcs[0]
    head, rest = funcs[0], stacked(funcs[1:])

    @hawk.func
    def events(u, t, *more):
        return hawk.concat(head(u, t, *more), rest(u, t, *more))

    return events


def as_one_event(event, direction, terminal, on_event):
    """``event`` as one func: a list or tuple of funcs (SciPy's ``events=[...]``) is stacked
    into one vector-valued event, each function's ``.terminal`` and ``.direction`` attributes
    (SciPy's) read where ``terminal``/``direction`` are not given per component."""
    if event is None or isinstance(event, Func):
        return event, direction, terminal
    if not isinstance(event, list | tuple) or not event:
        raise TypeError(f"event must be a @hawk.func g(u, t, p), or a list of them (several "
                        f"events), got {event!r}")
    for i, g in enumerate(event):
        if not isinstance(g, Func):
            raise TypeError(f"event[{i}] must be a @hawk.func g(u, t, p), got {g!r}")
    if len(event) > MAX_EVENTS:
        raise ValueError(f"event: at most {MAX_EVENTS} event functions, got "
                         f"{len(event)}")
    if terminal is None and any(hasattr(g, "terminal") for g in event):
        terminal = tuple(bool(getattr(g, "terminal", on_event is None)) for g in event)
    if not isinstance(direction, tuple) and any(hasattr(g, "direction") for g in event):
        direction = tuple(int(getattr(g, "direction", direction)) for g in event)
    return stacked(tuple(event)), direction, terminal


def per_component(event: Func, direction, terminal, on_event, state, params, dims):
    """``direction`` and ``terminal`` for each component of a vector-valued ``event`` (a
    single value stands for every one), checked against the number of its components."""
    width = probes.result_width("event", event, state, params, dims)
    if width == 1:
        return direction, terminal
    if width > MAX_EVENTS:
        raise ValueError(f"event returns {width} components; at most {MAX_EVENTS} "
                         f"events are watched at once")
    default = on_event is None if terminal is None else terminal
    for name, value in (("direction", direction), ("terminal", default)):
        if isinstance(value, tuple) and len(value) != width:
            raise ValueError(f"{name} has {len(value)} entries but event returns {width} "
                             f"components: give one {name} per component, or one for all")
    return (direction if isinstance(direction, tuple) else (direction,) * width,
            default if isinstance(default, tuple) else (default,) * width)


def locate_recorded(kernel, xp, p, per_sample: bool, t_events, rows, which, shape, tables,
                    one_component: bool, t_end):
    """The events of a pure recording (``hawk.ode.kernels.recorded_row_width``): each
    recorded row's step located by ``kernel`` (``hawk.ode.recorded.event_location_kernel``),
    one row per sample (``t_end``: each sample's, ``(n,)``). For an event of
    ``one_component`` the kernel left ``which`` as it was: it is filled here (0 in each row
    written, -1 in the others).
    Returns ``(t_events, u_events)``, ``u_events`` shaped ``(K, *shape)``, NaN where unused."""
    t_located = xp.full(t_events.shape, np.nan, dtype=t_events.dtype)
    u_located = xp.full((t_events.shape[0], *shape), np.nan, dtype=rows.dtype)
    if one_component:
        which[...] = xp.where(xp.isnan(t_events), -1, 0)
    r, j = xp.nonzero(which >= 0)
    m = int(r.shape[0])
    if m == 0:
        return t_located, u_located
    t_out = xp.empty(m, dtype=t_events.dtype)
    u_out = xp.empty((*shape[:-1], m), dtype=rows.dtype)
    simulate(kernel, max_steps=1, p=p[..., j] if per_sample else p,
             row=xp.ascontiguousarray(rows[r, :, j].T), which=which[r, j], t=t_events[r, j],
             t_end=t_end[j], t_event=t_out, u_event=u_out, terminated=xp.zeros(m, dtype=bool),
             **tables)
    t_located[r, j] = t_out
    if len(shape) == 2:
        u_located[r, :, j] = u_out.T
    else:
        u_located[r, j] = u_out
    return t_located, u_located


def carried_memory(event, state, params, table_dims, xp, p, u, t, tables):
    """The ``c`` a kernel that carries the event starts with (``hawk.ode.kernels.
    carries_event``), ``(1 + w, n)`` for an event of ``w`` components: ``C_START`` (the
    controller's memory), then ``g(u0, t0, p)`` by ``event_value_kernel``."""
    return memory_from(memory_kernel(event, state, params, table_dims), xp, p, u, t, tables)


def memory_kernel(event, state, params, table_dims) -> tuple:
    """``(kernel, w)``: the ``event_value_kernel`` that starts ``carried_memory`` and the
    event's components ``w``, built once (a dask solve sends the kernel to its workers)."""
    return (event_value_kernel(event, state, params, tables=table_dims),
            event_width(event, state, params, table_dims))


def memory_from(kernel_and_width: tuple, xp, p, u, t, tables):
    """``carried_memory`` by ``memory_kernel``'s kernel."""
    kernel, width = kernel_and_width
    n = t.shape[0]
    c = xp.empty((1 + width, n), dtype=t.dtype)
    c[0] = C_START
    value = c[1] if width == 1 else c[1:]  # rows of a C-ordered array: contiguous
    simulate(kernel, max_steps=1, p=p, u=u, t=t, value=value,
             terminated=xp.zeros(n, dtype=bool), **tables)
    return c
