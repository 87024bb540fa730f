"""``eagle.ode.solve``: check the arguments, build the kernels, run them, shape the solution.

What it returns, ``Solution``, is in ``eagle.ode.solution``; the forward sensitivities' model
and their split from the state, in ``eagle.ode.forward_sensitivity`` (both names stay
importable from here)."""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import replace

import numpy as np

import hawk
from hawk import ode as hawk_ode
from hawk.annotations import value_matrix_type
from hawk.inline import Func
from hawk.ir import Role
from hawk.ode.kernels import (
    _takes_index,
    carries_event,
    event_width,
    locates_after,
    recorded_row_width,
)
from hawk.ode.linsolve import LINSOLVES, REFINED_MAX_STATES
from hawk.ode.recorded import event_location_kernel

from ..errors import TruncationWarning
from ..plan import deploy
from ..runner import simulate, until_done
from ..threads import get_num_threads, set_num_threads
from . import adjoint as adjoints
from . import (
    arguments,
    cluster,
    dask_adjoint,
    dask_chunks,
    dask_inputs,
    ensemble,
    model_args,
    probes,
)
from .events import (
    as_one_event,
    locate_recorded,
    memory_from,
    memory_kernel,
    per_component,
)
from .forward_sensitivity import sensitivity_columns, split_sensitivity, with_sensitivity
from .solution import Solution

__all__ = ["solve", "Solution", "METHODS"]

#: the methods ``solve`` knows (``hawk.ode.METHODS``, the registry): adaptive, fixed-step, and
#: stochastic
METHODS = tuple(hawk_ode.METHODS)
#: the adaptive methods (``rtol``, ``atol``, ``max_step``, events, stops)
ADAPTIVE = tuple(name for name, m in hawk_ode.METHODS.items() if m.adaptive)
#: the methods that take a Jacobian (``jac=``)
IMPLICIT = tuple(name for name, m in hawk_ode.METHODS.items() if m.implicit)


@functools.cache
def _in_reversed_time(g: Func, negate: bool) -> Func:
    """``g`` as a function of ``s = -t``: ``-g(u, -s, p, ...)`` for the right-hand side
    (``negate``: du/ds = -du/dt), ``g(u, -s, p, ...)`` for an event or an update (the rest
    of the arguments passed on: tables, an event's index)."""
    if negate:
        @hawk.func
        def reversed_rhs(u, s, *rest):
            return -g(u, -s, *rest)

        reversed_rhs.forwards_to = g
        return reversed_rhs

    @hawk.func
    def reversed_call(u, s, *rest):
        return g(u, -s, *rest)

    reversed_call.forwards_to = g  # its parameters are g's (an on_event's index included)
    return reversed_call


def _negated(times):
    """``saveat`` ``(first, last, count)`` or ``tstops`` ``(first, every)`` given in ``t``, in
    ``s = -t`` (the first two entries negated); left as it is when it is not a tuple of numbers,
    for its own check to refuse."""
    if times is None:
        return None
    try:
        values = list(times)
        values[:2] = -float(values[0]), -float(values[1])
    except (TypeError, ValueError, IndexError):
        return times
    return tuple(values)


def _save_times(saveat) -> tuple[float, float, int]:
    """``saveat`` ``(first, last, count)`` as (first, spacing, count); (0, 1, 0) for None."""
    if saveat is None:
        return 0.0, 1.0, 0
    try:
        first, last, count = saveat
        first, last = float(first), float(last)
    except (TypeError, ValueError):
        raise ValueError(f"saveat must be (first, last, count) or an array of times "
                         f"(np.asarray(times)), got {saveat!r}") from None
    if not (math.isfinite(first) and math.isfinite(last)):
        raise ValueError(f"saveat: first and last must be finite, got {first!r} and {last!r}")
    if isinstance(count, bool) or not (isinstance(count, int | np.integer) and count >= 1):
        raise ValueError(f"saveat: count must be an int >= 1, got {count!r}")
    if count > 1 and not last > first:
        raise ValueError(f"saveat: last must be after first, got {first!r} and {last!r}")
    count = int(count)
    return first, (last - first) / (count - 1) if count > 1 else 1.0, count


def _check_linsolve(linsolve, method: str, width: int) -> None:
    """``linsolve=``: a name of ``hawk.ode.linsolve.LINSOLVES``, for a Rosenbrock method, and
    ``"refined"`` for a system it takes (``width`` states, sensitivities included)."""
    if not (isinstance(linsolve, str) and linsolve in LINSOLVES):
        raise ValueError(f"linsolve must be one of {', '.join(map(repr, LINSOLVES))}, "
                         f"got {linsolve!r}")
    if linsolve != "lu" and method not in IMPLICIT:
        raise ValueError(f"linsolve is for the Rosenbrock methods "
                         f"({', '.join(map(repr, IMPLICIT))}), not method={method!r}")
    if linsolve == "refined" and width > REFINED_MAX_STATES:
        raise ValueError(f"linsolve='refined' takes at most {REFINED_MAX_STATES} states (its "
                         f"residual is written out, about 25 n**2 ops a solve); this system "
                         f"has {width}")


