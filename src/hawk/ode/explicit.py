"""One explicit Runge-Kutta step and one interpolant, for any ``ButcherTableau``, in hawk.

hawk inlines funcs and unrolls ``for`` loops over constant ranges when it lowers a kernel, so
the generic step below lowers to the very ops a step written out by hand would: stage by stage,
each a sum ``w_1 k_i1 + w_2 k_i2 + ...`` over the stages of nonzero weight, left to right. Every
decision about a method (which weights are zero, which node is ``t + h``, where the
interpolant's coefficients are formed, which error norm) is taken here in Python from the
tableau, and hawk is left only the arithmetic; a compile-time ``if`` in the body would add ops
of its own. ``tests/test_ode_digests.py`` pins the resulting IR.

For a tableau ``tab`` (built once per tableau, cached):

- ``explicit_stages(tab)``: ``(f, u, k1, t, h, p) -> (u_new, err, ks)``, every stage ``ks``
  (the step's, ``f(u_new, t + h)``, then the interpolant's extra ones: free unless read);
- ``explicit_attempt(tab)``: ``(f, u, k1, t, h, p) -> (u_new, err, q, k_next)``, as the adaptive
  kernel takes a method's step (``q``: what the interpolant reads);
- ``polynomial_value(tab)``: ``(u, h, q, theta) -> u(t + theta h)``, Horner's rule on
  ``u + h theta (q_1 + theta (q_2 + ...))``, ``q_j`` the stages weighed by ``dense[j]``;
- ``error_norm_for(tab)``: the error norm the controller reads (``hawk.ode.error_norm``, or
  with ``e_low`` Hairer's DOP853 norm over two estimates).
"""

from __future__ import annotations

import functools
import math

import hawk

from .tableau import ButcherTableau

__all__ = ["explicit_stages", "explicit_attempt", "polynomial_value", "dense_coefficients_of",
           "error_norm_for", "error_norm", "rms"]


@hawk.func
def rms(e):
    """The root-mean-square of the components of ``e`` (``abs(e)`` for a number).

    Args:
        e: a number or a vector.
    """
    return math.sqrt(hawk.total(e * e) / hawk.width(e))


@hawk.func
def error_norm(err, u, u_new, rtol, atol):
    """The root-mean-square of ``err / (atol + rtol * max(|u|, |u_new|))`` over components:
    at most 1 for a step to be accepted.

    Args:
        err: the error estimate of a step (``dopri5_attempt``), shaped as the state.
        u, u_new: the state before and after the step.
        rtol, atol: the relative and absolute tolerances.
    """
    return rms(err / (atol + rtol * hawk.maximum(abs(u), abs(u_new))))


@hawk.func
def paired_error_norm(err, u, u_new, rtol, atol):
    """Hairer's error norm of DOP853 (and SciPy's), for ``err = (err5, err3)``, two estimates
    (fifth and third order) of one step: ``|e5|**2 / sqrt((|e5|**2 + 0.01 |e3|**2) n)``, ``e``
    scaled as in ``error_norm`` and ``|.|`` the Euclidean norm over ``n`` components (0 where
    both vanish). It behaves as ``h**8``: the third-order estimate only tempers the fifth
    where that one is accidentally small.

    Args:
        err: ``(err5, err3)``, each shaped as the state.
        u, u_new: the state before and after the step.
        rtol, atol: the relative and absolute tolerances.
    """
    scale = atol + rtol * hawk.maximum(abs(u), abs(u_new))
    high, low = err[0] / scale, err[1] / scale
    high2 = hawk.total(high * high)
    denominator = math.sqrt((high2 + 0.01 * hawk.total(low * low)) * hawk.width(high))
    return 0.0 if denominator == 0.0 else high2 / denominator


@hawk.func
def _combine(weights, index, count, ks):
    """``sum_m weights[m] ks[index[m]]`` over ``m < count``, left to right."""
    total = weights[0] * ks[index[0]]
    for m in range(1, count):
        total = total + weights[m] * ks[index[m]]
    return total


@hawk.func
def _at_node(t, h, c):
    """A stage's time, ``t + c h``."""
    return t + c * h


@hawk.func
def _at_end(t, h, c):
    """A stage's time where its node is 1: ``t + h``, as a step written out would have it."""
    return t + h


@hawk.func
def _single_error(h, terms, ks):
    """``h sum_i e_i k_i``."""
    return h * _combine(terms[0], terms[1], terms[2], ks)


@hawk.func
def _paired_error(h, terms, ks):
    """``(h sum_i e_i k_i, h sum_i e_low_i k_i)``, for ``paired_error_norm``."""
    return h * _combine(terms[0], terms[1], terms[2], ks), \
        h * _combine(terms[3], terms[4], terms[5], ks)


def _sparse(weights) -> tuple[tuple[float, ...], tuple[int, ...], int]:
    """``(weights, stages, count)`` of the nonzero weights: what ``_combine`` reads."""
    index = tuple(i for i, w in enumerate(weights) if w != 0.0)
    if not index:
        raise ValueError("a row of a Butcher tableau with no nonzero weight")
    return tuple(float(weights[i]) for i in index), index, len(index)


