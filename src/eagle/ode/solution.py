"""``Solution``: what ``eagle.ode.solve`` returns, its fields documented in one place, and the
adjoint's ``vjp`` on it."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..plan import Plan
from ..runner import Report, Runner
from . import adjoint as adjoints
from . import dask_adjoint
from .adjoint import Gradients

__all__ = ["Solution"]


@dataclass
class Solution:
    """What ``solve`` returns; every array is on the device of ``u0``, one entry per sample
    (dask arrays held on the cluster's workers for a dask ``u0``).

    Attributes:
        u: the state at the end, shaped as ``u0``: at ``t_end``, at the terminating event, or
            where a sample stopped.
        t: each sample's time at the end, ``(n,)``.
        status: ``hawk.ode.STATUS_DONE`` (1: reached ``t_end``), ``STATUS_EVENT`` (2: ended
            at its event), ``STATUS_RUNNING`` (0: ``max_steps`` ran out) or ``STATUS_FAILED``
            (-1: the step size fell below ``10 eps |t|``, e.g. after NaNs or a singularity;
            for the fixed-step methods, a state that is inf or NaN at the end).
        accepted: accepted steps per sample (int64); for fixed-step methods, the steps taken.
        rejected: rejected steps per sample (int64; zeros for fixed-step methods).
        events: events per sample (int64): bounces applied, or 1 where the event ended it.
        saved: with ``saveat``, the state at each recorded time: ``(T, n)`` or ``(T, k, n)``
            (NaN where a sample ended first); else None.
        ts: with ``saveat``, the ``T`` recorded times (a new array, those of an array
            ``saveat`` in its dtype: ``(T,)``, or ``(T, n)`` for times per sample); else
            None.
        report: the run's ``eagle.Report``.
        runner: the ``eagle.Runner`` that ran it (``runner.run()`` again continues nothing: all
            samples are done or at ``max_steps``); its arrays are the ones above. None for a
            solve on a Dask cluster (``client=``), whose ``report`` is a
            ``DistributedReport``.
        plan: the deployed kernel (``eagle.Plan``), to bind again without compiling. For an
            event that only ends samples it is the kernel that leaves each crossing step
            (``hawk.ode.dopri5_kernel(locate_after=True)``: such a sample stops at
            ``STATUS_LOCATING``), which ``solve`` follows with the kernel that takes that step
            again and locates the event.
        arrays: every array the kernel was bound to, by parameter name (for a dask ``u0``,
            the arrays it wrote, as dask arrays on the workers).
        du_dp: with ``sensitivity="p"``, ``d u(end) / d p``: ``(k, m, n)`` for ``k`` states
            and ``m`` parameters (a state or a parameter that is a number counts 1); else
            None.
        du_du0: with ``sensitivity="u0"``, ``d u(end) / d u0``: ``(k, k, n)``; else None.
            Where a terminal event ended a sample, its end moves with the event's time.
        dt_dp, dt_du0: with a ``sensitivity`` and an ``event``, the derivatives of the time
            a terminal event ended each sample at, ``(m, n)`` (``(n,)`` for one column); NaN
            where no event ended it.
        saved_sensitivity: with a ``sensitivity`` and ``saveat``, the same at each recorded
            time, ``(T, k, m, n)``; else None.
        t_events, u_events, which_events: with ``record_events=K``, each sample's first ``K``
            events: their times ``(K, n)``, states ``(K, ...)`` and event components
            ``(K, n)`` (NaN and -1 in unused rows; ``events`` counts them all); else None.
        adjoint: with ``adjoint=True``, what ``vjp`` needs (``eagle.ode.adjoint.Record``; the
            recorded steps are ``arrays["steps_u"]``, ``"steps_t"``, ``"steps_h"``); else None.
    """

    u: object
    t: object
    status: object
    accepted: object
    rejected: object
    events: object
    saved: object
    ts: object
    report: Report
    runner: Runner
    plan: Plan
    arrays: dict = field(repr=False)
    du_dp: object = None
    du_du0: object = None
    dt_dp: object = None
    dt_du0: object = None
    saved_sensitivity: object = None
    t_events: object = None
    u_events: object = None
    which_events: object = None
    adjoint: object = None

    def vjp(self, du=None, dsaved=None) -> Gradients:
        """The cotangents of ``p`` and ``u0`` for a cotangent ``du`` of the end state ``u``
        and/or ``dsaved`` of the ``saveat`` states: ``Gradients(p, u0)``, by one backward
        pass over each sample's accepted steps (``eagle.ode.adjoint``); needs
        ``solve(..., adjoint=True)``.

        The gradient is that of the computed solution with each accepted step's size held
        fixed: the step-size controller's dependence on ``p`` and ``u0`` is left out, as
        discrete adjoints with fixed accepted steps do (it is of the order of the
        tolerances). For a ``p`` shared by every sample the per-sample cotangents are summed
        over the samples left to right, the same bit for bit on every run. For a solve given
        ``args=``, ``Gradients.args`` holds one cotangent per argument (``p`` is None); for one
        given ``table_gradients=True``, ``Gradients.tables`` one per table (summed likewise).

        For a solve with dask inputs, each chunk's backward pass runs on the worker that
        holds its recorded steps, and the gradients are dask arrays (persisted there), the
        local ones bit for bit (``eagle.ode.dask_adjoint``).

        Args:
            du: the cotangent of ``Solution.u`` (say ``dL/du`` of a loss), a NumPy or CuPy
                array shaped as ``u`` (for dask inputs, a NumPy array, scattered, or a dask
                array chunked along the samples as ``u``); None for none.
            dsaved: the cotangent of ``Solution.saved``, shaped as it (``dL/d saved``; zeros
                where a row is NaN), taken as ``du`` is; None for none.
        """
        if self.adjoint is not None and self.adjoint.cluster is not None:
            return dask_adjoint.vjp(self, du, dsaved)  # each chunk's pass on its worker
        return adjoints.vjp(self, du, dsaved)

    @property
    def done(self):
        """Whether each sample ended normally (reached ``t_end`` or its terminating event)."""
        return self.status > 0