def _check_funcs(f: Func, state, params, dims, *, jac, noise, on_stop, on_event,
                 given: str | None = None) -> None:
    """The user's funcs return what ``solve`` needs of them (``probes``), before any kernel
    is built: refusals name ``f``, ``jac``... and the shapes, not the kernels' parameters
    (``given``: how the model's arguments were passed, where not as ``p``)."""
    check = functools.partial(probes.check_result, given=given)
    check("f", f, state, params, dims, state, "du/dt shaped as u0")
    for name, g, meaning in (("noise", noise, "the diffusion shaped as u0"),
                             ("on_stop", on_stop, "the new state shaped as u0"),
                             ("on_event", on_event, "the new state shaped as u0")):
        if g is None:
            continue
        if not isinstance(g, Func):
            raise TypeError(f"{name} must be a @hawk.func taking (u, t, p), got {g!r}")
        if name != "on_event" or not _takes_index(g, len(dims)):
            check(name, g, state, params, dims, state, meaning)
    if jac is not None:
        if not isinstance(jac, Func):
            raise TypeError(f"jac must be a @hawk.func jac(u, t, p) returning df/du, got "
                            f"{jac!r}")
        size = 1 if state is hawk.Scalar else state.width
        shape = hawk.Scalar if size == 1 else value_matrix_type(size, size)
        check("jac", jac, state, params, dims, shape, "df/du")


def _integrate(kernel, prepare, arrays: dict, bound: dict, tables: dict, xp, n: int, *,
               threads, client, chunks, max_steps: int, seed, progress: bool, checkpoint,
               locating=None):
    """Each sample's first step (``prepare``, the adaptive methods), then the integration, in
    this process or (``client``) over a Dask cluster, into ``arrays``: ``(plan, runner,
    report)``; ``bound`` is what the kernel binds of ``arrays``. ``locating``: for a
    ``kernel`` made with ``locate_after``, the same kernel without it, which takes each step
    left at ``STATUS_LOCATING`` again and locates its event."""
    saved_threads = get_num_threads()
    if threads is not None:
        set_num_threads(threads)
    try:
        if prepare is not None:
            simulate(prepare, max_steps=1, **ensemble.first_step_bindings(arrays, xp, n),
                     **tables)
        plan, runner = deploy(kernel), None
        if client is not None:  # the integration on the cluster, into these same arrays
            report = cluster.run(plan, client, chunks, bound, tables, max_steps=max_steps,
                                 seed=seed, progress=progress, checkpoint=checkpoint)
        else:
            runner = until_done(plan, max_steps=max_steps, seed=seed, **bound, **tables)
            report = runner.run(progress=progress)
        if locating is not None:  # here: the step each sample that crossed left
            left = arrays["status"] == hawk_ode.STATUS_LOCATING
            if left.any():
                arrays["status"][left] = hawk_ode.STATUS_RUNNING
                # one step each: the same step, crossing again; a device that compiled the
                # two kernels to different bits would have a sample go on from there, as the
                # locating kernel runs it (never left half-done)
                simulate(locating, max_steps=max_steps, seed=seed, **bound,
                         terminated=xp.logical_not(left), **tables)
        return plan, runner, report
    finally:
        set_num_threads(saved_threads)


