"""Forward sensitivities: the right-hand side of a model and of its tangent system, integrated
together, so that a solver's steps (and their error control) carry ``du/dp`` or ``du/du0``.

For ``u' = f(u, t, p)`` the sensitivity ``S_j = du/dp_j`` obeys ``S_j' = J_u S_j + df/dp_j``
(and ``S_j = du/du0_j``, ``S_j' = J_u S_j``, from ``S_j(0) = e_j``). Each product is one
forward-mode derivative, ``hawk.jvp``, so no Jacobian is formed. The augmented state is
``(u, S_0, S_1, ...)``: ``u``'s ``k`` components, then each column's ``k``; the solver's error
norm covers all of it (full error control, as CVODES's ``errconS``).
"""

from __future__ import annotations

import functools

import hawk

__all__ = ["forward_sensitivity"]


@hawk.func
def _p_first(p, u, t, f, *tables):
    """``f`` with ``p`` first, for ``df/dp`` by ``hawk.jvp``."""
    return f(u, t, p, *tables)


@functools.cache
def forward_sensitivity(f, states: int, columns: int, by_p: bool):
    """The ``@hawk.func`` ``(big, t, p, *tables) -> d big/dt`` of ``f`` and its
    sensitivities (the tables, if the model reads any, passed on to it).

    Args:
        f: the model, a ``@hawk.func`` ``f(u, t, p)``.
        states: ``k``, the components of ``u`` (1 for a number).
        columns: ``m``, the parameters (``p``'s components) with ``by_p``, else ``k``.
        by_p: sensitivities to ``p`` (``S_j' = J_u S_j + df/dp_j``) or to ``u0``
            (``S_j' = J_u S_j``).
    """
    k, m = states, columns

    @hawk.func
    def augmented(big, t, p, *tables):
        u = big[0:k]
        out = f(u, t, p, *tables)
        for j in range(m):
            column = big[k + j * k:k + (j + 1) * k]
            change = hawk.jvp(f, u, column, t, p, *tables)[1]
            if by_p:
                if m == 1:
                    unit = 1.0
                else:
                    unit = hawk.zeros(m)
                    unit[j] = 1.0
                change = change + hawk.jvp(_p_first, p, unit, u, t, f, *tables)[1]
            out = hawk.concat(out, change)
        return out

    return augmented
