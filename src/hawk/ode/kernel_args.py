"""What the kernel factories of ``hawk.ode`` do with a caller's funcs, types and tables before
they write a kernel: check them (``_check_func``, ``_check_types``, ``_table_types``), wrap the
model's funcs so every integrator calls them as ``g(u, t, args)`` with ``args = (p, table0,
table1, table2)`` (``_with_tables``, ``_with_index``, ``_given_jacobian``), stand in for a func
not given (``_never``, ``_unchanged``) and turn ``saveat`` into the func of recorded time ``k``
(``_save_times``).

Shared by the adaptive kernels (``hawk.ode.kernels``), the fixed-step ones
(``hawk.ode.fixed_kernels``), the events' (``hawk.ode.event_components``,
``hawk.ode.recorded``), the sensitivities' and the adjoint's, so each refuses bad input with
the same words and binds the same parameters.
"""

from __future__ import annotations

import functools

import hawk
from hawk import Param, Scalar, Table
from hawk.annotations import Annotation
from hawk.inline import Func
from hawk.ir import Role

__all__ = ["MAX_TABLES"]

#: the most tables a model reads: the kernels' ``table0``, ``table1``, ``table2``
MAX_TABLES = 3


@functools.cache
def _given_jacobian(jac: Func, count: int) -> Func:
    """The user's ``jac(u, t, p, [tables...])`` as the Rosenbrock steps call a Jacobian,
    ``(f, u, t, args)``."""
    @hawk.func
    def given(f, u, t, args):
        return jac(u, t, *args[0:count + 1])

    return given


@hawk.func
def _never(u, t, p):
    return 1.0


@hawk.func
def _unchanged(u, t, p):
    return u


def _is_vector_type(annotation) -> bool:
    return isinstance(annotation, Annotation) and annotation.role is Role.SCALAR \
        and annotation.width > 1 and not annotation.columns


def _check_types(state, params) -> None:
    if state is not Scalar and not _is_vector_type(state):
        raise TypeError(f"state must be hawk.Scalar or a vector type (Vec2, Vec3, Vec4, "
                        f"Vector[K]: the shape of u), got {state!r}")
    if not (isinstance(params, Annotation) and params.role in (Role.SCALAR, Role.PARAM)):
        raise TypeError(f"params must be hawk.Scalar, a vector or matrix type (per sample), "
                        f"Param, or Param[Vector[K]] / Param[Matrix[R, C]] (one for all): how "
                        f"p is bound; got {params!r}")


def _table_types(tables) -> tuple:
    """The annotations of ``table0 .. table2`` for ``tables``, the dimensions (1 to 3) of the
    tables the model reads; the others stay unread (and need no binding)."""
    if not (isinstance(tables, tuple) and len(tables) <= MAX_TABLES
            and all(type(d) is int and 1 <= d <= 3 for d in tables)):
        raise TypeError(f"tables must be a tuple of at most {MAX_TABLES} table dimensions "
                        f"(each 1, 2 or 3), got {tables!r}")
    return tuple(Table[tables[i]] if i < len(tables) else Table for i in range(MAX_TABLES))


@functools.cache
def _with_tables(g: Func, count: int) -> Func:
    """``g(u, t, p)``, or with ``count`` tables ``g(u, t, p, table0, ...)``, called as
    ``h(u, t, args)`` with ``args = (p, table0, table1, table2)``: what the kernels pass on to
    the integrators in place of ``p``."""
    @hawk.func
    def model(u, t, args):
        return g(u, t, *args[0:count + 1])

    return model


@functools.cache
def _with_index(g: Func, count: int) -> Func:
    """An ``on_event`` that takes the index of the event's component last,
    ``g(u, t, p, [tables...], i)``, called as ``h(u, t, args, i)``."""
    @hawk.func
    def update(u, t, args, i):
        return g(u, t, *args[0:count + 1], i)

    return update


def _takes_index(on_event: Func, count: int) -> bool:
    """Whether ``on_event`` takes the event's component after ``(u, t, p)`` and the tables
    (a wrapper that passes its arguments on, ``forwards_to``, as the func it calls; one that
    spreads ``p`` into several arguments says how many as ``p_count``)."""
    p_count = 1
    while hasattr(on_event, "forwards_to"):
        p_count = getattr(on_event, "p_count", p_count)
        on_event = on_event.forwards_to
    return len(on_event.signature.parameters) == 2 + p_count + count + 1


def _check_func(name: str, value, required: bool = True) -> None:
    if value is None and not required:
        return
    if not isinstance(value, Func):
        raise TypeError(f"{name} must be a @hawk.func taking (u, t, p), got {value!r}")


@hawk.func
def _grid_time(first, every, k):
    """Recorded time ``k`` of the grid ``first + k * every``."""
    return first + k * every


@hawk.func
def _listed_time(first, times, k):
    """Recorded time ``k`` of a sorted ``Table`` of times (an index past its end reads the last
    one: a table read is clamped)."""
    return times[k]


@hawk.func
def _sample_time(first, times, k):
    """Recorded time ``k`` of this sample: column ``hawk.sample_index()`` of a ``Table[2]``
    of times ``(T, n)``, each column sorted."""
    return times[k, hawk.sample_index()]


def _save_times(saveat) -> tuple:
    """``saveat`` (``False``, ``True``: the grid, ``"times"``: a table of times,
    ``"sample_times"``: a table ``(T, n)`` of each sample's times) as the func giving recorded
    time ``k`` and the annotation of the kernels' ``save_every``."""
    if saveat == "times":
        return _listed_time, Table
    if saveat == "sample_times":
        return _sample_time, Table[2]
    if saveat not in (True, False):
        raise ValueError(f"saveat must be True (the grid save_first + k * save_every), "
                         f"'times' (a Table of times bound as save_every), 'sample_times' (a "
                         f"Table[2] (T, n), a column per sample) or False, got {saveat!r}")
    return _grid_time, Param