def solve(f: Func, u0, t_span, p=None, *, args=None, method: str = "dopri5", rtol=1e-6,
          atol=1e-6,
          dt=None, noise: Func | None = None, seed: int | None = None,
          saveat=None, event: Func | None = None, on_event: Func | None = None,
          direction=-1, terminal=None, record_events: int = 0, event_samples: int = 4,
          tstops=None, on_stop: Func | None = None, max_step=math.inf,
          max_steps: int = 1_000_000, tables=(), sensitivity: str | None = None,
          jac: Func | None = None, linsolve: str = "lu", adjoint: bool = False,
          adjoint_steps: int = adjoints.DEFAULT_STEPS, table_gradients: bool = False,
          threads: int | None = None, progress: bool = False, client=None,
          chunks: int | None = None, checkpoint=None) -> Solution:
    """Integrate ``u' = f(u, t, p)`` for every sample from ``t_span[0]`` to ``t_span[1]``.

    Nothing passed in is ever written: every array the kernels bind is a new one, and the
    ``Solution``'s arrays are new too. Every argument is checked first, and a wrong one is
    refused naming it (``u0``, ``p``, ``t_span[0]``, ``tables[1]``...) before anything is
    allocated, compiled or run.

    Args:
        f: the right-hand side, a ``@hawk.func`` ``f(u, t, p)`` returning ``du/dt``.
        u0: the initial states: an array ``(n,)`` (a number per sample) or ``(k, n)`` (a
            ``Vector[k]`` per sample, k in 1..128; ``(1, n)`` is solved as ``(n,)`` and given
            back in its shape); NumPy runs on the CPU, CuPy on its GPU, a dask array on the
            workers of ``client`` (see there). Not changed (the solution is in new arrays).
        t_span: ``(t0, t_end)``: numbers, or arrays ``(n,)`` per sample; ``t_end > t0`` for
            every sample, or ``t_end < t0`` for every sample to integrate backward in time
            (as ``du/ds = -f(u, -s, p)`` in ``s = -t``: the same steps SciPy takes backward;
            ``saveat`` and ``tstops`` are then given in the integration's direction,
            ``(first, last, count)`` with ``last < first`` and ``(first, every)`` with
            ``every < 0``, and ``direction`` keeps its meaning in ``t``).
        p: the model's parameters, passed to ``f`` as ``p``: a number (one for all); per
            sample, an array ``(n,)``, ``(k, n)`` (a ``Vector[k]``, k up to 128) or
            ``(r, c, n)`` (a ``Matrix[r, c]``, r and c up to 16); shared by every sample (one
            value passed by value), any other array ``(m,)`` (a ``Vector[m]``) or ``(r, c)``
            (a ``Matrix[r, c]``, say a rate matrix); or a sequence of k numbers or arrays
            ``(n,)`` (a ``Vector[k]`` per sample). Default: the number 0.
        args: instead of ``p``, the model's arguments as SciPy's ``solve_ivp(args=...)`` and
            diffrax's ``args`` take them: a tuple of numbers and arrays of any of ``p``'s
            shapes (each its own: a number, a vector, a matrix; per sample with the samples
            as the last axis, else shared by every sample), passed to ``f`` one by one,
            ``f(u, t, W1, b1, W2, b2)`` (and so to ``event``, ``on_event``, ``on_stop``,
            ``noise`` and ``jac``, the tables after them). At most 256 numbers in all (they
            are packed into one array the kernels bind, and taken out again bit for bit:
            ``eagle.ode.model_args``; all per sample when one of them is). A tuple ``p`` is
            always one ``Vector[k]``; arrays of different shapes in ``p`` are refused with a
            pointer here. With ``sensitivity="p"``, ``du_dp``'s columns are the arguments'
            numbers in order (each flattened row by row), 128 numbers in all at most.
        method: one of ``hawk.ode.METHODS`` (the registry): ``"dopri5"`` (default; adaptive
            Dormand-Prince 5(4)), ``"tsit5"`` (Tsitouras's
            5(4) pair, usually a little cheaper for the same accuracy; everything ``"dopri5"``
            has), ``"vern7"``, ``"vern9"`` (Verner's 7(6) and 9(8) pairs, with interpolants of
            order 7 and 9: far fewer steps at tight tolerances, about 1e-8 and below, on smooth
            problems; everything ``"dopri5"`` has), ``"rk23"`` and ``"dop853"`` (SciPy's
            ``RK23``, Bogacki-Shampine 3(2), and ``DOP853``, Hairer's 8(5,3), with SciPy's
            controller and first step: SciPy's steps), ``"rosenbrock23"``
            (adaptive, linearly implicit and L-stable, for stiff problems: the Jacobian from
            ``hawk.jacobian``; events, stops and ``saveat`` as the others; order 2, for
            moderate tolerances), ``"rodas5p"`` (Steinebach's stiffly accurate Rosenbrock
            method of order 5: far fewer steps at tight tolerances; its interpolant is of
            degree 3), ``"rk4"``, ``"euler"``
            (fixed steps of ``dt``), or ``"euler_maruyama"`` (the SDE ``du = f dt + noise dW``;
            needs ``noise``, ``dt`` and ``seed``).
        rtol, atol: the error tolerances of the adaptive methods, numbers or arrays ``(n,)``.
        max_step: the longest step an adaptive method takes (default: no bound), a number or an
            array ``(n,)``. Bound it below the shortest time between two events, or an event
            pair inside one long step can go unseen.
        dt: the step of a fixed-step method, a number or an array ``(n,)``.
        noise: the SDE's diffusion, a ``@hawk.func`` ``g(u, t, p)`` shaped as ``u``.
        seed: the random numbers' seed for ``"euler_maruyama"``, an int in ``[0, 2**64)``.
        saveat: ``(first, last, count)``: record the state at ``count`` equally spaced times
            from ``first`` to ``last`` into ``Solution.saved`` (the adaptive methods
            interpolate inside their steps; fixed-step methods land a step on each time).
            Or any times, as a NumPy (CuPy) array strictly sorted in the integration's
            direction (SciPy's ``t_eval``, diffrax's ``SaveAt(ts=...)``, the observation
            times of data), recorded the same way (an array equal to the grid gives the
            grid's bits): ``(T,)`` for every sample, or ``(T, n)``, a column of times per
            sample (each sample's own observation times); a tuple or list is always
            ``(first, last, count)``. Times before a sample's ``t0`` are not recorded (NaN).
        event: a ``@hawk.func`` ``g(u, t, p)`` whose zero crossing (in ``direction``) is an
            event (the adaptive methods). An event is terminal by default (it ends the sample
            there; SciPy's are not), unless ``on_event`` is given (it is called instead). A
            vector-valued ``g`` is several events at once (see ``terminal``), and so is a list
            of funcs ``[g0, g1, ...]`` (SciPy's ``events=[...]``; each func's ``.terminal`` and
            ``.direction`` attributes are read as SciPy reads them).
        on_event: a ``@hawk.func`` ``(u, t, p) -> u`` applied at each event (a bounce), or
            ``(u, t, p, i) -> u``, given the index ``i`` of the event's component that fired
            (a vector-valued ``event``: each component its own update, as
            DifferentialEquations.jl's ``VectorContinuousCallback``); a terminal component
            still ends the sample.
        direction: ``-1`` (default) events where ``g`` falls through zero, ``1`` rising, ``0``
            both; a tuple gives each component of a vector-valued ``event`` its own.
        terminal: whether an event ends the sample: a bool, or a tuple of them for the
            components of a vector-valued ``event`` (up to 16: several event functions at
            once, SciPy's ``events=[...]`` with their ``.terminal``). Default: the event is
            terminal unless ``on_event`` is given.
        event_samples: the points a step is looked at for an event (the adaptive methods):
            its end and ``event_samples - 1`` equally spaced inside, each an interpolation
            and an evaluation of ``g``, so that two crossings inside one step are seen
            (as long as the parts are shorter than the time between them; bound the step
            with ``max_step``). ``1`` looks at the step's ends only, as SciPy does: the
            cheapest, for events that cannot come in pairs within a step. Default 4.
        record_events: record each sample's first ``record_events`` events (terminal or not)
            into ``Solution.t_events``, ``u_events`` and ``which_events`` (SciPy's
            ``t_events``/``y_events``). Where nothing acts (``terminal=False`` for every
            event, no ``on_event``: a Poincaré section), the steps only note which event
            crossed and each is located after the run, once per event, with the same bits
            (``hawk.ode.recorded.event_location_kernel``; ``Solution.arrays["u_events"]``
            then holds the steps' rows), and ``g`` at a step's start is the last step's end,
            carried (without ``on_stop``: ``Solution.arrays["c"]`` is then ``(1 + w, n)``).
        tstops: ``(first, every)``: steps land exactly on ``first + k * every`` (the adaptive
            methods).
        on_stop: a ``@hawk.func`` ``(u, t, p) -> u`` applied at each of those times.
        max_steps: the most steps (attempted, for the adaptive methods) a sample takes.
        jac: for ``"rosenbrock23"`` and ``"rodas5p"``, a ``@hawk.func`` ``jac(u, t, p)``
            (tables after ``p``) returning ``df/du`` (a ``Matrix[k, k]``; a number for a
            scalar state) to use instead of the exact one ``hawk.jacobian`` takes (a cheaper
            or an approximate Jacobian); ``df/dt`` is still ``hawk.jacobian``'s.
        linsolve: for ``"rosenbrock23"`` and ``"rodas5p"``, how each stage's linear system is
            solved: ``"lu"`` (elimination with partial pivoting, the default) or
            ``"refined"`` (that, plus one step of iterative refinement with the residual in
            doubled precision), for up to ``hawk.ode.linsolve.REFINED_MAX_STATES`` (8)
            states. ``"refined"`` is for models with a linear invariant whose end state hangs
            on it (the test set's E5): a stage solve multiplies its own rounding by ``h *
            gamma`` along the invariant, which the refinement removes. It costs about 2.5x the
            time per step at 4 states. ``"sparse"``: a static sparse LU over the Jacobian's
            structural nonzeros and their fill, in a fill-reducing order chosen at compile
            time, without pivoting (``W``'s diagonal dominates for a stiff solve's steps; the
            bits differ from ``"lu"``'s), for reaction networks and other sparse models of
            more than a few states; a ``W`` too dense for it to pay is solved as ``"lu"``.
        sensitivity: ``"p"`` for ``Solution.du_dp`` (the derivatives of the end state in each
            of ``p``'s components), ``"u0"`` for ``Solution.du_du0``, by forward sensitivity:
            the tangent system is integrated with the state (``hawk.ode.sensitivity``), under
            the same error control; ``k + k * m`` components at most 128; through tables
            too (``hawk.interp``'s slope) and to a terminal event's time (``Solution.dt_dp``),
            but not with ``on_event``, several events, stops or noise.
        tables: up to three read-only arrays (1 to 3 dimensions each, NumPy or on the device of
            ``u0``) shared by every sample, passed to ``f`` (and ``event``, ``on_event``,
            ``on_stop``, ``noise``) after ``p``: ``f(u, t, p, table0, table1)``, read there
            with ``table[i]`` or ``hawk.interp``/``hawk.interp_grid`` (a drag coefficient
            against Mach number, an atmosphere).
        threads: CPU threads for this call (default: ``eagle.get_num_threads()``); with
            ``client``, for the client's part (each worker uses its own threads).
        progress: show a bar of samples done.
        client: a ``distributed.Client``: the integration runs on its workers, the samples cut
            into ``chunks``, each chunk from the kernel's IR; the ``Solution`` is the local
            solve's, bit for bit (its ``report`` a ``DistributedReport``, ``runner`` None).
            With NumPy inputs the rest of the solve runs here and each chunk's inputs and
            results pass through the client (``eagle.ode.cluster``). With ``u0`` (and a
            per-sample ``p``) as dask arrays, no sample's numbers come here: each chunk's
            arrays are made from its blocks on a worker, and the ``Solution``'s per-sample
            arrays are dask arrays over the results kept there (``.compute()`` gathers them; a
            reduction such as ``sol.u.mean(axis=-1)`` runs there); every per-sample argument
            may then be a dask array (``p``, the per-sample parts of ``args``, ``t_span``,
            ``rtol``, ``atol``, ``max_step``, ``dt``), shared ones numbers or NumPy arrays
            (``saveat`` times per sample too), and a sensitivity's event correction and the
            location of events only recorded run on the workers (``eagle.ode.dask_inputs``,
            ``eagle.ode.dask_chunks``), and with ``adjoint=True`` each chunk's recorded steps
            stay there and ``Solution.vjp`` runs each chunk's backward pass there
            (``eagle.ode.dask_adjoint``). With a CuPy ``u0`` each
            chunk runs on its worker's GPU (dask-cuda's one worker per GPU) and the
            ``Solution`` is CuPy, the local GPU solve's bit for bit.
        chunks: with ``client``, the number of chunks (default: the workers' threads, or a
            dask ``u0``'s own sample chunks).
        checkpoint: with ``client``, a folder every worker can see: each finished chunk is
            written there, and a rerun of the same solve (after its workers or its client
            died) reads those back instead of running them (``eagle.distributed``'s
            checkpoint).
        adjoint: keep each sample's accepted steps, for ``Solution.vjp`` (reverse-mode
            gradients in ``p`` and ``u0`` for any number of parameters; ``eagle.ode.adjoint``):
            every adaptive method (the Rosenbrock ones with ``jac=`` and ``linsolve=`` too: the
            backward pass differentiates the user's Jacobian), with ``saveat``
            (a grid or an array of times: ``vjp(dsaved=...)``), ``args`` (the gradients in
            ``Gradients.args``, one per argument) and one terminal ``event`` (its time moves
            with ``p`` and ``u0``), without several events, ``on_event``, ``record_events``,
            stops or ``sensitivity`` yet; with ``client`` (NumPy inputs) the forward run goes
            over the cluster and ``vjp`` runs here; with dask inputs both run on the workers,
            and ``vjp``'s gradients are dask arrays.
            The end state is the plain solve's, bit for bit.
        adjoint_steps: with ``adjoint``, the accepted steps kept per sample (default 1024; each
            costs ``(k + 2) * 8`` bytes per sample in float64); a sample that needs more is
            refused by this name: before the run where ``max_step`` or ``saveat`` force more
            steps than that, else after the forward run (the steps are the error control's
            choice), the message saying about how many would do; nothing passed in has been
            written then.
        table_gradients: with ``adjoint``, ``Solution.vjp`` also gives the cotangents of the
            tables' values (``Gradients.tables``, one array per table shaped as it, summed
            over the samples in a fixed order): for tables of the solve's float type holding
            at most 128 elements together (each sample carries a cotangent of every element).

    Returns a ``Solution``. Samples still running at ``max_steps`` are reported there
    (``status == 0``) with an ``eagle.TruncationWarning``.
    """
    if not isinstance(f, Func):
        raise TypeError(f"f must be a @hawk.func f(u, t, p) returning du/dt, got {f!r}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, METHODS))}, got "
                         f"{method!r}")
    # dask inputs: checked and compiled for here on their first sample, made on the workers
    lazy = dask_inputs.inputs(client, chunks, u0, p, t_span=t_span, rtol=rtol, atol=atol,
                               max_step=max_step, dt=dt, args=args, saveat=saveat)
    if lazy is not None:
        u0, p, args, t_span, rtol, atol, max_step, dt = lazy.first_arguments(
            u0, p, args, t_span, rtol, atol, max_step, dt)
    xp = arguments.array_module(u0)
    cluster.check_options(client, chunks, checkpoint)
    arguments.numeric("u0", u0)
    column = u0.ndim == 2 and u0.shape[0] == 1  # (1, n): one state per sample, as (n,)
    if column:
        u0 = u0[0]
    state, n = arguments.state_type(u0)
    dtype = u0.dtype if u0.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    threads = arguments.threads(threads)
    record_events = arguments.record_events(record_events)
    if isinstance(event_samples, bool) or not (isinstance(event_samples, int | np.integer)
                                               and 1 <= event_samples <= 64):
        raise ValueError(f"event_samples must be an int from 1 to 64 (the points a step is "
                         f"looked at for an event), got {event_samples!r}")
    if isinstance(max_steps, bool) or not (isinstance(max_steps, int) and max_steps >= 1):
        raise ValueError(f"max_steps must be an int >= 1, got {max_steps!r}")
    try:
        t0, t_end = t_span
    except (TypeError, ValueError):
        raise ValueError(f"t_span must be a pair (t0, t_end), got {t_span!r}") from None
    t = arguments.per_sample("t_span[0]", t0, xp, n, dtype)
    t_end = arguments.per_sample("t_span[1]", t_end, xp, n, dtype)
    backward = bool((t_end < t).all())
    if not (backward or bool((t_end > t).all())):
        raise ValueError("t_span: t_end must differ from t0 on the same side for every sample "
                         "(all forward in time, t_end > t0, or all backward, t_end < t0)")
    layout = None
    if args is not None:
        if p is not None:
            raise ValueError("pass the model's parameters as p (f(u, t, p)) or as args "
                             "(f(u, t, *args)), not both")
        p, params, layout, args_per_sample = model_args.pack(
            args, xp, n, dtype, None if lazy is None else lazy.args_per_sample)
    else:
        p, params = arguments.params(0.0 if p is None else p, xp, n, dtype)
    tables, table_dims = arguments.tables(tables, xp)
    table_sizes = adjoints.check_tables(table_gradients, adjoint, tables, dtype)
    event, direction, terminal = as_one_event(event, direction, terminal, on_event)
    if layout is not None:  # every func takes the arguments out of the packed p
        f, event, on_event, on_stop, noise, jac = (
            model_args.unpacking(g, layout) if isinstance(g, Func) else g
            for g in (f, event, on_event, on_stop, noise, jac))
    refused = dict(on_event=on_event, tstops=tstops, on_stop=on_stop, noise=noise, jac=jac)
    if sensitivity is not None:  # what it cannot serve, refused before any func is typed
        several = True if (record_events or isinstance(direction, tuple)
                           or isinstance(terminal, tuple)) else None
        sensitivity_columns(params, sensitivity, u0.shape[0] if u0.ndim == 2 else 1,
                            {**refused, "several events": several})
    if adjoint:
        adjoint_steps = adjoints.check(method, adjoint_steps, {
            "on_event": on_event, "tstops": tstops, "on_stop": on_stop,
            "sensitivity": sensitivity, "noise": noise})
        adjoints.check_event(event, direction, terminal, record_events)
    _check_funcs(f, state, params, table_dims, jac=jac, noise=noise, on_stop=on_stop,
                 on_event=on_event,
                 given=None if layout is None else f"args as {model_args.describe(layout)}")
    if event is not None:
        direction, terminal = per_component(event, direction, terminal, on_event, state,
                                             params, table_dims)
        if adjoint:  # a vector-valued event: several
            adjoints.check_event(event, direction, terminal, record_events)
    stochastic = hawk_ode.METHODS[method].stochastic
    listed = None  # saveat as an array of times, in the integration's variable
    if arguments.is_array(saveat):
        listed = arguments.listed_times("saveat", saveat, xp, n if lazy is None else lazy.n,
                                        dtype, backward)
    if backward:  # solved forward in s = -t: du/ds = -f(u, -s, p)
        if stochastic:
            raise ValueError(f"t_span: an SDE (method={method!r}) runs forward in time "
                             "only (t_end > t0)")
        t, t_end = -t, -t_end
        f, event, on_event, on_stop, jac = (
            _in_reversed_time(g, negate=g is f or g is jac) if g is not None else None
            for g in (f, event, on_event, on_stop, jac))
        direction = tuple(-d for d in direction) if isinstance(direction, tuple) \
            else -direction
        saveat = saveat if listed is not None else _negated(saveat)
        tstops = _negated(tstops)
    states = u0.shape[0] if u0.ndim == 2 else 1
    columns = 0
    if sensitivity is not None:
        several = True if (record_events or isinstance(direction, tuple)
                           or isinstance(terminal, tuple)) else None
        model = f
        f, u0, columns = with_sensitivity(f, u0, xp, n, params, sensitivity, states,
                                          {**refused, "several events": several})
        state = hawk.Vector[u0.shape[0]]
    adaptive = method in ADAPTIVE
    if jac is not None and method not in IMPLICIT:
        raise ValueError(f"jac is for the Rosenbrock methods "
                         f"({', '.join(map(repr, IMPLICIT))}), not method={method!r}")
    _check_linsolve(linsolve, method, u0.shape[0] if u0.ndim == 2 else 1)
    if not adaptive:
        for name, value in (("event", event), ("on_event", on_event), ("tstops", tstops),
                            ("on_stop", on_stop)):
            if value is not None:
                raise ValueError(f"{name} needs an adaptive method ({', '.join(ADAPTIVE)}; "
                                 f"got method={method!r})")
        if dt is None:
            raise ValueError(f"method={method!r} takes fixed steps: pass dt")
        if max_step is not math.inf:
            raise ValueError(f"max_step is for the adaptive methods; method={method!r} steps by "
                             "dt")
        dt = arguments.per_sample("dt", dt, xp, n, dtype, positive=True)
    elif dt is not None:
        raise ValueError(f"dt is for the fixed-step methods; method={method!r} chooses its steps "
                         "from rtol and atol")
    if (terminal is not None or record_events) and event is None:
        raise ValueError("terminal= and record_events= need an event: pass event=g")
    if stochastic != (noise is not None):
        stochastic_names = [name for name, m in hawk_ode.METHODS.items() if m.stochastic]
        raise ValueError(f"noise (the SDE's diffusion g(u, t, p)) goes with "
                         f"method={stochastic_names[0]!r}, and that method needs it")

    if listed is None:
        save_first, save_every, save_count = _save_times(saveat)
    else:  # the kernels read time k from the Table bound as save_every
        save_first, save_every, save_count = 0.0, listed, int(listed.shape[0])
    saving = saveat is not None if listed is None else \
        "sample_times" if listed.ndim == 2 else "times"  # the kernels' saveat
    stop_first, stop_every, row_width = 0.0, 1.0, 0
    locating = None
    if adaptive:
        rtol = arguments.per_sample("rtol", rtol, xp, n, dtype, positive=True)
        atol = arguments.per_sample("atol", atol, xp, n, dtype, positive=True)
        max_step = arguments.per_sample("max_step", max_step, xp, n, dtype, positive=True,
                                        infinite=True)
        if on_stop is not None and tstops is None:
            raise ValueError("on_stop needs tstops=(first, every): the times it is applied at")
        if tstops is not None:
            stop_first, stop_every = arguments.finite_pair("tstops (first, every)", tstops)
            if not stop_every > 0:
                raise ValueError(f"tstops: every must go the integration's way (positive "
                                 f"forward in time, negative backward), got "
                                 f"{-stop_every if backward else stop_every!r}")
        # a pure recording's rows hold each crossing's step, located after the run
        row_width = recorded_row_width(state, on_event, terminal, record_events,
                                       tstops is not None)
        prepare = hawk_ode.dopri5_start_kernel(f, state, params, tables=table_dims,
                                               method=method)
        step_kernel = functools.partial(
            hawk_ode.dopri5_kernel, f, state, params, event=event, on_event=on_event,
            direction=direction, tstops=tstops is not None, on_stop=on_stop, saveat=saving,
            tables=table_dims, method=method, terminal=terminal,
            record_events=record_events > 0, jac=jac, linsolve=linsolve,
            event_samples=int(event_samples))
        kernel = step_kernel()
        # a terminal event located after the run, here (with dask inputs the workers' runs
        # locate in the step, as the adjoint's recording does)
        if lazy is None and not adjoint and locates_after(
                event, on_event, record_events):
            kernel, locating = step_kernel(locate_after=True), kernel
    elif stochastic:
        kernel = hawk_ode.sde_kernel(f, noise, state, params, saveat=saving, tables=table_dims)
    else:
        kernel = hawk_ode.fixed_step_kernel(f, method, state, params, saveat=saving,
                                            tables=table_dims)
    arrays_layout = ensemble.Layout(
        dtype=np.dtype(dtype), adaptive=adaptive, save_first=save_first, save_every=save_every,
        save_count=save_count, saveat=saveat is not None, record_events=record_events,
        row_width=row_width, stop_first=stop_first, stop_every=stop_every, backward=backward,
        column=column, sensitivity=sensitivity, states=states, columns=columns)
    memory = memory_kernel(event, state, params, table_dims) if adaptive and carries_event(
        state, on_event, on_stop, terminal, record_events > 0) else None
    record = None
    if adaptive and adjoint:  # the same steps, each accepted one recorded (first_save below)
        record = adjoints.Record(f, state, params, table_dims, method, params.role is
                                 hawk.Param.role, column, tables, None, event, direction,
                                 int(event_samples), saving=saving or True,
                                 arguments=None if layout is None
                                 else (layout, args_per_sample), table_sizes=table_sizes,
                                 jac=jac, linsolve=linsolve)
    if lazy is not None:  # dask inputs: the arrays are made, and stay, on the workers
        if record is not None:  # each chunk records its steps on its worker
            record = replace(record, first_save=None if saveat is None
                             else dask_adjoint.first_saves(lazy, arrays_layout))
            kernel, memory = adjoints.kernel(record), None
        plan, runner, small = deploy(kernel), None, np
        lazy_run = dask_chunks.run(
            lazy, arrays_layout, plan, prepare if adaptive else None, tables, p, memory=memory,
            max_steps=max_steps, seed=seed, progress=progress, checkpoint=checkpoint,
            adjoint_steps=None if record is None else adjoint_steps,
            least_steps=record is not None and event is None)
        arrays, report = lazy_run.arrays, lazy_run.report
        if record is not None:
            record = replace(record, cluster=lazy_run)
        xp, n = dask_inputs.array_module(), lazy.n
        u, saved, t = arrays["u"], arrays["saved"], arrays["t"]
        zeros = (lambda: xp.zeros(n, dtype=np.int64, chunks=lazy.chunks))
    else:
        small = xp
        arrays = ensemble.make(arrays_layout, xp, n, u0=u0, p=p, t=t, t_end=t_end, rtol=rtol,
                               atol=atol, max_step=max_step, dt=dt)
        u, saved = arrays["u"], arrays["saved"]
        zeros = (lambda: xp.zeros(n, dtype=np.int64))
        if adaptive and adjoint and event is None:  # known before the run: the fewest steps
            # max_step and saveat force on a sample that runs to t_end (a terminal event may
            # end it sooner)
            adjoints.check_least_steps(adjoint_steps, xp, t, t_end, max_step,
                                       save_count - arrays["saves"] if saveat is not None
                                       else None)
        if memory is not None:
            arrays["c"] = memory_from(memory, xp, p, u, t, tables)
        bound = arrays
        if record is not None:  # the same steps, each accepted one recorded
            record = replace(record, first_save=None if saveat is None
                             else arrays["saves"].copy())
            kernel = adjoints.kernel(record)
            arrays.update(adjoints.scratch(xp, adjoint_steps, u.shape, dtype))
            bound = {name: arrays[name] for name in adjoints.PARAMETERS}
        plan, runner, report = _integrate(
            kernel, prepare if adaptive else None, arrays, bound, tables, xp, n,
            threads=threads, client=client, chunks=chunks, max_steps=max_steps, seed=seed,
            progress=progress, checkpoint=checkpoint, locating=locating)
    if report.truncated:
        warnings.warn(f"eagle.ode.solve: {report.n - report.done} of {report.n} samples were "
                      f"still running at max_steps={max_steps} (status 0); raise max_steps",
                      TruncationWarning, stacklevel=2)
    if record is not None:  # every sample's steps fitted in its rows
        if lazy is not None:
            dask_adjoint.check_budget(lazy_run, adjoint_steps)
        else:
            adjoints.check_budget(arrays, adjoint_steps, xp)
    if adaptive:
        status, accepted = arrays["status"], arrays["accepted"]
        rejected, events = arrays["rejected"], arrays["events"]
    else:
        accepted, rejected, events = arrays["steps"], zeros(), zeros()
        finite = xp.isfinite(u).all(axis=0) if u.ndim == 2 else xp.isfinite(u)
        status = xp.where(finite, (t >= t_end).astype(np.int64), hawk_ode.STATUS_FAILED)
    ts = None
    if listed is not None:
        ts = listed.copy()
    elif saveat is not None:
        ts = save_first + small.arange(save_count) * save_every
    sensitivities = {}
    if sensitivity is not None and event is not None:  # the end moves with a terminal event
        correction = hawk_ode.event_correction_kernel(model, event, states, columns,
                                                      sensitivity == "p", params, table_dims)
        if lazy is not None:  # on the workers, chunk by chunk
            u, moved = lazy_run.per_chunk(
                functools.partial(dask_chunks.correct_event_time, correction, columns),
                {"u": u, "t": t, "status": status},
                [(u.shape[:-1], dtype), ((columns,) if columns > 1 else (), dtype)])
            arrays["u"] = u
        else:
            moved = xp.empty((columns, n) if columns > 1 else n, dtype=dtype)
            simulate(correction, max_steps=1, p=p, t=t, status=status, big=u, dt=moved,
                     terminated=xp.zeros(n, dtype=bool), **tables)
        sensitivities["dt_dp" if sensitivity == "p" else "dt_du0"] = -moved if backward \
            else moved
    if sensitivity is not None:
        u, saved, split = split_sensitivity(u, saved, states, columns, sensitivity,
                                            saveat is not None)
        sensitivities.update(split)
    state_shape = u.shape  # a (1, n) u0's events are recorded as its state's, (n,)
    if column:
        u, saved = u[None], saved[:, None]
    recorded = {}
    if record_events and adaptive:
        t_events, u_events = arrays["t_events"], arrays["u_events"]
        if row_width:  # each recorded step's event located, one per sample
            locator = event_location_kernel(f, state, params, event=event,
                                            direction=direction, tables=table_dims,
                                            method=method, jac=jac, linsolve=linsolve,
                                            event_samples=int(event_samples),
                                            tstops=tstops is not None)
            per_sample_p = params.role is Role.SCALAR
            one_component = event_width(event, state, params, table_dims) == 1
            if lazy is not None:  # on the workers, chunk by chunk
                which = arrays["which_events"]
                t_events, u_events, arrays["which_events"] = lazy_run.per_chunk(
                    functools.partial(dask_chunks.locate_recorded, locator, per_sample_p,
                                      state_shape[:-1], one_component),
                    {"t_events": t_events, "u_events": u_events, "which_events": which},
                    [(t_events.shape[:-1], dtype),
                     ((t_events.shape[0], *state_shape[:-1]), dtype),
                     (which.shape[:-1], which.dtype)])
            else:
                t_events, u_events = locate_recorded(
                    locator, xp, p, per_sample_p, t_events, u_events, arrays["which_events"],
                    state_shape, tables, one_component, t_end)
        recorded = dict(t_events=-t_events if backward else t_events, u_events=u_events,
                        which_events=arrays["which_events"])
    if backward:
        t = -t
        ts = None if ts is None else -ts
    return Solution(u=u, t=t, status=status, accepted=accepted, rejected=rejected,
                    events=events, saved=saved if saveat is not None else None, ts=ts,
                    report=report, runner=runner, plan=plan, arrays=arrays, **sensitivities,
                    **recorded, adjoint=record)
