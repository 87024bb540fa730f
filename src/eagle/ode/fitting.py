"""``eagle.ode.loss_and_grad``: a sum of squared differences against data at the ``saveat``
times, and its gradient in ``p`` by the adjoint of the solve (``eagle.ode.adjoint``), in the
form ``scipy.optimize.minimize(fun, x0, jac=True)`` takes."""

from __future__ import annotations

import numpy as np

from . import arguments as args
from .dask_inputs import is_dask
from .solver import solve

__all__ = ["loss_and_grad"]


def loss_and_grad(f, u0, t_span, p, data, *, saveat, **options) -> tuple[float, object]:
    """``(loss, dloss/dp)`` for ``loss = sum((saved - data)**2)`` over the states
    ``solve(f, u0, t_span, p, saveat=saveat, adjoint=True, **options)`` saves, NaN entries of
    ``data`` (missing observations) left out; the gradient by one backward pass whatever the
    number of parameters, with the accepted steps' sizes held fixed (``Solution.vjp``).

    Args:
        f: the right-hand side, a ``@hawk.func`` ``f(u, t, p)``.
        u0: the initial states, as ``solve`` takes them.
        t_span: ``(t0, t_end)``, as ``solve`` takes it.
        p: the parameters, as ``solve`` takes them; the gradient is shaped as ``p`` was bound
            (a float for one number; summed over the samples for a ``p`` shared by all). With
            ``p=None`` and ``args=`` in ``options``, the gradient is the tuple of the
            arguments' (``Gradients.args``).
        data: the observations, shaped as ``Solution.saved``: ``(T,) + u0.shape``.
        saveat: ``(first, last, T)``: the times of the observations.
        options: more of ``solve``'s keywords (``method``, ``rtol``, ``atol``,
            ``adjoint_steps``, ``client`` with NumPy inputs...). A dask ``u0`` or ``data`` is
            refused by name (the loss is one sum over every sample, which chunks cannot
            give with the local bits): call ``solve(..., adjoint=True)`` and
            ``Solution.vjp(dsaved=...)`` with them.

    Example, a fit with SciPy (``p`` a shared vector)::

        result = scipy.optimize.minimize(
            lambda q: eagle.ode.loss_and_grad(f, u0, (0.0, 10.0), q, data, saveat=times),
            p_guess, jac=True, method="L-BFGS-B")
    """
    lazy = [name for name, value in (("u0", u0), ("data", data)) if is_dask(value)]
    if lazy:
        raise ValueError(f"loss_and_grad takes {' and '.join(lazy)} as NumPy or CuPy arrays: "
                         "its loss is one sum over every sample's squares, which chunks "
                         "cannot give with the local bits; with dask inputs call "
                         "solve(..., adjoint=True, client=...) and Solution.vjp(dsaved=2 * "
                         "residual) (each chunk's backward pass on its worker)")
    args.numeric("data", data)
    shape = tuple(np.shape(data))
    expected_tail = tuple(np.shape(u0))
    if len(shape) != len(expected_tail) + 1 or shape[1:] != expected_tail:
        raise ValueError(f"data must be shaped as Solution.saved, (T,) + u0's shape "
                         f"{expected_tail}, got {shape}")
    sol = solve(f, u0, t_span, p, saveat=saveat, adjoint=True, **options)
    if shape != tuple(sol.saved.shape):
        raise ValueError(f"data must be shaped as Solution.saved, {tuple(sol.saved.shape)} "
                         f"(saveat's count), got {shape}")
    xp = args.array_module(sol.saved)
    observed = xp.asarray(data, dtype=sol.saved.dtype)
    residual = xp.where(xp.isnan(observed), 0.0, sol.saved - observed)
    loss = float((residual * residual).sum())
    grads = sol.vjp(dsaved=2.0 * residual)
    return loss, grads.p if grads.args is None else grads.args