def _nodes(nodes) -> tuple:
    return tuple(_at_end if c == 1.0 else _at_node for c in nodes)


@functools.cache
def explicit_stages(tab: ButcherTableau):
    """The ``@hawk.func`` ``(f, u, k1, t, h, p) -> (u_new, err, ks)`` of ``tab``'s step."""
    rows, nodes, c = tuple(map(_sparse, tab.a)), _nodes(tab.c), tab.c
    solution = _sparse(tab.b)
    terms = _sparse(tab.e) + (_sparse(tab.e_low) if tab.e_low is not None else ())
    error = _paired_error if tab.e_low is not None else _single_error
    extra_rows, extra_nodes, extra_c = tuple(map(_sparse, tab.extra_a)), \
        _nodes(tab.extra_c), tab.extra_c
    count, extras = len(rows), len(extra_rows)

    @hawk.func
    def stages(f, u, k1, t, h, p):
        ks = (k1,)
        for i in range(count):
            weights, index, n = rows[i]
            ks = ks + (f(u + h * _combine(weights, index, n, ks), nodes[i](t, h, c[i]), p),)
        u_new = u + h * _combine(solution[0], solution[1], solution[2], ks)
        ks = ks + (f(u_new, t + h, p),)
        err = error(h, terms, ks)
        for i in range(extras):
            weights, index, n = extra_rows[i]
            ks = ks + (f(u + h * _combine(weights, index, n, ks),
                         extra_nodes[i](t, h, extra_c[i]), p),)
        return u_new, err, ks

    stages.__doc__ = f"{tab.name}'s step: ``(u_new, err, ks)``."
    return stages


@functools.cache
def dense_coefficients_of(tab: ButcherTableau):
    """The ``@hawk.func`` ``ks -> (q_1, ..., q_J)``: the interpolant's coefficients,
    ``q_j = sum_i dense[j-1][i] k_i``."""
    rows = tuple(map(_sparse, tab.dense))
    degree = len(rows)

    @hawk.func
    def coefficients(ks):
        q = ()
        for j in range(degree):
            weights, index, n = rows[j]
            q = q + (_combine(weights, index, n, ks),)
        return q

    return coefficients


@functools.cache
def explicit_attempt(tab: ButcherTableau):
    """The ``@hawk.func`` ``(f, u, k1, t, h, p) -> (u_new, err, q, k_next)`` of ``tab``:
    ``q`` the interpolant's coefficients (``dense_in_attempt``) or every stage."""
    stages = explicit_stages(tab)
    last = tab.stages
    if tab.dense_in_attempt:
        coefficients = dense_coefficients_of(tab)

        @hawk.func
        def attempt(f, u, k1, t, h, p):
            u_new, err, ks = stages(f, u, k1, t, h, p)
            return u_new, err, coefficients(ks), ks[last]
    else:
        @hawk.func
        def attempt(f, u, k1, t, h, p):
            u_new, err, ks = stages(f, u, k1, t, h, p)
            return u_new, err, ks, ks[last]

    attempt.__doc__ = f"""One attempted {tab.name} step of size ``h`` from ``u`` at ``t``:
    ``(u_new, err, q, k_next)``, the order-{tab.order} solution, the error estimate
    (state-shaped, before scaling), what the interpolant reads and ``f(u_new, t + h, p)``
    (the next step's ``k1``). The arguments are ``dopri5_attempt``'s: the right-hand side
    ``f``, the state ``u`` at the time ``t``, ``k1``, the step ``h`` and the model's
    parameters ``p``.
    """
    return attempt


@functools.cache
def polynomial_value(tab: ButcherTableau):
    """The ``@hawk.func`` ``(u, h, q, theta) -> u(t + theta h)`` of ``tab``'s interpolant
    (``q`` as ``explicit_attempt(tab)`` returns it)."""
    degree = len(tab.dense)
    top, inward = degree - 1, tuple(range(degree - 2, -1, -1))
    eager = tab.dense_in_attempt
    coefficients = dense_coefficients_of(tab)

    @hawk.func
    def horner(u, h, q, theta):
        scale = h * theta
        total = q[top]
        for j in range(top):
            total = q[inward[j]] + theta * total
        return u + scale * total

    if eager:
        value = horner
    else:
        @hawk.func
        def value(u, h, q, theta):
            return horner(u, h, coefficients(q), theta)

    value.__doc__ = f"""{tab.name}'s interpolant at ``t + theta h`` (order {tab.dense_order}).

    Args:
        u: the state at the step's start.
        h: the step's size.
        q: what the step's attempt returned for it.
        theta: the fraction of the step, in ``[0, 1]``.
    """
    return value


def error_norm_for(tab: ButcherTableau):
    """The error norm of ``tab``'s estimate: ``error_norm``, or ``paired_error_norm`` for a
    tableau with two estimates (``e_low``)."""
    return paired_error_norm if tab.e_low is not None else error_norm
